# What the benchmarks beside Git LFS share (sourced, from the top of the
# tree, with the script's arguments): the 10 saves of a real GPT bf16 run
# in $dir ($files, $raw bytes in all), tiled to about 100 MB each, or with
# --gb about 1 GB; RUNS in $runs; a built git-zipnn first on PATH
# (GIT_ZIPNN_BIN_DIR, else built here); a HOME
# of its own in $work (removed at exit) with git-zipnn and Git LFS
# installed; and the helpers below to time rows and take medians.
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
target=100000000
if [ "${1:-}" = --gb ]; then
  target=1000000000
  shift
fi
runs=${1:-3}
top=/tmp/zipnn-lfs-bench
command -v git-lfs >/dev/null || bash .ci/deps git-lfs
src=$top/gpt-bf16
[ -f "$src/step-000100.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 --dtype bf16 \
  --steps 100 --every 10 --out "$src"
size=$(stat -c %s "$src/step-000100.safetensors")
tiles=$(((target + size / 2) / size))
dir=$top/tiled-$tiles
if [ ! -f "$dir/step-000100.safetensors" ]; then
  mkdir -p "$dir"
  for f in "$src"/step-*.safetensors; do python3 tests/bench/tile_checkpoint.py "$f" $tiles "$dir/$(basename "$f")"; done
fi
# GIT_ZIPNN_BIN_DIR: a folder holding a git-zipnn built already.
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
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
declare -A took  # "<row> <tool>" -> one figure per run, space-separated
timed() {        # timed ROW TOOL COMMAND...: runs the command, adds its time to the row
  local row=$1 tool=$2 s
  shift 2
  sync # the writes of the row before are not this row's
  s=$(now)
  "$@"
  took["$row $tool"]+="$(awk "BEGIN { print $(now) - $s }") "
}
record() { took["$1 $2"]+="$3 "; } # record ROW TOOL FIGURE
bytes_in() { find "$@" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
