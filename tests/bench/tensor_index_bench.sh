#!/usr/bin/env bash
# The cost of looking up the tensor index (docs/policy.md, "Parents")
# when it holds thousands of checkpoints: a repository whose index lists
# VERSIONS versions of TENSORS tensors each (random content keys, as the
# listings of that many saves give; the file is tens of MB), and the
# `git add` of a new checkpoint whose series would store it whole (a
# real CNN save, one byte changed each time so that it is always new),
# which searches the index for versions holding its tensors. Prints the
# median wall time and the peak memory of RUNS adds with each build, and
# the same with an index of one version.
#
#   GIT_ZIPNN_BEFORE_BIN_DIR=<dir> GIT_ZIPNN_BIN_DIR=<dir> \
#     bash tests/bench/tensor_index_bench.sh [RUNS] [VERSIONS] [TENSORS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5} versions=${2:-3000} tensors=${3:-300}
before=${GIT_ZIPNN_BEFORE_BIN_DIR:?a folder with the git-zipnn before the change}
after=${GIT_ZIPNN_BIN_DIR:?a folder with the git-zipnn after the change}
save=$PWD/tests/data/cnn-fp32/step-000200.safetensors
source tests/bench/builds_env.sh

python3 - "$work/index" "$versions" "$tensors" <<'PY'
import random, sys
random.seed(1)
out, versions, tensors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    for _ in range(versions):
        items = ",".join("%016x:%d" % (random.getrandbits(64), random.randint(4096, 1 << 24)) for _ in range(tensors))
        f.write("%032x %040x %s\n" % (random.getrandbits(128), random.getrandbits(160), items))
PY
echo "index: $versions versions x $tensors tensors, $(du -h "$work/index" | cut -f1)"

# median of the runs' "<seconds> <KB>" lines
median() { sort -n | awk '{t[NR] = $1; m[NR] = $2} END {printf "%.2f s, %d MB peak", t[int((NR + 1) / 2)], m[int((NR + 1) / 2)] / 1024}'; }
for build in before after; do
  dir=$before
  [ $build = after ] && dir=$after
  repo "$dir" "$build"
  put "$save" first.safetensors  # the cache folder, and a line of its own
  small=$(cat .git/zipnn/cache/tensors)
  for index in one many; do
    for i in $(seq "$runs"); do
      { echo "$small"; [ $index = many ] && cat "$work/index"; } > .git/zipnn/cache/tensors
      f=new-$index-$i.safetensors
      python3 -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[-1 - int(sys.argv[3])] ^= 1 + len(sys.argv[2]) % 7; open(sys.argv[2], 'wb').write(b)" "$save" "$f" "$i"
      /usr/bin/time -f "%e %M" -o "$work/time" git add "$f"
      cat "$work/time" >> "$work/$build-$index"
      git reset -q "$f"
    done
    echo "$build, index of $index: $(median < "$work/$build-$index")"
  done
done
