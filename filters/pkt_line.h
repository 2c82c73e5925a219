// pkt-line framing, as git's long-running filter protocol uses it: each
// packet is four lowercase hex digits giving its total length (the four
// included), then the payload; "0000" is a flush packet that ends a list
// or a content stream. A payload is at most 65516 bytes.
//
// One reader and one writer per stream; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn::filters {

inline constexpr size_t kMaxPacketData = 65516;

struct Packet {
  enum class Kind { kData, kFlush, kEnd };  // kEnd: the stream ended between packets
  Kind kind = Kind::kEnd;
  std::string data;
};

class PktLineReader {
 public:
  // Reads `in` ahead by up to kReadAhead bytes: git sends its packets in
  // runs, and taking a pipeful at a time costs a read call per pipeful,
  // not two per packet. Nothing else may read `in` meanwhile.
  explicit PktLineReader(ByteReader& in) : in_(in) {}
  static constexpr size_t kReadAhead = 1 << 20;

  // A malformed length or a stream that ends inside a packet is an error.
  Result<Packet> Read();
  // Text packets up to a flush, each without one trailing LF. The stream
  // ending first is an error.
  Result<std::vector<std::string>> ReadList();

 private:
  Status ReadExact(char* out, size_t n, bool* ended_before_any);
  ByteReader& in_;
  std::vector<char> ahead_;  // bytes read and not yet taken: [begin_, end_)
  size_t begin_ = 0, end_ = 0;
};

class PktLineWriter {
 public:
  explicit PktLineWriter(ByteSink& out) : out_(out) {}

  // Content, split into packets of at most kMaxPacketData bytes.
  Status WriteData(const void* data, size_t n);
  // One text packet, with a trailing LF.
  Status WriteLine(std::string_view text);
  Status WriteFlush();

 private:
  ByteSink& out_;
};

}  // namespace zipnn::filters
