// Drives the git-zipnn binary as a user would: round trips through files,
// identical objects for any thread count, and each error as one exact line
// on stderr with a non-zero exit code.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "lib/base/file.h"
#include "lib/container/format.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::Run;
using testing::Slurp;

std::string Tmp() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

// Runs `git-zipnn <args>` through the shell (args are our own literals).
Run Zipnn(const std::string& args) {
  const std::string out = Tmp() + "/stdout", err = Tmp() + "/stderr";
  const std::string cmd = "cmd/git-zipnn " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

const std::string kData = "tests/data/";
const std::string kStep40 = kData + "cnn-bf16/step-000040.safetensors";
const std::string kStep80 = kData + "cnn-bf16/step-000080.safetensors";

TEST_CASE("compress and decompress restore the exact bytes, standalone and as a delta") {
  const std::string obj = Tmp() + "/s40.zipnn", back = Tmp() + "/s40.out";
  Run c = Zipnn("compress " + kStep40 + " --dtype bf16 -f -o " + obj);
  REQUIRE(c.code == 0);
  CHECK(c.out.find("(67.") != std::string::npos);  // stored share of raw
  REQUIRE(Zipnn("decompress " + obj + " -f -o " + back).code == 0);
  CHECK(Slurp(back) == Slurp(kStep40));

  const std::string delta = Tmp() + "/s80.zipnn", back80 = Tmp() + "/s80.out";
  Run d = Zipnn("compress " + kStep80 + " --dtype bf16 --base " + kStep40 + " -f -o " + delta);
  REQUIRE(d.code == 0);
  CHECK(d.out.find("delta against") != std::string::npos);
  REQUIRE(Zipnn("decompress " + delta + " --base " + kStep40 + " -f -o " + back80).code == 0);
  CHECK(Slurp(back80) == Slurp(kStep80));
}

TEST_CASE("decompress to stdout, and the default output name drops .zipnn") {
  const std::string obj = Tmp() + "/named.safetensors.zipnn";
  REQUIRE(Zipnn("compress " + kStep40 + " --dtype bf16 -f -q -o " + obj).code == 0);
  Run r = Zipnn("decompress " + obj + " -o -");
  REQUIRE(r.code == 0);
  CHECK(r.out == Slurp(kStep40));
  REQUIRE(Zipnn("decompress -f " + obj).code == 0);
  CHECK(Slurp(Tmp() + "/named.safetensors") == Slurp(kStep40));
}

TEST_CASE("an output that is a pipe is written through, not replaced by a file") {
  // Renaming a finished temporary file over a FIFO (or /dev/null) would
  // swap the device for a regular file; the bytes must go into it instead.
  const std::string obj = Tmp() + "/piped.zipnn", fifo = Tmp() + "/out.fifo", got = Tmp() + "/from-fifo";
  REQUIRE(Zipnn("compress " + kStep40 + " --dtype bf16 -f -q -o " + obj).code == 0);
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& args : {"compress " + kStep40 + " --dtype bf16 -q", "decompress " + obj}) {
    CAPTURE(args);
    const std::string cmd =
        "timeout 20 cat " + fifo + " >" + got + " & cmd/git-zipnn " + args + " -o " + fifo + "; s=$?; wait; exit $s";
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    struct stat st;
    REQUIRE(::stat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK(Slurp(got) == Slurp(args.rfind("compress", 0) == 0 ? obj : kStep40));
  }
}

TEST_CASE("objects are identical for any thread count") {
  const std::string a = Tmp() + "/t1.zipnn", b = Tmp() + "/t2.zipnn", c = Tmp() + "/t4.zipnn";
  const std::string in = kData + "cnn-fp32/step-000200.safetensors";
  REQUIRE(Zipnn("compress " + in + " --dtype fp32 --chunk-size 8192 -f -q --threads 1 -o " + a).code == 0);
  REQUIRE(Zipnn("compress " + in + " --dtype fp32 --chunk-size 8192 -f -q --threads 2 -o " + b).code == 0);
  REQUIRE(Zipnn("compress " + in + " --dtype fp32 --chunk-size 8192 -f -q --threads 4 -o " + c).code == 0);
  CHECK(Slurp(a) == Slurp(b));
  CHECK(Slurp(a) == Slurp(c));
}

TEST_CASE("help lists every command, version names both versions") {
  Run h = Zipnn("--help");
  CHECK(h.code == 0);
  for (const char* name : {"compress", "decompress", "inspect", "version"}) {
    CHECK(h.out.find(name) != std::string::npos);
  }
  Run v = Zipnn("version");
  CHECK(v.code == 0);
  CHECK(v.out == "git-zipnn 0.10.5\nobject format 8\n");
}

TEST_CASE("the binary names no libgit2, libcurl or libcrypto: each is loaded when a command first calls it") {
  const std::string needed = Tmp() + "/needed";
  REQUIRE(std::system(("readelf -d cmd/git-zipnn | grep NEEDED > " + needed).c_str()) == 0);
  const std::string libraries = Slurp(needed);
  CHECK(libraries.find("libzstd") != std::string::npos);
  for (const char* lazy : {"libgit2", "libcurl", "libcrypto"}) {
    CHECK_MESSAGE(libraries.find(lazy) == std::string::npos, libraries);
  }
}

TEST_CASE("a first word that is no command is refused with the closest commands") {
  Run typo = Zipnn("lgo");
  CHECK(typo.code == 1);
  CHECK(typo.out.empty());
  CHECK(typo.err == "git-zipnn: 'lgo' is not a git-zipnn command. Did you mean log?\n");
  CHECK(Zipnn("instal --local").err == "git-zipnn: 'instal' is not a git-zipnn command. Did you mean install?\n");
  CHECK(Zipnn("pu").err == "git-zipnn: 'pu' is not a git-zipnn command. Did you mean du?\n");
  CHECK(Zipnn("sho HEAD:x").err == "git-zipnn: 'sho' is not a git-zipnn command. Did you mean show?\n");
  Run far = Zipnn("worktree add x");
  CHECK(far.code == 1);
  CHECK(far.err == "git-zipnn: 'worktree' is not a git-zipnn command. See 'git zipnn --help'.\n");
  // Commands and options still parse as before.
  CHECK(Zipnn("log --help").code == 0);
  CHECK(Zipnn("--nosuchoption").err.find("is not a git-zipnn command") == std::string::npos);
}

TEST_CASE("inspect shows kind, layout and the coder of each byte group") {
  const std::string obj = Tmp() + "/i.zipnn";
  REQUIRE(Zipnn("compress " + kStep80 + " --dtype bf16 --base " + kStep40 + " -f -q -o " + obj).code == 0);
  Run r = Zipnn("inspect " + obj);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("kind         delta against ") != std::string::npos);
  CHECK(r.out.find("bf16") != std::string::npos);
  // A training step's delta: every chunk taken as a difference, whose
  // groups are d0 and d1.
  CHECK(r.out.find("format       version 6\n") != std::string::npos);
  CHECK(r.out.find("difference base@0") != std::string::npos);
  CHECK(r.out.find("\n0       d1 ") != std::string::npos);
  CHECK(r.out.find("\n0       d0 ") != std::string::npos);
  // Per dtype totals: here one bf16 region covers the file.
  CHECK(r.out.find("\ndtype               raw         stored    ratio\nbf16             117764") != std::string::npos);
  // XOR only: format 2, grouped as floats.
  REQUIRE(Zipnn("compress " + kStep80 + " --dtype bf16 --base " + kStep40 + " --transform xor -f -q -o " + obj).code ==
          0);
  r = Zipnn("inspect " + obj);
  CHECK(r.out.find("format       version 2\n") != std::string::npos);
  CHECK(r.out.find("xor base@0") != std::string::npos);
  CHECK(r.out.find("\n0       exp ") != std::string::npos);
  CHECK(r.out.find("\n0       man0 ") != std::string::npos);
  CHECK(Zipnn("compress " + kStep80 + " --base " + kStep40 + " --transform sub -f -q -o " + obj).err ==
        "error: unknown transform 'sub' (one of: auto, xor, difference)\n");
}

TEST_CASE("errors are one line on stderr with a non-zero exit code") {
  const std::string obj = Tmp() + "/e.zipnn";
  REQUIRE(Zipnn("compress " + kStep80 + " --dtype bf16 --base " + kStep40 + " -f -q -o " + obj).code == 0);

  Run missing = Zipnn("compress " + Tmp() + "/nope.bin");
  CHECK(missing.code == 1);
  CHECK(missing.err == "error: " + Tmp() + "/nope.bin: no such file\n");

  Run no_base = Zipnn("decompress " + obj + " -o " + Tmp() + "/x");
  CHECK(no_base.code == 1);
  CHECK(no_base.err.rfind("error: " + obj + ": is a delta against ", 0) == 0);
  CHECK(no_base.err.find("; give that checkpoint with --base\n") != std::string::npos);

  const std::string other = kData + "cnn-bf16/step-000120.safetensors";
  for (const char* threads : {"1", "2"}) {  // hashed before decoding, and alongside it
    CAPTURE(threads);
    Run wrong = Zipnn("decompress " + obj + " --base " + other + " -T " + threads + " -f -o " + Tmp() + "/x");
    CHECK(wrong.code == 1);
    CHECK(wrong.err.rfind("error: wrong base: " + other + " has content id ", 0) == 0);
    CHECK(!FileExists(Tmp() + "/x"));
  }

  Run exists = Zipnn("compress " + kStep40 + " --dtype bf16 -o " + obj);
  CHECK(exists.code == 1);
  CHECK(exists.err == "error: " + obj + ": already exists (use --force to overwrite)\n");

  Run dtype = Zipnn("compress " + kStep40 + " --dtype float7 -f -o " + obj + ".2");
  CHECK(dtype.code == 1);
  CHECK(dtype.err.rfind("error: unknown dtype 'float7' (one of: auto, bytes, fp32, bf16", 0) == 0);

  Run name = Zipnn("decompress " + kStep40);
  CHECK(name.code == 1);
  CHECK(name.err.find("error: " + kStep40 + ": not a git-zipnn object (bad magic)\n") == 0);

  Run usage = Zipnn("compress");
  CHECK(usage.code == 2);
  CHECK(usage.err.rfind("error: ", 0) == 0);

  Run threads = Zipnn("compress " + kStep40 + " --threads -1");
  CHECK(threads.code == 2);
  CHECK(threads.err ==
        "error: --threads: Value -1 not in range 0 to 4096\nRun 'git zipnn compress --help' for its options.\n");

  // An option the command does not have, with the one probably meant.
  Run typo = Zipnn("compress " + kStep40 + " --levle 3");
  CHECK(typo.code == 2);
  CHECK(typo.err ==
        "error: The following arguments were not expected: --levle 3\n"
        "git zipnn compress has no option --levle; did you mean --level?\n"
        "Run 'git zipnn compress --help' for its options.\n");
  // Words it did not expect, in the order they were given (CLI11 lists
  // them last first).
  Run extra = Zipnn("version one two one three");
  CHECK(extra.code == 2);
  CHECK(extra.err.rfind("error: The following arguments were not expected: one two one three\n", 0) == 0);

  // An option spelled out in full, as another tool names it.
  Run spelled = Zipnn("restore --revision HEAD model.safetensors");
  CHECK(spelled.code == 2);
  CHECK(spelled.err.find("git zipnn restore has no option --revision; did you mean --rev?\n") != std::string::npos);

  Run dir = Zipnn("compress " + Tmp());
  CHECK(dir.code == 1);
  CHECK(dir.err == "error: " + Tmp() + ": is a directory\n");
}

TEST_CASE("an allocation refused ends the command with that reason and no output, with or without workers") {
  // 64 MiB chunks under a 100 MB address space: the chunk's buffers cannot
  // all be had. A worker's failure once left the run waiting for it forever.
  const std::string in = Tmp() + "/zeros.bin", obj = Tmp() + "/zeros.zipnn";
  REQUIRE(std::system(("head -c 67108864 /dev/zero > " + in).c_str()) == 0);
  for (const char* threads : {"1", "2"}) {
    CAPTURE(threads);
    const std::string cmd = "ulimit -v 100000; cmd/git-zipnn compress " + in +
                            " --dtype bf16 --chunk-size 67108864 -T " + threads + " -f -o " + obj + " 2>" + Tmp() +
                            "/stderr";
    const int status = std::system(("timeout 60 sh -c '" + cmd + "'").c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(Slurp(Tmp() + "/stderr") ==
          "error: out of memory: this machine refused an allocation (fewer threads need less: `-T 1` where the command "
          "takes it, `threads: 1` in .zipnn.yaml otherwise)\n");
    CHECK(!FileExists(obj));
  }
  ::unlink(in.c_str());
}

TEST_CASE("compress --reference takes tensors from other checkpoints; decompress needs each, checked by content") {
  // The model of step 200 under new names, and two tensors of step 160.
  const std::string file = kData + "shared/resharded.safetensors", step200 = kData + "cnn-bf16/step-000200.safetensors",
                    step160 = kData + "cnn-bf16/step-000160.safetensors",
                    step120 = kData + "cnn-bf16/step-000120.safetensors";
  const std::string obj = Tmp() + "/resharded.zipnn", only_base = Tmp() + "/only-base.zipnn", back = Tmp() + "/back";
  REQUIRE(Zipnn("compress " + file + " -f -q --base " + step200 + " -o " + only_base).code == 0);
  // Options before the file: --reference takes one value each time.
  Run c = Zipnn("compress --base " + step200 + " --reference " + step120 + " --reference " + step160 + " " + file +
                " -f -o " + obj);
  REQUIRE_MESSAGE(c.code == 0, c.err);
  CHECK(c.out.find(", 73.0 KiB of tensors taken from 1 reference\n") != std::string::npos);
  CHECK(c.err == "note: " + step120 + " holds no tensor of " + file +
                     " that the base or an earlier --reference does not; left out\n");
  CHECK(Slurp(obj).size() * 20 < Slurp(only_base).size());
  Run inspect = Zipnn("inspect " + obj);
  CHECK(inspect.out.find("format       version 8\n") != std::string::npos);
  CHECK(inspect.out.find("reference 1  e93ff4acb27587ae80fa0da7c0d84f36 (117764 bytes)\n") != std::string::npos);
  CHECK(inspect.out.find(" xor ref1@") != std::string::npos);

  Run no_base = Zipnn("decompress " + obj + " -f -o " + back);
  CHECK(no_base.code == 1);
  CHECK(no_base.err.find("give that checkpoint with --base, and e93ff4acb27587ae80fa0da7c0d84f36 with --reference\n") !=
        std::string::npos);
  Run wrong = Zipnn("decompress " + obj + " --base " + step200 + " --reference " + step200 + " -f -o " + back);
  CHECK(wrong.code == 1);
  CHECK(wrong.err.find("besides its base; give that checkpoint with --reference; " + step200 + " is ") !=
        std::string::npos);
  CHECK(wrong.err.find(" (its base)\n") != std::string::npos);
  Run extra = Zipnn("decompress " + obj + " --base " + step200 + " --reference " + step160 + " --reference " + step120 +
                    " -f -o " + back);
  CHECK(extra.code == 1);
  CHECK(extra.err.find("takes no tensors from " + step120) != std::string::npos);
  CHECK(!FileExists(back));
  Run right = Zipnn("decompress --base " + step200 + " --reference " + step160 + " " + obj + " -f -o " + back);
  REQUIRE_MESSAGE(right.code == 0, right.err);
  CHECK(Slurp(back) == Slurp(file));
  CHECK(Zipnn("compress " + file + " -f --reference " + step160 + " -o " + obj).err ==
        "error: --reference takes tensors from other checkpoints besides a base: give --base too\n");
}

TEST_CASE("safetensors files are read by content, lying ones stored raw with a warning") {
  const std::string obj = Tmp() + "/auto.zipnn", back = Tmp() + "/auto.out";
  Run c = Zipnn("compress " + kStep40 + " -f -o " + obj);
  REQUIRE(c.code == 0);
  CHECK(c.out.find(", safetensors, 25 tensors in 5 regions\n") != std::string::npos);
  CHECK(c.err.empty());
  REQUIRE(Zipnn("decompress " + obj + " -f -o " + back).code == 0);
  CHECK(Slurp(back) == Slurp(kStep40));

  // The same bytes with a header length that points past the end.
  std::string bytes = Slurp(kStep40);
  bytes[5] = 0x7f;
  const std::string lying = Tmp() + "/lying.safetensors";
  {
    std::ofstream f(lying, std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  Run l = Zipnn("compress " + lying + " -f -o " + obj);
  CHECK(l.code == 0);
  CHECK(l.err.rfind("warning: " + lying + ": safetensors header length ", 0) == 0);
  CHECK(l.err.find("runs past the end of the file; stored as raw bytes\n") != std::string::npos);
  CHECK(l.out.find(", raw (bf16 by a sample)\n") != std::string::npos);
  REQUIRE(Zipnn("decompress " + obj + " -f -o " + back).code == 0);
  CHECK(Slurp(back) == bytes);
}

TEST_CASE("a delta matches tensors by name, so the base may differ in size") {
  // fp32 and bf16 checkpoints of one run share names and shapes but
  // not dtypes: every tensor is coded standalone, yet it is a valid delta.
  const std::string obj = Tmp() + "/cross.zipnn", back = Tmp() + "/cross.out";
  const std::string fp32 = kData + "cnn-fp32/step-000040.safetensors";
  Run c = Zipnn("compress " + kStep80 + " --base " + fp32 + " -f -o " + obj);
  REQUIRE(c.code == 0);
  REQUIRE(Zipnn("decompress " + obj + " --base " + fp32 + " -f -o " + back).code == 0);
  CHECK(Slurp(back) == Slurp(kStep80));

  // Same-dtype neighbours: a real delta, far smaller than standalone.
  const std::string near = Tmp() + "/near.zipnn", alone = Tmp() + "/alone.zipnn";
  REQUIRE(Zipnn("compress " + kData + "cnn-bf16/step-000200.safetensors --base " + kData +
                "cnn-bf16/step-000160.safetensors -f -q -o " + near)
              .code == 0);
  REQUIRE(Zipnn("compress " + kData + "cnn-bf16/step-000200.safetensors -f -q -o " + alone).code == 0);
  CHECK(Slurp(near).size() * 3 < Slurp(alone).size());

  Run wrong = Zipnn("compress " + kStep80 + " --dtype bf16 --base " + fp32 + " -f -o " + obj);
  CHECK(wrong.code == 1);
  CHECK(wrong.err.find(
            "with --dtype a delta needs a base of the same size (leave --dtype out for a tensor-aware delta)") !=
        std::string::npos);
}

TEST_CASE("torch.save checkpoints are read as pytorch, stored and restored as deltas") {
  const std::string base = kData + "pt-gpt/step-000020.pt", next = kData + "pt-gpt/step-000040.pt";
  const std::string obj = Tmp() + "/pt.zipnn", back = Tmp() + "/pt.out";
  Run c = Zipnn("compress " + next + " --base " + base + " -f -o " + obj);
  REQUIRE(c.code == 0);
  CHECK(c.out.find(", pytorch, 68 tensors in ") != std::string::npos);
  CHECK(c.err.empty());
  REQUIRE(Zipnn("decompress " + obj + " --base " + base + " -f -o " + back).code == 0);
  CHECK(Slurp(back) == Slurp(next));
  Run forced = Zipnn("compress " + next + " --format safetensors -f -q -o " + obj);
  CHECK(forced.code == 0);
  CHECK(forced.err.find("warning: ") == 0);  // not safetensors: raw, with a warning
}

TEST_CASE("an empty file round-trips") {
  const std::string empty = Tmp() + "/empty.bin", obj = Tmp() + "/empty.zipnn", back = Tmp() + "/empty.out";
  { std::ofstream f(empty, std::ios::binary | std::ios::trunc); }
  Run c = Zipnn("compress " + empty + " -f -o " + obj);
  REQUIRE(c.code == 0);
  CHECK(c.out == empty + " -> " + obj + ": 0 B -> 104 B (n/a), raw\n");
  REQUIRE(Zipnn("decompress " + obj + " -f -o " + back).code == 0);
  CHECK(Slurp(back).empty());
  CHECK(FileExists(back));
}

TEST_CASE("a truncated or newer-version object is refused and nothing is written") {
  const std::string obj = Tmp() + "/trunc.zipnn";
  REQUIRE(Zipnn("compress " + kStep40 + " --dtype bf16 -f -q -o " + obj).code == 0);
  std::string bytes = Slurp(obj);
  {
    std::ofstream f(obj, std::ios::binary | std::ios::trunc);
    f << bytes.substr(0, bytes.size() - 100);
  }
  Run t = Zipnn("decompress " + obj + " -f -o " + Tmp() + "/trunc.out");
  CHECK(t.code == 1);
  CHECK(t.err == "error: " + obj + ": trailer magic missing (truncated object?)\n");
  CHECK(!FileExists(Tmp() + "/trunc.out"));

  bytes[8] = 99;  // format version 99, its header checksum left as it was
  {
    std::ofstream f(obj, std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  Run v = Zipnn("decompress " + obj + " -f -o " + Tmp() + "/trunc.out");
  CHECK(v.code == 1);
  CHECK(v.err == "error: " + obj + ": object format version 99 is newer than this git-zipnn reads (" +
                     std::to_string(container::kFormatVersion) +
                     "); upgrade git-zipnn, or, if no newer git-zipnn wrote it, the object is damaged (its header "
                     "checksum does not hold)\n");
}

TEST_CASE("a corrupted chunk fails the restore and leaves no output file") {
  const std::string obj = Tmp() + "/flip.zipnn", out = Tmp() + "/flip.out";
  REQUIRE(Zipnn("compress " + kStep40 + " --dtype bf16 -f -q -o " + obj).code == 0);
  std::string bytes = Slurp(obj);
  bytes[bytes.size() / 2] ^= 0x10;
  {
    std::ofstream f(obj, std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  Run r = Zipnn("decompress " + obj + " -f -o " + out);
  CHECK(r.code == 1);
  CHECK(r.err == "error: " + obj + ": chunk 0 (checkpoint bytes 0..117764): checksum mismatch\n");
  CHECK(!FileExists(out));
}

}  // namespace
}  // namespace zipnn
