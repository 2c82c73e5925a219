#include "lib/remote/retention.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "lib/base/file.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"
#include "lib/store/store.h"
#include "lib/store/chain.h"
#include "lib/store/retention.h"

namespace zipnn::remote {

namespace {

uint64_t LocalBytes(const store::Store& local, const ContentId& id) {
  auto file = local.objects.Open(id);
  return file.ok() ? file->size() : 0;
}

// Approximate objects `remote` holds for versions `taken` drops, by the
// remote's own records (a version it had thinned), that no version
// thinned still reads.
Result<std::set<ContentId>> Unthinned(RemoteStore& remote, const std::map<ContentId, store::Retained>& taken,
                                      const std::map<ContentId, Held>& held,
                                      const std::vector<ContentId>& every_version) {
  std::set<ContentId> read(every_version.begin(), every_version.end());
  for (const auto& [id, record] : taken) {
    if (!record.dropped) read.insert(record.approximate);
  }
  std::set<ContentId> unthinned;
  for (const auto& [id, record] : taken) {
    if (!record.dropped) continue;
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> text, GetSide(remote, SideKind::kRecord, id));
    if (!text) continue;
    // A damaged record there is replaced by this one; what it named is
    // not trusted for removing anything.
    Result<store::Retained> there = store::ParseRecord(*text, id);
    if (!there.ok() || there->dropped) continue;
    if (held.count(there->approximate) != 0 && read.count(there->approximate) == 0) {
      unthinned.insert(there->approximate);
    }
  }
  return unthinned;
}

}  // namespace

Result<RemoteRetention> RetainOnRemote(const store::Store& local, RemoteStore& remote,
                                       const std::vector<ContentId>& every_version, bool dry_run,
                                       const std::vector<ContentId>& planned,
                                       const std::function<void(const std::string&)>& progress,
                                       bool pushes_stopped, const std::function<Status()>& before_removal,
                                       const std::set<ContentId>& stays) {
  const Capabilities can = remote.capabilities();
  if (can.retention == nullptr) {
    return Unsupported(remote.where() +
                       " cannot remove objects (a Git LFS server's API has no delete): nothing was removed there");
  }
  Retention& there = *can.retention;
  if (!dry_run && can.locked_removal == nullptr && !pushes_stopped) return NoLockRefusal(remote, remote.where());
  auto say = [&](const std::string& what) {
    if (progress) progress(what);
  };
  RemoteRetention report;
  // What retention took here, by the local store's records.
  std::map<ContentId, store::Retained> taken;
  for (const ContentId& id : std::set<ContentId>(every_version.begin(), every_version.end())) {
    ZIPNN_ASSIGN_OR_RETURN(store::Resolved held, local.Resolve(id));
    if (held.retained) taken.emplace(id, std::move(*held.retained));
  }
  for (const ContentId& id : stays) {
    if (taken.erase(id) != 0) {
      report.kept.emplace_back(id, "the rules keep it now, though an earlier retain took it here");
    }
  }
  if (dry_run) {
    for (const ContentId& id : planned) {
      store::Retained dropped;  // stands for what the local retain will make of it
      dropped.id = id;
      dropped.dropped = true;
      taken.insert_or_assign(id, dropped);
    }
  }
  // Everything the remote holds, and what each object is a delta of.
  say("listing " + remote.where());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ContentId> listed, there.List());
  std::map<ContentId, Held> held;
  for (size_t i = 0; i < listed.size(); ++i) {
    say("reading the headers of " + remote.where() + " (" + std::to_string(i + 1) + " of " +
        std::to_string(listed.size()) + ")");
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Held> h, there.Stat(listed[i]));
    if (!h) continue;  // gone meanwhile
    held.emplace(listed[i], *h);
    report.bytes_before += h->size;
  }
  report.objects = held.size();

  // The approximate versions, with their chains, that the remote lacks.
  std::vector<ContentId> approximate;
  std::set<ContentId> to_send;
  for (const auto& [id, record] : taken) {
    if (record.dropped) continue;
    approximate.push_back(record.approximate);
    ZIPNN_RETURN_IF_ERROR(store::VisitChain(local, record.approximate, [&](const store::ChainLink& link) {
      if (held.count(link.id) == 0) to_send.insert(link.id);
    }));
  }
  for (const ContentId& id : to_send) report.sent_bytes += LocalBytes(local, id);
  report.sent = to_send.size();
  report.records = taken.size();

  // What goes: the exact objects of what was taken, and the approximate
  // ones of versions the remote had thinned that are dropped now (unless
  // a version thinned still reads one), unless something that stays is a
  // delta of one and cannot be re-sent from here.
  std::set<ContentId> going;
  for (const auto& [id, record] : taken) {
    if (held.count(id) != 0) going.insert(id);
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::set<ContentId> unthinned,
                         Unthinned(remote, taken, held, every_version));
  going.insert(unthinned.begin(), unthinned.end());
  std::vector<ContentId> to_replace;
  auto rests_on_going = [&](const Held& h) {
    const std::vector<ContentId> needs = h.needs();
    return std::any_of(needs.begin(), needs.end(), [&](const ContentId& n) { return going.count(n) != 0; });
  };
  for (const auto& [id, h] : held) {
    if (going.count(id) != 0 || !rests_on_going(h)) continue;
    if (local.objects.Has(id)) {
      to_replace.push_back(id);
      continue;
    }
    // A version this clone does not hold: its chain stays as it is.
    std::vector<ContentId> below = h.needs();
    std::set<ContentId> passed;
    while (!below.empty()) {
      const ContentId at = below.back();
      below.pop_back();
      if (!passed.insert(at).second) continue;
      if (going.erase(at) != 0) {
        report.kept.emplace_back(
            at, "object " + id.Hex().substr(0, 12) + " on the remote, which this clone does not hold, rests on it");
      }
      if (auto next = held.find(at); next != held.end()) {
        const std::vector<ContentId> more = next->second.needs();
        below.insert(below.end(), more.begin(), more.end());
      }
    }
  }
  for (const ContentId& id : going) {
    report.removed_bytes += held.at(id).size;
    ++(unthinned.count(id) != 0 ? report.unthinned : report.removed);
  }
  report.replaced = to_replace.size();
  report.bytes_after = report.bytes_before - report.removed_bytes + report.sent_bytes;
  if (dry_run) return report;

  // 1. The approximate versions, proved by the receiver as any push.
  if (!approximate.empty()) {
    say("sending " + std::to_string(report.sent) + " approximate objects to " + remote.where());
    ZIPNN_ASSIGN_OR_RETURN(TransferReport sent, PushObjects(local, remote, approximate, TransferOptions{}));
    (void)sent;
  }
  // 2. What stays and rests on what goes: as this store holds it (whose
  // chains the local retain cut loose from what goes), its bases first.
  for (const ContentId& id : to_replace) {
    say("re-sending " + id.Hex().substr(0, 12) + " to " + remote.where());
    ZIPNN_ASSIGN_OR_RETURN(store::ChainLink link, store::ReadLink(local, id));
    for (const ContentId& needed : link.needs()) {
      if (going.count(needed) != 0) {
        return Corruption("object " + id.Hex() + " is a delta of " + needed.Hex() +
                          " here too, which retention took: run `git zipnn retain` (without --remote) first");
      }
    }
    if (link.delta) ZIPNN_RETURN_IF_ERROR(PushObjects(local, remote, link.needs(), TransferOptions{}).status());
    ZIPNN_ASSIGN_OR_RETURN(ReadFile object, local.objects.Open(id));
    const uint64_t before = held.at(id).size;
    ZIPNN_RETURN_IF_ERROR(there.Replace(id, object));
    report.bytes_after = report.bytes_after - before + object.size();
  }
  // 3. The records, so that a clone reading one of those versions learns
  // what became of it.
  say("sending " + std::to_string(taken.size()) + " retention records to " + remote.where());
  for (const auto& [id, record] : taken) {
    ZIPNN_RETURN_IF_ERROR(PutSide(remote, SideKind::kRecord, id, store::RecordText(record)));
  }
  // 4. Only now, the exact objects; each checked once more first.
  for (const ContentId& id : to_replace) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Held> h, there.Stat(id));
    for (const ContentId& needed : h ? h->needs() : std::vector<ContentId>{}) {
      if (going.count(needed) == 0) continue;
      return Corruption("object " + id.Hex() + " on " + remote.where() + " is still a delta of " + needed.Hex() +
                        " after it was re-sent: nothing was removed");
    }
  }
  if (before_removal) ZIPNN_RETURN_IF_ERROR(before_removal());
  // What rests on an object that would go keeps it: an object pushed
  // since the listing above, or kept by another retain meanwhile.
  auto keep = [&](const ContentId& id, const ContentId& above) {
    const uint64_t size = held.at(id).size;
    report.removed_bytes -= size;
    report.bytes_after += size;
    --(unthinned.count(id) != 0 ? report.unthinned : report.removed);
    report.kept.emplace_back(id, "object " + above.Hex().substr(0, 12) + " there rests on it (pushed since retain "
                                 "listed the remote, or a version this clone does not know)");
  };
  if (can.locked_removal != nullptr) {
    say("removing " + std::to_string(going.size()) + " objects from " + remote.where());
    ZIPNN_ASSIGN_OR_RETURN(Pruned pruned, can.locked_removal->RemoveUnneeded(going));
    for (const auto& [id, above] : pruned.kept) {
      if (going.count(id) != 0) keep(id, above);
    }
    return report;
  }
  // No lock (S3), and no one pushes, the caller says: one more look, as
  // close to the removal as can be.
  say("listing " + remote.where() + " again");
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ContentId> now, there.List());
  std::map<ContentId, std::vector<ContentId>> needs_of;
  for (size_t k = 0; k < now.size(); ++k) {
    // Each header again: re-sent objects rest elsewhere now, and a push
    // may have stored one as a delta meanwhile.
    say("reading the headers of " + remote.where() + " again (" + std::to_string(k + 1) + " of " +
        std::to_string(now.size()) + ")");
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Held> h, there.Stat(now[k]));
    if (h) needs_of.emplace(now[k], h->needs());
  }
  // Everything what stays rests on, down every chain, stays too.
  std::set<ContentId> passed;
  for (const auto& [id, needs] : needs_of) {
    if (going.count(id) != 0) continue;
    std::vector<ContentId> below = needs;
    while (!below.empty()) {
      const ContentId at = below.back();
      below.pop_back();
      if (!passed.insert(at).second) continue;
      if (going.erase(at) != 0) keep(at, id);
      if (auto next = needs_of.find(at); next != needs_of.end()) {
        below.insert(below.end(), next->second.begin(), next->second.end());
      }
    }
  }
  size_t i = 0;
  for (const ContentId& id : going) {
    say("removing from " + remote.where() + " (" + std::to_string(++i) + " of " + std::to_string(going.size()) + ")");
    ZIPNN_RETURN_IF_ERROR(there.Remove(id));
  }
  return report;
}

Status NoLockRefusal(const RemoteStore& remote, const std::string& name) {
  return InvalidArgument("remote " + name + " (" + remote.where() +
                         ") has no lock that pushes respect: a teammate's push while retain removes objects there "
                         "could lose a version that rests on one of them. Make sure no one pushes to it until retain "
                         "ends, then run `git zipnn retain --remote " + name +
                         " --yes --pushes-stopped`; nothing was changed");
}

Result<bool> FetchRecord(const store::Store& local, const ContentId& id) {
  const Result<RemoteSettings> settings = RemoteSettings::Read();
  if (!settings.ok()) return false;  // as no remote
  auto name = DefaultRemote(*settings);
  if (!name.ok()) return false;
  auto remote = OpenRemoteStore(*settings, *name);
  if (!remote.ok()) return false;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> text, GetSide(**remote, SideKind::kRecord, id));
  if (!text) return false;
  ZIPNN_ASSIGN_OR_RETURN(store::Retained record, store::ParseRecord(*text, id));
  ZIPNN_RETURN_IF_ERROR(store::WriteRecord(local.objects, record));
  return true;
}

}  // namespace zipnn::remote
