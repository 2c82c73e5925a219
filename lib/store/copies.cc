#include "lib/store/copies.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "lib/store/raw_cache.h"

namespace zipnn::store {

std::optional<VerifiedCopy> FindVerifiedCopy(const Store& store, const ContentId& id,
                                             const std::vector<std::string>& paths, std::optional<uint64_t> size) {
  const auto fits = [&](const ReadFile& file) { return !size || file.size() == *size; };
  if (!store.work_dir.empty()) {
    for (const std::string& path : paths) {
      if (path.empty()) continue;
      const std::string file = store.work_dir + "/" + path;
      std::error_code ec;
      if (size && std::filesystem::file_size(file, ec) != *size) continue;  // a save made since: not hashed
      if (std::optional<ReadFile> copy = ReadFile::OpenHolding(file, id); copy && fits(*copy)) {
        return VerifiedCopy{std::move(*copy), true};
      }
    }
  }
  std::optional<ReadFile> kept = RawCache(store.cache_dir, store.policy.raw_cache).Find(id);
  if (kept && fits(*kept)) return VerifiedCopy{std::move(*kept), false};
  return std::nullopt;
}

}  // namespace zipnn::store
