#include "lib/store/raw_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "lib/base/fs_ops.h"

namespace zipnn::store {

namespace {

std::string SeriesHash(const std::string& series) { return HashBytes(series.data(), series.size()).Hex(); }

}  // namespace

std::vector<RawCache::Entry> RawCache::List() const {
  std::vector<Entry> entries;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t dot = name.find('.');
    auto id = dot == 32 ? ContentId::FromHex(name.substr(33)) : std::nullopt;
    struct stat st;
    if (!id || ::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const int64_t ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    entries.push_back(
        {it->path().string(), *id, static_cast<uint64_t>(st.st_size), static_cast<int64_t>(st.st_mtime), ns});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.path < b.path;
  });
  return entries;
}

std::optional<ReadFile> RawCache::Find(const ContentId& id) const {
  for (const Entry& e : List()) {
    if (e.id != id) continue;
    if (auto file = ReadFile::OpenHolding(e.path, id)) return file;
    ::unlink(e.path.c_str());  // damaged, changed or unreadable: never used
  }
  return std::nullopt;
}

void RawCache::Keep(const std::string& series, const ContentId& id, const std::string& file) const {
  struct stat st;
  if (budget_ == 0 || ::stat(file.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) > budget_) return;
  if (!MakeDirectories(dir_).ok()) return;
  const std::string prefix = SeriesHash(series);
  const std::string path = dir_ + "/" + prefix + "." + id.Hex();
  const std::string staged = path + ".new";
  ::unlink(staged.c_str());
  // A hard link: no bytes written (the spooled input is beside it).
  if (FsLink(file.c_str(), staged.c_str()) != 0) return;
  if (FsRename(staged.c_str(), path.c_str()) != 0) {
    ::unlink(staged.c_str());
    return;
  }
  // The series' copies other than this one, oldest first: all but the
  // kCopiesPerSeries - 1 newest of them go.
  std::vector<std::string> older;
  for (const Entry& e : List()) {
    const std::string name = std::filesystem::path(e.path).filename().string();
    if (e.path != path && name.compare(0, prefix.size(), prefix) == 0) older.push_back(e.path);
  }
  for (size_t i = 0; i + kCopiesPerSeries - 1 < older.size(); ++i) ::unlink(older[i].c_str());
  FitBudget();
}

void RawCache::FitBudget() const {
  std::vector<Entry> entries = List();
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.size;
  for (const Entry& e : entries) {
    if (total <= budget_) break;
    if (::unlink(e.path.c_str()) == 0) total -= e.size;
  }
}

uint64_t RawCache::Prune(const std::function<bool(const ContentId&)>& needed) const {
  uint64_t before = 0, after = 0;
  for (const Entry& e : List()) {
    before += e.size;
    if (!needed(e.id)) ::unlink(e.path.c_str());
  }
  FitBudget();
  for (const Entry& e : List()) after += e.size;
  return before - after;
}

}  // namespace zipnn::store
