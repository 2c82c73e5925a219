#!/usr/bin/env bash
# Every row of issue 55's table in one run: git-zipnn beside Git LFS at
# the sizes our users save, each row from the benchmark that measures it
# (see each script's head for how):
#
#   adds          shard_adds_bench.sh: `git add` of each save of SHARDS
#                 shards of GIB GiB, wall and CPU against Git LFS, and the
#                 scratch each add held
#   transfers     transfer_bench.sh at 100 and 25 MB/s a connection (the
#                 saves tiled to MB megabytes), and fp32 with AdamW state
#                 at 100 MB/s: push, clone, old checkout, a cut push, the
#                 bytes stored and fetched, git's peak memory in the clone
#   host limit    limit_bench.sh: a push of an MB save to a server taking
#                 objects of at most 512 MiB
#   resume        resume_bench.sh: a push and a fetch of a GIB GiB object
#                 killed at 40%, and what the second try moved
#   restore       chain_restore_bench.sh: every version of 8 saves of one
#                 GIB GiB shard against the newest
#   startup       startup_bench.sh: `git-zipnn --version`
#
#   bash tests/bench/scale_bench.sh [--shards N] [--gib G] [--mb MB] [--runs R]
#
# Defaults: the issue's sizes (4 shards of 1 GiB, 3 saves; 1000 MB saves
# for transfers), 3 runs where a script takes runs: about an hour on 2
# cores once the saves are made (20 minutes with --runs 1), and about
# 40 GB of disk under /tmp. `--shards 1 --gib 1 --mb 100 --runs 1`
# gives every row at smaller sizes. Each script's whole output is
# kept in a folder named at the end; its table is printed as it comes.
set -euo pipefail
cd "$(dirname "$0")/../.."
shards=4 gib=1 mb=1000 runs=3
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --gib) gib=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: scale_bench.sh [--shards N] [--gib G] [--mb MB] [--runs R]" >&2; exit 2 ;;
  esac
done
if [ -z "${GIT_ZIPNN_BIN_DIR:-}" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  export GIT_ZIPNN_BIN_DIR=$PWD/bazel-bin/cmd
fi
logs=$(mktemp -d /tmp/zipnn-scale-bench-XXXXXX)

# row TITLE LOG FIRST_LINE COMMAND...: runs the benchmark into LOG, then
# prints TITLE and the log from the first line matching FIRST_LINE (its
# table) on.
row() {
  local title=$1 log=$logs/$2 first=$3
  shift 3
  echo "## $title"
  echo "($*)"
  if ! "$@" >"$log" 2>&1; then
    echo "FAILED: the last lines of $log:"
    tail -5 "$log"
    return 1
  fi
  awk -v first="$first" '$0 ~ first { on = 1 } on' "$log"
  echo
}

status=0
row "git add of each save" adds '^[0-9]+ shard' \
  bash tests/bench/shard_adds_bench.sh --shards "$shards" --gib "$gib" --saves 3 "$runs" || status=1
for rate in 100 25; do
  row "push, clone and old checkout at $rate MB/s a connection, bf16" "transfer-$rate" 'saves of .* a connection' \
    bash tests/bench/transfer_bench.sh --rate "$rate" --mb "$mb" "$runs" || status=1
done
row "the same at 100 MB/s, fp32 with AdamW state" transfer-fp32 'saves of .* a connection' \
  bash tests/bench/transfer_bench.sh --rate 100 --kind fp32-adam "$runs" || status=1
row "a push to a host taking objects of at most 512 MiB" limit 'to a server taking' \
  bash tests/bench/limit_bench.sh --mb "$mb" --limit 512 || status=1
row "a push and a fetch killed at 40%, then again" resume '^ +object' \
  bash tests/bench/resume_bench.sh $((gib * 1024)) 40 || status=1
row "restore of each version of a series" restore 'restore of each' \
  bash tests/bench/chain_restore_bench.sh --gib "$gib" "$runs" || status=1
row "start-up" startup '^program' bash tests/bench/startup_bench.sh || status=1
echo "every script's whole output: $logs"
exit $status
