// git zipnn status: the tracked checkpoints as `git lfs status` shows
// Git LFS files: what commits not on any remote hold (a push sends
// their objects), what is staged, what changed and is not staged, what
// is under a tracked pattern and not added, and which versions of HEAD
// and the index this store lacks. Everything is read here: no remote is
// asked.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/setup.h"
#include "lib/ops/status.h"

namespace zipnn::cmd {

namespace {

// "delta, 32.2 KiB", "base, 75.4 KiB", or "not in this store".
std::string HowHeld(const store::Store& store, const ContentId& id) {
  const ops::HeldVersion held = ops::DescribeHeld(store, id);
  if (!held.info.ok()) return held.kind == "missing" ? "not in this store" : held.kind;
  return held.kind + ", " + HumanBytes(held.info->object_size);
}

void Section(const char* title, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  std::printf("%s\n", title);
  for (const std::string& line : lines) std::printf("        %s\n", line.c_str());
}

Status RunStatus() {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  const store::Store& store = *opened;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> branch, ops::HeadBranch(context));
  // "refs/heads/feature/x" is the branch feature/x.
  const std::string name = branch && branch->rfind("refs/heads/", 0) == 0 ? branch->substr(11) : branch.value_or("");
  std::printf("%s\n", branch ? ("On branch " + name).c_str() : "HEAD detached");

  ZIPNN_ASSIGN_OR_RETURN(const ops::CheckpointStatus status, ops::ReadStatus(context));
  const std::map<std::string, ContentId>& at_head = status.at_head;
  const std::map<std::string, ContentId>& staged = status.staged;
  // Versions in commits that no remote-tracking branch has.
  std::vector<std::string> unpushed;
  for (const auto& [pointer, place] : status.unpushed) {
    unpushed.push_back(place.path + "  " + pointer.id.Hex().substr(0, 12) + "  " + HowHeld(store, pointer.id));
  }
  std::sort(unpushed.begin(), unpushed.end());  // by path (they come by content id)
  // Staged: the index against HEAD.
  std::vector<std::string> to_commit;
  for (const auto& [path, id] : staged) {
    auto was = at_head.find(path);
    if (was != at_head.end() && was->second == id) continue;
    to_commit.push_back(path + "  " + (was == at_head.end() ? "new" : "modified") + "  " + id.Hex().substr(0, 12) +
                        "  " + HowHeld(store, id));
  }
  // Staged whole, not through the filter: git add alone does not store
  // them again (their times have not changed), --renormalize does.
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<ops::StagedWhole> whole, ops::StagedWholeFiles(context));
  std::set<std::string> whole_paths;
  std::vector<std::string> staged_whole;
  for (const ops::StagedWhole& f : whole) {
    whole_paths.insert(f.path);
    staged_whole.push_back(f.path + "  " + HumanBytes(f.size));
  }
  for (const auto& [path, id] : at_head) {
    if (!staged.count(path) && !whole_paths.count(path)) to_commit.push_back(path + "  deleted");
  }
  // The work tree against the index, as git status sees it.
  ZIPNN_ASSIGN_OR_RETURN(const ops::WorkTreeChanges changes, ops::ChangedInWorkTree());
  std::vector<std::string> not_staged, not_added;
  // git sees a file it holds whole as changed once the filter cleans it:
  // that is the whole sections' to say, with the way out.
  whole_paths.insert(status.whole_in_git.begin(), status.whole_in_git.end());
  for (const auto& [path, what] : changes.changed) {
    if (!whole_paths.count(path)) not_staged.push_back(path + "  " + what);
  }
  for (const std::string& path : changes.untracked) not_added.push_back(path);
  // What HEAD and the index name that this store lacks.
  std::vector<std::string> missing;
  std::set<ContentId> seen;
  using ByPath = std::map<std::string, ContentId>;
  for (const ByPath* named : std::initializer_list<const ByPath*>{&at_head, &staged}) {
    for (const auto& [path, id] : *named) {
      if (!seen.insert(id).second) continue;
      const ops::HeldVersion held = ops::DescribeHeld(store, id);
      if (held.kind == "missing") missing.push_back(path + "  " + id.Hex().substr(0, 12));
    }
  }

  // Without the filter in force, `git add` stores tracked files whole in
  // git: said first, with the way out.
  const bool installed = ops::FilterInstalled();
  if (!installed) {
    std::printf(
        "The git-zipnn filter is not installed: `git add` stores tracked checkpoints whole in git. Run `git zipnn "
        "install` (then `git add --renormalize .` for files added without it).\n");
  }
  Section(status.has_remote ? "Checkpoints in commits on no remote branch (git push sends their objects):"
                            : "Checkpoints in commits on no remote branch (this repository has no remote yet: `git "
                              "remote add origin <url>`, then `git push`):",
          unpushed);
  // HEAD's whole files whose fix is staged (a pointer in the index) are
  // the staged section's.
  std::vector<std::string> held_whole;
  for (const std::string& path : status.whole_in_git) {
    if (!staged.count(path)) held_whole.push_back(path);
  }
  Section(installed ? "Checkpoints git holds whole, not stored here (added without the filter: `git add "
                      "--renormalize <path>` and commit store them):"
                    : "Checkpoints git holds whole, not stored here (added without the filter: `git "
                      "zipnn install`, then `git add --renormalize <path>` and commit):",
          held_whole);
  Section(
      "Checkpoints staged whole, not through the filter (a commit would put them into git; `git add --renormalize "
      "-- <path>` stores them):",
      staged_whole);
  Section("Checkpoints staged for commit:", to_commit);
  Section("Checkpoints changed and not staged (git add stores them):", not_staged);
  Section("Checkpoints not added yet (they match a tracked pattern):", not_added);
  Section("Checkpoints of HEAD or the index not in this store (git zipnn fetch gets them):", missing);
  // Pointers left in the work tree: pull writes them, unless retention
  // took their exact bytes (and the remote, if any, could not give them).
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> left, ops::PointersInWorkTree(staged));
  std::vector<std::string> pointers, retained;
  for (const std::string& path : left) {
    const std::string kind = ops::DescribeHeld(store, staged.at(path)).kind;
    (kind == "thin" || kind == "drop" ? retained : pointers)
        .push_back(path + (kind == "thin"   ? "  thinned"
                           : kind == "drop" ? "  dropped"
                                            : ""));
  }
  Section("Checkpoints the work tree holds as their pointers (git zipnn pull writes them):", pointers);
  Section(
      "Checkpoints the work tree holds as their pointers because retention took their exact bytes (`git zipnn "
      "restore --approximate <path> -o <file>` writes a thinned one's approximate bytes):",
      retained);
  if (unpushed.empty() && to_commit.empty() && not_staged.empty() && not_added.empty() && missing.empty() &&
      pointers.empty() && retained.empty() && held_whole.empty() && staged_whole.empty()) {
    if (at_head.empty() && staged.empty()) {
      std::printf("No checkpoint is stored at HEAD or staged (`git zipnn track` lists the tracked patterns).\n");
    } else if (!status.has_remote) {
      std::printf(
          "Every checkpoint of HEAD is stored here; nothing is staged or changed. This repository has no "
          "remote yet.\n");
    } else {
      std::printf("Every checkpoint of HEAD is stored here and on a remote branch; nothing is staged or changed.\n");
    }
  }
  return OkStatus();
}

// The pre-commit hook: stops a commit that would put files of tracked
// patterns whole into git's history. Its own trouble (a damaged index it
// cannot read, no git) stops no commit: it is said, and git goes on.
Status RunPreCommit() {
  ops::Context context;
  const Result<std::vector<ops::StagedWhole>> whole = ops::StagedWholeFiles(context);
  if (!whole.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: cannot check what is staged (%s); the commit goes on\n",
                 whole.status().message().c_str());
    return OkStatus();
  }
  if (whole->empty()) return OkStatus();
  std::string listed, paths;
  for (const ops::StagedWhole& f : *whole) {
    listed += "  " + f.path + " (" + HumanBytes(f.size) + ")\n";
    paths += " " + ForShell(f.path);
  }
  const std::string why = ops::FilterInstalled()
                              ? "they were staged before a tracked pattern matched them, or while the filter was not "
                                "installed"
                              : "the git-zipnn filter is not installed: run `git zipnn install` first";
  return InvalidArgument(Counted(whole->size(), "file") + " of tracked patterns " +
                         (whole->size() == 1 ? "is" : "are") +
                         " staged whole, not through git-zipnn's filter, so this commit would put " +
                         (whole->size() == 1 ? "it" : "them") + " into git's history:\n" + listed + "(" + why +
                         "). To store them as checkpoints: git add --renormalize --" + paths +
                         ", then commit again; `git commit --no-verify` commits them whole; nothing was committed");
}

}  // namespace

Action SetupStatus(CLI::App&) {
  return [] { return RunStatus(); };
}

Action SetupPreCommit(CLI::App& sub) {
  sub.allow_extras();
  return [] { return RunPreCommit(); };
}

}  // namespace zipnn::cmd
