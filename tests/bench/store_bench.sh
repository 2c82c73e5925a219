#!/usr/bin/env bash
# Moving a repository's objects to and from each kind of store over
# loopback: a folder (the bare repository's own store), ssh (an OpenSSH
# server of the bench's own, `serve-store` on the far side) and S3
# (s3rver from npm, as the tests use it). The saves of DIR are committed
# to one path with the default policy; then, medians of RUNS runs taken
# in turn:
#
#   push   git zipnn push REMOTE --all, the store emptied before (for S3,
#          a new prefix each run)
#   fetch  git zipnn fetch REMOTE --all in a clone made without its
#          checkpoints (GIT_ZIPNN_SKIP_SMUDGE=1), its store emptied before
#
# ssh1 is ssh on one connection (zipnn.concurrentTransfers 1), as objects
# moved before they went in ranges over four. Every object is checked
# where it lands, as always; the clone then
# restores the newest save bit-exact from what it fetched over S3.
#
#   bash tests/bench/store_bench.sh DIR [RUNS]
#
# DIR: the safetensors of one run, in name order (default: the ten 51 MB
# bf16 saves lfs_bench.sh trains).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(cd "${1:-/tmp/zipnn-lfs-bench/gpt-bf16}" && pwd)
runs=${2:-5}
s3rver=/opt/git-zipnn/s3rver/node_modules/.bin/s3rver
[ -x "$s3rver" ] || bash .ci/deps
. tests/bench/bench_env.sh
start_ssh_server
mkdir -p "$work/s3/data"
"$s3rver" -d "$work/s3/data" -a 127.0.0.1 -p 0 -s --configure-bucket zipnn >"$work/s3/log" 2>&1 &
stops+="kill $! 2>/dev/null; "
for _ in $(seq 200); do grep -q 'listening on 127.0.0.1:' "$work/s3/log" && break; sleep 0.05; done
s3_port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/s3/log" | cut -d: -f2)
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER

files=($(ls "$dir"/*.safetensors | sort -V))
raw=0
for f in "${files[@]}"; do raw=$((raw + $(stat -c %s "$f"))); done
git init -q --bare -b main "$work/hub.git"
git init -q --bare -b main "$work/ssh.git"
commit_overwritten "$work/repo"
rm model.safetensors
git push -q "$work/hub.git" main 2>/dev/null
# remotes NAME...: in the repository the shell stands in, the three
# stores; S3's prefix is the run's, so that each run starts empty.
remotes() {
  git remote add folder "$work/hub.git"
  git remote add ssh "ssh://127.0.0.1:$ssh_port$work/ssh.git"
  git config core.sshCommand "$plain_ssh"
  git remote add s3 "$work/hub.git"
  git config remote.s3.zipnnendpoint "http://127.0.0.1:$s3_port"
}
remotes
GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q "$work/hub.git" "$work/clone"
(cd "$work/clone" && remotes)
stored=$(bytes_in .git/zipnn/objects)

for ((r = 1; r <= runs; r++)); do
  git config remote.s3.zipnnurl "s3://zipnn/run-$r"
  (cd "$work/clone" && git config remote.s3.zipnnurl "s3://zipnn/run-$r")
  # The folder is on this file system, so a push links each object into
  # it; "copied" is the same push with links turned off, as to a folder on
  # another file system (a fetch copies either way).
  rm -rf "$work/hub.git/zipnn"
  timed push copied git -c zipnn.hardlinks=false zipnn push -q folder --all
  # ssh on one connection, as objects moved before ranges (the default is 4).
  rm -rf "$work/ssh.git/zipnn"
  timed push ssh1 git -c zipnn.concurrentTransfers=1 zipnn push -q ssh --all
  for store in folder ssh s3; do
    case $store in
      folder) rm -rf "$work/hub.git/zipnn" ;;
      ssh) rm -rf "$work/ssh.git/zipnn" ;;
    esac
    timed push $store git zipnn push -q $store --all
  done
  # ssh itself: the same bytes through the same sshd, with no work at either end.
  timed "ssh up" cat sh -c "tar -C .git/zipnn/objects -cf - . | $plain_ssh -p $ssh_port 127.0.0.1 'cat >/dev/null'"
  timed "ssh down" cat sh -c "$plain_ssh -p $ssh_port 127.0.0.1 'tar -C $work/repo/.git/zipnn/objects -cf - .' >/dev/null"
  cd "$work/clone"
  rm -rf .git/zipnn/objects
  timed fetch ssh1 git -c zipnn.concurrentTransfers=1 zipnn fetch -q ssh --all
  for store in folder ssh s3; do
    rm -rf .git/zipnn/objects
    timed fetch $store git zipnn fetch -q $store --all
  done
  cd "$work/repo"
done
cd "$work/clone"
git zipnn restore model.safetensors -o "$work/out"
cmp "$work/out" "${files[-1]}"

printf '\n%s saves of %s, %s bytes; %s bytes of objects (%.1f%%), medians of %s\n' "${#files[@]}" "$dir" "$raw" \
  "$stored" "$(awk "BEGIN { print 100 * $stored / $raw }")" "$runs"
echo "| store | push | fetch |"
echo "|---|---|---|"
p=$(echo ${took["push copied"]} | tr ' ' '\n' | median)
printf '| folder, copied (zipnn.hardlinks false) | %.3f s, %.0f MB/s | as below |\n' "$p" \
  "$(awk "BEGIN { print $stored / $p / 1e6 }")"
for store in folder ssh ssh1 s3; do
  p=$(echo ${took["push $store"]} | tr ' ' '\n' | median)
  f=$(echo ${took["fetch $store"]} | tr ' ' '\n' | median)
  printf '| %s | %.3f s, %.0f MB/s | %.3f s, %.0f MB/s |\n' "$store" "$p" "$(awk "BEGIN { print $stored / $p / 1e6 }")" \
    "$f" "$(awk "BEGIN { print $stored / $f / 1e6 }")"
done
printf 'ssh alone (tar of the objects through the same sshd, no git-zipnn): %.3f s up, %.3f s down\n' \
  "$(echo ${took["ssh up cat"]} | tr ' ' '\n' | median)" "$(echo ${took["ssh down cat"]} | tr ' ' '\n' | median)"
