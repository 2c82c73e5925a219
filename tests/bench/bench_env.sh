# What every benchmark beside Git LFS needs (sourced, from the top of the
# tree): a built git-zipnn first on PATH (GIT_ZIPNN_BIN_DIR, else built
# here); a HOME of its own in $work (removed at exit) with git-zipnn and
# Git LFS installed; and the helpers below to time rows and take medians.
command -v git-lfs >/dev/null || bash .ci/deps git-lfs
# GIT_ZIPNN_BIN_DIR: a folder holding a git-zipnn built already.
bin=${GIT_ZIPNN_BIN_DIR:-}
if [ -z "$bin" ]; then
  bazel build -c opt //cmd:git-zipnn >/dev/null 2>&1 || bazel build -c opt //cmd:git-zipnn
  bin=$PWD/bazel-bin/cmd
fi
work=$(mktemp -d /tmp/zipnn-lfs-bench-XXXXXX)
stops=""  # commands that stop the servers started below, run at exit
trap 'eval "$stops"; rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 PATH=$bin:$PATH
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
git config --global init.defaultBranch main
# From $work, outside any repository: inside one, install also writes
# that repository's hooks (the project's own, run from the top of the tree).
(cd "$work" && git zipnn install >/dev/null)
git lfs install --skip-repo >/dev/null

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

# Starts tests/lfs_server.py on a folder of $work (its ROOT $work/srv, its
# log $server_log), with git's credential helper answering for it; sets
# $port and $server, and stops it at exit.
start_lfs_server() {
  server_log=$work/server.log
  mkdir -p "$work/srv"
  python3 tests/lfs_server.py "$work/srv" bench:bench-pw >"$server_log" 2>&1 &
  server=$!
  stops+="kill $server 2>/dev/null; "
  for _ in $(seq 100); do grep -q listening "$server_log" && break; sleep 0.1; done
  port=$(grep -o '127.0.0.1:[0-9]*' "$server_log" | cut -d: -f2)
  printf 'http://bench:bench-pw@127.0.0.1:%s\n' "$port" >"$work/creds"
  git config --global credential.helper "store --file=$work/creds"
}
# The bytes of objects the server's downloads sent so far.
sent() { awk '$1 == "sent" { n += $2 } END { printf "%.0f", n }' "$server_log"; }

# A repository $work/<name> for `tool` (zipnn or lfs) with each of
# $files committed in turn as $file (default model.safetensors), its
# remote a new repository <name>.git on the server; with `each`, pushed
# after every commit. Leaves the shell in it.
commit_saves() {
  local tool=$1 name=$2 each=${3:-} f target=${file:-model.safetensors}
  rm -rf "$work/$name" "$work/srv/$name.git"
  git init -q --bare -b main "$work/srv/$name.git"
  git init -q "$work/$name"
  cd "$work/$name"
  git remote add origin "http://127.0.0.1:$port/$name.git"
  if [ "$tool" = zipnn ]; then git zipnn track "*.${target##*.}" >/dev/null; else git lfs track "*.${target##*.}" >/dev/null; fi
  git add .gitattributes && git commit -qm setup
  for f in "${files[@]}"; do
    cp "$f" "$target"
    git add "$target"
    git commit -qm "$(basename "$f")"
    if [ -n "$each" ]; then git push -q origin main 2>/dev/null; fi
  done
}

# Each of $files added and committed in turn as model.safetensors, in the
# repository the shell stands in: a run that overwrites one path.
add_overwritten() {
  local f
  for f in "${files[@]}"; do
    cp "$f" model.safetensors
    git add model.safetensors
    git commit -qm "$(basename "$f")"
  done
}
# The same in a new git-zipnn repository at DIR; leaves the shell in it.
commit_overwritten() {
  git init -q "$1"
  cd "$1"
  git zipnn track '*.safetensors' >/dev/null
  git add .gitattributes && git commit -qm setup
  add_overwritten
}

# Starts an OpenSSH server of the bench's own on 127.0.0.1 (Debian's
# openssh-server): its own host key, one client key, sessions with this
# HOME and PATH (the git-zipnn under test first). Sets $ssh_port and
# $plain_ssh (an ssh command that logs in to it), and stops it at exit.
start_ssh_server() {
  ssh_dir=$work/ssh
  mkdir -p "$ssh_dir"
  ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/client_key"
  cp "$ssh_dir/client_key.pub" "$ssh_dir/authorized_keys"
  ssh_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$ssh_dir/sshd_config" <<END
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $ssh_dir/host_key
AuthorizedKeysFile $ssh_dir/authorized_keys
PidFile $ssh_dir/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
SetEnv HOME=$HOME GIT_CONFIG_NOSYSTEM=1 PATH=$PATH
END
  cat >"$ssh_dir/ssh_config" <<END
Host *
  IdentityFile $ssh_dir/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
END
  { [ "$(id -u)" != 0 ] || mkdir -p /run/sshd; }
  /usr/sbin/sshd -f "$ssh_dir/sshd_config" -E "$ssh_dir/sshd.log"
  stops+="kill \$(cat '$ssh_dir/sshd.pid') 2>/dev/null; "
  for _ in $(seq 100); do ssh -F "$ssh_dir/ssh_config" -p "$ssh_port" 127.0.0.1 true && break; sleep 0.1; done
  plain_ssh="ssh -F '$ssh_dir/ssh_config'"
}

# The folder of six saves of a bf16 GPT (make_trajectory.py, 38 MB each),
# each tiled to about MB megabytes by tile_checkpoint.py (0: as they are),
# made once under /tmp/zipnn-transfer-bench and kept for the next run.
tiled_saves() {
  local mb=$1 top=/tmp/zipnn-transfer-bench size tiles f
  local src=$top/gpt-bf16
  [ -f "$src/step-000060.safetensors" ] || /usr/bin/python3 "${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}" \
    --family gpt --width 512 --layers 6 --dtype bf16 --steps 60 --every 10 --out "$src" >/dev/null
  if [ "$mb" = 0 ]; then
    echo "$src"
    return
  fi
  size=$(stat -L -c %s "$src/step-000060.safetensors")
  tiles=$(((mb * 1000000 + size / 2) / size))
  if [ ! -f "$top/tiled-$tiles/step-000060.safetensors" ]; then
    mkdir -p "$top/tiled-$tiles"
    for f in "$src"/step-*.safetensors; do
      python3 tests/bench/tile_checkpoint.py "$f" "$tiles" "$top/tiled-$tiles/$(basename "$f")" >/dev/null
    done
  fi
  echo "$top/tiled-$tiles"
}
