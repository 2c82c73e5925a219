#!/usr/bin/env bash
# XOR, difference and chosen deltas (delta_transform_bench) on trajectories
# of the shared generator: a GPT (AdamW) and a CNN (SGD) trained on CPU
# with Debian's torch, in fp32, bf16 and fp16, unless a folder of
# trajectories is given.
#
#   bash tests/bench/delta_transform_bench.sh [TRAJECTORY_ROOT]
#
# TRAJECTORY_ROOT holds <family>-<dtype>/step-*.safetensors folders;
# without it they are made under /tmp/zipnn-transform-bench (about ten
# minutes of CPU training on two cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-/tmp/zipnn-transform-bench}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
runs=${RUNS:-3}
if [ $# -eq 0 ]; then
  bash .ci/deps python3-torch python3-sklearn
  mkdir -p "$root"
  for dtype in fp32 bf16 fp16; do
    [ -d "$root/gpt-$dtype" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 \
      --dtype "$dtype" --steps 100 --every 20 --out "$root/gpt-$dtype" >/dev/null
    [ -d "$root/cnn-$dtype" ] || /usr/bin/python3 "$maker" --family cnn --width 512 \
      --dtype "$dtype" --steps 200 --every 40 --out "$root/cnn-$dtype" >/dev/null
  done
fi
bazel build //tests/bench:delta_transform_bench >/dev/null 2>&1 || bazel build //tests/bench:delta_transform_bench
bench=bazel-bin/tests/bench/delta_transform_bench
for family in gpt cnn; do
  for dtype in fp32 bf16 fp16; do
    dir=$root/$family-$dtype
    [ -d "$dir" ] || continue
    echo "## $family-$dtype"
    "$bench" --runs "$runs" "$dir"/step-*.safetensors
    echo
  done
done
