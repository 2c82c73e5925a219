// Tests of repacking a series (RepackSeries): the placement it makes, and
// the chains it makes stay within a restore's reach at every moment. Apart from checkin_test: one
// case stores a thousand versions and takes a minute (four under ASan).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/file.h"
#include "lib/container/format.h"
#include "lib/store/chain.h"
#include "lib/store/checkin.h"
#include "lib/store/restore.h"
#include "lib/store/raw_cache.h"
#include "lib/store/repack.h"
#include "lib/store/series_fixture.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Data;
using testing::Fixture;
using testing::IdOf;
using testing::Small;
using testing::TempDir;

TEST_CASE("a repack brings forward chains to the newest whole, and a second repack changes nothing") {
  // A store as git-zipnn 0.6 wrote it: every version a delta of the one
  // before, a base every 5.
  Fixture f;
  f.StoreForward();
  f.store.policy.min_gain = 0;
  f.store.policy.base_interval = 5;
  f.store.policy.max_chain = 4;
  for (size_t i = 0; i < 12; ++i) f.AddBytes(Small(i), std::to_string(i));
  CHECK(f.Depths() == std::vector<int>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1});
  f.store.policy.newest = config::Newest::kWhole;
  f.store.policy.max_chain = 2;
  std::vector<std::string> order;
  size_t rewritten = 0;
  auto repack = [&] {
    order.clear();
    rewritten = 0;
    REQUIRE(RepackSeries(f.store, f.held, [&](const RepackedVersion& v) {
              CHECK_MESSAGE(v.error.ok(), v.error.message());
              order.push_back(v.version.step);
              rewritten += v.rewritten;
            }).ok());
  };
  repack();
  //                                   B  f  f  r  r  B  f  f  r  r  B  newest
  CHECK(f.Depths() == std::vector<int>{0, 1, 2, 2, 1, 0, 1, 2, 2, 1, 0, 0});
  CHECK(f.Info(f.held[3].id).base == f.held[4].id);
  CHECK(!f.Info(f.held[11].id).delta);
  CHECK(order == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"});
  CHECK(rewritten == 5);  // 3, 4, 8, 9 and 11
  for (const Version& v : f.held) {
    CountingSink restored;
    CHECK(Restore(f.store, v.id, restored).ok());
    CHECK(restored.bytes() == 64);
  }
  repack();
  CHECK(rewritten == 0);
  // Stored now as an add would have stored them.
  Fixture g;
  g.store.policy = f.store.policy;
  for (size_t i = 0; i < 12; ++i) g.AddBytes(Small(i), std::to_string(i));
  CHECK(g.Depths() == f.Depths());
}

TEST_CASE("a repack to chains of 1000 leaves no version out of a restore's reach, at any moment") {
  // 1002 versions stored every 10th a base, then repacked into chains at
  // the limit: the version after the 1001st hangs on it, so that one
  // stays a base rather than put the next, not yet repacked, at 1001.
  Fixture f;
  f.store.policy.base_interval = 10;
  f.StoreForward();
  f.store.policy.min_gain = 0;
  for (size_t i = 0; i < 1002; ++i) f.AddBytes(Small(i), std::to_string(i));
  CHECK(f.Info(f.held[1000].id).depth == 0);
  CHECK(f.Info(f.held[999].id).depth == 9);
  f.store.policy.base_interval = 1000000;
  f.store.policy.max_chain = 1000;
  std::vector<Version> series = f.held;
  SortSeries(series);
  ChainMemo passed;  // so that looking at every version costs a header read
  int worst = 0;
  size_t at = 0, rewritten = 0;
  REQUIRE(RepackSeries(f.store, series, [&](const RepackedVersion& v) {
            CHECK_MESSAGE(v.error.ok(), v.error.message());
            rewritten += v.rewritten ? 1 : 0;
            // Read down to the versions already passed, not the whole
            // chain (up to 1000 objects) again for each version.
            auto info = Describe(f.store, v.version.id, &passed);
            REQUIRE_MESSAGE(info.ok(), info.status().message());
            passed[v.version.id] = *info;
            // The next versions, not yet repacked, are within reach.
            for (size_t next = at; next < std::min(series.size(), at + 11); ++next) {
              auto info = Describe(f.store, series[next].id, &passed);
              REQUIRE_MESSAGE(info.ok(), info.status().message());
              worst = std::max(worst, info->depth);
            }
            ++at;
          }).ok());
  CHECK(worst <= kMaxChainDepth);
  CHECK(rewritten == 99);
  CHECK(f.Info(f.held[999].id).depth == 999);
  CHECK(!f.Info(f.held[1000].id).delta);
  CHECK(f.Info(f.held[1001].id).depth == 1);
  // Restored whole: the first versions, those around the depths where a
  // restore goes on from a part restored into a scratch file (every
  // 15 levels), the deepest, and the two after it. Every version restored
  // would cost a million object reads.
  for (size_t i : {0, 1, 2, 14, 15, 16, 17, 30, 31, 500, 997, 998, 999, 1000, 1001}) {
    CAPTURE(i);
    CountingSink restored;
    CHECK(Restore(f.store, f.held[i].id, restored).ok());
    CHECK(restored.bytes() == 64);
  }
}

}  // namespace
}  // namespace zipnn::store
