#include "lib/git/union_ref.h"

#include <cstdint>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/git/libgit2.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

using SignaturePtr = std::unique_ptr<git_signature, Freer<git_signature_free>>;

// How often a write starts again when the ref moved under it, and a push
// when another landed first.
constexpr int kAttempts = 5;

std::string RemoteRef(const UnionRef& u, const std::string& remote) {
  return "refs/zipnn/remotes/" + remote + "/" + u.name;
}

// The file of key `key` in the tree.
std::string PathOf(const std::string& key) { return key.substr(0, 2) + "/" + key; }

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

Result<std::string> TextOf(git_repository* repo, const git_oid& blob_id, const std::string& ref) {
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &blob_id) < 0) return GitError("cannot read " + ref);
  BlobPtr blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<size_t>(git_blob_rawsize(blob.get())));
}

// Calls `visit(key, blob id)` for every file of the ref's commit `tip`.
template <typename Visit>
Status VisitFiles(git_repository* repo, const git_oid& tip, const std::string& ref, Visit visit) {
  ZIPNN_ASSIGN_OR_RETURN(TreePtr tree, TreeOf(repo, tip, ref));
  for (size_t i = 0; i < git_tree_entrycount(tree.get()); ++i) {
    const git_tree_entry* folder = git_tree_entry_byindex(tree.get(), i);
    if (git_tree_entry_type(folder) != GIT_OBJECT_TREE) continue;
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, repo, git_tree_entry_id(folder)) < 0) return GitError("cannot read " + ref);
    TreePtr sub(raw);
    for (size_t j = 0; j < git_tree_entrycount(sub.get()); ++j) {
      const git_tree_entry* file = git_tree_entry_byindex(sub.get(), j);
      if (git_tree_entry_type(file) == GIT_OBJECT_BLOB) {
        ZIPNN_RETURN_IF_ERROR(visit(std::string(git_tree_entry_name(file)), *git_tree_entry_id(file)));
      }
    }
  }
  return OkStatus();
}

// Adds the files of the ref's commit `tip` to `into`, merged with those
// it holds.
Status ReadFiles(git_repository* repo, const UnionRef& u, const git_oid& tip, const std::string& ref, RefFiles& into) {
  return VisitFiles(repo, tip, ref, [&](const std::string& key, const git_oid& blob) -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string text, TextOf(repo, blob, ref));
    auto [it, added] = into.emplace(key, text);
    if (!added) it->second = u.merge(it->second, text);
    return OkStatus();
  });
}

using BuilderPtr = std::unique_ptr<git_treebuilder, Freer<git_treebuilder_free>>;

// A tree of the blobs `files` (by "<folder>/<name>"), for a ref that has
// none yet. Built from the leaves up, so that no empty tree is written (git
// fsck would call it dangling).
Result<git_oid> NewTree(git_repository* repo, const std::map<std::string, git_oid>& files) {
  std::map<std::string, BuilderPtr> folders;
  for (const auto& [path, blob] : files) {
    const size_t slash = path.find('/');
    BuilderPtr& folder = folders[path.substr(0, slash)];
    if (!folder) {
      git_treebuilder* raw = nullptr;
      if (git_treebuilder_new(&raw, repo, nullptr) < 0) return GitError("cannot start a tree");
      folder.reset(raw);
    }
    if (git_treebuilder_insert(nullptr, folder.get(), path.substr(slash + 1).c_str(), &blob, GIT_FILEMODE_BLOB) < 0) {
      return GitError("cannot add to a tree");
    }
  }
  git_treebuilder* raw = nullptr;
  if (git_treebuilder_new(&raw, repo, nullptr) < 0) return GitError("cannot start a tree");
  BuilderPtr top(raw);
  for (const auto& [name, folder] : folders) {
    git_oid id;
    if (git_treebuilder_write(&id, folder.get()) < 0 ||
        git_treebuilder_insert(nullptr, top.get(), name.c_str(), &id, GIT_FILEMODE_TREE) < 0) {
      return GitError("cannot write a tree");
    }
  }
  git_oid id;
  if (git_treebuilder_write(&id, top.get()) < 0) return GitError("cannot write a tree");
  return id;
}

// Writes a commit of the local ref that holds its files and `files`, and
// moves the ref to it unless another process moved it first (then false).
// Nothing is written when no file changes. A commit holds all the ref
// holds, so it has no parent: what it replaces is merged into it, and a
// history would only clutter `git log --all`.
Result<bool> CommitFiles(git_repository* repo, const UnionRef& u, const RefFiles& files) {
  const std::optional<git_oid> tip = Tip(repo, u.ref);
  TreePtr tree;  // null for a ref that has none yet
  if (tip) {
    ZIPNN_ASSIGN_OR_RETURN(tree, TreeOf(repo, *tip, u.ref));
  }
  std::vector<std::string> paths;
  std::vector<git_oid> blobs;
  for (const auto& [key, text] : files) {
    if (key.size() < 3 || key.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return InvalidArgument("\"" + key + "\" is not a key of " + u.what);
    }
    const std::string path = PathOf(key);
    std::string merged = text;
    git_tree_entry* raw = nullptr;
    if (tree && git_tree_entry_bypath(&raw, tree.get(), path.c_str()) == 0) {
      TreeEntryPtr entry(raw);
      ZIPNN_ASSIGN_OR_RETURN(const std::string have, TextOf(repo, *git_tree_entry_id(entry.get()), u.ref));
      merged = u.merge(have, text);
      if (merged == have) continue;
    }
    git_error_clear();
    git_oid blob;
    if (git_blob_create_from_buffer(&blob, repo, merged.data(), merged.size()) < 0) {
      return GitError("cannot write to " + std::string(u.ref));
    }
    paths.push_back(path);
    blobs.push_back(blob);
  }
  if (paths.empty()) return true;
  git_oid tree_id;
  if (tree) {
    std::vector<git_tree_update> updates(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      updates[i] = git_tree_update{GIT_TREE_UPDATE_UPSERT, blobs[i], GIT_FILEMODE_BLOB, paths[i].c_str()};
    }
    if (git_tree_create_updated(&tree_id, repo, tree.get(), updates.size(), updates.data()) < 0) {
      return GitError("cannot write the tree of " + std::string(u.ref));
    }
  } else {
    std::map<std::string, git_oid> new_files;
    for (size_t i = 0; i < paths.size(); ++i) new_files[paths[i]] = blobs[i];
    ZIPNN_ASSIGN_OR_RETURN(tree_id, NewTree(repo, new_files));
  }
  git_tree* tree_raw = nullptr;
  if (git_tree_lookup(&tree_raw, repo, &tree_id) < 0) return GitError("cannot read a tree just written");
  TreePtr new_tree(tree_raw);
  git_signature* signed_raw = nullptr;
  if (git_signature_new(&signed_raw, "git-zipnn", "git-zipnn", static_cast<git_time_t>(std::time(nullptr)), 0) < 0) {
    return GitError("cannot make a signature");
  }
  SignaturePtr signature(signed_raw);
  const std::string message = "git-zipnn: " + std::string(u.what) + "\n";
  git_oid commit;
  if (git_commit_create(&commit, repo, nullptr, signature.get(), signature.get(), nullptr, message.c_str(),
                        new_tree.get(), 0, nullptr) < 0) {
    return GitError("cannot write a commit of " + std::string(u.ref));
  }
  git_reference* ref = nullptr;
  const std::string why = "git-zipnn: " + std::string(u.what);
  const int e = tip ? git_reference_create_matching(&ref, repo, u.ref, &commit, 1, &*tip, why.c_str())
                    : git_reference_create(&ref, repo, u.ref, &commit, 0, why.c_str());
  if (e == 0) {
    git_reference_free(ref);
    return true;
  }
  if (!LostRefRace(e)) return GitError("cannot update " + std::string(u.ref));
  git_error_clear();
  return false;
}

Status SetRef(git_repository* repo, const std::string& name, const git_oid& to, const std::optional<git_oid>& was) {
  git_reference* ref = nullptr;
  const char* why = "git-zipnn: a remote's copy";
  const int e = was ? git_reference_create_matching(&ref, repo, name.c_str(), &to, 1, &*was, why)
                    : git_reference_create(&ref, repo, name.c_str(), &to, 0, why);
  if (e < 0) return GitError("cannot update " + name);
  git_reference_free(ref);
  return OkStatus();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

bool CanTrack(const std::string& remote) {
  InitOnce();
  int valid = 0;
  const std::string ref = "refs/zipnn/remotes/" + remote + "/x";
  return !remote.empty() && remote.find(':') == std::string::npos &&
         git_reference_name_is_valid(&valid, ref.c_str()) == 0 && valid == 1;
}

Result<RefFiles> ReadUnionRef(const UnionRef& u, bool remotes) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  std::vector<std::string> refs = {u.ref};
  if (remotes) {
    git_reference_iterator* raw = nullptr;
    if (git_reference_iterator_glob_new(&raw, repo.get(), "refs/zipnn/remotes/*") < 0) {
      return GitError("cannot list the remotes' copies of " + std::string(u.ref));
    }
    RefIterPtr it(raw);
    const std::string tail = "/" + std::string(u.name);
    for (const char* name = nullptr; git_reference_next_name(&name, it.get()) == 0;) {
      const std::string ref = name;
      if (ref.size() > tail.size() && ref.compare(ref.size() - tail.size(), tail.size(), tail) == 0) {
        refs.push_back(ref);
      }
    }
    git_error_clear();
  }
  RefFiles files;
  for (const std::string& ref : refs) {
    if (std::optional<git_oid> tip = Tip(repo.get(), ref)) {
      ZIPNN_RETURN_IF_ERROR(ReadFiles(repo.get(), u, *tip, ref, files));
    }
  }
  return files;
}

Result<std::map<std::string, std::string>> ListRemoteCopy(const UnionRef& u, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  std::map<std::string, std::string> blobs;
  const std::string ref = RemoteRef(u, remote);
  const std::optional<git_oid> tip = Tip(repo.get(), ref);
  if (!tip) return blobs;
  ZIPNN_RETURN_IF_ERROR(VisitFiles(repo.get(), *tip, ref, [&](const std::string& key, const git_oid& blob) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &blob);
    blobs[key] = hex;
    return OkStatus();
  }));
  return blobs;
}

Result<std::optional<std::string>> ReadBlob(const std::string& hex, size_t limit) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  git_oid id;
  if (git_oid_fromstr(&id, hex.c_str()) < 0) return GitError("\"" + hex + "\" is not an object id");
  git_odb* raw = nullptr;
  if (git_repository_odb(&raw, repo.get()) < 0) return GitError("cannot open git's objects");
  OdbPtr odb(raw);
  size_t size = 0;
  git_object_t type;
  if (git_odb_read_header(&size, &type, odb.get(), &id) < 0) return GitError("cannot read blob " + hex);
  if (type != GIT_OBJECT_BLOB || size > limit) return std::optional<std::string>();
  ZIPNN_ASSIGN_OR_RETURN(std::string text, TextOf(repo.get(), id, hex));
  return std::optional<std::string>(std::move(text));
}

namespace {

// When a ref could not be moved: its lock file, if one is there, which a
// killed git or git-zipnn may have left.
std::string LockHint(git_repository* repo, const char* ref) {
  const std::string lock = std::string(git_repository_commondir(repo)) + ref + ".lock";
  if (!FileExists(lock)) return "";
  return " (" + lock +
         " is there: another git command holds the ref, or one that was stopped left it; remove it "
         "once none runs)";
}

}  // namespace

Status AddToUnionRef(const UnionRef& u, const RefFiles& files) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  // Every rank of a job may add at once: more tries than a push needs.
  for (int attempt = 0; attempt < 8 * kAttempts; ++attempt) {
    ZIPNN_ASSIGN_OR_RETURN(bool written, CommitFiles(repo.get(), u, files));
    if (written) return OkStatus();
    PauseBeforeRetry(attempt);
  }
  return Status(StatusCode::kGit,
                std::string(u.ref) + " kept moving while git-zipnn wrote to it" + LockHint(repo.get(), u.ref));
}

Status MergeUnionRef(const UnionRef& u, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const std::optional<git_oid> theirs = Tip(repo.get(), RemoteRef(u, remote));
    const std::optional<git_oid> ours = Tip(repo.get(), u.ref);
    if (!theirs) return OkStatus();
    if (ours && git_oid_equal(&*ours, &*theirs)) return OkStatus();
    if (!ours) {
      if (SetRef(repo.get(), u.ref, *theirs, ours).ok()) return OkStatus();
      git_error_clear();
      continue;
    }
    RefFiles files;
    ZIPNN_RETURN_IF_ERROR(ReadFiles(repo.get(), u, *theirs, RemoteRef(u, remote), files));
    ZIPNN_ASSIGN_OR_RETURN(bool written, CommitFiles(repo.get(), u, files));
    if (!written) continue;
    // Theirs held all of ours: take their commit, so that the next push
    // has nothing to send.
    const std::optional<git_oid> now = Tip(repo.get(), u.ref);
    ZIPNN_ASSIGN_OR_RETURN(TreePtr mine, TreeOf(repo.get(), *now, u.ref));
    ZIPNN_ASSIGN_OR_RETURN(TreePtr other, TreeOf(repo.get(), *theirs, RemoteRef(u, remote)));
    if (git_oid_equal(git_tree_id(mine.get()), git_tree_id(other.get()))) {
      if (!SetRef(repo.get(), u.ref, *theirs, now).ok()) git_error_clear();
    }
    return OkStatus();
  }
  return Status(StatusCode::kGit,
                std::string(u.ref) + " kept moving while git-zipnn merged into it" + LockHint(repo.get(), u.ref));
}

// What this process fetched: "<ref> <remote>", with the number (below)
// of the last fetch that brought it.
std::mutex fetched_mu;
std::map<std::string, uint64_t>& Fetched() {
  static std::map<std::string, uint64_t>* fetched = new std::map<std::string, uint64_t>;
  return *fetched;
}
// Fetches take turns, one at a time: two fetches of one ref at once fail
// on its lock (a checkout fetches the listings while it fetches the
// object map). They are numbered from 1 as they end.
std::mutex one_fetch;
uint64_t fetches_done = 0;  // guarded by fetched_mu

bool FetchedHere(const UnionRef& u, const std::string& remote) {
  std::lock_guard<std::mutex> lock(fetched_mu);
  return Fetched().count(std::string(u.ref) + " " + remote) > 0;
}

Status FetchUnionRefs(const std::vector<const UnionRef*>& refs, const std::string& remote, bool prompt) {
  if (!CanTrack(remote)) return InvalidArgument("\"" + remote + "\" is not the name of a remote");
  uint64_t asked_at = 0;
  {
    std::lock_guard<std::mutex> lock(fetched_mu);
    asked_at = fetches_done;
  }
  std::unique_lock<std::mutex> turn(one_fetch);
  // A ref that a fetch ending after this call began brought meanwhile
  // (the map a clone's first fetch takes beside its object, with the
  // listings) is not fetched again: it is what this call would have got
  // had it asked a moment sooner. A push that merged from it and finds
  // the remote moved on since is refused by its lease and merges again.
  std::vector<const UnionRef*> wanted;
  {
    std::lock_guard<std::mutex> lock(fetched_mu);
    for (const UnionRef* u : refs) {
      const auto it = Fetched().find(std::string(u->ref) + " " + remote);
      if (it == Fetched().end() || it->second <= asked_at) wanted.push_back(u);
    }
  }
  if (wanted.empty()) return OkStatus();
  // Patterns, which match nothing rather than fail on a ref the remote
  // lacks.
  // No maintenance after it: git would run `maintenance run --auto` (a
  // tenth of a second) in the middle of a push or a checkout.
  std::vector<std::string> args = {"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance",
                                   remote};
  for (const UnionRef* u : wanted) args.push_back("+" + std::string(u->ref) + "*:" + RemoteRef(*u, remote) + "*");
  // Where none of them is here yet (a clone's first fetch), nothing here
  // can be common to them, and the round of "have" lines git would send
  // first costs the server's answer to it for nothing. Protocol version 0
  // then takes one request fewer over HTTP than version 2 (the refs come
  // with the first answer, not from a request of their own), and the few
  // objects are kept as the pack they came in rather than written one
  // file each: 0.217 -> 0.140 s on the tests' Git LFS server.
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
  bool any_here = false;
  for (const UnionRef* u : wanted) {
    any_here = any_here || Tip(repo.get(), u->ref) || Tip(repo.get(), RemoteRef(*u, remote));
  }
  if (!any_here) {
    args.insert(args.begin(),
                {"-c", "fetch.negotiationAlgorithm=noop", "-c", "protocol.version=0", "-c", "fetch.unpackLimit=1"});
  }
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, prompt ? RunGit(args) : RunGitWith("GIT_TERMINAL_PROMPT=0", args, ""));
  if (run.exit_code == 0) {
    std::lock_guard<std::mutex> lock(fetched_mu);
    ++fetches_done;
    for (const UnionRef* u : wanted) Fetched()[std::string(u->ref) + " " + remote] = fetches_done;
    return OkStatus();
  }
  return Status(StatusCode::kGit, "cannot fetch git-zipnn's refs from " + remote + ": " + Trimmed(run.err));
}

namespace {

// What this process pushed, or found there as it last saw it: "<ref>
// <remote>". With what it fetched (Fetched), what it knows the remote
// holds without asking again.
std::set<std::string>& Pushed() {
  static std::set<std::string>* pushed = new std::set<std::string>;
  return *pushed;
}

// Whether this process pushed or fetched each of `refs` from `remote`.
bool SeenThisRun(const std::vector<const UnionRef*>& refs, const std::string& remote) {
  std::lock_guard<std::mutex> lock(fetched_mu);
  for (const UnionRef* u : refs) {
    const std::string key = std::string(u->ref) + " " + remote;
    if (Pushed().count(key) == 0 && Fetched().count(key) == 0) return false;
  }
  return true;
}

// Whether the remote holds each of `refs` where this clone last saw it
// (its remote-tracking ref); those it does not (a remote given another
// URL since, or made again) lose their remote-tracking refs here, so that
// the push that follows sends them as to a remote that lacks them. One
// `git ls-remote`; asked only when nothing here differs from what this
// clone last saw there, so a push that sends new entries pays nothing.
Result<bool> TrackedAsThere(git_repository* repo, const std::vector<const UnionRef*>& refs, const std::string& remote) {
  std::vector<std::string> args = {"ls-remote", "--refs", remote};
  for (const UnionRef* u : refs) args.push_back(u->ref);
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGitWith("GIT_TERMINAL_PROMPT=0", args, ""));
  if (run.exit_code != 0) {
    return Status(StatusCode::kGit, "cannot list git-zipnn's refs on " + remote + ": " + Trimmed(run.err));
  }
  std::map<std::string, std::string> there;  // ref -> commit
  std::istringstream lines(run.out);
  for (std::string oid, name; lines >> oid >> name;) there[name] = oid;
  bool all = true;
  for (const UnionRef* u : refs) {
    const std::optional<git_oid> seen = Tip(repo, RemoteRef(*u, remote));
    if (!seen) continue;
    char hex[GIT_OID_HEXSZ + 1] = "";
    git_oid_tostr(hex, sizeof hex, &*seen);
    const auto it = there.find(u->ref);
    if (it != there.end() && it->second == hex) continue;
    all = false;
    git_reference* ref = nullptr;
    if (git_reference_lookup(&ref, repo, RemoteRef(*u, remote).c_str()) == 0) {
      const int deleted = git_reference_delete(ref);
      git_reference_free(ref);
      if (deleted < 0) return GitError("cannot forget " + RemoteRef(*u, remote));
    }
  }
  return all;
}

}  // namespace

Status PushUnionRefs(const std::vector<const UnionRef*>& refs, const std::string& remote) {
  if (!CanTrack(remote)) return InvalidArgument("\"" + remote + "\" is not the name of a remote");
  bool looked = false;  // whether the remote was asked what it holds
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    for (const UnionRef* u : refs) ZIPNN_RETURN_IF_ERROR(MergeUnionRef(*u, remote));
    ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround("."));
    std::vector<std::string> args = {"push", "--quiet", "--no-verify", remote};
    std::vector<std::pair<const UnionRef*, git_oid>> sent;
    std::vector<const UnionRef*> held;  // the refs this clone has (others have nothing to send or check)
    for (const UnionRef* u : refs) {
      const std::optional<git_oid> ours = Tip(repo.get(), u->ref);
      if (!ours) continue;  // nothing to send
      held.push_back(u);
      const std::optional<git_oid> theirs = Tip(repo.get(), RemoteRef(*u, remote));
      if (theirs && git_oid_equal(&*ours, &*theirs)) continue;
      // Replaces the remote's commit only if it is still the one merged
      // into ours (none: the remote must have none).
      char hex[GIT_OID_HEXSZ + 1] = "";
      if (theirs) git_oid_tostr(hex, sizeof hex, &*theirs);
      args.insert(args.begin() + 3, "--force-with-lease=" + std::string(u->ref) + ":" + hex);
      git_oid_tostr(hex, sizeof hex, &*ours);
      args.push_back(std::string(hex) + ":" + u->ref);
      sent.emplace_back(u, *ours);
    }
    if (sent.empty()) {
      // As this clone last saw the remote, it holds all: so it should,
      // unless it is another remote now (not when this process just
      // pushed or fetched them: the listings after the map, in a push).
      if (looked || held.empty() || SeenThisRun(held, remote)) return OkStatus();
      looked = true;
      ZIPNN_ASSIGN_OR_RETURN(const bool there, TrackedAsThere(repo.get(), held, remote));
      if (!there) continue;
      std::lock_guard<std::mutex> lock(fetched_mu);
      for (const UnionRef* u : held) Pushed().insert(std::string(u->ref) + " " + remote);
      return OkStatus();
    }
    ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit(args));
    if (run.exit_code == 0) {
      {
        std::lock_guard<std::mutex> lock(fetched_mu);
        for (const auto& pushed : sent) Pushed().insert(std::string(pushed.first->ref) + " " + remote);
      }
      // What the remote holds now, for the next merge.
      for (const auto& [u, ours] : sent) {
        git_reference* ref = nullptr;
        const std::string name = RemoteRef(*u, remote);
        if (git_reference_create(&ref, repo.get(), name.c_str(), &ours, 1, "git-zipnn: pushed") < 0) {
          return GitError("cannot update " + name);
        }
        git_reference_free(ref);
      }
      return OkStatus();
    }
    // Another push landed first, or what this clone last saw there is
    // not there (another URL, a remote made again): forget what
    // disagrees, merge what the remote holds, and try again.
    // "[remote rejected]" is the server refusing the refs (a hook, a
    // protected namespace, permissions), which no retry changes, unless it
    // could not lock a ref another push moved meanwhile ("cannot lock
    // ref", "failed to update ref"): that, "[rejected]" and "stale info"
    // are a race.
    const bool lost_lock = run.err.find("cannot lock ref") != std::string::npos ||
                           run.err.find("failed to update ref") != std::string::npos;
    const bool refused = run.err.find("[remote rejected]") != std::string::npos && !lost_lock;
    const bool raced =
        !refused && (run.err.find("rejected") != std::string::npos || run.err.find("stale info") != std::string::npos);
    if (!raced) {
      return Status(StatusCode::kGit, "cannot push git-zipnn's refs to " + remote + ": " + Trimmed(run.err));
    }
    looked = true;
    ZIPNN_RETURN_IF_ERROR(TrackedAsThere(repo.get(), refs, remote).status());
    ZIPNN_RETURN_IF_ERROR(FetchUnionRefs(refs, remote));
  }
  return Status(StatusCode::kGit, "cannot push git-zipnn's refs to " + remote + ": other pushes kept landing first");
}

std::set<std::string> LineSet(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.insert(line);
  }
  return lines;
}

std::string LineSetText(const std::set<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

std::string UnionOfLines(const std::string& ours, const std::string& theirs) {
  std::set<std::string> all = LineSet(ours);
  for (const std::string& line : LineSet(theirs)) all.insert(line);
  return LineSetText(all);
}

}  // namespace zipnn::git
