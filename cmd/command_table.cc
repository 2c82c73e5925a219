#include "cmd/command.h"

namespace zipnn::cmd {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"install", "Configure git to store tracked checkpoints with git-zipnn", &SetupInstall},
      {"uninstall", "Remove the git configuration install wrote", &SetupUninstall},
      {"track", "Track checkpoint files matching patterns (or list tracked patterns)", &SetupTrack},
      {"untrack", "Stop tracking patterns", &SetupUntrack},
      {"commit", "Commit what a training job just saved, storing each rank's files on that rank", &SetupCommit},
      {"status", "Tracked checkpoints not pushed, staged, changed, not added, or not in this store", &SetupStatus},
      {"log", "How each version of tracked checkpoints is stored (kind, chain, sizes)", &SetupLog},
      {"analyze", "How the weights moved over a trajectory, and what each coder and policy stores", &SetupAnalyze},
      {"diff", "What changed between two checkpoints, tensor by tensor (also git's diff driver)", &SetupDiff},
      {"ls-files", "Tracked checkpoints at a revision, with their ids and stored sizes", &SetupLsFiles},
      {"show", "One stored checkpoint: its chain of bases and its layout", &SetupShow},
      {"fsck", "Check that every checkpoint HEAD (or --all history) points at restores exactly", &SetupFsck},
      {"gc", "Remove stored objects nothing needs (keeps every base of a live delta)", &SetupGc},
      {"env", "What git-zipnn works with here: versions, store, filter, hook, remotes, the policy in force", &SetupEnv},
      {"du", "Bytes in the object store, in what git-zipnn keeps beside it, and in the work tree", &SetupDu},
      {"retain", "Keep the versions .zipnn.yaml's retention rules name exactly; thin or drop the rest", &SetupRetain},
      {"repack", "Rewrite stored checkpoints by the current policy (base interval, chain length)", &SetupRepack},
      {"restore", "Write a version of a tracked checkpoint straight to a file, verified", &SetupRestore},
      {"cat", "Write a stored version, or some of its tensors, to stdout or a file (raw, npy, safetensors)", &SetupCat},
      {"migrate", "Rewrite history: checkpoints in plain git or Git LFS into git-zipnn (import), or back (export)",
       &SetupMigrate},
      {"push", "Send the objects the pointers of refs need to a remote's object store", &SetupPush},
      {"fetch", "Get the objects the files of revisions need from a remote's object store", &SetupFetch},
      {"pull", "Fetch, then write the checkpoints where the work tree holds pointers", &SetupPull},
      {"compress", "Compress a checkpoint file into an object (standalone or a delta)", &SetupCompress},
      {"decompress", "Restore the exact original bytes of an object", &SetupDecompress},
      {"inspect", "Show an object's header, layout and the coders chosen per byte group", &SetupInspect},
      {"version", "Print the git-zipnn version and object format version", &SetupVersion},
      {"textconv", "Git diff helper: one line per tensor of a checkpoint (name, shape, hash, rms)", &SetupTextconv},
      {"pre-push", "Git hook: push the objects the commits being pushed need (install sets it)", &SetupPrePush},
      {"pre-commit", "Git hook: stop a commit that would put checkpoints staged whole into git (install sets it)",
       &SetupPreCommit},
      {"post-checkout", "Git hook: write the checkpoints too large for git's filter (install sets it)",
       &SetupWriteLeftOutside},
      {"post-merge", "Git hook: write the checkpoints too large for git's filter (install sets it)",
       &SetupWriteLeftOutside},
      {"serve-store", "Serve an object store on stdin/stdout (what an ssh remote runs on the far host)",
       &SetupServeStore},
      {"clean", "Git filter: checkpoint on stdin -> pointer on stdout (stores the object)", &SetupClean},
      {"smudge", "Git filter: pointer on stdin -> exact checkpoint bytes on stdout", &SetupSmudge},
      {"filter-process", "Git's long-running filter process (clean and smudge, protocol version 2)",
       &SetupFilterProcess},
  };
  return kCommands;
}

}  // namespace zipnn::cmd
