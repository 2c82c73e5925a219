#include "lib/ops/added.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "lib/base/content_id.h"
#include "lib/base/file.h"

namespace zipnn::ops {

namespace {

// One file per path, named by the hash of the path.
std::string NoteFile(const std::string& dir, const std::string& path) {
  return dir + "/" + HashBytes(path.data(), path.size()).Hex();
}

}  // namespace

std::optional<std::string> FileStamp(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  char text[200];
  std::snprintf(text, sizeof text, "%lld %lld.%09ld %lld.%09ld %llu %llu", static_cast<long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec,
                static_cast<unsigned long long>(st.st_ino), static_cast<unsigned long long>(st.st_dev));
  return std::string(text);
}

Status NoteAdded(const std::string& dir, const std::string& path, const std::string& before,
                 const std::string& pointer_text) {
  if (FileStamp(path) != before) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
  // The path, its stat, then the pointer: the path guards against two
  // paths whose hashes meet.
  const std::string text = path + "\n" + before + "\n" + pointer_text;
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(NoteFile(dir, path), /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
  return file.CommitUnsynced();
}

std::optional<store::Pointer> NotedPointer(const std::string& dir, const std::string& path) {
  if (dir.empty()) return std::nullopt;
  const std::optional<std::string> read = ReadSmallFile(NoteFile(dir, path), 4096);
  if (!read) return std::nullopt;
  const std::string& text = *read;
  const size_t first = text.find('\n');
  const size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
  if (second == std::string::npos || text.compare(0, first, path) != 0) return std::nullopt;
  if (FileStamp(path) != text.substr(first + 1, second - first - 1)) return std::nullopt;
  Result<store::Pointer> pointer = store::ParsePointer(text.substr(second + 1));
  if (!pointer.ok()) return std::nullopt;
  return *pointer;
}

void ForgetAdded(const std::string& dir, const std::string& path) {
  if (!dir.empty()) ::unlink(NoteFile(dir, path).c_str());
}

}  // namespace zipnn::ops
