// git zipnn fsck: every checkpoint the repository points at can be
// restored. Finds the git-zipnn pointers in HEAD's tree (with --all: in
// every commit reachable from a ref, a reflog or a stash, and in the
// index), and checks each distinct checkpoint once: every object of its
// chain present and filed under the right id, and (unless --fast) decoded
// to exactly its content.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "lib/git/git.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/git/pointers.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"
#include "lib/store/retention.h"

namespace zipnn::cmd {

namespace {

struct FsckArgs {
  bool all = false;
  bool json = false;
  bool fast = false;
  int threads = 0;
  std::optional<std::string> remote;  // --remote [NAME]: "" for the default remote
};

// fsck --remote: the remote's store, not this one (lib/remote/transfer.h CheckRemote).
Status RunFsckRemote(const FsckArgs& a, const store::Store& repo, const FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings settings, remote::RemoteSettings::Read());
  ZIPNN_ASSIGN_OR_RETURN(std::string remote, remote::RemoteOrDefault(settings, *a.remote));
  ZIPNN_ASSIGN_OR_RETURN(remote::RemoteCheck check, remote::CheckRemote(repo, settings, remote, found));
  for (const auto& [place, what] : check.problems) {
    std::printf("%s at %.10s: %s\n", place->path.c_str(), place->rev.c_str(), what.c_str());
  }
  // Only a folder keeps what killed uploads left: the count is news only
  // when there was something to remove.
  const std::string removed =
      check.temporaries == 0 ? "" : "; " + Counted(check.temporaries, "old temporary file") + " removed";
  std::printf("remote %s (%s): %zu checkpoint%s, %s decode to their ids%s%s\n", remote.c_str(), check.where.c_str(),
              check.checkpoints, check.checkpoints == 1 ? "" : "s", Counted(check.objects, "object").c_str(),
              check.problems.empty() ? "" : (", " + std::to_string(check.problems.size()) + " with problems").c_str(),
              removed.c_str());
  if (check.problems.empty()) return OkStatus();
  return Corruption(std::to_string(check.problems.size()) + " checkpoint" + (check.problems.size() == 1 ? "" : "s") +
                    " cannot be fetched whole from " + remote +
                    " (git zipnn push from a clone that has them sends "
                    "them again)");
}

struct Problem {
  Place place;
  std::string id;  // empty for a damaged pointer
  std::string what;
};

// Which of `absent` the default remote holds, by asking it once: those
// are counted and said on one line, the others become problems. Without
// a remote, or when it cannot answer, every one is a problem.
struct Unfetched {
  size_t count = 0;
  std::string line;
};
Unfetched NotFetched(const store::Store& repo, const std::vector<std::pair<Problem, ContentId>>& absent,
                     std::vector<Problem>& problems) {
  if (absent.empty()) return {};
  std::vector<ContentId> ids;
  for (const auto& [problem, id] : absent) ids.push_back(id);
  std::vector<bool> there(ids.size(), false);
  std::string where;
  std::unique_ptr<remote::RemoteStore> store;
  if (auto name = remote::DefaultRemote(); name.ok()) {
    if (auto opened = remote::OpenRemoteStore(*name); opened.ok()) {
      if (auto held = (*opened)->Has(ids); held.ok() && held->size() == ids.size()) {
        there = *held;
        where = *name;
        store = std::move(*opened);
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
    if (store) {
      auto text = remote::GetSide(*store, remote::SideKind::kRecord, ids[i]);
      if (text.ok() && *text) {
        auto record = store::ParseRecord(**text, ids[i]);
        if (record.ok() && store::WriteRecord(repo.objects, *record).ok()) {
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

Status RunFsck(const FsckArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  if (a.threads > 0) repo.policy.threads = a.threads;
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, git::FindPointers(git_repo, a.all));
  if (a.remote) return RunFsckRemote(a, repo, found);
  // Each distinct checkpoint once, with the first place that points at it.
  std::map<std::string, std::pair<store::Pointer, Place>> checkpoints;
  std::vector<Problem> problems;
  for (const auto& [place, message] : found.damaged) problems.push_back(Problem{place, "", message});
  for (const auto& [pointer, place] : found.pointers) {
    checkpoints.emplace(pointer.id.Hex(), std::make_pair(pointer, place));
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> whole, git::HeldWhole(git_repo));
  for (const std::string& path : whole) {
    problems.push_back(Problem{Place{"index", path}, "",
                               "tracked, but git holds the file itself, not a git-zipnn pointer (it was added before "
                               "`git zipnn install`): git add --renormalize -- " +
                                   path + ", then commit"});
  }
  const size_t pointers = found.pointers.size() + found.damaged.size();
  size_t thinned = 0, dropped = 0;
  // Versions whose objects this store lacks: a clone that fetched only
  // what it checked out. Not a problem when the remote holds them.
  std::vector<std::pair<Problem, ContentId>> absent;
  {
    Progress progress("git-zipnn fsck", checkpoints.size(), Progress::Unit::kItems);
    size_t done = 0;
    for (const auto& [id, found] : checkpoints) {
      progress.Update(a.fast ? "reading headers" : "decoding", done++);
      // A version retention thinned is checked as its approximate
      // version; one it dropped has nothing left to check.
      store::Pointer checked = found.first;
      if (!repo.objects.Has(checked.id)) {
        auto record = store::ReadRecord(repo.objects, checked.id);
        if (!record.ok()) {
          problems.push_back(Problem{found.second, id, record.status().message()});
          continue;
        }
        if (*record && (*record)->dropped) {
          ++dropped;
          continue;
        }
        if (*record) {
          ++thinned;
          checked.id = (*record)->approximate;
        }
      }
      Status s = store::CheckStored(repo, checked, !a.fast);
      if (s.code() == StatusCode::kNotFound && checked.id == found.first.id) {
        absent.emplace_back(Problem{found.second, id, s.message()}, checked.id);
        continue;
      }
      if (!s.ok()) {
        problems.push_back(Problem{found.second, id,
                                   (checked.id != found.first.id ? "its approximate version (retention): " : "") +
                                       s.message()});
      }
    }
  }
  const Unfetched unfetched = NotFetched(repo, absent, problems);
  std::string retained;
  if (thinned + dropped > 0) {
    retained = " (retention: " + std::to_string(thinned) + " thinned, checked as their approximate versions; " +
               std::to_string(dropped) + " dropped)";
  }

  const std::string scope = a.all ? "every ref, reflog, stash and the index" : "HEAD";
  if (a.json) {
    nlohmann::ordered_json doc = {{"scope", a.all ? "all" : "HEAD"},
                                  {"mode", a.fast ? "fast" : "full"},
                                  {"pointers", pointers},
                                  {"checkpoints", checkpoints.size()},
                                  {"thinned", thinned},
                                  {"dropped", dropped},
                                  {"not_fetched", unfetched.count},
                                  {"problems", nlohmann::ordered_json::array()}};
    for (const Problem& p : problems) {
      doc["problems"].push_back({{"path", p.place.path},
                                 {"rev", p.place.rev},
                                 {"id", p.id.empty() ? nullptr : nlohmann::ordered_json(p.id)},
                                 {"problem", p.what}});
    }
    std::printf("%s\n", doc.dump(1).c_str());
  } else {
    for (const Problem& p : problems) {
      std::printf("%s at %.10s: %s%s\n", p.place.path.c_str(), p.place.rev.c_str(),
                  p.id.empty() ? "" : ("checkpoint " + p.id + ": ").c_str(), p.what.c_str());
    }
    std::printf("%zu pointer%s to %zu checkpoint%s in %s: %s%s\n", pointers, pointers == 1 ? "" : "s",
                checkpoints.size(), checkpoints.size() == 1 ? "" : "s", scope.c_str(),
                problems.empty()
                    ? (a.fast ? (unfetched.count > 0 ? "every object fetched present, headers intact"
                                                     : "every object present, headers intact")
                       : unfetched.count > 0 ? "every one fetched restores exactly"
                       : retained.empty()    ? "every one restores exactly"
                                             : "every exact one restores exactly")
                    : (std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s")).c_str(),
                retained.c_str());
    if (!unfetched.line.empty()) std::printf("%s\n", unfetched.line.c_str());
  }
  if (!problems.empty()) {
    // The advice for objects; each other problem's line says its own fix.
    const bool objects = std::any_of(problems.begin(), problems.end(), [](const Problem& p) { return !p.id.empty(); });
    return Corruption(
        std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + " found" +
        (objects ? " (fetch missing objects from a clone that has them, or restore the store)" : " (see above)"));
  }
  return OkStatus();
}

}  // namespace

Action SetupFsck(CLI::App& sub) {
  auto a = std::make_shared<FsckArgs>();
  sub.add_flag("--all", a->all,
               "Every commit reachable from a ref, a reflog or a stash, and the index (default: HEAD)");
  sub.add_flag("--fast", a->fast, "Check presence and headers of every object only; do not decode");
  sub.add_flag("--json", a->json, "One JSON object with the counts and every problem");
  auto remote = std::make_shared<RemoteOption>(
      sub,
      "Check the store of this git remote (default: the upstream, or origin) in place of "
      "the local one: every object there, decoded; old temporary files removed");
  AddThreadsOption(sub, a->threads);
  return [a, remote] {
    a->remote = remote->value();
    return RunFsck(*a);
  };
}

}  // namespace zipnn::cmd
