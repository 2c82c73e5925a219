#!/usr/bin/env bash
# What parents across series and standalone delta chunks store, before and
# after, on four runs a researcher commits (docs/policy.md, "Parents"):
#
#   fine-tune   a trained GPT (fp32) committed as out/model.safetensors,
#               then a fine-tune from it (make_trajectory.py --init, a
#               small --lr) saved as ft/checkpoint-N/model.safetensors
#   lightning   each epoch's torch.save of model and AdamW state as
#               ckpts/epoch=E-step=S.ckpt and again as ckpts/last.ckpt;
#               which of the two git cleans first (its order of the
#               folder) holds the bytes, the other is its twin
#   trainer     out/checkpoint-N/ holding model.safetensors and the AdamW
#               state alone as optimizer.pt, as the Hugging Face Trainer
#               saves them
#   lora        the trained model frozen, with small adapter matrices
#               trained beside it, saved whole as lora/checkpoint-N/
#               model.safetensors; .zipnn.yaml names out/ as the parent
#
#               and, at the end, the best save (the first) re-saved as
#               out/pytorch_model.bin: a twin of a version that is no
#               longer the newest of its series
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
    save_file(f"{top}/lora/{save}/model.safetensors", {**frozen, **adapters})
EOF
fi
if [ ! -f "$top/trainer/best/pytorch_model.bin" ]; then
  /usr/bin/python3 - "$base" "$top" "$maker" <<'EOF'
import os, sys, torch
base, top, maker = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(maker)))
from make_trajectory import load_safetensors
os.makedirs(f"{top}/trainer/best", exist_ok=True)
torch.save(load_safetensors(f"{base}/step-000020.safetensors"), f"{top}/trainer/best/pytorch_model.bin")
EOF
fi

. tests/bench/builds_env.sh
tracked=('*.safetensors' '*.pt' '*.ckpt' '*.bin')

# Of each commit, the smaller of its two files' objects, and their raw
# bytes: what the second name of each save costs.
second() {
  git zipnn log --json | python3 -c "
import json, sys
commits = {}
for v in json.load(sys.stdin):
    commits.setdefault(v['commit'], []).append((v['stored_bytes'], v['raw_bytes']))
pairs = [min(c) for c in commits.values() if len(c) == 2]
print(sum(s for s, r in pairs), sum(r for s, r in pairs))"
}
row() { printf '%-44s %14s %14s %8s\n' "$@"; }
ratio() { python3 -c "print(f'{$2 / $1:.3f}')" "$@"; }

printf 'stored bytes (each object once), before and after; ratio after/before\n\n'
row "run: files" before after ratio
for label in before after; do
  bin=${!label}
  # fine-tune
  repo "$bin" "ft-$label" "${tracked[@]}"
  put "$base/step-000060.safetensors" out/model.safetensors
  put "$ft/step-000010.safetensors" ft/checkpoint-10/model.safetensors
  read -r first_stored first_raw < <(stored '^ft/checkpoint-10/')
  alone=$(git zipnn compress -q -f -o "$work/alone" "$ft/step-000010.safetensors" && stat -c %s "$work/alone")
  put "$ft/step-000020.safetensors" ft/checkpoint-20/model.safetensors
  read -r ft_stored ft_raw < <(stored '^ft/')
  declare "ft_first_$label=$first_stored" "ft_alone_$label=$alone" "ft_all_$label=$ft_stored"
  # lightning
  repo "$bin" "lightning-$label" "${tracked[@]}"
  for e in 0 1 2; do
    step=$(( (e + 1) * 20 ))
    mkdir -p ckpts
    cp "$top/lightning/$e/epoch=$e-step=$step.ckpt" ckpts/
    cp "$top/lightning/$e/last.ckpt" ckpts/last.ckpt
    git add ckpts && git commit -qm "epoch $e"
  done
  read -r twin_stored twin_raw < <(second)
  read -r light_stored light_raw < <(stored '^ckpts/')
  declare "twin_$label=$twin_stored" "light_$label=$light_stored"
  # trainer
  repo "$bin" "trainer-$label" "${tracked[@]}"
  for e in 0 1 2; do
    n=$(( (e + 1) * 20 ))
    mkdir -p "out/checkpoint-$n"
    cp "$base/step-0000$n.safetensors" "out/checkpoint-$n/model.safetensors"
    cp "$top/trainer/$e/optimizer.pt" "out/checkpoint-$n/optimizer.pt"
    git add out && git commit -qm "checkpoint $n"
  done
  read -r opt_stored opt_raw < <(stored 'optimizer\.pt$')
  read -r trainer_stored trainer_raw < <(stored '^out/checkpoint-')
  put "$top/trainer/best/pytorch_model.bin" out/pytorch_model.bin
  read -r best_stored best_raw < <(stored '^out/pytorch_model\.bin$')
  declare "opt_$label=$opt_stored" "trainer_$label=$trainer_stored" "best_$label=$best_stored"
  # lora
  repo "$bin" "lora-$label" "${tracked[@]}"
  put "$base/step-000060.safetensors" out/model.safetensors
  printf 'parents:\n  "lora/**": out\n' > .zipnn.yaml
  git add .zipnn.yaml 2>/dev/null && git commit -qm parents  # the build before warns of the key
  # (The build before warns of the key it does not know at every add.)
  for s in 1 2 3; do put "$top/lora/$s/model.safetensors" "lora/checkpoint-$s/model.safetensors" 2>/dev/null; done
  read -r lora_stored lora_raw < <(stored '^lora/')
  declare "lora_$label=$lora_stored"
done
row "fine-tune: first save (raw $first_raw)" "$ft_first_before" "$ft_first_after" "$(ratio "$ft_first_before" "$ft_first_after")"
row "fine-tune: first save alone" "$ft_alone_before" "$ft_alone_after" ""
row "  first save over alone" "$(ratio "$ft_alone_before" "$ft_first_before")" "$(ratio "$ft_alone_after" "$ft_first_after")" ""
row "fine-tune: 2 saves (raw $ft_raw)" "$ft_all_before" "$ft_all_after" "$(ratio "$ft_all_before" "$ft_all_after")"
row "lightning: 2nd name, 3 saves (raw $twin_raw)" "$twin_before" "$twin_after" "$(ratio "$twin_before" "$twin_after")"
row "  2nd name over raw" "$(ratio "$twin_raw" "$twin_before")" "$(ratio "$twin_raw" "$twin_after")" ""
row "lightning: all, 3 epochs (raw $light_raw)" "$light_before" "$light_after" "$(ratio "$light_before" "$light_after")"
row "trainer: optimizer.pt, 3 saves (raw $opt_raw)" "$opt_before" "$opt_after" "$(ratio "$opt_before" "$opt_after")"
row "trainer: all, 3 saves (raw $trainer_raw)" "$trainer_before" "$trainer_after" "$(ratio "$trainer_before" "$trainer_after")"
row "trainer: best save re-saved (raw $best_raw)" "$best_before" "$best_after" "$(ratio "$best_before" "$best_after")"
row "  best save over raw" "$(ratio "$best_raw" "$best_before")" "$(ratio "$best_raw" "$best_after")" ""
row "lora: 3 saves (raw $lora_raw)" "$lora_before" "$lora_after" "$(ratio "$lora_before" "$lora_after")"

# git add of 10 step files, both builds in turn.
printf '\ngit add of 10 step files (%s), median of %s\n' "$steps" "$runs"
declare -A took
for ((r = 0; r < runs; r++)); do
  for label in before after; do
    repo "${!label}" "steps-$label"
    mkdir run && cp "$steps"/step-*.safetensors run/
    t0=$(date +%s.%N)
    git add run
    took[$label]+="$(python3 -c "print($(date +%s.%N) - $t0)") "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
b=$(echo "${took[before]}" | median) a=$(echo "${took[after]}" | median)
row "git add, 10 step files (s)" "$b" "$a" "$(ratio "$b" "$a")"
