#include "lib/base/progress.h"

#include <unistd.h>

#include <cstdio>
#include <vector>

namespace zipnn {

std::string HumanBytes(uint64_t n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "n/a";  // an empty file has no ratio
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string ProgressText(const std::string& state, uint64_t done, uint64_t total, Progress::Unit unit, double rate) {
  using Unit = Progress::Unit;
  std::string text = state;
  std::vector<std::string> notes;  // in the parentheses
  if (total > 0 && done <= total) {
    const int share = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
    if (unit == Unit::kBytes) {
      text += " " + std::to_string(share) + "%";
      notes.push_back(HumanBytes(done) + " of " + HumanBytes(total));
    } else {
      text += " " + std::to_string(done) + " of " + std::to_string(total);
      notes.push_back(std::to_string(share) + "%");
    }
  } else if (done > 0) {
    text += " " + (unit == Unit::kBytes ? HumanBytes(done) : std::to_string(done));
  }
  if (unit == Unit::kBytes && done > 0 && rate > 0) notes.push_back(HumanBytes(static_cast<uint64_t>(rate)) + "/s");
  if (total > 0 && done > 0 && done < total && rate > 0) {
    const auto left = static_cast<uint64_t>(static_cast<double>(total - done) / rate + 0.5);
    char clock[32];
    std::snprintf(clock, sizeof clock, "%llu:%02llu left", static_cast<unsigned long long>(left / 60),
                  static_cast<unsigned long long>(left % 60));
    notes.push_back(clock);
  }
  for (size_t i = 0; i < notes.size(); ++i) text += (i == 0 ? " (" : ", ") + notes[i];
  if (!notes.empty()) text += ")";
  return text;
}

Progress::Progress(std::string label, uint64_t total, Unit unit)
    : label_(std::move(label)),
      total_(total),
      unit_(unit),
      enabled_(::isatty(2) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_),
      phase_start_(start_) {}

Progress::~Progress() {
  if (drawn_) Draw("");
}

void Progress::SetTotal(uint64_t total) {
  if (total == total_) return;
  total_ = total;
  phase_start_ = std::chrono::steady_clock::now();
  phase_done_ = 0;
}

void Progress::Update(const std::string& state, uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // A count that went back (a second pass) starts a new rate.
  if (done < last_done_) {
    phase_start_ = now;
    phase_done_ = done;
  }
  last_done_ = done;
  // Quick operations show nothing; then at most ten lines a second.
  if (now - start_ < std::chrono::milliseconds(500)) return;
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  // The rate over the current phase, once it has run long enough to say.
  const double seconds = std::chrono::duration<double>(now - phase_start_).count();
  const double rate = seconds >= 0.2 ? static_cast<double>(done - phase_done_) / seconds : 0;
  Draw(label_ + ": " + ProgressText(state, done, total_, unit_, rate));
}

void Progress::Finish(const std::string& summary) {
  if (!enabled_) return;
  Draw(label_ + ": " + summary);
  std::fputc('\n', stderr);
  drawn_ = false;
}

double Progress::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Draw(const std::string& text) {
  // \r and "erase to end of line": a shorter line leaves nothing behind.
  std::fprintf(stderr, "\r%s\x1b[K", text.c_str());
  std::fflush(stderr);
  drawn_ = !text.empty();
}

Status ProgressSink::Append(const void* data, size_t n) {
  ZIPNN_RETURN_IF_ERROR(inner_.Append(data, n));
  Count(n);
  return OkStatus();
}

Status ProgressSink::WriteAt(uint64_t offset, const void* data, size_t n) {
  ZIPNN_RETURN_IF_ERROR(inner_.WriteAt(offset, data, n));
  Count(n);
  return OkStatus();
}

void ProgressSink::Count(size_t n) {
  const uint64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (!progress_.enabled()) return;
  std::unique_lock<std::mutex> lock(drawing_, std::try_to_lock);
  if (lock.owns_lock()) progress_.Update(state_, done);
}

}  // namespace zipnn
