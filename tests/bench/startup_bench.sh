#!/usr/bin/env bash
# How long a git-zipnn command takes to start and end when it does nearly
# nothing: `git-zipnn --version`, the floor every hook, filter start and
# `git zipnn status` pays (issue 55: within 5 ms). Beside it `git-lfs
# version` and `git --version`, and /bin/true, whose time is the shell's
# own cost of starting a program; the figures are given with and without it.
#
#   bash tests/bench/startup_bench.sh [CALLS] [RUNS]
#
# Each run starts each program CALLS times in a loop (default 200); the
# figure is the median over RUNS runs (default 5) of the time per call.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-200}
runs=${2:-5}
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# per_call PROGRAM ARGS...: the median time of one call, in ms.
per_call() {
  local r i start end
  for ((r = 0; r < runs; r++)); do
    start=$(date +%s%N)
    for ((i = 0; i < calls; i++)); do "$@" >/dev/null; done
    end=$(date +%s%N)
    echo "$(((end - start) / calls))"
  done | median | awk '{ printf "%.2f", $1 / 1e6 }'
}
floor=$(per_call /bin/true)
printf '%-24s %10s %14s\n' program "ms a call" "less the shell"
row() {
  local name=$1 ms
  shift
  ms=$(per_call "$@")
  awk -v n="$name" -v ms="$ms" -v f="$floor" 'BEGIN { printf "%-24s %10.2f %14.2f\n", n, ms, ms - f }'
}
row "/bin/true" /bin/true
row "git-zipnn --version" "$bin/git-zipnn" --version
row "git --version" git --version
command -v git-lfs >/dev/null && row "git-lfs version" git-lfs version
