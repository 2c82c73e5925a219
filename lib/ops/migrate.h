// The use case of `git zipnn migrate import / export`: history written
// again with checkpoints stored by git-zipnn (from plain git blobs or Git
// LFS pointers), or back to Git LFS. git's fast-export and fast-import do
// the rewriting (lib/git/rewrite.h); this says what each chosen file
// becomes. Every version is read verified (a blob against its git id, an
// LFS object against its SHA-256, a git-zipnn version against its content
// id) before anything is written in its place, and refs move only once
// the whole new history is written.
//
// In three steps, so that the command can speak between them:
// ReadMigration checks and reads what to rewrite (nothing is written; a
// dry run stops there, with ListChosen); Import or Export writes the new
// history; CheckOutAgain then checks out the files of the branch checked
// out here. Import stores through a Clean the caller gives (the clean
// filter, filters/checkpoint_filter.h, which this layer sits below).
// cmd/migrate.cc parses and prints.
//
// Thread-compatible; one migrate at a time per repository (git's ref
// updates refuse a second one's stale refs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/repository.h"
#include "lib/git/rewrite.h"
#include "lib/git/setup.h"
#include "lib/store/store.h"

namespace zipnn::ops {

// The parsed command line.
struct MigrateRequest {
  std::vector<std::string> include;  // patterns (one to an entry); empty: those .gitattributes gives the other side
  std::vector<std::string> exclude;
  std::vector<std::string> refs;  // revisions to rewrite; empty: the current branch
  bool everything = false;        // every local branch and tag
  bool dry_run = false;
};

// What is to be rewritten, checked and read: nothing is written yet.
struct Migration {
  git::Driver to;
  std::vector<std::string> include, exclude;
  std::vector<std::string> revs;  // as fast-export takes them
  git::HistoryRewrite rewrite;
};

// Says a sentence to the user while the migration is read (a stopped run
// finished, a branch left out), before anything is written.
using Say = std::function<void(const std::string& sentence)>;

// Plans the migration to `to` and reads the history it rewrites. Unless a
// dry run: a run stopped before it checked out the files of the branch it
// moved is finished first, and the work tree must hold no uncommitted
// change, and the filter the files go to must be installed. For an
// import, every Git LFS object the chosen files name must be here.
Result<Migration> ReadMigration(git::Repository& git_repo, const MigrateRequest& request, git::Driver to,
                                const Say& say);

// What a dry run lists: each chosen path with its versions and the bytes
// of the checkpoints they hold.
struct ChosenPath {
  std::string path;
  size_t versions = 0;
  uint64_t bytes = 0;
};
struct Chosen {
  std::vector<ChosenPath> paths;
  size_t distinct = 0;  // distinct checkpoints (blobs)
  std::string refs;     // the revisions, or "every branch and tag"
};
Result<Chosen> ListChosen(const git::Repository& git_repo, const Migration& migration);

struct Migrated {
  git::Rewritten done;    // the commits, old and new; the refs moved; the notes copied
  size_t stored = 0;      // checkpoints written to the other side
  size_t versions = 0;    // the versions of the chosen paths
  size_t paths = 0;       // the chosen paths
  bool from_lfs = false;  // some came from Git LFS (its copies may be pruned)
  // When a commit changed: branches only a remote-tracking branch names,
  // which were not rewritten.
  std::vector<std::string> remote_only;
  // When every branch moved now names what a remote-tracking branch of
  // the same name names (an export that gave back the history as it was
  // pushed): those remote-tracking branches ("origin/main"); else empty.
  std::vector<std::string> as_on_remote;
  bool Unchanged() const;  // every commit is as it was
};

// Writes the history again with each chosen checkpoint (a plain blob, or
// a Git LFS object read verified) stored in `store` as git's clean filter
// stores it (Cleaner, clean.h); a pointer of ours stays as it is.
Result<Migrated> Import(git::Repository& git_repo, Migration& migration, const store::Store& store);
// Writes the history again with each chosen git-zipnn version restored
// from `store` (fetching what is missing) into Git LFS's folder.
Result<Migrated> Export(git::Repository& git_repo, Migration& migration, const store::Store& store);
// Checks out again the files of the branch checked out here, once the
// rewrite moved it (git::FinishCheckout).
Status CheckOutAgain(const git::Repository& git_repo);

// --- The pieces, for tests ---

// The revisions to rewrite and the branches --everything leaves out
// because another worktree has them checked out (its index would commit
// the old files back); `head_branch` gives the branch checked out here
// (none when HEAD is detached), asked only when no revision is given.
struct Revisions {
  std::vector<std::string> revs;
  std::vector<git::CheckedOut> left_out;
};
Result<Revisions> RevisionsFor(const MigrateRequest& request, const std::vector<git::CheckedOut>& elsewhere,
                               const std::function<Result<std::optional<std::string>>()>& head_branch);

// The patterns to migrate when none are given: those .gitattributes gives
// to the filter being left (git-zipnn's or Git LFS's, to migrate to
// `to`); an error when it gives none.
Result<std::vector<std::string>> DefaultPatterns(git::Driver to, const std::vector<std::string>& zipnn,
                                                 const std::vector<std::string>& lfs);

// " (did you mean '<pattern>'?)" for an `include` pattern close to one of
// `known` (the patterns .gitattributes has), else "".
std::string PatternHint(const std::vector<std::string>& include, std::vector<std::string> known);

// The branches only a remote-tracking ref names among `refs` (full ref
// names): a push --force --all would leave them as they were.
std::vector<std::string> RemoteOnly(const std::vector<std::string>& refs);

}  // namespace zipnn::ops
