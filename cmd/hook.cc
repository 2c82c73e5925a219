#include "cmd/hook.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

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
fi
)hook";

bool IsOurHook(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  return std::string(text->begin(), text->end()).find(kHookMarker) != std::string::npos;
}

// The repository's hooks folder (core.hooksPath respected), or nothing
// outside a repository.
std::optional<std::string> HooksFolder() {
  auto dir = git::GitOutput({"rev-parse", "--path-format=absolute", "--git-path", "hooks"});
  if (!dir.ok()) return std::nullopt;
  return *dir;
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

Status InstallHook() {
  std::optional<std::string> dir = HooksFolder();
  if (!dir) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(*dir));
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (FileExists(hook) && !IsOurHook(hook)) {
    if (FileExists(chained)) {
      return InvalidArgument(hook + " is not git-zipnn's and " + chained +
                             " exists too; merge them by hand, then run install again");
    }
    if (::rename(hook.c_str(), chained.c_str()) != 0) return IoError(hook + ": cannot move it aside");
    std::printf("kept the pre-push hook that was there as %s; it runs after git-zipnn's\n", chained.c_str());
  }
  ZIPNN_RETURN_IF_ERROR(WriteHook(hook, /*overwrite=*/true));
  std::printf("pre-push hook installed in %s\n", dir->c_str());
  return OkStatus();
}

Status UninstallHook() {
  std::optional<std::string> dir = HooksFolder();
  if (!dir) return OkStatus();
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (!IsOurHook(hook)) return OkStatus();
  if (::unlink(hook.c_str()) != 0) return IoError(hook + ": cannot remove it");
  if (FileExists(chained) && ::rename(chained.c_str(), hook.c_str()) != 0) {
    return IoError(chained + ": cannot put it back as " + hook);
  }
  std::printf("pre-push hook removed from %s\n", dir->c_str());
  return OkStatus();
}

void EnsureHook() {
  std::optional<std::string> dir = HooksFolder();
  if (!dir) return;
  const std::string hook = *dir + "/pre-push";
  if (IsOurHook(hook)) return;
  if (FileExists(hook)) {
    std::fprintf(stderr,
                 "git-zipnn: warning: %s is another program's pre-push hook, so `git push` will not send "
                 "checkpoint objects; run `git zipnn install --local` to run both\n",
                 hook.c_str());
    return;
  }
  Status written = MakeDirectories(*dir);
  if (written.ok()) written = WriteHook(hook, /*overwrite=*/false);
  if (written.ok()) {
    std::fprintf(stderr, "git-zipnn: installed the pre-push hook in %s, so that git push sends checkpoints\n",
                 dir->c_str());
  } else if (!IsOurHook(hook)) {  // another process may have written it meanwhile
    std::fprintf(stderr, "git-zipnn: warning: cannot install the pre-push hook (%s); `git push` will not send "
                 "checkpoint objects until `git zipnn install --local` does\n", written.message().c_str());
  }
}

}  // namespace zipnn::cmd
