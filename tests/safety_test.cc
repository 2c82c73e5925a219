// Faults that once lost data or broke checkouts, each shown through the
// real git binary (docs/reliability.md): a base rewritten while a delta
// is built on it, merges of branches that delete and add checkpoints, and
// pointers committed in the first pointer version.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/strings.h"
#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::IdAt;
using testing::Repo;
using testing::Run;

std::string Bf16(const Repo& repo, int step) {
  char name[64];
  std::snprintf(name, sizeof name, "cnn-bf16/step-%06d.safetensors", step);
  return repo.Data(name);
}

void Setup(Repo& repo, const std::string& patterns) {
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track " + patterns +
                  " && git add .gitattributes && git commit -qm setup")
              .code == 0);
}

TEST_CASE("git add never stores a delta built on a work-tree file rewritten while it was read") {
  Repo repo;
  Setup(repo, "'*.safetensors'");
  REQUIRE(repo.Sh("mkdir run && cp '" + Bf16(repo, 40) +
                  "' run/step_1.safetensors && "
                  "git add run && git commit -qm 'step 1'")
              .code == 0);
  // While each next save is added, a thread flips a page in the middle of
  // step_1's tensors back and forth, in place, as a trainer saving over
  // it would: the add may hash step_1 whole and then read other bytes of
  // it. Each save is a little different, so each add stores anew.
  const std::string base = repo.File("run/step_1.safetensors");
  const int fd = ::open(base.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  struct stat st;
  REQUIRE(::fstat(fd, &st) == 0);
  const off_t at = st.st_size / 2;
  std::vector<char> page(4096);
  REQUIRE(::pread(fd, page.data(), page.size(), at) == static_cast<ssize_t>(page.size()));
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    while (!done) {
      for (char& c : page) c = static_cast<char>(c ^ 0x5a);
      if (::pwrite(fd, page.data(), page.size(), at) < 0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  constexpr int kSaves = 12;
  for (int i = 0; i < kSaves; ++i) {
    CAPTURE(i);
    const std::string save = "run/step_2.safetensors";
    // Save i: step 80's bytes with one byte of its last tensor changed.
    const Run made =
        repo.Sh("cp '" + Bf16(repo, 80) + "' " + save + " && printf '\\x" + std::to_string(10 + i) +
                "' | dd of=" + save + " bs=1 seek=117000 conv=notrunc status=none && cp " + save + " ../save-" +
                std::to_string(i) + " && git add " + save + " && git commit -qm 'save " + std::to_string(i) + "'");
    CHECK_MESSAGE(made.code == 0, made.err);
  }
  done = true;
  flipper.join();
  ::close(fd);
  // Every save restores exactly, and is a delta of step_1 all the same.
  for (int i = 0; i < kSaves; ++i) {
    CAPTURE(i);
    const std::string rev = "HEAD~" + std::to_string(kSaves - 1 - i);
    const Run restored =
        repo.Sh("git zipnn restore run/step_2.safetensors --rev " + rev + " -o ../out-" + std::to_string(i) +
                " && cmp ../out-" + std::to_string(i) + " ../save-" + std::to_string(i));
    CHECK_MESSAGE(restored.code == 0, restored.err);
  }
  CHECK(repo.Sh("git zipnn log run/step_2.safetensors").out.find("delta") != std::string::npos);
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
}

// The files of a Trainer checkpoint folder: the model at `step` (40, 80,
// 120 or 160) of the cnn-bf16 run (all of one size, so version 1
// pointers of any two were 53% alike), and a torch.save, each folder's
// its own.
std::string SaveFolder(const Repo& repo, const std::string& folder, int step) {
  const char* saved[] = {"pt-cnn/step-000040.pt", "pt-cnn/step-000080.pt", "pt-gpt/step-000020.pt",
                         "pt-gpt/step-000040.pt"};
  return "mkdir -p " + folder + " && cp '" + Bf16(repo, step) + "' " + folder + "/model.safetensors && cp '" +
         repo.Data(saved[step / 40 - 1]) + "' " + folder + "/optimizer.pt";
}

TEST_CASE("branches that each delete a checkpoint folder and add another merge without touching a checkpoint") {
  Repo repo;
  Setup(repo, "'*.safetensors' '*.pt'");
  REQUIRE(repo.Sh(SaveFolder(repo, "out/checkpoint-100", 40) + " && " + SaveFolder(repo, "out/checkpoint-250", 80) +
                  " && git add out && git commit -qm 'two saves'")
              .code == 0);
  REQUIRE(repo.Sh("git checkout -qb other && git rm -rq out/checkpoint-250 && " +
                  SaveFolder(repo, "out/checkpoint-350", 160) + " && git add out && git commit -qm 'keep 350'")
              .code == 0);
  REQUIRE(repo.Sh("git checkout -q - && git rm -rq out/checkpoint-250 && " +
                  SaveFolder(repo, "out/checkpoint-150", 120) + " && git add out && git commit -qm 'keep 150'")
              .code == 0);
  const Run merged = repo.Sh("git merge -q --no-edit other");
  CHECK_MESSAGE(merged.code == 0, (merged.out + merged.err));
  CHECK(merged.out.find("CONFLICT") == std::string::npos);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // Each folder holds what its save wrote, restored through the filter.
  for (const auto& [folder, step] : std::vector<std::pair<std::string, int>>{
           {"out/checkpoint-100", 40}, {"out/checkpoint-150", 120}, {"out/checkpoint-350", 160}}) {
    CAPTURE(folder);
    CHECK(repo.Sh("cmp " + folder + "/model.safetensors '" + Bf16(repo, step) + "'").code == 0);
    CHECK(repo.Sh("git show HEAD:" + folder + "/optimizer.pt | head -c 20").out == "git-zipnn pointer 2 ");
  }
  CHECK(repo.Sh("test -e out/checkpoint-250").code != 0);
  CHECK(repo.Sh("git zipnn fsck").code == 0);
}

TEST_CASE("pointers committed in version 1 stay as they are until their checkpoint changes") {
  Repo repo;
  Setup(repo, "'*.safetensors'");
  REQUIRE(repo.Sh("cp '" + Bf16(repo, 40) +
                  "' model.safetensors && git add model.safetensors && "
                  "git commit -qm 'step 40'")
              .code == 0);
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(id.size() == 32);
  // A repository from before 0.6.0: the same checkpoint, its pointer in
  // version 1.
  const std::string v1 = "git-zipnn pointer 1\\nid xxh3-128:" + id + "\\nsize 117764\\nformat safetensors\\n";
  REQUIRE(repo.Sh("blob=$(printf '" + v1 +
                  "' | git hash-object -w --stdin) && "
                  "git update-index --cacheinfo 100644,$blob,model.safetensors && git commit -qm 'version 1'")
              .code == 0);
  CHECK(repo.Sh("git show HEAD:model.safetensors | head -1").out == "git-zipnn pointer 1\n");
  // Cleaned again (its time changed, or a renormalize): git sees no change.
  REQUIRE(repo.Sh("touch model.safetensors && git add --renormalize . && git status --porcelain").out.empty());
  CHECK(repo.Sh("git diff HEAD --stat").out.empty());
  // It checks out, and a new save at that path is written in version 2.
  CHECK(repo.Sh("rm model.safetensors && git checkout -- model.safetensors && cmp model.safetensors '" +
                Bf16(repo, 40) + "'")
            .code == 0);
  REQUIRE(repo.Sh("cp '" + Bf16(repo, 80) +
                  "' model.safetensors && git add model.safetensors && "
                  "git commit -qm 'step 80'")
              .code == 0);
  CHECK(repo.Sh("git show HEAD:model.safetensors | head -c 20").out == "git-zipnn pointer 2 ");
  CHECK(repo.Sh("git zipnn restore model.safetensors --rev HEAD~1 -o ../old && cmp ../old '" + Bf16(repo, 40) + "'")
            .code == 0);
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
}

// From an `strace -f` log: whether a process that linked or renamed a
// file to `path` then opened `path`'s folder and fsynced it.
bool FolderSyncedAfter(const std::string& log, const std::string& path) {
  const std::string folder = path.substr(0, path.rfind('/'));
  std::istringstream lines(log);
  std::string line, pid, fd;
  enum { kLink, kOpen, kSync } want = kLink;
  while (std::getline(lines, line)) {
    const std::string who = line.substr(0, line.find(' '));
    if (want == kLink) {
      const bool moved = line.find("link") != std::string::npos || line.find("rename") != std::string::npos;
      if (moved && line.find("\"" + path + "\"") != std::string::npos && EndsWith(line, "= 0")) {
        pid = who;
        want = kOpen;
      }
    } else if (who == pid && want == kOpen && line.find("openat(") != std::string::npos &&
               line.find("\"" + folder + "\"") != std::string::npos && line.find("O_DIRECTORY") != std::string::npos) {
      fd = line.substr(line.rfind("= ") + 2);
      want = kSync;
    } else if (who == pid && want == kSync && line.find("fsync(" + fd + ")") != std::string::npos &&
               EndsWith(line, "= 0")) {
      return true;
    }
  }
  return false;
}

TEST_CASE("an object linked into the store survives a power loss: its folder is fsynced after the link") {
  Repo repo;
  Setup(repo, "'*.safetensors'");
  REQUIRE(repo.Sh("command -v strace").code == 0);
  // A first version (a base, written in place) and a second (a delta,
  // encoded aside and linked in).
  for (int step : {40, 80}) {
    CAPTURE(step);
    // A file per thread (-ff), each line then prefixed with the thread's
    // id: in one shared file, a call another thread interrupts is split
    // over two lines ("<unfinished ...>", "<... resumed>"), which would
    // hide its path or its result from FolderSyncedAfter.
    const Run traced = repo.Sh("cp '" + Bf16(repo, step) +
                               "' m.safetensors && rm -f ../trace ../trace.* && strace -ff -qq -o ../trace -e "
                               "trace=link,linkat,rename,renameat,renameat2,openat,fsync,mkdir,mkdirat "
                               "git add m.safetensors && git commit -qm " +
                               std::to_string(step) +
                               " && for f in ../trace.*; do sed \"s/^/${f##*.} /\" \"$f\"; done > ../trace");
    REQUIRE_MESSAGE(traced.code == 0, traced.err);
    const std::string id = IdAt(repo, "HEAD:m.safetensors");
    REQUIRE(id.size() == 32);
    const std::string object = repo.File(".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id);
    CHECK(FolderSyncedAfter(testing::Slurp(repo.root() + "/trace"), object));
  }
}

}  // namespace
}  // namespace zipnn
