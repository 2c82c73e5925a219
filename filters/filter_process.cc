#include "filters/filter_process.h"

#include <algorithm>
#include <utility>

namespace zipnn::filters {

namespace {

// The content of one request: data packets up to a flush.
class ContentReader : public ByteReader {
 public:
  explicit ContentReader(PktLineReader& in) : in_(in) {}

  Result<size_t> Read(void* out, size_t n) override {
    while (at_ == packet_.size()) {
      if (done_) return size_t{0};
      ZIPNN_ASSIGN_OR_RETURN(Packet p, in_.Read());
      if (p.kind == Packet::Kind::kEnd) return InvalidArgument("pkt-line stream ends inside file content");
      if (p.kind == Packet::Kind::kFlush) {
        done_ = true;
        return size_t{0};
      }
      packet_ = std::move(p.data);
      at_ = 0;
    }
    const size_t k = std::min(n, packet_.size() - at_);
    std::copy(packet_.data() + at_, packet_.data() + at_ + k, static_cast<char*>(out));
    at_ += k;
    return k;
  }
  // Reads what the handler left, so that the next request starts in step.
  Status Drain() {
    char sink[4096];
    for (;;) {
      ZIPNN_ASSIGN_OR_RETURN(size_t k, Read(sink, sizeof sink));
      if (k == 0) return OkStatus();
    }
  }
 private:
  PktLineReader& in_;
  std::string packet_;
  size_t at_ = 0;
  bool done_ = false;
};

// `head` (what was read of a request's content already), then the rest.
class PrefixedReader : public ByteReader {
 public:
  PrefixedReader(std::string head, ByteReader& rest) : head_(std::move(head)), rest_(rest) {}
  Result<size_t> Read(void* out, size_t n) override {
    if (at_ == head_.size()) return rest_.Read(out, n);
    const size_t k = std::min(n, head_.size() - at_);
    std::copy(head_.data() + at_, head_.data() + at_ + k, static_cast<char*>(out));
    at_ += k;
    return k;
  }

 private:
  const std::string head_;
  size_t at_ = 0;
  ByteReader& rest_;
};

// The answer's content: "status=success" goes out before the first byte,
// so a handler that fails before writing still answers status=error.
// Bytes are gathered into full packets.
class AnswerSink : public ByteSink {
 public:
  explicit AnswerSink(PktLineWriter& out) : out_(out) {}
  Status Append(const void* data, size_t n) override {
    ZIPNN_RETURN_IF_ERROR(Begin());
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const size_t k = std::min(n, kMaxPacketData - pending_.size());
      pending_.append(p, k);
      p += k;
      n -= k;
      if (pending_.size() == kMaxPacketData) ZIPNN_RETURN_IF_ERROR(Finish());
    }
    return OkStatus();
  }
  Status Begin() {
    if (started_) return OkStatus();
    started_ = true;
    ZIPNN_RETURN_IF_ERROR(out_.WriteLine("status=success"));
    return out_.WriteFlush();
  }
  // Sends the bytes gathered so far.
  Status Finish() {
    Status s = out_.WriteData(pending_.data(), pending_.size());
    pending_.clear();
    return s;
  }
  bool started() const { return started_; }

 private:
  PktLineWriter& out_;
  std::string pending_;
  bool started_ = false;
};

Status Handshake(PktLineReader& reader, PktLineWriter& writer) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> hello, reader.ReadList());
  if (hello.empty() || hello[0] != "git-filter-client") {
    return InvalidArgument("filter protocol: expected git-filter-client");
  }
  if (std::find(hello.begin() + 1, hello.end(), "version=2") == hello.end()) {
    return InvalidArgument("filter protocol: git does not offer version 2");
  }
  ZIPNN_RETURN_IF_ERROR(writer.WriteLine("git-filter-server"));
  ZIPNN_RETURN_IF_ERROR(writer.WriteLine("version=2"));
  ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> offered, reader.ReadList());
  for (const char* capability : {"capability=clean", "capability=smudge", "capability=delay"}) {
    if (std::find(offered.begin(), offered.end(), capability) != offered.end()) {
      ZIPNN_RETURN_IF_ERROR(writer.WriteLine(capability));
    }
  }
  return writer.WriteFlush();
}

void Report(ByteSink* errors, const std::string& path, const Status& s) {
  if (errors == nullptr) return;
  const std::string line = "git-zipnn: " + path + ": " + s.message() + "\n";
  (void)errors->Append(line.data(), line.size());
}

}  // namespace

Status ServeFilterProcess(ByteReader& in, ByteSink& out, FilterHandler& handler, ByteSink* errors) {
  PktLineReader reader(in);
  PktLineWriter writer(out);
  ZIPNN_RETURN_IF_ERROR(Handshake(reader, writer));
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(Packet first, reader.Read());
    if (first.kind == Packet::Kind::kEnd) return OkStatus();  // git is done
    if (first.kind == Packet::Kind::kFlush) return InvalidArgument("filter protocol: empty request");
    std::vector<std::string> request = {first.data};
    if (!request[0].empty() && request[0].back() == '\n') request[0].pop_back();
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> rest, reader.ReadList());
    request.insert(request.end(), rest.begin(), rest.end());
    std::string command, path;
    bool can_delay = false;
    for (const std::string& line : request) {
      if (line.rfind("command=", 0) == 0) command = line.substr(8);
      if (line.rfind("pathname=", 0) == 0) path = line.substr(9);
      if (line == "can-delay=1") can_delay = true;
    }
    if (command == "list_available_blobs") {  // no content follows
      if (std::optional<std::string> next = handler.NextDelayed()) {
        ZIPNN_RETURN_IF_ERROR(writer.WriteLine("pathname=" + *next));
      }
      ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
      ZIPNN_RETURN_IF_ERROR(writer.WriteLine("status=success"));
      ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
      continue;
    }

    ContentReader content(reader);
    AnswerSink answer(writer);
    Status result;
    if (command == "clean") {
      result = handler.Clean(path, content, answer);
    } else if (command == "smudge" && can_delay) {
      ZIPNN_ASSIGN_OR_RETURN(std::string head, ReadUpTo(content, kMaxDelayedContent + 1));
      if (head.size() <= kMaxDelayedContent && handler.Delay(path, head)) {
        ZIPNN_RETURN_IF_ERROR(content.Drain());
        ZIPNN_RETURN_IF_ERROR(writer.WriteLine("status=delayed"));
        ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
        continue;
      }
      PrefixedReader whole(std::move(head), content);
      result = handler.Smudge(path, whole, answer);
    } else if (command == "smudge") {
      result = handler.Smudge(path, content, answer);
    } else {
      result = Unsupported("filter command '" + command + "' is not supported");
    }
    // Whatever the handler left unread belongs to this request.
    Status drained = content.Drain();
    if (!drained.ok()) return drained;  // the stream itself is broken
    if (result.ok()) {
      ZIPNN_RETURN_IF_ERROR(answer.Begin());  // empty output is still a success
      ZIPNN_RETURN_IF_ERROR(answer.Finish());
      ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
      ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());  // status unchanged: success
      continue;
    }
    Report(errors, path, result);
    if (answer.started()) {
      ZIPNN_RETURN_IF_ERROR(answer.Finish());
      ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());  // end of the partial content
    }
    ZIPNN_RETURN_IF_ERROR(writer.WriteLine("status=error"));
    ZIPNN_RETURN_IF_ERROR(writer.WriteFlush());
  }
}

}  // namespace zipnn::filters
