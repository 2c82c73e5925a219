// Tests of the one road to a version: which copies each kind of reader
// may take instead of decoding objects, and that a copy is used only
// while it holds the version's bytes. Fetching is tested with git and a
// remote (tests/remote_test.cc).
#include "lib/access/versions.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/store/series_fixture.h"

namespace zipnn::access {
namespace {

using store::testing::Bf16;
using store::testing::Fixture;

// Steps 40, 80 and 120 of a series in a store: a base and two deltas.
struct Stored : Fixture {
  std::vector<store::Pointer> pointers;
  Stored() {
    StoreForward();
    for (int s : {40, 80, 120}) pointers.push_back(AddStep(s).pointer);
    REQUIRE(Info(pointers[2].id).depth == 2);
  }
  // What `versions` writes for version i, or its error.
  Result<ContentId> Written(const Versions& versions, size_t i, const store::FindCopy& also = nullptr) {
    struct Hashing : ByteSink {
      Hasher hasher;
      Status Append(const void* data, size_t n) override {
        hasher.Update(data, n);
        return OkStatus();
      }
    } out;
    ZIPNN_RETURN_IF_ERROR(versions.Write(pointers[i], "run/" + std::to_string(i), out, also));
    return out.hasher.Finish();
  }
  void Remove(size_t i) { REQUIRE(std::remove(store.objects.PathOf(pointers[i].id).c_str()) == 0); }
};

// A copy finder that knows one file for one version.
store::FindCopy CopyOf(const ContentId& id, const std::string& file) {
  return [id, file](const ContentId& asked) { return asked == id ? ReadFile::OpenHolding(file, asked) : std::nullopt; };
}

TEST_CASE("restore, cat and pull decode the objects; smudge takes copies of bases; diff takes any copy") {
  Stored f;
  const Options no_fetch{false, Copies::kNone};
  // With every object there, each reader writes the version exactly.
  for (Copies copies : {Copies::kNone, Copies::kBases, Copies::kAll}) {
    const Versions versions(f.store, Options{false, copies});
    const Result<ContentId> written = f.Written(versions, 2);
    REQUIRE(written.ok());
    CHECK(*written == f.pointers[2].id);
  }
  // The base is gone; a copy of step 40 stands in for it, except for the
  // readers that prove the objects.
  f.Remove(0);
  const store::FindCopy base_copy = CopyOf(f.pointers[0].id, Bf16(40));
  CHECK(f.Written(Versions(f.store, no_fetch), 2, base_copy).status().code() == StatusCode::kNotFound);
  CHECK(*f.Written(Versions(f.store, Options{false, Copies::kBases}), 2, base_copy) == f.pointers[2].id);
  CHECK(*f.Written(Versions(f.store, Options{false, Copies::kAll}), 2, base_copy) == f.pointers[2].id);
  // The version's own object is gone: only a reader that takes any copy
  // reads it from one.
  f.Remove(2);
  const store::FindCopy own_copy = CopyOf(f.pointers[2].id, Bf16(120));
  CHECK(f.Written(Versions(f.store, Options{false, Copies::kBases}), 2, own_copy).status().code() ==
        StatusCode::kNotFound);
  CHECK(*f.Written(Versions(f.store, Options{false, Copies::kAll}), 2, own_copy) == f.pointers[2].id);
  const Result<formats::Checkpoint> opened = Versions(f.store, Options{false, Copies::kAll}).Open(f.pointers[2], "x");
  CHECK(opened.status().code() == StatusCode::kNotFound);  // Open has no `also`: nothing holds step 120
}

TEST_CASE("a copy is used only while its bytes are the version's, and only at the pointer's size") {
  Stored f;
  f.Remove(0);
  const std::string file = f.root + "/copy";
  store::testing::Copy(Bf16(40), file);
  const store::FindCopy copy = CopyOf(f.pointers[0].id, file);
  const Versions versions(f.store, Options{false, Copies::kAll});
  REQUIRE(f.Written(versions, 1, copy).ok());
  // Changed since: not a copy any more, and the restore says what is
  // missing rather than write other bytes.
  store::testing::Copy(Bf16(80), file);
  const Result<ContentId> changed = f.Written(versions, 1, copy);
  REQUIRE(changed.status().code() == StatusCode::kNotFound);
  CHECK(changed.status().message().find(f.pointers[0].id.Hex()) != std::string::npos);
  // A pointer that lies about the size is not served from a copy.
  store::testing::Copy(Bf16(40), file);
  store::Pointer lying = f.pointers[0];
  lying.size += 1;
  struct Counting : ByteSink {
    uint64_t bytes = 0;
    Status Append(const void*, size_t n) override {
      bytes += n;
      return OkStatus();
    }
  } out;
  CHECK(!versions.Write(lying, "run/0", out, copy).ok());
  CHECK(out.bytes == 0);
}

}  // namespace
}  // namespace zipnn::access
