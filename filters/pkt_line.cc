#include "filters/pkt_line.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace zipnn::filters {

Status PktLineReader::ReadExact(char* out, size_t n, bool* ended_before_any) {
  size_t got = 0;
  while (got < n) {
    if (begin_ == end_) {
      if (ahead_.empty()) ahead_.resize(kReadAhead);
      ZIPNN_ASSIGN_OR_RETURN(size_t k, in_.Read(ahead_.data(), ahead_.size()));
      if (k == 0) {
        if (got == 0 && ended_before_any != nullptr) {
          *ended_before_any = true;
          return OkStatus();
        }
        return InvalidArgument("pkt-line stream ends inside a packet");
      }
      begin_ = 0;
      end_ = k;
    }
    const size_t k = std::min(n - got, end_ - begin_);
    std::memcpy(out + got, ahead_.data() + begin_, k);
    begin_ += k;
    got += k;
  }
  return OkStatus();
}

Result<Packet> PktLineReader::Read() {
  char head[4];
  bool ended = false;
  ZIPNN_RETURN_IF_ERROR(ReadExact(head, 4, &ended));
  Packet p;
  if (ended) return p;  // kEnd
  size_t length = 0;
  for (char c : head) {
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return InvalidArgument("pkt-line length '" + std::string(head, 4) + "' is not hex");
    length = length * 16 + static_cast<size_t>(v);
  }
  if (length == 0) {
    p.kind = Packet::Kind::kFlush;
    return p;
  }
  if (length < 4 || length - 4 > kMaxPacketData) {
    return InvalidArgument("pkt-line length " + std::to_string(length) + " is out of range");
  }
  p.kind = Packet::Kind::kData;
  p.data.resize(length - 4);
  ZIPNN_RETURN_IF_ERROR(ReadExact(p.data.data(), p.data.size(), nullptr));
  return p;
}

Result<std::vector<std::string>> PktLineReader::ReadList() {
  std::vector<std::string> lines;
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(Packet p, Read());
    if (p.kind == Packet::Kind::kFlush) return lines;
    if (p.kind == Packet::Kind::kEnd) return InvalidArgument("pkt-line stream ends inside a list");
    if (!p.data.empty() && p.data.back() == '\n') p.data.pop_back();
    lines.push_back(std::move(p.data));
  }
}

Status PktLineWriter::WriteData(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const size_t k = std::min(n, kMaxPacketData);
    char head[5];
    std::snprintf(head, sizeof head, "%04zx", k + 4);
    ZIPNN_RETURN_IF_ERROR(out_.Append(head, 4));
    ZIPNN_RETURN_IF_ERROR(out_.Append(p, k));
    p += k;
    n -= k;
  }
  return OkStatus();
}

Status PktLineWriter::WriteLine(std::string_view text) {
  std::string line(text);
  line += '\n';
  return WriteData(line.data(), line.size());
}

Status PktLineWriter::WriteFlush() { return out_.Append("0000", 4); }

}  // namespace zipnn::filters
