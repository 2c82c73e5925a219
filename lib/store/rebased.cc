#include "lib/store/rebased.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "lib/base/file.h"
#include "lib/base/fs_ops.h"

namespace zipnn::store {

void NoteRebased(const Store& store, const ContentId& cause, const ContentId& id) {
  if (store.rebased_dir.empty() || !MakeDirectories(store.rebased_dir).ok()) return;
  const std::string line = id.Hex() + "\n";
  const int fd =
      ::open((store.rebased_dir + "/" + cause.Hex()).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!FsWrite(fd, line.data(), line.size());
  ::close(fd);
}

std::vector<ContentId> RebasedOn(const Store& store, const ContentId& cause) {
  std::vector<ContentId> ids;
  if (store.rebased_dir.empty()) return ids;
  std::ifstream in(store.rebased_dir + "/" + cause.Hex());
  for (std::string line; std::getline(in, line);) {
    const auto id = ContentId::FromHex(line);
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return ids;
}

void PruneRebased(const Store& store, const std::function<bool(const ContentId&)>& keep) {
  if (store.rebased_dir.empty()) return;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(store.rebased_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto cause = ContentId::FromHex(it->path().filename().string());
    if (!cause || !keep(*cause)) std::filesystem::remove(it->path(), ec);
  }
}

}  // namespace zipnn::store
