#include "lib/base/io.h"

#include <algorithm>

namespace zipnn {

Status CopyRange(const ByteSource& from, uint64_t offset, uint64_t length, ByteSink& out) {
  constexpr uint64_t kPiece = 1u << 20;
  Buffer piece(static_cast<size_t>(std::min(length, kPiece)));
  while (length > 0) {
    const size_t n = static_cast<size_t>(std::min(length, kPiece));
    ZIPNN_RETURN_IF_ERROR(from.ReadAt(offset, piece.data(), n));
    ZIPNN_RETURN_IF_ERROR(out.Append(piece.data(), n));
    offset += n;
    length -= n;
  }
  return OkStatus();
}

}  // namespace zipnn
