#!/usr/bin/env bash
# `git add` of each save of a sharded checkpoint, git-zipnn beside Git
# LFS, save by save: the figure issue 55 asks to keep within 0.8x Git
# LFS's from the first save to the last, in wall time and in CPU time.
#
# Each save is SHARDS files model/model-0000k-of-0000N.safetensors of about
# GIB GiB each, written over the same paths at every save (the case where
# no earlier save is left in the work tree, so the base of a delta comes
# from the store). Shard k is a real bf16 GPT run of its own (seed k,
# make_trajectory.py), each save tiled by tile_checkpoint.py to the size:
# real weights and real deltas, and no two shards alike (a twin would be
# stored as a delta of the other). Every row is the median of RUNS runs,
# the tools taken in turn; `sync` before each add, so that no add pays for
# the writeback of the one before. CPU is user + system of `git add` and
# the filter it starts. Scratch is the most the add's temporary files
# (.git/zipnn/tmp) held at once, polled.
#
#   bash tests/bench/shard_adds_bench.sh [--shards N] [--gib G] [--saves S] [RUNS]
#
# Defaults: 1 shard of 1 GiB, 4 saves, 3 runs (about 15 GB of disk under
# /tmp and 10 minutes). The issue's table: --shards 4 --gib 1 --saves 3.
set -euo pipefail
cd "$(dirname "$0")/../.."
shards=1 gib=1 saves=4
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --gib) gib=$2; shift 2 ;;
    --saves) saves=$2; shift 2 ;;
    *) break ;;
  esac
done
runs=${1:-3}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
top=/tmp/zipnn-shard-bench
command -v git-lfs >/dev/null || bash .ci/deps git-lfs
steps=$((saves * 10))
declare -A tiled_dir  # shard -> its folder of tiled saves
for ((k = 1; k <= shards; k++)); do
  src=$top/gpt-seed$k
  last=$(printf '%s/step-%06d.safetensors' "$src" "$steps")
  [ -f "$last" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype bf16 --seed "$k" \
    --steps "$steps" --every 10 --out "$src" >/dev/null
  size=$(stat -L -c %s "$last")
  tiles=$(((gib * 1073741824 + size / 2) / size))
  tiled_dir[$k]=$src/tiled-$tiles
  for ((s = 1; s <= saves; s++)); do
    tiled=$(printf '%s/step-%06d.safetensors' "${tiled_dir[$k]}" $((s * 10)))
    mkdir -p "$(dirname "$tiled")"
    [ -f "$tiled" ] || python3 tests/bench/tile_checkpoint.py "$(printf '%s/step-%06d.safetensors' "$src" $((s * 10)))" \
      "$tiles" "$tiled" >/dev/null
  done
done
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build //cmd:git-zipnn >/dev/null 2>&1 || bazel build //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
work=$(mktemp -d /tmp/zipnn-shard-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
(cd "$work" && git zipnn install >/dev/null)  # outside any repository, so no hooks are written
git lfs install --skip-repo >/dev/null

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A wall cpu scratch  # "<save> <tool>" -> one figure per run
# What the add's scratch holds now: git-zipnn's tmp folder (the input it
# spools, objects on their way into the store) and Git LFS's.
scratch_bytes() { { du -sb .git/zipnn/tmp .git/lfs/tmp 2>/dev/null || true; } | awk '{ n += $1 } END { printf "%.0f", n }'; }
one_run() {                  # one_run TOOL: a new repository, every save added and committed
  local tool=$1 repo=$work/$1 s k out pid peak now
  rm -rf "$repo"
  git init -q "$repo"
  cd "$repo"
  if [ "$tool" = zipnn ]; then git zipnn track '*.safetensors' >/dev/null; else git lfs track '*.safetensors' >/dev/null; fi
  git add .gitattributes && git commit -qm setup
  mkdir model
  for ((s = 1; s <= saves; s++)); do
    for ((k = 1; k <= shards; k++)); do
      cp "$(printf '%s/step-%06d.safetensors' "${tiled_dir[$k]}" $((s * 10)))" \
        "$(printf 'model/model-%05d-of-%05d.safetensors' "$k" "$shards")"
    done
    sync
    /usr/bin/time -o "$work/time" -f '%e %U %S' git add model >/dev/null 2>&1 &
    pid=$! peak=0
    while kill -0 $pid 2>/dev/null; do
      now=$(scratch_bytes)
      [ "$now" -gt "$peak" ] && peak=$now
      sleep 0.1
    done
    wait $pid
    scratch["$s $tool"]+="$peak "
    out=$(tail -1 "$work/time")
    wall["$s $tool"]+="$(echo "$out" | awk '{ print $1 }') "
    cpu["$s $tool"]+="$(echo "$out" | awk '{ print $2 + $3 }') "
    git commit -qm "save $s"
  done
  cd "$work"
  rm -rf "$repo"
}
for ((r = 1; r <= runs; r++)); do
  one_run zipnn
  one_run lfs
done
printf '%d shard(s) of %d GiB, %d saves, median of %d runs\n' "$shards" "$gib" "$saves" "$runs"
printf '%-6s %10s %10s %8s   %10s %10s %8s   %14s\n' save "zipnn s" "lfs s" ratio "zipnn cpu" "lfs cpu" ratio \
  "zipnn scratch"
for ((s = 1; s <= saves; s++)); do
  zw=$(tr ' ' '\n' <<<"${wall["$s zipnn"]}" | grep . | median)
  lw=$(tr ' ' '\n' <<<"${wall["$s lfs"]}" | grep . | median)
  zc=$(tr ' ' '\n' <<<"${cpu["$s zipnn"]}" | grep . | median)
  lc=$(tr ' ' '\n' <<<"${cpu["$s lfs"]}" | grep . | median)
  zs=$(tr ' ' '\n' <<<"${scratch["$s zipnn"]}" | grep . | sort -g | tail -1)
  awk -v s="$s" -v zw="$zw" -v lw="$lw" -v zc="$zc" -v lc="$lc" -v zs="$zs" \
    'BEGIN { printf "%-6s %10.2f %10.2f %7.2fx   %10.2f %10.2f %7.2fx   %10.0f MiB\n", s, zw, lw, zw / lw, zc, lc, zc / lc, zs / 2^20 }'
done
echo "(scratch: the most git-zipnn's tmp folder held during the add, polled every 0.1 s, over all runs)"
