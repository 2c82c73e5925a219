#include "lib/git/hook.h"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::git {

namespace {

// The pre-push hook: git-zipnn sends the objects first, then the hook that
// was there before install (kept beside it) runs with the same input.
constexpr char kHookMarker[] = "# git-zipnn pre-push hook";
constexpr char kChained[] = "pre-push.before-zipnn";
constexpr char kHook[] = R"hook(#!/bin/sh
# git-zipnn pre-push hook (written by git-zipnn: docs/commands/install.md).
# Sends the checkpoint objects that the pushed commits need to the
# remote's object store before git sends the pointers, then runs the hook
# that was here before (pre-push.before-zipnn), if there was one.
command -v git-zipnn >/dev/null 2>&1 || {
  echo >&2 "git-zipnn is not on PATH; it is needed to push checkpoints (docs/remotes.md)"
  exit 2
}
input=$(mktemp) || exit 1
trap 'rm -f "$input"' EXIT
cat >"$input"
git-zipnn pre-push "$@" <"$input" || exit $?
chained="$(dirname "$0")/pre-push.before-zipnn"
if [ -x "$chained" ]; then
  "$chained" "$@" <"$input" || exit $?
elif command -v git-lfs >/dev/null 2>&1 && [ -n "$(git config filter.lfs.process)" ]; then
  # What Git LFS's own hook runs, had it got here first: its files go too.
  git lfs pre-push "$@" <"$input" || exit $?
fi
)hook";

// Whether the hook at `path` is the one Git LFS writes: besides comments
// and its check that git-lfs is on PATH, only `git lfs pre-push "$@"`.
bool IsGitLfsHook(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  std::istringstream in(std::string(text->begin(), text->end()));
  bool runs_lfs = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("command -v git-lfs ", 0) == 0) continue;
    if (line != "git lfs pre-push \"$@\"") return false;
    runs_lfs = true;
  }
  return runs_lfs;
}

bool IsOurHook(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  return std::string(text->begin(), text->end()).find(kHookMarker) != std::string::npos;
}

// Writes our hook at `hook`, executable; without `overwrite`, a hook
// that appeared meanwhile is an error and stays.
Status WriteHook(const std::string& hook, bool overwrite) {
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(hook, overwrite));
  ZIPNN_RETURN_IF_ERROR(out.Append(kHook, sizeof kHook - 1));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  if (::chmod(hook.c_str(), 0755) != 0) return IoError(hook + ": cannot make it executable");
  return OkStatus();
}

}  // namespace

Result<std::vector<std::string>> InstallHook() {
  std::vector<std::string> said;
  Result<std::string> dir = HooksFolder();
  if (!dir.ok()) return said;
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(*dir));
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (FileExists(hook) && !IsOurHook(hook)) {
    if (FileExists(chained)) {
      return InvalidArgument(hook + " is not git-zipnn's and " + chained +
                             " exists too; merge them by hand, then run install again");
    }
    if (::rename(hook.c_str(), chained.c_str()) != 0) return IoError(hook + ": cannot move it aside");
    said.push_back("kept the pre-push hook that was there as " + chained + "; it runs after git-zipnn's");
  }
  ZIPNN_RETURN_IF_ERROR(WriteHook(hook, /*overwrite=*/true));
  said.push_back("pre-push hook installed in " + *dir);
  return said;
}

Result<std::vector<std::string>> UninstallHook() {
  std::vector<std::string> said;
  Result<std::string> dir = HooksFolder();
  if (!dir.ok()) return said;
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (!IsOurHook(hook)) return said;
  if (::unlink(hook.c_str()) != 0) return IoError(hook + ": cannot remove it");
  if (FileExists(chained) && ::rename(chained.c_str(), hook.c_str()) != 0) {
    return IoError(chained + ": cannot put it back as " + hook);
  }
  said.push_back("pre-push hook removed from " + *dir);
  return said;
}

std::string EnsureHook(const std::string& dir) {
  const std::string hook = dir + "/pre-push", chained = dir + "/" + kChained;
  if (IsOurHook(hook)) return "";
  // Git LFS's hook, in a repository that tracks files with both: it is
  // chained, as install does, so that git push sends both kinds.
  if (IsGitLfsHook(hook) && !FileExists(chained)) {
    if (::rename(hook.c_str(), chained.c_str()) == 0) {
      Status written = WriteHook(hook, /*overwrite=*/false);
      if (written.ok()) {
        return "installed the pre-push hook in " + dir + ", which runs Git LFS's after it (kept as " + kChained +
               "), so that git push sends checkpoints and Git LFS's files";
      }
      if (IsOurHook(hook)) return "";  // another process did the same meanwhile
      (void)::rename(chained.c_str(), hook.c_str());
    }
  }
  if (FileExists(hook)) {
    return "warning: " + hook +
           " is another program's pre-push hook, so `git push` will not send checkpoint "
           "objects; run `git zipnn install --local` to run both";
  }
  Status written = MakeDirectories(dir);
  if (written.ok()) written = WriteHook(hook, /*overwrite=*/false);
  if (written.ok()) return "installed the pre-push hook in " + dir + ", so that git push sends checkpoints";
  if (IsOurHook(hook)) return "";  // another process wrote it meanwhile
  return "warning: cannot install the pre-push hook (" + written.message() +
         "); `git push` will not send checkpoint objects until `git zipnn install --local` does";
}

}  // namespace zipnn::git
