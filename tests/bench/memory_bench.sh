#!/usr/bin/env bash
# Peak memory of every git-zipnn path on checkpoints of more than 4 GiB:
# compress and decompress (a base and a delta), `git add` of a 10-version
# series through the clean filter, `git zipnn restore` of a base and of
# the version at the end of the longest chain the default policy makes
# (3 deltas since 0.7, 9 before), `git checkout` through the smudge filter and written after
# git's checkout (zipnn.checkoutOutsideAbove), and analyze.
#
#   bash tests/bench/memory_bench.sh TRAJECTORY_DIR [COPIES]
#
# TRAJECTORY_DIR holds 10 step-*.safetensors of one run (peer_bench.py
# trains a 1.1 GB bf16 one); each is tiled COPIES times (default 4) into
# one checkpoint of real weights by tile_checkpoint.py, made just before
# it is used and removed after, so the disk holds at most two at a time
# besides the store. Needs about 40 GB of free disk under /tmp.
#
# RSS is what GNU time reports for the git-zipnn process alone (for the
# filters, the long-running filter process git starts), in MiB. git's own
# memory is printed apart (GNU time's peak of git and what it waited for,
# its hooks included): git collects a smudge filter's whole output, which
# is why larger checkpoints are written after its checkout instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?usage: memory_bench.sh TRAJECTORY_DIR [COPIES]}
copies=${2:-4}
files=("$dir"/step-*.safetensors)
[ ${#files[@]} -ge 10 ] || { echo "need 10 checkpoints in $dir" >&2; exit 1; }
files=("${files[@]:0:10}")
bazel build //cmd:git-zipnn >/dev/null 2>&1 || bazel build //cmd:git-zipnn
bin=$PWD/bazel-bin/cmd/git-zipnn
tile=$PWD/tests/bench/tile_checkpoint.py
work=$(mktemp -d /tmp/zipnn-memory-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$(dirname "$bin"):$PATH
mkdir "$HOME"

# The largest of the peaks a file of GNU time's %M lines holds (each
# filter process git starts appends its own), in MiB.
mib() { awk '$1 > m { m = $1 } END { printf "%.0f", m / 1024 }' "$1"; }
# row NAME BYTES SECONDS RSS_MIB [NOTE]
row() { printf '| %s | %.2f | %.1f | %s | %s |\n' "$1" "$(awk "BEGIN { print $2 / 2^30 }")" "$3" "$4" "${5:-}"; }
# timed OUTVAR_SECONDS OUTVAR_RSS command...: runs it under GNU time.
timed() {
  local -n seconds_=$1 rss_=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null
  seconds_=$(awk '{ print $1 }' "$work/time")
  rss_=$(awk '{ printf "%.0f", $2 / 1024 }' "$work/time")
}
version() { python3 "$tile" "${files[$1]}" "$copies" "$2"; }

echo "| path | GiB | seconds | peak RSS MiB (git-zipnn) | note |"
echo "|---|---|---|---|---|"

version 0 "$work/a.safetensors"
version 1 "$work/b.safetensors"
size=$(stat -c %s "$work/a.safetensors")
timed s r git-zipnn compress -q -f "$work/a.safetensors" -o "$work/a.zipnn"
row "compress, standalone" "$size" "$s" "$r"
timed s r git-zipnn decompress -f "$work/a.zipnn" -o "$work/a.out"
cmp "$work/a.out" "$work/a.safetensors" && rm "$work/a.out" "$work/a.zipnn"
row "decompress, standalone" "$size" "$s" "$r"
timed s r git-zipnn compress -q -f "$work/b.safetensors" --base "$work/a.safetensors" -o "$work/b.zipnn"
row "compress, delta" "$size" "$s" "$r"
timed s r git-zipnn decompress -f "$work/b.zipnn" --base "$work/a.safetensors" -o "$work/b.out"
cmp "$work/b.out" "$work/b.safetensors" && rm "$work/b.out" "$work/b.zipnn"
row "decompress, delta" "$size" "$s" "$r"
timed s r git-zipnn analyze --as-given "$work/a.safetensors" "$work/b.safetensors"
row "analyze, 2 checkpoints" "$((2 * size))" "$s" "$r"
rm "$work/a.safetensors" "$work/b.safetensors"

# The clean filter, for each of 10 versions of one series.
git init -q "$work/repo"
cd "$work/repo"
git config user.email bench@example.com
git config user.name bench
git zipnn install --local >/dev/null
git config filter.zipnn.process "/usr/bin/time -a -f %M -o $work/filter git-zipnn filter-process"
git zipnn track '*.safetensors' >/dev/null
git add .gitattributes && git commit -qm setup
mkdir run
add_seconds=0 git_rss=0
for i in "${!files[@]}"; do
  name=run/$(basename "${files[$i]}")
  version "$i" "$name"
  timed s r git add "$name"
  add_seconds=$(awk "BEGIN { print $add_seconds + $s }")
  git_rss=$((r > git_rss ? r : git_rss))
  git commit -qm "$name"
  [ "$i" -eq 0 ] && cp "$name" "$work/base.safetensors"
  rm "$name"
done
filter_rss=$(sort -n "$work/filter" | tail -1 | awk '{ printf "%.0f", $1 / 1024 }')
row "git add, 10 versions (clean filter)" "$((10 * size))" "$add_seconds" "$filter_rss" "git itself: $git_rss MiB"
# The version at the end of the longest chain (the newest is stored whole
# under today's defaults), tiled again to compare with.
read -r deepest depth < <(git zipnn log --json | python3 -c '
import json, sys
v = max(json.load(sys.stdin), key=lambda v: v["depth"])
print(v["path"], v["depth"])')
for i in "${!files[@]}"; do
  if [ "run/$(basename "${files[$i]}")" = "$deepest" ]; then version "$i" "$work/deepest.safetensors"; fi
done

base=run/$(basename "${files[0]}")
timed s r git zipnn restore "$base" -f -o "$work/out"
cmp "$work/out" "$work/base.safetensors" && rm "$work/out"
row "restore, a base" "$size" "$s" "$r"
timed s r git zipnn restore "$deepest" -f -o "$work/out"
cmp "$work/out" "$work/deepest.safetensors" && rm "$work/out"
row "restore, chain of $depth deltas" "$size" "$s" "$r"
# Through git's filter (as all were before zipnn.checkoutOutsideAbove),
# then as a checkpoint of more than 1 GiB goes by default: its pointer
# through git, the checkpoint written by the post-checkout hook.
: >"$work/filter"
timed s r git -c zipnn.checkoutOutsideAbove=0 checkout -- "$deepest"
cmp "$deepest" "$work/deepest.safetensors"
row "git checkout, chain of $depth (through git's filter)" "$size" "$s" "$(mib "$work/filter")" "git itself: $r MiB"
rm "$deepest"
: >"$work/filter"
timed s r git checkout -- "$deepest"
cmp "$deepest" "$work/deepest.safetensors"
# git sees the file the hook wrote as what its index names (the other
# versions were removed from the work tree above, so only this path).
git diff-files --quiet -- "$deepest"
row "git checkout, chain of $depth (written after git's checkout)" "$size" "$s" "$(mib "$work/filter")" \
  "git and its hook: $r MiB"
