#include "lib/formats/checkpoint.h"

#include <utility>

namespace zipnn::formats {

Result<Checkpoint> Checkpoint::Open(const std::string& path) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(path));
  return Checkpoint(std::move(file));
}

Result<Checkpoint> Checkpoint::Spool(const std::string& dir, const std::function<Status(ByteSink&)>& fill) {
  ZIPNN_ASSIGN_OR_RETURN(TempFile scratch, TempFile::Create(dir, "version"));
  {
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::InTemp(scratch));
    ZIPNN_RETURN_IF_ERROR(fill(out));
    // Read back at once and removed after: no reason to wait for the disk.
    ZIPNN_RETURN_IF_ERROR(out.CommitUnsynced());
  }
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(scratch.path()));
  return Checkpoint(std::move(scratch), std::move(file));
}

Status Checkpoint::ReadLayout(FormatChoice choice) {
  if (layout_) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(FileLayout layout, formats::ReadLayout(file_, choice));
  layout_.emplace(std::move(layout));
  return OkStatus();
}

}  // namespace zipnn::formats
