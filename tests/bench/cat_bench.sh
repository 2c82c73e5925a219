#!/usr/bin/env bash
# Reading one tensor of a version at the end of a chain of deltas, against
# restoring the whole file: the time and the peak memory of each.
#
#   bash tests/bench/cat_bench.sh DIR [RUNS]
#
# DIR holds the safetensors files of one run, in name order (the
# trajectories of make_trajectory.py, or tile_checkpoint.py's 1 GB-class
# tiles of them). They are committed to one path of a fresh repository
# with the default policy, and the version at the end of the deepest
# chain is read (under today's defaults, 3 deltas on a base; the newest
# is stored whole). Then, RUNS times (default 5) in turn:
#   restore  git zipnn restore model.safetensors --rev REV -o whole
#   cat      git zipnn cat REV:model.safetensors -t TENSOR -o part
# TENSOR is $TENSOR, or else the tensor nearest 4 MiB among those in the
# last quarter of the file. Both read a warm page cache. Prints medians.
set -euo pipefail
dir=$(cd "$1" && pwd)
runs=${2:-5}
work=$(mktemp -d /tmp/cat-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
cd "$work"
git init -q repo
cd repo
git zipnn install --local >/dev/null
git zipnn track '*.safetensors' >/dev/null
git add .gitattributes
git commit -qm setup
saves=0
for f in $(ls "$dir"/*.safetensors | sort -V); do
  cp "$f" model.safetensors
  git add model.safetensors 2>/dev/null
  git commit -qm "$(basename "$f")"
  saves=$((saves + 1))
done
# The commit of the deepest version, and its depth.
read -r rev depth < <(git zipnn log --json model.safetensors | /usr/bin/python3 -c '
import json, sys
v = max(json.load(sys.stdin), key=lambda v: v["depth"])
print(v["commit"], v["depth"])')

tensor=${TENSOR:-$(git zipnn cat --list --json "$rev:model.safetensors" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
late = [t for t in doc["tensors"] if t["offset"] >= doc["size"] * 3 // 4] or doc["tensors"]
print(min(late, key=lambda t: abs(t["bytes"] - (4 << 20)))["name"])')}
bytes=$(git zipnn cat --list --json "$rev:model.safetensors" -t "$tensor" | /usr/bin/python3 -c '
import json, sys; print(json.load(sys.stdin)["tensors"][0]["bytes"])')

# One timed run of a command: "seconds peak-KiB".
timed() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null
  cat "$work/time"
}
: > "$work/restore"
: > "$work/cat"
for _ in $(seq "$runs"); do
  rm -f whole part
  timed git zipnn restore model.safetensors --rev "$rev" -o whole >> "$work/restore"
  timed git zipnn cat "$rev:model.safetensors" -t "$tensor" -o part >> "$work/cat"
done
test -s part
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
restore_s=$(awk '{print $1}' "$work/restore" | median)
restore_kib=$(awk '{print $2}' "$work/restore" | median)
cat_s=$(awk '{print $1}' "$work/cat" | median)
cat_kib=$(awk '{print $2}' "$work/cat" | median)
size=$(stat -c %s model.safetensors)
echo "trajectory: $dir, $saves saves of $((size >> 20)) MiB; read: $(git log -1 --format=%s "$rev"), at depth $depth"
echo "tensor: $tensor ($((bytes >> 10)) KiB)"
printf '%-32s %10s %14s\n' "medians of $runs runs" seconds "peak MiB"
printf '%-32s %10s %14.1f\n' "restore the whole file" "$restore_s" "$(awk -v k="$restore_kib" 'BEGIN {print k / 1024}')"
printf '%-32s %10s %14.1f\n' "cat the tensor" "$cat_s" "$(awk -v k="$cat_kib" 'BEGIN {print k / 1024}')"
awk -v r="$restore_s" -v c="$cat_s" 'BEGIN {printf "cat is %.1fx faster than a whole restore\n", (c > 0 ? r / c : 0)}'
