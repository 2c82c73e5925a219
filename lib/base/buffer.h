// Buffer: a growable byte array that does not zero-fill when it grows, for
// the codec's hot paths (std::vector<uint8_t>::resize writes every byte).
// Owns its memory; one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace zipnn {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Resize(n); }
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Keeps the first min(size, n) bytes; new bytes are uninitialised.
  void Resize(size_t n) {
    Reserve(n);
    size_ = n;
  }
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    size_t cap = capacity_ < 4096 ? 4096 : capacity_;
    while (cap < n) cap += cap / 2;
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[cap]);
    if (size_ != 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = cap;
  }
  // Grows by n bytes and returns a pointer to them.
  uint8_t* Extend(size_t n) {
    Resize(size_ + n);
    return data_.get() + size_ - n;
  }
  void Append(const void* p, size_t n) {
    if (n != 0) std::memcpy(Extend(n), p, n);
  }
  void Clear() { size_ = 0; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace zipnn
