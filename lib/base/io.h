// ByteSource and ByteSink: where the engine reads checkpoints and objects
// from and writes them to. Files implement them (lib/base/file.h); memory
// implementations serve tests and benchmarks.
//
// A ByteSource must allow concurrent ReadAt calls (the pipeline reads
// chunks from several threads). A ByteSink is appended to by one thread,
// in order; a sink that also takes positional writes lets several threads
// write disjoint ranges at once after one Presize call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/rate.h"
#include "lib/base/status.h"

namespace zipnn {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset.
  virtual Status ReadAt(uint64_t offset, void* out, size_t n) const = 0;
  // What to call this source in error messages (usually a path).
  virtual const std::string& name() const = 0;
  // The n bytes at offset as a buffer this source holds anyway and shares
  // (a decoded chunk of an object), when they are exactly one such buffer;
  // null otherwise, and then ReadAt is the way to them.
  virtual std::shared_ptr<const uint8_t[]> Shared(uint64_t /*offset*/, size_t /*n*/) const { return nullptr; }
  // The same buffer given away: the source keeps no reference to it (a
  // later read of the range decodes it again) and nobody else holds one,
  // so the caller may write into it (a delta applied in place on its
  // base). Null when the source cannot give the range so.
  virtual std::shared_ptr<uint8_t[]> Take(uint64_t /*offset*/, size_t /*n*/) const { return nullptr; }
};

// A stream read front to back (standard input, a pipe).
class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Reads up to n bytes; 0 means the end of the stream.
  virtual Result<size_t> Read(void* out, size_t n) = 0;
};

// Up to `limit` bytes of `in`, fewer only where the stream ends.
inline Result<std::string> ReadUpTo(ByteReader& in, size_t limit) {
  std::string head(limit, '\0');
  size_t got = 0;
  while (got < limit) {
    ZIPNN_ASSIGN_OR_RETURN(size_t n, in.Read(head.data() + got, limit - got));
    if (n == 0) break;
    got += n;
  }
  head.resize(got);
  return head;
}

// A two-way byte stream: a connection to a child process or a socket.
// Read returns what the other side sent (0 when it closed its end); Write
// sends all `n` bytes, and fails (rather than raising SIGPIPE) when the
// other side has gone.
class Channel : public ByteReader {
 public:
  virtual Status Write(const void* data, size_t n) = 0;
  // From now on a Read or Write that moves no byte for `seconds` fails
  // with an IoError (0: waits for ever, the default), so a peer that
  // stops answering cannot hang us. Channels that cannot wait with a
  // deadline ignore it.
  virtual void SetTimeout(double seconds) { (void)seconds; }
  // From now on moving fewer bytes than `limit` asks (rate.h) fails a
  // Read or Write with an IoError starting with kTooSlow, so a peer that
  // trickles cannot hold us either. Between a Write and the first byte of
  // the Read after it the clock stops: the other side is thinking, which
  // the timeout bounds. Channels that cannot measure ignore it.
  virtual void SetLowSpeed(const LowSpeed& limit) { (void)limit; }
};

class MemoryReader : public ByteReader {
 public:
  explicit MemoryReader(std::string data) : data_(std::move(data)) {}
  Result<size_t> Read(void* out, size_t n) override {
    const size_t k = std::min(n, data_.size() - at_);
    std::memcpy(out, data_.data() + at_, k);
    at_ += k;
    return k;
  }

 private:
  std::string data_;
  size_t at_ = 0;
};

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Append(const void* data, size_t n) = 0;

  // Positional writes (optional): after Presize(total) on one thread,
  // WriteAt may be called from any thread for disjoint ranges of
  // [0, total). The decoder uses them to take the copy of every restored
  // byte off the thread that writes in order.
  virtual bool CanWriteAt() const { return false; }
  virtual Status Presize(uint64_t /*total*/) { return Unsupported("sink takes no positional writes"); }
  virtual Status WriteAt(uint64_t /*offset*/, const void* /*data*/, size_t /*n*/) {
    return Unsupported("sink takes no positional writes");
  }
};

// Hands what it is given to `write` with the place it goes, from `at` on:
// a stream of bytes that lands in a range of a file written in ranges.
class PlacedSink : public ByteSink {
 public:
  using Write = std::function<Status(uint64_t at, const void* data, size_t n)>;
  PlacedSink(Write write, uint64_t at) : write_(std::move(write)), at_(at) {}
  Status Append(const void* data, size_t n) override {
    ZIPNN_RETURN_IF_ERROR(write_(at_, data, n));
    at_ += n;
    return OkStatus();
  }
  // Where the next byte goes: every byte before it, from where it began,
  // is written.
  uint64_t at() const { return at_; }

 private:
  Write write_;
  uint64_t at_;
};

// Counts what it is given and keeps none of it (sizes without output).
class CountingSink : public ByteSink {
 public:
  Status Append(const void*, size_t n) override {
    bytes_ += n;
    return OkStatus();
  }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_ = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size, std::string name) : data_(data), size_(size), name_(std::move(name)) {}
  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset) return IoError(name_ + ": read past the end");
    if (n != 0) std::memcpy(out, data_ + offset, n);  // `out` may be null then, as for a file
    return OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  const uint8_t* data_;
  size_t size_;
  std::string name_;
};

class MemorySink : public ByteSink {
 public:
  void Reserve(size_t n) { buffer_.Reserve(n); }
  Status Append(const void* data, size_t n) override {
    buffer_.Append(data, n);
    return OkStatus();
  }
  bool CanWriteAt() const override { return true; }
  Status Presize(uint64_t total) override {
    buffer_.Resize(total);
    return OkStatus();
  }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    if (offset > buffer_.size() || n > buffer_.size() - offset) return IoError("write past the presized end");
    if (n != 0) std::memcpy(buffer_.data() + offset, data, n);
    return OkStatus();
  }
  const Buffer& buffer() const { return buffer_; }
  void Clear() { buffer_.Clear(); }  // keeps the memory for the next use
  std::vector<uint8_t> ToVector() const {
    return std::vector<uint8_t>(buffer_.data(), buffer_.data() + buffer_.size());
  }

 private:
  Buffer buffer_;
};

// Copies [offset, offset + length) of `from` to `out`, a megabyte at a
// time, so that memory stays bounded whatever the length.
Status CopyRange(const ByteSource& from, uint64_t offset, uint64_t length, ByteSink& out);

}  // namespace zipnn
