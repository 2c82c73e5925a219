// The tensor scan of the analysis: every selected tensor of a checkpoint
// compared element by element with its namesake in a reference checkpoint
// (changed elements, changed bytes per byte group, the norms of the update),
// and the exponent histograms of the checkpoint's floating-point tensors.
// Work is cut into blocks run on a pool and summed in block order, so the
// results do not depend on the number of threads.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/analyze/analysis.h"
#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/thread_pool.h"
#include "lib/store/parents.h"

namespace zipnn::analyze {

struct ScanResult {
  // With a reference: one entry per selected tensor of the target in file
  // order, then the selected tensors only the reference has (kRemoved).
  // Without one: the selected tensors with element counts only.
  std::vector<TensorChange> tensors;
  std::vector<ExponentHistogram> histograms;  // when asked for, by dtype value
};

// `reference` and `reference_layout` are both null for a checkpoint with
// no reference. An empty `select` selects every tensor.
Result<ScanResult> ScanTensors(const ByteSource& target, const formats::FileLayout& target_layout,
                               const ByteSource* reference, const formats::FileLayout* reference_layout,
                               const std::function<bool(const std::string&)>& select, bool histograms,
                               ThreadPool& pool);

// A tensor's fingerprint: what a text diff of two checkpoints compares.
struct TensorSummary {
  TensorInfo tensor;
  ContentId hash;  // of the tensor's bytes
  // Root mean square of the finite values of a floating-point tensor
  // (NaN for other dtypes), and how many values were not finite.
  double rms = 0;
  uint64_t non_finite = 0;
};

// One summary per tensor of the file, in file order.
Result<std::vector<TensorSummary>> SummarizeTensors(const ByteSource& file, const formats::FileLayout& layout,
                                                    ThreadPool& pool);

// What `git zipnn textconv` prints for the checkpoint `file` of content id
// `id`: a line for the checkpoint (id, size, format, tensor count), then a
// line per tensor (name, dtype, shape, the first 64 bits of its hash, its
// root mean square and its count of non-finite values). Unchanged tensors
// give identical lines, so a text diff of two listings shows the tensors
// that changed. The same bytes always give the same text: git keeps it
// keyed by the pointer blob (see lib/git/textconv_cache.h).
Result<std::string> TextconvListing(const ContentId& id, const ByteSource& file, const formats::FileLayout& layout,
                                    ThreadPool& pool);

// What a listing says of its checkpoint's tensors alone, whatever their
// container, order or file name: a hash of its tensor lines, sorted. Two
// checkpoints with the same key are twins (the same tensors with the same
// values, as far as 64-bit hashes tell); nullopt for a listing of no
// tensors. The key finds a twin among every version listed
// (store::TwinIndex); the bytes of the delta are checked apart.
std::optional<ContentId> TwinKey(std::string_view listing);
// The checkpoint a listing is of (its first line), or nullopt.
std::optional<ContentId> ListedCheckpoint(std::string_view listing);
// The tensors a listing names, by content: each one's hash as printed
// (formats::ContentKey) and its bytes, its dtype's width times its element
// count; a line that does not read is left out. What the tensor index
// keeps (store::TensorIndex).
std::vector<store::KeyedTensor> ListedTensors(std::string_view listing);

}  // namespace zipnn::analyze
