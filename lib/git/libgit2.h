// What the files of lib/git that use libgit2 share: owning pointers to
// its objects, its one-time set-up, its errors as a Status, and object ids
// both ways. Private to lib/git.
#pragma once

#include <git2.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "lib/base/status.h"
#include "lib/git/repository.h"

namespace zipnn::git {

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
using ConfigPtr = std::unique_ptr<git_config, Freer<git_config_free>>;

inline void InitOnce() {
  static std::once_flag once;
  // Never shut down: handles may outlive any caller's scope.
  std::call_once(once, [] { git_libgit2_init(); });
}

// A Git status: what was being done, and libgit2's own words.
inline Status GitError(const std::string& doing) {
  const git_error* e = git_error_last();
  const char* message = e != nullptr && e->message != nullptr ? e->message : "libgit2 failed";
  return Status(StatusCode::kGit, doing + ": " + message);
}

// The repository around the folder `start` (".": the current one).
inline Result<RepoPtr> OpenAround(const std::string& start) {
  InitOnce();
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, start.c_str(), 0, nullptr) < 0) {
    return GitError("cannot open the git repository around " + start);
  }
  return RepoPtr(raw);
}

inline Oid FromGit(const git_oid* id) {
  Oid o;
  std::memcpy(o.bytes.data(), id->id, o.bytes.size());
  return o;
}

inline git_oid ToGit(const Oid& o) {
  git_oid id;
  std::memcpy(id.id, o.bytes.data(), o.bytes.size());
  return id;
}

}  // namespace zipnn::git
