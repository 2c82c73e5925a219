#include "lib/ops/fsck.h"

#include <map>
#include <memory>
#include <utility>

#include "lib/base/progress.h"
#include "lib/base/strings.h"
#include "lib/git/repository.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"
#include "lib/store/restore.h"
#include "lib/store/retention.h"

namespace zipnn::ops {

namespace {

// Which of `absent` the default remote holds, by asking it once: those
// are counted and said on one line, the others become problems. Without
// a remote, or when it cannot answer, every one is a problem.
struct Unfetched {
  size_t count = 0;
  std::string line;
};
Unfetched NotFetched(Context& context, const store::Store& local,
                     const std::vector<std::pair<FsckProblem, ContentId>>& absent, std::vector<FsckProblem>& problems) {
  if (absent.empty()) return {};
  std::vector<ContentId> ids;
  for (const auto& [problem, id] : absent) ids.push_back(id);
  std::vector<bool> there(ids.size(), false);
  std::string where;
  remote::RemoteStore* store = nullptr;
  const Result<const remote::RemoteSettings*> settings = context.RemoteSettings();
  if (auto name = settings.ok() ? remote::DefaultRemote(**settings) : Result<std::string>(settings.status());
      name.ok()) {
    if (auto opened = context.Remote(*name); opened.ok()) {
      if (auto held = (*opened)->Has(ids); held.ok() && held->size() == ids.size()) {
        there = *held;
        where = *name;
        store = *opened;
      }
    }
  }
  size_t fetchable = 0, retained = 0;
  for (size_t i = 0; i < absent.size(); ++i) {
    if (there[i]) {
      ++fetchable;
      continue;
    }
    // Retention thinned or dropped it there: its record, checked, is kept
    // here as a fetch keeps it, and it is no problem.
    if (store != nullptr) {
      auto text = remote::GetSide(*store, remote::SideKind::kRecord, ids[i]);
      if (text.ok() && *text) {
        auto record = store::ParseRecord(**text, ids[i]);
        if (record.ok() && store::WriteRecord(local.objects, *record).ok()) {
          ++retained;
          continue;
        }
      }
    }
    problems.push_back(absent[i].first);
  }
  if (fetchable + retained == 0) return {};
  std::string line;
  if (retained > 0) {
    line = Counted(retained, "checkpoint") + (retained == 1 ? " was" : " were") +
           " thinned or dropped by retention on " + where + " (" + (retained == 1 ? "its record is" : "their records are") +
           " kept here now; fsck again counts them)";
  }
  if (fetchable == 0) return {0, line};
  return {fetchable, (line.empty() ? "" : line + "\n") + Counted(fetchable, "checkpoint") + (fetchable == 1 ? " is" : " are") + " not fetched into this clone; " +
         where + " has " + (fetchable == 1 ? "it" : "them") + " (`git zipnn fetch --all` gets " +
         (fetchable == 1 ? "it" : "them") + "; `git zipnn fsck --remote " + where + "` checks " + where + ")"};
}

}  // namespace

Result<RemoteFsckResult> FsckRemote(Context& context, bool all, const std::string& named) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * local, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  ZIPNN_ASSIGN_OR_RETURN(const git::FoundPointers found, git::FindPointers(*git_repo, all));
  RemoteFsckResult result;
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(result.remote, remote::RemoteOrDefault(*settings, named));
  ZIPNN_ASSIGN_OR_RETURN(remote::RemoteCheck check, remote::CheckRemote(*local, *settings, result.remote, found));
  result.where = check.where;
  result.checkpoints = check.checkpoints;
  result.objects = check.objects;
  result.temporaries = check.temporaries;
  for (const auto& [place, what] : check.problems) result.problems.emplace_back(*place, what);
  return result;
}

Result<FsckResult> Fsck(Context& context, const FsckRequest& request) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * local, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers found, git::FindPointers(*git_repo, request.all));
  FsckResult result;
  // Each distinct checkpoint once, with the first place that points at it.
  std::map<std::string, std::pair<store::Pointer, git::Place>> checkpoints;
  std::vector<FsckProblem>& problems = result.problems;
  for (const auto& [place, message] : found.damaged) problems.push_back(FsckProblem{place, "", message});
  for (const auto& [pointer, place] : found.pointers) {
    checkpoints.emplace(pointer.id.Hex(), std::make_pair(pointer, place));
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> whole, git::HeldWhole(*git_repo));
  for (const std::string& path : whole) {
    problems.push_back(FsckProblem{git::Place{"index", path}, "",
                                   "tracked, but git holds the file itself, not a git-zipnn pointer (it was added "
                                   "before `git zipnn install`): git add --renormalize -- " +
                                       path + ", then commit"});
  }
  result.pointers = found.pointers.size() + found.damaged.size();
  result.checkpoints = checkpoints.size();
  // Versions whose objects this store lacks: a clone that fetched only
  // what it checked out. Not a problem when the remote holds them.
  std::vector<std::pair<FsckProblem, ContentId>> absent;
  {
    Progress progress("git-zipnn fsck", checkpoints.size(), Progress::Unit::kItems);
    size_t done = 0;
    for (const auto& [id, found] : checkpoints) {
      progress.Update(request.fast ? "reading headers" : "decoding", done++);
      // A version retention thinned is checked as its approximate
      // version; one it dropped has nothing left to check.
      store::Pointer checked = found.first;
      Result<store::Resolved> held = local->Resolve(checked.id);
      if (!held.ok()) {
        problems.push_back(FsckProblem{found.second, id, held.status().message()});
        continue;
      }
      if (held->kind == store::Resolved::Kind::kDropped) {
        ++result.dropped;
        continue;
      }
      if (held->kind == store::Resolved::Kind::kApproximate) {
        ++result.thinned;
        checked.id = held->retained->approximate;
      }
      Status s = store::CheckStored(*local, checked, !request.fast);
      if (s.code() == StatusCode::kNotFound && checked.id == found.first.id) {
        absent.emplace_back(FsckProblem{found.second, id, s.message()}, checked.id);
        continue;
      }
      if (!s.ok()) {
        problems.push_back(FsckProblem{found.second, id,
                                       (checked.id != found.first.id ? "its approximate version (retention): " : "") +
                                           s.message()});
      }
    }
  }
  const Unfetched unfetched = NotFetched(context, *local, absent, problems);
  result.not_fetched = unfetched.count;
  result.not_fetched_line = unfetched.line;
  return result;
}

}  // namespace zipnn::ops
