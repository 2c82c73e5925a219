#include "lib/git/commit.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

#include "lib/git/run.h"

namespace zipnn::git {

namespace {

// `paths` for git's --pathspec-from-file with --pathspec-file-nul.
std::string NulSeparated(const std::vector<std::string>& paths) {
  std::string text;
  for (const std::string& p : paths) text += p + '\0';
  return text;
}

// `git --literal-pathspecs <args>` in `top`, given `paths` on its input,
// in `env` (NAME=value, or empty); its output, or a Git error quoting git.
Result<std::string> RunOnPaths(const std::vector<std::string>& args, const std::vector<std::string>& paths,
                               const std::string& top, const std::string& env = "") {
  std::vector<std::string> argv = {"--literal-pathspecs"};
  argv.insert(argv.end(), args.begin(), args.end());
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGitWith(env, argv, top, NulSeparated(paths)));
  if (run.exit_code != 0) {
    std::string said = run.err.empty() ? run.out : run.err;
    while (!said.empty() && said.back() == '\n') said.pop_back();
    return Status(StatusCode::kGit, "git " + args.front() + " failed: " + said);
  }
  return std::move(run.out);
}

// NUL-ended fields, empty ones kept (GitPaths drops them; check-attr's
// value may be empty).
std::vector<std::string> SplitNul(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

// Whether a folder on the way to `path` (from the top `top`) is a
// symbolic link: git tracks the link, never what it leads to, so nothing
// is written through it.
bool ThroughLink(const std::string& path, const std::string& top) {
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    struct stat st;
    if (::lstat((top + "/" + path.substr(0, slash)).c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return true;
  }
  return false;
}

// Adds to `paths` the index entries git is told not to look at in the
// work tree: assume-unchanged (also to `assumed`), and skip-worktree (a
// sparse checkout).
Status AddUnlooked(const std::string& top, std::set<std::string>& paths, std::vector<std::string>* assumed) {
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> tagged, GitPaths({"ls-files", "-v", "-z"}, top));
  for (const std::string& entry : tagged) {
    // "<tag> <path>": lower case for assume-unchanged, S for skip-worktree.
    if (entry.size() < 3) continue;
    const bool lower = std::islower(static_cast<unsigned char>(entry[0]));
    if (lower || entry[0] == 'S') paths.insert(entry.substr(2));
    if (lower && assumed) assumed->push_back(entry.substr(2));
  }
  return OkStatus();
}

// What commits between two did to files: `added`, `changed` (M, and T:
// a file that became a link or the other way round), `removed`, and
// every path they touched.
struct Changes {
  std::vector<std::string> added, changed, removed;
  std::set<std::string> moved;
};
Result<Changes> ChangesBetween(const std::string& head, const std::string& target, const std::string& top) {
  Changes c;
  if (head.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(c.added, GitPaths({"ls-tree", "-r", "-z", "--name-only", "--full-tree", target}, top));
  } else {
    // "<status>\0<path>\0" for each.
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> fields,
                           GitPaths({"diff-tree", "-r", "-z", "--name-status", "--no-renames", head, target}, top));
    for (size_t i = 0; i + 1 < fields.size(); i += 2) {
      const char status = fields[i][0];
      (status == 'A' ? c.added : status == 'D' ? c.removed : c.changed).push_back(fields[i + 1]);
    }
  }
  for (const std::vector<std::string>* paths : {&c.added, &c.changed, &c.removed}) {
    c.moved.insert(paths->begin(), paths->end());
  }
  return c;
}

// Does `changes` to the work tree as a fast forward would, leaving `local`
// paths alone and writing nothing through a linked folder: a file the
// commits added is written where the work tree has none (a file there is
// this node's own save); one they changed or removed, where the work tree
// holds it as it was. Checkpoints are written as their pointers.
Status FastForwardFiles(const Changes& changes, const std::set<std::string>& local, const std::string& top) {
  // Removals first: a file that became a folder (or a folder a file) is
  // then missing, and written.
  for (const std::string& path : changes.removed) {
    struct stat st;
    const std::string full = top + "/" + path;
    if (!ThroughLink(path, top) && !local.count(path) && ::lstat(full.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      if (::unlink(full.c_str()) != 0) return IoError(full + ": cannot remove (" + std::strerror(errno) + ")");
      // Folders it leaves empty go too, as git's own checkout removes them.
      for (std::string folder = path; folder.rfind('/') != std::string::npos;) {
        folder.resize(folder.rfind('/'));
        if (::rmdir((top + "/" + folder).c_str()) != 0) break;
      }
    }
  }
  std::vector<std::string> write;
  for (const std::string& path : changes.added) {
    struct stat st;
    if (!ThroughLink(path, top) && !local.count(path) && ::lstat((top + "/" + path).c_str(), &st) != 0 &&
        errno == ENOENT) {
      write.push_back(path);
    }
  }
  for (const std::string& path : changes.changed) {
    if (!ThroughLink(path, top) && !local.count(path)) write.push_back(path);
  }
  if (write.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(
      GitRun wrote,
      RunGitWith("GIT_ZIPNN_SKIP_SMUDGE=1", {"checkout-index", "-u", "-f", "-z", "--stdin"}, top, NulSeparated(write)));
  if (wrote.exit_code != 0) return Status(StatusCode::kGit, "git checkout-index failed: " + wrote.err);
  return OkStatus();
}

}  // namespace

Result<std::vector<std::string>> TrackedByZipnn(const std::vector<std::string>& files, const std::string& top) {
  if (files.empty()) return std::vector<std::string>();
  // Output: path, attribute, value, each ended by a NUL.
  ZIPNN_ASSIGN_OR_RETURN(std::string out, RunOnPaths({"check-attr", "-z", "--stdin", "filter"}, files, top));
  const std::vector<std::string> fields = SplitNul(out);
  std::vector<std::string> tracked;
  for (size_t i = 0; i + 2 < fields.size(); i += 3) {
    if (fields[i + 2] == "zipnn") tracked.push_back(fields[i]);
  }
  return tracked;
}

Result<std::vector<std::string>> DeletedUnder(const std::string& folder, const std::string& top) {
  return GitPaths(
      {"--literal-pathspecs", "ls-files", "-z", "--deleted", "--full-name", "--", folder.empty() ? "." : folder}, top);
}

Status AddPaths(const std::vector<std::string>& paths, const std::string& parent, const std::string& top) {
  return RunOnPaths({"add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"}, paths, top,
                    parent.empty() ? "" : "GIT_ZIPNN_PARENT=" + parent)
      .status();
}

Result<bool> StagedIn(const std::vector<std::string>& paths, const std::string& top) {
  // Every staged change, then those at or under `paths` (diff takes no
  // pathspec file, and a removed folder may hold many files).
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> staged,
                         GitPaths({"diff", "--cached", "--name-only", "--no-renames", "-z"}, top));
  for (const std::string& changed : staged) {
    if (AtOrUnderAny(changed, paths)) return true;
  }
  return false;
}

bool AtOrUnderAny(const std::string& path, const std::vector<std::string>& paths) {
  return std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
    return p == "." || path == p ||
           (path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '/');
  });
}

Result<std::string> CommitPaths(const std::string& message, const std::vector<std::string>& paths,
                                const std::string& top) {
  ZIPNN_RETURN_IF_ERROR(
      RunOnPaths({"commit", "-q", "--message=" + message, "--pathspec-from-file=-", "--pathspec-file-nul"}, paths,
                 top)
          .status());
  return HeadId(top);
}

Result<std::string> HeadId(const std::string& top) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, top));
  if (run.exit_code != 0) return std::string();
  std::string id = run.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

Result<Followed> FollowRemoteBranch(const std::string& remote, const std::string& top) {
  Followed followed;
  ZIPNN_ASSIGN_OR_RETURN(GitRun branch, RunGit({"symbolic-ref", "-q", "--short", "HEAD"}, top));
  if (branch.exit_code != 0) {
    followed.stayed = "HEAD is detached: check out the branch the job commits to";
    return followed;
  }
  while (!branch.out.empty() && branch.out.back() == '\n') branch.out.pop_back();
  ZIPNN_RETURN_IF_ERROR(RunOnPaths({"fetch", "-q", "--", remote}, {}, top).status());
  std::string target;
  for (const std::string& ref : {std::string("@{upstream}"), "refs/remotes/" + remote + "/" + branch.out}) {
    ZIPNN_ASSIGN_OR_RETURN(GitRun found, RunGit({"rev-parse", "-q", "--verify", ref + "^{commit}"}, top));
    if (found.exit_code == 0) {
      target = found.out.substr(0, found.out.find('\n'));
      break;
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::string head, HeadId(top));
  if (target.empty()) {
    followed.stayed = remote + " has no branch " + branch.out + " to follow";
    return followed;
  }
  if (target == head) return followed;
  if (!head.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(GitRun behind, RunGit({"merge-base", "--is-ancestor", head, target}, top));
    if (behind.exit_code != 0) {
      followed.stayed = branch.out + " has commits that " + remote + "'s lacks: merge or reset it by hand";
      return followed;
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const Changes changes, ChangesBetween(head, target, top));
  // Files the work tree changed since HEAD (by their bytes: a file only
  // touched is not changed), and those git is told not to look at
  // (assume-unchanged, skip-worktree of a sparse checkout): never written
  // over or removed.
  ZIPNN_RETURN_IF_ERROR(RunGit({"update-index", "-q", "--refresh"}, top).status());
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> changed_here,
                         GitPaths({"diff-files", "-z", "--name-only", "--no-renames"}, top));
  std::set<std::string> local(changed_here.begin(), changed_here.end());
  std::vector<std::string> assumed;
  ZIPNN_RETURN_IF_ERROR(AddUnlooked(top, local, &assumed));
  // The index follows where the new commits changed it, and nowhere
  // else; what is staged there would be lost, so that is refused. The
  // work tree is the node's own: a file it saved that the commits hold is
  // as they hold it, whatever its stat says (git status compares bytes).
  if (head.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> staged, GitPaths({"ls-files", "-z"}, top));
    if (!staged.empty()) {
      return InvalidArgument("this clone has " + staged[0] + " staged and no commit yet; commit or reset it first");
    }
    ZIPNN_RETURN_IF_ERROR(RunOnPaths({"read-tree", target}, {}, top).status());
  } else {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> staged,
                           GitPaths({"diff-index", "--cached", "-z", "--name-only", "--no-renames", head}, top));
    for (const std::string& path : staged) {
      if (changes.moved.count(path)) {
        return InvalidArgument("this clone has " + path + " staged, and " + remote + "/" + branch.out +
                               " changed it too; commit or reset it");
      }
    }
    const std::vector<std::string> moved(changes.moved.begin(), changes.moved.end());
    if (!moved.empty()) {
      ZIPNN_RETURN_IF_ERROR(
          RunOnPaths({"reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", target}, moved, top).status());
    }
  }
  // A sparse checkout marks what the commits brought outside its cone;
  // what this clone marked assume-unchanged stays so (the reset cleared
  // it) where the commits kept the file.
  ZIPNN_RETURN_IF_ERROR(AddUnlooked(top, local, nullptr));
  const std::set<std::string> gone(changes.removed.begin(), changes.removed.end());
  assumed.erase(std::remove_if(assumed.begin(), assumed.end(), [&](const std::string& p) { return gone.count(p); }),
                assumed.end());
  if (!assumed.empty()) {
    ZIPNN_RETURN_IF_ERROR(
        RunOnPaths({"update-index", "-q", "--assume-unchanged", "-z", "--stdin"}, assumed, top).status());
  }
  std::vector<std::string> update = {"update-ref", "-m", "git zipnn commit: follow " + remote, "HEAD", target};
  if (!head.empty()) update.push_back(head);
  ZIPNN_RETURN_IF_ERROR(RunOnPaths(update, {}, top).status());
  followed.commit = target;
  ZIPNN_RETURN_IF_ERROR(FastForwardFiles(changes, local, top));
  return followed;
}

Result<std::vector<std::string>> IgnoredOf(const std::vector<std::string>& paths, const std::string& top) {
  if (paths.empty()) return std::vector<std::string>();
  // Exit 1: none of them is ignored.
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"check-ignore", "-z", "--stdin"}, top, NulSeparated(paths)));
  if (run.exit_code > 1) return Status(StatusCode::kGit, "git check-ignore failed: " + run.err);
  return SplitNul(run.out.empty() ? run.out : run.out.substr(0, run.out.size() - 1));
}

Status PushHead(const std::string& remote, const std::string& top) {
  return RunOnPaths({"push", "--quiet", "--", remote, "HEAD"}, {}, top).status();
}

}  // namespace zipnn::git
