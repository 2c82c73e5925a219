#include "lib/git/checkpoint_at.h"

#include <filesystem>
#include <optional>

#include "lib/base/closest.h"
#include "lib/git/git.h"
#include "lib/git/run.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"

namespace zipnn::git {

namespace {

// `path` of a "<rev>:<path>" spec from the top of the work tree: "./" is
// the folder `cwd`. nullopt for what only git should interpret ("..").
std::optional<std::string> PathFromTop(const Port& repo, const std::filesystem::path& cwd, const std::string& path) {
  std::string from_top = path;
  if (path.rfind("./", 0) == 0) {
    std::error_code ec;
    const auto here = std::filesystem::weakly_canonical(cwd, ec);
    const auto top = std::filesystem::weakly_canonical(repo.work_dir(), ec);
    if (ec) return std::nullopt;
    const std::string prefix = here.lexically_relative(top).generic_string();
    if (prefix.empty() || prefix.rfind("..", 0) == 0) return std::nullopt;
    from_top = (prefix == "." ? "" : prefix + "/") + path.substr(2);
  }
  for (size_t at = 0; at <= from_top.size();) {
    size_t slash = from_top.find('/', at);
    if (slash == std::string::npos) slash = from_top.size();
    const std::string part = from_top.substr(at, slash - at);
    if (part.empty() || part == "." || part == "..") return std::nullopt;
    at = slash + 1;
  }
  return from_top;
}

// " (did you mean ...?)" with the files at `commit` closest to `path`, or
// nothing when none is close.
std::string ClosestFileHint(const Port& repo, const Oid& commit, const std::string& path) {
  auto files = repo.TreeFiles(commit);
  if (!files.ok()) return "";
  std::vector<std::string> paths;
  for (const FileEntry& f : *files) paths.push_back(f.path);
  const std::vector<std::string> close = ClosestWords(path, paths);
  return close.empty() ? "" : " (did you mean " + Alternatives(close, "", 3) + "?)";
}

}  // namespace

Result<std::optional<store::Pointer>> PointerInProcess(const Port& git, const std::string& spec,
                                                       const std::filesystem::path& cwd) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || git.work_dir().empty()) return std::optional<store::Pointer>();
  const std::string rev = spec.substr(0, colon);
  const std::optional<std::string> path = PathFromTop(git, cwd, spec.substr(colon + 1));
  if (!path) return std::optional<store::Pointer>();
  // Named as the user gave it (the commands add "./" to a path).
  std::string given = spec.substr(colon + 1);
  if (given.rfind("./", 0) == 0) given = given.substr(2);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> commit, git.ResolveCommit(rev));
  if (!commit) return NotFound("no revision '" + rev + "' in this repository (for " + given + ")");
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> blob, git.FileAt(*commit, *path));
  if (!blob) return NotFound(given + " is not in " + rev + ClosestFileHint(git, *commit, *path));
  Result<std::optional<store::Pointer>> pointer = PointerInBlob(git, *blob);
  if (!pointer.ok()) {
    if (pointer.status().code() == StatusCode::kGit) return pointer.status();
    return InvalidArgument(spec + " is not stored by git-zipnn (a damaged pointer: " + pointer.status().message() +
                           ")");
  }
  if (!*pointer) {
    return InvalidArgument(spec +
                           " is not stored by git-zipnn: git holds the file itself (it is not tracked, "
                           "or was committed before `git zipnn install` and `track`)");
  }
  return pointer;
}

Result<store::Pointer> PointerAt(const std::string& spec) {
  // In-process: the pointer's blob at the revision, without starting git.
  const size_t colon = spec.find(':');
  if (!spec.empty() && spec[0] == '-') ZIPNN_RETURN_IF_ERROR(CheckRevision(spec.substr(0, colon)));
  auto repo = Repository::Discover();
  if (repo.ok()) {
    std::error_code ec;
    ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer,
                           PointerInProcess(*repo, spec, std::filesystem::current_path(ec)));
    if (pointer) return *pointer;
  }
  // Anything else as git reads it (the index ":path", "../" paths).
  auto text = GitOutput({"show", "--end-of-options", spec});
  if (!text.ok()) return NotFound(spec + " is not in git (" + text.status().message() + ")");
  auto pointer = store::ParsePointer(*text + "\n");
  if (!pointer.ok()) return InvalidArgument(spec + " is not stored by git-zipnn (" + pointer.status().message() + ")");
  return *pointer;
}

Result<formats::Checkpoint> UnfilteredAt(const std::string& temp_dir, const std::string& spec) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun blob, RunGit({"cat-file", "blob", "--end-of-options", spec}));
  if (blob.exit_code != 0) return Status(StatusCode::kGit, "git cat-file blob " + spec + " failed: " + blob.err);
  return formats::Checkpoint::Spool(temp_dir,
                                    [&](ByteSink& out) { return out.Append(blob.out.data(), blob.out.size()); });
}

}  // namespace zipnn::git
