// A whole checkpoint thinned (lib/codec/thin.h): every tensor of a float
// type rounded to a stated precision, every other byte (headers, integer
// tensors, tensors of one element, opaque regions) copied as it is. What retention stores for a
// thinned version (lib/store/retention.h), and what `git zipnn analyze`
// measures when it shows what thinning would store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/thin.h"
#include "lib/formats/checkpoint.h"

namespace zipnn::formats {

// What thinning did to one tensor (a torch.save file's storage).
struct TensorError {
  std::string name;
  double max_abs = 0;
  double max_rel = 0;
  uint64_t changed = 0;  // values rounded
  uint64_t values = 0;   // values of a float type
  uint64_t zeroed = 0;   // values rounded to zero
};

// Writes `in` to `out` with every tensor of a float type and more than
// one element rounded to `precision` and every other byte as it is; what
// each tensor took (in layout order, those rounded only). Memory: a block of 4 MiB.
Result<std::vector<TensorError>> Thin(const CheckpointView& in, const codec::Precision& precision, ByteSink& out);

// The bytes Thin would write, made as they are read: what `analyze`
// codes to show what thinning would store, with no copy on disk. Reads
// may start and end anywhere (inside an element: the element is rounded
// whole, then cut). Thread-safe, as the source it reads is; `in`'s
// source and layout must outlive it.
class ThinnedSource : public ByteSource {
 public:
  ThinnedSource(const CheckpointView& in, const codec::Precision& precision);
  uint64_t size() const override { return in_.source->size(); }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override;
  const std::string& name() const override { return in_.source->name(); }

 private:
  // The whole elements of a float tensor: what Thin rounds.
  struct Span {
    uint64_t offset = 0, length = 0;
    codec::DType dtype = codec::DType::kBytes;
  };
  CheckpointView in_;
  codec::Precision precision_;
  std::vector<Span> spans_;  // by offset, disjoint
};

}  // namespace zipnn::formats
