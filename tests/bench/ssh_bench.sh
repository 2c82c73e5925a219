#!/usr/bin/env bash
# Pushing to and fetching from a store served over ssh when the link
# holds each connection to a rate, as most do: one object per connection
# (zipnn.concurrentTransfers 1, how every object moved before ranges)
# beside the default four connections, which move one large object in
# ranges on all of them at once. An OpenSSH server of the bench's own on
# 127.0.0.1 (Debian's openssh-server), every connection through
# tests/dropping_link.py with RATE set. Three saves of a bf16 GPT, tiled
# to about MB megabytes each, committed to one path; then, medians of
# RUNS runs taken in turn:
#
#   push          git push of the three commits to a new repository
#   clone         git clone with checkout of the newest save (its base)
#   old checkout  in that clone, git checkout of the first save's commit
#                 (the chain under it)
#
# and every clone restores each save bit-exact.
#
#   bash tests/bench/ssh_fetch_bench.sh [--rate MB/s] [--mb MB] [RUNS]
#
# Defaults: 25 MB/s per connection, 1000 MB (1 GB shards), 3 runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=25 mb=1000
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    *) break ;;
  esac
done
runs=${1:-3}
. tests/bench/bench_env.sh
dir=$(tiled_saves "$mb")
files=("$dir"/step-000010.safetensors "$dir"/step-000020.safetensors "$dir"/step-000030.safetensors)

start_ssh_server
slow_ssh="RATE=$((rate * 1000000)) /usr/bin/python3 '$PWD/tests/dropping_link.py' ssh -F '$ssh_dir/ssh_config'"
url="ssh://127.0.0.1:$ssh_port$work/hub.git"

commit_overwritten "$work/repo"
git remote add origin "$url"
first=$(git rev-list --reverse HEAD | sed -n 2p)

one_run() { # one_run NAME CONNECTIONS
  local name=$1 n=$2 clone=$work/clone-$1
  rm -rf "$clone" "$work/hub.git"
  git init -q --bare -b main "$work/hub.git"
  cd "$work/repo"
  # A new repository at the same URL: git's refs of the old one would
  # tell the push the objects are there.
  git for-each-ref --format='%(refname)' refs/remotes/origin | xargs -r -n1 git update-ref -d
  timed push "$name" git -c core.sshCommand="$slow_ssh" -c zipnn.concurrentTransfers="$n" push -q origin main
  stored=$(bytes_in "$work/hub.git/zipnn/objects")
  timed clone "$name" git -c core.sshCommand="$slow_ssh" -c zipnn.concurrentTransfers="$n" clone -q "$url" "$clone"
  cd "$clone"
  git config core.sshCommand "$slow_ssh"
  git config zipnn.concurrentTransfers "$n"
  timed "old checkout" "$name" git checkout -q "$first"
  local i=0 f
  for f in "${files[@]}"; do
    i=$((i + 1))
    git zipnn restore --rev "$(git rev-list --reverse main | sed -n "$((i + 1))p")" -o "$work/out" model.safetensors 2>/dev/null
    cmp "$work/out" "$f"
    rm "$work/out"
  done
  cd "$work"
  rm -rf "$clone"
}
for ((r = 1; r <= runs; r++)); do
  one_run one 1
  one_run four 4
done

printf '\nssh, connections held to %s MB/s each: 3 saves of %s MB (%s MB stored), medians of %s\n' \
  "$rate" "$([ "$mb" = 0 ] && echo 38 || echo "$mb")" "$((stored / 1000000))" "$runs"
printf '%-14s %12s %12s %8s\n' "" "1 connection" "4 at once" "ratio"
for row in push clone "old checkout"; do
  a=$(echo ${took["$row one"]} | tr ' ' '\n' | median)
  b=$(echo ${took["$row four"]} | tr ' ' '\n' | median)
  printf '%-14s %11.2fs %11.2fs %7.2fx\n' "$row" "$a" "$b" "$(awk "BEGIN { print $b / $a }")"
done
