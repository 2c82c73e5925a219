// Hostile input, end to end through the real git binary: damaged objects,
// pointers that lie or try to reach outside the store, a .zipnn.yaml with
// wrong types, and checkpoint files whose headers lie. Each case states
// its expected result: an error that names what is wrong and writes
// nothing, or (for files that only look like checkpoints) a lossless raw
// store and an exact restore. docs/reliability.md tabulates them with the
// unit tests of the decoders.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::CommitTrajectory;
using testing::IdAt;
using testing::Repo;
using testing::Run;
using testing::Slurp;

std::string ObjectFile(Repo& repo, const std::string& id) {
  return repo.File(".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id);
}

// Restoring the version at `rev` fails naming `id`, and writes no file.
void RestoreRefused(Repo& repo, const std::string& id, const std::string& rev = "HEAD") {
  const Run r = repo.Sh("rm -f out && git zipnn restore --rev " + rev + " model.safetensors -o out");
  CHECK(r.code != 0);
  CHECK(r.err.find(id) != std::string::npos);
  CHECK(repo.Sh("test -e out").code != 0);
}

// Commits `text` as the blob of `path` without the clean filter (as a
// hostile or broken client could, running none of our hooks).
void CommitRawBlob(Repo& repo, const std::string& path, const std::string& text) {
  std::ofstream(repo.File("../blob"), std::ios::binary) << text;
  REQUIRE(repo.Sh("rm -f '" + path +
                  "' && oid=$(git hash-object -w --no-filters ../blob) && "
                  "git update-index --add --cacheinfo 100644,$oid,'" +
                  path + "' && git commit -q --no-verify -m hostile")
              .code == 0);
}

TEST_CASE("truncated objects are refused, naming the object; nothing is written") {
  Repo repo;
  CommitTrajectory(repo);
  // HEAD~1 is a delta of HEAD, the newest, stored whole.
  const std::string top = IdAt(repo, "HEAD~1:model.safetensors"), base = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("git zipnn show " + top).out.find("delta") != std::string::npos);
  for (const std::string& id : {top, base}) {
    const std::string file = ObjectFile(repo, id);
    const std::string whole = Slurp(file);
    for (size_t keep : {size_t{0}, size_t{16}, whole.size() / 2, whole.size() - 1}) {
      CAPTURE(id);
      CAPTURE(keep);
      std::ofstream(file, std::ios::binary | std::ios::trunc) << whole.substr(0, keep);
      RestoreRefused(repo, id, "HEAD~1");
      const Run fsck = repo.Sh("git zipnn fsck --all");
      CHECK(fsck.code != 0);
      CHECK(fsck.out.find(id) != std::string::npos);
    }
    std::ofstream(file, std::ios::binary | std::ios::trunc) << whole;
  }
  CHECK(repo.Sh("git zipnn fsck").code == 0);
}

TEST_CASE("a flipped bit anywhere in an object is refused, naming the object; git checkout writes nothing") {
  Repo repo;
  CommitTrajectory(repo);
  // HEAD~1 is a delta of HEAD, the newest, stored whole.
  const std::string top = IdAt(repo, "HEAD~1:model.safetensors"), base = IdAt(repo, "HEAD:model.safetensors");
  for (const std::string& id : {top, base}) {
    const std::string file = ObjectFile(repo, id);
    const std::string whole = Slurp(file);
    // Header, chunk map, payload and trailer: 24 places over the object.
    for (size_t k = 0; k < 24; ++k) {
      const size_t at = k < 4 ? k * 9 : (whole.size() - 1) * k / 23;
      CAPTURE(id);
      CAPTURE(at);
      std::string bad = whole;
      bad[at] = static_cast<char>(bad[at] ^ (1 << (k % 8)));
      std::ofstream(file, std::ios::binary | std::ios::trunc) << bad;
      RestoreRefused(repo, id, "HEAD~1");
    }
    // Through git: the checkout fails and leaves no wrong bytes behind.
    // (Without the raw copies an add keeps: smudge would build HEAD~1 on
    // the copy of HEAD, which is verified, and need no object of HEAD.)
    std::string bad = whole;
    bad[whole.size() / 2] ^= 0x10;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bad;
    const Run checkout =
        repo.Sh("rm -rf .git/zipnn/cache model.safetensors && git checkout HEAD~1 -- model.safetensors");
    CHECK(checkout.code != 0);
    CHECK(checkout.err.find(id) != std::string::npos);
    CHECK(Slurp(repo.File("model.safetensors")).empty());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << whole;
    REQUIRE(repo.Sh("git checkout HEAD -- model.safetensors").code == 0);
  }
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
}

TEST_CASE("pointers with malformed, oversize or path-like fields are refused and reach nothing") {
  Repo repo;
  CommitTrajectory(repo);
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  // Text that claims to be a pointer and is not one is no reference to
  // anything: checkout leaves it as the text git holds (as it does a
  // merge conflict in a pointer), and fsck names it.
  const std::string kMalformed[] = {
      "git-zipnn pointer 1\nid xxh3-128:../../../../../../etc/passwd\nsize 5\nformat raw\n",
      "git-zipnn pointer 1\nid xxh3-128:" + id + "/../../x\nsize 5\nformat raw\n",
      "git-zipnn pointer 1\nid xxh3-128:" + id + "\nsize 99999999999999999999\nformat safetensors\n",
      "git-zipnn pointer 1\nid xxh3-128:" + id + "\nsize -1\nformat safetensors\n",
      "git-zipnn pointer 1\nid xxh3-128:" + id + "\nsize 5\nformat unknown-format\n",
      "git-zipnn pointer 1\nid xxh3-128:" + id + "\n",
  };
  for (const std::string& text : kMalformed) {
    CAPTURE(text);
    CommitRawBlob(repo, "p.safetensors", text);
    REQUIRE(repo.Sh("git checkout -- p.safetensors").code == 0);
    CHECK(Slurp(repo.File("p.safetensors")) == text);
    // git runs clean again once the file's times change: status and stash
    // go on working, with a warning, and see nothing changed.
    const Run status = repo.Sh("touch p.safetensors && git status --porcelain && git stash -q && git stash list");
    CHECK(status.code == 0);
    CHECK(status.out.empty());
    CHECK(status.err.find("git-zipnn: warning: p.safetensors holds a damaged git-zipnn pointer") != std::string::npos);
    const Run fsck = repo.Sh("git zipnn fsck");
    CHECK(fsck.code != 0);
    CHECK(fsck.out.find("p.safetensors") != std::string::npos);
    CHECK(fsck.out.find("pointer") != std::string::npos);
  }
  // Longer than any pointer can be: plain content, whatever it says.
  const std::string longer =
      "git-zipnn pointer 1\nid xxh3-128:" + id + "\nsize 5\nformat " + std::string(300, 'x') + "\n";
  CommitRawBlob(repo, "p.safetensors", longer);
  REQUIRE(repo.Sh("git checkout -- p.safetensors").code == 0);
  CHECK(Slurp(repo.File("p.safetensors")) == longer);
  // A well-formed pointer to content in no store, with a huge size:
  // through git's filter, an error naming the object, and no file;
  // written after git's checkout (it is over zipnn.checkoutOutsideAbove),
  // the same error from the post-checkout hook, and the pointer stays.
  const std::string huge =
      "git-zipnn pointer 1\nid xxh3-128:0123456789abcdef0123456789abcdef\nsize 9223372036854775807\n"
      "format safetensors\n";
  CommitRawBlob(repo, "p.safetensors", huge);
  Run missing = repo.Sh("git -c zipnn.checkoutOutsideAbove=0 checkout -- p.safetensors");
  CHECK(missing.code != 0);
  CHECK(missing.err.find("object 0123456789abcdef0123456789abcdef for p.safetensors is not in the store") !=
        std::string::npos);
  CHECK(Slurp(repo.File("p.safetensors")).empty());
  REQUIRE(repo.Sh("rm -f p.safetensors").code == 0);
  missing = repo.Sh("git checkout -- p.safetensors");
  CHECK(missing.code != 0);
  CHECK(missing.err.find("object 0123456789abcdef0123456789abcdef for p.safetensors is not in the store") !=
        std::string::npos);
  CHECK(Slurp(repo.File("p.safetensors")) == huge);
  // A pointer whose size lies about the content it names: restores only
  // what the id holds, and fsck reports the mismatch.
  for (const std::string& lying : {"git-zipnn pointer 2 7 xxh3-128:" + id + " safetensors\n",
                                   "git-zipnn pointer 1\nid xxh3-128:" + id + "\nsize 7\nformat safetensors\n"}) {
    CAPTURE(lying);
    CommitRawBlob(repo, "p.safetensors", lying);
    CHECK(repo.Sh("git zipnn fsck").out.find("its pointer says 7") != std::string::npos);
  }
  // Ids given on the command line are ids, never paths.
  for (const char* arg : {"../../../../../../etc/passwd", "/etc/passwd", "00/../../../../etc/passwd"}) {
    CAPTURE(arg);
    const Run show = repo.Sh(std::string("git zipnn show '") + arg + "'");
    CHECK(show.code != 0);
    CHECK(show.out.find("root:") == std::string::npos);
  }
  // With the lying pointer in HEAD beside it, another file is still added
  // and restored (series are read from the pointers git holds; one that
  // lies is only a version the store cannot place against).
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' model.safetensors && "
                  "touch model.safetensors && git add model.safetensors")
              .code == 0);
  CHECK(repo.Sh("git checkout -q HEAD -- model.safetensors && git zipnn fsck --all").code != 0);  // p.safetensors lies
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
}

TEST_CASE("a wrong .zipnn.yaml warns, naming the key, and never stops git: the add stores by the defaults") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && git commit -qm setup")
              .code == 0);
  const struct {
    const char* yaml;
    const char* key;
  } kPolicies[] = {
      {"base_interval: ten\n", "base_interval"},  {"base_interval: -3\n", "base_interval"},
      {"base_interval: 0\n", "base_interval"},    {"max_chain: [1, 2]\n", "max_chain"},
      {"min_gain: lots\n", "min_gain"},           {"delta_against: sideways\n", "delta_against"},
      {"chunk_size: {a: 1}\n", "chunk_size"},     {"threads: 1e99\n", "threads"},
      {"zstd_level: 99\n", "zstd_level"},         {"base_interval: 3\n  nested: : :\n", ".zipnn.yaml"},
      {"- a list\n- not a map\n", ".zipnn.yaml"},
  };
  for (const auto& p : kPolicies) {
    CAPTURE(p.yaml);
    std::ofstream(repo.File(".zipnn.yaml"), std::ios::trunc) << p.yaml;
    const Run add = repo.Sh("rm -rf .git/zipnn && cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                            "' model.safetensors && git add model.safetensors");
    CHECK(add.code == 0);
    CHECK(add.err.find("git-zipnn: warning: ") != std::string::npos);
    CHECK(add.err.find(".zipnn.yaml") != std::string::npos);
    CHECK(add.err.find(p.key) != std::string::npos);
    CHECK(add.err.find("(ignored; the defaults hold)") != std::string::npos);
    // Stored by git-zipnn, as the defaults store it.
    CHECK(!testing::IdAt(repo, ":model.safetensors").empty());
    CHECK(repo.Sh("find .git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l").out == "1\n");
    // Plain git goes on: status, commit, checkout; fsck repeats the warning.
    CHECK(repo.Sh("git status --porcelain").code == 0);
    REQUIRE(repo.Sh("git commit -qm model && rm model.safetensors && git checkout -- model.safetensors").code == 0);
    CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000040.safetensors")));
    const Run fsck = repo.Sh("git zipnn fsck");
    CHECK(fsck.code == 0);
    CHECK(fsck.err.find(p.key) != std::string::npos);
    REQUIRE(repo.Sh("git rm -q model.safetensors && git commit -qm gone").code == 0);
  }
  // A misspelt key is answered with the closest one.
  std::ofstream(repo.File(".zipnn.yaml"), std::ios::trunc) << "serise:\n  - 'run/step-{step}.pt'\n";
  CHECK(repo.Sh("git zipnn fsck").err.find("'serise' is not a policy key (did you mean 'series'?)") !=
        std::string::npos);
}

// `text` as a file named `name`, added and checked out again.
void AddsRawAndRestoresExactly(Repo& repo, const std::string& name, const std::string& bytes) {
  CAPTURE(name);
  std::ofstream(repo.File(name), std::ios::binary | std::ios::trunc) << bytes;
  const Run add = repo.Sh("git add '" + name + "' && git commit -qm '" + name + "'");
  REQUIRE(add.code == 0);
  const std::string pointer = repo.Sh("git show 'HEAD:" + name + "'").out;
  CHECK(testing::PointerFormat(pointer) == "raw");
  REQUIRE(repo.Sh("rm '" + name + "' && git checkout -- '" + name + "'").code == 0);
  CHECK(Slurp(repo.File(name)) == bytes);
  CHECK(repo.Sh("git status --porcelain").out.empty());
}

std::string LittleEndian64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>(v >> (8 * i));
  return s;
}

TEST_CASE("checkpoint files with lying headers are stored raw and restored exactly") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' '*.pt' && git add . && "
                  "git commit -qm setup")
              .code == 0);
  const std::string real = Slurp(repo.Data("cnn-bf16/step-000040.safetensors"));
  std::string huge_header = real;
  huge_header.replace(0, 8, LittleEndian64(uint64_t{1} << 60));
  AddsRawAndRestoresExactly(repo, "huge-header.safetensors", huge_header);
  const std::string header = R"({"w":{"dtype":"BF16","shape":[1000000],"data_offsets":[0,2000000]}})";
  AddsRawAndRestoresExactly(repo, "past-end.safetensors",
                            LittleEndian64(header.size()) + header + std::string(64, '\x3f'));
  const std::string overlap = R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},)"
                              R"("b":{"dtype":"F32","shape":[8],"data_offsets":[16,48]}})";
  AddsRawAndRestoresExactly(repo, "overlap.safetensors",
                            LittleEndian64(overlap.size()) + overlap + std::string(48, 'x'));
  const std::string shape = R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]}})";
  AddsRawAndRestoresExactly(repo, "shape.safetensors", LittleEndian64(shape.size()) + shape + std::string(16, 'y'));
  AddsRawAndRestoresExactly(repo, "text.safetensors", "not a checkpoint at all\n");
  AddsRawAndRestoresExactly(repo, "truncated.safetensors", real.substr(0, real.size() / 2));
  AddsRawAndRestoresExactly(repo, "empty.safetensors", "");
  const std::string pt = Slurp(repo.Data("pt-cnn/step-000040.pt"));
  AddsRawAndRestoresExactly(repo, "truncated.pt", pt.substr(0, pt.size() - 100));
  std::string bad_directory = pt;
  const size_t end = bad_directory.rfind("PK\x05\x06");
  REQUIRE(end != std::string::npos);
  bad_directory.replace(end + 16, 4, "\xff\xff\xff\x7f");  // the directory's offset, far past the end
  AddsRawAndRestoresExactly(repo, "directory.pt", bad_directory);
}

}  // namespace
}  // namespace zipnn
