#include "lib/ops/migrate.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "lib/access/versions.h"
#include "lib/base/closest.h"
#include "lib/base/io.h"
#include "lib/base/strings.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/ops/clean.h"
#include "lib/remote/lfs_files.h"
#include "lib/store/pointer.h"

namespace zipnn::ops {

namespace {

// Missing LFS objects named in the error; more are counted.
constexpr size_t kMissingNamed = 5;

// The local Git LFS folder: lfs.storage (from the git folder when
// relative), else <git folder>/lfs, as git-lfs places it.
Result<lfs::LfsFolder> LfsFolderOf(const git::Repository& repo) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> storage, git::ConfigGet("lfs.storage"));
  std::string dir = repo.common_dir();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!storage || storage->empty()) return lfs::LfsFolder(dir + "/lfs");
  return lfs::LfsFolder((*storage)[0] == '/' ? *storage : dir + "/" + *storage);
}

// What both directions check before reading history: patterns that can
// be written, and the revisions to rewrite. A branch checked out in
// another worktree is never moved under it: --everything leaves it out
// (left_out), a revision that names it is refused.
struct Plan {
  std::vector<std::string> include, exclude;
  std::vector<git::CheckedOut> elsewhere;
  Revisions revisions;
};
Result<Plan> PlanFor(const git::Repository& repo, const MigrateRequest& a, git::Driver to) {
  Plan plan;
  ZIPNN_ASSIGN_OR_RETURN(plan.elsewhere, git::BranchesCheckedOutElsewhere(repo));
  plan.include = a.include;
  plan.exclude = a.exclude;
  if (plan.include.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> zipnn, git::TrackedPatterns(git::Driver::kZipnn));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lfs, git::TrackedPatterns(git::Driver::kLfs));
    ZIPNN_ASSIGN_OR_RETURN(plan.include, DefaultPatterns(to, zipnn, lfs));
  }
  for (const std::string& p : plan.include) ZIPNN_RETURN_IF_ERROR(git::CheckPattern(p));
  for (const std::string& p : plan.exclude) ZIPNN_RETURN_IF_ERROR(git::CheckPattern(p));
  ZIPNN_ASSIGN_OR_RETURN(plan.revisions, RevisionsFor(a, plan.elsewhere, git::HeadBranch));
  return plan;
}

// Why a branch checked out in another worktree is not moved.
std::string ElsewhereWhy(const git::CheckedOut& c) {
  return c.ref + ": it is checked out in the worktree " + c.worktree +
         ", whose index would keep the old files and commit them back over the new history";
}

// A run stopped after moving the branch checked out here, before its
// files were checked out again, is finished first; then the work tree
// must hold no change git has not committed.
Status FinishStoppedRunAndCheckClean(const git::Repository& repo, const Say& say) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> finished, git::FinishCheckout(repo));
  if (finished) say("checked out the files of " + *finished + ", which a migrate that was stopped had moved; going on");
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> changes, git::LocalChanges());
  if (!changes.empty()) {
    std::string listed;
    for (size_t i = 0; i < changes.size() && i < 5; ++i) listed += "\n    " + changes[i];
    return InvalidArgument(
        "the work tree has changes git has not committed; commit or stash them first, since "
        "migrate rewrites the commits they are on:" +
        listed + (changes.size() > 5 ? "\n    ..." : ""));
  }
  return OkStatus();
}

// The Git LFS pointers among the chosen files, by blob. Each one's
// object must be here: all are looked for before anything is stored (and
// by a dry run, so that it promises only what a run does).
Result<std::map<git::Oid, lfs::LfsPointer>> LfsPointersOf(const git::Repository& repo,
                                                          const git::HistoryRewrite& rewrite,
                                                          const lfs::LfsFolder& folder) {
  std::map<git::Oid, lfs::LfsPointer> pointers;
  std::vector<std::string> missing;
  for (const git::RewriteFile& f : rewrite.files()) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> small, repo.SmallBlob(f.blob, 1024));
    if (!small) continue;
    std::optional<lfs::LfsPointer> pointer = lfs::ParseLfsPointer(*small);
    if (!pointer) continue;
    pointers[f.blob] = *pointer;
    if (!folder.Has(*pointer)) missing.push_back(f.path + " (" + pointer->sha256.substr(0, 12) + ")");
  }
  if (!missing.empty()) {
    std::string named;
    for (size_t i = 0; i < missing.size() && i < kMissingNamed; ++i) named += "\n    " + missing[i];
    if (missing.size() > kMissingNamed)
      named += "\n    and " + std::to_string(missing.size() - kMissingNamed) + " more";
    return NotFound(Counted(missing.size(), "Git LFS object") + " of this history " +
                    (missing.size() == 1 ? "is" : "are") + " not in " + folder.dir() +
                    "; nothing was changed. Fetch them first: `git lfs fetch --all` (or the refs you migrate)" + named);
  }
  return pointers;
}

// Migrated::as_on_remote for the branches among `refs`.
std::vector<std::string> AsOnRemote(const git::Repository& git_repo, const std::vector<std::string>& refs) {
  Result<std::vector<std::string>> remotes = git::Remotes();
  std::vector<std::string> named;
  if (!remotes.ok()) return named;
  for (const std::string& ref : refs) {
    if (ref.rfind("refs/heads/", 0) != 0) continue;  // tags: the remote's are not tracked here
    Result<std::optional<git::Oid>> here = git_repo.ResolveCommit(ref);
    if (!here.ok() || !*here) return {};
    std::optional<std::string> same;
    for (const std::string& remote : *remotes) {
      const std::string tracking = remote + "/" + ref.substr(11);
      Result<std::optional<git::Oid>> there = git_repo.ResolveCommit("refs/remotes/" + tracking);
      if (there.ok() && *there && **there == **here) same = tracking;
    }
    if (!same) return {};
    named.push_back(*same);
  }
  return named;
}

// What the rewrite did, with the counts and refs the command reports.
Result<Migrated> Done(const git::Repository& git_repo, const git::HistoryRewrite& rewrite, git::Rewritten done,
                      size_t stored, bool from_lfs) {
  Migrated m;
  m.done = std::move(done);
  m.stored = stored;
  m.from_lfs = from_lfs;
  m.paths = rewrite.by_path().size();
  for (const auto& [path, blobs] : rewrite.by_path()) m.versions += blobs.size();
  if (m.Unchanged()) return m;
  Result<std::vector<std::string>> all_refs = git::RefsCommittedSince(0);
  m.remote_only = RemoteOnly(all_refs.ok() ? *all_refs : std::vector<std::string>());
  m.as_on_remote = AsOnRemote(git_repo, m.done.refs);
  return m;
}

}  // namespace

bool Migrated::Unchanged() const {
  return std::all_of(done.commits.begin(), done.commits.end(), [](const auto& c) { return c.first == c.second; });
}

Result<Revisions> RevisionsFor(const MigrateRequest& a, const std::vector<git::CheckedOut>& elsewhere,
                               const std::function<Result<std::optional<std::string>>()>& head_branch) {
  Revisions r;
  if (a.everything) {
    if (!a.refs.empty())
      return InvalidArgument("--everything rewrites every branch and tag; give no revisions with it");
    // fast-export reads `--exclude=<name>` as leaving that branch out of
    // the --branches after it (branch names hold no glob characters).
    for (const git::CheckedOut& c : elsewhere) {
      if (c.ref.rfind("refs/heads/", 0) != 0) continue;
      r.revs.push_back("--exclude=" + c.ref.substr(11));
      r.left_out.push_back(c);
    }
    r.revs.insert(r.revs.end(), {"--branches", "--tags"});
  } else if (!a.refs.empty()) {
    r.revs = a.refs;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, head_branch());
    if (!branch) {
      return InvalidArgument(
          "HEAD is detached: name the branches to rewrite (git zipnn migrate import main), or "
          "--everything");
    }
    r.revs = {*branch};
  }
  return r;
}

Result<std::vector<std::string>> DefaultPatterns(git::Driver to, const std::vector<std::string>& zipnn,
                                                 const std::vector<std::string>& lfs) {
  // The patterns .gitattributes gives to the filter being left.
  std::vector<std::string> include = to == git::Driver::kZipnn ? lfs : zipnn;
  if (to == git::Driver::kZipnn) include.insert(include.end(), zipnn.begin(), zipnn.end());
  if (include.empty()) {
    return InvalidArgument(std::string("say which files to migrate: --include '*.safetensors' (or a list, "
                                       "'*.pt,*.bin'); .gitattributes gives no pattern to ") +
                           (to == git::Driver::kZipnn ? "git-zipnn or Git LFS" : "git-zipnn"));
  }
  return include;
}

std::string PatternHint(const std::vector<std::string>& include, std::vector<std::string> known) {
  std::string hint;
  for (size_t i = 0, n = known.size(); i < n; ++i) {  // and their file names ('*.pt' of 'runs/*.pt')
    const size_t slash = known[i].rfind('/');
    if (slash != std::string::npos) known.push_back(known[i].substr(slash + 1));
  }
  for (const std::string& p : include) {
    const std::vector<std::string> close = ClosestWords(p, known);
    if (!close.empty()) hint = " (did you mean " + Alternatives(close, "'") + "?)";
  }
  return hint;
}

std::vector<std::string> RemoteOnly(const std::vector<std::string>& refs) {
  std::set<std::string> local;
  for (const std::string& r : refs) {
    if (r.rfind("refs/heads/", 0) == 0) local.insert(r.substr(11));
  }
  std::vector<std::string> remote_only;
  for (const std::string& r : refs) {
    if (r.rfind("refs/remotes/", 0) != 0) continue;
    const std::string name = r.substr(r.find('/', 13) + 1);
    if (!local.count(name) && std::find(remote_only.begin(), remote_only.end(), name) == remote_only.end()) {
      remote_only.push_back(name);
    }
  }
  return remote_only;
}

Result<Migration> ReadMigration(git::Repository& repo, const MigrateRequest& a, git::Driver to, const Say& say) {
  // The patterns come from .gitattributes as it is before a stopped run
  // is finished: the old commit's, as they were for that run.
  ZIPNN_ASSIGN_OR_RETURN(Plan plan, PlanFor(repo, a, to));
  if (!a.dry_run) ZIPNN_RETURN_IF_ERROR(FinishStoppedRunAndCheckClean(repo, say));
  // Left out by --everything: said before anything is written.
  for (const git::CheckedOut& c : plan.revisions.left_out) {
    say("left out " + ElsewhereWhy(c) + "; migrate it from there (cd " + c.worktree +
        " && git zipnn migrate ...), or switch that worktree to another branch and run this again");
  }
  const bool zipnn = to == git::Driver::kZipnn;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> lfs_filter, git::ConfigGet("filter.lfs.process"));
  if (!a.dry_run && (zipnn ? !git::FilterInstalled() : !lfs_filter)) {
    return InvalidArgument(std::string(zipnn ? "the git-zipnn filter is not installed here: run `git zipnn install`"
                                             : "Git LFS is not installed here: run `git lfs install`") +
                           " first, so that the checkpoints are checked out again after the rewrite");
  }
  ZIPNN_ASSIGN_OR_RETURN(git::HistoryRewrite rewrite,
                         git::HistoryRewrite::Read(repo, plan.revisions.revs, plan.include, plan.exclude));
  for (const git::CheckedOut& c : plan.elsewhere) {
    if (std::binary_search(rewrite.refs().begin(), rewrite.refs().end(), c.ref)) {
      return InvalidArgument("will not rewrite " + ElsewhereWhy(c) + ". Switch that worktree to another branch " +
                             "first (git -C " + c.worktree + " switch --detach), or migrate " + c.ref +
                             " from there; nothing was changed");
    }
  }
  if (rewrite.files().empty()) {
    // A typo ('*.safetensor') gets the patterns .gitattributes has.
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> known, git::TrackedPatterns(git::Driver::kZipnn));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lfs, git::TrackedPatterns(git::Driver::kLfs));
    known.insert(known.end(), lfs.begin(), lfs.end());
    return NotFound("nothing to migrate: no file of " + Counted(rewrite.commits(), "commit") + " matches " +
                    Alternatives(plan.include, "'") + PatternHint(plan.include, known));
  }
  if (zipnn) {
    ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder folder, LfsFolderOf(repo));
    ZIPNN_RETURN_IF_ERROR(LfsPointersOf(repo, rewrite, folder).status());
  }
  return Migration{to, plan.include, plan.exclude, plan.revisions.revs, std::move(rewrite)};
}

Result<Chosen> ListChosen(const git::Repository& repo, const Migration& m) {
  Chosen chosen;
  for (const auto& [path, blobs] : m.rewrite.by_path()) {
    uint64_t bytes = 0;
    for (const git::Oid& blob : blobs) {
      // The checkpoint's size: a pointer's (Git LFS or git-zipnn) says it.
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> small, repo.SmallBlob(blob, 1024));
      std::optional<lfs::LfsPointer> lfs_pointer = small ? lfs::ParseLfsPointer(*small) : std::nullopt;
      Result<store::Pointer> ours = small ? store::ParsePointer(*small) : Result<store::Pointer>(NotFound(""));
      if (lfs_pointer) {
        bytes += lfs_pointer->size;
      } else if (ours.ok()) {
        bytes += ours->size;
      } else {
        ZIPNN_ASSIGN_OR_RETURN(uint64_t size, repo.BlobSize(blob));
        bytes += size;
      }
    }
    chosen.paths.push_back(ChosenPath{path, blobs.size(), bytes});
  }
  chosen.distinct = m.rewrite.files().size();
  for (const std::string& r : m.revs) {
    if (r.rfind("--exclude=", 0) != 0) chosen.refs += (chosen.refs.empty() ? "" : " ") + r;
  }
  if (chosen.refs == "--branches --tags") chosen.refs = "every branch and tag";
  return chosen;
}

Result<Migrated> Import(git::Repository& git_repo, Migration& m, const store::Store& store) {
  ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder lfs_folder, LfsFolderOf(git_repo));
  ZIPNN_ASSIGN_OR_RETURN(const auto lfs_pointers, LfsPointersOf(git_repo, m.rewrite, lfs_folder));
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<git::SeriesVersions> series, git::OpenSeries(store));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, git::HeadBranch());
  // Stored as git add stores them; the cleaner holds the store's lock
  // shared until it goes, once the new history names what it stored.
  std::optional<Cleaner> cleaner(std::in_place, store, series.get());
  size_t converted = 0;
  auto replace = [&](const git::RewriteFile& f) -> Result<std::optional<std::string>> {
    std::unique_ptr<ByteReader> content;
    auto lfs_pointer = lfs_pointers.find(f.blob);
    if (lfs_pointer != lfs_pointers.end()) {
      ZIPNN_ASSIGN_OR_RETURN(content, lfs_folder.Open(lfs_pointer->second));
    } else {
      ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> small, git_repo.SmallBlob(f.blob, store::kMaxPointerBytes));
      if (small && store::LooksLikePointer(*small)) return std::optional<std::string>();  // stored already
      ZIPNN_ASSIGN_OR_RETURN(content, git::OpenBlob(git_repo, f.blob));
    }
    MemorySink pointer;
    ZIPNN_RETURN_IF_ERROR(Annotate(cleaner->Clean(f.path, *content, pointer), f.path));
    ++converted;
    const Buffer& text = pointer.buffer();
    return std::optional<std::string>(std::string(text.data(), text.data() + text.size()));
  };
  auto edit = [&](const std::optional<std::string>& text) {
    return git::Retracked(text.value_or(""), m.include, git::Driver::kZipnn);
  };
  ZIPNN_ASSIGN_OR_RETURN(git::Rewritten done, m.rewrite.Write(replace, edit, branch));
  (void)cleaner->Finish();
  cleaner.reset();
  return Done(git_repo, m.rewrite, std::move(done), converted, !lfs_pointers.empty());
}

Result<Migrated> Export(git::Repository& git_repo, Migration& m, const store::Store& store) {
  ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder lfs_folder, LfsFolderOf(git_repo));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, git::HeadBranch());
  const access::Versions versions(store, access::Options{/*fetch=*/true, access::Copies::kBases});
  size_t converted = 0;
  auto replace = [&](const git::RewriteFile& f) -> Result<std::optional<std::string>> {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> small, git_repo.SmallBlob(f.blob, store::kMaxPointerBytes));
    if (!small || !store::LooksLikePointer(*small)) return std::optional<std::string>();  // not ours: kept
    ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, store::ParsePointer(*small));
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<lfs::LfsFolder::Writer> object, lfs_folder.Create());
    ZIPNN_RETURN_IF_ERROR(versions.Write(pointer, f.path, *object));
    ZIPNN_ASSIGN_OR_RETURN(lfs::LfsPointer written, object->Commit());
    ++converted;
    return std::optional<std::string>(lfs::FormatLfsPointer(written));
  };
  auto edit = [&](const std::optional<std::string>& text) {
    return git::Retracked(text.value_or(""), m.include, git::Driver::kLfs);
  };
  ZIPNN_ASSIGN_OR_RETURN(git::Rewritten done, m.rewrite.Write(replace, edit, branch));
  return Done(git_repo, m.rewrite, std::move(done), converted, false);
}

Status CheckOutAgain(const git::Repository& git_repo) { return git::FinishCheckout(git_repo).status(); }

}  // namespace zipnn::ops
