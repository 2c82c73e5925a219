#include "lib/base/progress.h"

#include <unistd.h>

#include <cstdio>

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

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(::isatty(2) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (drawn_) Draw("");
}

void Progress::Update(const std::string& state, uint64_t done) {
  if (!enabled_) return;
  // Quick operations show nothing; then at most ten lines a second.
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::milliseconds(500)) return;
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  std::string text = label_ + ": " + state;
  if (total_ > 0) {
    char share[16];
    std::snprintf(share, sizeof share, " %3d%%", static_cast<int>(100.0 * static_cast<double>(done) / total_));
    text += share + std::string(" (") + HumanBytes(done) + " of " + HumanBytes(total_) + ")";
  } else if (done > 0) {
    text += " " + HumanBytes(done);
  }
  Draw(text);
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
