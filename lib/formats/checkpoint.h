// An opened checkpoint, in the two forms every layer passes around:
// CheckpointView borrows a checkpoint's bytes and layout (what encoding,
// delta placement and the analysis read), Checkpoint owns them: the open
// file, its layout once read, and the scratch file the bytes may live in
// (a version restored from the store or read out of git), removed when
// the Checkpoint goes. A view must not outlive its Checkpoint, nor be
// taken before the Checkpoint is moved.
//
// Thread-compatible; once its layout is read, a Checkpoint may be read
// from several threads at once (ReadFile::ReadAt is positional).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/base/thread_pool.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {

struct CheckpointView {
  const ByteSource* source = nullptr;
  const FileLayout* layout = nullptr;
  ContentId id;  // of the bytes, where the caller knows it
};

class Checkpoint {
 public:
  // The file at `path`, as it is.
  static Result<Checkpoint> Open(const std::string& path);
  // A file opened already.
  explicit Checkpoint(ReadFile file) : file_(std::move(file)) {}
  // What `fill` writes, in a scratch file created in `dir`.
  static Result<Checkpoint> Spool(const std::string& dir, const std::function<Status(ByteSink&)>& fill);

  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  const ReadFile& file() const { return file_; }

  // Reads the layout (with kAuto, of the format the first bytes show; a
  // file of no known format is raw), once.
  Status ReadLayout(FormatChoice choice = kAutoFormat);
  // A layout known otherwise (built by hand in a test, or read before).
  void SetLayout(FileLayout layout) { layout_.emplace(std::move(layout)); }
  // The layout ReadLayout read; it must have succeeded.
  const FileLayout& layout() const { return *layout_; }
  CheckpointView View(const ContentId& id = {}) const { return CheckpointView{&file_, &*layout_, id}; }

 private:
  Checkpoint(std::optional<TempFile> scratch, ReadFile file) : scratch_(std::move(scratch)), file_(std::move(file)) {}
  std::optional<TempFile> scratch_;  // removed after file_ is closed
  ReadFile file_;
  std::optional<FileLayout> layout_;
};

// Gives each tensor of `layout` (of `file`) its content hash
// (Tensor::content), a tensor per task of `pool`: what lets a delta take a
// tensor against one of the same bytes under another name.
Status HashTensorContents(const ByteSource& file, FileLayout& layout, ThreadPool& pool);

}  // namespace zipnn::formats
