#!/usr/bin/env bash
# Two threads against one, for the codec's four paths, and the ceiling the
# machine allows for a second core.
#
#   bash tests/bench/threads_bench.sh BASE TARGET [PAIRS]
#
# BASE and TARGET are two checkpoints of one run (TARGET a later save,
# coded as a delta against BASE). Each path runs PAIRS times (default 9)
# as a pair: once with -T1, once with -T2, in turn, so that the load of
# this shared machine falls on both alike. A row gives the median time of
# each and the median of the pairs' ratios. The output is /dev/null (our
# work alone) and then a file on /dev/shm (the kernel's cost of fresh
# page-cache pages added).
#
# The ceiling: two independent -T1 decompresses (and compresses) started
# at once, against one alone, in pairs; when they take c times as long,
# no program gets more than 2/c from the second core for this work.
set -euo pipefail
base=$(realpath "${1:?usage: threads_bench.sh BASE TARGET [PAIRS]}")
target=$(realpath "${2:?usage: threads_bench.sh BASE TARGET [PAIRS]}")
pairs=${3:-9}
bin=${GIT_ZIPNN:-git-zipnn}
work=$(mktemp -d /dev/shm/threads-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$bin" compress -q -f "$target" -o "$work/standalone"
"$bin" compress -q -f "$target" --base "$base" -o "$work/delta"

# seconds COMMAND...: the wall time of one run, printed.
seconds() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000))e-6
}
# median NUMBER...
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# row NAME OUTPUT ARGS...: ARGS with -T1 and -T2 in turn, writing OUTPUT.
row() {
  local name=$1 out=$2 one=() two=() ratio=()
  shift 2
  for _ in $(seq "$pairs"); do
    local a b
    a=$(seconds "$bin" "$@" -T1 -f -o "$out")
    b=$(seconds "$bin" "$@" -T2 -f -o "$out")
    one+=("$a") two+=("$b") ratio+=("$(awk "BEGIN { print $a / $b }")")
  done
  rm -f "$work/out"
  printf '| %s | %s | %.3f s | %.3f s | %.2fx |\n' "$name" "$( [ "$out" = /dev/null ] && echo /dev/null || echo 'file on tmpfs')" \
    "$(median "${one[@]}")" "$(median "${two[@]}")" "$(median "${ratio[@]}")"
}

echo "| path | output | 1 thread | 2 threads | speed-up |"
echo "|---|---|---|---|---|"
for out in /dev/null "$work/out"; do
  row "compress, standalone" "$out" compress -q "$target"
  row "decompress, standalone" "$out" decompress "$work/standalone"
  row "compress, delta" "$out" compress -q "$target" --base "$base"
  row "decompress, delta" "$out" decompress "$work/delta" --base "$base"
done

# ceiling NAME ARGS...: two -T1 runs at once against one alone.
ceiling() {
  local name=$1 ratio=()
  shift
  for _ in $(seq "$pairs"); do
    local alone together start end
    alone=$(seconds "$bin" "$@" -T1 -f -o /dev/null)
    start=$(date +%s%N)
    "$bin" "$@" -T1 -f -o /dev/null >/dev/null &
    "$bin" "$@" -T1 -f -o /dev/null >/dev/null
    wait
    end=$(date +%s%N)
    together=$(((end - start) / 1000))e-6
    ratio+=("$(awk "BEGIN { print $together / $alone }")")
  done
  local c
  c=$(median "${ratio[@]}")
  printf '%s: two -T1 at once take %.2fx one alone; a ceiling of %.2fx for two threads\n' "$name" "$c" \
    "$(awk "BEGIN { print 2 / $c }")"
}
ceiling "decompress, standalone" decompress "$work/standalone"
ceiling "compress, standalone" compress -q "$target"
