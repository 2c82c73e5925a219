// git zipnn fetch / pull: bring the objects that pointers need from a
// remote's object store; pull then writes the checkpoints into the work
// tree where git left pointers (GIT_ZIPNN_SKIP_SMUDGE, or a checkout
// without the objects).
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/remotes.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

struct FetchArgs {
  std::string remote;
  std::vector<std::string> refs;
  bool all = false;
  bool quiet = false;
};

Status Fetch(const store::Repository& repo, const FetchArgs& a) {
  std::string remote = a.remote;
  if (remote.empty()) {
    ASSIGN_OR_RETURN(remote, DefaultRemote());
  }
  FoundPointers found;
  if (a.all) {
    ASSIGN_OR_RETURN(found, FindPointersIn({"--all"}));
  } else {
    ASSIGN_OR_RETURN(found, FindPointersInTrees(a.refs.empty() ? std::vector<std::string>{"HEAD"} : a.refs));
  }
  return FetchPointers(repo, remote, found, a.quiet);
}

// The pointer a work-tree file holds, if it holds one.
std::optional<store::Pointer> PointerInFile(const std::string& path) {
  auto in = ReadFile::Open(path);
  if (!in.ok() || in->size() > store::kMaxPointerBytes) return std::nullopt;
  std::string text(in->size(), '\0');
  if (!in->ReadAt(0, text.data(), text.size()).ok()) return std::nullopt;
  auto pointer = store::ParsePointer(text);
  if (!pointer.ok()) return std::nullopt;
  return *pointer;
}

Status RunPull(const FetchArgs& a) {
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  RETURN_IF_ERROR(Fetch(repo, a));
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  ASSIGN_OR_RETURN(std::vector<std::string> paths, TrackedPaths());
  std::vector<std::string> restored = {"update-index", "-q", "--refresh", "--"};
  for (const std::string& path : paths) {
    const std::string file = top + "/" + path;
    std::optional<store::Pointer> pointer = PointerInFile(file);
    if (!pointer) continue;
    ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(file, /*overwrite=*/true));
    RETURN_IF_ERROR(RestoreFetching(repo, *pointer, path, out));
    RETURN_IF_ERROR(out.Commit());
    restored.push_back(path);
    if (!a.quiet) std::printf("%s: restored %s\n", path.c_str(), pointer->id.Hex().c_str());
  }
  // The files changed behind git's back: refresh their stat data so that
  // `git status` compares contents (through clean) and stays quiet.
  if (restored.size() > 4) {
    ASSIGN_OR_RETURN(git::GitRun ignored, git::RunGit(restored, top));
    (void)ignored;
  }
  return OkStatus();
}

void AddFetchOptions(CLI::App& sub, FetchArgs& a) {
  sub.add_option("remote", a.remote, "Git remote whose object store has the objects (default: the upstream, or origin)");
  sub.add_option("refs", a.refs, "Get what the files of these revisions need (default: HEAD)");
  sub.add_flag("--all", a.all, "What every version in every ref's history needs");
  sub.add_flag("-q,--quiet", a.quiet, "Print nothing on success");
}

}  // namespace

Action SetupFetch(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a]() -> Status {
    ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
    return Fetch(repo, *a);
  };
}

Action SetupPull(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a] { return RunPull(*a); };
}

}  // namespace zipnn::cmd
