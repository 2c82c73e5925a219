// Tests of walking a version's chain of objects: links, depths and
// bases read from headers, and the limits every walk keeps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/store/chain.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::StoreChain;
using testing::TempDir;

TEST_CASE("a walk shows each link from the version down to its base, and stops at a missing one") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, 3);  // ids[i] a delta on ids[i - 1]
  std::vector<ChainLink> seen;
  REQUIRE(VisitChain(store, ids[3], [&](const ChainLink& link) { seen.push_back(link); }).ok());
  REQUIRE(seen.size() == 4);
  for (int depth = 0; depth < 4; ++depth) {
    CAPTURE(depth);
    CHECK(seen[depth].id == ids[3 - depth]);
    CHECK(seen[depth].depth == depth);
    CHECK(seen[depth].raw_size == 64);
    CHECK(seen[depth].delta == (depth < 3));
    if (depth < 3) CHECK(seen[depth].base == ids[2 - depth]);
  }
  auto link = ReadLink(store, ids[2]);
  REQUIRE(link.ok());
  CHECK(link->base == ids[1]);
  auto info = Describe(store, ids[3]);
  REQUIRE(info.ok());
  CHECK(info->depth == 3);
  CHECK(info->base == ids[2]);
  CHECK(info->last_base == ids[0]);
  // What a memo knows of a base ends the walk there, with the same answer.
  ChainMemo memo;
  memo[ids[1]] = *Describe(store, ids[1]);
  auto memoized = Describe(store, ids[3], &memo);
  REQUIRE(memoized.ok());
  CHECK(memoized->depth == 3);
  CHECK(memoized->last_base == ids[0]);
  CHECK(TouchChain(store, ids[3]).ok());
  // A missing base: the walk ends with NotFound naming it, after the
  // links above it; the chain is not whole to build on.
  REQUIRE(std::remove(store.objects.PathOf(ids[1]).c_str()) == 0);
  seen.clear();
  const Status walked = VisitChain(store, ids[3], [&](const ChainLink& l) { seen.push_back(l); });
  CHECK(walked.code() == StatusCode::kNotFound);
  CHECK(walked.message().find(ids[1].Hex()) != std::string::npos);
  CHECK(seen.size() == 2);
  CHECK(TouchChain(store, ids[3]).code() == StatusCode::kNotFound);
  CHECK(TouchChain(store, ids[0]).ok());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("an object that references versions besides its base (format 8) is refused by every walk, never decoded") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, 1);
  // A version whose second half is version 1's: a delta of version 0 that
  // takes that half from version 1.
  const std::vector<uint8_t> v0 = testing::ChainVersion(0), v1 = testing::ChainVersion(1);
  std::vector<uint8_t> data = testing::ChainVersion(7);
  std::copy(v1.begin() + 32, v1.end(), data.begin() + 32);
  MemorySource input(data.data(), data.size(), "version"), base(v0.data(), v0.size(), "v0"),
      reference(v1.data(), v1.size(), "v1");
  container::DeltaBase delta{&base, ids[0], container::BaseChoice::kShared, {{&reference, ids[1]}}};
  container::Layout layout;
  layout.regions = {container::Region{codec::DType::kBytes, 0, 32, true, 0},
                    container::Region{codec::DType::kBytes, 32, 32, true, 32, 0, /*source=*/1}};
  const ContentId id = HashBytes(data.data(), data.size());
  REQUIRE(store.objects
              .Put(id,
                   [&](AtomicFile& out) -> Status {
                     auto r = container::EncodeObject(input, layout, &delta, {}, out);
                     return r.ok() ? OkStatus() : r.status();
                   })
              .ok());
  CountingSink out;
  const Status restored = Restore(store, id, out);
  CHECK(restored.code() == StatusCode::kUnsupported);
  CHECK(restored.message().find(": takes tensors from 1 more stored version(s) besides its base (object format 8), "
                                "which this git-zipnn reads but does not restore from a store; upgrade git-zipnn") !=
        std::string::npos);
  CHECK(out.bytes() == 0);
  CHECK(VisitChain(store, id, [](const ChainLink&) {}).code() == StatusCode::kUnsupported);
  CHECK(Describe(store, id).status().code() == StatusCode::kUnsupported);
  CHECK(!OpenVersion(store, id).ok());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a chain over the hard limit is refused before anything is decoded") {
  char dir[] = "/tmp/chain-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string root = dir;
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, kMaxChainDepth + 1);
  // At the limit a version restores; one more delta and it is refused.
  CountingSink at_limit;
  CHECK(Restore(store, ids[kMaxChainDepth], at_limit).ok());
  CHECK(at_limit.bytes() == 64);
  CountingSink over;
  const Status s = Restore(store, ids.back(), over);
  CHECK(s.code() == StatusCode::kCorruption);
  CHECK(s.message() == "chain of object " + ids.back().Hex() + " is longer than 1000");
  CHECK(over.bytes() == 0);
  CHECK(VisitChain(store, ids.back(), [](const ChainLink&) {}).message() == s.message());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

}  // namespace
}  // namespace zipnn::store
