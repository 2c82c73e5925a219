// git zipnn commit: commit what a training job just saved, from every
// rank of a distributed job at once (lib/ops/commit.h).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/ops/commit.h"

namespace zipnn::cmd {

namespace {

// A whole number from the environment variable `name`, when it is set.
Result<std::optional<int>> FromEnvironment(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::optional<int>();
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 20) {
    return InvalidArgument(std::string(name) + " is \"" + text + "\", not a rank or a count of ranks");
  }
  return std::optional<int>(static_cast<int>(value));
}

// What names this job among others in the same repository: torchrun's
// run id and its master's address, as every rank sees them alike.
std::string JobFromEnvironment() {
  std::string job;
  for (const char* name : {"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT"}) {
    const char* value = std::getenv(name);
    job += std::string(name) + "=" + (value ? value : "") + ";";
  }
  return job;
}

// The pointer list at `name` (a file, or - for standard input).
Result<std::string> ReadPointerList(const std::string& name) {
  constexpr size_t kLimit = size_t{256} << 20;  // 2.5 million files of a long path each
  const int fd = name == "-" ? 0 : ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("--pointers " + name + ": cannot be read");
  FdReader in(fd);
  Result<std::string> text = ReadUpTo(in, kLimit + 1);
  if (fd != 0) ::close(fd);
  if (!text.ok()) return Annotate(text.status(), "--pointers " + name);
  if (text->size() > kLimit) return InvalidArgument("--pointers " + name + " is larger than any pointer list");
  return text;
}

Status RunCommit(ops::CommitRequest request, std::optional<int64_t> step, std::optional<int> rank,
                 std::optional<int> world) {
  request.step = step;
  for (std::string& list : request.stored_elsewhere) {
    ZIPNN_ASSIGN_OR_RETURN(list, ReadPointerList(list));
  }
  // Ranks that store for a commit made elsewhere deal out the files of
  // this clone alone: torchrun's RANK counts every node's.
  if (!rank && !request.store_only && !request.follow_only) {
    ZIPNN_ASSIGN_OR_RETURN(rank, FromEnvironment("RANK"));
  }
  if (!world && !request.store_only && !request.follow_only) {
    ZIPNN_ASSIGN_OR_RETURN(world, FromEnvironment("WORLD_SIZE"));
  }
  // A WORLD_SIZE left in a shell, with no launcher's RANK beside it,
  // would make this process wait for ranks that never come.
  if (world && *world > 1 && !rank) {
    return InvalidArgument("WORLD_SIZE is " + std::to_string(*world) +
                           " but this process has no rank (RANK is unset and no --rank was given); outside a "
                           "distributed job, unset WORLD_SIZE or pass --world-size 1");
  }
  request.rank = rank.value_or(0);
  request.world_size = world.value_or(1);
  if (request.job.empty()) request.job = JobFromEnvironment();
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(ops::Committed done, ops::CommitSave(context, request));
  if (request.store_only) {
    ZIPNN_ASSIGN_OR_RETURN(const std::string list, ops::PointerListText(done.pointers));
    std::fputs(list.c_str(), stdout);
    std::fprintf(stderr, "git-zipnn commit: %zu file%s (%s) stored here and on the remote\n", done.stored.size(),
                 done.stored.size() == 1 ? "" : "s", HumanBytes(done.stored_bytes).c_str());
    return OkStatus();
  }
  if (request.follow_only) {
    std::printf("%s\n", done.commit.c_str());
    return OkStatus();
  }
  if (request.world_size > 1) {
    std::fprintf(stderr, "git-zipnn commit: rank %d has its %zu file%s (%s) in the store\n", request.rank,
                 done.stored.size(), done.stored.size() == 1 ? "" : "s", HumanBytes(done.stored_bytes).c_str());
  }
  if (done.commit.empty()) {
    // A try again after a failed push pushes what the first one committed.
    std::fprintf(stderr, "git-zipnn commit: nothing changed; no commit made%s\n",
                 done.pushed_to.empty() ? "" : ("; HEAD is on " + done.pushed_to).c_str());
  } else {
    std::printf("%s\n", done.commit.c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupCommit(CLI::App& sub) {
  auto request = std::make_shared<ops::CommitRequest>();
  auto step = std::make_shared<std::optional<int64_t>>();
  auto rank = std::make_shared<std::optional<int>>();
  auto world = std::make_shared<std::optional<int>>();
  sub.add_option("paths", request->paths, "Files or folders the job just saved (checkpoint-500/, model.safetensors)")
      ->required();
  sub.add_option("-m,--message", request->message,
                 "The commit message (default: \"checkpoint at step <step>\", else \"checkpoint <paths>\")");
  sub.add_option("--step", *step, "The training step of this save, for the default message");
  sub.add_option("--parent", request->parent,
                 "What a fine-tune started from (a checkpoint, or a folder holding one of the same name): the "
                 "first save of a series is stored as a delta of it when that pays");
  sub.add_flag("--push", request->push, "Then push the commit to the upstream remote (else origin); on a job, "
                                        "each rank sends its own objects first");
  sub.add_option("--rank", *rank,
                 "This process's rank in the job (default: $RANK; with --store-only, among the ranks of this "
                 "clone, default 0)");
  sub.add_option("--world-size", *world,
                 "How many ranks the job has (default: $WORLD_SIZE; 1: no job; with --store-only, the "
                 "ranks of this clone, default 1)");
  sub.add_option("--rank-file", request->rank_files,
                 "A file this rank wrote and stores itself (repeatable; default: its share of the paths' files)")
      ->allow_extra_args(false);
  sub.add_option("--job", request->job,
                 "What tells this job from others committing in the same repository (default: torchrun's "
                 "$TORCHELASTIC_RUN_ID, $MASTER_ADDR and $MASTER_PORT)");
  sub.add_flag("--store-only", request->store_only,
               "On a node whose clone no other node sees: store this rank's files and send their objects to the "
               "remote (needs --push), print \"<pointer><TAB><path>\" for each, commit nothing");
  sub.add_flag("--follow", request->follow_only,
               "On a node whose clone no other node sees, once another node committed: move this clone to the "
               "remote's branch as a fast forward would, this node's files kept and the others' written as "
               "pointers; store and commit nothing");
  sub.add_option("--pointers", request->stored_elsewhere,
                 "A file of the lines --store-only printed on other nodes (repeatable; - for stdin): commit those "
                 "files too, each as its pointer, once the remote holds it")
      ->allow_extra_args(false);
  sub.add_option("--timeout", request->timeout_seconds, "Seconds a rank waits for the others (default: 3600)")
      ->check(CLI::PositiveNumber);
  return [request, step, rank, world] { return RunCommit(*request, *step, *rank, *world); };
}

}  // namespace zipnn::cmd
