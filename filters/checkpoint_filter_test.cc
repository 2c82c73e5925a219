// Tests of CheckpointFilter's smudge against a real store: a checkout
// that restores a series in step order starts each restore from the file
// it wrote a moment before, and never from one that changed since.
// Real checkpoints from tests/data.
#include "filters/checkpoint_filter.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/store/checkpoints.h"
#include "lib/store/test_objects.h"

namespace zipnn::filters {
namespace {

std::string Step(int s) {
  char name[64];
  std::snprintf(name, sizeof name, "tests/data/cnn-bf16/step-%06d.safetensors", s);
  return name;
}

ContentId IdOf(const std::string& file) { return store::testing::IdOfFile(file); }

// A store holding steps 40, 80 and 120 of cnn-bf16 as one chain (a base and
// two deltas), and a work tree that is empty.
struct Fixture {
  std::string root = store::testing::TempDir();
  store::Repository repo{store::ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", root + "/work",
                         config::Policy{}};
  std::vector<store::Version> held;
  std::vector<store::Pointer> pointers;

  Fixture() {
    REQUIRE(std::system(("mkdir -p " + repo.work_dir + "/run").c_str()) == 0);
    for (int s : {40, 80, 120}) {
      const std::string step = std::to_string(s);
      const store::NewVersion v{Step(s), IdOf(Step(s)), "run/" + step, "run/#", step};
      auto checked = store::CheckIn(repo, v, [&](bool) -> Result<std::vector<store::Version>> { return held; });
      REQUIRE_MESSAGE(checked.ok(), checked.status().message());
      held.push_back(store::Version{v.id, step, v.path});
      pointers.push_back(checked->pointer);
    }
  }
  ~Fixture() { (void)std::system(("rm -rf " + root).c_str()); }

  // Smudges pointer i to run/<step> as git would, writing the file. The
  // error, if any.
  Status CheckOut(CheckpointFilter& filter, int i) {
    const std::string path = "run/" + held[i].step;
    MemoryReader content(store::FormatPointer(pointers[i]));
    MemorySink out;
    ZIPNN_RETURN_IF_ERROR(filter.Smudge(path, content, out));
    std::FILE* f = std::fopen((repo.work_dir + "/" + path).c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(out.buffer().data(), 1, out.buffer().size(), f) == out.buffer().size());
    std::fclose(f);
    CHECK(HashBytes(out.buffer().data(), out.buffer().size()) == held[i].id);
    return OkStatus();
  }
};

TEST_CASE("smudge starts a restore from a version it checked out a moment before, if it still holds its bytes") {
  Fixture f;
  auto info = store::Describe(f.repo, f.held[2].id);
  REQUIRE(info.ok());
  REQUIRE(info->depth == 2);
  CheckpointFilter filter(f.repo, nullptr);
  REQUIRE(f.CheckOut(filter, 1).ok());  // step 80: its chain decoded, base included
  // The base is gone from the store: step 120 is restored from the file of
  // step 80 just written, not from the chain below it.
  REQUIRE(std::remove(f.repo.objects.PathOf(f.held[0].id).c_str()) == 0);
  REQUIRE(f.CheckOut(filter, 2).ok());
  // Once that file has changed it is not used: the restore needs the
  // chain again, and says what is missing rather than write other bytes.
  REQUIRE(std::system(("cp " + Step(200) + " " + f.repo.work_dir + "/run/80").c_str()) == 0);
  const Status st = f.CheckOut(filter, 2);
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK(st.message().find(f.held[0].id.Hex()) != std::string::npos);
}

}  // namespace
}  // namespace zipnn::filters
