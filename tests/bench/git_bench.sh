#!/usr/bin/env bash
# Figures for the git integration on a real training trajectory: every
# checkpoint is committed as its own step-numbered file, one commit per
# checkpoint, under the default policy (.zipnn.yaml absent). Prints the
# stored bytes beside the raw sum and the sum of standalone objects, the
# time of `git add` per GB, and the time to restore the version with the
# deepest chain beside `cp` of the same file.
#
#   bash tests/bench/git_bench.sh [TRAJECTORY_DIR]
#
# Without a folder, a 20-checkpoint bf16 GPT run is trained under
# /tmp/zipnn-git-bench (about 15 minutes of CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
dir=${1:-/tmp/zipnn-git-bench/gpt-bf16}
if [ $# -eq 0 ] && [ ! -d "$dir" ]; then
  bash .ci/deps python3-torch python3-sklearn
  /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype bf16 --steps 200 --every 10 --out "$dir"
fi
bazel build //cmd:git-zipnn >/dev/null 2>&1 || bazel build //cmd:git-zipnn
bin=$PWD/bazel-bin/cmd
work=$(mktemp -d /tmp/zipnn-git-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git init -q "$work/repo"
cd "$work/repo"
git config user.email bench@example.com
git config user.name bench
git zipnn install --local >/dev/null
git zipnn track '*.safetensors' >/dev/null
git add .gitattributes && git commit -qm setup
mkdir run

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
files=("$dir"/step-*.safetensors)
raw=0 standalone=0 add_seconds=0
for f in "${files[@]}"; do
  name=run/$(basename "$f")
  cp "$f" "$name"
  start=$(now)
  git add "$name"
  add_seconds=$(calc "$add_seconds + $(now) - $start")
  git commit -qm "$(basename "$f")"
  raw=$((raw + $(stat -c %s "$f")))
  git zipnn compress -q -f "$f" -o "$work/standalone"
  standalone=$((standalone + $(stat -c %s "$work/standalone")))
done
stored=$(find .git/zipnn/objects -type f -printf '%s\n' | awk '{s += $1} END {print s}')
pct() { awk "BEGIN { printf \"%.2f\", 100 * $1 / $raw }"; }
echo "checkpoints         ${#files[@]} ($(basename "$dir"))"
echo "raw sum             $raw bytes"
echo "standalone objects  $standalone bytes ($(pct "$standalone")% of raw)"
echo "stored (policy)     $stored bytes ($(pct "$stored")% of raw, $(awk "BEGIN { printf \"%.2f\", 100 * $stored / $standalone }")% of standalone)"
echo "git add             $(printf '%.2f' "$add_seconds") s in all, $(calc "$add_seconds * 1000000000 / $raw") s per GB"

# The deepest chain: restore (to a file) against cp of the same bytes,
# the median of five runs each, page cache warm.
deepest=$(git zipnn log --json | python3 -c '
import json, sys
v = max(json.load(sys.stdin), key=lambda v: v["depth"])
print(v["path"], v["depth"])')
set -- $deepest
median() { sort -n | sed -n 3p; }
restore=$(for i in 1 2 3 4 5; do s=$(now); git zipnn restore "$1" -f -o "$work/out" >/dev/null; calc "$(now) - $s"; echo; done | median)
copy=$(for i in 1 2 3 4 5; do s=$(now); cp "$1" "$work/copy"; calc "$(now) - $s"; echo; done | median)
cmp "$work/out" "$1"
echo "restore, depth $2     $(printf '%.3f' "$restore") s ($1, median of 5)"
echo "cp of the same file   $(printf '%.3f' "$copy") s"
