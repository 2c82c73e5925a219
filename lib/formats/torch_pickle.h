// What the data.pkl of a torch.save zip says about its storages, found by
// interpreting the pickle (protocol 2 as torch writes it, and the few
// opcodes protocols 3 and 4 add). Storages appear as persistent ids
// ('storage', <storage class>, key, location, numel); the class names the
// dtype (torch.FloatStorage: fp32, BFloat16Storage: bf16, ...). The walk
// over the unpickled structure names each storage after the first tensor
// that uses it: "model/c1.weight", "optimizer/state/0/exp_avg".
//
// Nothing is executed; unknown opcodes are errors. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/codec/dtype.h"

namespace zipnn::formats {

// A tensor as _rebuild_tensor_v2 builds it: a view of its storage, in
// elements. Tensors may share a storage (tied weights, slices).
struct TorchView {
  std::string name;  // path in the unpickled structure
  size_t order = 0;  // of the views of all storages, as the pickle builds them
  uint64_t offset = 0;
  std::vector<uint64_t> shape;
  std::vector<uint64_t> stride;
};

struct TorchStorage {
  std::string key;                    // the member name is <archive>/data/<key>
  std::optional<codec::DType> dtype;  // absent for a storage class we do not know
  std::string name;                   // path of the first tensor using it
  std::vector<TorchView> views;       // every tensor built on it, in pickle order
};

// Views beyond these are not recorded (a real checkpoint has a few
// thousand tensors of a few dimensions): a hostile pickle can name one
// tensor, or one shape, from the memo again and again, each time under a
// path of up to 1 KiB.
inline constexpr size_t kMaxTorchViews = 1u << 16;
inline constexpr size_t kMaxTorchDims = 64;

Result<std::vector<TorchStorage>> ReadTorchPickle(const uint8_t* data, size_t size);

// The dtype a torch storage class names ("FloatStorage"), if known.
std::optional<codec::DType> TorchStorageDType(const std::string& class_name);

}  // namespace zipnn::formats
