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

TEST_CASE("a walk follows the versions a format 8 delta references, and a restore reads them") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, 2);  // ids[i] a delta on ids[i - 1]
  // A version whose second half is version 2's: a delta of version 0 that
  // takes that half from version 2, two links up a chain of its own.
  const std::vector<uint8_t> v0 = testing::ChainVersion(0), v2 = testing::ChainVersion(2);
  std::vector<uint8_t> data = testing::ChainVersion(7);
  std::copy(v2.begin() + 32, v2.end(), data.begin() + 32);
  data[40] = 9;  // and not all of it
  const ContentId id = testing::StoreReferencing(store, data, v0, ids[0], v2, ids[2]);
  std::vector<ChainLink> seen;
  REQUIRE(VisitChain(store, id, [&](const ChainLink& link) { seen.push_back(link); }).ok());
  // Each object once: the version, its base, then the reference and its
  // chain (ids[0] was met already).
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].id == id);
  CHECK(seen[0].references == std::vector<ContentId>{ids[2]});
  CHECK(seen[0].needs() == std::vector<ContentId>{ids[0], ids[2]});
  CHECK(seen[1].id == ids[0]);
  CHECK(seen[2].id == ids[2]);
  CHECK(seen[2].depth == 1);
  CHECK(seen[3].id == ids[1]);
  CHECK(seen[3].depth == 2);
  // Its depth is that of the deepest version it needs, plus one.
  auto info = Describe(store, id);
  REQUIRE(info.ok());
  CHECK(info->depth == 3);
  CHECK(info->last_base == ids[0]);
  CHECK(info->references == std::vector<ContentId>{ids[2]});
  CHECK(TouchChain(store, id).ok());
  MemorySink out;
  REQUIRE(Restore(store, id, out).ok());
  REQUIRE(out.buffer().size() == data.size());
  CHECK(std::equal(data.begin(), data.end(), out.buffer().data()));
  auto version = OpenVersion(store, id);
  REQUIRE(version.ok());
  std::vector<uint8_t> part(24);
  REQUIRE((*version)->ReadAt(36, part.data(), part.size()).ok());
  CHECK(std::equal(part.begin(), part.end(), data.begin() + 36));
  // A missing reference is named, and nothing is written.
  REQUIRE(std::remove(store.objects.PathOf(ids[1]).c_str()) == 0);
  CountingSink none;
  const Status missing = Restore(store, id, none);
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find(ids[1].Hex()) != std::string::npos);
  CHECK(none.bytes() == 0);
  CHECK(TouchChain(store, id).code() == StatusCode::kNotFound);
  const Status named = MissingObject(store, Pointer{id, 64, ""}, "model.safetensors");
  CHECK(named.message().find("object " + ids[1].Hex() + " (a base of " + id.Hex() + ")") != std::string::npos);
  // The version referenced itself: named as what it is to the version.
  REQUIRE(std::remove(store.objects.PathOf(ids[2]).c_str()) == 0);
  CHECK(MissingObject(store, Pointer{id, 64, ""}, "model.safetensors")
            .message()
            .find("object " + ids[2].Hex() + " (a version " + id.Hex() + " takes tensors from)") != std::string::npos);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a version that references a version resting on it is a loop, refused before anything is decoded") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const ContentId base = testing::StoreVersion(store, 0);
  const std::vector<uint8_t> v0 = testing::ChainVersion(0), a = testing::ChainVersion(5), b = testing::ChainVersion(6);
  const ContentId b_id = HashBytes(b.data(), b.size());
  // a references b, and b is a delta of a: only a damaged store holds both.
  const ContentId a_id = testing::StoreReferencing(store, a, v0, base, b, b_id);
  REQUIRE(testing::StoreVersion(store, 6, &a, a_id) == b_id);
  CountingSink out;
  const Status s = Restore(store, a_id, out);
  CHECK(s.code() == StatusCode::kCorruption);
  CHECK(s.message().find("loops") != std::string::npos);
  CHECK(out.bytes() == 0);
  CHECK(VisitChain(store, a_id, [](const ChainLink&) {}).code() == StatusCode::kCorruption);
  CHECK(Describe(store, a_id).status().code() == StatusCode::kCorruption);
  CHECK(Describe(store, b_id).status().code() == StatusCode::kCorruption);
  CHECK(!OpenVersion(store, b_id).ok());
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
