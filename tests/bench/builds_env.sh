# What the benchmarks that compare two builds of git-zipnn share (sourced,
# from the top of the tree): a HOME of their own in $work (removed at
# exit), and helpers that commit files with either build and sum what the
# store holds for them.
work=$(mktemp -d /tmp/zipnn-builds-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
git config --global init.defaultBranch main
plain_path=$PATH

# repo BUILD NAME [PATTERN...]: a fresh repository in $work/NAME, set up
# and tracking PATTERNs (default *.safetensors), with BUILD (a folder)
# first on PATH from here on; leaves the shell in it.
repo() {
  PATH=$1:$plain_path
  rm -rf "$work/$2"
  git init -q "$work/$2"
  cd "$work/$2"
  shift 2
  git zipnn install --local >/dev/null
  git zipnn track "${@:-*.safetensors}" >/dev/null
  git add .gitattributes && git commit -qm setup
}
# put FILE AT: copies FILE to AT and commits it.
put() {
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2"
  git add "$2"
  git commit -qm "$2"
}
# The stored bytes and raw bytes of the versions git holds at paths
# matching the regular expression $1, each object once.
stored() {
  git zipnn log --json | python3 -c "
import json, re, sys
seen = {}
for v in json.load(sys.stdin):
    if re.search(sys.argv[1], v['path']): seen[v['id']] = (v['raw_bytes'], v['stored_bytes'])
print(sum(s for r, s in seen.values()), sum(r for r, s in seen.values()))" "$1"
}
