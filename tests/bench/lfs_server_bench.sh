#!/usr/bin/env bash
# git-zipnn and Git LFS against one Git LFS server (tests/lfs_server.py:
# git's smart HTTP and the batch API on one port, as a hosting site
# serves them), in one run, on the 10 saves of saves.sh committed to one
# overwritten path. Rows, each the median of RUNS runs taken in turn:
#
#   push           one git push of the 10 commits (objects and pointers)
#   server bytes   what the server then stores for the repository's
#                  files (LFS objects)
#   clone          git clone with checkout of the newest, and the bytes it
#                  downloaded (the objects in the clone's store)
#   old tensor     one tensor (the middle one of the file) of HEAD~5 read
#                  in the fresh clone, and the bytes the server sent for
#                  it: git-zipnn reads parts of the objects where they lie
#                  (`git zipnn cat -t`); Git LFS downloads the whole file
#                  (`git lfs smudge` of the pointer)
#   every save     server bytes when each save is pushed as it is made
#                  (10 pushes): a version sent while newest stays whole
#                  on a server that cannot delete
#
# Then, in the git-zipnn clone, every version is restored and compared
# with its save, and no object may have been downloaded twice.
#
#   bash tests/bench/lfs_server_bench.sh [--gb] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/saves.sh "$@"
start_lfs_server
file=model.safetensors

server_bytes() { bytes_in "$work/srv/$1.git/lfs-objects"; }
clone_store() { if [ "$1" = zipnn ]; then echo .git/zipnn/objects; else echo .git/lfs/objects; fi; }

for ((r = 0; r < runs; r++)); do
  for tool in zipnn lfs; do
    commit_saves $tool $tool
    timed push $tool git push -q origin main
    record "server bytes" $tool "$(server_bytes $tool)"
    rm -rf "$work/$tool-clone"
    timed clone $tool git clone -q "http://127.0.0.1:$port/$tool.git" "$work/$tool-clone"
    cmp "$work/$tool-clone/model.safetensors" "${files[-1]}"
    record "clone bytes" $tool "$(bytes_in "$work/$tool-clone/$(clone_store $tool)")"
    cd "$work/$tool-clone"
    before=$(sent)
    if [ "$tool" = zipnn ]; then
      tensor=$(git zipnn cat HEAD:model.safetensors --list --json |
        python3 -c 'import json, sys; t = json.load(sys.stdin)["tensors"]; print(t[len(t) // 2]["name"])')
      timed "old tensor" $tool git zipnn cat HEAD~5:model.safetensors -t "$tensor" -o "$work/tensor" -f
    else
      timed "old tensor" $tool sh -c "git cat-file blob HEAD~5:model.safetensors | git lfs smudge >'$work/tensor'"
    fi
    record "tensor bytes" $tool $(($(sent) - before))
    if [ "$tool" = zipnn ] && [ "$r" = 0 ]; then
      # Every version back, bit-exact, each object downloaded once.
      cd "$work/$tool-clone"
      for ((i = 0; i < ${#files[@]}; i++)); do
        git zipnn restore --rev "HEAD~$i" -o "$work/restored" -f model.safetensors >/dev/null
        cmp "$work/restored" "${files[$((${#files[@]} - 1 - i))]}"
      done
      twice=$(grep -o "GET /$tool.git/info/lfs/objects/[0-9a-f]* 200" "$server_log" | sort | uniq -d | wc -l)
      [ "$twice" = 0 ] || { echo "objects downloaded twice: $twice" >&2; exit 1; }
    fi
    cd "$work"
    rm -rf "$work/$tool" "$work/$tool-clone"
  done
done
for tool in zipnn lfs; do
  commit_saves $tool "$tool-each" each
  record "every save" $tool "$(server_bytes "$tool-each")"
  cd "$work" && rm -rf "$work/$tool-each"
done

echo "10 saves of $(basename "$dir") ($raw bytes), $(nproc) cores; medians of $runs runs; seconds or bytes"
printf '%-14s %14s %14s %9s\n' row git-zipnn git-lfs zipnn/lfs
for row in push "server bytes" clone "clone bytes" "old tensor" "tensor bytes" "every save"; do
  z=$(echo ${took["$row zipnn"]} | tr ' ' '\n' | median)
  l=$(echo ${took["$row lfs"]} | tr ' ' '\n' | median)
  printf '%-14s %14s %14s %9.2f\n' "$row" "$z" "$l" "$(awk "BEGIN { print $z / $l }")"
done
echo "every version of the git-zipnn clone restored bit-exact; no object downloaded twice"
