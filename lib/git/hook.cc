#include "lib/git/hook.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::git {

namespace {

// One hook: its name, what it is for (in messages), and the lines of its
// script that do the work. Every hook runs `git-zipnn <name> "$@"` (its
// standard input kept for the one that was there before, kept beside it
// as <name>.before-zipnn and run after ours), else Git LFS's own hook
// when Git LFS tracks files here, writes one of that name, and got no
// hook in first.
struct Hook {
  const char* name;
  const char* why;     // "so that git push sends checkpoints"
  const char* doing;   // the script's comment on what git-zipnn does
  bool reads_input;    // git feeds it lines on standard input (pre-push)
  bool fails_the_run;  // its failure stops git (pre-push, pre-commit): else only said
  // What goes undone without it, said when another program's hook is
  // there or it cannot be written; null: nothing worth a warning.
  const char* without;
  bool needs_zipnn;     // without git-zipnn on PATH, git's command stops (pre-push)
  bool after_checkout;  // writes what a checkout left as pointers
  bool git_lfs_has;     // Git LFS writes a hook of this name
};
constexpr Hook kHooks[] = {
    {"pre-push", "so that git push sends checkpoints",
     "Sends the checkpoint objects that the pushed commits need to the\n"
     "# remote's object store before git sends the pointers",
     true, true, "`git push` will not send checkpoint objects", true, false, true},
    {"post-checkout", "so that checkpoints too large for git's filter are written after checkouts and merges",
     "Writes the checkpoints too large to pass through git's filter\n"
     "# (zipnn.checkoutOutsideAbove), which the checkout left as pointers",
     false, false, nullptr, false, true, true},
    {"post-merge", "so that checkpoints too large for git's filter are written after checkouts and merges",
     "Writes the checkpoints too large to pass through git's filter\n"
     "# (zipnn.checkoutOutsideAbove), which the merge left as pointers",
     false, false, nullptr, false, true, true},
    {"pre-commit", "so that git commit stops a checkpoint staged whole",
     "Stops a commit that would put files of tracked patterns whole into\n"
     "# git's history (staged without the filter)",
     // Another program's pre-commit hook is common (the pre-commit
     // framework's): left alone without a word, as install chains it.
     false, true, nullptr, false, false, false},
};

std::string Marker(const Hook& h) { return std::string("# git-zipnn ") + h.name + " hook"; }
std::string Chained(const Hook& h) { return std::string(h.name) + ".before-zipnn"; }

std::string Script(const Hook& h) {
  const std::string name = h.name;
  const std::string in = h.reads_input ? " <\"$input\"" : "";
  std::string s = "#!/bin/sh\n" + Marker(h) + " (written by git-zipnn: docs/commands/install.md).\n# " + h.doing +
                  ",\n# then runs the hook that was here before (" + Chained(h) + "), if there was one.\n";
  if (h.needs_zipnn) {
    s += "command -v git-zipnn >/dev/null 2>&1 || {\n"
         "  echo >&2 \"git-zipnn is not on PATH; it is needed to push checkpoints (docs/remotes.md)\"\n"
         "  exit 2\n"
         "}\n";
  } else {
    // Without git-zipnn no filter ran to leave anything for it: git's
    // command ends as it would without the hook.
    s += "command -v git-zipnn >/dev/null 2>&1 || exit 0\n";
  }
  if (h.reads_input) s += "input=$(mktemp) || exit 1\ntrap 'rm -f \"$input\"' EXIT\ncat >\"$input\"\n";
  s += "git-zipnn " + name + " \"$@\"" + in + " || exit $?\n";
  s += "chained=\"$(dirname \"$0\")/" + Chained(h) + "\"\n";
  s += "if [ -x \"$chained\" ]; then\n  \"$chained\" \"$@\"" + in + " || exit $?\n";
  if (!h.git_lfs_has) return s + "fi\n";
  // Only where Git LFS keeps files (it stores each in lfs/objects as it
  // cleans or smudges it, or in lfs.storage): elsewhere it has nothing to
  // do, and its hook would still ask the server about locks on every push.
  s += "elif command -v git-lfs >/dev/null 2>&1 && [ -n \"$(git config filter.lfs.process)\" ] &&\n"
       "  { [ -n \"$(git config lfs.storage)\" ] || [ -d \"$(git rev-parse --git-common-dir)/lfs/objects\" ]; }; then\n"
       "  # What Git LFS's own hook runs, had it got here first: its files go\n"
       "  # too. A clone where Git LFS never stored a file has none to send.\n"
       "  git lfs " + name + " \"$@\"" + in + " || exit $?\nfi\n";
  return s;
}

// Whether the hook at `path` is the one Git LFS writes for `h`: besides
// comments and its check that git-lfs is on PATH, only
// `git lfs <name> "$@"`.
bool IsGitLfsHook(const Hook& h, const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  std::istringstream in(std::string(text->begin(), text->end()));
  bool runs_lfs = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("command -v git-lfs ", 0) == 0) continue;
    if (line != "git lfs " + std::string(h.name) + " \"$@\"") return false;
    runs_lfs = true;
  }
  return runs_lfs;
}

bool IsOurHook(const Hook& h, const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  return std::string(text->begin(), text->end()).find(Marker(h)) != std::string::npos;
}

// Writes our hook at `path`, executable; without `overwrite`, a hook
// that appeared meanwhile is an error and stays.
Status WriteHook(const Hook& h, const std::string& path, bool overwrite) {
  const std::string script = Script(h);
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, overwrite));
  ZIPNN_RETURN_IF_ERROR(out.Append(script.data(), script.size()));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  if (::chmod(path.c_str(), 0755) != 0) return IoError(path + ": cannot make it executable");
  return OkStatus();
}

// What the filter did to one hook.
struct Ensured {
  bool ours = true;      // ours is there now
  bool written = false;  // by this call
  std::string said;      // anything else to say (Git LFS's chained, a warning)
};

// The filter's part for one hook: writes ours when there is none.
Ensured EnsureHook(const Hook& h, const std::string& dir) {
  const std::string hook = dir + "/" + h.name, chained = dir + "/" + Chained(h);
  Ensured e;
  if (IsOurHook(h, hook)) return e;
  // Git LFS's hook, in a repository that tracks files with both: it is
  // chained, as install does, so that both run.
  if (IsGitLfsHook(h, hook) && !FileExists(chained)) {
    if (::rename(hook.c_str(), chained.c_str()) == 0) {
      Status written = WriteHook(h, hook, /*overwrite=*/false);
      if (written.ok()) {
        e.said = "installed the " + std::string(h.name) + " hook in " + dir + ", which runs Git LFS's after it (kept as " +
                 Chained(h) + "), " + h.why + " and Git LFS's files are handled";
        return e;
      }
      if (IsOurHook(h, hook)) return e;  // another process did the same meanwhile
      (void)::rename(chained.c_str(), hook.c_str());
    }
  }
  e.ours = false;
  if (FileExists(hook)) {
    // Without ours after a checkout the filter passes large checkpoints
    // through git, as before: nothing lost, nothing to say.
    if (h.without != nullptr) {
      e.said = "warning: " + hook + " is another program's " + h.name + " hook, so " + h.without +
               "; run `git zipnn install --local` to run both";
    }
    return e;
  }
  Status written = MakeDirectories(dir);
  if (written.ok()) written = WriteHook(h, hook, /*overwrite=*/false);
  e.ours = e.written = written.ok();
  if (written.ok() || IsOurHook(h, hook)) {  // or another process wrote it meanwhile
    e.ours = true;
    return e;
  }
  if (h.without != nullptr) {
    e.said = "warning: cannot install the " + std::string(h.name) + " hook (" + written.message() + "); " + h.without +
             " until `git zipnn install --local` does";
  }
  return e;
}

// "a", "a and b", "a, b and c".
std::string Listed(const std::vector<std::string>& words) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) text += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return text;
}

}  // namespace

Result<std::vector<std::string>> InstallHook() {
  std::vector<std::string> said;
  Result<std::string> dir = HooksFolder();
  if (!dir.ok()) return said;
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(*dir));
  for (const Hook& h : kHooks) {
    const std::string hook = *dir + "/" + h.name, chained = *dir + "/" + Chained(h);
    if (FileExists(hook) && !IsOurHook(h, hook)) {
      if (FileExists(chained)) {
        return InvalidArgument(hook + " is not git-zipnn's and " + chained +
                               " exists too; merge them by hand, then run install again");
      }
      if (::rename(hook.c_str(), chained.c_str()) != 0) return IoError(hook + ": cannot move it aside");
      said.push_back("kept the " + std::string(h.name) + " hook that was there as " + chained +
                     "; it runs after git-zipnn's");
    }
    ZIPNN_RETURN_IF_ERROR(WriteHook(h, hook, /*overwrite=*/true));
  }
  std::vector<std::string> names;
  for (const Hook& h : kHooks) names.push_back(h.name);
  said.push_back(Listed(names) + " hooks installed in " + *dir);
  return said;
}

Result<std::vector<std::string>> UninstallHook() {
  std::vector<std::string> said;
  Result<std::string> dir = HooksFolder();
  if (!dir.ok()) return said;
  std::vector<std::string> removed;
  for (const Hook& h : kHooks) {
    const std::string hook = *dir + "/" + h.name, chained = *dir + "/" + Chained(h);
    if (!IsOurHook(h, hook)) continue;
    if (::unlink(hook.c_str()) != 0) return IoError(hook + ": cannot remove it");
    if (FileExists(chained) && ::rename(chained.c_str(), hook.c_str()) != 0) {
      return IoError(chained + ": cannot put it back as " + hook);
    }
    removed.push_back(h.name);
  }
  if (!removed.empty()) {
    said.push_back(Listed(removed) + (removed.size() == 1 ? " hook" : " hooks") + " removed from " + *dir);
  }
  return said;
}

EnsuredHooks EnsureHooks(const std::string& dir) {
  EnsuredHooks ensured;
  ensured.writes_after_checkout = true;
  std::vector<std::string> written, why;
  for (const Hook& h : kHooks) {
    const Ensured e = EnsureHook(h, dir);
    if (e.written) {
      written.push_back(h.name);
      if (std::find(why.begin(), why.end(), h.why) == why.end()) why.push_back(h.why);
    }
    if (!e.said.empty()) ensured.said.push_back(e.said);
    if (h.after_checkout && !e.ours) ensured.writes_after_checkout = false;
  }
  if (!written.empty()) {
    // One line for what a clone writes: "so that git push sends
    // checkpoints, checkpoints too large for ... merges, and git commit
    // stops ...".
    std::string reasons = why[0];
    for (size_t i = 1; i < why.size(); ++i) {
      reasons += std::string(why.size() > 2 ? "," : "") + (i + 1 == why.size() ? " and " : " ") +
                 why[i].substr(std::string("so that ").size());
    }
    ensured.said.insert(ensured.said.begin(), "installed the " + Listed(written) +
                                                  (written.size() == 1 ? " hook in " : " hooks in ") + dir + ", " +
                                                  reasons);
  }
  return ensured;
}

}  // namespace zipnn::git
