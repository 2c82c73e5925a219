#include "lib/git/fake_git.h"

#include <algorithm>

namespace zipnn::git {

Oid FakeGit::NewId() {
  Oid id;
  uint64_t n = next_id_++;
  // Ids that sort in the order they were made, readable in a failure.
  for (int i = 19; i >= 12; --i, n >>= 8) id.bytes[i] = static_cast<uint8_t>(n & 0xff);
  return id;
}

Oid FakeGit::Blob(const std::string& text) {
  auto known = blob_of_text_.find(text);
  if (known != blob_of_text_.end()) return known->second;
  const Oid id = NewId();
  blob_of_text_.emplace(text, id);
  blobs_.emplace(id, text);
  return id;
}

Oid FakeGit::Commit(const Files& files, const std::vector<Oid>& parents, int64_t time, const std::string& subject) {
  StoredCommit c;
  c.info.id = NewId();
  last_time_ = time != 0 ? time : last_time_ + 60;
  c.info.time = last_time_;
  c.info.subject = subject;
  c.info.parents = parents;
  c.order = next_id_;
  for (const auto& [path, text] : files) c.tree[path] = Blob(text);
  const Oid id = c.info.id;
  commits_.emplace(id, std::move(c));
  return id;
}

Oid FakeGit::CommitOnHead(const Files& files, const std::string& subject) {
  std::vector<Oid> parents;
  if (std::optional<Oid> head = Lookup("HEAD")) parents.push_back(*head);
  const Oid id = Commit(files, parents, 0, subject);
  SetRef("refs/heads/main", id);
  SetRef("HEAD", id);
  return id;
}

void FakeGit::SetRef(const std::string& ref, const Oid& object) { refs_[ref] = object; }

void FakeGit::SetIndex(const Files& files) {
  index_.clear();
  for (const auto& [path, text] : files) index_[path] = Blob(text);
}

void FakeGit::SetLinkedIndex(const std::string& worktree, const Files& files) {
  auto& index = linked_indexes_[worktree];
  index.clear();
  for (const auto& [path, text] : files) index[path] = Blob(text);
}

void FakeGit::MakeMissing(const Oid& blob) { missing_.insert(blob); }

size_t FakeGit::reads(const Oid& blob) const {
  auto it = reads_.find(blob);
  return it == reads_.end() ? 0 : it->second;
}

std::optional<Oid> FakeGit::Lookup(const std::string& rev) const {
  for (const std::string& name : {rev, "refs/heads/" + rev, "refs/tags/" + rev, "refs/remotes/" + rev}) {
    auto ref = refs_.find(name);
    if (ref != refs_.end()) return ref->second;
  }
  for (const auto& [id, c] : commits_) {
    if (id.Hex() == rev) return id;
  }
  for (const auto& [id, text] : blobs_) {
    if (id.Hex() == rev) return id;
  }
  return std::nullopt;
}

const FakeGit::StoredCommit* FakeGit::FindCommit(const Oid& id) const {
  auto it = commits_.find(id);
  return it == commits_.end() ? nullptr : &it->second;
}

std::vector<FileEntry> FakeGit::EntriesOf(const std::map<std::string, Oid>& files) const {
  std::vector<FileEntry> entries;
  for (const auto& [path, blob] : files) entries.push_back(FileEntry{path, blob});
  return entries;
}

Result<std::vector<FileEntry>> FakeGit::IndexFiles() const { return EntriesOf(index_); }

Result<std::vector<FileEntry>> FakeGit::AllIndexFiles() const {
  std::vector<FileEntry> all = EntriesOf(index_);
  for (const auto& [worktree, index] : linked_indexes_) {
    for (FileEntry& e : EntriesOf(index)) all.push_back(std::move(e));
  }
  return all;
}

Result<std::optional<Oid>> FakeGit::ResolveCommit(const std::string& rev) const {
  const std::optional<Oid> found = Lookup(rev);
  if (!found) return std::optional<Oid>();
  if (FindCommit(*found) == nullptr) return Status(StatusCode::kGit, "'" + rev + "' names no commit");
  return found;
}

Result<std::vector<FileEntry>> FakeGit::TreeFiles(const Oid& commit) const {
  const StoredCommit* c = FindCommit(commit);
  if (c == nullptr) return Status(StatusCode::kGit, "cannot read commit " + commit.Hex());
  return EntriesOf(c->tree);
}

Result<std::optional<Oid>> FakeGit::FileAt(const Oid& commit, const std::string& path) const {
  const StoredCommit* c = FindCommit(commit);
  if (c == nullptr) return Status(StatusCode::kGit, "cannot read commit " + commit.Hex());
  auto it = c->tree.find(path);
  if (it == c->tree.end()) return std::optional<Oid>();
  return std::optional<Oid>(it->second);
}

Result<uint64_t> FakeGit::BlobSize(const Oid& blob) const {
  auto it = blobs_.find(blob);
  if (it == blobs_.end() || missing_.count(blob) > 0) return Status(StatusCode::kGit, "cannot read blob " + blob.Hex());
  return uint64_t{it->second.size()};
}

Result<std::optional<std::string>> FakeGit::SmallBlob(const Oid& blob, size_t max_bytes) const {
  ZIPNN_ASSIGN_OR_RETURN(uint64_t size, BlobSize(blob));
  if (size > max_bytes) return std::optional<std::string>();
  ++reads_[blob];
  return std::optional<std::string>(blobs_.at(blob));
}

Status FakeGit::FetchMissing(const std::vector<Oid>& blobs) const {
  fetches_.push_back(blobs);
  for (const Oid& blob : blobs) missing_.erase(blob);
  return OkStatus();
}

std::set<Oid> FakeGit::ReachableIds(const std::vector<Oid>& tips) const {
  std::set<Oid> seen;
  std::vector<Oid> todo = tips;
  while (!todo.empty()) {
    const Oid id = todo.back();
    todo.pop_back();
    const StoredCommit* c = FindCommit(id);
    if (c == nullptr || !seen.insert(id).second) continue;
    for (const Oid& parent : c->info.parents) todo.push_back(parent);
  }
  return seen;
}

std::vector<CommitInfo> FakeGit::Reachable(const std::vector<Oid>& tips, const std::set<Oid>& excluded) const {
  std::vector<const StoredCommit*> found;
  for (const Oid& id : ReachableIds(tips)) {
    if (excluded.count(id) == 0) found.push_back(FindCommit(id));
  }
  std::sort(found.begin(), found.end(), [](const StoredCommit* a, const StoredCommit* b) {
    return a->info.time != b->info.time ? a->info.time > b->info.time : a->order > b->order;
  });
  std::vector<CommitInfo> commits;
  for (const StoredCommit* c : found) commits.push_back(c->info);
  return commits;
}

Result<std::vector<CommitInfo>> FakeGit::Commits(const std::vector<std::string>& revs) const {
  std::vector<Oid> include, exclude;
  bool flipped = false;
  auto add = [&](const std::string& rev, bool negative) -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> commit, ResolveCommit(rev));
    if (!commit) return NotFound("unknown revision '" + rev + "'");
    (negative != flipped ? exclude : include).push_back(*commit);
    return OkStatus();
  };
  for (const std::string& word : revs) {
    if (word == "--not") {
      flipped = !flipped;
    } else if (word == "--all" || word.rfind("--remotes=", 0) == 0) {
      const std::string prefix = word == "--all" ? "" : "refs/remotes/" + word.substr(10) + "/";
      for (const auto& [ref, object] : refs_) {
        if (ref.rfind(prefix, 0) == 0 && FindCommit(object) != nullptr) (flipped ? exclude : include).push_back(object);
      }
    } else if (const size_t dots = word.find(".."); dots != std::string::npos) {
      const std::string from = word.substr(0, dots), to = word.substr(dots + 2);
      ZIPNN_RETURN_IF_ERROR(add(from.empty() ? "HEAD" : from, true));
      ZIPNN_RETURN_IF_ERROR(add(to.empty() ? "HEAD" : to, false));
    } else if (!word.empty() && word[0] == '^') {
      ZIPNN_RETURN_IF_ERROR(add(word.substr(1), true));
    } else {
      ZIPNN_RETURN_IF_ERROR(add(word, false));
    }
  }
  return Reachable(include, ReachableIds(exclude));
}

Result<std::vector<CommitInfo>> FakeGit::AllCommits() const {
  std::vector<Oid> tips;
  for (const auto& [ref, object] : refs_) {
    if (FindCommit(object) != nullptr) tips.push_back(object);
  }
  return Reachable(tips, {});
}

Result<std::vector<std::pair<std::string, Oid>>> FakeGit::TagCommits() const {
  std::vector<std::pair<std::string, Oid>> tags;
  for (const auto& [ref, object] : refs_) {
    if (ref.rfind("refs/tags/", 0) == 0 && FindCommit(object) != nullptr) tags.emplace_back(ref.substr(10), object);
  }
  return tags;
}

Status FakeGit::VisitTaggedFiles(const std::function<void(const std::string& ref, const FileEntry&)>& visit) const {
  for (const auto& [ref, object] : refs_) {
    if (FindCommit(object) != nullptr) continue;
    std::string name = ref;
    for (const char* prefix : {"refs/tags/", "refs/heads/", "refs/remotes/"}) {
      if (ref.rfind(prefix, 0) == 0) name = ref.substr(std::string(prefix).size());
    }
    visit(name, FileEntry{name, object});
  }
  return OkStatus();
}

Status FakeGit::VisitHistoryFiles(const std::vector<CommitInfo>& commits,
                                  const std::function<void(size_t commit_index, const FileEntry&)>& visit) const {
  std::set<std::pair<std::string, Oid>> seen;
  for (size_t i = 0; i < commits.size(); ++i) {
    const StoredCommit* c = FindCommit(commits[i].id);
    if (c == nullptr) return Status(StatusCode::kGit, "cannot read commit " + commits[i].id.Hex());
    for (const auto& [path, blob] : c->tree) {
      if (seen.emplace(path, blob).second) visit(i, FileEntry{path, blob});
    }
  }
  return OkStatus();
}

}  // namespace zipnn::git
