#include "lib/store/retain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "lib/container/format.h"
#include "lib/store/checkin.h"
#include "lib/store/gc.h"
#include "lib/store/repack.h"
#include "lib/store/restore.h"

namespace zipnn::store {

namespace {

uint64_t ObjectBytes(const Store& store, const ContentId& id) {
  struct stat st;
  return ::stat(store.objects.PathOf(id).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The size of the checkpoint `id`'s object holds, from its header; 0
// when it cannot be read.
uint64_t RawSize(const Store& store, const ContentId& id) {
  auto object = store.objects.Open(id);
  if (!object.ok()) return 0;
  auto info = container::ReadObjectInfo(*object);
  return info.ok() ? info->header.raw_size : 0;
}

uint64_t StoreBytes(const Store& store) {
  uint64_t total = 0;
  auto listed = store.objects.List();
  if (!listed.ok()) return 0;
  for (const auto& e : *listed) {
    if (e.kind == ObjectStore::Kind::kObject) total += e.size;
  }
  return total;
}

std::string Ordinal(uint32_t n) {
  const uint32_t tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

// Stores `file` (its layout read, content `id`) whole, proved first: as a
// new object, or in place of the one the store holds.
Status StoreWhole(const Store& store, const formats::Checkpoint& file, const ContentId& id, bool replace) {
  const formats::CheckpointView view = file.View(id);
  ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidate(store, view, nullptr, 0, /*verify=*/true));
  ZIPNN_RETURN_IF_ERROR(VerifyCandidate(store, c, view, nullptr));
  return replace ? store.objects.Replace(id, c.file.path()) : store.objects.Adopt(id, c.file.path());
}

// Thins version `id` at `precision`: stores its approximate bytes and
// writes its record. nullopt when rounding changes no byte.
Result<std::optional<Retained>> ThinOne(const Store& store, const ContentId& id, const codec::Precision& precision,
                                        int64_t now) {
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint exact, RestoreToScratch(store, id));
  ZIPNN_RETURN_IF_ERROR(exact.ReadLayout());
  std::vector<TensorError> errors;
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint approx,
                         formats::Checkpoint::Spool(store.temp_dir, [&](ByteSink& out) -> Status {
                           ZIPNN_ASSIGN_OR_RETURN(errors, formats::Thin(exact.View(id), precision, out));
                           return OkStatus();
                         }));
  ZIPNN_ASSIGN_OR_RETURN(ContentId approximate, HashSource(approx.file()));
  if (approximate == id) return std::optional<Retained>();
  if (!store.objects.Has(approximate)) {
    ZIPNN_RETURN_IF_ERROR(approx.ReadLayout());
    ZIPNN_RETURN_IF_ERROR(StoreWhole(store, approx, approximate, /*replace=*/false));
  }
  Retained r;
  r.id = id;
  r.size = exact.file().size();
  r.date = now;
  r.approximate = approximate;
  r.precision = precision;
  r.tensors = std::move(errors);
  ZIPNN_RETURN_IF_ERROR(WriteRecord(store.objects, r));
  return std::optional<Retained>(std::move(r));
}

// Re-stores `id` whole (it is a delta of a version about to go).
Status RestoreWhole(const Store& store, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint file, RestoreToScratch(store, id));
  ZIPNN_RETURN_IF_ERROR(file.ReadLayout());
  return StoreWhole(store, file, id, /*replace=*/true);
}

}  // namespace

const char* FateName(Fate fate) {
  switch (fate) {
    case Fate::kKeep:
      return "keep";
    case Fate::kThin:
      return "thin";
    case Fate::kDrop:
      return "drop";
  }
  return "?";
}

std::vector<PlannedVersion> PlanSeries(const Store& store, const std::vector<Version>& series,
                                       const config::Policy::RetentionRule& rule,
                                       const std::function<VersionFacts(const ContentId&)>& facts, int64_t now) {
  const int64_t since = rule.keep_since_date > 0  ? rule.keep_since_date
                        : rule.keep_since_age > 0 ? now - rule.keep_since_age
                                                  : 0;
  std::vector<PlannedVersion> plan;
  const size_t n = series.size();
  for (size_t i = 0; i < n; ++i) {
    PlannedVersion p;
    p.version = series[i];
    p.exact = store.objects.Has(p.version.id);
    auto record = ReadRecord(store.objects, p.version.id);
    if (record.ok()) p.record = *record;
    const std::string damaged = record.ok() ? "" : "; " + record.status().message();
    const VersionFacts f = facts(p.version.id);
    if (n - i <= rule.keep_newest) {
      p.why = "newest " + std::to_string(rule.keep_newest);
    } else if (f.named) {
      p.why = "named";
    } else if (rule.keep_tagged && !f.tags.empty()) {
      p.why = "tagged " + f.tags.front();
    } else if (rule.keep_every > 0 && i % rule.keep_every == 0) {
      p.why = "every " + Ordinal(rule.keep_every);
    } else if (since > 0 && f.committed >= since) {
      p.why = "committed since " + Day(since);
    } else if (f.committed == 0) {
      p.why = "not committed";
    }
    p.precision = rule.precision;
    p.fate = !p.why.empty() ? Fate::kKeep : rule.drop ? Fate::kDrop : Fate::kThin;
    if (!p.exact && p.record) {
      // Its exact bytes are gone: it stays as it is, or goes further.
      if (p.record->dropped || p.fate == Fate::kDrop) {
        p.fate = Fate::kDrop;
      } else {
        p.fate = Fate::kThin;
      }
      p.rule_keeps = !p.why.empty();
      if (p.rule_keeps) p.why = "kept by the rule, but " + p.record->Describe();
    } else if (!p.exact) {
      p.fate = Fate::kKeep;
      p.why = "not in this store" + damaged;
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

void KeepWhatOthersHold(Plans& plans, const std::map<ContentId, std::set<std::string>>& paths,
                        const std::function<std::string(const std::string&)>& series_of) {
  // Which series take which versions (thin or drop them).
  std::map<std::string, std::set<ContentId>> taken;
  for (const auto& [name, plan] : plans) {
    for (const PlannedVersion& p : plan) {
      if (p.fate != Fate::kKeep) taken[name].insert(p.version.id);
    }
  }
  std::set<std::string> planned;
  for (const auto& [name, plan] : plans) planned.insert(name);
  for (auto& [name, plan] : plans) {
    for (PlannedVersion& p : plan) {
      // A version whose exact bytes an earlier retain took has nothing to keep.
      if (p.fate == Fate::kKeep || !p.exact) continue;
      auto where = paths.find(p.version.id);
      if (where == paths.end()) continue;
      for (const std::string& path : where->second) {
        const std::string other = series_of(path);
        if (other == name) continue;
        auto t = taken.find(other);
        if (t != taken.end() && t->second.count(p.version.id) != 0) continue;
        p.fate = Fate::kKeep;
        p.why = "also " + path + ", which " +
                (planned.count(other) != 0 ? std::string("its rule keeps") : std::string("no rule covers"));
        break;
      }
    }
  }
  // A content that several series take goes one way, as the first series
  // that thins it says (its approximate version serves them all): one
  // that would drop it, or thin it at another precision, thins it so.
  // Else its exact bytes would go twice, and the first approximate object
  // would be left that no record names; or, thinned before, a drop would
  // remove the approximate version the other's rule keeps.
  std::map<ContentId, const PlannedVersion*> thinned;
  for (const auto& [name, plan] : plans) {
    for (const PlannedVersion& p : plan) {
      if (p.fate == Fate::kThin) thinned.emplace(p.version.id, &p);
    }
  }
  for (auto& [name, plan] : plans) {
    for (PlannedVersion& p : plan) {
      if (p.fate == Fate::kKeep) continue;
      auto first = thinned.find(p.version.id);
      if (first == thinned.end() || first->second == &p) continue;
      const PlannedVersion& by = *first->second;
      // What it is (or was, thinned before) rounded to.
      const codec::Precision& at = by.record && !by.record->dropped ? by.record->precision : by.precision;
      if (p.fate == Fate::kThin && (!p.exact || (p.precision.kind == at.kind && p.precision.bits == at.bits))) {
        continue;
      }
      p.fate = Fate::kThin;
      p.precision = at;
      p.why = "also " + by.version.path + ", whose rule thins it to " + at.Text();
    }
  }
}

Result<RetainTotals> ApplyRetention(const Store& store, const Removing& removing, const Plans& plans,
                                    const RetainOptions& options) {
  (void)removing;  // the proof that no add builds on what goes
  RetainTotals totals;
  totals.store_before = StoreBytes(store);
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  std::vector<std::pair<std::string, std::vector<RetainedVersion>>> results;
  std::map<ContentId, Retained> thinned_now;  // a content of several series is thinned once
  std::set<ContentId> going;                  // exact objects to remove
  std::set<ContentId> unthinned;  // approximate objects of versions dropped now
  // A content one series keeps and another takes stays (KeepWhatOthersHold
  // says so in the plan; this holds whatever the plan says).
  std::set<ContentId> kept_somewhere;
  for (const auto& [name, plan] : plans) {
    for (const PlannedVersion& p : plan) {
      if (p.fate == Fate::kKeep) kept_somewhere.insert(p.version.id);
    }
  }
  for (const auto& [name, plan] : plans) {
    std::vector<RetainedVersion> done;
    // What stays of the series, in series order: the approximate versions
    // of those thinned and the exact ones kept.
    std::vector<Version> staying;
    for (const PlannedVersion& p : plan) {
      RetainedVersion r;
      r.planned = p;
      r.record = p.record;
      r.before = p.exact ? ObjectBytes(store, p.version.id) : 0;
      if (p.record && !p.record->dropped) r.before += ObjectBytes(store, p.record->approximate);
      if (auto again = thinned_now.find(p.version.id); p.fate == Fate::kThin && again != thinned_now.end()) {
        r.record = again->second;
      } else if (p.fate == Fate::kThin && p.exact && !(p.record && !p.record->dropped)) {
        progress("thinning " + p.version.path);
        auto made = ThinOne(store, p.version.id, p.precision, options.now);
        if (!made.ok()) {
          r.error = made.status();
        } else if (!*made) {
          r.planned.fate = Fate::kKeep;
          r.planned.why = "nothing to thin (no float tensors, or none that rounding changes)";
        } else {
          r.record = **made;
          thinned_now.emplace(p.version.id, **made);
        }
      }
      if (r.planned.fate == Fate::kDrop && !(r.record && r.record->dropped)) {
        if (r.record && !r.record->dropped) unthinned.insert(r.record->approximate);
        Retained dropped;
        dropped.id = p.version.id;
        dropped.size = r.record ? r.record->size : RawSize(store, p.version.id);
        dropped.dropped = true;
        dropped.date = options.now;
        Status written = WriteRecord(store.objects, dropped);
        if (!written.ok()) {
          r.error = written;
        } else {
          r.record = dropped;
        }
      }
      if (r.error.ok() && r.planned.fate != Fate::kKeep && p.exact && kept_somewhere.count(p.version.id) == 0) {
        going.insert(p.version.id);
      }
      if (r.planned.fate == Fate::kThin && r.error.ok() && r.record && !r.record->dropped) {
        staying.push_back(Version{r.record->approximate, p.version.step, p.version.path});
      }
      if (r.planned.fate == Fate::kKeep && p.exact) staying.push_back(p.version);
      done.push_back(std::move(r));
    }
    // They are placed as the policy places one series: a delta takes any
    // of them for its base, exact or approximate (a delta is exact on
    // either), so the oldest kept version is not stored whole for having
    // lost its base, nor the newest thinned one for being the newest.
    progress("placing what stays of " + name);
    ZIPNN_RETURN_IF_ERROR(RepackSeries(store, staying, [](const RepackedVersion&) {}));
    results.emplace_back(name, std::move(done));
  }

  // The approximate versions of versions dropped now go with the exact
  // ones, and are weighed the same way below: needed still, they stay;
  // rested on by something needed, that is stored whole first.
  going.insert(unthinned.begin(), unthinned.end());
  // What stays needed: every version no retain thinned or dropped, and the
  // approximate versions of those it thinned, with their chains.
  auto needed_now = [&] {
    Needed needed;
    for (const ContentId& id : options.every_version) {
      if (going.count(id) == 0) {
        NeedChain(store, id, needed);
      } else if (auto record = ReadRecord(store.objects, id); record.ok() && *record && !(*record)->dropped) {
        NeedChain(store, (*record)->approximate, needed);
      }
    }
    return needed;
  };
  Needed needed = needed_now();
  // Anything needed that is a delta of a version about to go (a version
  // of another series, whose parent it was), or takes tensors from one,
  // is stored whole first.
  for (const std::string& hex : std::set<std::string>(needed.ids)) {
    const ContentId id = *ContentId::FromHex(hex);
    if (going.count(id) != 0) continue;
    auto link = ReadLink(store, id);
    if (!link.ok()) continue;
    const std::vector<ContentId> needs = link->needs();
    if (std::none_of(needs.begin(), needs.end(), [&](const ContentId& n) { return going.count(n) != 0; })) continue;
    progress("storing " + hex.substr(0, 12) + " whole: it was a delta of a version that goes");
    ZIPNN_RETURN_IF_ERROR(RestoreWhole(store, id));
    ++totals.restored_whole;
  }
  if (totals.restored_whole > 0) needed = needed_now();
  for (const ContentId& id : going) {
    // Something still reads it: it stays.
    if (needed.ids.count(id.Hex()) != 0 || options.also_needed.count(id.Hex()) != 0) continue;
    const std::string path = store.objects.PathOf(id);
    if (::unlink(path.c_str()) == 0) {
      ++(unthinned.count(id) != 0 ? totals.unthinned : totals.removed);
    } else if (errno != ENOENT) {
      return IoError(path + ": cannot remove: " + std::strerror(errno));
    }
  }
  for (auto& [name, done] : results) {
    for (RetainedVersion& r : done) {
      const ContentId& id = r.planned.version.id;
      r.after = store.objects.Has(id) ? ObjectBytes(store, id) : 0;
      if (r.record && !r.record->dropped) r.after += ObjectBytes(store, r.record->approximate);
    }
    if (options.each) options.each(name, done);
  }
  totals.store_after = StoreBytes(store);
  return totals;
}

}  // namespace zipnn::store
