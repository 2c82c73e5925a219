#include "lib/remote/lfs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/base/redact.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/formats/checkpoint.h"
#include "lib/remote/http.h"
#include "lib/remote/lfs_files.h"
#include "lib/remote/partial.h"
#include "lib/remote/ssh.h"
#include "lib/store/base_note.h"
#include "lib/store/chain.h"

namespace zipnn::lfs {

namespace {

using json = nlohmann::json;
using remote::KeepingSink;
using remote::Partial;

constexpr char kMediaType[] = "application/vnd.git-lfs+json";
// Objects named in one batch request (servers take at least 100).
constexpr size_t kBatchSize = 100;

// The least an object is cut into to move on several connections at
// once: each request costs a batch entry, a PUT and a verify, and a part
// of at least 1 MiB is kept as it comes in (Partial).
constexpr uint64_t kSpreadPart = uint64_t{4} << 20;

// An object on the server read where it lies. The part of a read that the
// windows kept do not hold asks for a window from where that part starts
// (so no byte is asked for twice while its window is kept): kMinWindow (the
// header and region table), doubled up to kMaxWindow while reads go on
// where the last window ended (the chunk records of a tensor, front to
// back), and never less than the read; except that a read within
// kTailWindow of the end asks for the last kTailWindow bytes, so that the
// trailer and the chunk index before it come in one request. The last
// kWindows windows are kept.
class RangedSource : public ByteSource {
 public:
  using Fetch = std::function<Status(uint64_t from, uint64_t n, ByteSink& out)>;
  // The whole object, for when a fetch of an object opened already finds
  // the server no longer serving parts (one node behind a balancer that
  // ignores Range): reads go to it from then on.
  using Whole = std::function<Result<formats::Checkpoint>()>;
  static constexpr uint64_t kMinWindow = uint64_t{64} << 10;
  static constexpr uint64_t kMaxWindow = uint64_t{4} << 20;
  static constexpr uint64_t kTailWindow = uint64_t{64} << 10;
  static constexpr size_t kWindows = 4;

  RangedSource(std::string name, uint64_t size, Fetch fetch)
      : name_(std::move(name)), size_(size), fetch_(std::move(fetch)) {}
  // Until then, a server that sends the whole object is Unsupported.
  void FallBackTo(Whole whole) {
    std::lock_guard<std::mutex> lock(mu_);
    whole_ = std::move(whole);
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

  Status ReadAt(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset) return IoError(name_ + ": read past the end");
    std::lock_guard<std::mutex> lock(mu_);
    auto* to = static_cast<uint8_t*>(out);
    // What the kept windows hold is copied; only the rest is asked for,
    // from where it starts (a tensor whose first bytes came with the
    // header is not asked for again from its start).
    while (n > 0) {
      if (held_) return held_->file().ReadAt(offset, to, n);
      const Window* holding = nullptr;
      for (const Window& w : windows_) {
        if (offset >= w.from && offset - w.from < w.bytes.buffer().size()) holding = &w;
      }
      if (holding == nullptr) {
        ZIPNN_RETURN_IF_ERROR(FetchWindow(offset, n));
        continue;
      }
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(n, holding->from + holding->bytes.buffer().size() - offset));
      std::memcpy(to, holding->bytes.buffer().data() + (offset - holding->from), take);
      to += take;
      offset += take;
      n -= take;
    }
    return OkStatus();
  }

 private:
  struct Window {
    uint64_t from = 0;
    MemorySink bytes;
  };
  // Asks for a window that holds `offset` (and the `n` bytes from it, as
  // far as the object goes); or, when the server no longer serves parts,
  // takes the whole object (held_). Called with mu_ held.
  Status FetchWindow(uint64_t offset, size_t n) const {
    const bool onward = !windows_.empty() && offset == windows_.back().from + windows_.back().bytes.buffer().size();
    run_ = onward ? std::min(run_ * 2, kMaxWindow) : kMinWindow;
    Window w;
    w.from = offset;
    uint64_t want = std::min(size_ - offset, std::max<uint64_t>(n, run_));
    if (size_ - offset <= kTailWindow) {
      w.from = size_ - std::min(size_, kTailWindow);
      want = size_ - w.from;
    }
    w.bytes.Reserve(static_cast<size_t>(want));
    const Status fetched = fetch_(w.from, want, w.bytes);
    if (fetched.code() == StatusCode::kUnsupported && whole_) {
      windows_.clear();
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint whole, whole_());
      held_.emplace(std::move(whole));
      return OkStatus();
    }
    ZIPNN_RETURN_IF_ERROR(fetched);
    if (w.bytes.buffer().size() <= offset - w.from) return IoError(name_ + ": the server sent less than was asked");
    windows_.push_back(std::move(w));
    if (windows_.size() > kWindows) windows_.pop_front();
    return OkStatus();
  }
  const std::string name_;
  const uint64_t size_;
  const Fetch fetch_;
  mutable std::mutex mu_;
  Whole whole_;                                      // guarded by mu_
  mutable std::deque<Window> windows_;               // guarded by mu_; oldest first
  mutable uint64_t run_ = kMinWindow;                // guarded by mu_
  mutable std::optional<formats::Checkpoint> held_;  // guarded by mu_; the whole object, once fetched
};

// Of two stored forms of a version, the one to read: a whole one (nothing
// more to fetch below it), else the smaller.
bool Preferred(const ObjectMap::Entry& a, const ObjectMap::Entry& b) {
  if (a.delta != b.delta) return !a.delta;
  return a.oid.size < b.oid.size;
}

bool IsOid(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// What the server said of one object in a batch answer.
struct Answer {
  std::string href;                  // the action's URL; empty when none
  std::vector<std::string> headers;  // the action's headers
  std::string verify_href;           // upload: where to confirm it
  std::vector<std::string> verify_headers;
  // An upload in chunks (the Hugging Face Hub's "multipart" adapter): the
  // bytes of each chunk, and the link each goes to in turn; `href` then
  // takes the list of what each link answered, completing the object.
  uint64_t chunk_size = 0;
  std::vector<std::string> chunk_hrefs;
  int error = 0;  // the object's error code (404: not there)
  std::string message;
};

// The LFS objects that hold a stored form: its parts, or itself.
std::vector<Oid> PiecesOf(const ObjectMap::Entry& e) { return e.parts.empty() ? std::vector<Oid>{e.oid} : e.parts; }

// A stored form about to go up: its SHA-256 and size, and its parts'
// when it goes up in parts.
struct Pieces {
  Oid whole;
  std::vector<Oid> parts;
  std::vector<Oid> all() const { return parts.empty() ? std::vector<Oid>{whole} : parts; }
};

// One read of `object`: its SHA-256 and, when it is larger than `limit`
// (0: none), that of each `limit` bytes of it in turn.
Result<Pieces> HashPieces(const ByteSource& object, uint64_t limit) {
  const uint64_t size = object.size();
  const uint64_t part = limit != 0 && size > limit ? limit : 0;
  if (part != 0 && (size + part - 1) / part > kMaxParts) {
    return InvalidArgument(object.name() + " is " + std::to_string(size) + " bytes: in parts of at most " +
                           std::to_string(part) + " it would take more than " + std::to_string(kMaxParts));
  }
  Pieces pieces;
  Sha256Hasher whole;
  std::optional<Sha256Hasher> piece;
  Buffer buffer(size_t{1} << 20);
  uint64_t start = 0;  // of the part being hashed
  for (uint64_t at = 0; at < size;) {
    uint64_t n = std::min<uint64_t>(buffer.size(), size - at);
    if (part != 0) n = std::min(n, start + part - at);
    ZIPNN_RETURN_IF_ERROR(object.ReadAt(at, buffer.data(), static_cast<size_t>(n)));
    whole.Update(buffer.data(), static_cast<size_t>(n));
    at += n;
    if (part == 0) continue;
    if (!piece) piece.emplace();
    piece->Update(buffer.data(), static_cast<size_t>(n));
    if (at == start + part || at == size) {
      pieces.parts.push_back(Oid{piece->HexDigest(), at - start});
      piece.reset();
      start = at;
    }
  }
  pieces.whole = Oid{whole.HexDigest(), size};
  return pieces;
}

// "object <id>", or "part <i> of <n> of object <id>".
std::string PieceName(const ContentId& id, size_t k, size_t n) {
  const std::string object = "object " + id.Hex();
  return n <= 1 ? object : "part " + std::to_string(k + 1) + " of " + std::to_string(n) + " of " + object;
}

std::vector<std::string> HeadersOf(const json& action) {
  std::vector<std::string> headers;
  const auto h = action.find("header");
  if (h == action.end() || !h->is_object()) return headers;
  for (const auto& [name, value] : h->items()) {
    if (value.is_string()) headers.push_back(name + ": " + value.get<std::string>());
    if (value.is_number_unsigned()) headers.push_back(name + ": " + std::to_string(value.get<uint64_t>()));
  }
  return headers;
}

// Whether the first `name.size()` characters of `text` are `name`, in
// any case (header names).
bool StartsAsName(const std::string& text, const std::string& name) {
  return text.size() >= name.size() && std::equal(name.begin(), name.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

bool HasHeader(const std::vector<std::string>& headers, const std::string& name) {
  for (const std::string& h : headers) {
    if (h.size() > name.size() && h[name.size()] == ':' && StartsAsName(h, name)) return true;
  }
  return false;
}

// "scheme://host[:port]" of a URL.
std::string Origin(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  return url.substr(0, std::min(url.find('/', scheme + 3), url.size()));
}

class Server : public remote::RemoteStore,
               public remote::SideFiles,
               public remote::RangedReads,
               public remote::KeptGets,
               public remote::UnrecordedPuts {
 public:
  Server(std::string where, Options o, std::shared_ptr<ObjectMap> map)
      : where_(std::move(where)), o_(std::move(o)), map_(std::move(map)), http_(o_.timeout, o_.low_speed) {}

  const std::string& where() const override { return where_; }

  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override { return HeldOf(ids, /*refresh=*/true); }
  Result<std::vector<bool>> HeldAsKnown(const std::vector<ContentId>& ids) override {
    return HeldOf(ids, /*refresh=*/false);
  }

  Status Put(const ContentId& id, const ByteSource& object) override {
    ZIPNN_ASSIGN_OR_RETURN(std::function<Status()> record, PutUnrecorded(id, object));
    return record();
  }

  Result<std::function<Status()>> PutUnrecorded(const ContentId& id, const ByteSource& object) override {
    ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
    if (info.content_id != id) return InvalidArgument(object.name() + " is not the object of " + id.Hex());
    ZIPNN_ASSIGN_OR_RETURN(Pieces pieces, HashPieces(object, PieceSize(object.size())));
    uint64_t learnt = 0;
    Status sent = Upload(id, object, pieces, &learnt);
    if (!sent.ok() && learnt != 0) {
      // The server said its limit: kept to from now on, and the object
      // goes up again in parts of it.
      ZIPNN_RETURN_IF_ERROR(Learn(learnt, pieces, sent));
      ZIPNN_ASSIGN_OR_RETURN(pieces, HashPieces(object, PieceSize(object.size())));
      sent = Upload(id, object, pieces, nullptr);
    }
    ZIPNN_RETURN_IF_ERROR(sent);
    ObjectMap::Entry entry;
    entry.id = id;
    entry.oid = pieces.whole;
    entry.parts = pieces.parts;
    entry.delta = info.header.kind == container::ObjectKind::kDelta;
    if (entry.delta) entry.base = info.header.base_id;
    ZIPNN_ASSIGN_OR_RETURN(entry.frame, FrameDigest(object, info));
    return std::function<Status()>([map = map_, entry] { return map->Add(entry); });
  }

  Status RecordTogether(const std::function<Status()>& steps) override {
    map_->Hold();
    const Status ran = steps();
    const Status written = map_->Write();
    return ran.ok() ? written : ran;
  }

  remote::Capabilities capabilities() override {
    remote::Capabilities c;
    c.side_files = this;
    c.ranged_reads = this;
    if (!o_.partial_dir.empty()) c.kept_gets = this;
    c.unrecorded_puts = this;
    return c;
  }

  // The server keeps nothing but objects: a base note goes in git's map,
  // beside the whole form it explains (the one of the note's size). No
  // other kind of side file is kept.
  Status PutSide(remote::SideKind kind, const ContentId& id, const std::string& text) override {
    if (kind != remote::SideKind::kBaseNote) {
      return Unsupported(where_ + " cannot keep the " + remote::Side(kind).what + " of " + id.Hex());
    }
    ZIPNN_ASSIGN_OR_RETURN(const store::BaseNote note, store::ParseBaseNote(text, id));
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<ObjectMap::Entry> forms, map_->Find(id));
    for (ObjectMap::Entry e : forms) {
      if (e.delta || e.oid.size != note.object_size) continue;
      e.note = note;
      return map_->Add(e);
    }
    return NotFound("git's map of " + where_ + " names no whole object of " + id.Hex() + " for its base note");
  }

  Result<std::optional<std::string>> GetSide(remote::SideKind kind, const ContentId& id) override {
    if (kind != remote::SideKind::kBaseNote) return std::optional<std::string>();
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<ObjectMap::Entry> forms, map_->Find(id));
    for (const ObjectMap::Entry& e : forms) {
      if (e.delta || !e.note) continue;
      store::BaseNote note = *e.note;
      note.object_size = e.oid.size;
      return std::optional<std::string>(store::BaseNoteText(id, note));
    }
    return std::optional<std::string>();
  }

  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override {
    ZIPNN_ASSIGN_OR_RETURN(const Picked picked, Pick(id, limit));
    const ObjectMap::Entry& e = picked.form;
    if (!e.parts.empty()) return GetPieces(id, e.parts, picked.answers, out);
    Partial partial(o_.partial_dir, e.oid.sha256, e.oid.size);
    const Status got = Download("object " + id.Hex(), e.oid, picked.answers.front(), partial, out);
    if (partial.ok()) partial.Done(got);
    return got;
  }

  // An object stored whole on the server lands in its kept file
  // (<partial_dir>/<oid>), whatever its size, which the caller names the
  // object from; an object in parts goes by Get.
  Result<std::unique_ptr<remote::Partial>> GetKept(const ContentId& id, uint64_t limit, ByteSink& check) override {
    ZIPNN_ASSIGN_OR_RETURN(const Picked picked, Pick(id, limit));
    const ObjectMap::Entry& e = picked.form;
    if (!e.parts.empty()) return Unsupported("object " + id.Hex() + " is in parts");
    auto partial = std::make_unique<Partial>(o_.partial_dir, e.oid.sha256, e.oid.size, /*any_size=*/true);
    if (!partial->ok()) return Unsupported("another process is downloading object " + id.Hex());
    const Status got = Download("object " + id.Hex(), e.oid, picked.answers.front(), *partial, check);
    if (!got.ok()) {
      partial->Done(got);
      return got;
    }
    return partial;
  }

  Result<remote::RangedObject> OpenRanges(const ContentId& id, uint64_t limit) override {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<ObjectMap::Entry> framed, FramedForms(id));
    if (framed.empty()) {
      return Unsupported("git's map of " + where_ + " records no frame of object " + id.Hex() +
                         " to check parts of it against");
    }
    // The first the server serves (two cuts of one object: the one this
    // server holds).
    std::optional<size_t> served;
    std::vector<Answer> answers;
    for (size_t k = 0; k < framed.size() && !served; ++k) {
      ZIPNN_RETURN_IF_ERROR(CheckLimit(framed[k], limit));
      ZIPNN_ASSIGN_OR_RETURN(answers, RangedAnswers(framed[k]));
      for (const Answer& a : answers) {
        if (a.error != 0 && a.error != 404) return Refused("download of object " + id.Hex(), a);
      }
      if (Served(answers)) served = k;
    }
    if (!served) return NotFound("object " + id.Hex() + " is not there");
    const ObjectMap::Entry& e = framed[*served];
    const std::vector<Oid> pieces = PiecesOf(e);
    // A range may run over the end of a part into the next: one request
    // for what each part holds of it.
    auto fetch = [this, id, pieces, answers](uint64_t from, uint64_t n, ByteSink& out) -> Status {
      uint64_t start = 0;  // of part k
      for (size_t k = 0; k < pieces.size() && from + n > start; start += pieces[k++].size) {
        const uint64_t end = start + pieces[k].size;
        if (from >= end) continue;
        const uint64_t lo = std::max(from, start), hi = std::min(from + n, end);
        ZIPNN_RETURN_IF_ERROR(FetchRange(PieceName(id, k, pieces.size()), answers[k], lo - start, hi - lo, out));
      }
      return OkStatus();
    };
    // Whole, it is checked against its oid, the SHA-256 of what was pushed.
    auto whole = [this, id, e, pieces, answers]() -> Result<formats::Checkpoint> {
      const std::string dir = ScratchDir();
      ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint spooled, formats::Checkpoint::Spool(dir, [&](ByteSink& out) {
                               for (size_t k = 0; k < pieces.size(); ++k) {
                                 Partial none("", pieces[k].sha256, pieces[k].size);
                                 ZIPNN_RETURN_IF_ERROR(
                                     Download(PieceName(id, k, pieces.size()), pieces[k], answers[k], none, out));
                               }
                               return OkStatus();
                             }));
      ZIPNN_ASSIGN_OR_RETURN(const std::string sha, http::Sha256(spooled.file(), 0, spooled.file().size()));
      if (sha != e.oid.sha256) {
        return Corruption("object " + id.Hex() + " on " + where_ + ": the bytes sent for it are not its LFS object");
      }
      return spooled;
    };
    // A server that does not serve parts from the start has the objects
    // fetched whole, proven and stored instead (Unsupported).
    auto object = std::make_unique<RangedSource>("object " + id.Hex() + " on " + where_, e.oid.size, fetch);
    ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(*object));
    ZIPNN_ASSIGN_OR_RETURN(const std::string frame, FrameDigest(*object, info));
    if (frame != e.frame || info.content_id != id) {
      // The server or the map is wrong: the object fetched whole and
      // proven will show which.
      return Unsupported("object " + id.Hex() + " on " + where_ +
                         ": its header and chunk index are not those of the object that was pushed");
    }
    object->FallBackTo(whole);
    return remote::RangedObject{std::move(object), std::move(info)};
  }

  Status Publish() override { return o_.publish ? o_.publish() : OkStatus(); }

 private:
  // Has, from the map as Find (refresh) or Known gives it.
  Result<std::vector<bool>> HeldOf(const std::vector<ContentId>& ids, bool refresh) {
    std::vector<bool> has(ids.size(), false);
    std::vector<size_t> of;  // the index in ids of each form asked for
    std::vector<ObjectMap::Entry> forms;
    for (size_t i = 0; i < ids.size(); ++i) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectMap::Entry> found, refresh ? map_->Find(ids[i]) : map_->Known(ids[i]));
      for (ObjectMap::Entry& e : found) {
        of.push_back(i);
        forms.push_back(std::move(e));
      }
    }
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::vector<Answer>> answers, Answers("download", forms));
    for (size_t k = 0; k < of.size(); ++k) {
      if (Served(answers[k])) has[of[k]] = true;
    }
    return has;
  }

  // The form of an object to download, and the server's answers for it.
  struct Picked {
    ObjectMap::Entry form;
    std::vector<Answer> answers;
  };
  // Of the forms the server holds for `id`: a whole one (nothing more to
  // fetch), else the smallest; one larger than `limit` is refused.
  Result<Picked> Pick(const ContentId& id, uint64_t limit) {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<ObjectMap::Entry> forms, map_->Find(id));
    if (forms.empty()) return NotFound("object " + id.Hex() + " is not on " + where_ + " (git's map of it names none)");
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::vector<Answer>> answers, Answers("download", forms));
    // Of the forms the server holds: a whole one (nothing more to fetch),
    // else the smallest.
    std::optional<size_t> pick;
    for (size_t k = 0; k < forms.size(); ++k) {
      if (Served(answers[k]) && (!pick || Preferred(forms[k], forms[*pick]))) pick = k;
    }
    if (!pick) {
      for (const std::vector<Answer>& form : answers) {
        for (const Answer& a : form) {
          if (a.error != 0 && a.error != 404) return Refused("download of object " + id.Hex(), a);
        }
      }
      return NotFound("object " + id.Hex() + " is not there");
    }
    ZIPNN_RETURN_IF_ERROR(CheckLimit(forms[*pick], limit));
    return Picked{forms[*pick], answers[*pick]};
  }

  // The forms of `id` that OpenRanges may read, those whose frame the map
  // records, in the order it tries them: a whole one (nothing below it to
  // read) first, then the smaller.
  Result<std::vector<ObjectMap::Entry>> FramedForms(const ContentId& id) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectMap::Entry> forms, map_->Find(id));
    forms.erase(std::remove_if(forms.begin(), forms.end(), [](const ObjectMap::Entry& e) { return e.frame.empty(); }),
                forms.end());
    std::stable_sort(forms.begin(), forms.end(), Preferred);
    return forms;
  }
  Result<std::optional<ObjectMap::Entry>> FramedForm(const ContentId& id) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectMap::Entry> forms, FramedForms(id));
    if (forms.empty()) return std::optional<ObjectMap::Entry>();
    return std::optional<ObjectMap::Entry>(std::move(forms.front()));
  }
  // What names one form among the cuts of an object (Entry::parts).
  static std::string FormKey(const ObjectMap::Entry& e) {
    return e.parts.empty() ? e.oid.sha256 : e.oid.sha256 + " " + e.parts.front().sha256;
  }

  // The server's download answers for the LFS objects of `e`: asked once
  // for the whole chain below it as the map gives it (the forms
  // FramedForm picks, so that the levels below need no request of their
  // own), and kept.
  Result<std::vector<Answer>> RangedAnswers(const ObjectMap::Entry& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto known = ranged_answers_.find(FormKey(e));
      if (known != ranged_answers_.end()) return known->second;
    }
    std::vector<ObjectMap::Entry> chain = {e};
    for (std::optional<ObjectMap::Entry> at = e;
         at->delta && chain.size() < static_cast<size_t>(store::kMaxChainDepth);) {
      ZIPNN_ASSIGN_OR_RETURN(at, FramedForm(at->base));
      if (!at) break;
      chain.push_back(*at);
    }
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::vector<Answer>> answers, Answers("download", chain));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < chain.size(); ++i) ranged_answers_.emplace(FormKey(chain[i]), answers[i]);
    return answers.front();
  }

  // The batch API's answers for the LFS objects of each of `forms`.
  Result<std::vector<std::vector<Answer>>> Answers(const std::string& operation,
                                                   const std::vector<ObjectMap::Entry>& forms) {
    std::vector<Oid> oids;
    for (const ObjectMap::Entry& e : forms) {
      for (const Oid& oid : PiecesOf(e)) oids.push_back(oid);
    }
    ZIPNN_ASSIGN_OR_RETURN(std::vector<Answer> flat, Batch(operation, oids));
    std::vector<std::vector<Answer>> answers;
    size_t at = 0;
    for (const ObjectMap::Entry& e : forms) {
      const size_t n = PiecesOf(e).size();
      answers.emplace_back(std::make_move_iterator(flat.begin() + at), std::make_move_iterator(flat.begin() + at + n));
      at += n;
    }
    return answers;
  }

  // Whether the server serves every LFS object of a form.
  static bool Served(const std::vector<Answer>& answers) {
    return !answers.empty() &&
           std::all_of(answers.begin(), answers.end(), [](const Answer& a) { return !a.href.empty(); });
  }

  // The limit uploads keep to now (0: none).
  uint64_t Limit() const { return limit_.load(); }
  // The size of the parts an object of `size` bytes goes up in (0:
  // whole): at most the server's limit and Options::part_size, and small
  // enough that the object moves on every connection at once, but never
  // under kSpreadPart.
  uint64_t PieceSize(uint64_t size) const {
    uint64_t piece = o_.part_size;
    if (o_.connections > 1 && size > kSpreadPart) {
      const uint64_t spread = std::max(kSpreadPart, (size + o_.connections - 1) / o_.connections);
      piece = piece == 0 ? spread : std::min(piece, spread);
    }
    const uint64_t limit = Limit();
    if (limit == 0 || piece == 0) return std::max(limit, piece);
    return std::min(limit, piece);
  }

  // A part downloaded whole, waiting for those before it to be handed on:
  // in its partial file, or in a scratch file when another process holds
  // that.
  struct Landed {
    std::unique_ptr<Partial> partial;
    std::optional<formats::Checkpoint> spooled;
  };

  // Where downloads are kept as they come in: Options::partial_dir, else
  // the system's scratch folder.
  std::string ScratchDir() const {
    return o_.partial_dir.empty() ? std::filesystem::temp_directory_path().string() : o_.partial_dir;
  }

  // Downloads the parts `pieces` of object `id`, as many at once as there
  // are connections, each whole into its partial file (a scratch file
  // without Options::partial_dir, or for a part under 1 MiB), and hands them to
  // `out` in order. The files stay until the object is whole: a fetch cut
  // short (the network, a kill) leaves every part that was in, and the
  // next fetches only the rest (and the rest of the part that was cut).
  Status GetPieces(const ContentId& id, const std::vector<Oid>& pieces, const std::vector<Answer>& answers,
                   ByteSink& out) {
    const std::string dir = ScratchDir();
    ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
    std::mutex mu;
    std::vector<std::string> kept;  // guarded by mu
    ThreadPool pool(static_cast<int>(std::min<size_t>(pieces.size(), static_cast<size_t>(std::max(1, o_.connections)))));
    const Status got = RunOrdered<std::shared_ptr<Landed>>(
        pool, pieces.size(),
        [&](size_t k) -> Result<std::shared_ptr<Landed>> {
          const std::string what = PieceName(id, k, pieces.size());
          auto landed = std::make_shared<Landed>();
          landed->partial = std::make_unique<Partial>(o_.partial_dir, pieces[k].sha256, pieces[k].size);
          if (landed->partial->ok()) {
            CountingSink nowhere;
            const Status in = Download(what, pieces[k], answers[k], *landed->partial, nowhere);
            if (!in.ok()) landed->partial->Done(in);
            ZIPNN_RETURN_IF_ERROR(in);
            std::lock_guard<std::mutex> lock(mu);
            kept.push_back(landed->partial->path());
            return landed;
          }
          landed->partial.reset();
          ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint spooled, formats::Checkpoint::Spool(dir, [&](ByteSink& sink) {
                                   Partial none("", pieces[k].sha256, pieces[k].size);
                                   return Download(what, pieces[k], answers[k], none, sink);
                                 }));
          landed->spooled.emplace(std::move(spooled));
          return landed;
        },
        [&](size_t, const std::shared_ptr<Landed>& landed) -> Status {
          if (landed->partial) return landed->partial->CopyAllTo(out);
          return CopyRange(landed->spooled->file(), 0, landed->spooled->file().size(), out);
        });
    // Kept for the next try only when the network cut it short: not once
    // the object is whole, nor when its bytes were refused.
    if (got.ok() || got.code() != StatusCode::kIoError) {
      for (const std::string& path : kept) ::unlink(path.c_str());
    }
    return got;
  }

  // Takes the `limit` a server stated in refusing an upload of `pieces`
  // (the refusal `refused`): kept to from now on, and told to
  // Options::learnt_limit once. A limit the refused pieces kept to already,
  // or one too small to send in parts, is the refusal itself.
  Status Learn(uint64_t limit, const Pieces& pieces, const Status& refused) {
    uint64_t largest = 0;
    for (const Oid& oid : pieces.all()) largest = std::max(largest, oid.size);
    if (limit >= largest) return refused;
    if (limit < kMinObjectLimit) {
      return Annotate(refused, "the server takes objects of at most " + std::to_string(limit) +
                                   " bytes, too small to send in parts");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (Limit() != 0 && Limit() <= limit) return OkStatus();
    limit_ = limit;
    if (o_.learnt_limit) o_.learnt_limit(limit);
    return OkStatus();
  }

  // Sends `pieces` (an object whole, or its parts) as LFS objects, each
  // that the server lacks. Nothing is sent when the server refuses one;
  // a refusal for its size that states the server's limit sets *learnt
  // (when not null) to it.
  Status Upload(const ContentId& id, const ByteSource& object, const Pieces& pieces, uint64_t* learnt) {
    const std::vector<Oid> oids = pieces.all();
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<Answer> answers, Batch("upload", oids));
    for (size_t k = 0; k < oids.size(); ++k) {
      const Answer& a = answers[k];
      if (a.error == 0) continue;
      const std::optional<uint64_t> limit = SizeLimitIn(a.message);
      if (learnt != nullptr && a.error == 422 && limit) *learnt = *limit;
      return Refused("upload of " + PieceName(id, k, oids.size()), a);
    }
    std::vector<size_t> send;  // what the server lacks
    std::vector<uint64_t> from;   // where each piece starts
    uint64_t held = 0;            // what the server holds already (the parts an earlier try sent)
    std::set<std::string> sending;  // a part of the same bytes as one sent goes once
    for (size_t k = 0, at = 0; k < oids.size(); at += oids[k++].size) {
      from.push_back(at);
      if (answers[k].href.empty()) {
        held += oids[k].size;
      } else if (sending.insert(oids[k].sha256).second) {
        send.push_back(k);
      }
    }
    Carry(id.Hex(), held);
    return RunAll(o_.connections, send.size(), [&](size_t i) {
      const size_t k = send[i];
      return UploadOne(PieceName(id, k, oids.size()), object, from[k], oids[k], answers[k]);
    });
  }

  // Sends bytes [from, from + oid.size) of `object` as the LFS object
  // `oid`, named `what` in messages, as answer `a` says: in one request or
  // in chunks, then the server's check when it asks for one.
  Status UploadOne(const std::string& what, const ByteSource& object, uint64_t from, const Oid& oid, const Answer& a) {
    const std::shared_ptr<void> slot = slots_.Take();
    if (a.chunk_size != 0) {
      ZIPNN_RETURN_IF_ERROR(UploadChunks(what, object, from, oid, a));
    } else {
      http::Request put;
      put.method = "PUT";
      put.url = a.href;
      put.headers = ActionHeaders(a.href, a.headers);
      put.headers.push_back("Content-Type: application/octet-stream");
      put.upload = &object;
      put.from = from;
      put.size = oid.size;
      ZIPNN_ASSIGN_OR_RETURN(http::Reply r, http_.Send(Authorized(put, a.headers)));
      if (r.status / 100 != 2) return Failed("upload of " + what, r);
    }
    if (a.verify_href.empty()) return OkStatus();
    const std::string body = json{{"oid", oid.sha256}, {"size", oid.size}}.dump();
    ZIPNN_ASSIGN_OR_RETURN(http::Reply v, Api(a.verify_href, body, ActionHeaders(a.verify_href, a.verify_headers)));
    if (v.status / 100 != 2) return Failed("the server's check of " + what, v);
    return OkStatus();
  }

  // The "multipart" adapter: each chunk to its own link, then the list of
  // what each link answered (its ETag) to the action's href, which makes
  // the chunks the LFS object.
  Status UploadChunks(const std::string& what, const ByteSource& object, uint64_t from, const Oid& oid,
                      const Answer& a) {
    const uint64_t chunks = (oid.size + a.chunk_size - 1) / a.chunk_size;
    if (a.chunk_hrefs.size() != chunks) {
      return Corruption(where_ + " gave " + std::to_string(a.chunk_hrefs.size()) + " links for the " +
                        std::to_string(chunks) + " chunks of " + std::to_string(a.chunk_size) + " bytes of " + what);
    }
    json parts = json::array();
    for (uint64_t i = 0; i < chunks; ++i) {
      http::Request put;
      put.method = "PUT";
      put.url = a.chunk_hrefs[i];
      put.headers = ActionHeaders(put.url, {});
      put.upload = &object;
      put.from = from + i * a.chunk_size;
      put.size = std::min(a.chunk_size, oid.size - i * a.chunk_size);
      const std::string chunk = "chunk " + std::to_string(i + 1) + " of " + std::to_string(chunks) + " of " + what;
      ZIPNN_ASSIGN_OR_RETURN(http::Reply r, http_.Send(Authorized(put, {})));
      if (r.status / 100 != 2) return Failed("upload of " + chunk, r);
      const auto etag = r.headers.find("etag");
      if (etag == r.headers.end() || etag->second.empty()) {
        return Corruption(where_ + " answered the upload of " + chunk + " without an ETag");
      }
      parts.push_back({{"partNumber", i + 1}, {"etag", etag->second}});
    }
    const std::string body = json{{"oid", oid.sha256}, {"parts", parts}}.dump();
    ZIPNN_ASSIGN_OR_RETURN(http::Reply done, Api(a.href, body, ActionHeaders(a.href, a.headers)));
    if (done.status / 100 != 2) return Failed("completing the upload in chunks of " + what, done);
    return OkStatus();
  }

  // Bytes [from, from + n) of the LFS object `a` answers for, named
  // `what` in messages, into `out`.
  Status FetchRange(const std::string& what, const Answer& a, uint64_t from, uint64_t n, ByteSink& out) {
    http::Request get;
    get.url = a.href;
    get.headers = ActionHeaders(a.href, a.headers);
    get.resume_from = from;
    get.range_size = n;
    get.limit = from + n;
    get.download = &out;
    Result<http::Reply> sent = http_.Send(Authorized(get, a.headers));
    if (!sent.ok()) return Annotate(sent.status(), what + " on " + where_);
    const http::Reply& r = *sent;
    if (r.status == 404) return NotFound(what + " is not there");
    if (r.status != 206) return Failed("download of a part of " + what, r);
    if (r.received != n) {
      return Corruption(what + ": the server sent " + std::to_string(r.received) + " of the " + std::to_string(n) +
                        " bytes asked for at " + std::to_string(from));
    }
    return OkStatus();
  }

  Status CheckLimit(const ObjectMap::Entry& e, uint64_t limit) const {
    if (e.oid.size <= limit) return OkStatus();
    return Corruption("object " + e.id.Hex() + " would be " + std::to_string(e.oid.size) + " bytes, more than the " +
                      std::to_string(limit) + " its checkpoint can take");
  }

  // Downloads the LFS object `oid` (named `what` in messages) into `out`,
  // resuming after what `partial` holds of it.
  Status Download(const std::string& what, const Oid& oid, const Answer& a, Partial& partial, ByteSink& out) {
    Carry(oid.sha256, partial.ok() ? partial.have() : 0);
    if (partial.ok() && partial.have() == oid.size) return partial.CopyTo(out);  // in already
    const std::shared_ptr<void> slot = slots_.Take();
    http::Request get;
    get.url = a.href;
    get.headers = ActionHeaders(a.href, a.headers);
    get.limit = oid.size;
    KeepingSink keeping(out, partial);
    get.download = &out;
    if (partial.ok()) {
      ZIPNN_RETURN_IF_ERROR(partial.CopyTo(out));
      get.resume_from = partial.have();
      get.download = &keeping;
    }
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, http_.Send(Authorized(get, a.headers)));
    if (r.status == 404) return NotFound(what + " is not there");
    if (r.status != 200 && r.status != 206) return Failed("download of " + what, r);
    if (get.resume_from + r.received != oid.size) {
      return Corruption(what + ": the server sent " + std::to_string(get.resume_from + r.received) + " of its " +
                        std::to_string(oid.size) + " bytes");
    }
    return OkStatus();
  }

  // An upload action in chunks (the "multipart" adapter) carries, among
  // its headers, "chunk_size" and a link for each chunk under its number
  // ("00001"...): taken out of the headers into `a`'s chunk fields.
  Status TakeChunks(Answer& a) const {
    std::map<uint64_t, std::string> numbered;
    std::vector<std::string> headers;
    for (const std::string& h : a.headers) {
      const size_t colon = h.find(':');
      const std::string name = h.substr(0, colon), value = h.substr(std::min(h.size(), colon + 2));
      if (!name.empty() && name.size() <= 5 && name.find_first_not_of("0123456789") == std::string::npos) {
        numbered[std::stoull(name)] = value;
      } else if (name.size() == 10 && StartsAsName(name, "chunk_size")) {
        if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos ||
            std::stoull(value) == 0) {
          return Corruption(where_ + " gave an upload in chunks of \"" + value + "\" bytes");
        }
        a.chunk_size = std::stoull(value);
      } else {
        headers.push_back(h);
      }
    }
    if (a.chunk_size == 0) return OkStatus();
    a.headers = std::move(headers);
    for (auto& [number, href] : numbered) a.chunk_hrefs.push_back(std::move(href));
    return OkStatus();
  }

  // The batch API's answer for `oids`, one Answer each, in their order;
  // in requests of at most kBatchSize objects.
  Result<std::vector<Answer>> Batch(const std::string& operation, const std::vector<Oid>& oids) {
    std::vector<Answer> answers;
    for (size_t from = 0; from < oids.size(); from += kBatchSize) {
      const size_t n = std::min(kBatchSize, oids.size() - from);
      // Each LFS object once, though several parts may be the same bytes
      // (an object in parts of equal content, or two cuts sharing a part).
      json objects = json::array();
      std::set<std::string> asked;
      for (size_t i = from; i < from + n; ++i) {
        if (asked.insert(oids[i].sha256).second) objects.push_back({{"oid", oids[i].sha256}, {"size", oids[i].size}});
      }
      // An upload offers the Hugging Face Hub's adapter too: the Hub takes
      // objects over 5 GB only so.
      const json transfers = operation == "upload" ? json::array({"basic", "multipart"}) : json::array({"basic"});
      const json request = {{"operation", operation},
                            {"transfers", transfers},
                            {"objects", objects},
                            {"hash_algo", "sha256"}};
      ZIPNN_ASSIGN_OR_RETURN(Grant grant, GrantFor(operation));
      ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Api(grant.href + "/objects/batch", request.dump(), grant.headers));
      if (r.status != 200) {
        return Failed(operation == "upload" ? "asking where to upload objects" : "asking for objects", r);
      }
      json reply = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
      if (!reply.is_object() || !reply.contains("objects") || !reply["objects"].is_array()) {
        return Corruption(where_ + " answered a batch request with something else than the LFS API's answer");
      }
      if (reply.contains("transfer") && reply["transfer"] != "basic" &&
          !(operation == "upload" && reply["transfer"] == "multipart")) {
        return Unsupported(where_ + " chose the transfer adapter " + reply["transfer"].dump() +
                           "; git-zipnn speaks \"basic\", and \"multipart\" for uploads");
      }
      // By oid: a server may answer in another order.
      std::map<std::string, Answer> by_oid;
      for (const json& o : reply["objects"]) {
        if (!o.is_object() || !o.contains("oid") || !o["oid"].is_string() || !IsOid(o["oid"])) continue;
        Answer a;
        if (o.contains("error") && o["error"].is_object()) {
          a.error = o["error"].value("code", 0);
          a.message = o["error"].value("message", "");
          if (a.error == 0) a.error = 500;
        }
        const json actions = o.value("actions", json::object());
        for (const char* name : {"upload", "download"}) {
          if (actions.contains(name) && actions[name].is_object() && actions[name].value("href", "") != "") {
            a.href = actions[name].value("href", "");
            a.headers = HeadersOf(actions[name]);
          }
        }
        ZIPNN_RETURN_IF_ERROR(TakeChunks(a));
        if (actions.contains("verify") && actions["verify"].is_object()) {
          a.verify_href = actions["verify"].value("href", "");
          a.verify_headers = HeadersOf(actions["verify"]);
        }
        // A link is followed only over http(s): one to a file, another
        // protocol or a local service is refused before anything is
        // sent to it or read from it.
        const std::string transfer = operation == "upload" ? "an upload" : "a download";
        std::vector<std::pair<std::string, std::string>> links = {{a.href, transfer}, {a.verify_href, "a verify"}};
        for (const std::string& href : a.chunk_hrefs) links.emplace_back(href, "a chunk's");
        for (const auto& [href, kind] : links) {
          if (href.empty() || http::IsHttpUrl(href)) continue;
          return InvalidArgument(where_ + " gave " + kind + " link for LFS object " + o["oid"].get<std::string>() +
                                 " that is not http or https (" + http::Redacted(href) +
                                 "): refused, nothing was sent to it or read from it");
        }
        by_oid[o["oid"].get<std::string>()] = std::move(a);
      }
      for (size_t i = from; i < from + n; ++i) {
        const auto it = by_oid.find(oids[i].sha256);
        if (it == by_oid.end()) {
          return Corruption(where_ + " left object " + oids[i].sha256 + " out of its answer to a batch request");
        }
        answers.push_back(it->second);  // a copy: the same object may be asked for again below
      }
    }
    return answers;
  }

  // Where the API of `operation` is, and the headers its requests carry:
  // the endpoint's, or what ssh's git-lfs-authenticate granted (asked
  // again once the grant expires).
  Result<Grant> GrantFor(const std::string& operation) {
    if (!o_.authenticate) return Grant{o_.endpoint, o_.headers, 0};
    std::lock_guard<std::mutex> lock(grant_mu_);
    const auto now = std::chrono::steady_clock::now();
    auto it = grants_.find(operation);
    if (it == grants_.end() || (it->second.until && now >= *it->second.until)) {
      ZIPNN_ASSIGN_OR_RETURN(Grant g, o_.authenticate(operation));
      while (!g.href.empty() && g.href.back() == '/') g.href.pop_back();
      Held held{g, std::nullopt};
      // Asked again a little before it runs out.
      if (g.expires_in > 0) {
        held.until = now + std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, g.expires_in - 5) * 1000));
      }
      it = grants_.insert_or_assign(operation, std::move(held)).first;
    }
    return it->second.grant;
  }

  // A POST of `body` (JSON) to an API URL of the server, with `headers`,
  // and credentials once the server asks for them (kept for later
  // requests; a helper's refused ones are reported so).
  Result<http::Reply> Api(const std::string& url, const std::string& body, const std::vector<std::string>& headers) {
    const MemorySource source(reinterpret_cast<const uint8_t*>(body.data()), body.size(), "request");
    http::Request post;
    post.method = "POST";
    post.url = url;
    post.headers = headers;
    post.headers.push_back(std::string("Accept: ") + kMediaType);
    post.headers.push_back(std::string("Content-Type: ") + kMediaType);
    post.upload = &source;
    post.size = body.size();
    std::optional<Credential> tried = Known();
    if (tried) Sign(post, *tried);
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, http_.Send(post));
    // A 401 to an Authorization the endpoint's own headers carry is final.
    if (r.status != 401 || (HasHeader(post.headers, "Authorization") && !tried)) return r;
    if (!o_.credentials.fill) {
      if (tried) Report(*tried, false);
      return r;
    }
    // One fill at a time: transfers that met the 401 together (a push
    // starts several at once) ask the helper once, and the others take
    // what it gave once it was taken.
    std::lock_guard<std::mutex> one_fill(fill_mu_);
    if (!refused_.ok()) return refused_;
    const std::optional<Credential> known = Known();
    const bool taken_meanwhile = known && !(tried && known->user == tried->user && known->password == tried->password);
    // The credentials this request tried are told refused only while no
    // other transfer replaced them: a helper may forget by host and user,
    // and would forget the new ones too.
    if (tried && !taken_meanwhile) Report(*tried, false);
    Credential use;
    if (taken_meanwhile) {
      use = *known;
    } else {
      Result<Credential> filled = o_.credentials.fill(o_.endpoint);
      if (!filled.ok()) {
        // Not a missing object: a login to mend (a NotFound here was said
        // as "not on the remote store").
        refused_ = InvalidArgument(where_ + " asks for credentials and git's credential helper has none for " +
                                   http::Redacted(o_.endpoint) + " (" + filled.status().message() +
                                   "): store them as for a git push there (`git credential approve`, or a push that "
                                   "asks for them), then run the command again");
        return refused_;
      }
      use = *std::move(filled);
    }
    Sign(post, use);
    ZIPNN_ASSIGN_OR_RETURN(r, http_.Send(post));
    if (r.status == 401 || r.status == 403) {
      const Status refused = InvalidArgument(where_ + " refused the credentials git's credential helper gave for " +
                                             http::Redacted(o_.endpoint) + " (HTTP " + std::to_string(r.status) + ")");
      if (!taken_meanwhile) {
        Report(use, false);
        refused_ = refused;  // not asked for again by this store: the helper gave what it has
      }
      return refused;
    }
    if (!taken_meanwhile) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        credential_ = use;
      }
      Report(use, true);
    }
    return r;
  }

  std::optional<Credential> Known() {
    std::lock_guard<std::mutex> lock(mu_);
    return credential_;
  }
  void Sign(http::Request& r, const Credential& c) const {
    r.user = c.user;
    r.password = c.password;
  }
  void Report(const Credential& c, bool taken) {
    if (o_.credentials.report) o_.credentials.report(o_.endpoint, c, taken);
  }

  // The headers a request to an action's `href` carries: the action's own;
  // on the API's own host, also the endpoint's.
  std::vector<std::string> ActionHeaders(const std::string& href, const std::vector<std::string>& action) const {
    std::vector<std::string> headers = action;
    if (Origin(href) == Origin(o_.endpoint)) {
      for (const std::string& h : o_.headers) {
        if (!HasHeader(headers, h.substr(0, h.find(':')))) headers.push_back(h);
      }
    }
    return headers;
  }
  // `r` with the credentials that worked for the API when the action
  // brings no Authorization of its own and goes to the API's host.
  http::Request Authorized(http::Request r, const std::vector<std::string>& action) {
    if (!HasHeader(action, "Authorization") && !HasHeader(r.headers, "Authorization") &&
        Origin(r.url) == Origin(o_.endpoint)) {
      if (std::optional<Credential> c = Known()) Sign(r, *c);
    }
    return r;
  }

  // What a failed request says, never with credentials: its status, and
  // the server's message when the body is the API's JSON.
  Status Failed(const std::string& what, const http::Reply& r) const {
    std::string text = what + " on " + where_ + ": HTTP " + std::to_string(r.status);
    json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_object() && body.contains("message") && body["message"].is_string()) {
      text += " (" + body["message"].get<std::string>() + ")";
    }
    if (r.status / 100 == 3) {
      const auto to = r.headers.find("location");
      text += " (a redirect" + (to == r.headers.end() ? std::string() : " to " + http::Redacted(to->second)) +
              "; git-zipnn follows no redirect from a Git LFS server or its links)";
    }
    if (r.status == 401 || r.status == 403) return InvalidArgument(text);
    if (r.status >= 500 || r.status == 408 || r.status == 429) return IoError(text);
    return InvalidArgument(text);
  }
  Status Refused(const std::string& what, const Answer& a) const {
    std::string text = what + " refused by " + where_ + ": error " + std::to_string(a.error);
    if (!a.message.empty()) text += " (" + a.message + ")";
    if (a.error >= 500 || a.error == 429) return IoError(text);
    return InvalidArgument(text);
  }

  const std::string where_;
  const Options o_;
  const std::shared_ptr<ObjectMap> map_;
  http::Client http_;
  std::mutex fill_mu_;   // held while credentials are asked of git's helper and tried
  Status refused_;       // guarded by fill_mu_: why the helper's credentials were refused, or none were had
  std::mutex mu_;        // guards credential_, ranged_answers_ and the learning of limit_
  std::optional<Credential> credential_;
  std::map<std::string, std::vector<Answer>> ranged_answers_;  // by FormKey
  std::atomic<uint64_t> limit_{o_.max_object_size};
  Slots slots_{o_.connections};
  struct Held {
    Grant grant;
    std::optional<std::chrono::steady_clock::time_point> until;
  };
  std::mutex grant_mu_;  // guards grants_
  std::map<std::string, Held> grants_;
};

}  // namespace

std::vector<std::string> MapLines(const ObjectMap::Entry& entry) {
  std::string form = entry.oid.sha256 + " " + std::to_string(entry.oid.size);
  form += entry.delta ? " delta " + entry.base.Hex() : " whole";
  if (!entry.parts.empty()) form += " parts " + std::to_string(entry.parts.size());
  std::vector<std::string> lines = {form};
  for (size_t i = 0; i < entry.parts.size(); ++i) {
    lines.push_back("part " + entry.oid.sha256 + " " + std::to_string(i) + " " + entry.parts[i].sha256 + " " +
                    std::to_string(entry.parts[i].size));
  }
  if (!entry.frame.empty()) lines.push_back("frame " + entry.oid.sha256 + " " + entry.frame);
  if (!entry.delta && entry.note) lines.push_back("base " + entry.oid.sha256 + " " + store::ReasonWords(*entry.note));
  return lines;
}

namespace {

// A decimal count of at most 19 digits; nullopt for anything else.
std::optional<uint64_t> Count(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(text);
}

// A form line, and the number of parts it says it is in (0: none).
std::optional<std::pair<ObjectMap::Entry, uint64_t>> ParseFormLine(const ContentId& id, const std::string& line) {
  std::istringstream in(line);
  ObjectMap::Entry e;
  std::string size, kind, base, more, count;
  if (!(in >> e.oid.sha256 >> size >> kind) || !IsOid(e.oid.sha256)) return std::nullopt;
  const std::optional<uint64_t> bytes = Count(size);
  if (!bytes) return std::nullopt;
  e.oid.size = *bytes;
  e.id = id;
  if (kind == "delta") {
    std::optional<ContentId> b;
    if (!(in >> base) || !(b = ContentId::FromHex(base))) return std::nullopt;
    e.delta = true;
    e.base = *b;
  } else if (kind != "whole") {
    return std::nullopt;
  }
  uint64_t parts = 0;
  if (in >> more) {
    std::optional<uint64_t> n;
    if (more != "parts" || !(in >> count) || !(n = Count(count)) || *n == 0 || *n > kMaxParts) return std::nullopt;
    parts = *n;
    if (in >> more) return std::nullopt;
  }
  return std::pair(e, parts);
}

// What the map names for each part of one object, by index (a set: the
// same part named again by another clone is one).
using NamedParts = std::map<uint64_t, std::set<std::pair<std::string, uint64_t>>>;

// The most cuts one form line may stand for, and the most parts all the
// forms of one version may name together: a map that names many (a
// hostile one) costs bounded time and memory, never a batch request per
// combination.
constexpr size_t kMaxCuts = 16;
constexpr uint64_t kMaxNamedParts = 4 * kMaxParts;
constexpr size_t kMaxFormsInParts = 4 * kMaxCuts;

// The LFS objects a form of `total` bytes in `count` parts is in, from
// what the map names: each index named once, their sizes adding up to the
// form's. Where the map also names the parts of the same object cut
// otherwise (pushed to two servers with other limits, or with another
// part size or number of connections), an index may be named more than
// once: then each cut into count - 1 parts of one size and a last no
// larger, as a push cuts them, is a form, once for each choice among the
// parts of the right size the map names at an index (two cuts' parts of
// one size at one index: the last of one, a middle one of the other). The
// reader takes the one its server serves, and a wrong choice never
// proves: the object's SHA-256 and its decode check what comes.
std::vector<std::vector<Oid>> CutsOf(const NamedParts& named, uint64_t count, uint64_t total) {
  std::vector<Oid> listed;
  uint64_t sum = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const auto it = named.find(i);
    if (it == named.end() || it->second.size() != 1) break;
    const Oid part{it->second.begin()->first, it->second.begin()->second};
    if (part.size > total - sum) break;
    listed.push_back(part);
    sum += part.size;
  }
  if (listed.size() == count && named.size() == count && sum == total) return {listed};
  std::vector<std::vector<Oid>> cuts;
  const auto first = named.find(0);
  if (first == named.end() || total == 0 || count > named.size()) return cuts;
  std::set<uint64_t> sizes;
  for (const auto& named_part : first->second) sizes.insert(named_part.second);
  for (const uint64_t size : sizes) {
    // count - 1 parts of `size`, then the rest: at least a byte, at most `size`.
    if (count - 1 > 0 && size > (total - 1) / (count - 1)) continue;
    const uint64_t last = total - (count - 1) * size;
    if (last == 0 || last > size) continue;
    // The parts of the right size at each index.
    std::vector<std::vector<Oid>> choices;
    for (uint64_t i = 0; i < count; ++i) {
      const auto it = named.find(i);
      if (it == named.end()) break;
      const uint64_t want = i + 1 < count ? size : last;
      std::vector<Oid> fit;
      for (const auto& [sha256, bytes] : it->second) {
        if (bytes == want && fit.size() < kMaxCuts) fit.push_back(Oid{sha256, bytes});
      }
      if (fit.empty()) break;
      choices.push_back(std::move(fit));
    }
    if (choices.size() != count) continue;
    // Every choice, the first parts changing slowest, up to kMaxCuts.
    std::vector<size_t> pick(count, 0);
    while (cuts.size() < kMaxCuts) {
      std::vector<Oid> cut;
      cut.reserve(count);
      for (uint64_t i = 0; i < count; ++i) cut.push_back(choices[i][pick[i]]);
      cuts.push_back(std::move(cut));
      size_t i = count;
      while (i > 0 && ++pick[i - 1] == choices[i - 1].size()) pick[--i] = 0;
      if (i == 0) break;
    }
  }
  return cuts;
}

}  // namespace

std::vector<ObjectMap::Entry> ParseMapLines(const ContentId& id, const std::vector<std::string>& lines) {
  std::vector<std::pair<ObjectMap::Entry, uint64_t>> forms;  // with the parts each says it is in
  std::map<std::string, std::string> frames;                 // by oid
  std::map<std::string, store::BaseNote> notes;
  std::map<std::string, NamedParts> parts;  // by form
  std::set<std::string> seen;               // a line given again (two clones') counts once
  for (const std::string& line : lines) {
    if (!seen.insert(line).second) continue;
    std::istringstream in(line);
    std::string word, oid, frame, more;
    if (in >> word && word == "frame") {
      if (in >> oid >> frame && !(in >> more) && IsOid(oid) && IsOid(frame)) frames[oid] = frame;
    } else if (word == "part") {
      std::string index, part, size;
      std::optional<uint64_t> i, n;
      if (in >> oid >> index >> part >> size && !(in >> more) && IsOid(oid) && IsOid(part) && (i = Count(index)) &&
          (n = Count(size)) && *n > 0) {
        parts[oid][*i].emplace(part, *n);
      }
    } else if (word == "base") {
      std::vector<std::string> words;
      for (std::string w; in >> w;) words.push_back(w);
      if (words.empty() || !IsOid(words[0])) continue;
      oid = words[0];
      words.erase(words.begin());
      const std::optional<store::BaseNote> note = store::ParseReasonWords(words);
      if (!note) continue;
      // Of two, the one that is not "newest"; of two others, the first
      // in the order of their words (the same in every clone).
      const auto kept = notes.find(oid);
      const auto newest = [](const store::BaseNote& n) { return n.reason == store::BaseReason::kNewest; };
      if (kept == notes.end() ||
          (!newest(*note) && (newest(kept->second) || store::ReasonWords(*note) < store::ReasonWords(kept->second)))) {
        notes.insert_or_assign(oid, *note);
      }
    } else if (auto form = ParseFormLine(id, line)) {
      forms.push_back(std::move(*form));
    }
  }
  std::vector<ObjectMap::Entry> entries;
  uint64_t named_parts = 0;   // by the entries so far
  size_t forms_in_parts = 0;  // form lines in parts looked at
  for (auto& [e, count] : forms) {
    const auto it = frames.find(e.oid.sha256);
    if (it != frames.end()) e.frame = it->second;
    const auto note = notes.find(e.oid.sha256);
    if (note != notes.end() && !e.delta) e.note = note->second;
    if (count == 0) {
      entries.push_back(std::move(e));
      continue;
    }
    // A form in parts is one only for a cut of it whose parts the map
    // names (CutsOf), while the version's forms name at most
    // kMaxNamedParts parts in all.
    if (count > kMaxNamedParts - named_parts || ++forms_in_parts > kMaxFormsInParts) continue;
    for (std::vector<Oid>& cut : CutsOf(parts[e.oid.sha256], count, e.oid.size)) {
      if (cut.size() > kMaxNamedParts - named_parts) break;
      named_parts += cut.size();
      entries.push_back(e);
      entries.back().parts = std::move(cut);
    }
  }
  return entries;
}

std::optional<uint64_t> SizeLimitIn(const std::string& message) {
  for (const auto& [words, less] : {std::pair("less than or equal to ", uint64_t{0}), std::pair("less than ", uint64_t{1})}) {
    const size_t at = message.find(words);
    if (at == std::string::npos) continue;
    const size_t from = at + std::strlen(words);
    const std::optional<uint64_t> n = Count(message.substr(from, message.find_first_not_of("0123456789", from) - from));
    if (!n || *n < less) return std::nullopt;
    return *n - less;
  }
  return std::nullopt;
}

Result<std::string> FrameDigest(const ByteSource& object, const container::ObjectInfo& info) {
  const uint64_t tail = container::kIndexEntryBytes * info.chunks.size() + container::kTrailerBytes;
  if (info.records_offset > info.object_size || tail > info.object_size - info.records_offset) {
    return Corruption(object.name() + ": its sections do not fit in its " + std::to_string(info.object_size) +
                      " bytes");
  }
  Buffer frame(static_cast<size_t>(info.records_offset + tail));
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(0, frame.data(), static_cast<size_t>(info.records_offset)));
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(info.object_size - tail, frame.data() + info.records_offset, tail));
  const MemorySource bytes(frame.data(), frame.size(), object.name());
  return http::Sha256(bytes, 0, bytes.size());
}

Result<Grant> ParseGrant(const std::string& json_text) {
  const json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("href") || !j["href"].is_string()) {
    return Corruption("git-lfs-authenticate did not answer with an href");
  }
  Grant g;
  g.href = j["href"].get<std::string>();
  if (g.href.rfind("https://", 0) != 0 && g.href.rfind("http://", 0) != 0) {
    return Corruption("git-lfs-authenticate answered with an href that is not an http(s) URL");
  }
  g.headers = HeadersOf(j);
  if (j.contains("expires_in") && j["expires_in"].is_number()) g.expires_in = j["expires_in"].get<double>();
  return g;
}

Result<std::string> EndpointOf(const std::string& git_url) {
  std::string base;
  if (git_url.rfind("https://", 0) == 0 || git_url.rfind("http://", 0) == 0) {
    base = git_url;
    const size_t query = base.find_first_of("?#");
    if (query != std::string::npos) base.resize(query);
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<remote::SshTarget> ssh, remote::ParseSshUrl(git_url));
    if (!ssh) return InvalidArgument(RedactUrl(git_url) + ": not an http(s) or ssh URL, so it has no Git LFS endpoint");
    std::string path = ssh->path;
    while (!path.empty() && (path.front() == '/' || path.front() == '~')) path.erase(0, 1);
    const std::string host = ssh->host.substr(ssh->host.find('@') + 1);  // without a user@
    base = "https://" + host + "/" + path;
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() < 4 || base.compare(base.size() - 4, 4, ".git") != 0) base += ".git";
  return base + "/info/lfs";
}

std::unique_ptr<remote::RemoteStore> Remote(std::string where, Options options, std::shared_ptr<ObjectMap> map) {
  return std::make_unique<Server>(std::move(where), std::move(options), std::move(map));
}

}  // namespace zipnn::lfs
