#!/usr/bin/env bash
# Time and peak memory of `git zipnn analyze` on a real trajectory, for the
# first half of its checkpoints and for all of them: the time should grow
# with the number of checkpoints and the memory should not.
#
#   bash tests/bench/analyze_bench.sh [TRAJECTORY_DIR] [THREADS...]
#
# Without a folder, a 20-checkpoint bf16 GPT of 25.5M parameters (50 MB per
# checkpoint) is trained under /tmp/zipnn-analyze-bench (about 20 minutes
# of CPU). Threads default to 1 and 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
dir=${1:-/tmp/zipnn-analyze-bench/gpt-bf16}
shift || true
threads=("${@:-1 2}")
if [ ! -d "$dir" ]; then
  bash .ci/deps python3-torch python3-sklearn
  /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 --dtype bf16 --steps 40 --every 2 --out "$dir"
fi
bazel build //cmd:git-zipnn >/dev/null 2>&1 || bazel build //cmd:git-zipnn
bin=$PWD/bazel-bin/cmd/git-zipnn
mapfile -t files < <(ls "$dir"/*.safetensors)
half=$(( ${#files[@]} / 2 ))
bytes=$(cat "${files[@]}" | wc -c)
echo "# ${#files[@]} checkpoints in $dir, $((bytes / 1000000)) MB in all; medians of 3 runs"
printf '%-12s %8s %12s %10s %12s\n' checkpoints threads seconds "MB/s" "peak RSS MB"
for t in ${threads[@]}; do
  for n in "$half" "${#files[@]}"; do
    runs=()
    rss=0
    for _ in 1 2 3; do
      out=$( { /usr/bin/time -f '%e %M' "$bin" analyze -T "$t" "${files[@]:0:$n}" >/dev/null; } 2>&1 | tail -1)
      runs+=("${out% *}")
      rss=$(( ${out#* } > rss ? ${out#* } : rss ))
    done
    median=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
    part=$(cat "${files[@]:0:$n}" | wc -c)
    printf '%-12s %8s %12s %10.0f %12.1f\n' "$n" "$t" "$median" "$(echo "$part / 1000000 / $median" | bc -l)" \
      "$(echo "$rss / 1024" | bc -l)"
  done
done
