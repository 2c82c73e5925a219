#include "lib/remote/served.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/base/thread_pool.h"
#include "lib/store/base_note.h"
#include "lib/store/chain.h"
#include "lib/store/receive.h"
#include "lib/remote/partial.h"
#include "lib/remote/sync.h"

namespace zipnn::remote {

using store::ChainLink;
using store::ObjectStore;
using store::Store;
using store::StoreLock;

namespace {

constexpr size_t kMaxLine = 64 << 10;
constexpr size_t kBlock = 1 << 20;
constexpr uint64_t kMaxHasBatch = 4096;  // ids per has request
constexpr uint64_t kMaxObjectSize = uint64_t{1} << 50;
// The most ranges a server's put-ranges answer may name (merged, they are
// the gaps a cut try left: one per connection it had, or a few more).
constexpr uint64_t kMaxHeldRanges = 1 << 16;

// One side of a session: lines and counted payloads over a Channel. Once
// the stream fails or goes out of step the Wire is broken and the session
// must end; an error of the sink a payload goes to is not (the payload is
// still read to its end).
class Wire {
 public:
  // `timeout`: seconds a read or write may wait with nothing moving (0:
  // for ever, as a server waits for its client's next request);
  // `low_speed`: the slowest the other side may send or take bytes (off:
  // a server waits for its client).
  explicit Wire(Channel& channel, double timeout = 0, LowSpeed low_speed = {})
      : channel_(channel), buffer_(kMaxLine), timeout_(timeout) {
    channel_.SetTimeout(timeout);
    channel_.SetLowSpeed(low_speed);
  }

  bool broken() const { return broken_; }
  // Broken because the other side went quiet for the whole timeout, or
  // moved bytes slower than the low-speed limit.
  bool stalled() const { return stalled_; }

  // The next line without its '\n'; nullopt when the other side closed its
  // end between lines.
  Result<std::optional<std::string>> ReadLine() {
    for (;;) {
      const auto* newline = static_cast<const char*>(std::memchr(buffer_.data() + begin_, '\n', end_ - begin_));
      if (newline != nullptr) {
        const size_t n = static_cast<size_t>(newline - buffer_.data()) - begin_;
        std::string line(buffer_.data() + begin_, n);
        begin_ += n + 1;
        return std::optional<std::string>(std::move(line));
      }
      if (end_ - begin_ == buffer_.size())
        return Break("a line longer than 64 KiB (out of step with the store protocol: bytes where a line belongs)");
      if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      ZIPNN_ASSIGN_OR_RETURN(size_t got, Fill(buffer_.data() + end_, buffer_.size() - end_));
      if (got == 0) {
        if (end_ == begin_) return std::optional<std::string>();
        return Break("the connection ended in the middle of a line");
      }
      end_ += got;
    }
  }

  // Reads a payload of `n` bytes into `out` (nullptr: drops it). With
  // `drain`, a sink error is returned after the payload has been read
  // through, keeping the session in step (a server refusing a put);
  // without, the first sink error ends the read and breaks the session
  // (a client does not go on reading what it cannot keep).
  Status ReadPayload(uint64_t n, ByteSink* out, bool drain) {
    Status sink;
    auto give = [&](const char* data, size_t k) {
      if (out != nullptr && sink.ok()) sink = out->Append(data, k);
      if (!sink.ok() && !drain) broken_ = true;
    };
    const size_t buffered = static_cast<size_t>(std::min<uint64_t>(n, end_ - begin_));
    give(buffer_.data() + begin_, buffered);
    begin_ += buffered;
    n -= buffered;
    if (n > 0 && block_.size() == 0) block_ = Buffer(kBlock);
    while (n > 0 && !broken_) {
      ZIPNN_ASSIGN_OR_RETURN(size_t got,
                             Fill(block_.data(), static_cast<size_t>(std::min<uint64_t>(n, block_.size()))));
      if (got == 0) return Break("the connection ended in the middle of an object");
      give(reinterpret_cast<const char*>(block_.data()), got);
      n -= got;
    }
    return sink;
  }

  Status Send(const std::string& text) {
    const Clock::time_point start = Clock::now();
    return Guard(channel_.Write(text.data(), text.size()), start);
  }

  // The object's bytes from `from` on, up to `to`.
  Status SendObject(const ByteSource& object, uint64_t from = 0, uint64_t to = UINT64_MAX) {
    if (block_.size() == 0) block_ = Buffer(kBlock);
    const uint64_t end = std::min(to, object.size());
    for (uint64_t at = from; at < end; at += block_.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(block_.size(), end - at));
      Status read = object.ReadAt(at, block_.data(), n);
      if (!read.ok()) {  // the other side waits for bytes that will not come
        broken_ = true;
        return read;
      }
      const Clock::time_point start = Clock::now();
      ZIPNN_RETURN_IF_ERROR(Guard(channel_.Write(block_.data(), n), start));
    }
    return OkStatus();
  }

  Status Break(const std::string& why) {
    broken_ = true;
    return IoError(why);
  }

 private:
  using Clock = std::chrono::steady_clock;

  Result<size_t> Fill(void* out, size_t n) {
    const Clock::time_point start = Clock::now();
    Result<size_t> got = channel_.Read(out, n);
    if (!got.ok()) return Guard(got.status(), start);
    return got;
  }
  // A failed read or write breaks the session; one that failed after
  // waiting the whole timeout means the other side stopped answering.
  Status Guard(Status st, Clock::time_point start) {
    if (st.ok()) return st;
    broken_ = true;
    if (StartsWith(st.message(), kTooSlow)) {  // a trickle: as good as stopped
      stalled_ = true;
      return IoError("the store server is " + st.message());
    }
    if (timeout_ > 0 && std::chrono::duration<double>(Clock::now() - start).count() >= timeout_ * 0.9) {
      stalled_ = true;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_);
      return IoError(std::string("the store server stopped answering: nothing moved for ") + seconds +
                     " s (the timeout: " + kTimeoutSetting + ")");
    }
    return st;
  }

  Channel& channel_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  Buffer block_;
  const double timeout_;
  bool broken_ = false;
  bool stalled_ = false;
};

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  size_t at = 0;
  while (at <= line.size()) {
    const size_t space = std::min(line.find(' ', at), line.size());
    words.push_back(line.substr(at, space - at));
    at = space + 1;
  }
  return words;
}


// A request line that does not parse ends the session: the stream may be
// out of step.
Status BadRequest(Wire& wire, const std::string& line) {
  return wire.Break("not a store request: \"" + line.substr(0, 80) + "\"");
}

Status ServeHas(const ObjectStore& store, Wire& wire, uint64_t n) {
  // The whole request first, then the checks (each reads an object
  // through): a client measures how fast its request is taken, and the
  // time spent checking is thinking before the answer, which it does not.
  std::vector<ContentId> ids;
  for (uint64_t i = 0; i < n; ++i) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
    std::optional<ContentId> id = line ? ContentId::FromHex(*line) : std::nullopt;
    if (!id) return wire.Break("a has request with a line that is not an object id");
    ids.push_back(*id);
  }
  std::string answer = "ok ";
  for (const ContentId& id : ids) answer += HoldsIntact(store, id) ? '1' : '0';  // a damaged copy is sent again
  return wire.Send(answer + "\n");
}

// Whether `tag` may name a copy of an object in the store protocol (a
// client's file it is sending, a server's file it serves): hex digits and
// '-', as ReadFile::Identity gives, which a client also puts in the name
// of the file it keeps a download in.
bool ValidTag(const std::string& tag) {
  return !tag.empty() && tag.size() <= 64 && tag.find_first_not_of("0123456789abcdef-") == std::string::npos;
}

Status ServeGet(const ObjectStore& store, Wire& wire, const ContentId& id) {
  Result<ReadFile> object = store.Open(id);
  if (object.status().code() == StatusCode::kNotFound) return wire.Send("missing\n");
  if (!object.ok()) return wire.Send("error " + object.status().message() + "\n");
  ZIPNN_RETURN_IF_ERROR(wire.Send("ok " + std::to_string(object->size()) + "\n"));
  return wire.SendObject(*object);
}

// A get that resumes: the client kept `from` bytes of the copy `tag`
// names. The answer names the copy served and where its bytes start: at
// `from` when that is the copy the client kept from, else at 0.
Status ServeGetFrom(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t from, const std::string& tag) {
  Result<ReadFile> object = store.Open(id);
  if (object.status().code() == StatusCode::kNotFound) return wire.Send("missing\n");
  if (!object.ok()) return wire.Send("error " + object.status().message() + "\n");
  std::string copy = object->Identity();
  if (!ValidTag(copy)) copy = "-";
  if (copy == "-" || copy != tag || from > object->size()) from = 0;
  ZIPNN_RETURN_IF_ERROR(wire.Send("ok " + std::to_string(object->size()) + " " + copy + " " + std::to_string(from) + "\n"));
  return wire.SendObject(*object, from);
}

// A range of an object, for a client that fetches one object in ranges
// on several connections at once: bytes [from, to) (within the object)
// of the copy `tag` names, or of the copy served when `tag` is "-". The
// answer names the size, the copy served and where the bytes start, and
// how many follow: none when `tag` names another copy.
Status ServeGetRange(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t from, uint64_t to,
                     const std::string& tag) {
  Result<ReadFile> object = store.Open(id);
  if (object.status().code() == StatusCode::kNotFound) return wire.Send("missing\n");
  if (!object.ok()) return wire.Send("error " + object.status().message() + "\n");
  std::string copy = object->Identity();
  if (!ValidTag(copy)) copy = "-";
  const uint64_t size = object->size();
  from = std::min(from, size);
  const uint64_t n = tag == "-" || tag == copy ? std::min(to, size) - from : 0;
  ZIPNN_RETURN_IF_ERROR(wire.Send("ok " + std::to_string(size) + " " + copy + " " + std::to_string(from) + " " +
                                  std::to_string(n) + "\n"));
  return wire.SendObject(*object, from, from + n);
}

// An object takes its name only once it decodes to its id (against its
// base, which the client sent first): a client could forge the id an
// object carries, checksums and all.
Status CheckDecodes(const ObjectStore& store, const std::string& temp, const ContentId& id) {
  ZIPNN_RETURN_IF_ERROR(CheckObjectFile(temp, id));
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(temp));
  const Store local{store, "", "", "", config::Policy{}};
  CountingSink decoded;
  return DecodeReceived(local, object, id, nullptr, decoded);
}

// Receives an object of `size` bytes through `receive` (which hands the
// bytes to the writer it is given when it takes them), reads what it did
// not take, and answers with `ok` plus what `done` adds, or the error.
template <typename T>
Status Answered(Wire& wire, uint64_t size,
                const std::function<Result<T>(const std::function<Status(AtomicFile&)>&)>& receive,
                const std::function<std::string(const T&)>& done) {
  bool read = false;
  Result<T> got = receive([&](AtomicFile& out) {
    read = true;
    return wire.ReadPayload(size, &out, /*drain=*/true);
  });
  if (wire.broken()) return got.status();
  if (!read) ZIPNN_RETURN_IF_ERROR(wire.ReadPayload(size, nullptr, /*drain=*/true));  // no place to write it
  return wire.Send(got.ok() ? "ok" + done(*got) + "\n" : "error " + got.status().message() + "\n");
}

Status ServePut(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size) {
  return Answered<bool>(
      wire, size,
      [&](const std::function<Status(AtomicFile&)>& write) -> Result<bool> {
        ZIPNN_RETURN_IF_ERROR(
            store::ReceiveObject(store, id, write, [&](const std::string& temp) { return CheckDecodes(store, temp, id); }));
        return true;
      },
      [](const bool&) { return std::string(); });
}

// A put that resumes (store::ResumedArrival): the answer says how many
// bytes of the copy `tag` names the server kept from the client's tries
// before, and the client sends the rest. A session cut short keeps what
// came for the next try.
Status ServePutFrom(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size, const std::string& tag) {
  Result<std::unique_ptr<store::ResumedArrival>> arrival = store::ResumedArrival::Open(store, id, size, tag);
  if (!arrival.ok()) return wire.Send("error " + arrival.status().message() + "\n");
  store::ResumedArrival& in = **arrival;
  ZIPNN_RETURN_IF_ERROR(wire.Send("ok " + std::to_string(in.have()) + "\n"));
  Status got = wire.ReadPayload(size - in.have(), &in, /*drain=*/true);
  if (wire.broken()) return got;
  if (got.ok()) got = in.Finish([&](const std::string& temp) { return CheckDecodes(store, temp, id); });
  return wire.Send(got.ok() ? "ok\n" : "error " + got.message() + "\n");
}

// An arrival in ranges (store::RangedArrival), for a client that sends one
// object in ranges on several connections at once: put-ranges makes its
// files (or keeps them, of this size and copy) and answers the ranges
// held, merged; put-range writes one range where it lies and notes it
// (what came of it, when the session is cut short); put-end proves the
// object and gives it its name.
Status ServePutRanges(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size,
                      const std::string& tag) {
  Result<std::unique_ptr<store::RangedArrival>> arrival = store::RangedArrival::Open(store, id, size, tag, true);
  if (!arrival.ok()) return wire.Send("error " + arrival.status().message() + "\n");
  const std::vector<Range> held = Covered((*arrival)->Noted(), size);
  std::string answer = "ok " + std::to_string(held.size()) + "\n";
  for (const auto& [from, to] : held) answer += std::to_string(from) + " " + std::to_string(to) + "\n";
  return wire.Send(answer);
}

Status ServePutRange(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t from, uint64_t to,
                     const std::string& tag, uint64_t size) {
  Result<std::unique_ptr<store::RangedArrival>> arrival = store::RangedArrival::Open(store, id, size, tag, false);
  if (!arrival.ok() || to > size) {
    ZIPNN_RETURN_IF_ERROR(wire.ReadPayload(to - from, nullptr, /*drain=*/true));
    return wire.Send("error " + (arrival.ok() ? "the range ends past the object" : arrival.status().message()) + "\n");
  }
  store::RangedArrival& in = **arrival;
  PlacedSink at([&](uint64_t where, const void* data, size_t n) { return in.WriteAt(where, data, n); }, from);
  Status got = wire.ReadPayload(to - from, &at, /*drain=*/true);
  if (at.at() > from) {  // what came, also of a session cut short
    const Status noted = in.Note(from, at.at());
    if (got.ok()) got = noted;
  }
  if (wire.broken()) return got;
  return wire.Send(got.ok() ? "ok\n" : "error " + got.message() + "\n");
}

Status ServePutEnd(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size, const std::string& tag) {
  Result<std::unique_ptr<store::RangedArrival>> arrival = store::RangedArrival::Open(store, id, size, tag, false);
  Status st = arrival.status();
  if (st.ok()) st = (*arrival)->Finish([&](const std::string& temp) { return CheckDecodes(store, temp, id); });
  return wire.Send(st.ok() ? "ok\n" : "error " + st.message() + "\n");
}

// A delta in place of the standalone object for `id` (RemoteStore::Demote),
// proven like a put: it must decode to `id` against the base this store
// holds.
Status ServeDemote(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size) {
  return Answered<uint64_t>(
      wire, size,
      [&](const std::function<Status(AtomicFile&)>& write) {
        return store::DemoteObject(store, id, write, [&](const std::string& temp) { return CheckDecodes(store, temp, id); });
      },
      [](const uint64_t& replaced) { return " " + std::to_string(replaced); });
}

// Retention (RemoteStore::Replace): any object in place of `id`'s, proven
// like a put.
Status ServeReplace(const ObjectStore& store, Wire& wire, const ContentId& id, uint64_t size) {
  return Answered<bool>(
      wire, size,
      [&](const std::function<Status(AtomicFile&)>& write) -> Result<bool> {
        ZIPNN_RETURN_IF_ERROR(
            store::ReplaceObject(store, id, write, [&](const std::string& temp) { return CheckDecodes(store, temp, id); }));
        return true;
      },
      [](const bool&) { return std::string(); });
}

// Retention (RemoteStore::RemoveUnneeded): the ids, then at once under
// the store's lock, each removed unless what stays rests on it; the
// answer names each kept one and an object that rests on it.
Status ServePrune(const ObjectStore& store, Wire& wire, uint64_t n) {
  std::set<ContentId> ids;
  for (uint64_t i = 0; i < n; ++i) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
    std::optional<ContentId> id = line ? ContentId::FromHex(*line) : std::nullopt;
    if (!id) return wire.Break("a prune request with a line that is not an object id");
    ids.insert(*id);
  }
  Result<Pruned> pruned = store::PruneObjects(store, ids);
  if (!pruned.ok()) return wire.Send("error " + pruned.status().message() + "\n");
  std::string answer = "ok " + std::to_string(pruned->kept.size()) + "\n";
  for (const auto& [kept, above] : pruned->kept) answer += kept.Hex() + " " + above.Hex() + "\n";
  return wire.Send(answer);
}

Status ServeStat(const ObjectStore& store, Wire& wire, const ContentId& id) {
  Result<std::optional<Held>> held = store::StatObject(store, id);
  if (!held.ok()) return wire.Send("error " + held.status().message() + "\n");
  if (!*held) return wire.Send("missing\n");
  return wire.Send("ok " + std::to_string((*held)->size) + " " + ((*held)->base ? (*held)->base->Hex() : "-") + "\n");
}

// A small text the client sends (a retention record, a base note), kept
// by `keep`, which checks it first.
Status ServeTextPut(Wire& wire, uint64_t size, const std::function<Status(const std::string&)>& keep) {
  MemorySink text;
  ZIPNN_RETURN_IF_ERROR(wire.ReadPayload(size, &text, /*drain=*/true));
  const std::vector<uint8_t> bytes = text.ToVector();
  const Status st = keep(std::string(bytes.begin(), bytes.end()));
  return wire.Send(st.ok() ? "ok\n" : "error " + st.message() + "\n");
}

Status ServeTextGet(Wire& wire, const Result<std::optional<std::string>>& text) {
  if (!text.ok()) return wire.Send("error " + text.status().message() + "\n");
  if (!*text) return wire.Send("missing\n");
  return wire.Send("ok " + std::to_string((*text)->size()) + "\n" + **text);
}

// What a request line names after its verb, parsed as its verb's Shape
// says.
struct Args {
  ContentId id;
  uint64_t n = 0;  // a count of ids (has, prune), a payload's size, or where a get resumes
  const SideKindInfo* side = nullptr;
  std::string tag;    // which copy of the object (put-from, get-from, get-range)
  uint64_t to = 0;    // where a range ends (get-range, put-range; `n` is where it starts)
  uint64_t size = 0;  // the object's (put-range)
};

// The words a request takes after its verb.
enum class Shape {
  kNone,            // list
  kCount,           // has <n>
  kId,              // get <id>
  kIdSize,          // put <id> <size>
  kSideId,          // get-side <kind> <id>
  kSideIdSize,      // put-side <kind> <id> <size>
  kIdSizeTag,       // put-from <id> <size> <tag>, get-from <id> <from> <tag>
  kIdRangeTag,      // get-range <id> <from> <to> <tag>
  kIdRangeTagSize,  // put-range <id> <from> <to> <tag> <size>
};

Status ServeHasVerb(const ObjectStore& store, Wire& wire, const Args& a) { return ServeHas(store, wire, a.n); }
Status ServeGetVerb(const ObjectStore& store, Wire& wire, const Args& a) { return ServeGet(store, wire, a.id); }
Status ServeGetFromVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeGetFrom(store, wire, a.id, a.n, a.tag);
}
Status ServeGetRangeVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeGetRange(store, wire, a.id, a.n, a.to, a.tag);
}
Status ServePutRangesVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServePutRanges(store, wire, a.id, a.n, a.tag);
}
Status ServePutRangeVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServePutRange(store, wire, a.id, a.n, a.to, a.tag, a.size);
}
Status ServePutEndVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServePutEnd(store, wire, a.id, a.n, a.tag);
}
Status ServePutFromVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServePutFrom(store, wire, a.id, a.n, a.tag);
}
Status ServePutVerb(const ObjectStore& store, Wire& wire, const Args& a) { return ServePut(store, wire, a.id, a.n); }
Status ServeDemoteVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeDemote(store, wire, a.id, a.n);
}
Status ServeReplaceVerb(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeReplace(store, wire, a.id, a.n);
}
Status ServeStatVerb(const ObjectStore& store, Wire& wire, const Args& a) { return ServeStat(store, wire, a.id); }
Status ServeRemove(const ObjectStore& store, Wire& wire, const Args& a) {
  const Status st = store::RemoveObject(store, a.id);
  return wire.Send(st.ok() ? "ok\n" : "error " + st.message() + "\n");
}
Status ServePruneVerb(const ObjectStore& store, Wire& wire, const Args& a) { return ServePrune(store, wire, a.n); }
Status ServeList(const ObjectStore& store, Wire& wire, const Args&) {
  Result<std::vector<ContentId>> ids = store::ListObjects(store);
  if (!ids.ok()) return wire.Send("error " + ids.status().message() + "\n");
  std::string answer = "ok " + std::to_string(ids->size()) + "\n";
  for (const ContentId& i : *ids) answer += i.Hex() + "\n";
  return wire.Send(answer);
}
// A side file of any kind (SideKind), kept by its kind's own check.
Status ServeSidePut(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeTextPut(wire, a.n, [&](const std::string& text) { return a.side->keep(store, a.id, text); });
}
Status ServeSideGet(const ObjectStore& store, Wire& wire, const Args& a) {
  return ServeTextGet(wire, a.side->read(store, a.id));
}

// The requests a server answers. put-note, get-note, put-record and
// get-record are put-side and get-side of one kind each, from before
// those two: a client sends them still, so that the servers of those
// releases understand it (SideKindInfo::put_verb), and a server answers
// both.
struct Verb {
  const char* name;
  Shape shape;
  Status (*serve)(const ObjectStore& store, Wire& wire, const Args& a);
  std::optional<SideKind> side;  // the kind an old side-file request names
};
const Verb kVerbs[] = {
    {"has", Shape::kCount, ServeHasVerb, std::nullopt},
    {"get", Shape::kId, ServeGetVerb, std::nullopt},
    {"put", Shape::kIdSize, ServePutVerb, std::nullopt},
    {"get-from", Shape::kIdSizeTag, ServeGetFromVerb, std::nullopt},
    {"put-from", Shape::kIdSizeTag, ServePutFromVerb, std::nullopt},
    {"get-range", Shape::kIdRangeTag, ServeGetRangeVerb, std::nullopt},
    {"put-ranges", Shape::kIdSizeTag, ServePutRangesVerb, std::nullopt},
    {"put-range", Shape::kIdRangeTagSize, ServePutRangeVerb, std::nullopt},
    {"put-end", Shape::kIdSizeTag, ServePutEndVerb, std::nullopt},
    {"demote", Shape::kIdSize, ServeDemoteVerb, std::nullopt},
    {"replace", Shape::kIdSize, ServeReplaceVerb, std::nullopt},
    {"stat", Shape::kId, ServeStatVerb, std::nullopt},
    {"remove", Shape::kId, ServeRemove, std::nullopt},
    {"prune", Shape::kCount, ServePruneVerb, std::nullopt},
    {"list", Shape::kNone, ServeList, std::nullopt},
    {"put-side", Shape::kSideIdSize, ServeSidePut, std::nullopt},
    {"get-side", Shape::kSideId, ServeSideGet, std::nullopt},
    {"put-record", Shape::kIdSize, ServeSidePut, SideKind::kRecord},
    {"get-record", Shape::kId, ServeSideGet, SideKind::kRecord},
    {"put-note", Shape::kIdSize, ServeSidePut, SideKind::kBaseNote},
    {"get-note", Shape::kId, ServeSideGet, SideKind::kBaseNote},
};

// A side-file request of a kind this server does not keep (a newer
// client's): its payload is read through, and the answer is an error.
Status RefuseSide(Wire& wire, const std::string& kind, std::optional<uint64_t> payload) {
  if (payload) ZIPNN_RETURN_IF_ERROR(wire.ReadPayload(*payload, nullptr, /*drain=*/true));
  return wire.Send("error this store server keeps no side file of kind " + kind.substr(0, 80) + "\n");
}

}  // namespace

Status ServeStore(const ObjectStore& store, Channel& client) {
  Wire wire(client);
  ZIPNN_RETURN_IF_ERROR(wire.Send(std::string(kStoreProtocolGreeting) + "\n"));
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
    if (!line) return OkStatus();
    const std::vector<std::string> w = Words(*line);
    const Verb* verb = nullptr;
    for (const Verb& v : kVerbs) {
      if (w[0] == v.name) verb = &v;
    }
    if (verb == nullptr) return BadRequest(wire, *line);
    Args a;
    if (verb->side) a.side = &Side(*verb->side);
    // The words after the verb: a side file's kind first, then an id,
    // then a count or a size.
    size_t at = 1;
    std::string side_name;
    if (verb->shape == Shape::kSideId || verb->shape == Shape::kSideIdSize) {
      if (w.size() < 2) return BadRequest(wire, *line);
      side_name = w[at++];
      a.side = SideNamed(side_name);
    }
    const bool takes_id = verb->shape != Shape::kNone && verb->shape != Shape::kCount;
    const bool takes_size = verb->shape == Shape::kIdRangeTagSize;
    const bool takes_range = verb->shape == Shape::kIdRangeTag || takes_size;
    const bool takes_number = verb->shape == Shape::kCount || verb->shape == Shape::kIdSize ||
                              verb->shape == Shape::kSideIdSize || verb->shape == Shape::kIdSizeTag || takes_range;
    const bool takes_tag = verb->shape == Shape::kIdSizeTag || takes_range;
    if (w.size() != at + (takes_id ? 1 : 0) + (takes_number ? 1 : 0) + (takes_range ? 1 : 0) + (takes_tag ? 1 : 0) +
                        (takes_size ? 1 : 0)) {
      return BadRequest(wire, *line);
    }
    if (takes_id) {
      const std::optional<ContentId> id = ContentId::FromHex(w[at++]);
      if (!id) return BadRequest(wire, *line);
      a.id = *id;
    }
    if (takes_number) {
      const uint64_t max = verb->shape == Shape::kCount ? kMaxHasBatch
                           : a.side != nullptr         ? a.side->max_bytes
                           : verb->shape == Shape::kSideIdSize ? store::kMaxRecordBytes  // an unknown kind's, read through
                                                               : kMaxObjectSize;
      const std::optional<uint64_t> n = DecimalAtMost(w[at], max);
      if (!n) return BadRequest(wire, *line);
      a.n = *n;
    }
    if (takes_range) {  // the end of a range, past its start
      const std::optional<uint64_t> to = DecimalAtMost(w[++at], kMaxObjectSize);
      if (!to || *to < a.n) return BadRequest(wire, *line);
      a.to = *to;
    }
    if (takes_tag) {
      a.tag = w[at + 1];
      if (a.tag != "-" && !ValidTag(a.tag)) return BadRequest(wire, *line);
    }
    if (takes_size) {  // the object's, which the range lies in
      const std::optional<uint64_t> size = DecimalAtMost(w[at + 2], kMaxObjectSize);
      if (!size) return BadRequest(wire, *line);
      a.size = *size;
    }
    if (!side_name.empty() && a.side == nullptr) {
      ZIPNN_RETURN_IF_ERROR(
          RefuseSide(wire, side_name, takes_number ? std::optional<uint64_t>(a.n) : std::nullopt));
      continue;
    }
    ZIPNN_RETURN_IF_ERROR(verb->serve(store, wire, a));
  }
}

Status RefuseToServe(Channel& client, const std::string& why) {
  std::string line = why;
  std::replace(line.begin(), line.end(), '\n', ' ');
  line = "error " + line.substr(0, kMaxLine - 16) + "\n";
  return client.Write(line.data(), line.size());
}

namespace {

// One connection, greeted.
struct Session {
  std::unique_ptr<Channel> channel;
  Wire wire;
  Session(std::unique_ptr<Channel> c, double timeout, LowSpeed low_speed)
      : channel(std::move(c)), wire(*channel, timeout, low_speed) {}
};

class Served : public RemoteStore,
               public SideFiles,
               public Retention,
               public LockedRemoval,
               public Demotion,
               public KeptGets {
 public:
  Served(std::string where, StoreConnector connect, std::string no_answer, double timeout, LowSpeed low_speed,
         std::string partial_dir, int connections)
      : where_(std::move(where)),
        connect_(std::move(connect)),
        no_answer_(std::move(no_answer)),
        timeout_(timeout),
        low_speed_(low_speed),
        partial_dir_(std::move(partial_dir)),
        connections_(std::max(1, connections)),
        slots_(connections_) {}

  const std::string& where() const override { return where_; }

  Capabilities capabilities() override {
    Capabilities c;
    c.side_files = this;
    c.retention = this;
    c.locked_removal = this;
    c.demotion = this;
    if (!partial_dir_.empty()) c.kept_gets = this;
    return c;
  }

  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override {
    std::vector<bool> has;
    has.reserve(ids.size());
    ZIPNN_RETURN_IF_ERROR(WithSession([&](Wire& wire) -> Status {
      for (size_t from = 0; from < ids.size(); from += kMaxHasBatch) {
        const size_t n = std::min<size_t>(kMaxHasBatch, ids.size() - from);
        std::string request = "has " + std::to_string(n) + "\n";
        for (size_t i = from; i < from + n; ++i) request += ids[i].Hex() + "\n";
        ZIPNN_RETURN_IF_ERROR(wire.Send(request));
        ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
        if (answer.size() != 3 + n || answer.compare(0, 3, "ok ") != 0 ||
            answer.find_first_not_of("01", 3) != std::string::npos) {
          return Unexpected(wire, answer);
        }
        for (size_t i = 0; i < n; ++i) has.push_back(answer[3 + i] == '1');
      }
      return OkStatus();
    }));
    return has;
  }

  Status Put(const ContentId& id, const ByteSource& object) override {
    return WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("put " + id.Hex() + " " + std::to_string(object.size()) + "\n"));
      ZIPNN_RETURN_IF_ERROR(wire.SendObject(object));
      return Accepted(wire);
    });
  }

  // A file of this machine large enough to be worth it goes by put-from:
  // what the server kept of an earlier try that was cut short (of this
  // same file: its Identity) is not sent again. A server of a release
  // before put-from ends the session at the request; it is sent whole,
  // by put, from then on.
  Status PutFile(const ContentId& id, const ReadFile& object) override {
    const std::string tag = object.Identity();
    if (object.size() < kResumableBytes || !ValidTag(tag) || no_resume_) return Put(id, object);
    bool unknown = false;
    if (connections_ > 1 && object.size() > kSpreadPart && !no_put_ranges_) {
      const Status st = PutSpread(id, object, tag, unknown);
      if (!unknown) return st;
    }
    const Status st = Resuming(unknown, [&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(
          wire.Send("put-from " + id.Hex() + " " + std::to_string(object.size()) + " " + tag + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
      if (!line) {
        unknown = true;
        return wire.Break("the store server closed the connection");
      }
      const std::string& answer = *line;
      if (answer.rfind("error ", 0) == 0) return IoError("the server refused it: " + answer.substr(6));
      const std::vector<std::string> w = Words(answer);
      const std::optional<uint64_t> have = w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], object.size()) : std::nullopt;
      if (!have) return Unexpected(wire, answer);
      Carry(id.Hex(), *have);  // what the server kept of an earlier try
      ZIPNN_RETURN_IF_ERROR(wire.SendObject(object, *have));
      return Accepted(wire);
    });
    if (!unknown) return st;
    return Put(id, object);
  }

  Result<uint64_t> Demote(const ContentId& id, const ReadFile& delta) override {
    uint64_t replaced = 0;
    ZIPNN_RETURN_IF_ERROR(WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("demote " + id.Hex() + " " + std::to_string(delta.size()) + "\n"));
      ZIPNN_RETURN_IF_ERROR(wire.SendObject(delta));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      if (answer.rfind("error ", 0) == 0) return IoError("the server refused it: " + answer.substr(6));
      const std::vector<std::string> w = Words(answer);
      const std::optional<uint64_t> size = w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], kMaxObjectSize) : std::nullopt;
      if (!size) return Unexpected(wire, answer);
      replaced = *size;
      return OkStatus();
    }));
    return replaced;
  }

  Result<std::optional<Held>> Stat(const ContentId& id) override {
    std::optional<Held> held;
    ZIPNN_RETURN_IF_ERROR(Retaining(WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("stat " + id.Hex() + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      if (answer == "missing") return OkStatus();
      if (answer.rfind("error ", 0) == 0) return IoError("the server could not read it: " + answer.substr(6));
      const std::vector<std::string> w = Words(answer);
      const std::optional<uint64_t> size = w.size() == 3 && w[0] == "ok" ? DecimalAtMost(w[1], kMaxObjectSize) : std::nullopt;
      const std::optional<ContentId> base = w.size() == 3 ? ContentId::FromHex(w[2]) : std::nullopt;
      if (!size || (!base && w[2] != "-")) return Unexpected(wire, answer);
      held = Held{*size, base};
      return OkStatus();
    })));
    return held;
  }

  Status Replace(const ContentId& id, const ReadFile& object) override {
    return Retaining(Request("replace " + id.Hex() + " " + std::to_string(object.size()) + "\n", &object));
  }

  Status Remove(const ContentId& id) override { return Retaining(Request("remove " + id.Hex() + "\n", nullptr)); }

  // The ids in batches; each batch is one look and removal under the
  // server's lock (a kept one is kept whichever batch names what rests
  // on it: the server sees every object it holds).
  Result<Pruned> RemoveUnneeded(const std::set<ContentId>& ids) override {
    Pruned pruned;
    const std::vector<ContentId> all(ids.begin(), ids.end());
    ZIPNN_RETURN_IF_ERROR(Pruning(WithSession([&](Wire& wire) -> Status {
      for (size_t from = 0; from < all.size(); from += kMaxHasBatch) {
        const size_t n = std::min<size_t>(kMaxHasBatch, all.size() - from);
        std::string request = "prune " + std::to_string(n) + "\n";
        for (size_t i = from; i < from + n; ++i) request += all[i].Hex() + "\n";
        ZIPNN_RETURN_IF_ERROR(wire.Send(request));
        ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
        if (answer.rfind("error ", 0) == 0) return IoError("the server refused it: " + answer.substr(6));
        const std::vector<std::string> w = Words(answer);
        const std::optional<uint64_t> k = w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], n) : std::nullopt;
        if (!k) return Unexpected(wire, answer);
        std::set<ContentId> kept;
        for (uint64_t i = 0; i < *k; ++i) {
          ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
          const std::vector<std::string> pair = line ? Words(*line) : std::vector<std::string>();
          std::optional<ContentId> id = pair.size() == 2 ? ContentId::FromHex(pair[0]) : std::nullopt;
          std::optional<ContentId> above = pair.size() == 2 ? ContentId::FromHex(pair[1]) : std::nullopt;
          if (!id || !above) return wire.Break("the store server kept something that is not an object id");
          kept.insert(*id);
          pruned.kept.emplace_back(*id, *above);
        }
        for (size_t i = from; i < from + n; ++i) {
          if (kept.count(all[i]) == 0) pruned.removed.push_back(all[i]);
        }
      }
      return OkStatus();
    })));
    return pruned;
  }

  Result<std::vector<ContentId>> List() override {
    std::vector<ContentId> ids;
    ZIPNN_RETURN_IF_ERROR(Retaining(WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("list\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      if (answer.rfind("error ", 0) == 0) return IoError("the server could not read it: " + answer.substr(6));
      const std::vector<std::string> w = Words(answer);
      const std::optional<uint64_t> n = w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], kMaxObjectSize) : std::nullopt;
      if (!n) return Unexpected(wire, answer);
      for (uint64_t i = 0; i < *n; ++i) {
        ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
        std::optional<ContentId> id = line ? ContentId::FromHex(*line) : std::nullopt;
        if (!id) return wire.Break("the store server listed something that is not an object id");
        ids.push_back(*id);
      }
      return OkStatus();
    })));
    return ids;
  }

  // Each kind by the request of its own that servers of the releases
  // before put-side know (SideKindInfo::put_verb); a kind without one by
  // put-side. Base notes are asked for until the server shows it does not
  // know them (a git-zipnn from before base notes ends the session at
  // such a request); a server from before retention is told to upgrade.
  Status PutSide(SideKind kind, const ContentId& id, const std::string& text) override {
    const SideKindInfo& side = Side(kind);
    if (kind == SideKind::kBaseNote && no_notes_) return Unsupported(where_ + " keeps no base notes");
    const MemorySource payload(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                               std::string(side.short_what) + " of " + id.Hex());
    const std::string verb = side.put_verb != nullptr ? side.put_verb : std::string("put-side ") + side.name;
    return Compatible(kind, Request(verb + " " + id.Hex() + " " + std::to_string(text.size()) + "\n", &payload));
  }

  Result<std::optional<std::string>> GetSide(SideKind kind, const ContentId& id) override {
    const SideKindInfo& side = Side(kind);
    if (kind == SideKind::kBaseNote && no_notes_) return std::optional<std::string>();
    const std::string verb = side.get_verb != nullptr ? side.get_verb : std::string("get-side ") + side.name;
    Result<std::optional<std::string>> text = GetText(verb + " " + id.Hex() + "\n", side.max_bytes);
    ZIPNN_RETURN_IF_ERROR(Compatible(kind, text.status()));
    return text;
  }

  // With a folder to keep downloads in, by get-from: an object of 1 MiB
  // or more is kept there as it comes in (<id>-<the word naming the
  // server's copy>), and a download cut short resumes from what was kept
  // of that same copy; a server of a release before get-from is asked by
  // get from then on.
  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override {
    if (partial_dir_.empty() || no_resume_) return GetWhole(id, limit, out);
    bool unknown = false;
    Result<std::unique_ptr<Partial>> got = GetFrom(id, limit, out, /*keep_all=*/false, unknown);
    if (unknown) return GetWhole(id, limit, out);
    if (!got.ok()) return got.status();
    if (*got) (*got)->Done(OkStatus());  // in: not kept
    return OkStatus();
  }

  // The same, every object kept, and the kept file handed on whole. With
  // several connections, an object moves in ranges on all of them at once
  // (GetSpread), unless an earlier try kept the start of it by get-from,
  // which resumes as it was.
  Result<std::unique_ptr<Partial>> GetKept(const ContentId& id, uint64_t limit, ByteSink& check) override {
    if (partial_dir_.empty() || no_resume_) return Unsupported("no folder to keep downloads in");
    bool unknown = false;
    if (connections_ > 1 && !no_ranges_ && !FindKept(partial_dir_, id, ValidTag)) {
      Result<std::unique_ptr<Partial>> got = GetSpread(id, limit, check, unknown);
      if (!unknown) return got;
    }
    Result<std::unique_ptr<Partial>> got = GetFrom(id, limit, check, /*keep_all=*/true, unknown);
    if (unknown) return Unsupported("the server does not resume");
    if (got.ok() && !*got) return Unsupported("another process is downloading " + id.Hex());
    return got;
  }

 private:
  // Runs a request that resumes (put-from, get-from), which sets `unknown`
  // when the server closed the connection instead of answering: what a
  // server of a release before them does. One such close may be a
  // connection that dropped just then, so the request is tried once more
  // on a new connection; a second close means the server does not know
  // it, and `unknown` stays set for the caller to send the older request,
  // as every later one in this command is sent.
  Status Resuming(bool& unknown, const std::function<Status(Wire&)>& request) {
    return Newer(no_resume_, unknown, request);
  }
  // The same for any request a server of an older release does not know:
  // `not_known` is set when it closes twice.
  Status Newer(std::atomic<bool>& not_known, bool& unknown, const std::function<Status(Wire&)>& request) {
    Status st;
    for (int attempt = 0; attempt < 2; ++attempt) {
      unknown = false;
      st = WithSession(request);
      if (!unknown) return st;
    }
    not_known = true;
    return st;
  }

  uint64_t RangeSize(uint64_t size) const { return SpreadRangeSize(size, connections_); }

  // An upload in ranges, as many at once as there are connections: the
  // server says which ranges of this file (`tag`) it holds from tries
  // before (put-ranges), each other range goes on a connection of its own
  // (put-range), and the server proves the object and names it (put-end).
  // Sets `unknown` for a server that does not know put-ranges.
  Status PutSpread(const ContentId& id, const ReadFile& object, const std::string& tag, bool& unknown) {
    const uint64_t size = object.size();
    const std::string words = id.Hex() + " " + std::to_string(size) + " " + tag;
    std::vector<Range> held;
    ZIPNN_RETURN_IF_ERROR(Newer(no_put_ranges_, unknown, [&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("put-ranges " + words + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
      if (!line) {
        unknown = true;
        return wire.Break("the store server closed the connection");
      }
      if (line->rfind("error ", 0) == 0) return IoError("the server refused it: " + line->substr(6));
      const std::vector<std::string> w = Words(*line);
      const std::optional<uint64_t> k =
          w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], kMaxHeldRanges) : std::nullopt;
      if (!k) return Unexpected(wire, *line);
      for (uint64_t i = 0; i < *k; ++i) {
        ZIPNN_ASSIGN_OR_RETURN(std::string range, Answer(wire));
        const std::vector<std::string> r = Words(range);
        const std::optional<uint64_t> from = r.size() == 2 ? DecimalAtMost(r[0], size) : std::nullopt;
        const std::optional<uint64_t> to = r.size() == 2 ? DecimalAtMost(r[1], size) : std::nullopt;
        if (!from || !to || *from >= *to) return Unexpected(wire, range);
        held.emplace_back(*from, *to);
      }
      return OkStatus();
    }));
    Carry(id.Hex(), CoveredBytes(held, size));
    const std::vector<Range> ranges = CutRanges(Uncovered(held, size), RangeSize(size));
    ZIPNN_RETURN_IF_ERROR(RunAll(connections_, ranges.size(), [&](size_t k) -> Status {
      const uint64_t from = ranges[k].first, to = ranges[k].second;
      return WithSession([&](Wire& wire) -> Status {
        ZIPNN_RETURN_IF_ERROR(wire.Send("put-range " + id.Hex() + " " + std::to_string(from) + " " +
                                        std::to_string(to) + " " + tag + " " + std::to_string(size) + "\n"));
        ZIPNN_RETURN_IF_ERROR(wire.SendObject(object, from, to));
        return Accepted(wire);
      });
    }));
    return WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("put-end " + words + "\n"));
      return Accepted(wire);
    });
  }

  // The answer to a put: "ok", or the server's refusal.
  static Status Accepted(Wire& wire) {
    ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
    if (answer == "ok") return OkStatus();
    if (answer.rfind("error ", 0) == 0) return IoError("the server refused it: " + answer.substr(6));
    return Unexpected(wire, answer);
  }

  // A download in ranges (get-range), as many at once as there are
  // connections, into a SpreadPartial that a try cut short leaves for the
  // next. The first request asks for the first kSpreadPart bytes (none,
  // to learn the copy served, when an earlier try kept some) and learns
  // the object's size and the server's copy; an object no larger comes
  // whole, into a Partial. Returns the kept file, whole, as GetFrom does.
  // Sets `unknown` for a server that does not know get-range.
  Result<std::unique_ptr<Partial>> GetSpread(const ContentId& id, uint64_t limit, ByteSink& check, bool& unknown) {
    const std::string stem = id.Hex() + "-";
    std::unique_ptr<SpreadPartial> spread;
    std::string copy = "-";
    if (const std::optional<std::string> name = FindSpread(partial_dir_, id, ValidTag)) {
      spread = std::make_unique<SpreadPartial>(partial_dir_, *name, 0);
      copy = name->substr(stem.size());
      if (!spread->ok() && FindSpread(partial_dir_, id, ValidTag)) {
        return Unsupported("another process is downloading object " + id.Hex());
      }
      if (!spread->ok() || copy == "-") {  // empty, or of a copy the server could not name: of no use
        spread->Drop();
        spread.reset();
        copy = "-";
      }
    }
    const uint64_t first = spread ? 0 : kSpreadPart;
    uint64_t size = 0;
    std::unique_ptr<Partial> whole;  // an object of at most `first` bytes
    const Status asked = Newer(no_ranges_, unknown, [&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("get-range " + id.Hex() + " 0 " + std::to_string(first) + " " + copy + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
      if (!line) {
        unknown = true;
        return wire.Break("the store server closed the connection");
      }
      const std::vector<std::string> w = Words(*line);
      ZIPNN_ASSIGN_OR_RETURN(size, OfferedSize(wire, id, *line, w.size() == 5, limit));
      const std::string& served = w[2];
      const bool same = copy == "-" || served == copy;
      const std::optional<uint64_t> n = DecimalAtMost(w[4], size);
      if ((served != "-" && !ValidTag(served)) || w[3] != "0" || !n || *n != (same ? std::min(first, size) : 0)) {
        return Unexpected(wire, *line);
      }
      if (spread && (!same || spread->size() != size)) {  // another copy since: nothing kept is of it
        spread->Drop();
        spread.reset();
      }
      copy = served;
      if (spread) return OkStatus();
      if (size <= first) {
        whole = std::make_unique<Partial>(partial_dir_, stem + copy, size, /*any_size=*/true);
        if (!whole->ok() || (whole->have() > 0 && !whole->Restart().ok())) {
          whole.reset();
          (void)wire.Break("");
          return Unsupported("another process is downloading object " + id.Hex());
        }
        KeepingSink keep(check, *whole);
        return wire.ReadPayload(*n, &keep, /*drain=*/false);
      }
      spread = std::make_unique<SpreadPartial>(partial_dir_, stem + copy, size);
      if (!spread->ok()) {
        spread.reset();
        (void)wire.Break("");
        return Unsupported("another process is downloading object " + id.Hex());
      }
      return spread->Take(0, [&](ByteSink& into) { return wire.ReadPayload(*n, &into, /*drain=*/false); });
    });
    if (!asked.ok()) {
      if (whole) whole->Done(asked);
      if (spread && (asked.code() != StatusCode::kIoError || copy == "-")) spread->Drop();
      return asked;
    }
    Carry(id.Hex(), spread ? spread->earlier() : 0);  // of the copy the server serves, or none
    if (whole) return whole;

    // The rest, each range on a connection of its own.
    Result<std::unique_ptr<Partial>> got = FetchSpread(
        *spread, partial_dir_, stem + copy, id, connections_, RangeSize(size), copy != "-",
        [&](uint64_t from, uint64_t to, ByteSink& into, std::atomic<bool>& changed) {
          return WithSession([&](Wire& wire) -> Status {
            ZIPNN_RETURN_IF_ERROR(wire.Send("get-range " + id.Hex() + " " + std::to_string(from) + " " +
                                            std::to_string(to) + " " + copy + "\n"));
            ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
            const std::vector<std::string> w = Words(answer);
            ZIPNN_ASSIGN_OR_RETURN(const uint64_t now, OfferedSize(wire, id, answer, w.size() == 5, limit));
            if (now == size && w[2] != copy && w[4] == "0") {
              changed = true;
              return IoError("the store server's copy of object " + id.Hex() + " changed while it was fetched");
            }
            if (now != size || w[2] != copy || w[3] != std::to_string(from) || w[4] != std::to_string(to - from)) {
              return Unexpected(wire, answer);
            }
            return wire.ReadPayload(to - from, &into, /*drain=*/false);
          });
        },
        check);
    return got;
  }

  // A download by get-from into `out`, kept as it comes (objects of 1 MiB
  // or more, or all with `keep_all`) and resuming what an earlier try kept
  // of the same copy. Returns the kept file, whole, unless nothing could be
  // kept (another process holds it, or the server names no copy); on a
  // failure, what came is kept for the next try when it was cut short. Sets
  // `unknown` for a server that does not know get-from.
  Result<std::unique_ptr<Partial>> GetFrom(const ContentId& id, uint64_t limit, ByteSink& out, bool keep_all,
                                           bool& unknown) {
    std::unique_ptr<Partial> kept;
    std::string tag = "-";
    if (const std::optional<std::string> name = FindKept(partial_dir_, id, ValidTag)) {
      kept = std::make_unique<Partial>(partial_dir_, *name, UINT64_MAX);
      if (!kept->ok() && keep_all) return Unsupported("another process is downloading object " + id.Hex());
      if (kept->ok() && kept->have() > 0) {
        tag = name->substr(id.Hex().size() + 1);
      } else {  // another process is downloading it, or nothing was kept
        if (kept->ok()) kept->Done(OkStatus());
        kept.reset();
      }
    }
    std::unique_ptr<Partial> keeping;
    const Status st = Resuming(unknown, [&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(
          wire.Send("get-from " + id.Hex() + " " + std::to_string(kept ? kept->have() : 0) + " " + tag + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
      if (!line) {
        unknown = true;
        return wire.Break("the store server closed the connection");
      }
      const std::string& answer = *line;
      const std::vector<std::string> w = Words(answer);
      ZIPNN_ASSIGN_OR_RETURN(const uint64_t size, OfferedSize(wire, id, answer, w.size() == 4, limit));
      const std::string& copy = w[2];
      const std::optional<uint64_t> from = DecimalAtMost(w[3], size);
      const bool resumes = kept && copy == tag && from == kept->have();
      if ((copy != "-" && !ValidTag(copy)) || !from || (*from != 0 && !resumes)) return Unexpected(wire, answer);
      Carry(id.Hex(), resumes ? *from : 0);  // what an earlier try kept here
      if (resumes) {
        keeping = std::move(kept);
        ZIPNN_RETURN_IF_ERROR(keeping->CopyTo(out));
      } else {
        if (kept) kept->Done(OkStatus());  // of another copy: not kept
        keeping = std::make_unique<Partial>(partial_dir_, id.Hex() + "-" + copy, size, keep_all);
        if (!keeping->ok()) keeping.reset();
        if (!keeping && keep_all) {  // another process holds that file: not read twice here
          (void)wire.Break("");
          return Unsupported("another process is downloading object " + id.Hex());
        }
        if (keeping && keeping->have() > 0) ZIPNN_RETURN_IF_ERROR(keeping->Restart());
      }
      if (!keeping) return wire.ReadPayload(size - *from, &out, /*drain=*/false);
      KeepingSink keep(out, *keeping);
      return wire.ReadPayload(size - *from, &keep, /*drain=*/false);
    });
    if (!st.ok()) {
      if (keeping) keeping->Done(st);
      return st;
    }
    return keeping;
  }

  Status GetWhole(const ContentId& id, uint64_t limit, ByteSink& out) {
    return WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send("get " + id.Hex() + "\n"));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      ZIPNN_ASSIGN_OR_RETURN(const uint64_t size, OfferedSize(wire, id, answer, Words(answer).size() == 2, limit));
      return wire.ReadPayload(size, &out, /*drain=*/false);
    });
  }

  // The size of the object a get's `answer` offers ("ok <size> ..." of
  // `fits` words); a missing object, a refusal, an answer that does not
  // parse and an object larger than `limit` are errors.
  static Result<uint64_t> OfferedSize(Wire& wire, const ContentId& id, const std::string& answer, bool fits,
                                      uint64_t limit) {
    if (answer == "missing") return NotFound("object " + id.Hex() + " is not there");
    if (answer.rfind("error ", 0) == 0) return IoError("the server could not send it: " + answer.substr(6));
    const std::vector<std::string> w = Words(answer);
    const std::optional<uint64_t> size = fits && w[0] == "ok" ? DecimalAtMost(w[1], kMaxObjectSize) : std::nullopt;
    if (!size) return Unexpected(wire, answer);
    if (*size > limit) {     // not read: the session cannot go on
      (void)wire.Break("");  // its error is the one below
      return Corruption("the store server offered " + w[1] + " bytes for object " + id.Hex() + ", more than the " +
                        std::to_string(limit) + " its checkpoint can take");
    }
    return *size;
  }

  // Runs `request` on an idle session (or a new one), which goes back to
  // the idle ones unless the request broke it.
  Status WithSession(const std::function<Status(Wire&)>& request) {
    // With objects in ranges, every session in use holds a slot, so that
    // no more run at once than the connections set, the ranges of one
    // object included.
    const std::shared_ptr<void> slot = connections_ > 1 ? slots_.Take() : nullptr;
    std::unique_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        session = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!session) {
      ZIPNN_ASSIGN_OR_RETURN(session, Open());
    }
    Status st = request(session->wire);
    std::lock_guard<std::mutex> lock(mu_);
    if (session->wire.stalled()) {
      stalled_ = st;  // a server that stopped answering is not asked again
    } else if (!session->wire.broken() && st.code() != StatusCode::kCorruption) {
      idle_.push_back(std::move(session));  // not after bytes that were not the object: out of step, maybe
    }
    return st;
  }

  // A new session. Until one has opened, connections are tried one at a
  // time and a failure is final for this remote: a host that cannot be
  // reached is tried (and its error shown) once, not once per transfer.
  Result<std::unique_ptr<Session>> Open() {
    std::unique_lock<std::mutex> first(first_mu_, std::defer_lock);
    if (!opened_once_) first.lock();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!unreachable_.ok()) return unreachable_;
      if (!stalled_.ok()) return stalled_;
    }
    bool stalled = false;
    Result<std::unique_ptr<Session>> session = Connect(&stalled);
    std::lock_guard<std::mutex> lock(mu_);
    if (session.ok()) {
      opened_once_ = true;
    } else if (!opened_once_) {
      unreachable_ = session.status();
    } else if (stalled) {
      stalled_ = session.status();
    }
    return session;
  }

  Result<std::unique_ptr<Session>> Connect(bool* stalled) {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Channel> channel, connect_());
    auto session = std::make_unique<Session>(std::move(channel), timeout_, low_speed_);
    Result<std::optional<std::string>> greeting = session->wire.ReadLine();
    *stalled = session->wire.stalled();
    if (*stalled) return greeting.status();
    if (!greeting.ok() || !*greeting) {
      return IoError("the store server did not answer" + (no_answer_.empty() ? "" : " (" + no_answer_ + ")"));
    }
    const std::string& line = **greeting;
    if (line == kStoreProtocolGreeting) return session;
    if (line.rfind("error ", 0) == 0) return InvalidArgument(line.substr(6));  // it will say so again
    if (line.rfind("git-zipnn-store ", 0) == 0) {
      return Unsupported("the server speaks store protocol " + line.substr(16) +
                         "; this git-zipnn speaks 1 (use the same version on both sides)");
    }
    return IoError("the far side is not a git-zipnn store server (it said \"" + line.substr(0, 80) + "\")");
  }

  static Result<std::string> Answer(Wire& wire) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> line, wire.ReadLine());
    if (!line) return wire.Break("the store server closed the connection");
    return *line;
  }

  // A request of retention whose answer is "ok" (or an error); `payload`
  // follows the request line when given.
  Status Request(const std::string& line, const ByteSource* payload) {
    return WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send(line));
      if (payload != nullptr) ZIPNN_RETURN_IF_ERROR(wire.SendObject(*payload));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      if (answer == "ok") return OkStatus();
      if (answer.rfind("error ", 0) == 0) return IoError("the server refused it: " + answer.substr(6));
      return Unexpected(wire, answer);
    });
  }

  // A request whose answer is a small text or "missing".
  Result<std::optional<std::string>> GetText(const std::string& line, uint64_t max) {
    std::optional<std::string> text;
    ZIPNN_RETURN_IF_ERROR(WithSession([&](Wire& wire) -> Status {
      ZIPNN_RETURN_IF_ERROR(wire.Send(line));
      ZIPNN_ASSIGN_OR_RETURN(std::string answer, Answer(wire));
      if (answer == "missing") return OkStatus();
      if (answer.rfind("error ", 0) == 0) return IoError("the server could not read it: " + answer.substr(6));
      const std::vector<std::string> w = Words(answer);
      const std::optional<uint64_t> size = w.size() == 2 && w[0] == "ok" ? DecimalAtMost(w[1], max) : std::nullopt;
      if (!size) return Unexpected(wire, answer);
      MemorySink got;
      ZIPNN_RETURN_IF_ERROR(wire.ReadPayload(*size, &got, /*drain=*/false));
      const std::vector<uint8_t> bytes = got.ToVector();
      text = std::string(bytes.begin(), bytes.end());
      return OkStatus();
    }));
    return text;
  }

  // What a side-file request's failure means from a server of an older
  // release that does not know it.
  Status Compatible(SideKind kind, const Status& st) {
    return kind == SideKind::kBaseNote ? Noting(st) : Retaining(st);
  }

  // A note request that failed other than by the server's answer: it
  // does not know notes, and is not asked again.
  Status Noting(const Status& st) {
    if (st.ok() || st.message().find("refused it") != std::string::npos ||
        st.message().find("could not read it") != std::string::npos) {
      return st;
    }
    no_notes_ = true;
    return Unsupported(where_ + " keeps no base notes (" + st.message() + ")");
  }

  // A server of git-zipnn before retention ends the session at a request
  // it does not know: say what to do.
  Status Retaining(const Status& st) const {
    if (st.ok() || st.code() != StatusCode::kIoError || st.message().find("refused it") != std::string::npos ||
        st.message().find("could not read it") != std::string::npos) {
      return st;
    }
    return WithHint(st, " (a store server of a git-zipnn without retention does not know its "
                                            "requests: upgrade git-zipnn on " + where_ + ")");
  }

  // A server of git-zipnn before removal under its lock ends the session
  // at the request: nothing was removed; say what to do.
  Status Pruning(const Status& st) const {
    if (st.ok() || st.code() != StatusCode::kIoError || st.message().find("refused it") != std::string::npos) {
      return st;
    }
    return WithHint(st, " (a store server of a git-zipnn that cannot remove under its lock "
                                            "does not know the request, and nothing was removed: upgrade git-zipnn on " +
                                            where_ + ")");
  }

  static Status Unexpected(Wire& wire, const std::string& answer) {
    return wire.Break("the store server answered \"" + answer.substr(0, 80) + "\"");
  }

  const std::string where_;
  const StoreConnector connect_;
  const std::string no_answer_;
  const double timeout_;
  const LowSpeed low_speed_;
  const std::string partial_dir_;  // where downloads are kept as they come in; empty: nowhere
  const int connections_;          // at once, at most
  Slots slots_;
  std::atomic<bool> no_resume_{false};  // the server knows neither put-from nor get-from
  std::atomic<bool> no_ranges_{false};  // the server does not know get-range
  std::atomic<bool> no_put_ranges_{false};  // the server does not know put-ranges
  std::mutex first_mu_;  // held while the first session opens
  std::atomic<bool> opened_once_{false};
  std::atomic<bool> no_notes_{false};
  std::mutex mu_;  // guards idle_, unreachable_ and stalled_
  std::vector<std::unique_ptr<Session>> idle_;
  Status unreachable_;
  Status stalled_;
};

}  // namespace

std::unique_ptr<RemoteStore> ServedRemote(std::string where, StoreConnector connect, std::string no_answer,
                                          double timeout, LowSpeed low_speed, std::string partial_dir,
                                          int connections) {
  return std::make_unique<Served>(std::move(where), std::move(connect), std::move(no_answer), timeout, low_speed,
                                  std::move(partial_dir), connections);
}

}  // namespace zipnn::remote
