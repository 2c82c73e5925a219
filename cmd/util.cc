#include "cmd/util.h"

#include <cstdio>
#include <utility>

#include "lib/base/file.h"
#include "lib/git/checkpoint_at.h"
#include "lib/git/discover.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) { return WriteAll(1, data, n, "standard output"); }

void AddThreadsOption(CLI::App& sub, int& threads) {
  sub.add_option("--threads,-T", threads, "Worker threads (default: all cores; output is identical for any count)")
      ->check(CLI::Range(0, 4096));
}

Result<store::Repository> OpenRepository() {
  ZIPNN_ASSIGN_OR_RETURN(git::OpenedRepository opened, git::OpenStoreRepository());
  for (const std::string& warning : opened.warnings) {
    std::fprintf(stderr, "git-zipnn: warning: %s (ignored; the defaults hold)\n", warning.c_str());
  }
  return std::move(opened.repo);
}

Result<formats::Checkpoint> CheckpointInFile(const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(file));
  if (!pointer) return formats::Checkpoint::Open(file);
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  return git::CheckpointOf(repo, *pointer, file);
}

Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint) {
  if (checkpoint.ok()) ZIPNN_RETURN_IF_ERROR(checkpoint->ReadLayout());
  return checkpoint;
}

void WarnDamaged(const FoundPointers& found) {
  for (const auto& [place, why] : found.damaged) {
    std::fprintf(stderr, "warning: %s:%s: %s\n", place.rev.c_str(), place.path.c_str(), why.c_str());
  }
}

void PrintTransfer(bool push, const remote::Transferred& done, bool quiet) {
  if (quiet) return;
  const remote::TransferReport& r = done.report;
  std::fprintf(stderr, "git-zipnn: %s %zu object%s (%s) %s %s; %zu of %zu were %s already\n",
               push ? "pushed" : "fetched", r.moved, r.moved == 1 ? "" : "s", HumanBytes(r.bytes).c_str(),
               push ? "to" : "from", done.where.c_str(), r.present, r.needed, push ? "there" : "here");
}

}  // namespace zipnn::cmd
