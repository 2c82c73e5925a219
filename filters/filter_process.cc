#include "filters/filter_process.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/redact.h"

namespace zipnn::filters {

namespace {

// Content read ahead of an answer (ReadAhead): the first `in_memory`
// bytes in memory, the rest in a scratch file, removed with the Spool.
class Spool : public ByteReader {
 public:
  explicit Spool(const ReadAhead& options) : options_(options) {}

  Status Append(const char* data, size_t n) {
    if (!writing_ && (options_.dir.empty() || memory_.size() + n <= options_.in_memory)) {
      memory_.append(data, n);
      return OkStatus();
    }
    if (!writing_) {
      ZIPNN_ASSIGN_OR_RETURN(TempFile scratch, TempFile::Create(options_.dir, "read-ahead"));
      scratch_.emplace(std::move(scratch));
      ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::InTemp(*scratch_));
      writing_.emplace(std::move(file));
    }
    return writing_->Append(data, n);
  }
  // The content has all been read: from now on it is read back.
  Status Seal() {
    if (!writing_) return OkStatus();
    ZIPNN_RETURN_IF_ERROR(writing_->CommitUnsynced());
    ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(scratch_->path()));
    reading_.emplace(std::move(file));
    return OkStatus();
  }
  Result<size_t> Read(void* out, size_t n) override {
    if (at_ < memory_.size()) {
      const size_t k = std::min(n, memory_.size() - at_);
      std::copy(memory_.data() + at_, memory_.data() + at_ + k, static_cast<char*>(out));
      at_ += k;
      return k;
    }
    if (!reading_) return size_t{0};
    const uint64_t offset = at_ - memory_.size();
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, reading_->size() - offset));
    ZIPNN_RETURN_IF_ERROR(reading_->ReadAt(offset, out, k));
    at_ += k;
    return k;
  }

 private:
  const ReadAhead& options_;
  std::string memory_;
  std::optional<TempFile> scratch_;
  std::optional<AtomicFile> writing_;
  std::optional<ReadFile> reading_;
  uint64_t at_ = 0;
};

// The content of one request: data packets up to a flush, or once read
// ahead, what the Spool kept of them.
class ContentReader : public ByteReader {
 public:
  ContentReader(PktLineReader& in, const ReadAhead& options) : in_(in), options_(options) {}

  Result<size_t> Read(void* out, size_t n) override {
    if (ahead_) return ahead_->Read(out, n);
    while (at_ == packet_.size()) {
      if (done_) return size_t{0};
      ZIPNN_ASSIGN_OR_RETURN(Packet p, NextPacket());
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
  // Reads the rest of the content now, so that git is done writing before
  // an answer goes out; Read then serves it from the Spool. Nothing to do
  // once git has sent the flush that ends the content.
  Status ReadRestAhead() {
    if (ahead_ || done_) return OkStatus();
    auto spool = std::make_unique<Spool>(options_);
    ZIPNN_RETURN_IF_ERROR(spool->Append(packet_.data() + at_, packet_.size() - at_));
    packet_.clear();
    at_ = 0;
    for (;;) {
      ZIPNN_ASSIGN_OR_RETURN(Packet p, NextPacket());
      if (p.kind == Packet::Kind::kFlush) break;
      ZIPNN_RETURN_IF_ERROR(spool->Append(p.data.data(), p.data.size()));
    }
    done_ = true;
    ZIPNN_RETURN_IF_ERROR(spool->Seal());
    ahead_ = std::move(spool);
    return OkStatus();
  }
  // Reads what the handler left, so that the next request starts in step.
  Status Drain() {
    ahead_.reset();  // already read from git
    char sink[4096];
    for (;;) {
      ZIPNN_ASSIGN_OR_RETURN(size_t k, Read(sink, sizeof sink));
      if (k == 0) return OkStatus();
    }
  }

 private:
  Result<Packet> NextPacket() {
    ZIPNN_ASSIGN_OR_RETURN(Packet p, in_.Read());
    if (p.kind == Packet::Kind::kEnd) return InvalidArgument("pkt-line stream ends inside file content");
    return p;
  }

  PktLineReader& in_;
  const ReadAhead& options_;
  std::string packet_;
  size_t at_ = 0;
  bool done_ = false;
  std::unique_ptr<Spool> ahead_;
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
// so a handler that fails before writing still answers status=error, and
// only once git has sent all of the request's content. Bytes are gathered
// into full packets.
class AnswerSink : public ByteSink {
 public:
  AnswerSink(PktLineWriter& out, ContentReader& content) : out_(out), content_(content) {}
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
    ZIPNN_RETURN_IF_ERROR(content_.ReadRestAhead());
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
  ContentReader& content_;
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
  // A message that names the file first already (access::Versions
  // names what it could not fetch) is not prefixed with it again.
  const bool named = s.message().rfind(path + ": ", 0) == 0;
  const std::string line = "git-zipnn: " + (named ? "" : path + ": ") + RedactSecrets(s.message()) + "\n";
  (void)errors->Append(line.data(), line.size());
}

}  // namespace

Status ServeFilterProcess(ByteReader& in, ByteSink& out, FilterHandler& handler, ByteSink* errors,
                          const ReadAhead& read_ahead) {
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

    ContentReader content(reader, read_ahead);
    AnswerSink answer(writer, content);
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
