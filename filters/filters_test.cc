// The filter process over in-memory streams, byte for byte as git would
// see it: handshake, capabilities, requests, status=error for a failed
// file with the process going on, protocol violations, and no answer
// written while git is still sending a file's content.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "filters/filter_process.h"
#include "filters/pkt_line_testing.h"
#include "lib/base/file.h"

namespace zipnn::filters {
namespace {

using testing::DelayableSmudge;
using testing::GitHello;
using testing::kFlush;
using testing::Line;
using testing::ListAvailable;
using testing::Pkt;
using testing::Request;
using testing::ServerHello;
using testing::Success;

// Clean upper-cases; smudge lower-cases; a path starting with "bad" fails
// before writing, "late" after writing. A path starting with "slow" is
// delayed, and the delayed ones are handed back in reverse path order; a
// delayed path asked for again with no content gets the content it was
// delayed with.
class FakeHandler : public FilterHandler {
 public:
  bool Delay(const std::string& path, const std::string& content) override {
    if (path.rfind("slow", 0) != 0) return false;
    delayed_[path] = content;
    return true;
  }
  std::optional<std::string> NextDelayed() override {
    if (delayed_.size() == handed_.size()) return std::nullopt;
    for (auto it = delayed_.rbegin(); it != delayed_.rend(); ++it) {
      if (handed_.insert(it->first).second) return it->first;
    }
    return std::nullopt;
  }
  Status Clean(const std::string& path, ByteReader& content, ByteSink& out) override {
    return Apply(path, content, out, true);
  }
  Status Smudge(const std::string& path, ByteReader& content, ByteSink& out) override {
    if (const auto it = delayed_.find(path); it != delayed_.end()) {
      MemoryReader kept(it->second);
      return Apply(path, kept, out, false);
    }
    return Apply(path, content, out, false);
  }

 private:
  std::map<std::string, std::string> delayed_;
  std::set<std::string> handed_;

  Status Apply(const std::string& path, ByteReader& content, ByteSink& out, bool upper) {
    if (path.rfind("bad", 0) == 0) return Corruption("object is damaged");
    char buf[1000];
    for (;;) {
      ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buf, sizeof buf));
      if (n == 0) break;
      for (size_t i = 0; i < n; ++i) buf[i] = static_cast<char>(upper ? std::toupper(buf[i]) : std::tolower(buf[i]));
      ZIPNN_RETURN_IF_ERROR(out.Append(buf, n));
      if (path.rfind("late", 0) == 0) return IoError("disk went away");
    }
    return OkStatus();
  }
};

struct Session {
  Status status;
  std::string out;
  std::string errors;
};

Session Serve(const std::string& input) {
  MemoryReader in(input);
  MemorySink out, errors;
  FakeHandler handler;
  Session s;
  s.status = ServeFilterProcess(in, out, handler, &errors);
  const auto& o = out.buffer();
  s.out.assign(reinterpret_cast<const char*>(o.data()), o.size());
  const auto& e = errors.buffer();
  s.errors.assign(reinterpret_cast<const char*>(e.data()), e.size());
  return s;
}

TEST_CASE("handshake, then clean and smudge, byte for byte") {
  const Session s = Serve(GitHello() + Request("clean", "a.bin", "hello") + Request("smudge", "a.bin", "WORLD"));
  CHECK(s.status.ok());
  CHECK(s.out == ServerHello() + Success("HELLO") + Success("world"));
  CHECK(s.errors.empty());
}

TEST_CASE("content larger than one packet streams in packets of at most 65516 bytes") {
  std::string big(200000, 'x');
  const Session s = Serve(GitHello() + Request("clean", "big.bin", big));
  CHECK(s.status.ok());
  const std::string expected = ServerHello() + Success(std::string(200000, 'X'));
  CHECK(s.out.size() == expected.size());
  CHECK((s.out == expected));
}

TEST_CASE("a failed file answers status=error and the next file is served") {
  const Session early = Serve(GitHello() + Request("clean", "bad.bin", "data") + Request("clean", "ok.bin", "abc"));
  CHECK(early.status.ok());
  CHECK(early.out == ServerHello() + Line("status=error") + kFlush + Success("ABC"));
  CHECK(early.errors == "git-zipnn: bad.bin: object is damaged\n");

  // Failing after output started: the content ends, then the status is reset.
  const Session late = Serve(GitHello() + Request("smudge", "late.bin", "ABC") + Request("smudge", "ok.bin", "XY"));
  CHECK(late.status.ok());
  CHECK(late.out == ServerHello() + Line("status=success") + kFlush + Pkt("abc") + kFlush + Line("status=error") +
                        kFlush + Success("xy"));
  CHECK(late.errors == "git-zipnn: late.bin: disk went away\n");
}

TEST_CASE("an unknown command is an error for that file only; empty content succeeds") {
  const Session s = Serve(GitHello() + Request("tickle", "a", "x") + Request("clean", "empty", ""));
  CHECK(s.status.ok());
  CHECK(s.out == ServerHello() + Line("status=error") + kFlush + Success(""));
  CHECK(s.errors == "git-zipnn: a: filter command 'tickle' is not supported\n");
}

TEST_CASE("delayed smudges: status=delayed, then one available file per list in the handler's order") {
  const std::string big(kMaxDelayedContent + 5000, 'Q');
  const Session s =
      Serve(GitHello() + DelayableSmudge("slow-a", "AB") + DelayableSmudge("fast", "CD") +
            DelayableSmudge("slow-b", "EF") + DelayableSmudge("slow-big", big) + ListAvailable() +
            Request("smudge", "slow-b", "") + ListAvailable() + Request("smudge", "slow-a", "") + ListAvailable());
  CHECK(s.status.ok());
  const std::string delayed = Line("status=delayed") + kFlush;
  // Content past kMaxDelayedContent is not delayed: served at once, whole.
  CHECK(s.out == ServerHello() + delayed + Success("cd") + delayed + Success(std::string(big.size(), 'q')) +
                     Line("pathname=slow-b") + kFlush + Line("status=success") + kFlush + Success("ef") +
                     Line("pathname=slow-a") + kFlush + Line("status=success") + kFlush + Success("ab") + kFlush +
                     Line("status=success") + kFlush);
  CHECK(s.errors.empty());
}

// git's pipes, as far as order goes: git writes each of `turns` whole
// (a hello, a request with all its content) before it reads a byte of the
// answer, so an answer written while git is inside a turn would block
// both processes once the pipes are full. A read never goes past the end
// of a turn (git has not written the next one yet). The reader counts
// what it gave; the sink counts the writes made at any other point.
class GitTurns : public ByteReader, public ByteSink {
 public:
  explicit GitTurns(const std::vector<std::string>& turns) {
    for (const std::string& t : turns) {
      input_ += t;
      ends_.insert(input_.size());
    }
  }
  Result<size_t> Read(void* out, size_t n) override {
    const auto turn_end = ends_.upper_bound(at_);
    const size_t k = std::min(n, (turn_end == ends_.end() ? input_.size() : *turn_end) - at_);
    std::copy(input_.data() + at_, input_.data() + at_ + k, static_cast<char*>(out));
    at_ += k;
    return k;
  }
  Status Append(const void* data, size_t n) override {
    if (ends_.count(at_) == 0) ++early_writes_;
    output_.append(static_cast<const char*>(data), n);
    return OkStatus();
  }
  int early_writes() const { return early_writes_; }
  const std::string& output() const { return output_; }

 private:
  std::string input_, output_;
  std::set<size_t> ends_;
  size_t at_ = 0;
  int early_writes_ = 0;
};

// Serves the turns with a handler that writes as it reads (FakeHandler),
// reading ahead as `read_ahead` says.
void CheckNoWriteDuringContent(const ReadAhead& read_ahead) {
  const std::string hello1 = Line("git-filter-client") + Line("version=2") + kFlush;
  const std::string hello2 = Line("capability=clean") + Line("capability=smudge") + Line("capability=delay") + kFlush;
  std::string big;
  for (int i = 0; big.size() < 300000; ++i) big += "Line " + std::to_string(i) + " OF CONTENT\n";
  std::string lower = big, upper = big;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  GitTurns git({hello1, hello2, Request("clean", "a.bin", lower), Request("smudge", "a.bin", upper),
                DelayableSmudge("b.bin", upper), Request("smudge", "late.bin", upper)});
  FakeHandler handler;
  MemorySink errors;
  REQUIRE(ServeFilterProcess(git, git, handler, &errors, read_ahead).ok());
  CHECK(git.early_writes() == 0);
  CHECK((git.output() == ServerHello() + Success(upper) + Success(lower) + Success(lower) + Line("status=success") +
                             kFlush + Pkt(lower.substr(0, 1000)) + kFlush + Line("status=error") + kFlush));
}

TEST_CASE("no answer is written while git is still sending the file's content") {
  CheckNoWriteDuringContent(ReadAhead{});
}

TEST_CASE("content read ahead of the answer spills to a scratch file beyond its memory budget, then goes") {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(t != nullptr ? t : "/tmp") + "/read-ahead";
  CheckNoWriteDuringContent(ReadAhead{dir, 1000});
  // Each scratch file went with its request; the folder was used.
  REQUIRE(FileExists(dir));
  CHECK(std::filesystem::is_empty(dir));
}

// Gives at most `most` bytes a read, as a pipe may.
class Trickle : public ByteReader {
 public:
  Trickle(std::string data, size_t most) : data_(std::move(data)), most_(most) {}
  Result<size_t> Read(void* out, size_t n) override {
    const size_t k = std::min({n, most_, data_.size() - at_});
    std::copy(data_.data() + at_, data_.data() + at_ + k, static_cast<char*>(out));
    at_ += k;
    return k;
  }

 private:
  std::string data_;
  size_t most_;
  size_t at_ = 0;
};

TEST_CASE("packets read the same whether they come a byte at a time or many to a read") {
  const std::string content(65516 + 1000, 'x');
  const std::string stream = Line("command=clean") + kFlush + Pkt(content.substr(0, 65516)) +
                             Pkt(content.substr(65516)) + kFlush + Line("last");
  for (size_t most : {size_t{1}, size_t{3}, size_t{4096}, size_t{1} << 24}) {
    CAPTURE(most);
    Trickle in(stream, most);
    PktLineReader reader(in);
    std::vector<std::string> got;
    for (;;) {
      auto p = reader.Read();
      REQUIRE(p.ok());
      if (p->kind == Packet::Kind::kEnd) break;
      got.push_back(p->kind == Packet::Kind::kFlush ? "<flush>" : p->data);
    }
    CHECK(got == std::vector<std::string>{"command=clean\n", "<flush>", content.substr(0, 65516), content.substr(65516),
                                          "<flush>", "last\n"});
  }
  // A stream that ends inside a packet is an error however it is read.
  Trickle cut(Pkt("abcdef").substr(0, 7), 2);
  PktLineReader reader(cut);
  CHECK(reader.Read().status().message() == "pkt-line stream ends inside a packet");
}

TEST_CASE("only offered capabilities are taken") {
  const Session s = Serve(Line("git-filter-client") + Line("version=2") + kFlush + Line("capability=smudge") + kFlush);
  CHECK(s.status.ok());
  CHECK(s.out == Line("git-filter-server") + Line("version=2") + kFlush + Line("capability=smudge") + kFlush);
}

TEST_CASE("protocol violations end the process with a clear error") {
  CHECK(Serve(Line("git-filter-server") + kFlush).status.message() == "filter protocol: expected git-filter-client");
  CHECK(Serve(Line("git-filter-client") + Line("version=3") + kFlush).status.message() ==
        "filter protocol: git does not offer version 2");
  CHECK(Serve(GitHello() + "zzzz").status.message() == "pkt-line length 'zzzz' is not hex");
  CHECK(Serve(GitHello() + "0002").status.message() == "pkt-line length 2 is out of range");
  CHECK(Serve(GitHello() + "fff1abc").status.message() == "pkt-line length 65521 is out of range");
  CHECK(Serve(GitHello() + Line("command=clean") + Line("pathname=a") + kFlush + Pkt("abc")).status.message() ==
        "pkt-line stream ends inside file content");
  CHECK(Serve(GitHello() + "00").status.message() == "pkt-line stream ends inside a packet");
}

}  // namespace
}  // namespace zipnn::filters
