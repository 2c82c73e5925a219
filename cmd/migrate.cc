// git zipnn migrate import / export: history written again with
// checkpoints stored by git-zipnn (from plain git blobs or Git LFS
// pointers), or back to Git LFS. git's fast-export and fast-import do the
// rewriting (lib/git/rewrite.h); this file says what each chosen file
// becomes. Every version is read verified (a blob against its git id, an
// LFS object against its SHA-256, a git-zipnn version against its content
// id) before anything is written in its place, and refs move only once the
// whole new history is written.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "cmd/command.h"
#include "cmd/util.h"
#include "filters/checkpoint_filter.h"
#include "lib/access/versions.h"
#include "lib/base/closest.h"
#include "lib/base/strings.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/rewrite.h"
#include "lib/git/setup.h"
#include "lib/remote/lfs_files.h"
#include "lib/store/pointer.h"

namespace zipnn::cmd {

namespace {

// Missing LFS objects named in the error; more are counted.
constexpr size_t kMissingNamed = 5;

struct MigrateArgs {
  std::vector<std::string> include, exclude, refs;
  bool everything = false;
  bool dry_run = false;
};

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
  std::vector<std::string> include, exclude, revs;
  std::vector<git::CheckedOut> elsewhere, left_out;
};
Result<Plan> PlanFor(const git::Repository& repo, const MigrateArgs& a, git::Driver to) {
  Plan plan;
  ZIPNN_ASSIGN_OR_RETURN(plan.elsewhere, git::BranchesCheckedOutElsewhere(repo));
  plan.include = PatternList(a.include);
  plan.exclude = PatternList(a.exclude);
  if (plan.include.empty()) {
    // The patterns .gitattributes gives to the filter being left.
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> zipnn, git::TrackedPatterns(git::Driver::kZipnn));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lfs, git::TrackedPatterns(git::Driver::kLfs));
    plan.include = to == git::Driver::kZipnn ? lfs : zipnn;
    if (to == git::Driver::kZipnn) plan.include.insert(plan.include.end(), zipnn.begin(), zipnn.end());
    if (plan.include.empty()) {
      return InvalidArgument(std::string("say which files to migrate: --include '*.safetensors' (or a list, "
                                         "'*.pt,*.bin'); .gitattributes gives no pattern to ") +
                             (to == git::Driver::kZipnn ? "git-zipnn or Git LFS" : "git-zipnn"));
    }
  }
  for (const std::string& p : plan.include) ZIPNN_RETURN_IF_ERROR(git::CheckPattern(p));
  for (const std::string& p : plan.exclude) ZIPNN_RETURN_IF_ERROR(git::CheckPattern(p));
  if (a.everything) {
    if (!a.refs.empty()) return InvalidArgument("--everything rewrites every branch and tag; give no revisions with it");
    // fast-export reads `--exclude=<name>` as leaving that branch out of
    // the --branches after it (branch names hold no glob characters).
    for (const git::CheckedOut& c : plan.elsewhere) {
      if (c.ref.rfind("refs/heads/", 0) != 0) continue;
      plan.revs.push_back("--exclude=" + c.ref.substr(11));
      plan.left_out.push_back(c);
    }
    plan.revs.insert(plan.revs.end(), {"--branches", "--tags"});
  } else if (!a.refs.empty()) {
    plan.revs = a.refs;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, git::HeadBranch());
    if (!branch) {
      return InvalidArgument("HEAD is detached: name the branches to rewrite (git zipnn migrate import main), or "
                             "--everything");
    }
    plan.revs = {*branch};
  }
  return plan;
}

// "5 distinct checkpoints (8 versions at 2 paths)".
std::string Counts(const git::HistoryRewrite& rewrite, size_t distinct) {
  size_t versions = 0;
  for (const auto& [path, blobs] : rewrite.by_path()) versions += blobs.size();
  return Counted(distinct, "distinct checkpoint") + " (" + Counted(versions, "version") + " at " +
         Counted(rewrite.by_path().size(), "path") + ")";
}

// What a dry run prints: each chosen path with its versions and bytes.
Status PrintChosen(const git::Repository& repo, const git::HistoryRewrite& rewrite, const std::vector<std::string>& revs,
                   const char* to) {
  for (const auto& [path, blobs] : rewrite.by_path()) {
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
    std::printf("%s: %s, %s\n", path.c_str(), Counted(blobs.size(), "version").c_str(), HumanBytes(bytes).c_str());
  }
  std::string refs;
  for (const std::string& r : revs) {
    if (r.rfind("--exclude=", 0) != 0) refs += (refs.empty() ? "" : " ") + r;
  }
  if (refs == "--branches --tags") refs = "every branch and tag";
  std::printf("would store %s in %s and write %s of %s again\n", Counts(rewrite, rewrite.files().size()).c_str(), to,
              Counted(rewrite.commits(), "commit").c_str(), refs.c_str());
  return OkStatus();
}

// "a, b, c".
std::string Listed(const std::vector<std::string>& words) {
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
  return list;
}

// After the rewrite: the map, what moved, and what is left to do.
void Report(const git::HistoryRewrite& rewrite, const git::Rewritten& done, size_t stored, const char* to,
            bool from_lfs) {
  for (const auto& [old_id, new_id] : done.commits) std::printf("%s %s\n", old_id.c_str(), new_id.c_str());
  const bool same = std::all_of(done.commits.begin(), done.commits.end(),
                                [](const auto& c) { return c.first == c.second; });
  if (same) {
    std::fprintf(stderr, "git-zipnn: nothing changed: every commit is as it was (every file chosen is in %s already)\n",
                 to);
    return;
  }
  const std::string refs = Listed(done.refs);
  std::fprintf(stderr,
               "git-zipnn: stored %s in %s and wrote %s again (old and new ids above, one commit a line); refs "
               "moved: %s\n"
               "git-zipnn: the old commits stay in git's reflog until it expires; `git reflog expire --expire=now "
               "--all && git gc --prune=now` drops them now%s. The history is new: push it with --force, and "
               "teammates clone again\n",
               Counts(rewrite, stored).c_str(), to, Counted(done.commits.size(), "commit").c_str(), refs.c_str(),
               from_lfs ? " (and `git lfs prune` the Git LFS copies, once no remote-tracking branch names them)" : "");
  if (done.notes > 0) {
    std::fprintf(stderr, "git-zipnn: copied %s of %s to the new commits and tags (the old ones keep theirs)\n",
                 Counted(done.notes, "git note").c_str(), Listed(done.notes_refs).c_str());
  }
  // Branches that only a remote-tracking ref names were not rewritten: a
  // push --force --all would leave them as they were on the remote.
  std::set<std::string> local;
  Result<std::vector<std::string>> all_refs = git::RefsCommittedSince(0);
  const std::vector<std::string> refs_here = all_refs.ok() ? *all_refs : std::vector<std::string>();
  for (const std::string& r : refs_here) {
    if (r.rfind("refs/heads/", 0) == 0) local.insert(r.substr(11));
  }
  std::vector<std::string> remote_only;
  for (const std::string& r : refs_here) {
    if (r.rfind("refs/remotes/", 0) != 0) continue;
    const std::string name = r.substr(r.find('/', 13) + 1);
    if (!local.count(name) && std::find(remote_only.begin(), remote_only.end(), name) == remote_only.end()) {
      remote_only.push_back(name);
    }
  }
  if (!remote_only.empty()) {
    std::fprintf(stderr,
                 "git-zipnn: not rewritten: %s, which only a remote-tracking branch names (check %s out and migrate "
                 "again to include %s)\n",
                 Listed(remote_only).c_str(), remote_only.size() == 1 ? "it" : "them",
                 remote_only.size() == 1 ? "it" : "them");
  }
}

// Why a branch checked out in another worktree is not moved, and what to
// do about it.
std::string ElsewhereWhy(const git::CheckedOut& c) {
  return c.ref + ": it is checked out in the worktree " + c.worktree +
         ", whose index would keep the old files and commit them back over the new history";
}

// Left out by --everything: said before anything is written.
void SayLeftOut(const Plan& plan) {
  for (const git::CheckedOut& c : plan.left_out) {
    std::fprintf(stderr,
                 "git-zipnn: left out %s; migrate it from there (cd %s && git zipnn migrate ...), or switch that "
                 "worktree to another branch and run this again\n",
                 ElsewhereWhy(c).c_str(), c.worktree.c_str());
  }
}

// A run stopped after moving the branch checked out here, before its
// files were checked out again, is finished first; then the work tree
// must hold no change git has not committed.
Status FinishStoppedRunAndCheckClean(const git::Repository& repo) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> finished, git::FinishCheckout(repo));
  if (finished) {
    std::fprintf(stderr,
                 "git-zipnn: checked out the files of %s, which a migrate that was stopped had moved; going on\n",
                 finished->c_str());
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> changes, git::LocalChanges());
  if (!changes.empty()) {
    std::string listed;
    for (size_t i = 0; i < changes.size() && i < 5; ++i) listed += "\n    " + changes[i];
    return InvalidArgument("the work tree has changes git has not committed; commit or stash them first, since "
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
    if (missing.size() > kMissingNamed) named += "\n    and " + std::to_string(missing.size() - kMissingNamed) + " more";
    return NotFound(Counted(missing.size(), "Git LFS object") + " of this history " +
                    (missing.size() == 1 ? "is" : "are") + " not in " + folder.dir() +
                    "; nothing was changed. Fetch them first: `git lfs fetch --all` (or the refs you migrate)" + named);
  }
  return pointers;
}

// What both directions do before anything is written: the plan, a check
// that the filter the files go to is installed (the branch checked out is
// checked out again through it), and the history read. nullopt when that
// is all: a dry run.
Result<std::optional<git::HistoryRewrite>> ReadHistory(const MigrateArgs& a, git::Driver to, git::Repository& repo,
                                                       Plan& plan) {
  // The patterns come from .gitattributes as it is before a stopped run
  // is finished: the old commit's, as they were for that run.
  ZIPNN_ASSIGN_OR_RETURN(plan, PlanFor(repo, a, to));
  if (!a.dry_run) ZIPNN_RETURN_IF_ERROR(FinishStoppedRunAndCheckClean(repo));
  SayLeftOut(plan);
  const bool zipnn = to == git::Driver::kZipnn;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> lfs_filter, git::ConfigGet("filter.lfs.process"));
  if (!a.dry_run && (zipnn ? !git::FilterInstalled() : !lfs_filter)) {
    return InvalidArgument(std::string(zipnn ? "the git-zipnn filter is not installed here: run `git zipnn install`"
                                             : "Git LFS is not installed here: run `git lfs install`") +
                           " first, so that the checkpoints are checked out again after the rewrite");
  }
  ZIPNN_ASSIGN_OR_RETURN(git::HistoryRewrite rewrite,
                         git::HistoryRewrite::Read(repo, plan.revs, plan.include, plan.exclude));
  for (const git::CheckedOut& c : plan.elsewhere) {
    if (std::binary_search(rewrite.refs().begin(), rewrite.refs().end(), c.ref)) {
      return InvalidArgument("will not rewrite " + ElsewhereWhy(c) + ". Switch that worktree to another branch " +
                             "first (git -C " + c.worktree + " switch --detach), or migrate " + c.ref +
                             " from there; nothing was changed");
    }
  }
  if (rewrite.files().empty()) {
    // A typo ('*.safetensor') gets the patterns .gitattributes has.
    std::string hint;
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> known, git::TrackedPatterns(git::Driver::kZipnn));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lfs, git::TrackedPatterns(git::Driver::kLfs));
    known.insert(known.end(), lfs.begin(), lfs.end());
    for (size_t i = 0, n = known.size(); i < n; ++i) {  // and their file names ('*.pt' of 'runs/*.pt')
      const size_t slash = known[i].rfind('/');
      if (slash != std::string::npos) known.push_back(known[i].substr(slash + 1));
    }
    for (const std::string& p : plan.include) {
      const std::vector<std::string> close = ClosestWords(p, known);
      if (!close.empty()) hint = " (did you mean " + Alternatives(close, "'") + "?)";
    }
    return NotFound("nothing to migrate: no file of " + Counted(rewrite.commits(), "commit") + " matches " +
                    Alternatives(plan.include, "'") + hint);
  }
  if (zipnn) {
    ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder folder, LfsFolderOf(repo));
    ZIPNN_RETURN_IF_ERROR(LfsPointersOf(repo, rewrite, folder).status());
  }
  if (a.dry_run) {
    ZIPNN_RETURN_IF_ERROR(PrintChosen(repo, rewrite, plan.revs, zipnn ? "git-zipnn" : "Git LFS"));
    return std::optional<git::HistoryRewrite>();
  }
  return std::optional<git::HistoryRewrite>(std::move(rewrite));
}

Status RunImport(const MigrateArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  Plan plan;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::HistoryRewrite> read, ReadHistory(a, git::Driver::kZipnn, git_repo, plan));
  if (!read) return OkStatus();
  git::HistoryRewrite& rewrite = *read;
  ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder lfs_folder, LfsFolderOf(git_repo));
  ZIPNN_ASSIGN_OR_RETURN(const auto lfs_pointers, LfsPointersOf(git_repo, rewrite, lfs_folder));

  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<git::SeriesVersions> series, git::OpenSeries(repo));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, git::HeadBranch());
  size_t converted = 0;
  git::Rewritten done;
  {
    filters::CheckpointFilter filter(std::move(repo), std::move(series));
    auto replace = [&](const git::RewriteFile& f) -> Result<std::optional<std::string>> {
      std::unique_ptr<ByteReader> content;
      auto lfs_pointer = lfs_pointers.find(f.blob);
      if (lfs_pointer != lfs_pointers.end()) {
        ZIPNN_ASSIGN_OR_RETURN(content, lfs_folder.Open(lfs_pointer->second));
      } else {
        ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> small,
                               git_repo.SmallBlob(f.blob, store::kMaxPointerBytes));
        if (small && store::LooksLikePointer(*small)) return std::optional<std::string>();  // stored already
        ZIPNN_ASSIGN_OR_RETURN(content, git::OpenBlob(git_repo, f.blob));
      }
      MemorySink pointer;
      ZIPNN_RETURN_IF_ERROR(Annotate(filter.Clean(f.path, *content, pointer), f.path));
      ++converted;
      const Buffer& text = pointer.buffer();
      return std::optional<std::string>(std::string(text.data(), text.data() + text.size()));
    };
    auto edit = [&](const std::optional<std::string>& text) {
      return git::Retracked(text.value_or(""), plan.include, git::Driver::kZipnn);
    };
    ZIPNN_ASSIGN_OR_RETURN(done, rewrite.Write(replace, edit, branch));
    (void)filter.Finish();
  }
  Report(rewrite, done, converted, "git-zipnn", !lfs_pointers.empty());
  return git::FinishCheckout(git_repo).status();
}

Status RunExport(const MigrateArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  Plan plan;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::HistoryRewrite> read, ReadHistory(a, git::Driver::kLfs, git_repo, plan));
  if (!read) return OkStatus();
  git::HistoryRewrite& rewrite = *read;
  ZIPNN_ASSIGN_OR_RETURN(lfs::LfsFolder lfs_folder, LfsFolderOf(git_repo));
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, git::HeadBranch());
  const access::Versions versions(repo, access::Options{/*fetch=*/true, access::Copies::kBases});
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
    return git::Retracked(text.value_or(""), plan.include, git::Driver::kLfs);
  };
  ZIPNN_ASSIGN_OR_RETURN(git::Rewritten done, rewrite.Write(replace, edit, branch));
  Report(rewrite, done, converted, "Git LFS", false);
  return git::FinishCheckout(git_repo).status();
}

void AddMigrateOptions(CLI::App& sub, MigrateArgs& a) {
  sub.add_option("-I,--include", a.include,
                 "Files to migrate: a .gitattributes pattern, or several comma-separated (default: the patterns "
                 ".gitattributes gives to the other side)")
      ->allow_extra_args(false);
  sub.add_option("-X,--exclude", a.exclude, "Files to leave as they are, among those --include names")
      ->allow_extra_args(false);
  sub.add_flag("--everything", a.everything, "Rewrite every local branch and tag (default: the current branch)");
  sub.add_flag("-n,--dry-run", a.dry_run, "List the files and versions that would be migrated; change nothing");
  sub.add_option("revisions", a.refs, "Branches to rewrite, or ranges (main, v1..main, ^origin/main)");
}

}  // namespace

Action SetupMigrate(CLI::App& sub) {
  auto a = std::make_shared<MigrateArgs>();
  CLI::App* import = sub.add_subcommand(
      "import", "Rewrite history so that checkpoints in plain git blobs or Git LFS are stored by git-zipnn");
  CLI::App* export_ = sub.add_subcommand("export", "Rewrite history so that checkpoints git-zipnn stores are in Git LFS");
  AddMigrateOptions(*import, *a);
  AddMigrateOptions(*export_, *a);
  sub.require_subcommand(1);
  return [a, import]() -> Status { return import->parsed() ? RunImport(*a) : RunExport(*a); };
}

}  // namespace zipnn::cmd
