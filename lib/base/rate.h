// The slowest a transfer may go, and RateMeter, which holds a stream of
// bytes to it. A timeout that counts silence alone (Channel::SetTimeout,
// curl's low-speed limit of one byte a second) never ends a peer that
// trickles: a byte every half second keeps it happy, and an 86 KB object
// takes twelve hours. So every transfer with a remote also has a minimum
// rate, measured over a window, as git's http.lowSpeedLimit and
// http.lowSpeedTime do for git's own (docs/remotes.md, "Timeouts").
// Thread-compatible: one meter per stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "lib/base/status.h"

namespace zipnn {

// Fewer than `bytes_per_second` over `seconds` is too slow; either 0
// turns the check off.
struct LowSpeed {
  uint64_t bytes_per_second = 0;
  double seconds = 0;
  bool on() const { return bytes_per_second > 0 && seconds > 0; }
};

// The limit remotes keep to when none is set: 1 KiB a second over a
// minute (a slower link is told what to set).
inline constexpr LowSpeed kDefaultLowSpeed{1024, 60};

// Where users set it, for messages (lib/remote reads them).
inline constexpr char kLowSpeedSettings[] = "git config zipnn.lowSpeedLimit and zipnn.lowSpeedTime";
// What a transfer that broke the limit says first (before the numbers).
inline constexpr char kTooSlow[] = "too slow: ";

class RateMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateMeter(LowSpeed limit = {}) : limit_(limit) {}

  // Stops measuring until bytes move again. The time a peer takes between
  // a request and the first byte of its answer (reading a store, decoding
  // a put) is thinking, not a transfer: a timeout bounds it.
  void Pause() { measuring_ = false; }
  bool on() const { return limit_.on(); }
  // How long a window is: checking more often than that tells nothing new.
  double window_seconds() const { return limit_.seconds; }
  // `n` bytes moved at `now` (0: nothing moved, a check only). Once a
  // whole window of `seconds` moved less than the limit asks, an IoError
  // starting with kTooSlow, with what moved and what to set. The window
  // starts at the first byte after a pause, and again after each window
  // that kept up.
  Status Moved(uint64_t n, Clock::time_point now = Clock::now());

 private:
  LowSpeed limit_;
  bool measuring_ = false;
  Clock::time_point start_;
  uint64_t bytes_ = 0;
};

}  // namespace zipnn
