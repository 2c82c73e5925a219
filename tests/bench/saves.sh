# What the benchmarks beside Git LFS on 10 saves share (sourced, from the
# top of the tree, with the script's arguments): the 10 saves of a real
# GPT bf16 run in $dir ($files, $raw bytes in all), tiled to about 100 MB
# each, or with --gb about 1 GB; RUNS in $runs; and bench_env.sh's
# git-zipnn, HOME and helpers.
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
target=100000000
if [ "${1:-}" = --gb ]; then
  target=1000000000
  shift
fi
runs=${1:-3}
top=/tmp/zipnn-lfs-bench
src=$top/gpt-bf16
[ -f "$src/step-000100.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 --dtype bf16 \
  --steps 100 --every 10 --out "$src"
size=$(stat -L -c %s "$src/step-000100.safetensors")
tiles=$(((target + size / 2) / size))
dir=$top/tiled-$tiles
if [ ! -f "$dir/step-000100.safetensors" ]; then
  mkdir -p "$dir"
  for f in "$src"/step-*.safetensors; do python3 tests/bench/tile_checkpoint.py "$f" $tiles "$dir/$(basename "$f")"; done
fi
. tests/bench/bench_env.sh
files=("$dir"/step-*.safetensors)
raw=0
for f in "${files[@]}"; do raw=$((raw + $(stat -c %s "$f"))); done
