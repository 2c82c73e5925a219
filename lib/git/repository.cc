#include "lib/git/repository.h"

#include <git2.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace zipnn::git {

namespace {

// Owning pointers to libgit2 objects, each freed by its own function.
template <auto Free>
struct Freer {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using RepoPtr = std::unique_ptr<git_repository, Freer<git_repository_free>>;
using OdbPtr = std::unique_ptr<git_odb, Freer<git_odb_free>>;
using IndexPtr = std::unique_ptr<git_index, Freer<git_index_free>>;
using ObjectPtr = std::unique_ptr<git_object, Freer<git_object_free>>;
using CommitPtr = std::unique_ptr<git_commit, Freer<git_commit_free>>;
using TreePtr = std::unique_ptr<git_tree, Freer<git_tree_free>>;
using TreeEntryPtr = std::unique_ptr<git_tree_entry, Freer<git_tree_entry_free>>;
using BlobPtr = std::unique_ptr<git_blob, Freer<git_blob_free>>;
using RefPtr = std::unique_ptr<git_reference, Freer<git_reference_free>>;
using RefIterPtr = std::unique_ptr<git_reference_iterator, Freer<git_reference_iterator_free>>;
using ReflogPtr = std::unique_ptr<git_reflog, Freer<git_reflog_free>>;
using WorktreePtr = std::unique_ptr<git_worktree, Freer<git_worktree_free>>;

void InitOnce() {
  static std::once_flag once;
  // Never shut down: handles may outlive any caller's scope.
  std::call_once(once, [] { git_libgit2_init(); });
}

// A Git status: what was being done, and libgit2's own words.
Status GitError(const std::string& doing) {
  const git_error* e = git_error_last();
  const char* message = e != nullptr && e->message != nullptr ? e->message : "libgit2 failed";
  return Status(StatusCode::kGit, doing + ": " + message);
}

Oid FromGit(const git_oid* id) {
  Oid o;
  std::memcpy(o.bytes.data(), id->id, o.bytes.size());
  return o;
}

git_oid ToGit(const Oid& o) {
  git_oid id;
  std::memcpy(id.id, o.bytes.data(), o.bytes.size());
  return id;
}

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
  const int e = glob.empty() ? git_reference_iterator_new(&raw, repo)
                             : git_reference_iterator_glob_new(&raw, repo, glob.c_str());
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

// Every commit id a reflog entry names, old and new; a reflog that does not
// exist is empty.
Status AddReflog(git_repository* repo, const char* name, std::vector<Oid>& ids) {
  git_reflog* raw = nullptr;
  if (git_reflog_read(&raw, repo, name) < 0) return GitError(std::string("cannot read the reflog of ") + name);
  ReflogPtr log(raw);
  const size_t count = git_reflog_entrycount(log.get());
  for (size_t i = 0; i < count; ++i) {
    const git_reflog_entry* entry = git_reflog_entry_byindex(log.get(), i);
    for (const git_oid* id : {git_reflog_entry_id_old(entry), git_reflog_entry_id_new(entry)}) {
      if (!git_oid_is_zero(id)) ids.push_back(FromGit(id));
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

// The files in `repo`'s index as the index file on disk holds them now,
// stage 0 only; none when there is no index file (a bare repository).
Result<std::vector<FileEntry>> IndexFilesOf(git_repository* repo) {
  std::vector<FileEntry> files;
  // By its file, so that the main work tree's index is read through a
  // handle opened on the common folder too (a bare handle has none).
  const std::string path = std::string(git_repository_path(repo)) + "index";
  git_index* raw = nullptr;
  if (git_index_open(&raw, path.c_str()) < 0) return GitError("cannot open the index " + path);
  IndexPtr index(raw);
  // The index as it is on disk now, whatever an earlier read cached.
  if (git_index_read(index.get(), /*force=*/1) < 0) return GitError("cannot read the index");
  const size_t count = git_index_entrycount(index.get());
  files.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const git_index_entry* entry = git_index_get_byindex(index.get(), i);
    if (GIT_INDEX_ENTRY_STAGE(entry) != 0 || !IsFileMode(static_cast<git_filemode_t>(entry->mode))) continue;
    files.push_back(FileEntry{entry->path, FromGit(&entry->id)});
  }
  return files;
}

// The repository at `common_dir` opened once for each of its work trees
// (the main one first, then every linked one). A linked work tree that
// cannot be opened (its folder is gone and not yet pruned) is left out.
Result<std::vector<RepoPtr>> OpenWorkTrees(const std::string& common_dir) {
  std::vector<RepoPtr> trees;
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, common_dir.c_str()) < 0) return GitError("cannot open " + common_dir);
  trees.emplace_back(raw);
  git_strarray names{};
  if (git_worktree_list(&names, trees[0].get()) < 0) return GitError("cannot list the work trees of " + common_dir);
  for (size_t i = 0; i < names.count; ++i) {
    git_worktree* wt = nullptr;
    if (git_worktree_lookup(&wt, trees[0].get(), names.strings[i]) < 0) continue;
    WorktreePtr worktree(wt);
    if (git_repository_open_from_worktree(&raw, worktree.get()) < 0) continue;
    trees.emplace_back(raw);
  }
  git_strarray_dispose(&names);
  git_error_clear();
  return trees;
}

}  // namespace

std::string Oid::Hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return hex;
}

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

Result<std::vector<FileEntry>> Repository::IndexFiles() const { return IndexFilesOf(handle_->repo.get()); }

Result<std::vector<FileEntry>> Repository::AllIndexFiles() const {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<RepoPtr> trees, OpenWorkTrees(common_dir_));
  std::vector<FileEntry> files;
  for (const RepoPtr& tree : trees) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> staged, IndexFilesOf(tree.get()));
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
  if (git_odb_read_header(&size, &type, handle_->odb.get(), &id) < 0) {
    return GitError("cannot read the header of blob " + blob.Hex());
  }
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

// The commits the HEADs of the repository's work trees lead to, with
// `reflogs` also every commit their reflogs name.
Status AddHeads(const std::string& common_dir, bool reflogs, std::vector<Oid>& ids) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<RepoPtr> heads, OpenWorkTrees(common_dir));
  for (const RepoPtr& repo : heads) {
    git_reference* ref = nullptr;
    if (git_reference_lookup(&ref, repo.get(), "HEAD") == 0) {
      RefPtr head(ref);
      if (auto id = PeelToCommit(head.get())) ids.push_back(*id);
    }
    git_error_clear();
    if (reflogs) ZIPNN_RETURN_IF_ERROR(AddReflog(repo.get(), "HEAD", ids));
  }
  return OkStatus();
}

// What `--all` means: every HEAD and every reference (the stash among
// them) that leads to a commit; with `reflogs` also every commit their
// reflogs name.
Result<std::vector<Oid>> AllTips(git_repository* repo, const std::string& common_dir, bool reflogs) {
  std::vector<Oid> ids;
  ZIPNN_RETURN_IF_ERROR(AddHeads(common_dir, reflogs, ids));
  std::vector<std::string> names;
  ZIPNN_RETURN_IF_ERROR(ForEachRef(repo, "", [&](git_reference* ref) {
    if (auto id = PeelToCommit(ref)) ids.push_back(*id);
    names.push_back(git_reference_name(ref));
  }));
  if (reflogs) {
    for (const std::string& name : names) ZIPNN_RETURN_IF_ERROR(AddReflog(repo, name.c_str(), ids));
  }
  return ids;
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
      ZIPNN_ASSIGN_OR_RETURN(std::vector<Oid> tips, AllTips(repo, common_dir_, /*reflogs=*/false));
      for (const Oid& id : tips) ZIPNN_RETURN_IF_ERROR(walk.Add(id, negated));
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
  ZIPNN_ASSIGN_OR_RETURN(std::vector<Oid> tips, AllTips(repo, common_dir_, /*reflogs=*/true));
  HistoryWalk walk(repo);
  for (const Oid& id : tips) ZIPNN_RETURN_IF_ERROR(walk.Add(id, /*hidden=*/false));  // a pruned entry is skipped
  return walk.Run();
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
