#include "lib/git/repository.h"

#include <git2.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "lib/git/libgit2.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

std::string WithoutTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool IsFileMode(git_filemode_t mode) { return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE; }

struct OidHash {
  size_t operator()(const Oid& o) const {
    size_t h;
    std::memcpy(&h, o.bytes.data(), sizeof h);  // object ids are uniformly distributed
    return h;
  }
};

// git log's %aI: the author's local time and its offset from UTC.
std::string IsoDate(const git_time& when) {
  const time_t local = static_cast<time_t>(when.time + int64_t{when.offset} * 60);
  struct tm tm {};
  gmtime_r(&local, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  const int offset = when.offset < 0 ? -when.offset : when.offset;
  char zone[16];
  std::snprintf(zone, sizeof zone, "%c%02d:%02d", when.offset < 0 ? '-' : '+', offset / 60, offset % 60);
  return std::string(date) + zone;
}

Result<CommitPtr> LookupCommit(git_repository* repo, const Oid& id) {
  git_commit* raw = nullptr;
  const git_oid gid = ToGit(id);
  if (git_commit_lookup(&raw, repo, &gid) < 0) return GitError("cannot read commit " + id.Hex());
  return CommitPtr(raw);
}

Result<TreePtr> CommitTree(git_repository* repo, const Oid& commit) {
  ZIPNN_ASSIGN_OR_RETURN(CommitPtr c, LookupCommit(repo, commit));
  git_tree* raw = nullptr;
  if (git_commit_tree(&raw, c.get()) < 0) return GitError("cannot read the tree of commit " + commit.Hex());
  return TreePtr(raw);
}

// Calls file(path, blob) for each regular file under `tree`, whose own
// path is `prefix` ("" or "dir/"); a subtree is read only when
// enter(its prefix, its id) says so. `prefix` is restored on return.
template <typename Enter, typename File>
Status WalkTree(git_repository* repo, const git_tree* tree, std::string& prefix, Enter& enter, File& file) {
  const size_t count = git_tree_entrycount(tree);
  const size_t keep = prefix.size();
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    const git_filemode_t mode = git_tree_entry_filemode(entry);
    if (mode != GIT_FILEMODE_TREE && !IsFileMode(mode)) continue;
    prefix += git_tree_entry_name(entry);
    if (IsFileMode(mode)) {
      file(prefix, FromGit(git_tree_entry_id(entry)));
    } else {
      prefix += '/';
      if (enter(prefix, *git_tree_entry_id(entry))) {
        git_tree* raw = nullptr;
        if (git_tree_lookup(&raw, repo, git_tree_entry_id(entry)) < 0) return GitError("cannot read folder " + prefix);
        TreePtr subtree(raw);
        Status s = WalkTree(repo, subtree.get(), prefix, enter, file);
        if (!s.ok()) return s;
      }
    }
    prefix.resize(keep);
  }
  return OkStatus();
}

// The commit a reference leads to; nullopt when it leads to none (a tag
// of a tree or blob, a branch whose commit is gone).
std::optional<Oid> PeelToCommit(git_reference* ref) {
  git_object* raw = nullptr;
  if (git_reference_peel(&raw, ref, GIT_OBJECT_COMMIT) < 0) {
    git_error_clear();
    return std::nullopt;
  }
  ObjectPtr commit(raw);
  return FromGit(git_object_id(commit.get()));
}

// Each reference whose name matches `glob` (every one when empty).
template <typename Visit>
Status ForEachRef(git_repository* repo, const std::string& glob, Visit visit) {
  git_reference_iterator* raw = nullptr;
  const int e =
      glob.empty() ? git_reference_iterator_new(&raw, repo) : git_reference_iterator_glob_new(&raw, repo, glob.c_str());
  if (e < 0) return GitError("cannot list references");
  RefIterPtr refs(raw);
  git_reference* ref = nullptr;
  int next;
  while ((next = git_reference_next(&ref, refs.get())) == 0) {
    RefPtr owned(ref);
    visit(owned.get());
  }
  if (next != GIT_ITEROVER) return GitError("cannot list references");
  return OkStatus();
}

// What refs, HEADs and reflogs lead to, annotated tags peeled: commits,
// and the trees and blobs tagged directly, each with the short name of a
// ref that leads there.
struct Tips {
  std::vector<Oid> commits;
  std::vector<std::pair<std::string, Oid>> trees, blobs;
};

// Adds what `id` names, tags of tags peeled to what they tag at last; an
// object that is not there (a pruned reflog entry, a ref whose commit is
// gone) adds nothing. Only headers and tags are read: a tagged blob may
// be large.
Status AddTip(git_repository* repo, git_odb* odb, git_oid id, const std::string& ref, Tips& tips) {
  for (;;) {
    size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    const int e = git_odb_read_header(&size, &type, odb, &id);
    if (e == GIT_ENOTFOUND) {
      git_error_clear();
      return OkStatus();
    }
    if (e < 0) return GitError("cannot read object " + FromGit(&id).Hex() + " that " + ref + " leads to");
    switch (type) {
      case GIT_OBJECT_COMMIT:
        tips.commits.push_back(FromGit(&id));
        return OkStatus();
      case GIT_OBJECT_TREE:
        tips.trees.emplace_back(ref, FromGit(&id));
        return OkStatus();
      case GIT_OBJECT_BLOB:
        tips.blobs.emplace_back(ref, FromGit(&id));
        return OkStatus();
      case GIT_OBJECT_TAG: {
        git_tag* raw = nullptr;
        if (git_tag_lookup(&raw, repo, &id) < 0)
          return GitError("cannot read tag " + FromGit(&id).Hex() + " (" + ref + ")");
        id = *git_tag_target_id(raw);
        git_tag_free(raw);
        break;
      }
      default:
        return OkStatus();
    }
  }
}

// Adds what a reference leads to; a symbolic one that leads nowhere (an
// unborn branch) adds nothing.
Status AddRef(git_repository* repo, git_odb* odb, git_reference* ref, Tips& tips) {
  git_reference* raw = nullptr;
  if (git_reference_resolve(&raw, ref) < 0) {
    git_error_clear();
    return OkStatus();
  }
  RefPtr resolved(raw);
  const git_oid* target = git_reference_target(resolved.get());
  if (target == nullptr) return OkStatus();
  return AddTip(repo, odb, *target, git_reference_shorthand(ref), tips);
}

// What every entry of the reflog of `name` names, old and new; a reflog
// that does not exist is empty.
Status AddReflog(git_repository* repo, git_odb* odb, const std::string& name, Tips& tips) {
  git_reflog* raw = nullptr;
  if (git_reflog_read(&raw, repo, name.c_str()) < 0) return GitError("cannot read the reflog of " + name);
  ReflogPtr log(raw);
  const size_t count = git_reflog_entrycount(log.get());
  for (size_t i = 0; i < count; ++i) {
    const git_reflog_entry* entry = git_reflog_entry_byindex(log.get(), i);
    for (const git_oid* id : {git_reflog_entry_id_old(entry), git_reflog_entry_id_new(entry)}) {
      if (!git_oid_is_zero(id)) ZIPNN_RETURN_IF_ERROR(AddTip(repo, odb, *id, name, tips));
    }
  }
  return OkStatus();
}

// Git's walk of history (revision.c's limit_list, as libgit2 has it too),
// by committer time, newest first. Unlike libgit2's walk it treats a
// parent that is not there (a shallow clone's boundary, a pruned reflog
// entry) as no parent, as git does.
class HistoryWalk {
 public:
  explicit HistoryWalk(git_repository* repo) : repo_(repo) {}

  // A commit to start from, or with `hidden` one whose history to leave
  // out. A commit that is not there is skipped.
  Status Add(const Oid& id, bool hidden) {
    Node* node = Get(id);
    ZIPNN_RETURN_IF_ERROR(Parse(node));
    if (node->missing) return OkStatus();
    if (hidden) {
      node->uninteresting = true;
      MarkParentsUninteresting(node);
    }
    Queue(node);
    return OkStatus();
  }

  Result<std::vector<CommitInfo>> Run() {
    int slop = kSlop;
    int64_t last_time = INT64_MAX;
    std::vector<Node*> shown;
    while (!queue_.empty()) {
      std::pop_heap(queue_.begin(), queue_.end(), Older);
      Node* commit = queue_.back();
      queue_.pop_back();
      ZIPNN_RETURN_IF_ERROR(AddParents(commit));
      if (commit->uninteresting) {
        MarkParentsUninteresting(commit);
        slop = StillInteresting(last_time, slop);
        if (slop == 0) break;
        continue;
      }
      last_time = commit->info.time;
      shown.push_back(commit);
    }
    std::vector<CommitInfo> commits;
    for (Node* node : shown) {
      if (!node->uninteresting) commits.push_back(std::move(node->info));  // hidden by a later find
    }
    return commits;
  }

 private:
  // How many hidden commits to look at once only hidden ones are left
  // newer than the last shown, so that a slightly wrong clock does not
  // show a commit that a hidden one reaches (git's SLOP).
  static constexpr int kSlop = 5;

  struct Node {
    CommitInfo info;
    std::vector<Node*> parents;  // once parsed
    uint64_t order = 0;          // when first queued: equal times keep that order
    bool parsed = false, missing = false, uninteresting = false, queued = false, added = false;
  };

  static bool Older(const Node* a, const Node* b) {
    return a->info.time != b->info.time ? a->info.time < b->info.time : a->order > b->order;
  }

  Node* Get(const Oid& id) {
    Node& node = nodes_[id];
    node.info.id = id;
    return &node;
  }

  Status Parse(Node* node) {
    if (node->parsed) return OkStatus();
    node->parsed = true;
    git_commit* raw = nullptr;
    const git_oid id = ToGit(node->info.id);
    const int e = git_commit_lookup(&raw, repo_, &id);
    if (e == GIT_ENOTFOUND) {
      git_error_clear();
      node->missing = true;
      return OkStatus();
    }
    if (e < 0) return GitError("cannot read commit " + node->info.id.Hex());
    CommitPtr commit(raw);
    node->info.time = git_commit_time(commit.get());
    node->info.author_date = IsoDate(git_commit_author(commit.get())->when);
    const char* summary = git_commit_summary(commit.get());
    node->info.subject = summary != nullptr ? summary : "";
    const unsigned parents = git_commit_parentcount(commit.get());
    for (unsigned i = 0; i < parents; ++i) {
      const Oid parent = FromGit(git_commit_parent_id(commit.get(), i));
      node->info.parents.push_back(parent);
      node->parents.push_back(Get(parent));
    }
    return OkStatus();
  }

  void Queue(Node* node) {
    if (node->queued) return;
    node->queued = true;
    node->order = next_order_++;
    queue_.push_back(node);
    std::push_heap(queue_.begin(), queue_.end(), Older);
  }

  Status AddParents(Node* commit) {
    if (commit->added) return OkStatus();
    commit->added = true;
    for (Node* parent : commit->parents) {
      if (commit->uninteresting) parent->uninteresting = true;
      ZIPNN_RETURN_IF_ERROR(Parse(parent));
      if (parent->missing) continue;
      if (commit->uninteresting) MarkParentsUninteresting(parent);
      Queue(parent);
    }
    return OkStatus();
  }

  // Everything a hidden commit reaches that the walk has parsed is hidden
  // too; what it has not parsed yet is marked when it is.
  static void MarkParentsUninteresting(Node* commit) {
    std::vector<Node*> todo(commit->parents.begin(), commit->parents.end());
    while (!todo.empty()) {
      Node* node = todo.back();
      todo.pop_back();
      if (node->uninteresting) continue;
      node->uninteresting = true;
      todo.insert(todo.end(), node->parents.begin(), node->parents.end());
    }
  }

  int StillInteresting(int64_t last_time, int slop) const {
    if (queue_.empty()) return 0;
    if (last_time <= queue_.front()->info.time) return kSlop;
    for (const Node* node : queue_) {
      if (!node->uninteresting || node->info.time > last_time) return kSlop;
    }
    return slop - 1;
  }

  git_repository* repo_;
  std::unordered_map<Oid, Node, OidHash> nodes_;
  std::vector<Node*> queue_;  // a heap, newest on top
  uint64_t next_order_ = 0;
};

// The files `git ls-files -s -z` lists for the index file `index` of the
// git folder `git_dir`: stage 0 regular files, a sparse index's folders
// expanded into the files under them.
Result<std::vector<FileEntry>> IndexFilesByGit(const std::string& git_dir, const std::string& index) {
  ZIPNN_ASSIGN_OR_RETURN(std::string listed, GitOutputOnIndex(index, {"--git-dir=" + git_dir, "ls-files", "-s", "-z"}));
  std::vector<FileEntry> files;
  // Each entry: "<mode> <object id> <stage>\t<path>\0".
  for (size_t at = 0; at < listed.size();) {
    size_t end = listed.find('\0', at);
    if (end == std::string::npos) end = listed.size();
    const std::string entry = listed.substr(at, end - at);
    at = end + 1;
    const size_t tab = entry.find('\t');
    git_oid id;
    if (tab == std::string::npos || tab < 49 || entry[6] != ' ' || entry[47] != ' ' ||
        git_oid_fromstrn(&id, entry.data() + 7, 40) < 0) {
      git_error_clear();
      return Status(StatusCode::kGit, "git ls-files listed an entry it should not: " + entry.substr(0, 80));
    }
    const bool file = entry.compare(0, 6, "100644") == 0 || entry.compare(0, 6, "100755") == 0;
    if (file && entry.compare(48, tab - 48, "0") == 0) files.push_back(FileEntry{entry.substr(tab + 1), FromGit(&id)});
  }
  return files;
}

// The files in `repo`'s index as the index file on disk holds them now,
// stage 0 only; none when there is no index file (a bare repository).
// `whose` names the work tree in errors ("" for the one around the
// caller).
Result<std::vector<FileEntry>> IndexFilesOf(git_repository* repo, const std::string& whose) {
  std::vector<FileEntry> files;
  // By its file, so that the main work tree's index is read through a
  // handle opened on the common folder too (a bare handle has none).
  const std::string git_dir = git_repository_path(repo);
  const std::string path = git_dir + "index";
  git_index* raw = nullptr;
  if (git_index_open(&raw, path.c_str()) == 0) {
    IndexPtr index(raw);
    // The index as it is on disk now, whatever an earlier read cached.
    if (git_index_read(index.get(), /*force=*/1) == 0) {
      const size_t count = git_index_entrycount(index.get());
      files.reserve(count);
      for (size_t i = 0; i < count; ++i) {
        const git_index_entry* entry = git_index_get_byindex(index.get(), i);
        if (GIT_INDEX_ENTRY_STAGE(entry) != 0 || !IsFileMode(static_cast<git_filemode_t>(entry->mode))) continue;
        files.push_back(FileEntry{entry->path, FromGit(&entry->id)});
      }
      return files;
    }
  }
  // libgit2 does not read every index git writes (a split index's "link"
  // extension, a sparse index's "sdir"); git does.
  const Status libgit2 = GitError("cannot read the index " + path);
  git_error_clear();
  auto listed = IndexFilesByGit(WithoutTrailingSlash(git_dir), path);
  if (listed.ok()) return listed;
  return Status(StatusCode::kGit, "cannot read the index" + (whose.empty() ? "" : " of " + whose) + " (" + path +
                                      "): " + listed.status().message() + " (" + libgit2.message() + ")");
}

// One work tree of a repository, opened on its git folder alone: the
// common folder for the main one, <common>/worktrees/<name> for a linked
// one. A linked work tree's HEAD, index, reflog and own refs live there,
// so it is read whether its folder is where it was or not (moved, on a
// disk not mounted now, locked): git keeps what they need, and so must we.
struct WorkTree {
  std::string name;  // "" for the main one
  RepoPtr repo;
  std::string Whose() const { return name.empty() ? "the main work tree" : "linked work tree " + name; }
};

// The repository at `common_dir` opened once for each of its work trees
// (the main one first, then every linked one, by name). A linked work
// tree is a folder of <common>/worktrees with a gitdir file, as git has
// it (`git worktree prune` removes the others); one that cannot be opened
// is an error naming it.
Result<std::vector<WorkTree>> OpenWorkTrees(const std::string& common_dir) {
  std::vector<WorkTree> trees;
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, common_dir.c_str()) < 0) return GitError("cannot open " + common_dir);
  trees.push_back(WorkTree{"", RepoPtr(raw)});
  const std::filesystem::path admin = std::filesystem::path(common_dir) / "worktrees";
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(admin, ec), end; !ec && it != end; it.increment(ec)) {
    if (std::filesystem::is_regular_file(it->path() / "gitdir")) names.push_back(it->path().filename().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError("cannot list the linked work trees in " + admin.string() + ": " + ec.message());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string dir = (admin / name).string();
    if (git_repository_open_bare(&raw, dir.c_str()) < 0) {
      return Status(StatusCode::kGit, GitError("cannot read linked work tree " + name + " (" + dir + ")").message() +
                                          "; if it is gone for good, `git worktree prune` forgets it (`git worktree "
                                          "unlock " +
                                          name + "` first if it is locked)");
    }
    trees.push_back(WorkTree{name, RepoPtr(raw)});
  }
  return trees;
}

}  // namespace

struct Repository::Handle {
  RepoPtr repo;
  OdbPtr odb;
};

Repository::Repository(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}
Repository::~Repository() = default;
Repository::Repository(Repository&&) noexcept = default;
Repository& Repository::operator=(Repository&&) noexcept = default;

Result<Repository> Repository::Discover(const std::string& start) {
  InitOnce();
  git_repository* raw = nullptr;
  const int e = git_repository_open_ext(&raw, start.c_str(), 0, nullptr);
  if (e == GIT_ENOTFOUND) {
    git_error_clear();
    return NotFound(start + " is not inside a git repository");
  }
  if (e < 0) return GitError("cannot open the git repository around " + start);
  auto handle = std::make_unique<Handle>();
  handle->repo.reset(raw);
  git_odb* odb = nullptr;
  if (git_repository_odb(&odb, raw) < 0) return GitError("cannot open the object database around " + start);
  handle->odb.reset(odb);
  Repository repo(std::move(handle));
  const char* work_dir = git_repository_workdir(raw);
  repo.work_dir_ = work_dir != nullptr ? WithoutTrailingSlash(work_dir) : "";
  repo.common_dir_ = WithoutTrailingSlash(git_repository_commondir(raw));
  if (repo.common_dir_.empty() || repo.common_dir_[0] != '/') {
    char absolute[PATH_MAX];
    if (realpath(repo.common_dir_.c_str(), absolute) == nullptr) {
      return IoError("cannot find the absolute path of " + repo.common_dir_);
    }
    repo.common_dir_ = absolute;
  }
  return repo;
}

Result<std::vector<FileEntry>> Repository::IndexFiles() const { return IndexFilesOf(handle_->repo.get(), ""); }

Result<std::vector<FileEntry>> Repository::AllIndexFiles() const {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<WorkTree> trees, OpenWorkTrees(common_dir_));
  std::vector<FileEntry> files;
  for (const WorkTree& tree : trees) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> staged, IndexFilesOf(tree.repo.get(), tree.Whose()));
    files.insert(files.end(), staged.begin(), staged.end());
  }
  return files;
}

Result<std::optional<Oid>> Repository::ResolveCommit(const std::string& rev) const {
  git_object* raw = nullptr;
  const int e = git_revparse_single(&raw, handle_->repo.get(), rev.c_str());
  // An abbreviated id too short to look up also reads as "ambiguous".
  if (e == GIT_ENOTFOUND || e == GIT_EUNBORNBRANCH || e == GIT_EAMBIGUOUS) {
    git_error_clear();
    return std::optional<Oid>();
  }
  if (e < 0) return GitError("cannot resolve revision '" + rev + "'");
  ObjectPtr object(raw);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) < 0) {
    return GitError("revision '" + rev + "' names a " + git_object_type2string(git_object_type(object.get())) +
                    ", not a commit");
  }
  ObjectPtr commit(peeled);
  return std::optional<Oid>(FromGit(git_object_id(commit.get())));
}

Result<std::vector<FileEntry>> Repository::TreeFiles(const Oid& commit) const {
  git_repository* repo = handle_->repo.get();
  ZIPNN_ASSIGN_OR_RETURN(TreePtr tree, CommitTree(repo, commit));
  std::vector<FileEntry> files;
  std::string prefix;
  auto enter = [](const std::string&, const git_oid&) { return true; };
  auto file = [&](const std::string& path, const Oid& blob) { files.push_back(FileEntry{path, blob}); };
  ZIPNN_RETURN_IF_ERROR(WalkTree(repo, tree.get(), prefix, enter, file));
  return files;
}

Result<std::optional<Oid>> Repository::FileAt(const Oid& commit, const std::string& path) const {
  ZIPNN_ASSIGN_OR_RETURN(TreePtr tree, CommitTree(handle_->repo.get(), commit));
  git_tree_entry* raw = nullptr;
  const int e = git_tree_entry_bypath(&raw, tree.get(), path.c_str());
  if (e == GIT_ENOTFOUND) {
    git_error_clear();
    return std::optional<Oid>();
  }
  if (e < 0) return GitError("cannot look up " + path + " in commit " + commit.Hex());
  TreeEntryPtr entry(raw);
  if (!IsFileMode(git_tree_entry_filemode(entry.get()))) return std::optional<Oid>();
  return std::optional<Oid>(FromGit(git_tree_entry_id(entry.get())));
}

Result<uint64_t> Repository::BlobSize(const Oid& blob) const {
  size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  const git_oid id = ToGit(blob);
  int e = git_odb_read_header(&size, &type, handle_->odb.get(), &id);
  if (e == GIT_ENOTFOUND) {
    git_error_clear();
    ZIPNN_RETURN_IF_ERROR(FetchMissing({blob}));
    e = git_odb_read_header(&size, &type, handle_->odb.get(), &id);
  }
  if (e < 0) return GitError("cannot read the header of blob " + blob.Hex());
  if (type != GIT_OBJECT_BLOB) {
    return Status(StatusCode::kGit, "object " + blob.Hex() + " is a " + git_object_type2string(type) + ", not a blob");
  }
  return static_cast<uint64_t>(size);
}

Result<std::optional<std::string>> Repository::SmallBlob(const Oid& blob, size_t max_bytes) const {
  ZIPNN_ASSIGN_OR_RETURN(uint64_t size, BlobSize(blob));
  if (size > max_bytes) return std::optional<std::string>();
  git_blob* raw = nullptr;
  const git_oid id = ToGit(blob);
  if (git_blob_lookup(&raw, handle_->repo.get(), &id) < 0) return GitError("cannot read blob " + blob.Hex());
  BlobPtr owned(raw);
  const auto* bytes = static_cast<const char*>(git_blob_rawcontent(owned.get()));
  return std::optional<std::string>(std::string(bytes, static_cast<size_t>(git_blob_rawsize(owned.get()))));
}

namespace {

// The names of the remotes git fetches what a partial clone lacks from,
// in the order git asks them: extensions.partialClone's first, then each
// remote.<name>.promisor set to true.
Result<std::vector<std::string>> PromisorRemotes(git_repository* repo) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo) < 0) return GitError("cannot read the configuration");
  ConfigPtr config(raw);
  std::vector<std::string> remotes;
  git_buf partial = GIT_BUF_INIT;
  if (git_config_get_string_buf(&partial, config.get(), "extensions.partialclone") == 0) {
    remotes.emplace_back(partial.ptr, partial.size);
  }
  git_buf_dispose(&partial);
  git_error_clear();
  git_config_iterator* it = nullptr;
  if (git_config_iterator_glob_new(&it, config.get(), "^remote\\..*\\.promisor$") < 0) {
    return GitError("cannot read the configuration");
  }
  git_config_entry* entry = nullptr;
  while (git_config_next(&entry, it) == 0) {
    int on = 0;
    const std::string key = entry->name;  // remote.<name>.promisor, <name> may hold dots
    const std::string name = key.substr(7, key.size() - 7 - 9);
    if (git_config_parse_bool(&on, entry->value) == 0 && on &&
        std::find(remotes.begin(), remotes.end(), name) == remotes.end()) {
      remotes.push_back(name);
    }
  }
  git_config_iterator_free(it);
  git_error_clear();
  return remotes;
}

}  // namespace

Status Repository::FetchMissing(const std::vector<Oid>& blobs) const {
  std::string wanted;
  size_t missing = 0;
  auto list_missing = [&] {
    wanted.clear();
    missing = 0;
    for (const Oid& blob : blobs) {
      const git_oid id = ToGit(blob);
      if (git_odb_exists_ext(handle_->odb.get(), &id, GIT_ODB_LOOKUP_NO_REFRESH)) continue;
      wanted += blob.Hex() + "\n";
      ++missing;
    }
  };
  list_missing();
  if (missing == 0) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> remotes, PromisorRemotes(handle_->repo.get()));
  for (const std::string& remote : remotes) {
    // What git runs for the blobs it lacks (promisor-remote.c), for all of
    // them at once; its automatic maintenance is left to the user's next
    // git command.
    ZIPNN_ASSIGN_OR_RETURN(
        GitRun run, RunGit({"--git-dir=" + common_dir_, "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
                            "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
                            "--no-auto-maintenance", "--stdin"},
                           "", wanted));
    if (git_odb_refresh(handle_->odb.get()) < 0) return GitError("cannot read the object database again");
    if (run.exit_code != 0) {
      while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
      return Status(StatusCode::kGit, "this partial clone lacks " + std::to_string(missing) + " blob" +
                                          (missing == 1 ? "" : "s") + " git-zipnn must read, and fetching them from " +
                                          "its promisor remote " + remote + " failed: " + run.err);
    }
    list_missing();
    if (missing == 0) break;
  }
  return OkStatus();
}

namespace {

// The names of a linked work tree's own refs (refs/bisect/*,
// refs/worktree/*, refs/rewritten/*): git keeps them loose in its
// administrative folder `git_dir`, never in packed-refs.
Result<std::vector<std::string>> OwnRefs(const std::string& git_dir) {
  std::vector<std::string> names;
  const std::filesystem::path refs = std::filesystem::path(git_dir) / "refs";
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(refs, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = "refs/" + it->path().lexically_relative(refs).generic_string();
    if (it->is_regular_file() && name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") != 0) {
      names.push_back(name);
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError("cannot list the refs in " + refs.string() + ": " + ec.message());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What `--all` means, and more: every work tree's HEAD and own refs, and
// every reference (the stash among them); with `reflogs` also every
// object their reflogs name.
Result<Tips> AllTips(git_odb* odb, const std::string& common_dir, bool reflogs) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<WorkTree> trees, OpenWorkTrees(common_dir));
  Tips tips;
  for (const WorkTree& tree : trees) {
    git_repository* repo = tree.repo.get();
    std::vector<std::string> names = {"HEAD"};
    if (!tree.name.empty()) {
      // The main work tree's own refs are in the common folder, among
      // every other ref.
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> own, OwnRefs(git_repository_path(repo)));
      names.insert(names.end(), own.begin(), own.end());
    }
    for (const std::string& name : names) {
      git_reference* raw = nullptr;
      const int e = git_reference_lookup(&raw, repo, name.c_str());
      if (e == GIT_ENOTFOUND) {
        git_error_clear();
        continue;
      }
      if (e < 0) return GitError("cannot read " + name + " of " + tree.Whose());
      RefPtr ref(raw);
      Status added = AddRef(repo, odb, ref.get(), tips);
      if (added.ok() && reflogs) added = AddReflog(repo, odb, name, tips);
      ZIPNN_RETURN_IF_ERROR(Annotate(added, tree.Whose()));
    }
  }
  git_repository* main = trees[0].repo.get();
  std::vector<std::string> names;
  Status added;
  ZIPNN_RETURN_IF_ERROR(ForEachRef(main, "", [&](git_reference* ref) {
    if (added.ok()) added = AddRef(main, odb, ref, tips);
    names.push_back(git_reference_name(ref));
  }));
  ZIPNN_RETURN_IF_ERROR(added);
  if (reflogs) {
    for (const std::string& name : names) ZIPNN_RETURN_IF_ERROR(AddReflog(main, odb, name, tips));
  }
  return tips;
}

}  // namespace

Result<std::vector<CommitInfo>> Repository::Commits(const std::vector<std::string>& revs) const {
  git_repository* repo = handle_->repo.get();
  HistoryWalk walk(repo);
  bool negated = false;  // after an odd number of "--not"
  auto resolve = [&](const std::string& rev) -> Result<Oid> {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> id, ResolveCommit(rev.empty() ? "HEAD" : rev));
    if (!id) return NotFound("unknown revision '" + rev + "' (not a branch, tag or commit in this repository)");
    return *id;
  };
  for (const std::string& arg : revs) {
    if (arg == "--not") {
      negated = !negated;
    } else if (arg == "--all") {
      ZIPNN_ASSIGN_OR_RETURN(Tips tips, AllTips(handle_->odb.get(), common_dir_, /*reflogs=*/false));
      for (const Oid& id : tips.commits) ZIPNN_RETURN_IF_ERROR(walk.Add(id, negated));
    } else if (arg == "--remotes" || arg.rfind("--remotes=", 0) == 0) {
      // As git's --remotes=<pattern>: a pattern without a wildcard means
      // everything under it.
      std::string glob = "refs/remotes/" + (arg == "--remotes" ? "" : arg.substr(10));
      if (glob.find_first_of("?*[") == std::string::npos) glob += (glob.back() == '/' ? "*" : "/*");
      std::vector<Oid> tips;
      ZIPNN_RETURN_IF_ERROR(ForEachRef(repo, glob, [&](git_reference* ref) {
        if (auto id = PeelToCommit(ref)) tips.push_back(*id);
      }));
      for (const Oid& id : tips) ZIPNN_RETURN_IF_ERROR(walk.Add(id, negated));
    } else if (arg.rfind("--", 0) == 0) {
      return InvalidArgument("unsupported revision option '" + arg + "'");
    } else {
      const bool excluded = !arg.empty() && arg[0] == '^';
      const std::string rev = excluded ? arg.substr(1) : arg;
      const size_t dots = rev.find("..");
      if (dots != std::string::npos) {
        if (rev.compare(dots, 3, "...") == 0) return InvalidArgument("unsupported revision range '" + arg + "'");
        ZIPNN_ASSIGN_OR_RETURN(Oid from, resolve(rev.substr(0, dots)));
        ZIPNN_ASSIGN_OR_RETURN(Oid to, resolve(rev.substr(dots + 2)));
        ZIPNN_RETURN_IF_ERROR(walk.Add(from, !(negated != excluded)));
        ZIPNN_RETURN_IF_ERROR(walk.Add(to, negated != excluded));
      } else {
        ZIPNN_ASSIGN_OR_RETURN(Oid id, resolve(rev));
        ZIPNN_RETURN_IF_ERROR(walk.Add(id, negated != excluded));
      }
    }
  }
  return walk.Run();
}

Result<std::vector<CommitInfo>> Repository::AllCommits() const {
  git_repository* repo = handle_->repo.get();
  ZIPNN_ASSIGN_OR_RETURN(Tips tips, AllTips(handle_->odb.get(), common_dir_, /*reflogs=*/true));
  HistoryWalk walk(repo);
  for (const Oid& id : tips.commits)
    ZIPNN_RETURN_IF_ERROR(walk.Add(id, /*hidden=*/false));  // a pruned entry is skipped
  return walk.Run();
}

Result<std::vector<std::pair<std::string, Oid>>> Repository::TagCommits() const {
  std::vector<std::pair<std::string, Oid>> tags;
  ZIPNN_RETURN_IF_ERROR(ForEachRef(handle_->repo.get(), "refs/tags/*", [&](git_reference* ref) {
    if (std::optional<Oid> commit = PeelToCommit(ref)) tags.emplace_back(git_reference_shorthand(ref), *commit);
  }));
  return tags;
}

Status Repository::VisitTaggedFiles(const std::function<void(const std::string&, const FileEntry&)>& visit) const {
  git_repository* repo = handle_->repo.get();
  ZIPNN_ASSIGN_OR_RETURN(Tips tips, AllTips(handle_->odb.get(), common_dir_, /*reflogs=*/true));
  FileEntry entry;
  for (const auto& [ref, blob] : tips.blobs) {
    entry.path = ref;
    entry.blob = blob;
    visit(ref, entry);
  }
  // A tree tagged twice (or reached again under another tagged tree) is
  // read once.
  std::unordered_set<Oid, OidHash> seen;
  for (const auto& [ref, tree_id] : tips.trees) {
    if (!seen.insert(tree_id).second) continue;
    git_tree* raw = nullptr;
    const git_oid id = ToGit(tree_id);
    if (git_tree_lookup(&raw, repo, &id) < 0)
      return GitError("cannot read the tree " + tree_id.Hex() + " " + ref + " tags");
    TreePtr tree(raw);
    std::string prefix;
    const std::string& name = ref;
    auto enter = [&](const std::string&, const git_oid& sub) { return seen.insert(FromGit(&sub)).second; };
    auto file = [&](const std::string& path, const Oid& blob) {
      entry.path = path;
      entry.blob = blob;
      visit(name, entry);
    };
    ZIPNN_RETURN_IF_ERROR(WalkTree(repo, tree.get(), prefix, enter, file));
  }
  return OkStatus();
}

Status Repository::VisitHistoryFiles(const std::vector<CommitInfo>& commits,
                                     const std::function<void(size_t, const FileEntry&)>& visit) const {
  git_repository* repo = handle_->repo.get();
  // Keys: the object id's 20 bytes, then the path.
  std::unordered_set<std::string> seen_trees, seen_files;
  std::string key;
  auto seen = [&key](std::unordered_set<std::string>& set, const unsigned char* id, const std::string& path) {
    key.assign(reinterpret_cast<const char*>(id), 20);
    key += path;
    return !set.insert(key).second;
  };
  FileEntry entry;
  for (size_t i = 0; i < commits.size(); ++i) {
    ZIPNN_ASSIGN_OR_RETURN(TreePtr tree, CommitTree(repo, commits[i].id));
    if (seen(seen_trees, git_tree_id(tree.get())->id, "")) continue;
    std::string prefix;
    auto enter = [&](const std::string& path, const git_oid& id) { return !seen(seen_trees, id.id, path); };
    auto file = [&](const std::string& path, const Oid& blob) {
      if (seen(seen_files, blob.bytes.data(), path)) return;
      entry.path = path;
      entry.blob = blob;
      visit(i, entry);
    };
    ZIPNN_RETURN_IF_ERROR(WalkTree(repo, tree.get(), prefix, enter, file));
  }
  return OkStatus();
}

}  // namespace zipnn::git
