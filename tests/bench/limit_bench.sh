#!/usr/bin/env bash
# A push to a host that refuses objects larger than LIMIT MiB (as GitHub
# refuses LFS objects over 2 GB on its Free and Pro plans), git-zipnn
# beside Git LFS: one save of a bf16 GPT tiled to MB megabytes
# (make_trajectory.py, tile_checkpoint.py), pushed to the tests' Git LFS
# server with its max_size set, which answers larger objects with a 422
# "Size must be less than or equal to N", as GitHub does. Printed for each
# tool: whether the push went through and its time, the largest object the
# server then holds; for git-zipnn also a clone compared with the save.
#
#   bash tests/bench/limit_bench.sh [--mb MB] [--limit MiB]
#
# Defaults: a 1000 MB save, a 512 MiB limit (the issue's row).
set -euo pipefail
cd "$(dirname "$0")/../.."
mb=1000 limit=512
while [ $# -gt 0 ]; do
  case $1 in
    --mb) mb=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "usage: limit_bench.sh [--mb MB] [--limit MiB]" >&2; exit 2 ;;
  esac
done
. tests/bench/bench_env.sh
dir=$(tiled_saves "$mb")
files=("$dir/step-000060.safetensors")
start_lfs_server
echo "$((limit * 1048576))" >"$work/max_size"

printf '%s (%d bytes) to a server taking objects of at most %d MiB\n' "$(basename "${files[0]}")" \
  "$(stat -c %s "${files[0]}")" "$limit"
printf '%-6s %-52s %8s %16s\n' tool push seconds "largest object"
for tool in zipnn lfs; do
  commit_saves $tool $tool
  s=$(now)
  if git push -q origin main >"$work/said" 2>&1; then
    said=ok
  else
    said="fails: $({ grep -m1 -io 'size must be less than or equal to [0-9]*' "$work/said" || cat "$work/said"; } | head -1)"
  fi
  took=$(awk "BEGIN { printf \"%.2f\", $(now) - $s }")
  largest=$( (find "$work/srv/$tool.git/lfs-objects" -type f -printf '%s\n' 2>/dev/null || true) | sort -n | tail -1)
  printf '%-6s %-52.52s %8s %16s\n' $tool "$said" "$took" "${largest:-none}"
  if [ $tool = zipnn ] && [ "$said" = ok ]; then
    git clone -q "http://127.0.0.1:$port/zipnn.git" "$work/zipnn-clone"
    cmp "$work/zipnn-clone/model.safetensors" "${files[0]}"
    echo "       the git-zipnn clone's checkpoint matches the save"
  fi
  cd "$work"
done
