#include "cmd/util.h"

#include <cstdio>
#include <map>
#include <memory>
#include <functional>
#include <sstream>

#include "lib/formats/detect.h"
#include "lib/git/git.h"

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

Result<std::optional<store::Pointer>> PointerInFile(const std::string& file) {
  ASSIGN_OR_RETURN(ReadFile in, ReadFile::Open(file));
  if (in.size() > store::kMaxPointerBytes) return std::optional<store::Pointer>();
  std::string text(in.size(), '\0');
  RETURN_IF_ERROR(in.ReadAt(0, text.data(), text.size()));
  if (!store::LooksLikePointer(text)) return std::optional<store::Pointer>();
  ASSIGN_OR_RETURN(store::Pointer pointer, store::ParsePointer(text));
  return std::optional<store::Pointer>(pointer);
}

Result<Checkpoint> CheckpointInFile(const std::string& file) {
  ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, PointerInFile(file));
  if (!pointer) return Checkpoint{file, std::nullopt};
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  return ScratchCheckpoint(repo.temp_dir, [&](ByteSink& out) { return store::RestoreFile(repo, *pointer, file, out); });
}

void RefreshIndex(const std::vector<std::string>& paths, const std::string& top) {
  if (paths.empty()) return;
  std::vector<std::string> args = {"update-index", "-q", "--refresh", "--"};
  args.insert(args.end(), paths.begin(), paths.end());
  (void)git::RunGit(args, top);  // a failed refresh only costs `git status` a clean pass
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

// Every blob git holds in `rev`'s tree, by blob id, with where it is.
Status AddTree(const std::string& rev, const std::string& top, std::map<std::string, Place>& blobs) {
  ASSIGN_OR_RETURN(std::string tree, git::GitOutput({"ls-tree", "-r", "--full-tree", rev}, top));
  for (const std::string& line : Lines(tree)) {
    // <mode> SP <type> SP <blob id> TAB <path>
    const size_t tab = line.find('\t');
    std::istringstream fields(line.substr(0, tab));
    std::string mode, type, oid;
    fields >> mode >> type >> oid;
    if (type == "blob" && tab != std::string::npos) blobs.emplace(oid, Place{rev, line.substr(tab + 1)});
  }
  return OkStatus();
}

// Every blob of every commit reachable from a ref, a reflog or a stash, at
// the newest commit that has it: each blob enters history in a commit whose
// diff against a parent (each parent of a merge; none for a root) shows it,
// so one `git log` finds them all.
Status AddHistory(const std::vector<std::string>& revs, const std::string& top, std::map<std::string, Place>& blobs) {
  std::vector<std::string> args = {"log", "-m", "--root", "--raw", "--no-abbrev", "--no-renames", "--format=commit %H"};
  args.insert(args.end(), revs.begin(), revs.end());
  args.push_back("--");
  ASSIGN_OR_RETURN(std::string log, git::GitOutput(args, top));
  std::string commit;
  for (const std::string& line : Lines(log)) {
    if (line.rfind("commit ", 0) == 0) {
      commit = line.substr(7);
      continue;
    }
    // :<old mode> SP <new mode> SP <old id> SP <new id> SP <status> TAB <path>
    const size_t tab = line.find('\t');
    if (line[0] != ':' || tab == std::string::npos) continue;
    std::istringstream fields(line.substr(1, tab - 1));
    std::string old_mode, mode, old_oid, oid;
    fields >> old_mode >> mode >> old_oid >> oid;
    if (mode.rfind("100", 0) == 0) blobs.emplace(oid, Place{commit, line.substr(tab + 1)});
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
    if (tab != std::string::npos && mode.rfind("100", 0) == 0) blobs.emplace(oid, Place{"index", line.substr(tab + 1)});
  }
  return OkStatus();
}

// Runs `git cat-file <mode>` once over `oids` (one per line).
Result<std::string> CatFileBatch(const std::string& mode, const std::vector<std::string>& oids,
                                 const std::string& top) {
  std::string input;
  for (const std::string& oid : oids) input += oid + "\n";
  if (input.empty()) return std::string();
  ASSIGN_OR_RETURN(git::GitRun run, git::RunGit({"cat-file", mode}, top, input));
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git cat-file " + mode + " failed: " + run.err);
  return run.out;
}

// The pointers among `blobs`.
Result<FoundPointers> PointersAmong(const std::map<std::string, Place>& blobs, const std::string& top) {
  // Sizes of all blobs in one process, then the small ones' text in another.
  std::vector<std::string> oids;
  for (const auto& [oid, place] : blobs) oids.push_back(oid);
  ASSIGN_OR_RETURN(std::string sizes, CatFileBatch("--batch-check=%(objectname) %(objectsize)", oids, top));
  std::vector<std::string> small;
  for (const std::string& line : Lines(sizes)) {
    const size_t space = line.find(' ');
    const std::string size = space == std::string::npos ? "" : line.substr(space + 1);
    if (!size.empty() && size.size() <= 4 && size.find_first_not_of("0123456789") == std::string::npos &&
        std::stoul(size) <= store::kMaxPointerBytes) {
      small.push_back(line.substr(0, space));
    }
  }
  ASSIGN_OR_RETURN(std::string texts, CatFileBatch("--batch", small, top));
  FoundPointers found;
  // <oid> SP <type> SP <size> LF <contents> LF, for each in turn.
  for (size_t at = 0; at < texts.size();) {
    const size_t nl = texts.find('\n', at);
    if (nl == std::string::npos) break;
    std::istringstream header(texts.substr(at, nl - at));
    std::string oid, type;
    size_t size = 0;
    if (!(header >> oid >> type >> size) || nl + 1 + size > texts.size()) {
      return Status(StatusCode::kGit, "git cat-file --batch gave unexpected output");
    }
    const std::string text = texts.substr(nl + 1, size);
    at = nl + 1 + size + 1;
    if (!store::LooksLikePointer(text)) continue;
    const Place& place = blobs.at(oid);
    auto pointer = store::ParsePointer(text);
    if (pointer.ok()) {
      found.pointers.emplace_back(*pointer, place);
    } else {
      found.damaged.emplace_back(place, "damaged pointer: " + pointer.status().message());
    }
  }
  return found;
}

}  // namespace

Result<FoundPointers> FindPointers(bool all) {
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  std::map<std::string, Place> blobs;
  if (all) {
    RETURN_IF_ERROR(AddHistory({"--all", "--reflog"}, top, blobs));
    RETURN_IF_ERROR(AddIndex(top, blobs));
  } else if (git::GitOutput({"rev-parse", "--verify", "-q", "HEAD"}, top).ok()) {
    RETURN_IF_ERROR(AddTree("HEAD", top, blobs));
  }
  return PointersAmong(blobs, top);
}

Result<FoundPointers> FindPointersInTrees(const std::vector<std::string>& revs) {
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  std::map<std::string, Place> blobs;
  for (const std::string& rev : revs) RETURN_IF_ERROR(AddTree(rev, top, blobs));
  return PointersAmong(blobs, top);
}

Result<FoundPointers> FindPointersIn(const std::vector<std::string>& revs) {
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  std::map<std::string, Place> blobs;
  RETURN_IF_ERROR(AddHistory(revs, top, blobs));
  return PointersAmong(blobs, top);
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
