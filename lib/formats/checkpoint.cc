#include "lib/formats/checkpoint.h"

#include <algorithm>
#include <utility>

#include "lib/base/buffer.h"

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

Status HashTensorContents(const ByteSource& file, FileLayout& layout, ThreadPool& pool) {
  constexpr uint64_t kBlock = 1 << 20;
  return RunOrdered<uint64_t>(
      pool, layout.tensors.size(),
      [&](size_t i) -> Result<uint64_t> {
        const Tensor& t = layout.tensors[i];
        Hasher hasher;
        thread_local Buffer block;
        for (uint64_t at = 0; at < t.length; at += kBlock) {
          const size_t n = static_cast<size_t>(std::min(kBlock, t.length - at));
          block.Resize(n);
          ZIPNN_RETURN_IF_ERROR(file.ReadAt(t.offset + at, block.data(), n));
          hasher.Update(block.data(), n);
        }
        return ContentKey(hasher.Finish());
      },
      [&](size_t i, uint64_t key) {
        layout.tensors[i].content = key;
        return OkStatus();
      });
}

}  // namespace zipnn::formats
