// Trajectory analysis: how the weights of a sequence of checkpoints moved,
// and what storing them costs with each coder and each storage policy. The
// figures follow the ZipNN papers' study of training runs: parameters and
// bytes (per byte group) that changed against a reference checkpoint, the
// relative size of the update, and the stored size standalone, as a delta
// against the previous checkpoint and as a delta against a periodic base,
// each with Huffman only, zstd only and the auto rule, beside the order-0
// entropy bound of the byte groups.
//
// Checkpoints are added one at a time, oldest first (Analyzer::Add); the
// analyzer keeps only the few earlier ones a later one is compared with,
// so memory for checkpoint data does not grow with their number (the
// tables grow by one row per checkpoint and per tensor).
//
// Data types here are plain values; an Analyzer is used by one thread and
// runs its work on its own pool.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/dtype.h"
#include "lib/codec/thin.h"
#include "lib/config/policy.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/file_layout.h"

namespace zipnn::analyze {

// Byte groups named by meaning across dtypes (codec::GroupLabel): the
// exponent byte "exp", the mantissa bytes "man0" (lowest, with the sign
// rotated in) to "man6", and the bytes of integer types "b0" to "b7".
inline constexpr int kGroupSlots = 16;
// The slot of group g of dtype t; -1 for a tail (never in a tensor).
int GroupSlot(codec::DType t, int g);
std::string SlotLabel(int slot);
// Slots in the order tables show them: exp, man6..man0, b0..b7.
const std::array<int, kGroupSlots>& SlotOrder();
// Whether a slot is a group of floating-point elements (exp, man*): the
// groups the ZipNN papers study. Charts and terminal tables show these;
// the data tables have every slot.
bool IsFloatSlot(int slot);

// How a tensor (or a set of tensors) differs from its reference.
struct ChangeStats {
  uint64_t elements = 0;
  uint64_t changed = 0;  // elements whose bits differ
  std::array<uint64_t, kGroupSlots> group_bytes{};
  std::array<uint64_t, kGroupSlots> group_changed{};
  // Over pairs of finite floating-point values: sum of (w - ref)^2 and of
  // ref^2, for ||W - W_ref|| / ||W_ref||. Pairs with a NaN or an infinity
  // on either side are counted in non_finite and left out.
  double diff_sq = 0;
  double ref_sq = 0;
  uint64_t non_finite = 0;
  uint64_t float_elements = 0;

  void Add(const ChangeStats& o);
  double ChangedFraction() const;
  // Share of the slot's bytes that changed; NaN when no byte is in it.
  double GroupChangedFraction(int slot) const;
  // NaN when there is no floating-point element or the reference is all zero.
  double RelativeUpdate() const;
};

enum class TensorStatus {
  kChanged,   // same name, dtype and shape; some element differs
  kFrozen,    // bit-identical to the reference
  kAdded,     // no tensor of that name in the reference
  kReshaped,  // the reference's tensor of that name has another dtype or shape
  kRemoved,   // in the reference only
};
const char* TensorStatusName(TensorStatus s);
// "previous" or "base", as options and reports spell them.
const char* AgainstName(config::DeltaAgainst d);
// "whole" or "delta", as .zipnn.yaml's newest says it.
const char* NewestName(config::Newest n);
// The dimensions joined by `sep` ("256,768" or "256x768").
std::string JoinDims(const std::vector<uint64_t>& shape, const char* sep);

struct TensorInfo {
  std::string name;
  codec::DType dtype = codec::DType::kBytes;
  std::vector<uint64_t> shape;
};

struct TensorChange {
  size_t checkpoint = 0;  // index of the row
  TensorInfo tensor;
  TensorStatus status = TensorStatus::kChanged;
  TensorInfo before;  // kReshaped: the reference's tensor of that name
  // For kAdded and kReshaped every element counts as changed and there is
  // no norm; kRemoved has none.
  ChangeStats stats;
};

// Whole-object sizes of one checkpoint coded one way, in bytes.
struct Sizes {
  bool measured = false;
  uint64_t huffman = 0;  // CoderPolicy::kHuffman
  uint64_t zstd = 0;     // CoderPolicy::kZstd
  // A delta's chunks all taken by one transform (codec::kTransforms, by
  // its Transform; the auto rule's coders); `automatic` takes the best per
  // chunk, as the store does. Zero for standalone sizes.
  std::array<uint64_t, codec::kTransformCount> by_transform{};
  uint64_t automatic = 0;
  // Order-0 entropy of every byte group of every chunk, summed: what an
  // ideal per-chunk order-0 coder would need for the coded bytes.
  double bound = 0;
};

struct CheckpointRow {
  size_t index = 0;
  std::string label;    // step number, short commit or file name
  std::string source;   // file path, or "<commit>:<path>"
  std::string subject;  // commit subject (git history only)
  std::string id;       // content id, hex
  std::string format;
  uint64_t raw_bytes = 0;
  uint64_t tensors = 0;             // selected tensors in this checkpoint
  uint64_t parameters = 0;          // their elements
  std::optional<size_t> reference;  // what the change statistics compare with
  ChangeStats change;               // over the selected tensors
  uint64_t changed_tensors = 0, frozen_tensors = 0, added_tensors = 0, removed_tensors = 0, reshaped_tensors = 0;
  // Of the added and reshaped ones, those whose bytes are a tensor of the
  // reference under another name or shape (and its dtype), and their bytes.
  uint64_t shared_tensors = 0, shared_bytes = 0;
  Sizes standalone;
  Sizes vs_previous;
  std::optional<size_t> base;  // the periodic base vs_base is against
  Sizes vs_base;
};

// Counts of the biased exponent field of every element of one float dtype.
struct ExponentHistogram {
  codec::DType dtype = codec::DType::kBytes;
  int bias = 0;
  std::vector<uint64_t> counts;  // by biased exponent; the last is inf/NaN, 0 zero/subnormal
  uint64_t total = 0;
};
// Exponent bits and bias of a float dtype; nullopt for the others.
std::optional<std::pair<int, int>> ExponentField(codec::DType t);

// What one storage policy would have stored for the trajectory, each
// version placed by the store's own plan, as the clean filter places it
// (lib/store/placement.h, docs/policy.md): every base_interval-th
// version a base, deltas against the previous version or the last base,
// chains cut at max_chain, and a delta that saves less than min_gain of the
// last base's size stored as a base instead.
inline constexpr uint32_t kNoChainLimit = UINT32_MAX;
struct PolicyOutcome {
  uint32_t base_interval = 0;  // 0: no periodic base after the first
  config::DeltaAgainst against = config::DeltaAgainst::kPrevious;
  config::Newest newest = config::Newest::kWhole;
  uint32_t max_chain = kNoChainLimit;
  bool current = false;  // the policy of .zipnn.yaml (or the defaults)
  uint64_t stored_bytes = 0;
  uint64_t bases = 0;
  int worst_chain = 0;  // deltas decoded by the costliest restore
  // What a clone that checks out only the last checkpoint fetches: its
  // object and every base of its chain.
  uint64_t latest_bytes = 0;
};
// The max_chain of the what-if's policy of interval `k` (0: no periodic
// base): the one .zipnn.yaml would give it (config::DefaultMaxChain), and
// no limit of the what-if's own without a periodic base (the store's
// still holds: lib/store/placement.h).
inline uint32_t WhatIfMaxChain(uint32_t k, config::Newest newest) {
  return k == 0 ? kNoChainLimit : config::DefaultMaxChain(k, newest);
}

// What retention's thinning (docs/retention.md) would store for the
// trajectory at one precision: every checkpoint's float tensors rounded
// (lib/formats/thin.h), then stored as Analysis::exact_stored is, and the
// error that makes, over every float value of every checkpoint (whatever
// the tensor filter).
// What thinning did to some of the values.
struct ThinPart {
  double max_abs = 0;
  double max_rel = 0;
  uint64_t changed = 0;
  uint64_t zeroed = 0;
  uint64_t values = 0;
};

struct ThinningOutcome {
  codec::Precision precision;
  uint64_t stored_bytes = 0;
  double max_abs = 0;    // largest |x' - x|
  double max_rel = 0;    // largest |x' - x| / |x|
  uint64_t changed = 0;  // values rounded
  uint64_t values = 0;   // values of a float type
  uint64_t zeroed = 0;   // values rounded to zero
  // The same for an optimizer's state alone (its tensors' names start
  // with "optimizer", as torch.save, Lightning and DeepSpeed name them),
  // where thinning does most, and for the rest.
  ThinPart optimizer;
  ThinPart model;

  // The papers' precisions for the float types of a checkpoint: absolute
  // 2^-27, 2^-23 and 2^-20 and relative 10 bits for fp32 and fp64, and
  // relative 5, 4 and 3 bits for bf16 and fp16.
  static std::vector<codec::Precision> DefaultsFor(const formats::FileLayout& layout);
};

struct Analysis {
  config::DeltaAgainst against = config::DeltaAgainst::kPrevious;
  uint32_t base_interval = 10;
  // How the sizes other than xor and diff take delta chunks (the policy's
  // delta_transform).
  codec::TransformPolicy transform = codec::kAutoTransform;
  std::string tensor_filter;  // as given; empty for all
  std::vector<CheckpointRow> rows;
  // Every selected tensor of every checkpoint that has a reference, in row
  // order, then file order (removed tensors last in their row).
  std::vector<TensorChange> tensors;
  // The checkpoint the exponent histograms are of.
  std::optional<size_t> histogram_at;
  std::vector<ExponentHistogram> histograms;
  std::vector<PolicyOutcome> policies;
  // The exact checkpoints stored with a base every base_interval and
  // deltas against the previous one, and the same with each precision of
  // Options::thinning.
  uint64_t exact_stored = 0;
  std::vector<ThinningOutcome> thinning;
};

// Slots that hold bytes in any compared checkpoint, in SlotOrder.
std::vector<int> SlotsPresent(const Analysis& analysis, bool floats_only);

// One checkpoint to analyse, its layout read, with the labels of its row.
// A scratch file it lives in (a version restored from the store) goes
// when the analyzer lets go of the input.
struct Input {
  std::string label, source, subject;
  formats::Checkpoint checkpoint;
};

// A tensor selection for Options::select: names matching `glob`, or
// with a match of the regular expression `regex` (ECMAScript) in them;
// everything when both are empty. InvalidArgument, naming the options
// of `git zipnn analyze` that give them, for a regular expression that
// does not compile, or both given.
Result<std::function<bool(const std::string&)>> TensorsMatching(const std::string& glob, const std::string& regex);

struct Options {
  config::DeltaAgainst against = config::DeltaAgainst::kPrevious;  // reference of the change statistics
  uint32_t base_interval = 10;                                     // the periodic base's interval (at least 1)
  // Selects the tensors the change statistics and histograms cover; empty
  // selects all. Stored sizes are always of whole files.
  std::function<bool(const std::string&)> select;
  std::string filter_text;
  // The checkpoint (by label or index) the exponent histograms are of;
  // empty for the last.
  std::string histogram_at;
  // Coding parameters (chunk size, zstd level, threads) and the policy of
  // the what-if's "current" row.
  config::Policy policy;
  bool what_if = true;
  // The precisions of the thinning what-if: nullopt for
  // ThinningOutcome::DefaultsFor the first checkpoint, empty for none.
  std::optional<std::vector<codec::Precision>> thinning;
};

class Analyzer {
 public:
  explicit Analyzer(Options options);
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // Analyses the next checkpoint of the trajectory.
  Status Add(std::shared_ptr<Input> input);
  // The tables, with the what-if policies evaluated.
  Analysis Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace zipnn::analyze
