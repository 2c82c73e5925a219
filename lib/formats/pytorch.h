// torch.save files in the zip format (the default since torch 1.6): each
// storage is an uncompressed member <archive>/data/<key>; data.pkl says
// its dtype and which tensor it belongs to (torch_pickle.h). Storages
// become named, typed tensors; the pickle, the other members and the zip
// records are opaque.
//
// Like safetensors, a file that cannot be read this way (a malformed
// directory, compressed members, a pickle we do not understand,
// overlapping members) comes back as raw bytes with a warning, never an
// error. Legacy (non-zip) torch files are raw. Thread-safe.
#pragma once

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {

// data.pkl larger than this is not read (raw with a warning).
inline constexpr uint64_t kMaxTorchPickle = 256u << 20;
// A view may expand its storage (a stride of 0 repeats elements: torch's
// expand) to at most this many bytes, or to its storage's size if larger.
inline constexpr uint64_t kMaxViewBytes = 256u << 20;

Result<FileLayout> ReadPytorch(const ByteSource& file);

}  // namespace zipnn::formats
