#!/usr/bin/env bash
# How long each version of a series takes to restore beside its newest (a
# base): issue 55 asks that the slowest restore within 3x a base. One
# shard of about GIB GiB overwritten in place, SAVES saves of a real bf16
# GPT run tiled to the size (make_trajectory.py, tile_checkpoint.py, as in
# shard_adds_bench.sh), each committed under the default policy; then
# `git zipnn restore --rev <commit> -o <file in /dev/shm>` of every version,
# in turn, the median of RUNS runs of each.
#
#   bash tests/bench/chain_restore_bench.sh [--gib G] [--saves S] [RUNS]
#
# Defaults: 1 GiB, 8 saves (a whole stretch of the default base_interval
# and the base after it), 3 runs; about 12 GB of disk under /tmp and
# 5 GB of /dev/shm.
set -euo pipefail
cd "$(dirname "$0")/../.."
gib=1 saves=8
while [ $# -gt 0 ]; do
  case $1 in
    --gib) gib=$2; shift 2 ;;
    --saves) saves=$2; shift 2 ;;
    *) break ;;
  esac
done
runs=${1:-3}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
src=/tmp/zipnn-shard-bench/gpt-seed1  # shared with shard_adds_bench.sh
steps=$((saves * 10))
last=$(printf '%s/step-%06d.safetensors' "$src" "$steps")
[ -f "$last" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype bf16 --seed 1 \
  --steps "$steps" --every 10 --out "$src" >/dev/null
size=$(stat -L -c %s "$last")
tiles=$(((gib * 1073741824 + size / 2) / size))
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
work=$(mktemp -d /tmp/zipnn-chain-restore-XXXXXX)
out=$(mktemp -u /dev/shm/zipnn-chain-restore-XXXXXX)
trap 'rm -rf "$work" "$out"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
(cd "$work" && git zipnn install >/dev/null)  # outside any repository: no hooks in the project
git init -q "$work/repo"
cd "$work/repo"
git zipnn track model.safetensors >/dev/null
git add .gitattributes && git commit -qm setup
for ((s = 1; s <= saves; s++)); do
  tiled=$(printf '%s/tiled-%d/step-%06d.safetensors' "$src" "$tiles" $((s * 10)))
  mkdir -p "$(dirname "$tiled")"
  [ -f "$tiled" ] || python3 "$OLDPWD/tests/bench/tile_checkpoint.py" \
    "$(printf '%s/step-%06d.safetensors' "$src" $((s * 10)))" "$tiles" "$tiled" >/dev/null
  cp "$tiled" model.safetensors
  git add model.safetensors
  git commit -qm "save $s"
done
git zipnn log model.safetensors

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A wall cpu
for ((r = 0; r < runs; r++)); do
  for ((s = 1; s <= saves; s++)); do
    sync
    /usr/bin/time -o "$work/time" -f '%e %U %S' git zipnn restore --rev "HEAD~$((saves - s))" -f -o "$out" \
      model.safetensors >/dev/null
    wall[$s]+="$(awk '{ print $1 }' "$work/time") "
    cpu[$s]+="$(awk '{ print $2 + $3 }' "$work/time") "
  done
done
printf '%d saves of one %d GiB shard, restore of each, median of %d runs\n' "$saves" "$gib" "$runs"
printf '%-6s %9s %9s %9s %9s\n' save "wall s" "x newest" "cpu s" "x newest"
nw=$(tr ' ' '\n' <<<"${wall[$saves]}" | grep . | median)
nc=$(tr ' ' '\n' <<<"${cpu[$saves]}" | grep . | median)
for ((s = 1; s <= saves; s++)); do
  w=$(tr ' ' '\n' <<<"${wall[$s]}" | grep . | median)
  c=$(tr ' ' '\n' <<<"${cpu[$s]}" | grep . | median)
  awk -v s="$s" -v w="$w" -v c="$c" -v nw="$nw" -v nc="$nc" \
    'BEGIN { printf "%-6s %9.2f %8.2fx %9.2f %8.2fx\n", s, w, w / nw, c, c / nc }'
done
