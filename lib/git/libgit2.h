// What the files of lib/git that use libgit2 share: owning pointers to
// its objects, its one-time set-up, its errors as a Status, and object ids
// both ways. Private to lib/git.
#pragma once

#include <git2.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <algorithm>
#include <thread>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "lib/base/lazy_library.h"
#include "lib/base/status.h"
#include "lib/git/repository.h"

namespace zipnn::git {

// libgit2 is loaded when lib/git first calls it (lib/base/lazy_library.h):
// each function it calls, here under libgit2's own name.
inline constexpr char kLibgit2[] = "libgit2.so." LIBGIT2_SOVERSION;
ZIPNN_LAZY(kLibgit2, git_blob_create_from_buffer)
ZIPNN_LAZY(kLibgit2, git_blob_free)
ZIPNN_LAZY(kLibgit2, git_blob_lookup)
ZIPNN_LAZY(kLibgit2, git_blob_rawcontent)
ZIPNN_LAZY(kLibgit2, git_blob_rawsize)
ZIPNN_LAZY(kLibgit2, git_buf_dispose)
ZIPNN_LAZY(kLibgit2, git_commit_author)
ZIPNN_LAZY(kLibgit2, git_commit_create)
ZIPNN_LAZY(kLibgit2, git_commit_free)
ZIPNN_LAZY(kLibgit2, git_commit_lookup)
ZIPNN_LAZY(kLibgit2, git_commit_parent_id)
ZIPNN_LAZY(kLibgit2, git_commit_parentcount)
ZIPNN_LAZY(kLibgit2, git_commit_summary)
ZIPNN_LAZY(kLibgit2, git_commit_time)
ZIPNN_LAZY(kLibgit2, git_commit_tree)
ZIPNN_LAZY(kLibgit2, git_config_free)
ZIPNN_LAZY(kLibgit2, git_config_get_string_buf)
ZIPNN_LAZY(kLibgit2, git_config_iterator_free)
ZIPNN_LAZY(kLibgit2, git_config_iterator_glob_new)
ZIPNN_LAZY(kLibgit2, git_config_next)
ZIPNN_LAZY(kLibgit2, git_config_parse_bool)
ZIPNN_LAZY(kLibgit2, git_error_clear)
ZIPNN_LAZY(kLibgit2, git_error_last)
ZIPNN_LAZY(kLibgit2, git_index_entrycount)
ZIPNN_LAZY(kLibgit2, git_index_free)
ZIPNN_LAZY(kLibgit2, git_index_get_byindex)
ZIPNN_LAZY(kLibgit2, git_index_open)
ZIPNN_LAZY(kLibgit2, git_index_read)
ZIPNN_LAZY(kLibgit2, git_libgit2_init)
ZIPNN_LAZY(kLibgit2, git_object_free)
ZIPNN_LAZY(kLibgit2, git_object_id)
ZIPNN_LAZY(kLibgit2, git_object_peel)
ZIPNN_LAZY(kLibgit2, git_object_type)
ZIPNN_LAZY(kLibgit2, git_object_type2string)
ZIPNN_LAZY(kLibgit2, git_odb_exists_ext)
ZIPNN_LAZY(kLibgit2, git_odb_free)
ZIPNN_LAZY(kLibgit2, git_odb_hash)
ZIPNN_LAZY(kLibgit2, git_odb_read_header)
ZIPNN_LAZY(kLibgit2, git_odb_refresh)
ZIPNN_LAZY(kLibgit2, git_oid_equal)
ZIPNN_LAZY(kLibgit2, git_oid_fromstr)
ZIPNN_LAZY(kLibgit2, git_oid_fromstrn)
ZIPNN_LAZY(kLibgit2, git_oid_is_zero)
ZIPNN_LAZY(kLibgit2, git_oid_tostr)
ZIPNN_LAZY(kLibgit2, git_reference_create)
ZIPNN_LAZY(kLibgit2, git_reference_create_matching)
ZIPNN_LAZY(kLibgit2, git_reference_delete)
ZIPNN_LAZY(kLibgit2, git_reference_free)
ZIPNN_LAZY(kLibgit2, git_reference_iterator_free)
ZIPNN_LAZY(kLibgit2, git_reference_iterator_glob_new)
ZIPNN_LAZY(kLibgit2, git_reference_iterator_new)
ZIPNN_LAZY(kLibgit2, git_reference_lookup)
ZIPNN_LAZY(kLibgit2, git_reference_name)
ZIPNN_LAZY(kLibgit2, git_reference_name_is_valid)
ZIPNN_LAZY(kLibgit2, git_reference_name_to_id)
ZIPNN_LAZY(kLibgit2, git_reference_next)
ZIPNN_LAZY(kLibgit2, git_reference_next_name)
ZIPNN_LAZY(kLibgit2, git_reference_peel)
ZIPNN_LAZY(kLibgit2, git_reference_resolve)
ZIPNN_LAZY(kLibgit2, git_reference_shorthand)
ZIPNN_LAZY(kLibgit2, git_reference_target)
ZIPNN_LAZY(kLibgit2, git_reflog_entry_byindex)
ZIPNN_LAZY(kLibgit2, git_reflog_entry_id_new)
ZIPNN_LAZY(kLibgit2, git_reflog_entry_id_old)
ZIPNN_LAZY(kLibgit2, git_reflog_entrycount)
ZIPNN_LAZY(kLibgit2, git_reflog_free)
ZIPNN_LAZY(kLibgit2, git_reflog_read)
ZIPNN_LAZY(kLibgit2, git_repository_commondir)
ZIPNN_LAZY(kLibgit2, git_repository_config_snapshot)
ZIPNN_LAZY(kLibgit2, git_repository_free)
ZIPNN_LAZY(kLibgit2, git_repository_odb)
ZIPNN_LAZY(kLibgit2, git_repository_open_bare)
ZIPNN_LAZY(kLibgit2, git_repository_open_ext)
ZIPNN_LAZY(kLibgit2, git_repository_path)
ZIPNN_LAZY(kLibgit2, git_repository_workdir)
ZIPNN_LAZY(kLibgit2, git_revparse_single)
ZIPNN_LAZY(kLibgit2, git_signature_free)
ZIPNN_LAZY(kLibgit2, git_signature_new)
ZIPNN_LAZY(kLibgit2, git_tag_free)
ZIPNN_LAZY(kLibgit2, git_tag_lookup)
ZIPNN_LAZY(kLibgit2, git_tag_target_id)
ZIPNN_LAZY(kLibgit2, git_tree_create_updated)
ZIPNN_LAZY(kLibgit2, git_tree_entry_byindex)
ZIPNN_LAZY(kLibgit2, git_tree_entry_bypath)
ZIPNN_LAZY(kLibgit2, git_tree_entry_filemode)
ZIPNN_LAZY(kLibgit2, git_tree_entry_free)
ZIPNN_LAZY(kLibgit2, git_tree_entry_id)
ZIPNN_LAZY(kLibgit2, git_tree_entry_name)
ZIPNN_LAZY(kLibgit2, git_tree_entry_type)
ZIPNN_LAZY(kLibgit2, git_tree_entrycount)
ZIPNN_LAZY(kLibgit2, git_tree_free)
ZIPNN_LAZY(kLibgit2, git_tree_id)
ZIPNN_LAZY(kLibgit2, git_tree_lookup)
ZIPNN_LAZY(kLibgit2, git_treebuilder_free)
ZIPNN_LAZY(kLibgit2, git_treebuilder_insert)
ZIPNN_LAZY(kLibgit2, git_treebuilder_new)
ZIPNN_LAZY(kLibgit2, git_treebuilder_write)

// Owning pointers to libgit2 objects, each freed by its own function.
template <const auto& Free>
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


// Whether writing a ref failed only because another writer got there
// first: it moved (GIT_EMODIFIED, GIT_EEXISTS) or holds its lock now
// (GIT_ELOCKED, as the ranks of one job writing at once do). Such a
// write is tried again from what the ref holds then, after
// PauseBeforeRetry.
inline bool LostRefRace(int error) {
  return error == GIT_EMODIFIED || error == GIT_EEXISTS || error == GIT_ELOCKED;
}
// A few milliseconds, more with each attempt (to a tenth of a second),
// and apart from process to process, so that writers that met once
// rarely meet again.
inline void PauseBeforeRetry(int attempt) {
  const int apart = static_cast<int>((std::hash<std::thread::id>()(std::this_thread::get_id()) + ::getpid()) % 11);
  const int ms = (2 << std::min(attempt, 6)) + apart;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace zipnn::git
