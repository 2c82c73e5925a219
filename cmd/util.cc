#include "cmd/util.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>

#include "lib/formats/detect.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/series/series.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) { return WriteAll(1, data, n, "standard output"); }

void AddThreadsOption(CLI::App& sub, int& threads) {
  sub.add_option("--threads,-T", threads, "Worker threads (default: all cores; output is identical for any count)")
      ->check(CLI::Range(0, 4096));
}

const ConfigEntry kFilterConfig[6] = {
    {"filter.zipnn.process", "git-zipnn filter-process"},
    {"filter.zipnn.clean", "git-zipnn clean -- %f"},
    {"filter.zipnn.smudge", "git-zipnn smudge -- %f"},
    {"filter.zipnn.required", "true"},
    {"diff.zipnn.command", "git-zipnn diff --driver"},
    {"diff.zipnn.textconv", "git-zipnn textconv"},
};

Result<store::Repository> OpenRepository() {
  ZIPNN_ASSIGN_OR_RETURN(std::string git_dir, git::GitDir());
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> configured, git::ConfigGet("zipnn.storepath"));
  const std::string zipnn_dir = git_dir + "/zipnn";
  store::Repository repo{store::ObjectStore(configured ? *configured : zipnn_dir + "/objects"), zipnn_dir + "/tmp",
                         zipnn_dir + "/cache/raw", "", config::Policy{}};
  // So that a gc from another repository sharing the store keeps what
  // this one needs. A store this one cannot write to is one it does not
  // add to either.
  (void)repo.objects.RegisterUser(git_dir);
  auto top = git::TopLevel();
  if (top.ok()) {
    repo.work_dir = *top;
    // A mistake in .zipnn.yaml costs its key the default, with a warning
    // every command repeats; it never stops git (status, checkout, add).
    config::LoadedPolicy loaded = config::LoadPolicyLenient(*top + "/.zipnn.yaml");
    for (const std::string& warning : loaded.warnings) {
      std::fprintf(stderr, "git-zipnn: warning: %s (ignored; the defaults hold)\n", warning.c_str());
    }
    repo.policy = std::move(loaded.policy);
  }
  return repo;
}

Result<std::unique_ptr<git::SeriesVersions>> OpenSeries(const store::Repository& repo) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(repo.policy.series));
  return std::make_unique<git::SeriesVersions>(std::move(git_repo), std::move(rules));
}

std::string WhyBase(const store::Repository& repo, git::SeriesVersions& series, const std::string& path,
                    const ContentId& id) {
  auto versions = series.Of(series.rules().Place(path).name, /*deep=*/true);
  if (!versions.ok()) return "";
  for (size_t i = 0; i < versions->size(); ++i) {
    if ((*versions)[i].id != id) continue;
    auto info = store::Describe(repo, id);
    if (!info.ok() || info->delta) return "";
    return store::BaseReasonText(store::WhyBase(repo, *versions, i), repo.policy);
  }
  return "";
}

namespace {

// `path` of a "<rev>:<path>" spec from the top of the work tree: "./" is
// the current folder. nullopt for what only git should interpret ("..").
std::optional<std::string> PathFromTop(const git::Repository& repo, const std::string& path) {
  std::string from_top = path;
  if (path.rfind("./", 0) == 0) {
    std::error_code ec;
    const auto here = std::filesystem::weakly_canonical(std::filesystem::current_path(ec), ec);
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

}  // namespace

Result<store::Pointer> PointerAt(const std::string& spec) {
  // In-process: the pointer's blob at the revision, without starting git.
  const size_t colon = spec.find(':');
  auto repo = git::Repository::Discover();
  if (colon != std::string::npos && colon > 0 && repo.ok() && !repo->work_dir().empty()) {
    const std::string rev = spec.substr(0, colon);
    if (auto path = PathFromTop(*repo, spec.substr(colon + 1))) {
      ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> commit, repo->ResolveCommit(rev));
      if (!commit) return NotFound(spec + " is not in git (no revision '" + rev + "')");
      ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> blob, repo->FileAt(*commit, *path));
      if (!blob) return NotFound(spec + " is not in git (no file " + *path + " at " + rev + ")");
      Result<std::optional<store::Pointer>> pointer = git::PointerInBlob(*repo, *blob);
      if (!pointer.ok()) {
        if (pointer.status().code() == StatusCode::kGit) return pointer.status();
        return InvalidArgument(spec + " is not stored by git-zipnn (a damaged pointer: " + pointer.status().message() +
                               ")");
      }
      if (!*pointer) {
        return InvalidArgument(spec + " is not stored by git-zipnn: git holds the file itself (it is not tracked, "
                               "or was committed before `git zipnn install` and `track`)");
      }
      return **pointer;
    }
  }
  // Anything else as git reads it (the index ":path", "../" paths).
  auto text = git::GitOutput({"show", spec});
  if (!text.ok()) return NotFound(spec + " is not in git (" + text.status().message() + ")");
  auto pointer = store::ParsePointer(*text + "\n");
  if (!pointer.ok()) return InvalidArgument(spec + " is not stored by git-zipnn (" + pointer.status().message() + ")");
  return *pointer;
}

namespace {

// A checkpoint that `fill` writes into a scratch file in `dir`.
Result<Checkpoint> ScratchCheckpoint(const std::string& dir, const std::function<Status(ByteSink&)>& fill) {
  ZIPNN_ASSIGN_OR_RETURN(TempFile scratch, TempFile::Create(dir, "version"));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(scratch.path(), /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(fill(out));
  ZIPNN_RETURN_IF_ERROR(out.CommitUnsynced());
  const std::string path = scratch.path();
  return Checkpoint{path, std::move(scratch)};
}

}  // namespace

Result<Checkpoint> CheckpointAt(const store::Repository& repo, const std::string& rev, const std::string& path) {
  const std::string spec = rev + ":" + path;
  auto pointer = PointerAt(spec);
  if (pointer.ok()) {
    return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return store::RestoreFile(repo, *pointer, spec, out); });
  }
  if (pointer.status().code() != StatusCode::kInvalidArgument) return pointer.status();
  // A file committed before it was tracked: git holds its bytes.
  ZIPNN_ASSIGN_OR_RETURN(git::GitRun blob, git::RunGit({"cat-file", "blob", spec}));
  if (blob.exit_code != 0) return Status(StatusCode::kGit, "git cat-file blob " + spec + " failed: " + blob.err);
  return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return out.Append(blob.out.data(), blob.out.size()); });
}

Result<std::optional<store::Pointer>> PointerInFile(const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile in, ReadFile::Open(file));
  if (in.size() > store::kMaxPointerBytes) return std::optional<store::Pointer>();
  std::string text(in.size(), '\0');
  ZIPNN_RETURN_IF_ERROR(in.ReadAt(0, text.data(), text.size()));
  if (!store::LooksLikePointer(text)) return std::optional<store::Pointer>();
  ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, store::ParsePointer(text));
  return std::optional<store::Pointer>(pointer);
}

Result<Checkpoint> CheckpointInFile(const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, PointerInFile(file));
  if (!pointer) return Checkpoint{file, std::nullopt};
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return store::RestoreFile(repo, *pointer, file, out); });
}

void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top) {
  if (paths.empty()) return;
  std::vector<std::string> args = {"add", "--"};
  for (const std::string& path : paths) args.push_back(":(literal)" + path);
  (void)git::RunGit(args, top);  // a failed refresh only costs `git status` a clean pass
}

Result<std::shared_ptr<analyze::Input>> OpenCheckpoint(Checkpoint checkpoint) {
  auto input = std::make_shared<analyze::Input>();
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(checkpoint.path));
  input->file = std::make_unique<ReadFile>(std::move(file));
  ZIPNN_ASSIGN_OR_RETURN(input->layout, formats::ReadLayout(*input->file, formats::FormatChoice::kAuto));
  input->scratch = std::move(checkpoint.scratch);
  return input;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

Result<std::vector<std::string>> TrackedPaths() {
  return git::GitPaths({"ls-files", "-z", "--full-name", "--", ":(top,attr:filter=zipnn)"});
}

Result<std::string> TrackedPath(const std::string& given) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                         git::GitPaths({"ls-files", "-z", "--full-name", "--error-unmatch", "--", given}));
  if (paths.empty()) return Status(StatusCode::kGit, "git ls-files lists no file for " + given);
  return paths[0];
}

std::string TrackLine(const std::string& pattern) { return pattern + " filter=zipnn diff=zipnn -text"; }

std::optional<std::string> TrackedPattern(const std::string& line) {
  std::istringstream words(line);
  std::string pattern, word;
  if (!(words >> pattern) || pattern[0] == '#') return std::nullopt;
  while (words >> word) {
    if (word == "filter=zipnn") return pattern;
  }
  return std::nullopt;
}

}  // namespace zipnn::cmd
