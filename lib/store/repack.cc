#include "lib/store/repack.h"

#include <algorithm>
#include <list>
#include <map>
#include <optional>
#include <set>

#include "lib/codec/delta_transform.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/store/base_note.h"
#include "lib/store/parents.h"
#include "lib/store/checkin.h"
#include "lib/store/rebased.h"
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

// Whether `policy` would write an object of `stored`'s format or an older
// one: an object of a newer format is rewritten, so that after a repack
// the readers the policy writes for can restore every version (under
// delta_transform: xor, git-zipnn 0.2 to 0.4; under difference, 0.5 and
// 0.6, which do not read format 6's standalone chunks). The newest the
// policy writes is for a delta found by shared tensors.
bool FormatAsPolicy(const StoredInfo& stored, const config::Policy& policy) {
  // One that references versions besides its base is as an add writes it
  // where the policy lets references be written.
  if (!stored.references.empty()) return ReferencesAllowed(policy);
  return stored.format <= container::WriteVersion(policy.delta_transform, stored.delta, container::BaseChoice::kShared);
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
  // version -> how far its children in other series reach above it
  // (HangingElsewhere): they must stay within max_chain.
  std::map<ContentId, uint32_t> elsewhere;
  uint32_t Elsewhere(const ContentId& id) const {
    auto it = elsewhere.find(id);
    return it == elsewhere.end() ? 0 : it->second;
  }
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

// Rewrites the version `id` (`done.before` filled in) as a delta of
// `base`, or whole (for `whole`, when there is no `base`), where its form
// differs from that. A version left whole gets its base note.
Status RewriteAs(const Store& store, const ContentId& id, std::optional<ContentId> base_id, BaseReason whole,
                 double base_ratio, RawCache& raws, RepackState& state, RepackedVersion& done) {
  auto noted = [&](bool delta) {
    if (delta) {
      RemoveBaseNote(store.objects, id);
    } else {
      WriteBaseNote(store.objects, id, base_id ? BaseReason::kNoGain : whole, store.policy);
    }
    return OkStatus();
  };
  // A delta of a parent in another series (parents.h) keeps its parent:
  // its series' placement made it a base only for want of one. It is
  // rewritten only into the policy's format, against the same parent.
  container::BaseChoice choice = container::BaseChoice::kSeries;
  if (done.before.delta && done.before.choice != container::BaseChoice::kSeries) {
    if (FormatAsPolicy(done.before, store.policy)) return OkStatus();
    base_id = done.before.base;
    base_ratio = 0;
    choice = done.before.choice;
  }
  // The new base's chain must outlive this delta (see CheckIn).
  if (base_id && !TouchChain(store, *base_id, &state.checked).ok()) base_id.reset();
  if (SameForm(done.before, base_id) && FormatAsPolicy(done.before, store.policy)) return noted(done.before.delta);
  ZIPNN_ASSIGN_OR_RETURN(formats::CheckpointView input, raws.Get(id));
  std::optional<formats::CheckpointView> base;
  if (base_id) {
    ZIPNN_ASSIGN_OR_RETURN(base, raws.Get(*base_id));
  }
  ZIPNN_ASSIGN_OR_RETURN(Candidate c,
                         EncodeCandidate(store, input, base ? &*base : nullptr, base_ratio, /*verify=*/true, choice));
  // A delta that does not pay becomes a base, which it may be already
  // (in the policy's format).
  if (!c.delta && !done.before.delta && FormatAsPolicy(done.before, store.policy)) return noted(false);
  ZIPNN_RETURN_IF_ERROR(VerifyCandidate(store, c, input, base ? &*base : nullptr));
  ZIPNN_RETURN_IF_ERROR(store.objects.Replace(id, c.file.path()));
  if (base_id && c.delta) NoteRebased(store, *base_id, id);
  state.checked.erase(id);
  done.rewritten = true;
  return noted(c.delta);
}

// Rewrites one version where its form differs from the policy's
// (newest: delta): against a version before it, as PlaceVersion says.
Status RepackForward(const Store& store, SeriesAt at, RawCache& raws, RepackState& state, RepackedVersion& done) {
  const ContentId& id = at.version().id;
  auto hanging = state.hanging.find(id);
  const uint32_t above = state.Elsewhere(id);
  const uint32_t room = std::min(config::kMaxChainLimit - (hanging != state.hanging.end() ? hanging->second : 0),
                                 store.policy.max_chain > above ? store.policy.max_chain - above : 0);
  const Placement placed = *PlaceVersion(store, at, /*complete=*/true, &state.passed, room);
  return RewriteAs(store, id, placed.base, placed.reason, placed.base_ratio, raws, state, done);
}

// Rewrites the version `at` (newest: whole) as a delta of the version at
// `target` of its series (done already), or whole. A target whose chain, as it is
// stored now, runs through this version (a rewrite of it that failed) or
// would put the deltas hanging on this one out of a restore's reach,
// leaves it whole instead (at max_chain); with no target it is whole for
// `whole`.
Status RepackAgainst(const Store& store, SeriesAt at, std::optional<size_t> target, BaseReason whole,
                     RawCache& raws, RepackState& state, RepackedVersion& done) {
  const ContentId& id = at.version().id;
  std::optional<ContentId> base;
  double base_ratio = 0;
  if (target) {
    bool loops = false;
    const ContentId& target_id = at[*target].id;
    (void)VisitChain(store, target_id, [&](const ChainLink& link) { loops = loops || link.id == id; });
    auto chain = Describe(store, target_id, &state.passed);
    auto hanging = state.hanging.find(id);
    const uint32_t above = hanging != state.hanging.end() ? hanging->second : 0;
    const uint32_t depth = chain.ok() ? static_cast<uint32_t>(chain->depth) + 1 : 0;
    if (!loops && chain.ok() && depth + state.Elsewhere(id) <= store.policy.max_chain &&
        above + depth <= config::kMaxChainLimit) {
      base = target_id;
      base_ratio = chain->base_ratio;
    }
  }
  if (target && !base) whole = BaseReason::kChain;
  return RewriteAs(store, id, base, whole, base_ratio, raws, state, done);
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
  for (const Version& v : present) {
    if (const uint32_t elsewhere = HangingElsewhere(store, v.id); elsewhere > 0) state.elsewhere[v.id] = elsewhere;
  }
  // How every version is stored before anything is rewritten: a version's
  // chain, described later, would run through earlier versions in their
  // new form.
  ChainMemo original;
  for (const Version& v : present) {
    auto described = Describe(store, v.id, &original);
    if (described.ok()) original[v.id] = *described;
  }
  // Rewrites version i by `rewrite`; an IoError ends the repack.
  auto repack = [&](size_t i, const std::function<Status(RepackedVersion&)>& rewrite) -> Result<RepackedVersion> {
    RepackedVersion done;
    done.version = present[i];
    auto before = Describe(store, done.version.id, &state.passed);
    if (!before.ok()) {
      done.error = before.status();
      return done;
    }
    done.before = *before;
    if (auto was = original.find(done.version.id); was != original.end()) done.before.depth = was->second.depth;
    done.error = rewrite(done);
    if (done.error.code() == StatusCode::kIoError) return done.error;
    auto after = Describe(store, done.version.id, &state.passed);
    if (after.ok()) {
      done.after = *after;
      state.passed[done.version.id] = *after;
    }
    if (done.error.ok() && !after.ok()) done.error = after.status();
    return done;
  };

  if (store.policy.newest == config::Newest::kDelta) {
    // In series order, each against a version before it: every chain
    // ends at a base at every moment.
    std::optional<ContentId> last_base;
    for (size_t i = 0; i < present.size(); ++i) {
      ZIPNN_ASSIGN_OR_RETURN(RepackedVersion done, repack(i, [&](RepackedVersion& d) {
                               return RepackForward(store, SeriesAt(present, i), raws, state, d);
                             }));
      if (done.error.ok() && !done.after.delta) last_base = done.version.id;
      raws.KeepOnly(done.version.id, last_base);
      each(done);
    }
    return OkStatus();
  }

  // Newest: whole. Stretch by stretch from the oldest (PlanStretch): the
  // base that ends it made whole first, then its first half in series
  // order, each a delta of the one before it, then its second half from
  // the newest down, each a delta of the one after it. Every delta is
  // thus made against a version in its final form, whose chain never
  // comes back to it. Versions are reported in series order once their
  // stretch is done.
  if (present.empty()) return OkStatus();
  auto against = [&](size_t i, std::optional<size_t> target, BaseReason whole = BaseReason::kNoGain) {
    return repack(
        i, [&](RepackedVersion& d) { return RepackAgainst(store, SeriesAt(present, i), target, whole, raws, state, d); });
  };
  ZIPNN_ASSIGN_OR_RETURN(RepackedVersion first, against(0, std::nullopt, BaseReason::kFirst));
  each(first);
  for (size_t start = 0; start + 1 < present.size();) {
    const StretchPlan plan = PlanStretch(store.policy, start, present.size());
    std::vector<RepackedVersion> done(plan.end - start);  // start + 1 .. end
    ZIPNN_ASSIGN_OR_RETURN(done.back(), against(plan.end, std::nullopt, plan.end_reason));
    for (size_t i = start + 1; i <= plan.forward_end; ++i) {
      raws.KeepOnly(present[i - 1].id, present[start].id);
      ZIPNN_ASSIGN_OR_RETURN(done[i - start - 1], against(i, plan.Target(i)));
    }
    for (size_t i = plan.end - 1; i > plan.forward_end; --i) {
      raws.KeepOnly(present[i + 1].id, std::nullopt);
      ZIPNN_ASSIGN_OR_RETURN(done[i - start - 1], against(i, plan.Target(i)));
    }
    for (const RepackedVersion& d : done) each(d);
    raws.KeepOnly(present[plan.end].id, std::nullopt);
    start = plan.end;
  }
  return OkStatus();
}

}  // namespace zipnn::store
