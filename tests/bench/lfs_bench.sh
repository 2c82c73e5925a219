#!/usr/bin/env bash
# git-zipnn beside Git LFS on one machine, in one run, on one
# step-numbered trajectory: each checkpoint committed as its own file
# (run/step-N.safetensors), one commit per save, as a training loop does.
# Both tools get the same rows, each the median of RUNS runs taken in
# turn (zipnn, lfs, zipnn, lfs, ...):
#
#   add + commit     every save added and committed, in step order
#   push             to a local bare repository (the store emptied first)
#   clone            with checkout, from that bare repository
#   restore newest   rm of the newest save, then git checkout -- it
#   restore deepest  the same for the save at the end of the longest chain
#   checkout old     git checkout of the commit 5 saves back (fewer in a shorter
#                    trajectory), and back again
#   log -p           git log -p over every version (textconv for git-zipnn)
#
# and the bytes each stores and each push moves. Debian's git-lfs is
# installed here if missing (never by CI).
#
#   bash tests/bench/lfs_bench.sh [TRAJECTORY_DIR] [RUNS]
#
# Without a folder, the 10-save GPT bf16 run of benchmarks.md is trained
# and each save tiled 4 times (tile_checkpoint.py): 103 MB files holding
# real trained weights and real deltas.
set -euo pipefail
cd "$(dirname "$0")/../.."
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
dir=${1:-/tmp/zipnn-lfs-bench/tiled}
runs=${2:-3}
command -v git-lfs >/dev/null || bash .ci/deps git-lfs
if [ $# -eq 0 ] && [ ! -d "$dir" ]; then
  src=/tmp/zipnn-lfs-bench/gpt-bf16
  [ -d "$src" ] || /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 --dtype bf16 \
    --steps 100 --every 10 --out "$src"
  mkdir -p "$dir"
  for f in "$src"/step-*.safetensors; do
    python3 tests/bench/tile_checkpoint.py "$f" 4 "$dir/$(basename "$f")"
  done
fi
bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
bin=$PWD/bazel-bin/cmd
work=$(mktemp -d /tmp/zipnn-lfs-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
git config --global init.defaultBranch main
git zipnn install >/dev/null
git lfs install --skip-repo >/dev/null
files=("$dir"/step-*.safetensors)
raw=0
for f in "${files[@]}"; do raw=$((raw + $(stat -c %s "$f"))); done

now() { date +%s.%N; }
# The median of the numbers on standard input.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A took  # "<row> <tool>" -> one time per run, space-separated
timed() {  # timed ROW TOOL COMMAND...: runs the command, adds its time to the row
  local row=$1 tool=$2 s
  shift 2
  sync  # the writes of the row before are not this row's
  s=$(now)
  "$@"
  took["$row $tool"]+="$(awk "BEGIN { print $(now) - $s }") "
}

# A repository of the trajectory for `tool` in $work/<tool>, its bare
# remote in $work/<tool>.git.
setup() {
  local tool=$1 repo=$work/$1
  rm -rf "$repo" "$repo.git" "$work/$tool-clone"
  git init -q "$repo"
  git init -q --bare "$repo.git"
  (
    cd "$repo"
    git remote add origin "$repo.git"
    if [ "$tool" = zipnn ]; then git zipnn track '*.safetensors' >/dev/null; else git lfs track '*.safetensors' >/dev/null; fi
    git add .gitattributes && git commit -qm setup
    mkdir run
  )
}
add_all() {
  local f
  for f in "${files[@]}"; do
    cp "$f" run/
    git add "run/$(basename "$f")"
    git commit -qm "$(basename "$f")"
  done
}
deepest() {  # the path of the save at the end of the longest chain (zipnn), else the newest
  if [ "$1" = zipnn ]; then
    git zipnn log --json | python3 -c '
import json, sys
print(max(json.load(sys.stdin), key=lambda v: v["depth"])["path"])'
  else
    echo "run/$(basename "${files[-1]}")"
  fi
}
restore() { rm -f "$1" && git checkout -- "$1"; }
bytes_in() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
back=$(( ${#files[@]} > 5 ? 5 : ${#files[@]} - 1 ))  # saves back for the old-commit row
old_and_back() { git checkout -q HEAD~$back && git checkout -q main; }

for ((r = 0; r < runs; r++)); do
  for tool in zipnn lfs; do
    setup $tool
    cd "$work/$tool"
    timed add $tool add_all
    timed push $tool git push -q origin main
    timed clone $tool git clone -q "$work/$tool.git" "$work/$tool-clone"
    cd "$work/$tool-clone"
    newest=run/$(basename "${files[-1]}")
    deep=$(deepest $tool)
    cmp "$newest" "${files[-1]}"
    timed newest $tool restore "$newest"
    timed deepest $tool restore "$deep"
    cmp "$newest" "${files[-1]}"
    timed old $tool old_and_back
    timed log $tool sh -c 'git log -p >/dev/null'
    cd "$work"
    # Bytes stored and pushed, then the repositories go: a 1.1 GB-class
    # trajectory would not fit twice on the disk.
    if [ $tool = zipnn ]; then store=.git/zipnn/objects; else store=.git/lfs/objects; fi
    if [ $tool = zipnn ]; then bare_store=zipnn/objects; else bare_store=lfs/objects; fi
    declare "stored_$tool=$(bytes_in "$work/$tool/$store")" "moved_$tool=$(bytes_in "$work/$tool.git/$bare_store")"
    rm -rf "$work/$tool" "$work/$tool.git" "$work/$tool-clone"
  done
done

echo "${#files[@]} saves of $(basename "$dir"), $raw bytes; $(nproc) cores; medians of $runs runs, seconds"
printf '%-16s %10s %10s %10s\n' row git-zipnn git-lfs zipnn/lfs
for row in add push clone newest deepest old log; do
  z=$(echo ${took["$row zipnn"]} | tr ' ' '\n' | median)
  l=$(echo ${took["$row lfs"]} | tr ' ' '\n' | median)
  printf '%-16s %10.3f %10.3f %10.2f\n' "$row" "$z" "$l" "$(awk "BEGIN { print $z / $l }")"
done
printf '%-16s %10d %10d %10.2f\n' "stored bytes" "$stored_zipnn" "$stored_lfs" "$(awk "BEGIN { print $stored_zipnn / $stored_lfs }")"
printf '%-16s %10d %10d %10.2f\n' "pushed bytes" "$moved_zipnn" "$moved_lfs" "$(awk "BEGIN { print $moved_zipnn / $moved_lfs }")"
