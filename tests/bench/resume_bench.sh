#!/usr/bin/env bash
# What a push and a fetch over the store protocol send again after they
# were stopped (issue 55: at most one part per connection of what had
# arrived). One object of SIZE MiB that no coder shrinks goes to a store
# served as an ssh remote serves it (the command runs here, through
# tests/dropping_link.py in place of the network, which counts the bytes
# each way). The first push is killed (SIGKILL) once the server holds
# PERCENT of the object, then pushed again; the same for a fetch into a
# clone. Printed: the object's size, what the server or the client had
# kept when the kill landed, and the bytes the second try moved (requests
# and answers included), also as a multiple of what was missing.
#
#   bash tests/bench/resume_bench.sh [SIZE_MIB] [PERCENT]
#
# Defaults: 1024 MiB, killed at 40%.
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-1024}
percent=${2:-40}
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
link=$PWD/tests/dropping_link.py
work=$(mktemp -d /tmp/zipnn-resume.XXXXXX)
trap 'pkill -f "$work" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export HOME=$work/home PATH=$bin:$PATH GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
# ssh stand-in: drops ssh's options and the host, runs the command here.
cat > "$work/here" <<'END'
#!/bin/sh
while [ $# -gt 1 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
shift
exec sh -c "$1"
END
chmod +x "$work/here"
# Each try counts into files of its own: the killed one's link may still
# be writing its counts while the next runs.
export GIT_SSH_COMMAND="/usr/bin/python3 $link $work/here" OUT_COUNT=$work/first-sent IN_COUNT=$work/first-received
cd "$work"
(cd "$HOME" && git zipnn install >/dev/null)
git init -q --bare hub.git
git init -q repo
cd repo
git zipnn track '*.bin' >/dev/null
head -c $((size << 20)) /dev/urandom >shard.bin
git add -A 2>/dev/null
git commit -qm shard
git remote add origin "host:$work/hub.git"
id=$(git cat-file -p HEAD:shard.bin | sed -n 's/.*xxh3-128:\([0-9a-f]*\).*/\1/p')
object=$(stat -c %s ".git/zipnn/objects/${id:0:2}/${id:2:2}/$id")
sum() { awk '{ n += $1 } END { print n + 0 }' "$1" 2>/dev/null || echo 0; }
# The most bytes a file GLOB names holds on disk: a transfer in ranges
# writes each where it belongs in a file sized to the object up front
# (sparse until then), so its size says nothing and its blocks say what
# came.
holds() { stat -c '%b %B' $1 2>/dev/null | awk '{ n = $1 * $2; if (n > m) m = n } END { print m + 0 }'; }
# kill_when GLOB COMMAND...: runs it (git-zipnn itself, not through git,
# which would leave it running), SIGKILLed once a file GLOB names
# holds $percent% of the object; then its server goes too, as over a
# link that dropped.
kill_when() {
  local glob=$1 at=$((object * percent / 100)) pid
  shift
  "$@" >/dev/null 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(holds "$glob")" -ge "$at" ] && break
    sleep 0.005
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pkill -KILL -f "serve-store.*$work" 2>/dev/null || true
  sleep 0.5
}
printf '%-6s %14s %14s %14s %10s\n' "" "object" "kept" "second try" "x rest"
row() {
  awk -v w="$1" -v o="$object" -v k="$2" -v s="$3" \
    'BEGIN { printf "%-6s %14d %14d %14d %10.4f\n", w, o, k, s, (o > k) ? s / (o - k) : 0 }'
}
kill_when "$work/hub.git/zipnn/objects/*/*/$id.tmp-*" git-zipnn push origin
kept=$(holds "$work/hub.git/zipnn/objects/*/*/$id.tmp-*")
OUT_COUNT=$work/sent git zipnn push -q origin
row push "$kept" "$(sum "$work/sent")"
git push -q "$work/hub.git" HEAD:main 2>/dev/null
cd "$work"
GIT_ZIPNN_SKIP_SMUDGE=1 GIT_SSH_COMMAND= git clone -q -b main "$work/hub.git" clone 2>/dev/null
cd clone
git config remote.origin.url "host:$work/hub.git"
kill_when ".git/zipnn/tmp/store-partial/$id-*" git-zipnn fetch
kept=$(holds ".git/zipnn/tmp/store-partial/$id-*")
IN_COUNT=$work/received git zipnn fetch -q
row fetch "$kept" "$(sum "$work/received")"
git zipnn pull -q
cmp -s shard.bin ../repo/shard.bin && echo "the clone's file matches" || { echo "MISMATCH" && exit 1; }
