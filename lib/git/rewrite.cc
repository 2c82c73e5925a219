#include "lib/git/rewrite.h"

#include <ftw.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string_view>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/libcrypto.h"
#include "lib/base/strings.h"
#include "lib/git/git.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

constexpr char kIncludeAttribute[] = "zipnn-migrate-include";
constexpr char kExcludeAttribute[] = "zipnn-migrate-exclude";
constexpr char kAttributesPath[] = ".gitattributes";
// Git reads no attributes file larger than this; neither do we.
constexpr size_t kMaxAttributesBytes = 100 << 20;

// fast-export's stream, read a line or a data block at a time.
class Stream {
 public:
  explicit Stream(const std::string& text) : text_(text) {}
  bool Done() const { return at_ >= text_.size(); }
  // The next line, without its newline.
  std::string_view Line() {
    size_t end = text_.find('\n', at_);
    if (end == std::string::npos) end = text_.size();
    std::string_view line(text_.data() + at_, end - at_);
    at_ = end + 1;
    return line;
  }
  // The `n` bytes after a "data <n>" line.
  Result<std::string_view> Bytes(size_t n) {
    if (n > text_.size() - std::min(at_, text_.size())) return Status(StatusCode::kGit, "git fast-export's stream ends inside a data block");
    std::string_view bytes(text_.data() + at_, n);
    at_ += n;
    return bytes;
  }

 private:
  const std::string& text_;
  size_t at_ = 0;
};

// A path as fast-export writes it: C-quoted ("a\tb", "\303\251") when it
// holds anything but plain printable characters.
std::string Unquoted(std::string_view path) {
  if (path.size() < 2 || path.front() != '"' || path.back() != '"') return std::string(path);
  std::string out;
  for (size_t i = 1; i + 1 < path.size(); ++i) {
    char c = path[i];
    if (c != '\\' || i + 2 >= path.size()) {
      out += c;
      continue;
    }
    c = path[++i];
    switch (c) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      default:
        if (c >= '0' && c <= '3' && i + 2 < path.size()) {
          out += static_cast<char>(((c - '0') << 6) | ((path[i + 1] - '0') << 3) | (path[i + 2] - '0'));
          i += 2;
        } else {
          out += c;  // \\ and \"
        }
    }
  }
  return out;
}

// A file line of a commit: "M <mode> <blob> <path>".
struct FileLine {
  std::string_view mode, blob, raw_path;
  std::string path;
  bool regular() const { return mode == "100644" || mode == "100755"; }
};
std::optional<FileLine> ParseFileLine(std::string_view line) {
  if (!StartsWith(line, "M ")) return std::nullopt;
  const size_t mode_end = line.find(' ', 2);
  if (mode_end == std::string_view::npos) return std::nullopt;
  const size_t blob_end = line.find(' ', mode_end + 1);
  if (blob_end == std::string_view::npos) return std::nullopt;
  FileLine f;
  f.mode = line.substr(2, mode_end - 2);
  f.blob = line.substr(mode_end + 1, blob_end - mode_end - 1);
  f.raw_path = line.substr(blob_end + 1);
  f.path = Unquoted(f.raw_path);
  return f;
}

bool IsFileCommand(std::string_view line) {
  return line == "deleteall" || StartsWith(line, "M ") || StartsWith(line, "D ") || StartsWith(line, "C ") ||
         StartsWith(line, "R ") || StartsWith(line, "N ");
}

// The size a "data <n>" line gives.
Result<size_t> DataSize(std::string_view line) {
  size_t n = 0;
  const std::string_view digits = line.substr(5);
  if (digits.empty() || digits.size() > 15) return Status(StatusCode::kGit, "git fast-export wrote a bad data line");
  for (char c : digits) {
    if (c < '0' || c > '9') return Status(StatusCode::kGit, "git fast-export wrote a bad data line");
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

void AppendData(std::string& out, std::string_view bytes) {
  out += "data " + std::to_string(bytes.size()) + "\n";
  out.append(bytes.data(), bytes.size());
  out += '\n';
}

// The folder fast-import keeps its refs in (its objects go to the
// repository's): the refs of a run stopped half-way never reach the
// repository. Emptied before each run and after it.
constexpr char kScratchFolder[] = "/zipnn/migrate-refs";
// In a worktree's own git folder while the branch checked out there has
// moved and its files are still the old commit's: "<ref> <old> <new>".
constexpr char kCheckoutNote[] = "/zipnn-migrate-checkout";

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path) == 0 ? 0 : -1; }

// Removes `dir` and all it holds (links are removed, not followed); a
// folder that is not there is no error.
Status RemoveTree(const std::string& dir) {
  if (!FileExists(dir)) return OkStatus();
  if (nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return IoError("cannot remove " + dir + ": remove it by hand");
  }
  return OkStatus();
}

// "<id> <ref>" lines of `git for-each-ref` as ref -> id.
std::map<std::string, std::string> RefTips(const std::string& out) {
  std::map<std::string, std::string> tips;
  for (const std::string& line : LinesOf(out)) {
    const size_t space = line.find(' ');
    if (space != std::string::npos) tips[line.substr(space + 1)] = line.substr(0, space);
  }
  return tips;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// `path` with symbolic links resolved, or as it is when it cannot be.
std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// The worktree's own git folder (absolute): <common>/worktrees/<name> for
// a linked one.
Result<std::string> WorktreeGitDir(const std::string& cwd) {
  return GitOutput({"rev-parse", "--absolute-git-dir"}, cwd);
}

}  // namespace

// The patterns go in a scratch attributes file given to `git check-attr`
// as core.attributesFile.
Result<std::set<std::string>> MatchingPaths(const Repository& repo, const std::set<std::string>& paths,
                                            const std::vector<std::string>& include,
                                            const std::vector<std::string>& exclude) {
  std::set<std::string> chosen;
  if (paths.empty() || include.empty()) return chosen;
  const std::string dir = repo.common_dir() + "/zipnn";
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
  ZIPNN_ASSIGN_OR_RETURN(TempFile attributes, TempFile::Create(dir, "migrate-attributes"));
  std::string lines;
  for (const std::string& p : include) lines += p + " " + kIncludeAttribute + "\n";
  for (const std::string& p : exclude) lines += p + " " + kExcludeAttribute + "\n";
  {
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::InTemp(attributes));
    ZIPNN_RETURN_IF_ERROR(file.Append(lines.data(), lines.size()));
    ZIPNN_RETURN_IF_ERROR(file.CommitUnsynced());
  }
  std::string input;
  for (const std::string& p : paths) input += p + '\0';
  const std::string cwd = repo.work_dir().empty() ? repo.common_dir() : repo.work_dir();
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"-c", "core.attributesFile=" + attributes.path(), "check-attr", "-z",
                                             "--stdin", kIncludeAttribute, kExcludeAttribute},
                                            cwd, input));
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git check-attr failed: " + run.err);
  std::set<std::string> included, excluded;
  // Triples: path NUL attribute NUL value NUL.
  std::vector<std::string> words;
  for (size_t at = 0, end; (end = run.out.find('\0', at)) != std::string::npos; at = end + 1) {
    words.push_back(run.out.substr(at, end - at));
  }
  for (size_t i = 0; i + 2 < words.size(); i += 3) {
    if (words[i + 2] != "set") continue;
    (words[i + 1] == kIncludeAttribute ? included : excluded).insert(words[i]);
  }
  for (const std::string& p : included) {
    if (!excluded.count(p)) chosen.insert(p);
  }
  return chosen;
}

namespace {

class BlobReader : public ByteReader {
 public:
  BlobReader(std::unique_ptr<Process> git, Oid blob, uint64_t size)
      : git_(std::move(git)), blob_(blob), size_(size), hash_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(hash_, EVP_sha1(), nullptr);
    const std::string header = "blob " + std::to_string(size) + '\0';
    EVP_DigestUpdate(hash_, header.data(), header.size());
  }
  ~BlobReader() override { EVP_MD_CTX_free(hash_); }

  Result<size_t> Read(void* out, size_t n) override {
    if (done_) return size_t{0};
    ZIPNN_ASSIGN_OR_RETURN(size_t got, git_->Read(out, n));
    read_ += got;
    if (got > 0 && read_ <= size_) {
      EVP_DigestUpdate(hash_, out, got);
      return got;
    }
    done_ = true;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(hash_, digest, &length);
    Oid read;
    for (size_t i = 0; i < read.bytes.size() && i < length; ++i) read.bytes[i] = digest[i];
    if (read_ != size_ || read != blob_) {
      return Status(StatusCode::kGit, "git cat-file gave " + std::to_string(read_) + " bytes for blob " +
                                          blob_.Hex() + " of " + std::to_string(size_) +
                                          " that do not hash to its id (git stopped early, or the object is damaged)");
    }
    return size_t{0};
  }

 private:
  std::unique_ptr<Process> git_;
  Oid blob_;
  uint64_t size_, read_ = 0;
  EVP_MD_CTX* hash_;
  bool done_ = false;
};

}  // namespace

std::optional<Oid> ParseOid(const std::string& hex) {
  Oid oid;
  if (hex.size() != oid.bytes.size() * 2) return std::nullopt;
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = hex[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return std::nullopt;
    oid.bytes[i / 2] = static_cast<uint8_t>(oid.bytes[i / 2] | (i % 2 ? v : v << 4));
  }
  return oid;
}

Result<std::unique_ptr<ByteReader>> OpenBlob(const Repository& repo, const Oid& blob) {
  ZIPNN_ASSIGN_OR_RETURN(uint64_t size, repo.BlobSize(blob));
  const std::string cwd = repo.work_dir().empty() ? repo.common_dir() : repo.work_dir();
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Process> git, StartGit({"cat-file", "blob", blob.Hex()}, cwd));
  return std::unique_ptr<ByteReader>(new BlobReader(std::move(git), blob, size));
}

Result<HistoryRewrite> HistoryRewrite::Read(Repository& repo, const std::vector<std::string>& revs,
                                            const std::vector<std::string>& include,
                                            const std::vector<std::string>& exclude) {
  std::vector<std::string> args = {"fast-export",
                                   "--no-data",
                                   "--full-tree",
                                   "--show-original-ids",
                                   "--reference-excluded-parents",
                                   "--signed-tags=strip",
                                   "--tag-of-filtered-object=rewrite",
                                   "--reencode=no"};
  std::vector<std::string> named;
  for (const std::string& rev : revs) {
    // --exclude=<branch> leaves a branch out of the --branches after it.
    if (rev == "--branches" || rev == "--tags" || (StartsWith(rev, "--exclude=") && rev.size() > 10 && rev[10] != '-')) {
      args.push_back(rev);
      continue;
    }
    ZIPNN_RETURN_IF_ERROR(CheckRevision(rev));
    named.push_back(rev);
  }
  args.push_back("--end-of-options");
  args.insert(args.end(), named.begin(), named.end());
  const std::string cwd = repo.work_dir().empty() ? repo.common_dir() : repo.work_dir();
  // Each ref as it is before git reads the history: Write moves a ref only
  // while it still names this (a commit made meanwhile is never lost).
  ZIPNN_ASSIGN_OR_RETURN(std::string tips, GitOutput({"for-each-ref", "--format=%(objectname) %(refname)"}, cwd));
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit(args, cwd));
  if (run.exit_code != 0) {
    while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
    return Status(StatusCode::kGit, "git fast-export failed: " + run.err);
  }
  HistoryRewrite rewrite(repo, std::move(run.out), RefTips(tips + "\n"));
  std::set<std::string> refs;

  // Every regular file's path, and each (path, blob) once, in the order
  // history first holds it.
  std::set<std::string> paths;
  std::vector<std::pair<std::string, Oid>> versions;
  std::set<std::pair<std::string, Oid>> seen;
  Stream stream(rewrite.stream_);
  while (!stream.Done()) {
    const std::string_view line = stream.Line();
    if (StartsWith(line, "data ")) {
      ZIPNN_ASSIGN_OR_RETURN(size_t n, DataSize(line));
      ZIPNN_RETURN_IF_ERROR(stream.Bytes(n).status());
    } else if (StartsWith(line, "commit ") || StartsWith(line, "reset ")) {
      if (StartsWith(line, "commit ")) ++rewrite.commits_;
      refs.insert(std::string(line.substr(line.find(' ') + 1)));
    } else if (StartsWith(line, "tag ")) {
      refs.insert("refs/tags/" + std::string(line.substr(4)));
    } else if (std::optional<FileLine> f = ParseFileLine(line); f && f->regular()) {
      const std::optional<Oid> blob = ParseOid(std::string(f->blob));
      if (!blob) return Status(StatusCode::kGit, "git fast-export named a blob as " + std::string(f->blob));
      paths.insert(f->path);
      if (seen.emplace(f->path, *blob).second) versions.emplace_back(f->path, *blob);
    }
  }
  for (const std::string& ref : refs) {
    // A detached HEAD named as a revision: no branch to move.
    if (!StartsWith(ref, "refs/")) {
      return InvalidArgument("cannot rewrite " + ref + ": it names no branch or tag (a detached HEAD); name branches "
                             "or tags instead");
    }
  }
  rewrite.refs_.assign(refs.begin(), refs.end());
  ZIPNN_ASSIGN_OR_RETURN(rewrite.chosen_, MatchingPaths(repo, paths, include, exclude));
  rewrite.chosen_.erase(kAttributesPath);
  // Each blob at a chosen path, named by the first chosen path it is at.
  std::set<Oid> listed;
  for (const auto& [path, blob] : versions) {
    if (!rewrite.chosen_.count(path)) continue;
    rewrite.by_path_[path].push_back(blob);
    if (listed.insert(blob).second) rewrite.files_.push_back(RewriteFile{path, blob});
  }
  return rewrite;
}

Result<Rewritten> HistoryRewrite::Write(const ReplaceBlob& replace, const EditAttributes& edit,
                                        const std::optional<std::string>& checked_out) {
  std::map<Oid, std::optional<std::string>> replaced;
  for (const RewriteFile& file : files_) {
    ZIPNN_ASSIGN_OR_RETURN(replaced[file.blob], replace(file));
  }
  std::map<std::optional<std::string>, std::string> edited;  // attributes text -> new text
  auto edit_once = [&](const std::optional<std::string>& text) -> const std::string& {
    auto found = edited.find(text);
    if (found == edited.end()) found = edited.emplace(text, edit(text)).first;
    return found->second;
  };

  // With `done` at its end and the feature asked for at its start, a
  // stream cut short (its writer killed) is an error to fast-import, not
  // a shorter history.
  std::string out = "feature done\n";
  out.reserve(stream_.size() + stream_.size() / 4);
  Rewritten result;
  std::map<std::string, std::string> old_of_mark;  // ":N" -> old commit
  std::vector<std::string> marks_in_order;
  // The commit being copied: its file lines wait until its last, so that
  // a .gitattributes can be added to a commit that has none.
  bool in_commit = false, after_message = false, has_attributes = false;
  std::string mark;
  std::string files;
  auto end_commit = [&]() {
    out += files;  // "deleteall" first: a file added goes after it
    files.clear();
    if (!has_attributes) {
      const std::string& text = edit_once(std::nullopt);
      if (!text.empty()) {
        out += std::string("M 100644 inline ") + kAttributesPath + "\n";
        AppendData(out, text);
      }
    }
    in_commit = after_message = has_attributes = false;
  };
  Stream stream(stream_);
  while (!stream.Done()) {
    const std::string_view line = stream.Line();
    if (in_commit && after_message && !IsFileCommand(line) && !StartsWith(line, "from ") &&
        !StartsWith(line, "merge ")) {
      end_commit();
    }
    if (StartsWith(line, "data ")) {
      ZIPNN_ASSIGN_OR_RETURN(size_t n, DataSize(line));
      ZIPNN_ASSIGN_OR_RETURN(std::string_view bytes, stream.Bytes(n));
      out.append(line.data(), line.size()).append("\n").append(bytes.data(), bytes.size());
      if (in_commit) after_message = true;
      continue;
    }
    if (StartsWith(line, "commit ")) {
      in_commit = true;
      mark.clear();
    } else if (in_commit && StartsWith(line, "mark ")) {
      mark = std::string(line.substr(5));
      marks_in_order.push_back(mark);
    } else if (in_commit && !after_message && StartsWith(line, "original-oid ")) {
      old_of_mark[mark] = std::string(line.substr(13));
    }
    if (in_commit && after_message && IsFileCommand(line)) {
      std::optional<FileLine> f = ParseFileLine(line);
      if (f && f->regular() && f->path == kAttributesPath) {
        has_attributes = true;
        const std::optional<Oid> blob = ParseOid(std::string(f->blob));
        if (!blob) return Status(StatusCode::kGit, "git fast-export named a blob as " + std::string(f->blob));
        ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> text, repo_->SmallBlob(*blob, kMaxAttributesBytes));
        if (!text) return InvalidArgument(".gitattributes of blob " + blob->Hex() + " is larger than git reads");
        const std::string& now = edit_once(text);
        if (now != *text) {
          files += "M " + std::string(f->mode) + " inline " + std::string(f->raw_path) + "\n";
          AppendData(files, now);
          continue;
        }
      } else if (f && f->regular() && chosen_.count(f->path)) {
        const std::optional<Oid> blob = ParseOid(std::string(f->blob));
        auto it = blob ? replaced.find(*blob) : replaced.end();
        if (it != replaced.end() && it->second) {
          files += "M " + std::string(f->mode) + " inline " + std::string(f->raw_path) + "\n";
          AppendData(files, *it->second);
          continue;
        }
      }
      files.append(line.data(), line.size()).append("\n");
      continue;
    }
    out.append(line.data(), line.size()).append("\n");
  }
  if (in_commit) end_commit();
  out += "done\n";

  const std::string cwd = repo_->work_dir().empty() ? repo_->common_dir() : repo_->work_dir();
  // fast-import's objects go where the repository keeps its own (as git
  // finds them: GIT_OBJECT_DIRECTORY when set), its refs to the scratch
  // folder.
  ZIPNN_ASSIGN_OR_RETURN(std::string objects, GitOutput({"rev-parse", "--git-path", "objects"}, cwd));
  if (objects.empty() || objects[0] != '/') objects = cwd + "/" + objects;
  const std::string objects_env = "GIT_OBJECT_DIRECTORY=" + objects;
  const std::string scratch = repo_->common_dir() + kScratchFolder;
  ZIPNN_RETURN_IF_ERROR(RemoveTree(scratch));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(scratch + "/refs"));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(scratch + "/objects"));
  const std::pair<const char*, const char*> scratch_files[] = {
      {"/HEAD", "ref: refs/heads/none\n"}, {"/config", "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"}};
  for (const auto& [name, text] : scratch_files) {
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(scratch + name, /*overwrite=*/true));
    ZIPNN_RETURN_IF_ERROR(file.Append(text, std::char_traits<char>::length(text)));
    ZIPNN_RETURN_IF_ERROR(file.CommitUnsynced());
  }
  const std::string marks = scratch + "/marks";
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGitWith(objects_env,
                                                {"--git-dir=" + scratch, "fast-import", "--quiet", "--force",
                                                 "--export-marks=" + marks},
                                                cwd, out));
  if (run.exit_code != 0) {
    return Status(StatusCode::kGit, "git fast-import failed (no ref was moved): " + Trimmed(run.err));
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(marks));
  std::map<std::string, std::string> new_of_mark;
  for (const std::string& entry : LinesOf(std::string(bytes.begin(), bytes.end()))) {
    const size_t space = entry.find(' ');
    if (space != std::string::npos) new_of_mark[entry.substr(0, space)] = entry.substr(space + 1);
  }
  for (const std::string& m : marks_in_order) {
    auto old_id = old_of_mark.find(m);
    auto new_id = new_of_mark.find(m);
    if (old_id != old_of_mark.end() && new_id != new_of_mark.end()) {
      result.commits.emplace_back(old_id->second, new_id->second);
    }
  }

  // Where each ref is to go: as fast-import left it in the scratch folder.
  ZIPNN_ASSIGN_OR_RETURN(GitRun listed, RunGitWith(objects_env,
                                                   {"--git-dir=" + scratch, "for-each-ref",
                                                    "--format=%(objectname) %(refname)"},
                                                   cwd));
  if (listed.exit_code != 0) {
    return Status(StatusCode::kGit, "git for-each-ref failed (no ref was moved): " + Trimmed(listed.err));
  }
  // Between start and commit: input cut short (its writer killed) ends
  // without commit, and git then moves nothing.
  std::string updates = "start\n";
  std::optional<std::pair<std::string, std::string>> checkout;  // old and new commit of `checked_out`
  const std::map<std::string, std::string> new_tips = RefTips(listed.out);
  for (const auto& [ref, new_id] : new_tips) {
    if (!std::binary_search(refs_.begin(), refs_.end(), ref)) {
      return Status(StatusCode::kGit, "git fast-import wrote " + ref + ", which the history read does not name (no "
                                      "ref was moved)");
    }
    auto old_id = tips_.find(ref);
    if (old_id == tips_.end()) {
      return Status(StatusCode::kGit, ref + " was made while migrate read the history (no ref was moved; run "
                                            "migrate again)");
    }
    if (old_id->second == new_id) continue;
    updates += "update " + ref + " " + new_id + " " + old_id->second + "\n";
    result.refs.push_back(ref);
    if (checked_out && ref == *checked_out) checkout.emplace(old_id->second, new_id);
  }

  // Notes move before refs: a run stopped after this finds them copied.
  // They follow each commit, and each annotated tag, written again.
  std::vector<std::pair<std::string, std::string>> renamed = result.commits;
  std::set<std::string> commits_old;
  for (const auto& pair : result.commits) commits_old.insert(pair.first);
  for (const std::string& ref : result.refs) {
    const std::string& old_id = tips_.at(ref);
    if (StartsWith(ref, "refs/tags/") && !commits_old.count(old_id)) renamed.emplace_back(old_id, new_tips.at(ref));
  }
  ZIPNN_ASSIGN_OR_RETURN(std::string notes_refs,
                         GitOutput({"for-each-ref", "--format=%(refname)", "refs/notes/"}, cwd));
  for (const std::string& notes_ref : LinesOf(notes_refs)) {
    // git's cache of textconv output notes blobs, never commits.
    if (StartsWith(notes_ref, "refs/notes/textconv/")) continue;
    ZIPNN_ASSIGN_OR_RETURN(std::string listed_notes, GitOutput({"notes", "--ref=" + notes_ref, "list"}, cwd));
    std::map<std::string, std::string> note_of;  // annotated object -> note blob
    for (const std::string& line : LinesOf(listed_notes)) {
      const size_t space = line.find(' ');
      if (space != std::string::npos) note_of[line.substr(space + 1)] = line.substr(0, space);
    }
    std::string pairs;
    size_t carried = 0;
    for (const auto& [old_id, new_id] : renamed) {
      auto note = note_of.find(old_id);
      if (old_id == new_id || note == note_of.end()) continue;
      ++carried;
      auto there = note_of.find(new_id);
      if (there == note_of.end() || there->second != note->second) pairs += old_id + " " + new_id + "\n";
    }
    if (!pairs.empty()) {
      ZIPNN_ASSIGN_OR_RETURN(GitRun copied, RunGit({"notes", "--ref=" + notes_ref, "copy", "--force", "--stdin"},
                                                   cwd, pairs));
      if (copied.exit_code != 0) {
        return Status(StatusCode::kGit, "git notes copy failed for " + notes_ref + " (no ref was moved): " +
                                            Trimmed(copied.err));
      }
    }
    if (carried > 0) {
      result.notes += carried;
      result.notes_refs.push_back(notes_ref);
    }
  }

  if (!result.refs.empty()) {
    updates += "prepare\ncommit\n";
    std::string note_path;
    if (checkout) {
      ZIPNN_ASSIGN_OR_RETURN(std::string git_dir, WorktreeGitDir(cwd));
      note_path = git_dir + kCheckoutNote;
      const std::string text = *checked_out + " " + checkout->first + " " + checkout->second + "\n";
      ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(note_path, /*overwrite=*/true));
      ZIPNN_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
      ZIPNN_RETURN_IF_ERROR(file.Commit());
    }
    // One transaction: every ref moves, or none does.
    ZIPNN_ASSIGN_OR_RETURN(GitRun moved, RunGit({"update-ref", "-m", "git zipnn migrate", "--stdin"}, cwd, updates));
    if (moved.exit_code != 0) {
      if (!note_path.empty()) ::unlink(note_path.c_str());
      return Status(StatusCode::kGit, "git update-ref failed (no ref was moved; run migrate again): " +
                                          Trimmed(moved.err));
    }
  }
  (void)RemoveTree(scratch);
  return result;
}

Result<std::vector<CheckedOut>> BranchesCheckedOutElsewhere(const Repository& repo) {
  const std::string cwd = repo.work_dir().empty() ? repo.common_dir() : repo.work_dir();
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"worktree", "list", "--porcelain", "-z"}, cwd));
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git worktree list failed: " + Trimmed(run.err));
  const std::string here = repo.work_dir().empty() ? "" : RealPath(repo.work_dir());
  std::vector<CheckedOut> found;
  // Records of NUL-ended lines ("worktree <path>", "branch <ref>", ...),
  // each record ended by an empty line.
  std::string path, branch;
  for (size_t at = 0, end; (end = run.out.find('\0', at)) != std::string::npos; at = end + 1) {
    const std::string field = run.out.substr(at, end - at);
    if (StartsWith(field, "worktree ")) {
      path = field.substr(9);
    } else if (StartsWith(field, "branch ")) {
      branch = field.substr(7);
    } else if (field.empty()) {
      if (!branch.empty() && RealPath(path) != here) found.push_back(CheckedOut{branch, path});
      path.clear();
      branch.clear();
    }
  }
  return found;
}

Result<std::optional<std::string>> FinishCheckout(const Repository& repo) {
  if (repo.work_dir().empty()) return std::optional<std::string>();
  const std::string cwd = repo.work_dir();
  ZIPNN_ASSIGN_OR_RETURN(std::string git_dir, WorktreeGitDir(cwd));
  const std::string note_path = git_dir + kCheckoutNote;
  if (!FileExists(note_path)) return std::optional<std::string>();
  ZIPNN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(note_path));
  const std::string text(bytes.begin(), bytes.end());
  char ref[1024], old_id[65], new_id[65];
  if (text.size() >= sizeof ref || std::sscanf(text.c_str(), "%1023s %64s %64s", ref, old_id, new_id) != 3) {
    ::unlink(note_path.c_str());  // not ours to read: nothing is known to be left
    return std::optional<std::string>();
  }
  ZIPNN_ASSIGN_OR_RETURN(GitRun head, RunGit({"symbolic-ref", "-q", "HEAD"}, cwd));
  ZIPNN_ASSIGN_OR_RETURN(GitRun commit, RunGit({"rev-parse", "-q", "--verify", "HEAD^{commit}"}, cwd));
  if (Trimmed(head.out) != ref || Trimmed(commit.out) != new_id) {
    // The branch never moved, or has moved on since: nothing is left.
    ::unlink(note_path.c_str());
    return std::optional<std::string>();
  }
  auto same_as = [&](const std::vector<std::string>& args) -> Result<bool> {
    ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit(args, cwd));
    if (run.exit_code > 1) return Status(StatusCode::kGit, "git " + args[0] + " failed: " + Trimmed(run.err));
    return run.exit_code == 0;
  };
  ZIPNN_ASSIGN_OR_RETURN(bool index_new, same_as({"diff-index", "--cached", "--quiet", new_id, "--"}));
  if (index_new) {  // checked out already (git reset --hard by hand)
    ::unlink(note_path.c_str());
    return std::optional<std::string>();
  }
  ZIPNN_ASSIGN_OR_RETURN(bool index_old, same_as({"diff-index", "--cached", "--quiet", old_id, "--"}));
  (void)RunGit({"update-index", "-q", "--refresh"}, cwd);  // times changed, bytes not: no change
  // The files that are not the old commit's must be the new one's: a
  // checkout stopped half-way (Ctrl-C in a long smudge) left them so.
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> changed, GitPaths({"diff-files", "--name-only", "-z"}, cwd));
  bool files_old_or_new = true;
  if (!changed.empty()) {
    std::vector<std::string> args = {"diff", "--quiet", new_id, "--"};
    for (const std::string& path : changed) args.push_back(":(literal)" + path);
    ZIPNN_ASSIGN_OR_RETURN(files_old_or_new, same_as(args));
  }
  if (!index_old || !files_old_or_new) {
    return Status(StatusCode::kGit,
                  std::string("git zipnn migrate moved ") + ref + " from " + old_id + " to " + new_id +
                      " and was stopped before it checked out its files again; this worktree's index and files "
                      "have changed since (they are not " + old_id + "'s any more). Keep what you need of them, "
                      "then `git reset --hard` checks out the new files (and " + note_path + " can go)");
  }
  ZIPNN_ASSIGN_OR_RETURN(std::string done, GitOutput({"reset", "--hard", "-q"}, cwd));
  (void)done;
  ::unlink(note_path.c_str());
  return std::optional<std::string>(ref);
}

}  // namespace zipnn::git
