#include "lib/remote/sync.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/remote/partial.h"
#include "lib/store/base_note.h"
#include "lib/store/chain.h"
#include "lib/store/object_store.h"
#include "lib/store/rebased.h"

namespace zipnn::remote {

using store::ChainLink;
using store::Store;

namespace {


// Tries `once` up to `attempts` times. Only what may pass is tried again:
// a read or write that failed, or bytes damaged on the way.
Status WithRetries(int attempts, const std::function<Status()>& once) {
  Status st;
  for (int i = 0; i < std::max(1, attempts); ++i) {
    st = once();
    if (st.code() != StatusCode::kIoError && st.code() != StatusCode::kCorruption) return st;
  }
  return st;
}

// Runs `move` over `ids`, options.parallel at a time, adding what each
// moved to `report` and telling options.progress.
Status MoveAll(const std::vector<ContentId>& ids, const TransferOptions& options, TransferReport& report,
               const std::function<Result<uint64_t>(const ContentId&)>& move) {
  ThreadPool pool(std::max(1, options.parallel));
  const size_t total = report.moved + ids.size();
  return RunOrdered<uint64_t>(
      pool, ids.size(), [&](size_t i) { return move(ids[i]); },
      [&](size_t, uint64_t bytes) -> Status {
        ++report.moved;
        report.bytes += bytes;
        if (options.progress) options.progress(report.moved, total, report.bytes);
        return OkStatus();
      });
}

// The sink a download writes through: it refuses the byte past `limit`
// and, once the header is in, a checkpoint of another size than the one
// expected (when known), so a lying server is stopped early instead of
// when the object is whole.
class GuardedSink : public ByteSink {
 public:
  GuardedSink(ByteSink& out, const ContentId& id, uint64_t limit, std::optional<uint64_t> raw_size)
      : out_(out), id_(id), limit_(limit), raw_size_(raw_size) {}

  Status Append(const void* data, size_t n) override {
    if (n > limit_ - size_) return ObjectTooBig(id_, size_ + n, limit_);
    if (raw_size_ && size_ < container::kHeaderBytes) {
      const size_t k = std::min<size_t>(n, container::kHeaderBytes - size_);
      head_.append(static_cast<const char*>(data), k);
      if (head_.size() == container::kHeaderBytes) ZIPNN_RETURN_IF_ERROR(CheckRawSize());
    }
    ZIPNN_RETURN_IF_ERROR(out_.Append(data, n));
    size_ += n;
    return OkStatus();
  }

 private:
  // The header's raw size, read as the format reads it (no other field is
  // trusted or checked here; the whole object is, once it is in).
  Status CheckRawSize() const {
    const uint64_t raw = container::DecodeHeader(reinterpret_cast<const uint8_t*>(head_.data())).raw_size;
    if (raw == *raw_size_) return OkStatus();
    return Corruption("object " + id_.Hex() + " says it holds " + std::to_string(raw) + " bytes, not the " +
                      std::to_string(*raw_size_) + " expected");
  }

  ByteSink& out_;
  const ContentId id_;
  const uint64_t limit_;
  const std::optional<uint64_t> raw_size_;
  uint64_t size_ = 0;
  std::string head_;
};

// `st` with the scratch file `path` a received object waits in named as
// what it is: what the remote sent.
Status AsSent(const Status& st, const std::string& path) { return Replaced(st, path, "what it sent"); }

// An object received and checked for its structure, waiting to be
// decoded: in a scratch file of temp_dir, or in the file a remote kept it
// in as it came (KeptGets), which stays for the next fetch if this one
// stops before the object takes its name.
struct Received {
  std::optional<TempFile> file;
  std::unique_ptr<Partial> kept;
  std::optional<ContentId> base;  // for a delta
  uint64_t base_size = 0;
  std::vector<container::Reference> references;  // the versions a delta of format 8 takes tensors from
  std::vector<ContentId> needs;                  // its base and references: what its decode reads
  const std::string& path() const { return file ? file->path() : kept->path(); }
};

// Receives the object for `id`, fsynced so that it can take its name
// later, and checks its structure: into the file the remote keeps it in,
// when it keeps downloads, else into a fresh file in temp_dir. Any
// failure removes the scratch file before it returns (a kept file whose
// download was cut short stays, for the next try).
Result<Received> Receive(const Store& local, RemoteStore& remote, const ContentId& id, std::optional<uint64_t> raw_size,
                         uint64_t* bytes) {
  const uint64_t limit = raw_size ? ObjectSizeLimit(*raw_size) : kUnknownObjectLimit;
  Received r;
  if (KeptGets* kept_gets = remote.capabilities().kept_gets) {
    CountingSink counted;
    GuardedSink guarded(counted, id, limit, raw_size);
    Result<std::unique_ptr<Partial>> kept = kept_gets->GetKept(id, limit, guarded);
    if (kept.ok()) {
      r.kept = std::move(*kept);
      *bytes = counted.bytes();
      ZIPNN_RETURN_IF_ERROR(r.kept->Sync());
    } else if (kept.status().code() != StatusCode::kUnsupported) {
      return kept.status();
    }
  }
  if (!r.kept) {
    ZIPNN_ASSIGN_OR_RETURN(TempFile file, TempFile::Create(local.temp_dir, "fetch"));
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::InTemp(file));
    GuardedSink guarded(out, id, limit, raw_size);
    ZIPNN_RETURN_IF_ERROR(remote.Get(id, limit, guarded));
    *bytes = out.size();
    ZIPNN_RETURN_IF_ERROR(out.Commit());
    r.file.emplace(std::move(file));
  }
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(r.path()));
  const Status checked = AsSent(CheckObject(object, id), r.path());
  if (!checked.ok()) {
    if (r.kept) r.kept->Done(checked);  // what did not prove is not kept
    return checked;
  }
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.header.kind == container::ObjectKind::kDelta) {
    r.base = info.header.base_id;
    r.base_size = info.header.base_size;
    r.references = info.header.references;
  }
  r.needs = container::NeedsOf(info.header);
  return r;
}

// Decodes the received objects from what they need up, each once all
// the received objects it needs (its base and the versions it references)
// have taken their names, and gives each its name once it holds its id's
// content. What a received object needs that was not received itself is
// in the store (the fetch checked it) and is read through its chain. A
// delta with received deltas on it is decoded into a scratch file that
// they read as their base, kept until the last of them is decoded; the
// next object decoded is one that waited on the last, so a chain of n
// received objects costs n decodes and at most two scratch files.
// `deliver` (when not null) takes the decoded bytes of the object
// `deliver_id`, if it is received, and *delivered says whether it did.
Status AcceptReceived(const Store& local, std::map<ContentId, Received>& received, const std::string& from,
                      const store::FindCopy& find_copy, const ContentId& deliver_id, ByteSink* deliver,
                      bool* delivered) {
  std::map<ContentId, std::vector<ContentId>> waiting_on_it;  // received -> received objects that need it
  std::map<ContentId, size_t> waits;                          // received -> received objects it needs, not yet named
  std::map<ContentId, size_t> deltas_on;                      // received -> received deltas on it, not yet decoded
  std::vector<ContentId> ready;
  for (const auto& [id, r] : received) {
    size_t n = 0;
    for (const ContentId& needed : r.needs) {
      if (received.count(needed) == 0) continue;
      waiting_on_it[needed].push_back(id);
      ++n;
    }
    if (r.base && received.count(*r.base) != 0) ++deltas_on[*r.base];
    waits[id] = n;
    if (n == 0) ready.push_back(id);
  }
  std::map<ContentId, std::shared_ptr<formats::Checkpoint>> decoded;  // of received bases, while deltas on them wait
  size_t named = 0;
  while (!ready.empty()) {
    const ContentId id = ready.back();
    ready.pop_back();
    Received& r = received.at(id);
    std::shared_ptr<formats::Checkpoint> base_bytes;
    if (r.base) {
      if (auto it = decoded.find(*r.base); it != decoded.end()) base_bytes = it->second;
    }
    ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(r.path()));
    auto decode = [&](ByteSink& out) -> Status {
      Status st = AsSent(DecodeReceived(local, object, id, base_bytes ? &base_bytes->file() : nullptr, out, find_copy),
                         r.path());
      if (st.ok()) return st;
      if (r.kept && st.code() == StatusCode::kCorruption) r.kept->Done(st);  // a kept file that lied is not kept
      return Annotate(st, "object " + id.Hex() + " from " + from + " was refused");
    };
    if (deltas_on.count(id) == 0) {
      CountingSink nowhere;
      const bool into = deliver != nullptr && id == deliver_id;
      ZIPNN_RETURN_IF_ERROR(decode(into ? *deliver : nowhere));
      *delivered = *delivered || into;
    } else {
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint bytes, formats::Checkpoint::Spool(local.temp_dir, decode));
      decoded[id] = std::make_shared<formats::Checkpoint>(std::move(bytes));
    }
    base_bytes.reset();
    if (r.base && decoded.count(*r.base) != 0 && --deltas_on[*r.base] == 0) {
      decoded.erase(*r.base);  // the last delta on it is decoded: its scratch goes
    }
    ZIPNN_RETURN_IF_ERROR(local.objects.Replace(id, r.path()));
    ++named;
    for (const ContentId& up : waiting_on_it[id]) {
      if (--waits[up] == 0) ready.push_back(up);
    }
  }
  if (named != received.size()) {
    return Corruption("objects from " + from + " need each other in a loop; none of them was kept");
  }
  return OkStatus();
}

}  // namespace

Status DecodeReceived(const Store& local, const ByteSource& object, const ContentId& id, const ByteSource* base,
                      ByteSink& out, const store::FindCopy& find_copy) {
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  // The id the trailer carries is only a claim until the decode agrees.
  if (info.content_id != id) return Corruption("it holds " + info.content_id.Hex() + ", not " + id.Hex());
  // What the store holds of what it needs, each read through its chain.
  store::ReferencedVersions stored(local, id, find_copy);
  container::Sources sources{base, {}};
  if (info.header.kind == container::ObjectKind::kDelta && base == nullptr) {
    ZIPNN_ASSIGN_OR_RETURN(sources.base, stored.Open(info.header.base_id, 1));
  }
  ZIPNN_ASSIGN_OR_RETURN(sources.references, stored.Of(info, 0));
  container::DecodeOptions options;
  options.threads = local.policy.threads;
  return container::DecodeObject(object, info, sources, options, out);
}

namespace {

// Sends the base note of `id`'s object, when the local store has one, to
// a remote that keeps notes; a failure costs only the note.
void SendBaseNote(const Store& local, RemoteStore& remote, const ContentId& id, std::atomic<bool>& unsupported) {
  if (unsupported) return;
  const std::optional<std::string> text = store::BaseNoteTextOf(local.objects, id);
  if (!text) return;
  if (PutSide(remote, SideKind::kBaseNote, id, *text).code() == StatusCode::kUnsupported) unsupported = true;
}

// The levels of a push to a remote that records its uploads apart
// (UnrecordedPuts): every object goes up at once, lowest level first, so
// that no level waits for the slowest object of the one below; then each
// level is recorded, with its base notes, once the whole level below it
// is, and none above a level that did not all go up.
Status SendAllLevels(const Store& local, RemoteStore& remote, UnrecordedPuts& unrecorded,
                     const std::map<int, std::vector<ContentId>>& levels, const TransferOptions& options,
                     TransferReport& report, std::atomic<bool>& no_notes) {
  std::vector<ContentId> all;
  for (const auto& [level, send] : levels) all.insert(all.end(), send.begin(), send.end());
  std::mutex records_mu;
  std::map<ContentId, std::function<Status()>> records;  // of the objects that went up
  const Status sent = MoveAll(all, options, report, [&](const ContentId& id) -> Result<uint64_t> {
    ZIPNN_ASSIGN_OR_RETURN(ReadFile object, local.objects.Open(id));
    std::function<Status()> record;
    const Status put = WithRetries(options.attempts, [&]() -> Status {
      ZIPNN_ASSIGN_OR_RETURN(record, unrecorded.PutUnrecorded(id, object));
      return OkStatus();
    });
    if (!put.ok()) return Annotate(put, "cannot send object " + id.Hex() + " to " + remote.where());
    std::lock_guard<std::mutex> lock(records_mu);
    records[id] = std::move(record);
    return object.size();
  });
  // Every worker has ended (MoveAll's pool is gone): `records` is settled.
  const Status recorded = unrecorded.RecordTogether([&]() -> Status {
    for (const auto& [level, send] : levels) {
      if (!std::all_of(send.begin(), send.end(), [&](const ContentId& id) { return records.count(id) > 0; })) break;
      for (const ContentId& id : send) {
        ZIPNN_RETURN_IF_ERROR(Annotate(records[id](), "object " + id.Hex() + " went up to " + remote.where()));
        SendBaseNote(local, remote, id, no_notes);
      }
    }
    return OkStatus();
  });
  // What stopped the uploads says more than what it left unrecorded.
  return sent.ok() ? recorded : sent;
}

// The height of `id` and of each object below it that `needs` (the
// objects of its chain, each with what it needs) shows: one more than the
// highest object it needs, 0 for a base; an object needed but not walked
// (the remote holds it) counts as a base. Each object goes up after all
// it needs, a level at a time.
// (VisitChain has refused loops and chains too deep to recurse down.)
void AddHeights(const ContentId& id, const std::map<ContentId, std::vector<ContentId>>& needs,
                std::map<ContentId, int>& height) {
  const auto it = needs.find(id);
  if (it == needs.end() || height.count(id) != 0) return;
  int h = 0;
  for (const ContentId& next : it->second) {
    AddHeights(next, needs, height);
    const auto below = height.find(next);
    h = std::max(h, (below == height.end() ? 0 : below->second) + 1);
  }
  height[id] = h;
}

}  // namespace

Result<TransferReport> PushObjects(const Store& local, RemoteStore& remote, const std::vector<ContentId>& ids,
                                   const TransferOptions& options) {
  // A version the remote holds (as far as is known here: HeldAsKnown)
  // needs nothing from here: a store holds an object only with its chain,
  // each object proven on arrival from its base up. So a clone that has
  // only some objects (one fetched the newest alone, or fetched nothing)
  // can push what it made, down to the first base the remote holds.
  Result<std::vector<bool>> held = remote.HeldAsKnown(ids);
  if (!held.ok()) return Annotate(held.status(), "cannot ask " + remote.where() + " what it holds");
  std::vector<ContentId> there;
  // Every object of every other chain, each once, by its height above
  // its base.
  std::map<ContentId, int> height;  // links above the base (0: a base)
  // Versions this store has no object of, with why: asked of the remote
  // itself, not of what is known of it here, all in one question.
  std::vector<std::pair<ContentId, Status>> absent;
  for (size_t k = 0; k < ids.size(); ++k) {
    const ContentId& id = ids[k];
    if ((*held)[k]) {
      there.push_back(id);
      continue;
    }
    std::map<ContentId, std::vector<ContentId>> needs;  // of each object walked
    Status walked = VisitChain(local, id, [&](const ChainLink& link) { needs[link.id] = link.needs(); });
    // A chain may stand on objects this store never fetched and the
    // remote holds: what is above them is sent, one level up from them.
    if (!walked.ok()) {
      if (walked.code() != StatusCode::kNotFound) return walked;
      if (needs.empty()) {
        absent.emplace_back(id, walked);
        continue;
      }
      std::vector<ContentId> missing;
      for (const auto& [at, below] : needs) {
        for (const ContentId& next : below) {
          if (needs.count(next) == 0) missing.push_back(next);
        }
      }
      Result<std::vector<bool>> missing_held = remote.Has(missing);
      if (missing.empty() || !missing_held.ok() ||
          std::find(missing_held->begin(), missing_held->end(), false) != missing_held->end()) {
        return walked;
      }
    }
    AddHeights(id, needs, height);
  }
  if (!absent.empty()) {
    std::vector<ContentId> asked;
    for (const auto& [id, why] : absent) asked.push_back(id);
    Result<std::vector<bool>> held_there = remote.Has(asked);
    for (size_t i = 0; i < absent.size(); ++i) {
      if (!held_there.ok() || !(*held_there)[i]) return absent[i].second;
    }
    there.insert(there.end(), asked.begin(), asked.end());
  }
  std::vector<ContentId> all;
  for (const auto& [id, h] : height) all.push_back(id);
  // Each once, and not again when another's chain holds it.
  std::sort(there.begin(), there.end());
  there.erase(std::unique(there.begin(), there.end()), there.end());
  there.erase(std::remove_if(there.begin(), there.end(), [&](const ContentId& id) { return height.count(id) > 0; }),
              there.end());

  remote.CountAfresh();
  TransferReport report;
  report.needed = all.size() + there.size();
  report.present = there.size();
  Result<std::vector<bool>> has = remote.HeldAsKnown(all);
  if (!has.ok()) {
    return Annotate(has.status(), "cannot ask " + remote.where() + " what it holds");
  }
  // One level at a time: a receiver that decodes each object finds its
  // base there, and a push cut short leaves whole chains behind. A remote
  // that records its uploads apart takes every level at once, and the
  // records keep to the levels (SendAllLevels).
  std::map<int, std::vector<ContentId>> levels;
  for (size_t i = 0; i < all.size(); ++i) {
    if ((*has)[i]) {
      ++report.present;
    } else {
      levels[height[all[i]]].push_back(all[i]);
    }
  }
  std::atomic<bool> no_notes{false};
  if (UnrecordedPuts* const unrecorded = remote.capabilities().unrecorded_puts) {
    ZIPNN_RETURN_IF_ERROR(SendAllLevels(local, remote, *unrecorded, levels, options, report, no_notes));
  } else {
    for (const auto& [level, send] : levels) {
      ZIPNN_RETURN_IF_ERROR(MoveAll(send, options, report, [&](const ContentId& id) -> Result<uint64_t> {
        ZIPNN_ASSIGN_OR_RETURN(ReadFile object, local.objects.Open(id));
        Status sent = WithRetries(options.attempts, [&] { return remote.PutFile(id, object); });
        if (!sent.ok()) {
          return Annotate(sent, "cannot send object " + id.Hex() + " to " + remote.where());
        }
        SendBaseNote(local, remote, id, no_notes);
        return object.size();
      }));
    }
  }
  // Versions re-stored here as deltas because of what was sent (the
  // version before a new newest). Only while the local object is a delta:
  // a note may be stale. One that stayed whole has a new base note.
  all.insert(all.end(), there.begin(), there.end());
  Demotion* const demotion = remote.capabilities().demotion;
  for (const ContentId& cause : all) {
    for (const ContentId& id : store::RebasedOn(local, cause)) {
      if (!report.demote_error.empty()) break;
      auto link = store::ReadLink(local, id);
      if (!link.ok()) continue;
      if (!link->delta) {
        SendBaseNote(local, remote, id, no_notes);
        continue;
      }
      ZIPNN_ASSIGN_OR_RETURN(ReadFile object, local.objects.Open(id));
      // A remote that cannot demote keeps the whole object: 0 replaced.
      Result<uint64_t> replaced = demotion != nullptr ? demotion->Demote(id, object) : Result<uint64_t>(uint64_t{0});
      if (!replaced.ok()) {
        report.demote_error = "object " + id.Hex() + ": " + replaced.status().message();
        break;
      }
      if (*replaced > 0) {
        ++report.demoted;
        report.demoted_saved += *replaced > object.size() ? *replaced - object.size() : 0;
      }
    }
  }
  report.carried = remote.carried();
  return report;
}

Result<TransferReport> FetchObjects(const Store& local, RemoteStore& remote, const std::vector<ContentId>& ids,
                                    const TransferOptions& options) {
  remote.CountAfresh();
  TransferReport report;
  std::set<ContentId> seen;
  std::map<ContentId, uint64_t> raw_sizes = options.raw_sizes;  // and those the deltas' headers give their bases
  std::map<ContentId, Received> received;
  std::map<ContentId, std::string> notes;  // of received bases
  std::atomic<bool> no_notes{false};
  std::mutex received_mu;  // guards both
  std::vector<ContentId> wanted = ids;
  // One round per chain level: the objects asked for, then their bases
  // (known once their headers are here), and so on down to the bases.
  std::map<ContentId, ContentId> top_of;  // a base -> the object asked for whose chain needs it
  auto below = [&](const ContentId& id, const ContentId& base) {
    const auto top = top_of.find(id);
    top_of.emplace(base, top == top_of.end() ? id : top->second);
  };
  while (!wanted.empty()) {
    std::vector<ContentId> get, next;
    for (const ContentId& id : wanted) {
      if (!seen.insert(id).second) continue;
      ++report.needed;
      // Present counts only when whole: a damaged copy is fetched again.
      if (HoldsIntact(local.objects, id)) {
        ++report.present;
        ZIPNN_ASSIGN_OR_RETURN(ReadFile object, local.objects.Open(id));
        ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
        if (info.header.kind == container::ObjectKind::kDelta) {
          next.push_back(info.header.base_id);
          below(id, info.header.base_id);
          for (const container::Reference& r : info.header.references) {
            next.push_back(r.id);
            below(id, r.id);
          }
        }
      } else {
        get.push_back(id);
      }
    }
    if (seen.size() > (ids.size() + 1) * (store::kMaxChainObjects + 1)) {
      return Corruption("the chains of the objects asked for do not end (a loop?)");
    }
    ZIPNN_RETURN_IF_ERROR(MoveAll(get, options, report, [&](const ContentId& id) -> Result<uint64_t> {
      const auto known = raw_sizes.find(id);
      const std::optional<uint64_t> raw_size =
          known == raw_sizes.end() ? std::nullopt : std::optional<uint64_t>(known->second);
      uint64_t bytes = 0;
      std::optional<Received> got;
      Status st = WithRetries(options.attempts, [&]() -> Status {
        Result<Received> r = Receive(local, remote, id, raw_size, &bytes);
        if (!r.ok()) return r.status();
        got = std::move(*r);
        return OkStatus();
      });
      if (st.code() == StatusCode::kNotFound) {
        const auto top = top_of.find(id);
        const std::string of = top == top_of.end() ? "" : " (a base of " + top->second.Hex() + ")";
        return NotFound("object " + id.Hex() + of + " is not on the remote store " + remote.where());
      }
      if (!st.ok()) return Annotate(st, "cannot fetch object " + id.Hex() + " from " + remote.where());
      // A base's note, asked for beside it (kept once the object is).
      std::optional<std::string> note;
      if (!got->base && !no_notes) {
        Result<std::optional<std::string>> asked = GetSide(remote, SideKind::kBaseNote, id);
        if (asked.ok()) note = std::move(*asked);
        if (asked.status().code() == StatusCode::kUnsupported) no_notes = true;
      }
      std::lock_guard<std::mutex> lock(received_mu);
      if (note) notes.emplace(id, std::move(*note));
      received.emplace(id, std::move(*got));
      return bytes;
    }));
    for (const ContentId& id : get) {
      const Received& r = received.at(id);
      if (!r.base) continue;
      next.push_back(*r.base);
      below(id, *r.base);
      raw_sizes.emplace(*r.base, r.base_size);
      for (const container::Reference& ref : r.references) {
        next.push_back(ref.id);
        below(id, ref.id);
        raw_sizes.emplace(ref.id, ref.size);
      }
    }
    wanted = std::move(next);
  }
  ZIPNN_RETURN_IF_ERROR(AcceptReceived(local, received, remote.where(), options.find_copy,
                                       ids.size() == 1 ? ids[0] : ContentId{},
                                       ids.size() == 1 ? options.deliver : nullptr, &report.delivered));
  for (const auto& [id, text] : notes) (void)store::KeepBaseNote(local.objects, id, text);
  report.carried = remote.carried();
  return report;
}

}  // namespace zipnn::remote
