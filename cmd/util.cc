#include "cmd/util.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <functional>
#include <sstream>

#include "lib/formats/detect.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::write(1, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      return IoError(std::string("standard output: ") + std::strerror(errno));
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
  return OkStatus();
}

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
  ASSIGN_OR_RETURN(std::string git_dir, git::GitDir());
  ASSIGN_OR_RETURN(std::optional<std::string> configured, git::ConfigGet("zipnn.storepath"));
  const std::string zipnn_dir = git_dir + "/zipnn";
  store::Repository repo{store::ObjectStore(configured ? *configured : zipnn_dir + "/objects"),
                         zipnn_dir + "/series", zipnn_dir + "/tmp", config::Policy{}};
  auto top = git::TopLevel();
  if (top.ok()) {
    ASSIGN_OR_RETURN(repo.policy, config::LoadPolicy(*top + "/.zipnn.yaml"));
  }
  return repo;
}

Result<store::Pointer> PointerAt(const std::string& spec) {
  auto text = git::GitOutput({"show", spec});
  if (!text.ok()) return NotFound(spec + " is not in git (" + text.status().message() + ")");
  auto pointer = store::ParsePointer(*text + "\n");
  if (!pointer.ok()) return InvalidArgument(spec + " is not stored by git-zipnn (" + pointer.status().message() + ")");
  return *pointer;
}

namespace {

// A checkpoint that `fill` writes into a scratch file in `dir`.
Result<Checkpoint> ScratchCheckpoint(const std::string& dir, const std::function<Status(ByteSink&)>& fill) {
  ASSIGN_OR_RETURN(TempFile scratch, TempFile::Create(dir, "version"));
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(scratch.path(), /*overwrite=*/true));
  RETURN_IF_ERROR(fill(out));
  RETURN_IF_ERROR(out.CommitUnsynced());
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
  ASSIGN_OR_RETURN(git::GitRun blob, git::RunGit({"cat-file", "blob", spec}));
  if (blob.exit_code != 0) return Status(StatusCode::kGit, "git cat-file blob " + spec + " failed: " + blob.err);
  return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return out.Append(blob.out.data(), blob.out.size()); });
}

Result<Checkpoint> CheckpointInFile(const std::string& file) {
  ASSIGN_OR_RETURN(ReadFile in, ReadFile::Open(file));
  if (in.size() > store::kMaxPointerBytes) return Checkpoint{file, std::nullopt};
  std::string text(in.size(), '\0');
  RETURN_IF_ERROR(in.ReadAt(0, text.data(), text.size()));
  if (!store::LooksLikePointer(text)) return Checkpoint{file, std::nullopt};
  ASSIGN_OR_RETURN(store::Pointer pointer, store::ParsePointer(text));
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return store::RestoreFile(repo, pointer, file, out); });
}

Result<std::shared_ptr<analyze::Input>> OpenCheckpoint(Checkpoint checkpoint) {
  auto input = std::make_shared<analyze::Input>();
  ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(checkpoint.path));
  input->file = std::make_unique<ReadFile>(std::move(file));
  ASSIGN_OR_RETURN(input->layout, formats::ReadLayout(*input->file, formats::FormatChoice::kAuto));
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

namespace {

// Blobs of `rev`'s tree small enough to be pointers, by blob id.
Status AddTree(const std::string& rev, const std::string& top, std::map<std::string, Place>& blobs) {
  ASSIGN_OR_RETURN(std::string tree, git::GitOutput({"ls-tree", "-r", "-l", "--full-tree", rev}, top));
  for (const std::string& line : Lines(tree)) {
    // <mode> SP <type> SP <blob id> SP+ <size> TAB <path>
    const size_t tab = line.find('\t');
    std::istringstream fields(line.substr(0, tab));
    std::string mode, type, oid, size;
    fields >> mode >> type >> oid >> size;
    if (type != "blob" || tab == std::string::npos || size.empty() || size.size() > 4) continue;
    if (std::stoul(size) > store::kMaxPointerBytes) continue;
    blobs.emplace(oid, Place{rev, line.substr(tab + 1)});
  }
  return OkStatus();
}

// Staged blobs (the index) not seen in a tree.
Status AddIndex(const std::string& top, std::map<std::string, Place>& blobs) {
  ASSIGN_OR_RETURN(std::string staged, git::GitOutput({"ls-files", "-s", "--full-name"}, top));
  for (const std::string& line : Lines(staged)) {
    // <mode> SP <blob id> SP <stage> TAB <path>
    const size_t tab = line.find('\t');
    std::istringstream fields(line.substr(0, tab));
    std::string mode, oid;
    fields >> mode >> oid;
    if (tab == std::string::npos || blobs.count(oid) != 0) continue;
    ASSIGN_OR_RETURN(std::string size, git::GitOutput({"cat-file", "-s", oid}, top));
    if (size.size() <= 4 && std::stoul(size) <= store::kMaxPointerBytes) {
      blobs.emplace(oid, Place{"index", line.substr(tab + 1)});
    }
  }
  return OkStatus();
}

}  // namespace

Result<FoundPointers> FindPointers(bool all) {
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  std::map<std::string, Place> blobs;
  if (all) {
    ASSIGN_OR_RETURN(std::string commits, git::GitOutput({"rev-list", "--all", "--reflog"}, top));
    for (const std::string& commit : Lines(commits)) RETURN_IF_ERROR(AddTree(commit, top, blobs));
    RETURN_IF_ERROR(AddIndex(top, blobs));
  } else if (git::GitOutput({"rev-parse", "--verify", "-q", "HEAD"}, top).ok()) {
    RETURN_IF_ERROR(AddTree("HEAD", top, blobs));
  }
  FoundPointers found;
  for (const auto& [oid, place] : blobs) {
    ASSIGN_OR_RETURN(git::GitRun blob, git::RunGit({"cat-file", "blob", oid}, top));
    if (blob.exit_code != 0 || !store::LooksLikePointer(blob.out)) continue;
    auto pointer = store::ParsePointer(blob.out);
    if (pointer.ok()) {
      found.pointers.emplace_back(*pointer, place);
    } else {
      found.damaged.emplace_back(place, "damaged pointer: " + pointer.status().message());
    }
  }
  return found;
}

Result<std::vector<std::string>> TrackedPaths() {
  ASSIGN_OR_RETURN(std::string files, git::GitOutput({"ls-files", "--full-name", "--", ":(top,attr:filter=zipnn)"}));
  return Lines(files);
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
