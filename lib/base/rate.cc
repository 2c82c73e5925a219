#include "lib/base/rate.h"

#include <cstdio>

namespace zipnn {

Status RateMeter::Moved(uint64_t n, Clock::time_point now) {
  if (!limit_.on()) return OkStatus();
  if (!measuring_) {
    if (n == 0) return OkStatus();  // still waiting for the answer
    measuring_ = true;
    start_ = now;
    bytes_ = 0;
  }
  bytes_ += n;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < limit_.seconds) return OkStatus();
  if (static_cast<double>(bytes_) >= static_cast<double>(limit_.bytes_per_second) * elapsed) {
    start_ = now;  // kept up: a new window
    bytes_ = 0;
    return OkStatus();
  }
  char text[256];
  std::snprintf(text, sizeof text, "%llu bytes in %.1f s, less than the %llu bytes a second it must keep up over %g s",
                static_cast<unsigned long long>(bytes_), elapsed,
                static_cast<unsigned long long>(limit_.bytes_per_second), limit_.seconds);
  return IoError(std::string(kTooSlow) + text + " (the limit: " + kLowSpeedSettings + "; 0 turns it off)");
}

}  // namespace zipnn
