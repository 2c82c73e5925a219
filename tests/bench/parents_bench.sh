#!/usr/bin/env bash
# What parents across series and standalone delta chunks store, before and
# after, on four runs a researcher commits (docs/policy.md, "Parents"):
#
#   fine-tune   a trained GPT (fp32) committed as out/model.safetensors,
#               then a fine-tune from it (make_trajectory.py --init, a
#               small --lr) saved as ft/checkpoint-N/model.safetensors
#   lightning   each epoch's torch.save of model and AdamW state as
#               ckpts/epoch=E-step=S.ckpt and again as ckpts/last.ckpt
#   trainer     out/checkpoint-N/ holding model.safetensors and the AdamW
#               state alone as optimizer.pt, as the Hugging Face Trainer
#               saves them
#   lora        the trained model frozen, with small adapter matrices
#               trained beside it, saved whole as lora/checkpoint-N/
#               model.safetensors; .zipnn.yaml names out/ as the parent
#
# Each run is committed save by save with the git-zipnn of
# GIT_ZIPNN_BEFORE_BIN_DIR (a build before the change) and of
# GIT_ZIPNN_BIN_DIR (after); a row gives the bytes of every object stored
# for the run's files, and for the fine-tune its first save against that
# save stored alone. Last, the time of `git add` of 10 step files (the
# GPT bf16 run of lfs_bench.sh, 51 MB each), median of RUNS, both builds.
#
#   GIT_ZIPNN_BEFORE_BIN_DIR=<dir> GIT_ZIPNN_BIN_DIR=<dir> bash tests/bench/parents_bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
before=${GIT_ZIPNN_BEFORE_BIN_DIR:?a folder with the git-zipnn before the change}
after=${GIT_ZIPNN_BIN_DIR:?a folder with the git-zipnn after the change}
top=/tmp/zipnn-parents-bench
base=$top/base ft=$top/ft steps=/tmp/zipnn-lfs-bench/gpt-bf16
[ -f "$base/step-000060.pt" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype fp32 \
  --steps 60 --every 20 --pt --out "$base" >/dev/null
[ -f "$ft/step-000020.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype fp32 \
  --steps 20 --every 10 --lr 1e-4 --init "$base/step-000060.safetensors" --out "$ft" >/dev/null
[ -f "$steps/step-000100.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 \
  --dtype bf16 --steps 100 --every 10 --out "$steps" >/dev/null
# The Lightning, Trainer and LoRA saves, made once from the base run.
if [ ! -f "$top/lora/3/model.safetensors" ]; then
  /usr/bin/python3 - "$base" "$top" "$maker" <<'EOF'
import os, sys, torch
base, top, maker = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(maker)))
from make_trajectory import load_safetensors as load_file, save_safetensors as save_file
for e, step in enumerate((20, 40, 60)):
    state = torch.load(f"{base}/step-{step:06d}.pt", weights_only=False)
    # Lightning: one state, saved under two names (the zip's folder name
    # differs, as torch.save takes it from the file name).
    os.makedirs(f"{top}/lightning/{e}", exist_ok=True)
    torch.save(state, f"{top}/lightning/{e}/epoch={e}-step={step}.ckpt")
    torch.save(state, f"{top}/lightning/{e}/last.ckpt")
    # Trainer: the optimizer's state alone.
    os.makedirs(f"{top}/trainer/{e}", exist_ok=True)
    torch.save(state["optimizer"], f"{top}/trainer/{e}/optimizer.pt")
# LoRA: the final model frozen, rank-8 adapters on every matrix moving.
frozen = load_file(f"{base}/step-000060.safetensors")
g = torch.Generator().manual_seed(0)
adapters = {}
for name, t in frozen.items():
    if t.dim() == 2:
        adapters[name + ".lora_A"] = torch.randn(8, t.shape[1], generator=g) * 0.01
        adapters[name + ".lora_B"] = torch.zeros(t.shape[0], 8)
for save in (1, 2, 3):
    for name in adapters:
        adapters[name] = adapters[name] + torch.randn(adapters[name].shape, generator=g) * 1e-3
    os.makedirs(f"{top}/lora/{save}", exist_ok=True)
    save_file({**frozen, **adapters}, f"{top}/lora/{save}/model.safetensors")
EOF
fi

work=$(mktemp -d /tmp/zipnn-parents-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1
mkdir "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
git config --global init.defaultBranch main

# A fresh repository for build `bin` in $work/$2, set up and tracking.
repo() {
  rm -rf "$work/$2"
  git init -q "$work/$2"
  cd "$work/$2"
  PATH=$1:$PATH git zipnn install --local >/dev/null
  PATH=$1:$PATH git zipnn track '*.safetensors' '*.pt' '*.ckpt' >/dev/null
  git add .gitattributes && git commit -qm setup
}
# commit BIN FILE AT...: copies FILE to each AT in turn and commits.
put() {
  local bin=$1 from=$2
  shift 2
  mkdir -p "$(dirname "$1")"
  cp "$from" "$1"
  PATH=$bin:$PATH git add "$1"
  PATH=$bin:$PATH git commit -qm "$1"
}
# The stored bytes of the versions git holds at paths matching $1, each
# object once (git zipnn log --json over every path).
stored() {
  PATH=$1:$PATH git zipnn log --json | python3 -c "
import json, re, sys
seen = {}
for v in json.load(sys.stdin):
    if re.search(sys.argv[1], v['path']): seen[v['id']] = (v['raw_bytes'], v['stored_bytes'])
print(sum(s for r, s in seen.values()), sum(r for r, s in seen.values()))" "$2"
}
row() { printf '%-44s %14s %14s %8s\n' "$@"; }
ratio() { python3 -c "print(f'{$2 / $1:.3f}')" "$@"; }

printf 'stored bytes (each object once), before and after; ratio after/before\n\n'
row "run: files" before after ratio
for label in before after; do
  bin=${!label}
  # fine-tune
  repo "$bin" "ft-$label"
  put "$bin" "$base/step-000060.safetensors" out/model.safetensors
  put "$bin" "$ft/step-000010.safetensors" ft/checkpoint-10/model.safetensors
  read -r first_stored first_raw < <(stored "$bin" '^ft/checkpoint-10/')
  alone=$(PATH=$bin:$PATH git zipnn compress -q -f -o "$work/alone" "$ft/step-000010.safetensors" && stat -c %s "$work/alone")
  put "$bin" "$ft/step-000020.safetensors" ft/checkpoint-20/model.safetensors
  read -r ft_stored ft_raw < <(stored "$bin" '^ft/')
  declare "ft_first_$label=$first_stored" "ft_alone_$label=$alone" "ft_all_$label=$ft_stored"
  # lightning
  repo "$bin" "lightning-$label"
  for e in 0 1 2; do
    step=$(( (e + 1) * 20 ))
    mkdir -p ckpts
    cp "$top/lightning/$e/epoch=$e-step=$step.ckpt" ckpts/
    cp "$top/lightning/$e/last.ckpt" ckpts/last.ckpt
    PATH=$bin:$PATH git add ckpts && PATH=$bin:$PATH git commit -qm "epoch $e"
  done
  read -r last_stored last_raw < <(stored "$bin" 'last\.ckpt$')
  read -r light_stored light_raw < <(stored "$bin" '^ckpts/')
  declare "last_$label=$last_stored" "light_$label=$light_stored"
  # trainer
  repo "$bin" "trainer-$label"
  for e in 0 1 2; do
    n=$(( (e + 1) * 20 ))
    mkdir -p "out/checkpoint-$n"
    cp "$base/step-0000$n.safetensors" "out/checkpoint-$n/model.safetensors"
    cp "$top/trainer/$e/optimizer.pt" "out/checkpoint-$n/optimizer.pt"
    PATH=$bin:$PATH git add out && PATH=$bin:$PATH git commit -qm "checkpoint $n"
  done
  read -r opt_stored opt_raw < <(stored "$bin" 'optimizer\.pt$')
  read -r trainer_stored trainer_raw < <(stored "$bin" '^out/')
  declare "opt_$label=$opt_stored" "trainer_$label=$trainer_stored"
  # lora
  repo "$bin" "lora-$label"
  put "$bin" "$base/step-000060.safetensors" out/model.safetensors
  printf 'parents:\n  "lora/**": out\n' > .zipnn.yaml
  git add .zipnn.yaml && git commit -qm parents
  for s in 1 2 3; do put "$bin" "$top/lora/$s/model.safetensors" "lora/checkpoint-$s/model.safetensors"; done
  read -r lora_stored lora_raw < <(stored "$bin" '^lora/')
  declare "lora_$label=$lora_stored"
done
row "fine-tune: first save (raw $first_raw)" "$ft_first_before" "$ft_first_after" "$(ratio "$ft_first_before" "$ft_first_after")"
row "fine-tune: first save alone" "$ft_alone_before" "$ft_alone_after" ""
row "  first save over alone" "$(ratio "$ft_alone_before" "$ft_first_before")" "$(ratio "$ft_alone_after" "$ft_first_after")" ""
row "fine-tune: 2 saves (raw $ft_raw)" "$ft_all_before" "$ft_all_after" "$(ratio "$ft_all_before" "$ft_all_after")"
row "lightning: last.ckpt, 3 saves (raw $last_raw)" "$last_before" "$last_after" "$(ratio "$last_before" "$last_after")"
row "  last.ckpt over raw" "$(ratio "$last_raw" "$last_before")" "$(ratio "$last_raw" "$last_after")" ""
row "lightning: all, 3 epochs (raw $light_raw)" "$light_before" "$light_after" "$(ratio "$light_before" "$light_after")"
row "trainer: optimizer.pt, 3 saves (raw $opt_raw)" "$opt_before" "$opt_after" "$(ratio "$opt_before" "$opt_after")"
row "trainer: all, 3 saves (raw $trainer_raw)" "$trainer_before" "$trainer_after" "$(ratio "$trainer_before" "$trainer_after")"
row "lora: 3 saves (raw $lora_raw)" "$lora_before" "$lora_after" "$(ratio "$lora_before" "$lora_after")"

# git add of 10 step files, both builds in turn.
printf '\ngit add of 10 step files (%s), median of %s\n' "$steps" "$runs"
declare -A took
for ((r = 0; r < runs; r++)); do
  for label in before after; do
    repo "${!label}" "steps-$label"
    mkdir run && cp "$steps"/step-*.safetensors run/
    t0=$(date +%s.%N)
    PATH=${!label}:$PATH git add run
    took[$label]+="$(python3 -c "print($(date +%s.%N) - $t0)") "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
b=$(echo "${took[before]}" | median) a=$(echo "${took[after]}" | median)
row "git add, 10 step files (s)" "$b" "$a" "$(ratio "$b" "$a")"
