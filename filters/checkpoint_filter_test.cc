// Tests of CheckpointFilter's smudge against a real store: a checkout
// that restores a series in step order starts each restore from the file
// it wrote a moment before, and never from one that changed since; every
// delayed file is handed back, whatever its step is called. Real
// checkpoints from tests/data.
#include "filters/checkpoint_filter.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "filters/pkt_line_testing.h"
#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/store/checkin.h"
#include "lib/store/chain.h"
#include "lib/store/test_objects.h"

namespace zipnn::filters {
namespace {

std::string Step(int s) {
  char name[64];
  std::snprintf(name, sizeof name, "tests/data/cnn-bf16/step-%06d.safetensors", s);
  return name;
}

ContentId IdOf(const std::string& file) { return store::testing::IdOfFile(file); }

// A store holding steps 40, 80 and 120 of cnn-bf16 as one forward chain
// (a base and two deltas: newest: delta), and a work tree that is empty.
config::Policy Forward() {
  config::Policy policy;
  policy.newest = config::Newest::kDelta;
  policy.max_chain = config::DefaultMaxChain(policy.base_interval, policy.newest);
  return policy;
}

struct Fixture {
  std::string root = store::testing::TempDir();
  store::Store store{store::ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", root + "/work", Forward()};
  std::vector<store::Version> held;
  std::vector<store::Pointer> pointers;

  Fixture() {
    REQUIRE(std::system(("mkdir -p " + store.work_dir + "/run").c_str()) == 0);
    for (int s : {40, 80, 120}) {
      const std::string step = std::to_string(s);
      const store::NewVersion v{Step(s), IdOf(Step(s)), "run/" + step, "run/#", step};
      auto checked = store::CheckIn(store, v, [&](bool) -> Result<std::vector<store::Version>> { return held; });
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
    std::FILE* f = std::fopen((store.work_dir + "/" + path).c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(out.buffer().data(), 1, out.buffer().size(), f) == out.buffer().size());
    std::fclose(f);
    CHECK(HashBytes(out.buffer().data(), out.buffer().size()) == held[i].id);
    return OkStatus();
  }
};

TEST_CASE("smudge starts a restore from a version it checked out a moment before, if it still holds its bytes") {
  Fixture f;
  auto info = store::Describe(f.store, f.held[2].id);
  REQUIRE(info.ok());
  REQUIRE(info->depth == 2);
  CheckpointFilter filter(f.store, nullptr);
  REQUIRE(f.CheckOut(filter, 1).ok());  // step 80: its chain decoded, base included
  // The base is gone from the store: step 120 is restored from the file of
  // step 80 just written, not from the chain below it.
  REQUIRE(std::remove(f.store.objects.PathOf(f.held[0].id).c_str()) == 0);
  REQUIRE(f.CheckOut(filter, 2).ok());
  // Once that file has changed it is not used: the restore needs the
  // chain again, and says what is missing rather than write other bytes.
  REQUIRE(std::system(("cp " + Step(200) + " " + f.store.work_dir + "/run/80").c_str()) == 0);
  const Status st = f.CheckOut(filter, 2);
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK(st.message().find(f.held[0].id.Hex()) != std::string::npos);
}

TEST_CASE("delayed smudges of steps equal in value but spelled apart are each handed back, by path") {
  using namespace testing;
  Fixture f;
  CheckpointFilter filter(f.store, nullptr);
  // One series (run/step_#.safetensors): step 20 first, then the two
  // spellings of step 100, by path.
  const std::string p20 = "run/step_20.safetensors", p0100 = "run/step_0100.safetensors",
                    p100 = "run/step_100.safetensors";
  const std::string git = GitHello() + DelayableSmudge(p100, store::FormatPointer(f.pointers[2])) +
                          DelayableSmudge(p20, store::FormatPointer(f.pointers[0])) +
                          DelayableSmudge(p0100, store::FormatPointer(f.pointers[1])) + ListAvailable() +
                          Request("smudge", p20, "") + ListAvailable() + Request("smudge", p0100, "") +
                          ListAvailable() + Request("smudge", p100, "") + ListAvailable();
  MemoryReader in(git);
  MemorySink out;
  REQUIRE(ServeFilterProcess(in, out, filter, nullptr).ok());
  const std::string answer(reinterpret_cast<const char*>(out.buffer().data()), out.buffer().size());
  // The paths handed back, in order, for a readable failure.
  std::string handed;
  for (size_t at = 0; (at = answer.find("pathname=", at)) != std::string::npos;) {
    at += 9;
    handed += answer.substr(at, answer.find('\n', at) - at) + " ";
  }
  CHECK(handed == p20 + " " + p0100 + " " + p100 + " ");
  auto bytes = [&](int s) {
    auto data = ReadWholeFile(Step(s));
    REQUIRE(data.ok());
    return std::string(data->begin(), data->end());
  };
  CHECK((answer == ServerHello() + Delayed() + Delayed() + Delayed() + Available(p20) + Success(bytes(40)) +
                       Available(p0100) + Success(bytes(80)) + Available(p100) + Success(bytes(120)) + Available("")));
}

}  // namespace
}  // namespace zipnn::filters
