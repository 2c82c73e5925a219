// FileLayout: what a checkpoint file holds, as the format layer reads it:
// named, typed tensors at byte ranges; every byte not in a tensor (headers,
// padding, pickles) is opaque. From it come the regions the container
// stores, standalone or as a delta whose tensors are matched by name.
// Plain data and pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/codec/dtype.h"
#include "lib/container/layout.h"

namespace zipnn::formats {

// One row each in kFormats (detect.h), where FormatName is.
enum class Format { kRaw, kSafetensors, kPytorch };

struct Tensor {
  std::string name;
  codec::DType dtype = codec::DType::kBytes;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;
  uint64_t length = 0;
  // A view (FileLayout::views) whose elements are not contiguous in its
  // storage: `strides` (in elements, one per dimension) say where each
  // lies from `offset`, the first; `length` covers the bytes from the
  // first element to the end of the last.
  bool strided = false;
  std::vector<uint64_t> strides;
  // The first 64 bits of the content id of its bytes (what a tensor
  // listing prints), where known (HashTensorContents): a delta then takes
  // it against a base tensor of the same bytes under any name.
  std::optional<uint64_t> content;
};

struct FileLayout {
  Format format = Format::kRaw;  // kRaw may still hold one guessed-dtype tensor
  uint64_t size = 0;
  std::vector<Tensor> tensors;  // sorted by offset, non-overlapping, inside [0, size)
  // torch.save files: each tensor the pickle builds, under its own name
  // and shape, as the bytes of its storage it covers (tensors that share a
  // storage overlap), storage by storage. `tensors` are the storages. Empty
  // for other formats, whose `tensors` are the tensors.
  std::vector<Tensor> views;
  // Why a file that looked like a checkpoint is stored as raw bytes.
  std::vector<std::string> warnings;
};

// The bytes of a tensor's elements: its length, or for a strided view,
// its element count times the dtype's width.
uint64_t DataBytes(const Tensor& t);

// The indices of `file.tensors` in the order a user reads them: for a
// torch.save file, by the first tensor the pickle builds on each storage
// (the model's before the optimizer's), else as they are (by offset).
std::vector<size_t> ReadingOrder(const FileLayout& file);

// The whole file as raw bytes, with one warning.
FileLayout RawLayout(uint64_t size, std::string warning);

// Sorts tensors by offset. Returns the names of the first two that
// overlap, if any (a reader then falls back to raw).
std::optional<std::pair<std::string, std::string>> SortTensors(std::vector<Tensor>& tensors);

// Regions for a standalone object: each tensor a region of its dtype, each
// gap a region of bytes; neighbours merged when they can share chunks (same
// dtype, the first a whole number of elements).
container::Layout ToRegions(const FileLayout& file);

// Regions for a delta against `base`: a tensor whose twin in the base (same
// name, dtype and shape) exists is XORed with it; where both files' tensors
// carry their content hashes, a tensor is taken first against a base
// tensor of the same bytes (the same content hash, dtype and length),
// whatever its name or shape, so that it costs nearly nothing (a frozen
// base model under a prefix in an adapter file, the same weights under a
// second naming scheme); other tensors are coded standalone. An opaque range at the start (a header) of the same length
// as the base's is XORed with it too; other opaque ranges are coded with
// zstd against the base's corresponding range as history. Adding,
// removing, renaming or reordering tensors only costs the tensors that
// changed.
//
// With `references` (other stored versions, their tensors hashed too), a
// tensor the base does not hold by its bytes is taken against the first
// reference that does (its region's source: 1 for references[0], ...),
// for an object of format 8.
//
// With `equal_only`, a tensor is taken only against one of the same bytes
// (both carry content hashes and they are equal): a name twin whose values
// differ is coded standalone, as is every tensor without a hash. Such a
// delta decodes nearly as fast as the file stored whole when its sources
// are (the newest of a series that shares only part of its tensors).
container::Layout ToDeltaRegions(const FileLayout& target, const FileLayout& base,
                                 const std::vector<const FileLayout*>& references = {}, bool equal_only = false);

// Of a stored delta's `regions` (of `target` against `base`), each tensor
// of `target` taken against a tensor of `base` under another name (or
// shape): (index in target.tensors, index in base.tensors), in file order.
// A delta's regions hold offsets only: the names come from the layouts.
std::vector<std::pair<size_t, size_t>> TensorsTakenUnderOtherNames(const FileLayout& target,
                                                                   const container::Layout& regions,
                                                                   const FileLayout& base);
// The same for the tensors taken against `source` (0 the base, k the k-th
// reference, whose layout `source_layout` is), under any name with
// `any_name`.
std::vector<std::pair<size_t, size_t>> TensorsTakenFrom(const FileLayout& target, const container::Layout& regions,
                                                        const FileLayout& source_layout, uint32_t source,
                                                        bool any_name);

// The tensors of `target` that ToDeltaRegions takes against a base tensor
// of the same content (both carry content hashes) under another name, or
// another shape, and their bytes: what sharing by content adds to
// matching by name.
struct Shared {
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};
Shared SharedByContent(const FileLayout& target, const FileLayout& base);
// The tensors of `target` that ToDeltaRegions takes against `references`
// (none of whose bytes the base holds), and their bytes.
Shared TakenFromReferences(const FileLayout& target, const FileLayout& base,
                           const std::vector<const FileLayout*>& references);

// The first 64 bits of a content id, as `content` holds them (the first
// 16 of its 32 hex digits, which a tensor listing prints).
uint64_t ContentKey(const ContentId& id);

// What a checkpoint holds, without its values: a hash of the name, dtype
// and shape of every tensor (a torch.save file's storages), in name
// order, so that two files hold the same tensors when their fingerprints
// match, whatever their container, file name or tensor order. Two files
// whose fingerprints match are candidates to be deltas of one another
// (a fine-tune and the model it started from, twins). A file with no
// tensors has none.
std::optional<ContentId> TensorFingerprint(const FileLayout& file);

}  // namespace zipnn::formats
