#include "lib/analyze/analysis.h"

#include <cmath>
#include <limits>

namespace zipnn::analyze {

namespace {

constexpr int kExpSlot = 0;
constexpr int kManSlot = 1;   // man0 .. man6
constexpr int kByteSlot = 8;  // b0 .. b7

}  // namespace

int GroupSlot(codec::DType t, int g) {
  const int width = codec::DTypeWidth(t);
  if (g < 0 || g >= width) return -1;
  if (g == codec::ExponentGroup(t)) return kExpSlot;
  if (codec::DTypeRotatesSign(t)) return kManSlot + g;
  return kByteSlot + g;
}

std::string SlotLabel(int slot) {
  if (slot == kExpSlot) return "exp";
  if (slot < kByteSlot) return "man" + std::to_string(slot - kManSlot);
  return "b" + std::to_string(slot - kByteSlot);
}

const std::array<int, kGroupSlots>& SlotOrder() {
  static const std::array<int, kGroupSlots> kOrder = {kExpSlot,      kManSlot + 6,  kManSlot + 5,  kManSlot + 4,
                                                      kManSlot + 3,  kManSlot + 2,  kManSlot + 1,  kManSlot + 0,
                                                      kByteSlot + 0, kByteSlot + 1, kByteSlot + 2, kByteSlot + 3,
                                                      kByteSlot + 4, kByteSlot + 5, kByteSlot + 6, kByteSlot + 7};
  return kOrder;
}

bool IsFloatSlot(int slot) { return slot >= kExpSlot && slot < kByteSlot; }

std::vector<int> SlotsPresent(const Analysis& a, bool floats_only) {
  std::vector<int> slots;
  for (int slot : SlotOrder()) {
    if (floats_only && !IsFloatSlot(slot)) continue;
    for (const CheckpointRow& r : a.rows) {
      if (r.reference && r.change.group_bytes[slot] > 0) {
        slots.push_back(slot);
        break;
      }
    }
  }
  return slots;
}

void ChangeStats::Add(const ChangeStats& o) {
  elements += o.elements;
  changed += o.changed;
  for (int s = 0; s < kGroupSlots; ++s) {
    group_bytes[s] += o.group_bytes[s];
    group_changed[s] += o.group_changed[s];
  }
  diff_sq += o.diff_sq;
  ref_sq += o.ref_sq;
  non_finite += o.non_finite;
  float_elements += o.float_elements;
}

double ChangeStats::ChangedFraction() const {
  if (elements == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(changed) / static_cast<double>(elements);
}

double ChangeStats::GroupChangedFraction(int slot) const {
  if (slot < 0 || slot >= kGroupSlots || group_bytes[slot] == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(group_changed[slot]) / static_cast<double>(group_bytes[slot]);
}

double ChangeStats::RelativeUpdate() const {
  if (float_elements == non_finite || ref_sq <= 0) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(diff_sq / ref_sq);
}

const char* TensorStatusName(TensorStatus s) {
  switch (s) {
    case TensorStatus::kChanged:
      return "changed";
    case TensorStatus::kFrozen:
      return "frozen";
    case TensorStatus::kAdded:
      return "added";
    case TensorStatus::kReshaped:
      return "reshaped";
    case TensorStatus::kRemoved:
      return "removed";
  }
  return "?";
}

const char* AgainstName(config::DeltaAgainst d) { return d == config::DeltaAgainst::kBase ? "base" : "previous"; }
const char* NewestName(config::Newest n) { return n == config::Newest::kWhole ? "whole" : "delta"; }

std::string JoinDims(const std::vector<uint64_t>& shape, const char* sep) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? sep : "") + std::to_string(shape[i]);
  return s;
}

std::optional<std::pair<int, int>> ExponentField(codec::DType t) {
  switch (t) {
    case codec::DType::kF32:
      return std::make_pair(8, 127);
    case codec::DType::kBF16:
      return std::make_pair(8, 127);
    case codec::DType::kF16:
      return std::make_pair(5, 15);
    case codec::DType::kF64:
      return std::make_pair(11, 1023);
    case codec::DType::kF8E4M3:
      return std::make_pair(4, 7);
    case codec::DType::kF8E5M2:
      return std::make_pair(5, 15);
    default:
      return std::nullopt;
  }
}

}  // namespace zipnn::analyze
