#!/usr/bin/env bash
# Figures for the codec on real training trajectories: trains small models
# with Debian's torch (../shared/data/make_trajectory.py) unless a folder
# of trajectories is given, then runs codec_bench on each: every checkpoint
# standalone, and each one as a delta against the previous one (with the
# size of `zstd -19 --patch-from` beside it).
#
#   bash tests/bench/run_codec_bench.sh [TRAJECTORY_ROOT]
#
# TRAJECTORY_ROOT holds <name>-<dtype>/step-*.safetensors folders; without
# it they are made under /tmp/zipnn-bench (a few minutes of CPU training).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-/tmp/zipnn-bench}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
runs=${RUNS:-5}
if [ $# -eq 0 ]; then
  bash .ci/deps python3-torch python3-sklearn
  mkdir -p "$root"
  for dtype in bf16 fp32; do
    [ -d "$root/gpt-$dtype" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 \
      --dtype "$dtype" --steps 200 --every 20 --out "$root/gpt-$dtype"
    [ -d "$root/cnn-$dtype" ] || /usr/bin/python3 "$maker" --family cnn --width 512 \
      --dtype "$dtype" --steps 400 --every 40 --out "$root/cnn-$dtype"
  done
fi
bazel build //tests/bench:codec_bench >/dev/null 2>&1 || bazel build //tests/bench:codec_bench
bench=bazel-bin/tests/bench/codec_bench
for dir in "$root"/*-bf16 "$root"/*-fp32 "$root"/*-fp16; do
  [ -d "$dir" ] || continue
  dtype=${dir##*-}
  echo "## $(basename "$dir")"
  "$bench" --dtype "$dtype" --runs "$runs" "$dir"/step-*.safetensors
  "$bench" --dtype "$dtype" --runs "$runs" --delta --zstd-cli "$dir"/step-*.safetensors
  echo
done
