#include "lib/remote/transfer.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/base/strings.h"
#include "lib/git/listings.h"
#include "lib/remote/select.h"
#include "lib/store/chain.h"

namespace zipnn::remote {

namespace {

TransferOptions OptionsShowing(Progress& progress, const std::string& state) {
  TransferOptions options;
  options.progress = [&progress, state](size_t objects, uint64_t bytes) {
    progress.Update(state + " " + Counted(objects, "object") + ", " + HumanBytes(bytes), 0);
  };
  return options;
}

// Pushes (or fetches) the objects of `found`.
Result<Transferred> Transfer(bool push, const store::Store& repo, const std::string& remote,
                             const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> other, OpenRemoteStore(remote));
  Transferred done;
  done.where = other->where();
  Progress progress(std::string("git-zipnn: ") + (push ? "push to " : "fetch from ") + remote, 0);
  TransferOptions options = OptionsShowing(progress, push ? "sent" : "received");
  ZIPNN_ASSIGN_OR_RETURN(options.parallel, ConcurrentTransfers());
  std::vector<ContentId> ids;
  for (const auto& [pointer, place] : found.pointers) {
    ids.push_back(pointer.id);
    options.raw_sizes[pointer.id] = pointer.size;
  }
  ZIPNN_ASSIGN_OR_RETURN(done.report,
                         push ? PushObjects(repo, *other, ids, options) : FetchObjects(repo, *other, ids, options));
  if (push) {
    // The listings go after the objects: in the same push as a Git LFS
    // server's map, else one of their own.
    std::vector<std::string> blobs;
    for (const auto& [pointer, place] : found.pointers) blobs.push_back(place.blob);
    done.listings = git::KeepListings(remote, blobs);
    ZIPNN_RETURN_IF_ERROR(other->Publish());
    if (done.listings.ok()) done.listings = git::PushListings(remote);
  } else {
    done.listings = git::TakeListings(remote).status();
  }
  return done;
}

}  // namespace

Result<Transferred> PushPointers(const store::Store& repo, const std::string& remote, const git::FoundPointers& found) {
  Result<Transferred> pushed = Transfer(/*push=*/true, repo, remote, found);
  if (pushed.ok() || pushed.status().code() != StatusCode::kNotFound) return pushed;
  // A chain not whole here: name the pointer it belongs to (PushObjects
  // walks every chain before it sends anything, so nothing was sent). One
  // the remote holds was not walked: the pointer named is one whose walk
  // fails as the push did.
  for (const auto& [pointer, place] : found.pointers) {
    Status whole = store::VisitChain(repo, pointer.id, [](const store::ChainLink&) {});
    if (!whole.ok() && whole.message() == pushed.status().message()) {
      return Annotate(whole, "cannot push " + place.path + " (in " + place.rev + ")");
    }
  }
  return pushed;
}

Result<Transferred> FetchPointers(const store::Store& repo, const std::string& remote,
                                  const git::FoundPointers& found) {
  return Transfer(/*push=*/false, repo, remote, found);
}

Result<RemoteCheck> CheckRemote(const store::Store& repo, const std::string& remote, const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> other, OpenRemoteStore(remote));
  RemoteCheck check;
  check.where = other->where();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(repo.temp_dir));
  std::string dir = repo.temp_dir + "/fsck-remote-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return IoError(dir + ": cannot create a scratch folder");
  const store::Store scratch{store::ObjectStore(dir + "/objects"), dir + "/tmp", dir + "/cache", "", repo.policy};
  std::set<ContentId> seen;
  {
    Progress progress("git-zipnn fsck: remote " + remote, found.pointers.size());
    for (const auto& [pointer, place] : found.pointers) {
      if (!seen.insert(pointer.id).second) continue;
      progress.Update("decoding", check.checkpoints++);
      TransferOptions options;
      options.raw_sizes[pointer.id] = pointer.size;
      Result<TransferReport> got = FetchObjects(scratch, *other, {pointer.id}, options);
      if (!got.ok()) check.problems.emplace_back(&place, got.status().message());
    }
  }
  auto listed = scratch.objects.List();
  if (listed.ok()) {
    for (const auto& entry : *listed) check.objects += entry.id ? 1 : 0;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  ZIPNN_ASSIGN_OR_RETURN(check.temporaries, other->RemoveOldTemporaries());
  return check;
}

Result<bool> FetchChain(const store::Store& repo, const ContentId& id, std::optional<uint64_t> raw_size,
                        const store::FindCopy& find_copy, ByteSink* deliver) {
  auto remote = DefaultRemote();
  if (!remote.ok()) return false;  // nowhere to fetch from: the restore names what is missing
  auto from = OpenRemoteStore(*remote);
  if (!from.ok()) return Annotate(from.status(), "remote " + *remote + " cannot be read");
  Progress progress("git-zipnn: fetch from " + *remote, 0);
  TransferOptions options = OptionsShowing(progress, "received");
  ZIPNN_ASSIGN_OR_RETURN(options.parallel, ConcurrentTransfers());
  if (raw_size) options.raw_sizes[id] = *raw_size;
  options.find_copy = find_copy;
  options.deliver = deliver;
  ZIPNN_ASSIGN_OR_RETURN(TransferReport report, FetchObjects(repo, **from, {id}, options));
  // The first fetch of a process (a clone's checkout, a pull's) also
  // brings the listings that `git log -p` will want; a failure costs only
  // that speed.
  static std::once_flag listings;
  std::call_once(listings, [&] { (void)git::TakeListings(*remote); });
  return report.delivered;
}

}  // namespace zipnn::remote
