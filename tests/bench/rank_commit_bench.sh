#!/usr/bin/env bash
# `git zipnn commit` of a sharded save by every rank of a job at once,
# beside the same save committed by one process, and what rank 0's
# `git add` costs once the ranks have stored (clean only hashes a noted
# file) beside a clean that stores it again.
#
# Each save is RANKS shards out/checkpoint-<s>/model-0000k-of-0000N
# .safetensors of about MB MB, tiled by tile_checkpoint.py from the real
# bf16 CNN run of tests/data (shard k of save s from step file s+k), so
# consecutive saves differ as training made them. Two repositories get the
# same saves: one commits each with one process, the other with RANKS
# processes (RANK, WORLD_SIZE), each storing its own shard. Then, in each,
# `git add --renormalize` of the last save: through the notes the ranks
# left (their bytes hashed, nothing stored), and without notes (each file
# spooled, hashed and found stored). Medians of the saves after the first.
#
#   bash tests/bench/rank_commit_bench.sh [--ranks N] [--mb MB] [--saves S]
#
# On a machine of 2 cores the ranks share the cores one process already
# uses; the gain is where each rank has cores (and a link) of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=3 mb=200 saves=4
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --saves) saves=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks N] [--mb MB] [--saves S]" >&2; exit 2 ;;
  esac
done
source tests/bench/bench_env.sh
steps=("$PWD"/tests/data/cnn-bf16/*.safetensors)
tile=$PWD/tests/bench/tile_checkpoint.py
copies=$(( mb * 1000000 / $(stat -c %s "${steps[0]}") ))
for repo in alone ranks; do
  git init -q "$work/$repo"
  (cd "$work/$repo" && git zipnn track '*.safetensors' >/dev/null && git add .gitattributes &&
   git commit -qm track)
done
save_into() {  # save_into REPO S: writes save S's shards
  local dir=$work/$1/out/checkpoint-$2 k
  mkdir -p "$dir"
  for ((k = 0; k < ranks; k++)); do
    python3 "$tile" "${steps[$(( (k + $2) % ${#steps[@]} ))]}" "$copies" \
      "$dir/model-$(printf %05d $((k + 1)))-of-$(printf %05d "$ranks").safetensors"
  done
}
all_ranks() {  # all_ranks S: every rank commits save S at once
  local r pids=()
  for ((r = 0; r < ranks; r++)); do
    RANK=$r WORLD_SIZE=$ranks git zipnn commit --step "$1" "out/checkpoint-$1" >/dev/null 2>"$work/rank-$r.err" & pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || { cat "$work"/rank-*.err >&2; return 1; }; done
}
for ((s = 1; s <= saves; s++)); do
  save_into alone "$s"
  mkdir -p "$work/ranks/out" && cp -r "$work/alone/out/checkpoint-$s" "$work/ranks/out/"
  cd "$work/alone"
  timed "commit" "one process" git zipnn commit --step "$s" "out/checkpoint-$s" >/dev/null 2>&1
  cd "$work/ranks"
  timed "commit" "$ranks ranks" all_ranks "$s"
  cd - >/dev/null
  [ "$s" -gt 1 ] || took=()  # the first save stores bases: left out
done
last=out/checkpoint-$saves
cd "$work/ranks"
timed "add of the last save" "noted" git add --renormalize -- "$last"
rm -rf .git/zipnn/added
timed "add of the last save" "not noted" git add --renormalize -- "$last"
cd - >/dev/null
printf '%d shards of %s MB (%s MB a save), saves 2-%d\n' "$ranks" "$mb" "$((ranks * mb))" "$saves"
for row in "commit|one process|$ranks ranks" "add of the last save|noted|not noted"; do
  IFS='|' read -r name a b <<<"$row"
  ta=$(tr ' ' '\n' <<<"${took["$name $a"]}" | grep . | median)
  tb=$(tr ' ' '\n' <<<"${took["$name $b"]}" | grep . | median)
  printf '%-22s %-12s %7.2f s   %-12s %7.2f s   ratio %.2fx\n' "$name" "$a" "$ta" "$b" "$tb" \
    "$(awk "BEGIN { print $tb / $ta }")"
done
