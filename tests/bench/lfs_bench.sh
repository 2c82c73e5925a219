#!/usr/bin/env bash
# git-zipnn beside Git LFS on one machine, in one run, on one trajectory
# of 10 saves, in the two layouts a training run writes:
#
#   overwritten   one path (model.safetensors) saved and committed 10 times
#   step files    run/step-N.safetensors, one new file per save
#
# Both tools get the same rows, each the median of RUNS runs taken in turn
# (zipnn, lfs, zipnn, lfs, ...):
#
#   add+commit       every save added and committed in order (overwritten)
#   push             to a local bare repository (overwritten)
#   remote bytes     the objects in that remote: the whole history
#   clone            with checkout, of the overwritten path (only HEAD's
#                    version is checked out); its bytes are those it fetched
#   clone steps      the same for the step files (every save checked out)
#   newest           git zipnn restore of HEAD's version (LFS: rm, then
#                    git checkout -- of the file); for git-zipnn also the
#                    restore of a base and of the deepest version, and
#                    each against the base's
#   old checkout     git checkout of HEAD~5, and back
#   log -p           git log -p of the overwritten path, 10 versions
#                    (git-zipnn's textconv); git's peak memory
#
# and, for git-zipnn, the peak memory of `git zipnn restore` at chain
# depths 9 and 200 (newest: delta, one base, on a small GPT run of 201
# saves). Debian's git-lfs is installed here if missing (.ci/deps installs
# it too, for the tests of the LFS server).
#
#   bash tests/bench/lfs_bench.sh [--gb] [RUNS]
#
# The 10 saves are a GPT bf16 run trained by make_trajectory.py (51 MB
# each), each tiled by tile_checkpoint.py into real weights and real
# deltas, as many times as make files of about 100 MB (twice), or with
# --gb about 1 GB (20 times; needs about 50 GB of disk under /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/saves.sh "$@"
deep=$top/gpt-small
[ -f "$deep/step-000201.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 128 --layers 2 --dtype bf16 \
  --steps 201 --every 1 --out "$deep"
store_of() { if [ "$1" = zipnn ]; then echo zipnn/objects; else echo lfs/objects; fi; }

# A repository for `tool` in $work/<tool>-<layout>, its bare remote beside it.
setup() {
  local tool=$1 repo=$work/$1-$2
  rm -rf "$repo" "$repo.git" "$repo-clone"
  git init -q "$repo"
  git init -q --bare "$repo.git"
  cd "$repo"
  git remote add origin "$repo.git"
  if [ "$tool" = zipnn ]; then git zipnn track '*.safetensors' >/dev/null; else git lfs track '*.safetensors' >/dev/null; fi
  git add .gitattributes && git commit -qm setup
}
add_steps() {
  local f
  mkdir -p run
  for f in "${files[@]}"; do
    cp "$f" run/
    git add "run/$(basename "$f")"
    git commit -qm "$(basename "$f")"
  done
}
old_and_back() { git checkout -q HEAD~5 && git checkout -q main; }
# The commit of the overwritten path's version at the given chain depth
# (the deepest with "max"), or of a base that is not the newest ("base").
commit_at() {
  git zipnn log --json model.safetensors | python3 -c '
import json, sys
versions = json.load(sys.stdin)
if sys.argv[1] == "max":
    print(max(versions, key=lambda v: v["depth"])["commit"])
else:
    print([v for v in versions[1:] if v["depth"] == 0][0]["commit"])' "$1"
}
restore_at() { git zipnn restore --rev "$1" -o "$work/restored" -f model.safetensors; }

for ((r = 0; r < runs; r++)); do
  for tool in zipnn lfs; do
    setup $tool overwritten
    timed add $tool add_overwritten
    timed push $tool git push -q origin main
    record "remote bytes" $tool "$(bytes_in "$work/$tool-overwritten.git/$(store_of $tool)")"
    timed clone $tool git clone -q "$work/$tool-overwritten.git" "$work/$tool-clone"
    cd "$work/$tool-clone"
    record "clone bytes" $tool "$(bytes_in .git/$(store_of $tool))"
    cmp model.safetensors "${files[-1]}"
    if [ $tool = zipnn ]; then
      git zipnn fetch --all >/dev/null 2>&1 # history, for the restores of older versions
      timed newest $tool restore_at HEAD
      cmp "$work/restored" "${files[-1]}"
      timed "base restore" $tool restore_at "$(commit_at base)"
      timed "deepest" $tool restore_at "$(commit_at max)"
    else
      timed newest $tool sh -c 'rm -f model.safetensors && git checkout -- model.safetensors'
      cmp model.safetensors "${files[-1]}"
    fi
    timed "old checkout" $tool old_and_back
    s=$(now)
    /usr/bin/time -f %M -o "$work/rss" git log -p >/dev/null
    record "log -p" $tool "$(awk "BEGIN { print $(now) - $s }")"
    record "log -p MiB" $tool "$(awk '{ printf "%.0f", $1 / 1024 }' "$work/rss")"
    cd "$work"
    rm -rf "$work/$tool-overwritten" "$work/$tool-overwritten.git" "$work/$tool-clone"

    setup $tool steps
    add_steps
    git push -q origin main
    timed "clone steps" $tool git clone -q "$work/$tool-steps.git" "$work/$tool-clone"
    record "steps bytes" $tool "$(bytes_in "$work/$tool-clone/.git/$(store_of $tool)")"
    cd "$work"
    rm -rf "$work/$tool-steps" "$work/$tool-steps.git" "$work/$tool-clone"
  done
done

# Restore memory by chain depth: one series of 201 small saves stored as
# forward deltas on one base.
repo=$work/deep
git init -q "$repo"
cd "$repo"
git zipnn track '*.safetensors' >/dev/null
printf 'newest: delta\nbase_interval: 1000\nmax_chain: 1000\nmin_gain: 0\n' >.zipnn.yaml
git add .gitattributes .zipnn.yaml && git commit -qm setup
deep_files=("$deep"/step-*.safetensors)
for f in "${deep_files[@]}"; do
  cp "$f" model.safetensors
  git add model.safetensors && git commit -qm "$(basename "$f")"
done
rss_at() { # rss_at DEPTH: peak RSS (MiB) of restoring the version at that depth
  /usr/bin/time -f %M -o "$work/rss" git zipnn restore --rev "HEAD~$((${#deep_files[@]} - 1 - $1))" \
    -o "$work/restored" -f model.safetensors >/dev/null
  awk '{ printf "%.0f", $1 / 1024 }' "$work/rss"
}
rss5=$(rss_at 5) rss9=$(rss_at 9) rss200=$(rss_at 200)

echo "10 saves of $(basename "$dir") ($raw bytes), $(nproc) cores; medians of $runs runs; seconds unless named"
printf '%-14s %12s %12s %9s\n' row git-zipnn git-lfs zipnn/lfs
for row in add push "remote bytes" clone "clone bytes" "clone steps" "steps bytes" newest "old checkout" "log -p" "log -p MiB"; do
  z=$(echo ${took["$row zipnn"]} | tr ' ' '\n' | median)
  l=$(echo ${took["$row lfs"]} | tr ' ' '\n' | median)
  printf '%-14s %12s %12s %9.2f\n' "$row" "$z" "$l" "$(awk "BEGIN { print $z / $l }")"
done
med() { echo ${took["$1 zipnn"]} | tr ' ' '\n' | median; }
printf '%-14s %12s %12s %9s\n' "base restore" "$(med "base restore")" - -
printf '%-14s %12s %12s %9s\n' deepest "$(med deepest)" - -
printf 'restore against a base: newest %.2fx, deepest %.2fx\n' "$(awk "BEGIN { print $(med newest) / $(med "base restore") }")" \
  "$(awk "BEGIN { print $(med deepest) / $(med "base restore") }")"
printf 'restore peak memory (MiB): depth 5 %s, depth 9 %s, depth 200 %s\n' "$rss5" "$rss9" "$rss200"
