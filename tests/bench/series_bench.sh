#!/usr/bin/env bash
# Figures for series in the layouts training code writes: one small run
# (tests/layouts/train_layouts.py) saved N times in each layout, one
# commit per save, under the default policy. Prints, per layout, the
# versions stored as deltas, the stored bytes beside the raw sum, and what
# git-zipnn keeps beside its objects (git zipnn du); then the two
# comparisons the series rules must win:
#   - the Trainer layout against the same files committed as step-numbered
#     files in one folder (model-step<s>.safetensors, optimizer-step<s>.pt, ...);
#   - sharded against unsharded safetensors of the same run.
#
#   bash tests/bench/series_bench.sh [SAVES]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
saves=${1:-10}
bazel build //cmd:git-zipnn >/dev/null 2>&1 || bazel build //cmd:git-zipnn
bin=$(bazel info bazel-bin 2>/dev/null)/cmd
work=$(mktemp -d /tmp/zipnn-series-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 tests/layouts/train_layouts.py --out "$work/snap" --saves "$saves" >/dev/null
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench

# The Trainer run again, each file of checkpoint-<s>/ flattened into one
# folder as <name>-step<s>.<ext>: the step-numbered layout of the same bytes.
for k in $(seq 1 "$saves"); do
  mkdir -p "$work/snap/trainer-flat/$k/out"
  for f in "$work"/snap/trainer/"$k"/out/checkpoint-*/*; do
    step=$(basename "$(dirname "$f")"); step=${step#checkpoint-}
    name=$(basename "$f"); ln "$f" "$work/snap/trainer-flat/$k/out/${name%%.*}-step$step.${name#*.}"
  done
done

# Commits every save of a layout in a new repository; prints one line.
commit_layout() {
  local layout=$1 repo=$work/repo-$1
  git init -q "$repo"
  (
    cd "$repo"
    git zipnn install --local >/dev/null
    git zipnn track '*.safetensors' '*.pt' '*.pth' '*.ckpt' >/dev/null
    git add .gitattributes && git commit -qm setup
    for k in $(seq 1 "$saves"); do
      rm -rf out && cp -R "$work/snap/$layout/$k/out" out
      find out -exec touch -d @$((1700000000 + 600 * k)) {} +
      git add -A && git commit -qm "save $k"
    done
    git zipnn fsck --all >/dev/null
    objects=$(git zipnn du | awk '/^  objects/ {print $2, $3}')
    beside=$(git zipnn du | awk '/^  in all/ {print $3, $4, $5}')
    raw=$(git rev-list HEAD | while read -r c; do git ls-tree -r "$c" -- out; done | sort -u -k3,3 |
          while read -r mode type oid path; do git cat-file -p "$oid" | sed -n 's/^size //p'; done |
          awk '{s += $1} END {print s}')
    stored=$(find .git/zipnn/objects -type f -regextype posix-extended -regex '.*/[0-9a-f]{32}' -printf '%s\n' |
             awk '{s += $1} END {print s}')
    deltas=$(for o in $(find .git/zipnn/objects -type f -regextype posix-extended -regex '.*/[0-9a-f]{32}'); do
               git zipnn inspect "$o" | grep -c '^kind *delta' || true; done | awk '{s += $1} END {print s}')
    versions=$(find .git/zipnn/objects -type f -regextype posix-extended -regex '.*/[0-9a-f]{32}' | wc -l)
    printf '%-15s %3d versions, %3d deltas  raw %10d  stored %10d (%5.1f%%)  beside the store %s\n' \
      "$layout" "$versions" "$deltas" "$raw" "$stored" "$(echo "100 * $stored / $raw" | bc -l)" "$beside"
    echo "$stored" > "$work/stored-$layout"
  )
}

echo "$saves saves per layout, default policy"
for layout in trainer trainer-flat trainer-limit1 sharded unsharded deepspeed megatron lightning stepfiles overwrite sidebyside; do
  commit_layout "$layout"
done
ratio() { echo "scale=4; $(cat "$work/stored-$1") / $(cat "$work/stored-$2")" | bc -l; }
echo "trainer / trainer as step-numbered files: $(ratio trainer trainer-flat)"
echo "sharded / unsharded:                      $(ratio sharded unsharded)"
echo "git zipnn du after the Trainer run:"
(cd "$work/repo-trainer" && git zipnn du)
echo "git zipnn du after the Trainer run with save_total_limit=1:"
(cd "$work/repo-trainer-limit1" && git zipnn du)
