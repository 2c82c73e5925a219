#include "lib/store/repack.h"

#include <list>
#include <map>
#include <optional>
#include <set>

#include "lib/codec/delta_transform.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/store/checkin.h"
#include "lib/store/restore.h"

namespace zipnn::store {

namespace {

// A version's raw bytes in a scratch file, with its layout read.
struct Raw {
  ContentId id;
  formats::Checkpoint bytes;
};

// The raw versions a repack still needs: the one before the current
// version and the last base, so that most versions decode in one step.
class RawCache {
 public:
  explicit RawCache(const Store& store) : store_(store) {}

  Result<formats::CheckpointView> Get(const ContentId& id) {
    const Raw* raw = Find(id);
    if (raw == nullptr) {
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint bytes, Decode(id));
      ZIPNN_RETURN_IF_ERROR(bytes.ReadLayout());
      raw = &raws_.emplace_back(Raw{id, std::move(bytes)});
    }
    return raw->bytes.View(id);
  }

  // Drops every raw version but these.
  void KeepOnly(const ContentId& a, const std::optional<ContentId>& b) {
    raws_.remove_if([&](const Raw& r) { return r.id != a && r.id != b; });
  }

 private:
  // A delta whose base is at hand decodes in one step; anything else
  // decodes its whole chain.
  Result<formats::Checkpoint> Decode(const ContentId& id) {
    ZIPNN_ASSIGN_OR_RETURN(ReadFile object, store_.objects.Open(id));
    ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
    const Raw* base = Find(info.header.base_id);
    if (info.content_id != id || info.header.kind != container::ObjectKind::kDelta || base == nullptr) {
      return RestoreToScratch(store_, id);
    }
    container::DecodeOptions options;
    options.threads = store_.policy.threads;
    return formats::Checkpoint::Spool(store_.temp_dir, [&](ByteSink& out) {
      return container::DecodeObject(object, info, &base->bytes.file(), options, out);
    });
  }

  const Raw* Find(const ContentId& id) const {
    for (const Raw& r : raws_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }

  const Store& store_;
  std::list<Raw> raws_;  // a few at most; elements stay put
};

bool SameForm(const StoredInfo& stored, const std::optional<ContentId>& base) {
  return base ? stored.delta && stored.base == *base : !stored.delta;
}

// Whether `policy` would write an object of `stored`'s format: under
// delta_transform: xor an object of format 3 to 5 is rewritten too, so that
// after a repack git-zipnn 0.2 to 0.4 can restore every version.
bool FormatAsPolicy(const StoredInfo& stored, const config::Policy& policy) {
  return policy.delta_transform != codec::Transform::kXor || stored.format < container::kFirstTransformVersion;
}

// What a repack knows as it goes: the versions it has passed (in their
// final form), the chains it has checked and marked as used, and for each
// version how deep the versions that are stored as deltas on it reach,
// so that no rewrite makes one of those, in its old form, deeper than a
// restore follows (a crash before its turn would leave it out of reach).
struct RepackState {
  ChainMemo passed;
  std::set<ContentId> checked;
  std::map<ContentId, uint32_t> hanging;  // version -> longest old chain of deltas above it
};

// How deep the deltas stored on each of `series` reach above it now, from
// each version's own header (one read per version).
std::map<ContentId, uint32_t> HangingDepths(const Store& store, const std::vector<Version>& series) {
  std::map<ContentId, ContentId> base_of;
  for (const Version& v : series) {
    auto link = ReadLink(store, v.id);
    if (link.ok() && link->delta) base_of[v.id] = link->base;
  }
  std::map<ContentId, uint32_t> hanging;
  for (const auto& [top, first] : base_of) {
    // A walk stops where another reached at least as high: everything
    // below was raised by that one already.
    ContentId at = first;
    for (uint32_t distance = 1; distance <= config::kMaxChainLimit; ++distance) {
      uint32_t& h = hanging[at];
      if (h >= distance) break;
      h = distance;
      auto next = base_of.find(at);
      if (next == base_of.end()) break;
      at = next->second;
    }
  }
  return hanging;
}

// Rewrites one version (`done.before` filled in) where its form differs
// from the policy's.
Status RepackVersion(const Store& store, const std::vector<Version>& series, size_t position, RawCache& raws,
                     RepackState& state, RepackedVersion& done) {
  const ContentId& id = series[position].id;
  auto hanging = state.hanging.find(id);
  const uint32_t room = config::kMaxChainLimit - (hanging != state.hanging.end() ? hanging->second : 0);
  Placement placed = *PlaceVersion(store, series, position, /*complete=*/true, &state.passed, room);
  // The new base's chain must outlive this delta (see CheckIn).
  if (placed.base && !TouchChain(store, *placed.base, &state.checked).ok()) placed.base.reset();
  if (SameForm(done.before, placed.base) && FormatAsPolicy(done.before, store.policy)) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(formats::CheckpointView input, raws.Get(id));
  std::optional<formats::CheckpointView> base;
  if (placed.base) {
    ZIPNN_ASSIGN_OR_RETURN(base, raws.Get(*placed.base));
  }
  ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidate(store, input, base ? &*base : nullptr, placed.base_ratio));
  // A delta that does not pay becomes a base, which it may be already
  // (in the policy's format).
  if (!c.delta && !done.before.delta && FormatAsPolicy(done.before, store.policy)) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(VerifyCandidate(store, c, input, base ? &*base : nullptr));
  ZIPNN_RETURN_IF_ERROR(store.objects.Replace(id, c.file.path()));
  state.checked.erase(id);
  done.rewritten = true;
  return OkStatus();
}

}  // namespace

Status RepackSeries(const Store& store, const std::vector<Version>& series,
                    const std::function<void(const RepackedVersion&)>& each) {
  // Versions gc removed are not part of the series any more.
  std::vector<Version> present;
  for (const Version& v : series) {
    if (store.objects.Has(v.id)) {
      present.push_back(v);
    } else {
      RepackedVersion gone;
      gone.version = v;
      gone.missing = true;
      each(gone);
    }
  }
  RawCache raws(store);
  RepackState state;
  state.hanging = HangingDepths(store, present);
  // How every version is stored before anything is rewritten: a version's
  // chain, described later, would run through earlier versions in their
  // new form.
  ChainMemo original;
  for (const Version& v : present) {
    auto described = Describe(store, v.id, &original);
    if (described.ok()) original[v.id] = *described;
  }
  std::optional<ContentId> last_base;
  for (size_t i = 0; i < present.size(); ++i) {
    RepackedVersion done;
    done.version = present[i];
    auto before = Describe(store, done.version.id, &state.passed);
    if (!before.ok()) {
      done.error = before.status();
    } else {
      done.before = *before;
      if (auto was = original.find(done.version.id); was != original.end()) done.before.depth = was->second.depth;
      done.error = RepackVersion(store, present, i, raws, state, done);
      if (done.error.code() == StatusCode::kIoError) return done.error;
      auto after = Describe(store, done.version.id, &state.passed);
      if (after.ok()) {
        done.after = *after;
        state.passed[done.version.id] = *after;
      }
      if (done.error.ok() && !after.ok()) done.error = after.status();
      if (after.ok() && !after->delta) last_base = done.version.id;
    }
    raws.KeepOnly(done.version.id, last_base);
    each(done);
  }
  return OkStatus();
}

}  // namespace zipnn::store
