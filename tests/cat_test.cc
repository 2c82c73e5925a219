// `git zipnn cat` against real git repositories: tensors of any version,
// read by parts down their chain, written as raw bytes, npy or safetensors,
// each byte compared with the checkpoint it came from.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <string>

#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn::testing {
namespace {

struct Entry {
  std::string dtype;
  std::vector<uint64_t> shape;
  std::string bytes;
};

// The tensors of a safetensors file, as its header and data say.
std::map<std::string, Entry> Tensors(const std::string& file) {
  REQUIRE(file.size() >= 8);
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  REQUIRE(n <= file.size() - 8);
  const nlohmann::json header = nlohmann::json::parse(file.substr(8, n));
  const std::string data = file.substr(8 + n);
  std::map<std::string, Entry> tensors;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    const uint64_t begin = v["data_offsets"][0], end = v["data_offsets"][1];
    REQUIRE(end <= data.size());
    tensors[name] = Entry{v["dtype"], v["shape"].get<std::vector<uint64_t>>(), data.substr(begin, end - begin)};
  }
  return tensors;
}

TEST_CASE("cat writes tensors of any version, read by parts, as raw bytes, npy or safetensors") {
  Repo repo;
  CommitTrajectory(repo);  // five cnn-bf16 steps, base every 3: HEAD~3 is a delta of depth 2
  const auto want = Tensors(Slurp(repo.Data("cnn-bf16/step-000080.safetensors")));

  // The list, as JSON, holds every tensor with its dtype and shape.
  const Run listed = repo.Sh("git zipnn cat --list --json HEAD~3:model.safetensors");
  REQUIRE(listed.code == 0);
  const nlohmann::json list = nlohmann::json::parse(listed.out);
  CHECK(list["format"] == "safetensors");
  CHECK(list["tensors"].size() == want.size());
  for (const auto& t : list["tensors"]) {
    CAPTURE(t["name"]);
    REQUIRE(want.count(t["name"]) == 1);
    const Entry& w = want.at(t["name"]);
    CHECK(t["dtype"] == (w.dtype == "I64" ? "i64" : "bf16"));
    CHECK(t["shape"].get<std::vector<uint64_t>>() == w.shape);
    CHECK(t["bytes"] == w.bytes.size());
  }
  // The text list ends with a count.
  CHECK(repo.Sh("git zipnn cat -l HEAD~3:model.safetensors").out.find("\n25 tensors, ") != std::string::npos);

  // One tensor's bytes, from a subfolder with a path relative to it.
  REQUIRE(repo.Sh("mkdir sub && cd sub && git zipnn cat HEAD~3:../model.safetensors -t c2.weight > ../c2.raw").code ==
          0);
  CHECK(Slurp(repo.File("c2.raw")) == want.at("c2.weight").bytes);
  // The option before the checkpoint takes one tensor, not the checkpoint too.
  REQUIRE(repo.Sh("git zipnn cat -t c2.weight HEAD~3:model.safetensors > c2-first.raw").code == 0);
  CHECK(Slurp(repo.File("c2-first.raw")) == want.at("c2.weight").bytes);

  // Tensors by glob into a safetensors file that holds exactly them.
  REQUIRE(repo.Sh("git zipnn cat HEAD~3:model.safetensors -t 'b2.*' -t fc2.weight -o part.safetensors").code == 0);
  const auto part = Tensors(Slurp(repo.File("part.safetensors")));
  CHECK(part.size() == 6);
  for (const auto& [name, entry] : part) {
    CAPTURE(name);
    REQUIRE(want.count(name) == 1);
    CHECK(entry.dtype == want.at(name).dtype);
    CHECK(entry.shape == want.at(name).shape);
    CHECK(entry.bytes == want.at(name).bytes);
  }

  // The whole file, as it was committed.
  REQUIRE(repo.Sh("git zipnn cat HEAD~3:model.safetensors > whole").code == 0);
  CHECK(Slurp(repo.File("whole")) == Slurp(repo.Data("cnn-bf16/step-000080.safetensors")));

  // An fp32 tensor as .npy: numpy's own reader takes it back.
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-fp32/step-000200.safetensors") +
                  "' fp32.safetensors && git add fp32.safetensors && git commit -qm fp32 && "
                  "git zipnn cat fp32.safetensors -t fc1.weight -o fc1.npy")
              .code == 0);
  const auto fp32 = Tensors(Slurp(repo.Data("cnn-fp32/step-000200.safetensors")));
  const std::string npy = Slurp(repo.File("fc1.npy"));
  CHECK(npy.rfind("\x93NUMPY", 0) == 0);
  CHECK(npy.substr(npy.size() - fp32.at("fc1.weight").bytes.size()) == fp32.at("fc1.weight").bytes);
  REQUIRE(repo.Sh("git zipnn cat fp32.safetensors -t fc1.weight > fc1.raw").code == 0);
  const Run numpy = repo.Sh(
      "/usr/bin/python3 -c \"import numpy; a = numpy.load('fc1.npy'); "
      "print(a.dtype, a.shape, a.tobytes() == open('fc1.raw', 'rb').read())\"");
  CHECK(numpy.out == "float32 (128, 256) True\n");
}

TEST_CASE("show counts and lists a version's tensors by name; inspect takes a content id") {
  Repo repo;
  CommitTrajectory(repo);
  const Run shown = repo.Sh("git zipnn show model.safetensors");
  REQUIRE(shown.code == 0);
  CHECK(shown.out.rfind("model.safetensors: safetensors, ", 0) == 0);
  CHECK(shown.out.find("\n25 tensors (`git zipnn show --tensors` or `git zipnn cat --list` lists them)\n") !=
        std::string::npos);
  const Run listed = repo.Sh("git zipnn show --tensors HEAD~3:model.safetensors");
  REQUIRE(listed.code == 0);
  CHECK(listed.out.find("\nfc1.weight  ") != std::string::npos);
  CHECK(listed.out.find("[128, 256]") != std::string::npos);
  CHECK(listed.out.find("\n25 tensors, ") != std::string::npos);
  // The same table cat --list prints.
  const std::string table = repo.Sh("git zipnn cat --list HEAD~3:model.safetensors").out;
  CHECK(listed.out.find(table) != std::string::npos);
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  const Run inspected = repo.Sh("git zipnn inspect " + id);
  REQUIRE(inspected.code == 0);
  CHECK(inspected.out.find("content id   " + id + "\n") != std::string::npos);
  // inspect --tensors names them too: a version of the store down its
  // chain, or a base object file alone; a delta file needs its base.
  CHECK(repo.Sh("git zipnn inspect --tensors " + id).out.find(table) != std::string::npos);
  const Run base = repo.Sh("git zipnn compress -q -o base.zipnn '" + repo.Data("cnn-bf16/step-000080.safetensors") +
                           "' && git zipnn inspect -t base.zipnn");
  REQUIRE(base.code == 0);
  CHECK(base.out.find(table) != std::string::npos);
  const Run delta =
      repo.Sh("git zipnn compress -q -o delta.zipnn '" + repo.Data("cnn-bf16/step-000080.safetensors") + "' --base '" +
              repo.Data("cnn-bf16/step-000040.safetensors") + "' && git zipnn inspect -t delta.zipnn");
  CHECK(delta.code != 0);
  CHECK(delta.err.find("delta.zipnn is a delta: its tensors are read through its base") != std::string::npos);
}

TEST_CASE("cat names what is wrong: a tensor, a format, a terminal, a file that is not a checkpoint") {
  Repo repo;
  CommitTrajectory(repo);
  CHECK(repo.Sh("git zipnn cat model.safetensors -t fc2.weigth -o x").err ==
        "error: no tensor 'fc2.weigth' in model.safetensors (did you mean 'fc2.weight'?); `git zipnn cat --list "
        "model.safetensors` lists them\n");
  CHECK(repo.Sh("git zipnn cat model.safetensors -t fc2.weight -o x.npy").err ==
        "error: 'fc2.weight' is bf16, which numpy has no type for; write it as safetensors or raw instead\n");
  CHECK(repo.Sh("git zipnn cat model.safetensors -t 'c*' --format npy -o x").err ==
        "error: a .npy file holds one tensor, and 6 are chosen: name one with --tensor, or write safetensors\n");
  CHECK(repo.Sh("git zipnn cat model.safetensors --format pickle -o x").err ==
        "error: --format must be raw, npy or safetensors, not 'pickle'\n");
  CHECK(repo.Sh("git zipnn cat model.safetensors -t fc2.weight -o .zipnn.yaml").err ==
        "error: .zipnn.yaml exists; cat does not write over it (pass --force to replace it)\n");
  // Nothing is left behind by a failed cat.
  CHECK(repo.Sh("ls x x.npy 2>/dev/null").out.empty());
  // A terminal is not written to (script gives the command one).
  const Run tty = repo.Sh("script -qec 'git zipnn cat model.safetensors -t fc2.weight' /dev/null");
  CHECK(tty.code != 0);
  CHECK(tty.out.find("not writing checkpoint bytes to a terminal: give -o FILE, or pipe the output") !=
        std::string::npos);
  // A tracked file that holds no tensors is written whole, and only whole.
  REQUIRE(
      repo.Sh("head -c 5000 /dev/urandom > noise.safetensors && git add noise.safetensors && git commit -qm n").code ==
      0);
  const Run noise = repo.Sh("git zipnn cat --list noise.safetensors");
  CHECK(noise.code != 0);
  CHECK(noise.err.find("error: noise.safetensors is not a safetensors or torch.save checkpoint git-zipnn can read "
                       "tensors of") == 0);
  REQUIRE(repo.Sh("git zipnn cat noise.safetensors -o n.bin && cmp n.bin noise.safetensors").code == 0);
}

TEST_CASE("cat checks what it reads: a damaged base is refused and nothing is written") {
  Repo repo;
  CommitTrajectory(repo);
  // HEAD~3 (step 80) is a delta on step 40, the first base: damage a
  // byte of every chunk record of the base's object (one every 2 KiB from
  // past its header to short of its index), so that whatever chunk holds
  // the tensor is hit.
  const std::string base = IdAt(repo, "HEAD~4:model.safetensors");
  REQUIRE(base.size() == 32);
  const std::string object = ".git/zipnn/objects/" + base.substr(0, 2) + "/" + base.substr(2, 2) + "/" + base;
  REQUIRE(repo.Sh("chmod u+w " + object +
                  " && /usr/bin/python3 -c \"import sys; b = bytearray(open(sys.argv[1], "
                  "'rb').read()); [b.__setitem__(i, b[i] ^ 0x55) for i in range(1000, len(b) - 1000, 2048)]; "
                  "open(sys.argv[1], 'wb').write(b)\" " +
                  object)
              .code == 0);
  const Run damaged = repo.Sh("git zipnn cat HEAD~3:model.safetensors -t c2.weight -o c2.raw");
  CHECK(damaged.code != 0);
  CHECK(damaged.err.find(base) != std::string::npos);
  CHECK(damaged.err.find("checksum mismatch") != std::string::npos);
  CHECK(repo.Sh("test -e c2.raw").code != 0);
}

TEST_CASE("cat reads a version stored in format 2 by restoring it whole") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'delta_transform: xor\\n' > .zipnn.yaml && cp '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' m.safetensors && git add -A && git commit -qm 40 && cp '" +
                  repo.Data("cnn-bf16/step-000080.safetensors") + "' m.safetensors && git commit -qam 80")
              .code == 0);
  CHECK(repo.Sh("git zipnn show HEAD:m.safetensors").out.find("format       version 2") != std::string::npos);
  REQUIRE(repo.Sh("git zipnn cat m.safetensors -t fc1.weight > fc1.raw").code == 0);
  CHECK(Slurp(repo.File("fc1.raw")) ==
        Tensors(Slurp(repo.Data("cnn-bf16/step-000080.safetensors"))).at("fc1.weight").bytes);
}

TEST_CASE("cat takes torch.save tensors by their own shapes, views of shared storages included") {
  Repo repo;
  // x, a slice of it (a view at an offset), the same tensor under a second
  // name (tied weights), and its transpose (strided), saved together.
  const std::string script =
      "import torch; torch.manual_seed(0); x = torch.randn(6, 4); "
      "c = torch.randn(2, 3, 4); "
      "torch.save({'x': x, 'rows': x[2:4], 'tied': x, 't': x.t(), 'y': torch.arange(5, dtype=torch.int64), "
      "'every2': x[1:, ::2], 'perm': c.permute(2, 0, 1)}, 'v.pt'); "
      "x[1:, ::2].contiguous().numpy().tofile('every2.want'); c.permute(2, 0, "
      "1).contiguous().numpy().tofile('perm.want'); "
      "x[2:4].contiguous().numpy().tofile('rows.want'); x.numpy().tofile('x.want'); "
      "x.t().contiguous().numpy().tofile('t.want')";
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.pt' && /usr/bin/python3 -c \"" + script +
                  "\" && git add .gitattributes v.pt && git commit -qm views")
              .code == 0);
  const Run listed = repo.Sh("git zipnn cat --list --json v.pt");
  REQUIRE(listed.code == 0);
  const nlohmann::json list = nlohmann::json::parse(listed.out);
  CHECK(list["format"] == "pytorch");
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : list["tensors"]) by_name[t["name"]] = t;
  REQUIRE(by_name.size() == 7);
  CHECK(by_name["x"]["shape"] == nlohmann::json::array({6, 4}));
  CHECK(by_name["rows"]["shape"] == nlohmann::json::array({2, 4}));
  CHECK(by_name["rows"]["bytes"] == 32);
  CHECK(by_name["t"]["shape"] == nlohmann::json::array({4, 6}));
  CHECK(by_name["t"]["strided"] == true);
  CHECK(by_name["y"]["dtype"] == "i64");
  // A slice and a tied name read the bytes of the storage they share.
  REQUIRE(repo.Sh("git zipnn cat v.pt -t rows > rows.raw && git zipnn cat v.pt -t tied > tied.raw").code == 0);
  CHECK(Slurp(repo.File("rows.raw")) == Slurp(repo.File("rows.want")));
  CHECK(Slurp(repo.File("tied.raw")) == Slurp(repo.File("x.want")));
  // A strided view is gathered into order; the whole file holds it too.
  REQUIRE(repo.Sh("git zipnn cat v.pt -t t > t.raw && git zipnn cat v.pt -o all.safetensors").code == 0);
  CHECK(Slurp(repo.File("t.raw")) == Slurp(repo.File("t.want")));
  // A slice with a step, and a permutation of three dimensions.
  REQUIRE(repo.Sh("git zipnn cat v.pt -t every2 > every2.raw && git zipnn cat v.pt -t perm > perm.raw").code == 0);
  CHECK(Slurp(repo.File("every2.raw")) == Slurp(repo.File("every2.want")));
  CHECK(Slurp(repo.File("perm.raw")) == Slurp(repo.File("perm.want")));
  CHECK(by_name["perm"]["shape"] == nlohmann::json::array({4, 2, 3}));
  CHECK(Tensors(Slurp(repo.File("all.safetensors"))).at("t").bytes == Slurp(repo.File("t.want")));
  CHECK(by_name["t"]["bytes"] == 96);
  CHECK(by_name["t"]["strides"] == nlohmann::json::array({1, 4}));
  // Tensors under a torch.save name are refused: torch.load could not read them.
  CHECK(repo.Sh("git zipnn cat v.pt -t x -o x.pt").err.find("not as a torch.save file") != std::string::npos);
  REQUIRE(repo.Sh("git zipnn cat v.pt -t x -t rows -t y -o some.safetensors").code == 0);
  CHECK(Tensors(Slurp(repo.File("some.safetensors"))).at("rows").bytes == Slurp(repo.File("rows.want")));
}

TEST_CASE("a view that repeats its storage into terabytes is left out, with a warning; a small broadcast is read") {
  Repo repo;
  // expand() repeats an element by a stride of 0: a 1 KB file claims
  // 4 TiB (2^40 floats) and 2^64 bytes (2^62 floats, which overflowed to 0).
  const std::string script =
      "import torch; b = torch.arange(3.).expand(4, 3); "
      "torch.save({'big': torch.zeros(1).expand(2**40), 'huge': torch.zeros(1).expand(2**62), 'b': b}, 'e.pt'); "
      "b.contiguous().numpy().tofile('b.want')";
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.pt' && /usr/bin/python3 -c \"" + script +
                  "\" && git add .gitattributes e.pt && git commit -qm broadcast")
              .code == 0);
  const Run listed = repo.Sh("git zipnn cat --list --json e.pt");
  REQUIRE(listed.code == 0);
  std::map<std::string, nlohmann::json> by_name;
  const nlohmann::json listing = nlohmann::json::parse(listed.out);  // the loop reads into it: keep it alive
  for (const auto& t : listing["tensors"]) by_name[t["name"].get<std::string>()] = t;
  CHECK(by_name.count("big") == 0);
  CHECK(by_name.count("huge") == 0);
  REQUIRE(by_name.count("b") == 1);
  CHECK(by_name["b"]["bytes"] == 48);
  CHECK(listed.err.find("tensor 'big' is a view that repeats its storage's") != std::string::npos);
  const Run big = repo.Sh("git zipnn cat e.pt -t big > big.raw");
  CHECK(big.code != 0);
  CHECK(repo.Sh("stat -c %s big.raw").out == "0\n");
  REQUIRE(repo.Sh("git zipnn cat e.pt -t b > b.raw && git zipnn cat e.pt -o all.safetensors").code == 0);
  CHECK(Slurp(repo.File("b.raw")) == Slurp(repo.File("b.want")));
  CHECK(repo.Sh("stat -c %s all.safetensors").out.size() < 6);  // well under a megabyte
}

}  // namespace
}  // namespace zipnn::testing
