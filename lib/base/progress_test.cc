#include "lib/base/progress.h"

#include <doctest/doctest.h>

namespace zipnn {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST_CASE("a progress line of bytes with a total shows the share, the bytes, the rate and the time left") {
  CHECK(ProgressText("reading", 5 * kMiB, 10 * kMiB, Progress::Unit::kBytes, 2.5 * kMiB) ==
        "reading 50% (5.0 MiB of 10.0 MiB, 2.5 MiB/s, 0:02 left)");
  // 90 s left is a minute and a half.
  CHECK(ProgressText("restoring", kMiB, 10 * kMiB, Progress::Unit::kBytes, 0.1 * kMiB) ==
        "restoring 10% (1.0 MiB of 10.0 MiB, 102.4 KiB/s, 1:30 left)");
  // Done: no time left.
  CHECK(ProgressText("reading", 10 * kMiB, 10 * kMiB, Progress::Unit::kBytes, 2.5 * kMiB) ==
        "reading 100% (10.0 MiB of 10.0 MiB, 2.5 MiB/s)");
}

TEST_CASE("a progress line without a total shows what was done and the rate; nothing before the first byte") {
  CHECK(ProgressText("received 2 of 5 objects,", 3 * kMiB, 0, Progress::Unit::kBytes, 1.5 * kMiB) ==
        "received 2 of 5 objects, 3.0 MiB (1.5 MiB/s)");
  CHECK(ProgressText("storing", 0, 0, Progress::Unit::kBytes, 0) == "storing");
  // Before the rate is known: no rate, no time left.
  CHECK(ProgressText("storing", 85, 10 * kMiB, Progress::Unit::kBytes, 0) == "storing 0% (85 B of 10.0 MiB)");
  // A total the count went past (a file that grew while read) is no total.
  CHECK(ProgressText("reading", 2 * kMiB, kMiB, Progress::Unit::kBytes, 2.0 * kMiB) == "reading 2.0 MiB (2.0 MiB/s)");
}

TEST_CASE("a progress line of items counts them, not as bytes") {
  CHECK(ProgressText("decoding", 3, 7, Progress::Unit::kItems, 0.75) == "decoding 3 of 7 (42%, 0:05 left)");
  CHECK(ProgressText("decoding", 0, 7, Progress::Unit::kItems, 0.0) == "decoding 0 of 7 (0%)");
}

}  // namespace
}  // namespace zipnn
