// Sizes and ratios for people, and the progress of a long operation, for a person at a terminal: one line on
// stderr, first drawn after half a second and then at most ten times a
// second, ended by a summary. Nothing
// at all is printed when stderr is not a terminal (scripts, CI, git run
// from an editor), so output that is parsed never carries it.
//
// Thread-compatible: one thread reports on one Progress.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdint>
#include <string>

#include "lib/base/io.h"

namespace zipnn {

// "12.3 MiB"
std::string HumanBytes(uint64_t n);
// "66.21%": part as a share of whole ("n/a" when whole is 0).
std::string Percent(uint64_t part, uint64_t whole);

class Progress {
 public:
  // What `done` and `total` count.
  enum class Unit { kBytes, kItems };
  // `label` begins every line ("git-zipnn: model.safetensors"); `total`
  // is how much the operation will handle (0: unknown).
  Progress(std::string label, uint64_t total, Unit unit = Unit::kBytes);
  ~Progress();  // clears an unfinished line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Once it is known; another total begins a new phase, whose rate is
  // measured apart (reading, then storing).
  void SetTotal(uint64_t total);
  // Shows `state` ("storing") with what is done so far: of the total
  // when there is one, the rate (bytes) and the time left (a total).
  void Update(const std::string& state, uint64_t done);
  // Replaces the line with a final one and a newline.
  void Finish(const std::string& summary);
  // Seconds since construction.
  double Seconds() const;

 private:
  void Draw(const std::string& text);
  std::string label_;
  uint64_t total_;
  Unit unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  // The current phase: since when, from what count; the last count.
  std::chrono::steady_clock::time_point phase_start_;
  uint64_t phase_done_ = 0, last_done_ = 0;
};

// The line Progress draws after its label: `state`, then `done` (of
// `total` when known, as a share), and at `rate` (per second; 0: not
// known yet) the rate of bytes and the time left.
std::string ProgressText(const std::string& state, uint64_t done, uint64_t total, Progress::Unit unit, double rate);

// Passes bytes on to `inner` and reports their count to `progress`. Takes
// positional writes when `inner` does; those may come from many threads,
// and whichever finds the line free redraws it.
class ProgressSink : public ByteSink {
 public:
  ProgressSink(ByteSink& inner, Progress& progress, std::string state)
      : inner_(inner), progress_(progress), state_(std::move(state)) {}
  Status Append(const void* data, size_t n) override;
  bool CanWriteAt() const override { return inner_.CanWriteAt(); }
  Status Presize(uint64_t total) override { return inner_.Presize(total); }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override;
  // Bytes passed on so far.
  uint64_t done() const { return done_; }

 private:
  void Count(size_t n);
  ByteSink& inner_;
  Progress& progress_;
  std::string state_;
  std::atomic<uint64_t> done_{0};
  std::mutex drawing_;
};

}  // namespace zipnn
