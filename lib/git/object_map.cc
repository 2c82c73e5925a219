#include "lib/git/object_map.h"

#include <ctime>
#include <optional>
#include <sstream>

#include "lib/git/libgit2.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

using SignaturePtr = std::unique_ptr<git_signature, Freer<git_signature_free>>;

// How often a write starts again when the ref moved under it, and a push
// when another landed first.
constexpr int kAttempts = 5;

std::string RemoteRef(const std::string& remote) { return "refs/zipnn/remotes/" + remote + "/objects"; }

// The file of version `id` in the map's tree.
std::string PathOf(const std::string& id) { return id.substr(0, 2) + "/" + id; }

std::optional<git_oid> Tip(git_repository* repo, const std::string& ref) {
  git_oid commit;
  if (git_reference_name_to_id(&commit, repo, ref.c_str()) == 0) return commit;
  git_error_clear();
  return std::nullopt;
}

Result<TreePtr> TreeOf(git_repository* repo, const git_oid& commit, const std::string& ref) {
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo, &commit) < 0) return GitError("cannot read " + ref);
  CommitPtr c(raw);
  git_tree* tree = nullptr;
  if (git_commit_tree(&tree, c.get()) < 0) return GitError("cannot read the tree of " + ref);
  return TreePtr(tree);
}

std::set<std::string> LinesOf(const git_blob* blob) {
  std::set<std::string> lines;
  std::istringstream in(
      std::string(static_cast<const char*>(git_blob_rawcontent(blob)), static_cast<size_t>(git_blob_rawsize(blob))));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.insert(line);
  }
  return lines;
}

// Adds the lines of every file of the map at commit `tip` to `into`.
Status ReadLines(git_repository* repo, const git_oid& tip, const std::string& ref, MapLines& into) {
  ZIPNN_ASSIGN_OR_RETURN(TreePtr tree, TreeOf(repo, tip, ref));
  for (size_t i = 0; i < git_tree_entrycount(tree.get()); ++i) {
    const git_tree_entry* folder = git_tree_entry_byindex(tree.get(), i);
    if (git_tree_entry_type(folder) != GIT_OBJECT_TREE) continue;
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, repo, git_tree_entry_id(folder)) < 0) return GitError("cannot read " + ref);
    TreePtr sub(raw);
    for (size_t j = 0; j < git_tree_entrycount(sub.get()); ++j) {
      const git_tree_entry* file = git_tree_entry_byindex(sub.get(), j);
      if (git_tree_entry_type(file) != GIT_OBJECT_BLOB) continue;
      git_blob* blob_raw = nullptr;
      if (git_blob_lookup(&blob_raw, repo, git_tree_entry_id(file)) < 0) return GitError("cannot read " + ref);
      BlobPtr blob(blob_raw);
      std::set<std::string>& lines = into[git_tree_entry_name(file)];
      for (const std::string& line : LinesOf(blob.get())) lines.insert(line);
    }
  }
  return OkStatus();
}

// Writes a commit of the local map that holds its lines and `lines`, with
// `also` as a second parent when given, and moves the ref to it unless
// another process moved it first (then false). Nothing is written when
// the map holds every line already and there is no second parent.
Result<bool> CommitLines(git_repository* repo, const MapLines& lines, const std::optional<git_oid>& also) {
  const std::optional<git_oid> tip = Tip(repo, kObjectMapRef);
  TreePtr tree;
  if (tip) {
    ZIPNN_ASSIGN_OR_RETURN(tree, TreeOf(repo, *tip, kObjectMapRef));
  }
  std::vector<std::string> paths;
  std::vector<git_oid> blobs;
  for (const auto& [id, wanted] : lines) {
    if (id.size() < 3 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return InvalidArgument("\"" + id + "\" is not a version id for the object map");
    }
    const std::string path = PathOf(id);
    std::set<std::string> have;
    if (tree) {
      git_tree_entry* raw = nullptr;
      if (git_tree_entry_bypath(&raw, tree.get(), path.c_str()) == 0) {
        TreeEntryPtr entry(raw);
        git_blob* blob_raw = nullptr;
        if (git_blob_lookup(&blob_raw, repo, git_tree_entry_id(entry.get())) < 0) {
          return GitError("cannot read " + std::string(kObjectMapRef));
        }
        BlobPtr blob(blob_raw);
        have = LinesOf(blob.get());
      }
      git_error_clear();
    }
    std::set<std::string> all = have;
    all.insert(wanted.begin(), wanted.end());
    if (all == have) continue;
    std::string text;
    for (const std::string& line : all) text += line + "\n";
    git_oid blob;
    if (git_blob_create_from_buffer(&blob, repo, text.data(), text.size()) < 0) {
      return GitError("cannot write to " + std::string(kObjectMapRef));
    }
    paths.push_back(path);
    blobs.push_back(blob);
  }
  if (paths.empty() && !also) return true;
  std::vector<git_tree_update> updates(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    updates[i] = git_tree_update{GIT_TREE_UPDATE_UPSERT, blobs[i], GIT_FILEMODE_BLOB, paths[i].c_str()};
  }
  git_oid tree_id;
  if (tree) {
    if (git_tree_create_updated(&tree_id, repo, tree.get(), updates.size(), updates.data()) < 0) {
      return GitError("cannot write the tree of " + std::string(kObjectMapRef));
    }
  } else {
    git_treebuilder* raw = nullptr;
    if (git_treebuilder_new(&raw, repo, nullptr) < 0) return GitError("cannot start a tree");
    std::unique_ptr<git_treebuilder, Freer<git_treebuilder_free>> empty(raw);
    git_oid empty_id;
    if (git_treebuilder_write(&empty_id, empty.get()) < 0) return GitError("cannot write an empty tree");
    git_tree* empty_raw = nullptr;
    if (git_tree_lookup(&empty_raw, repo, &empty_id) < 0) return GitError("cannot read an empty tree");
    TreePtr empty_tree(empty_raw);
    if (git_tree_create_updated(&tree_id, repo, empty_tree.get(), updates.size(), updates.data()) < 0) {
      return GitError("cannot write the tree of " + std::string(kObjectMapRef));
    }
  }
  git_tree* tree_raw = nullptr;
  if (git_tree_lookup(&tree_raw, repo, &tree_id) < 0) return GitError("cannot read a tree just written");
  TreePtr new_tree(tree_raw);
  std::vector<CommitPtr> parents;
  for (const std::optional<git_oid>& p : {tip, also}) {
    if (!p) continue;
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &*p) < 0) return GitError("cannot read a commit of the object map");
    parents.emplace_back(raw);
  }
  std::vector<const git_commit*> parent_ptrs;
  for (const CommitPtr& p : parents) parent_ptrs.push_back(p.get());
  git_signature* signed_raw = nullptr;
  if (git_signature_new(&signed_raw, "git-zipnn", "git-zipnn", static_cast<git_time_t>(std::time(nullptr)), 0) < 0) {
    return GitError("cannot make a signature");
  }
  SignaturePtr signature(signed_raw);
  const std::string message = also ? "git-zipnn: object map, merged\n"
                                   : "git-zipnn: object map, " + std::to_string(paths.size()) +
                                         (paths.size() == 1 ? " version\n" : " versions\n");
  git_oid commit;
  if (git_commit_create(&commit, repo, nullptr, signature.get(), signature.get(), nullptr, message.c_str(),
                        new_tree.get(), parent_ptrs.size(), parent_ptrs.data()) < 0) {
    return GitError("cannot write a commit of the object map");
  }
  git_reference* ref = nullptr;
  const char* why = "git-zipnn: object map";
  const int e = tip ? git_reference_create_matching(&ref, repo, kObjectMapRef, &commit, 1, &*tip, why)
                    : git_reference_create(&ref, repo, kObjectMapRef, &commit, 0, why);
  if (e == 0) {
    git_reference_free(ref);
    return true;
  }
  if (e != GIT_EMODIFIED && e != GIT_EEXISTS) return GitError("cannot update " + std::string(kObjectMapRef));
  git_error_clear();
  return false;
}

Status SetRef(git_repository* repo, const std::string& name, const git_oid& to, const std::optional<git_oid>& was) {
  git_reference* ref = nullptr;
  const char* why = "git-zipnn: object map";
  const int e = was ? git_reference_create_matching(&ref, repo, name.c_str(), &to, 1, &*was, why)
                    : git_reference_create(&ref, repo, name.c_str(), &to, 0, why);
  if (e < 0) return GitError("cannot update " + name);
  git_reference_free(ref);
  return OkStatus();
}

}  // namespace

Result<MapLines> ReadObjectMap() {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  MapLines lines;
  std::vector<std::string> refs = {kObjectMapRef};
  git_reference_iterator* raw = nullptr;
  if (git_reference_iterator_glob_new(&raw, repo.get(), "refs/zipnn/remotes/*") < 0) {
    return GitError("cannot list the object maps of the remotes");
  }
  RefIterPtr it(raw);
  for (const char* name = nullptr; git_reference_next_name(&name, it.get()) == 0;) {
    const std::string ref = name;
    if (ref.size() > 8 && ref.compare(ref.size() - 8, 8, "/objects") == 0) refs.push_back(ref);
  }
  git_error_clear();
  for (const std::string& ref : refs) {
    if (std::optional<git_oid> tip = Tip(repo.get(), ref)) {
      ZIPNN_RETURN_IF_ERROR(ReadLines(repo.get(), *tip, ref, lines));
    }
  }
  return lines;
}

Status AddToObjectMap(const MapLines& lines) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    ZIPNN_ASSIGN_OR_RETURN(bool written, CommitLines(repo.get(), lines, std::nullopt));
    if (written) return OkStatus();
  }
  return Status(StatusCode::kGit, std::string(kObjectMapRef) + " kept moving while git-zipnn wrote to it");
}

Status MergeObjectMap(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const std::optional<git_oid> theirs = Tip(repo.get(), RemoteRef(remote));
    const std::optional<git_oid> ours = Tip(repo.get(), kObjectMapRef);
    if (!theirs) return OkStatus();
    if (ours && (git_oid_equal(&*ours, &*theirs) || git_graph_descendant_of(repo.get(), &*ours, &*theirs) == 1)) {
      return OkStatus();  // ours holds theirs already
    }
    if (!ours || git_graph_descendant_of(repo.get(), &*theirs, &*ours) == 1) {
      const Status moved = SetRef(repo.get(), kObjectMapRef, *theirs, ours);
      if (moved.ok()) return OkStatus();
      git_error_clear();
      continue;
    }
    MapLines lines;
    ZIPNN_RETURN_IF_ERROR(ReadLines(repo.get(), *theirs, RemoteRef(remote), lines));
    ZIPNN_ASSIGN_OR_RETURN(bool written, CommitLines(repo.get(), lines, theirs));
    if (written) return OkStatus();
  }
  return Status(StatusCode::kGit, std::string(kObjectMapRef) + " kept moving while git-zipnn merged into it");
}

Status FetchObjectMap(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                                             "+" + std::string(kObjectMapRef) + ":" + RemoteRef(remote)}));
  if (run.exit_code == 0) return OkStatus();
  if (run.err.find("couldn't find remote ref") != std::string::npos) return OkStatus();  // none there yet
  while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
  return Status(StatusCode::kGit, "cannot fetch the object map from " + remote + ": " + run.err);
}

Status PushObjectMap(const std::string& remote) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    ZIPNN_RETURN_IF_ERROR(MergeObjectMap(remote));
    ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
    const std::optional<git_oid> ours = Tip(repo.get(), kObjectMapRef);
    if (!ours) return OkStatus();  // nothing to send
    const std::optional<git_oid> theirs = Tip(repo.get(), RemoteRef(remote));
    if (theirs && git_oid_equal(&*ours, &*theirs)) return OkStatus();
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &*ours);
    ZIPNN_ASSIGN_OR_RETURN(GitRun run,
                           RunGit({"push", "--quiet", "--no-verify", remote, std::string(hex) + ":" + kObjectMapRef}));
    if (run.exit_code == 0) {
      // What the remote holds now, for the next merge.
      git_reference* ref = nullptr;
      if (git_reference_create(&ref, repo.get(), RemoteRef(remote).c_str(), &*ours, 1, "git-zipnn: object map") < 0) {
        return GitError("cannot update " + RemoteRef(remote));
      }
      git_reference_free(ref);
      return OkStatus();
    }
    // Another push landed first: merge what it brought, and try again.
    if (run.err.find("rejected") == std::string::npos && run.err.find("fetch first") == std::string::npos) {
      while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
      return Status(StatusCode::kGit, "cannot push the object map to " + remote + ": " + run.err);
    }
    ZIPNN_RETURN_IF_ERROR(FetchObjectMap(remote));
  }
  return Status(StatusCode::kGit, "cannot push the object map to " + remote + ": other pushes kept landing first");
}

}  // namespace zipnn::git
