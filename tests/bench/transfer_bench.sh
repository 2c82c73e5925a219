#!/usr/bin/env bash
# git-zipnn and Git LFS moving the same saves through one Git LFS server
# (tests/lfs_server.py) that holds each connection to a rate, as a real
# link does. Each tool commits the saves to one path, overwritten as a
# Trainer's output_dir is; then, medians of RUNS runs taken in turn:
#
#   push          one git push of every commit
#   server bytes  what the server keeps for the repository's files
#   clone         git clone with checkout of the newest save
#   clone bytes   what the clone downloaded (the objects in its store)
#   clone peak    the most memory git or any process it waited for held
#                 (GNU time's maximum resident set), in MiB
#   old checkout  in that clone, git checkout of the first save's commit
#   cut push      a push killed once half the bytes of a clean push had
#                 arrived, then the push again: the time of both
#   cut bytes     the bytes the server received in both, over a clean
#                 push's
#
# Then the git-zipnn clone restores every save bit-exact.
#
#   bash tests/bench/transfer_bench.sh [--rate MB/s] [--kind bf16|fp32-adam] [--mb MB] [RUNS]
#
# --rate: the most each connection moves, in MB/s (default 100; 0: as
#   fast as it goes).
# --kind: bf16 (default): six saves of a bf16 GPT (37 MB), with --mb
#   tiled to about that size each (1000: 1 GB shards); fp32-adam: six
#   torch.save files of an fp32 GPT with its AdamW state (38 MB).
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=100 kind=bf16 mb=0
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --kind) kind=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    *) break ;;
  esac
done
runs=${1:-3}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
top=/tmp/zipnn-transfer-bench
case $kind in
  bf16) ext=safetensors ;;
  fp32-adam)
    dir=$top/gpt-fp32-adam ext=pt
    [ -f "$dir/step-000060.pt" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype fp32 \
      --pt --steps 60 --every 10 --out "$dir" >/dev/null
    ;;
  *) echo "--kind is bf16 or fp32-adam" >&2; exit 2 ;;
esac
. tests/bench/bench_env.sh
[ $kind = bf16 ] && dir=$(tiled_saves "$mb")
start_lfs_server
echo "$((rate * 1000000))" >"$work/rate"
files=("$dir"/step-*."$ext")
raw=0
for f in "${files[@]}"; do raw=$((raw + $(stat -c %s "$f"))); done
file=model.$ext
received() { awk '$1 == "received" { n += $2 } END { printf "%.0f", n }' "$server_log"; }

server_bytes() { bytes_in "$work/srv/$1.git/lfs-objects"; }
clone_store() { if [ "$1" = zipnn ]; then echo .git/zipnn/objects; else echo .git/lfs/objects; fi; }

# Pushes in the background and kills the push (its whole process group)
# once the server has received `half` more bytes; then pushes again.
cut_push() {
  local half=$1 start
  start=$(received)
  setsid git push -q origin main >/dev/null 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null && [ $(($(received) - start)) -lt "$half" ]; do sleep 0.05; done
  kill -KILL -- -$pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  git push -q origin main
}

for ((r = 0; r < runs; r++)); do
  for tool in zipnn lfs; do
    commit_saves $tool $tool
    before=$(received)
    timed push $tool git push -q origin main
    clean=$(($(received) - before))
    record "server bytes" $tool "$(server_bytes $tool)"
    rm -rf "$work/$tool-clone"
    timed clone $tool /usr/bin/time -o "$work/peak" -f %M git clone -q "http://127.0.0.1:$port/$tool.git" "$work/$tool-clone"
    record "clone peak MiB" $tool "$(awk '{ printf "%.0f", $1 / 1024 }' "$work/peak")"
    cmp "$work/$tool-clone/$file" "${files[-1]}"
    record "clone bytes" $tool "$(bytes_in "$work/$tool-clone/$(clone_store $tool)")"
    cd "$work/$tool-clone"
    timed "old checkout" $tool git checkout -q "HEAD~$((${#files[@]} - 1))"
    cmp "$file" "${files[0]}"
    if [ "$tool" = zipnn ] && [ "$r" = 0 ]; then
      git checkout -q main
      for ((i = 0; i < ${#files[@]}; i++)); do
        git zipnn restore --rev "HEAD~$i" -o "$work/restored" -f "$file" >/dev/null
        cmp "$work/restored" "${files[$((${#files[@]} - 1 - i))]}"
      done
    fi
    commit_saves $tool "$tool-cut"
    before=$(received)
    timed "cut push" $tool cut_push $((clean / 2))
    record "cut bytes" $tool "$(awk "BEGIN { print ($(received) - $before) / $clean }")"
    cd "$work"
    rm -rf "$work/$tool" "$work/$tool-clone" "$work/$tool-cut" "$work/srv/$tool.git" "$work/srv/$tool-cut.git"
  done
done

echo "${#files[@]} saves of $(basename "$dir") ($raw bytes of $file), $rate MB/s a connection, $(nproc) cores;" \
  "medians of $runs runs; seconds, bytes or ratios"
printf '%-14s %14s %14s %9s\n' row git-zipnn git-lfs zipnn/lfs
for row in push "server bytes" clone "clone bytes" "clone peak MiB" "old checkout" "cut push" "cut bytes"; do
  z=$(echo ${took["$row zipnn"]} | tr ' ' '\n' | median)
  l=$(echo ${took["$row lfs"]} | tr ' ' '\n' | median)
  printf '%-14s %14s %14s %9.2f\n' "$row" "$z" "$l" "$(awk "BEGIN { print $z / $l }")"
done
echo "every save of the git-zipnn clone restored bit-exact"
