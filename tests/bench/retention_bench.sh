#!/usr/bin/env bash
# What retention saves (docs/retention.md): two 20-save runs of the shared
# generator's GPT, each save a torch.save of the model and its AdamW state
# committed as ckpt/step-N.pt, one in fp32 and one in bf16 (the
# generator trains in fp32 and writes its .pt in fp32, as it casts its
# safetensors: the bf16 run's saves are those cast to bf16, model and
# AdamW state, as a pure-bf16 training holds them). The store of
# each, all exact, against the same store after `git zipnn retain` kept
# the newest 3 exactly and thinned the rest: fp32 at absolute 2^-23, bf16
# at relative 5 mantissa bits. Then every thinned save is read back with
# `restore --approximate` and compared with the save it came from, value
# by value, in numpy (check_thinned.py): the largest error against the
# stated bound.
#
#   GIT_ZIPNN_BIN_DIR=<dir> bash tests/bench/retention_bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
bin=${GIT_ZIPNN_BIN_DIR:?a folder with git-zipnn}
top=/tmp/zipnn-retention-bench
export PATH="$bin:$PATH"
[ -f "$top/fp32/step-000200.pt" ] || /usr/bin/python3 "$maker" --family gpt --width 128 --layers 2 --dtype fp32 \
  --steps 200 --every 10 --pt --out "$top/fp32" >/dev/null
mkdir -p "$top/bf16"
for f in "$top"/fp32/step-*.pt; do
  [ -f "$top/bf16/$(basename "$f")" ] || /usr/bin/python3 - "$f" "$top/bf16/$(basename "$f")" <<'PY'
import sys, torch
def cast(o):
    if isinstance(o, torch.Tensor):
        return o.to(torch.bfloat16) if o.is_floating_point() else o
    if isinstance(o, dict):
        return {k: cast(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return type(o)(cast(v) for v in o)
    return o
torch.save(cast(torch.load(sys.argv[1], map_location="cpu", weights_only=False)), sys.argv[2])
PY
done

stored() { du -sb .git/zipnn/objects | cut -f1; }

for dtype in fp32 bf16; do
  if [ $dtype = fp32 ]; then precision="absolute 23"; else precision="relative 5"; fi
  repo=$top/repo-$dtype
  rm -rf "$repo" && mkdir -p "$repo" && cd "$repo"
  git init -q && git config user.email b@example.com && git config user.name B
  git zipnn install --local >/dev/null && git zipnn track '*.pt' >/dev/null
  printf 'retention:\n  - checkpoints: "ckpt/**"\n    keep_newest: 3\n    rest: thin\n    precision: %s\n' \
    "$precision" > .zipnn.yaml
  git add .gitattributes .zipnn.yaml && git commit -qm setup
  mkdir ckpt
  for f in "$top/$dtype"/step-*.pt; do
    cp "$f" ckpt/ && git add ckpt 2>/dev/null && git commit -qm "$(basename "$f")"
  done
  raw=$(cat "$top/$dtype"/step-*.pt | wc -c)
  exact=$(stored)
  start=$(date +%s.%N)
  git zipnn retain > ../retain-$dtype.log
  took=$(echo "$(date +%s.%N) - $start" | bc)
  thinned=$(stored)
  git zipnn fsck --all > /dev/null
  mkdir -p ../approx-$dtype && rm -f ../approx-$dtype/*
  for f in $(ls ckpt/*.pt | head -n -3); do  # the thinned ones: all but the newest 3
    git zipnn restore --approximate "$f" -o "../approx-$dtype/$(basename "$f")" >/dev/null 2>&1 || true
  done
  check=$(/usr/bin/python3 "$here/tests/bench/check_thinned.py" "$top/$dtype" "../approx-$dtype" "$precision")
  printf '%s (%s): raw %d, all exact %d (%.1f%% of raw), after retain %d (%.1f%%): %.2fx of all exact; retain %.1f s; %s\n' \
    $dtype "$precision" $raw $exact "$(echo "100*$exact/$raw" | bc -l)" $thinned "$(echo "100*$thinned/$raw" | bc -l)" \
    "$(echo "$thinned/$exact" | bc -l)" $took "$check"
  cd "$here"
done

# On a folder remote: the fp32 run pushed to a bare hub, then `retain
# --remote origin --yes` keeping the newest 3 and dropping the rest, or
# thinning it as above; the hub's objects and records before and after.
for rest in drop thin; do
  repo=$top/remote-$rest
  rm -rf "$repo" "$top/hub-$rest.git" && mkdir -p "$repo" && git init -q --bare "$top/hub-$rest.git" && cd "$repo"
  git init -q && git config user.email b@example.com && git config user.name B
  git zipnn install --local >/dev/null && git zipnn track '*.pt' >/dev/null && git remote add origin "$top/hub-$rest.git"
  printf 'retention:\n  - checkpoints: "ckpt/**"\n    keep_newest: 3\n    rest: %s\n    precision: absolute 23\n' \
    $rest > .zipnn.yaml
  git add .gitattributes .zipnn.yaml && git commit -qm setup && mkdir ckpt
  for f in "$top/fp32"/step-*.pt; do cp "$f" ckpt/ && git add ckpt 2>/dev/null && git commit -qm "$(basename "$f")"; done
  git push -q origin HEAD:main 2>/dev/null
  hub_bytes() { find "$top/hub-$rest.git/zipnn/objects" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
  before=$(hub_bytes)
  git zipnn retain --remote origin --yes > ../retain-remote-$rest.log
  after=$(hub_bytes)
  rm -rf ../clone-$rest && git clone -q -b main "$top/hub-$rest.git" ../clone-$rest 2>/dev/null
  exact=$(cd ../clone-$rest && for f in $(ls ckpt/*.pt | tail -n 3); do cmp -s "$f" "$top/fp32/$(basename "$f")" && echo ok; done | wc -l)
  printf 'folder remote, fp32 run, keep newest 3, %s the rest: %d -> %d bytes (%.1f%% removed); a fresh clone has %d of the 3 kept saves bit-exact\n' \
    $rest $before $after "$(echo "100*($before-$after)/$before" | bc -l)" $exact
  cd "$here"
done

# The thinned hub, once the rule drops what it thinned: the approximate
# objects go too, and the hub ends as small as one that dropped at once.
cd "$top/remote-thin"
sed -i 's/rest: thin/rest: drop/' .zipnn.yaml && git commit -qam 'drop the rest'
before=$(find "$top/hub-thin.git/zipnn/objects" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
git zipnn retain --remote origin --yes > ../retain-remote-thin-drop.log
after=$(find "$top/hub-thin.git/zipnn/objects" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
printf 'folder remote, thinned, then the rule drops the rest: %d -> %d bytes; %s\n' $before $after \
  "$(grep '^remote' ../retain-remote-thin-drop.log | grep -o '[0-9]* exact and [0-9]* approximate objects removed')"
cd "$here"
