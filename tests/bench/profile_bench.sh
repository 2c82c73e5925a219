#!/usr/bin/env bash
# Where the codec's time goes: `perf record -g` (Debian's linux-perf) of
# each of its four paths on one thread, reading from and writing to a
# file under /tmp with a warm page cache, and the share of the samples
# that each kind of work takes.
#
#   bash tests/bench/profile_bench.sh BASE TARGET
#
# BASE and TARGET are two checkpoints of one run (TARGET a later save,
# coded as a delta against BASE). The kinds are told apart by symbol
# (profile_groups.py says which); the kernel's samples by the system call
# they ran under: reading (read, pread), writing (write, pwrite, fsync and
# what it waits for), and everything else (page faults, scheduling).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
base=$(realpath "${1:?usage: profile_bench.sh BASE TARGET}")
target=$(realpath "${2:?usage: profile_bench.sh BASE TARGET}")
bin=$(command -v "${GIT_ZIPNN:-git-zipnn}")
command -v perf >/dev/null || { echo "needs perf (Debian's linux-perf)" >&2; exit 1; }
work=$(mktemp -d /tmp/profile-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$bin" compress -q -f "$target" -o "$work/standalone"
"$bin" compress -q -f "$target" --base "$base" -o "$work/delta"
cat "$base" "$target" "$work/standalone" "$work/delta" >/dev/null  # a warm page cache

profile() {  # profile NAME ARGS...: one run under perf, its shares printed as a row
  local name=$1
  shift
  sync  # the writes of the run before are not this one's
  perf record -q -g -o "$work/perf.data" -- "$bin" "$@" -T1 -o "$work/out" >/dev/null 2>&1
  perf report -i "$work/perf.data" --stdio --no-children -g none --percent-limit 0 \
    --sort parent,dso,sym --parent '__x64_sys_(p?read64|read|p?write64|write|fsync|fdatasync)\b' 2>/dev/null |
    python3 "$here/profile_groups.py" "$name"
  rm -f "$work/perf.data" "$work/out"
}

python3 "$here/profile_groups.py" --header
profile "compress, standalone" compress -q "$target"
profile "decompress, standalone" decompress "$work/standalone"
profile "compress, delta" compress -q "$target" --base "$base"
profile "decompress, delta" decompress "$work/delta" --base "$base"
