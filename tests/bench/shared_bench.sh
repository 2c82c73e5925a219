#!/usr/bin/env bash
# What tensors shared by content store (docs/policy.md, "Parents"), before
# and after, on a real GPT (fp32, trained with AdamW on CPU by
# make_trajectory.py) and three files a researcher commits that hold its
# tensors under other names:
#
#   adapter  the model committed as out/model.safetensors, then three
#            saves of lora/adapter_model.safetensors: the model frozen
#            under base_model.model.<name> (as a PEFT model's whole state
#            dict names it) with rank-8 adapters on every attention
#            matrix, about 1.5% of the parameters, moving from save to save
#   naming   hf/model.safetensors and the same weights under a second
#            naming scheme, hf/original/consolidated.safetensors, in one
#            commit
#   export   three saves of out/model.safetensors, then the first re-saved
#            under new names as export/model.safetensors
#   sharded  a save cut into 3 shards by bytes, hf/model-0000k-of-00003,
#            beside the same weights under a second naming scheme in one
#            file, hf/original/consolidated.safetensors, in one commit:
#            steps 40, then 60 (the second commit's consolidated file is
#            the newest of its series)
#   frozen   the model committed as base/model.safetensors, then four
#            saves of ft/model.safetensors whose first half of tensors (in
#            file order) are the model's, frozen, the rest from later
#            steps (the newest of its series holds only part of its bytes
#            elsewhere)
#   state    six steps of out/model.safetensors beside
#            out/training_state.pt (torch.save of the same weights and
#            AdamW's state), one commit a step
#
# and, where nothing is shared, the time of `git add` of the six saves of
# a GPT bf16 run (38 MB each) over one path, median of RUNS, with the
# stored bytes of both builds (they must match).
#
#   GIT_ZIPNN_BEFORE_BIN_DIR=<dir> GIT_ZIPNN_BIN_DIR=<dir> [STEPS_DIR=<dir>] bash tests/bench/shared_bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
maker=${MAKE_TRAJECTORY:-../shared/data/make_trajectory.py}
before=${GIT_ZIPNN_BEFORE_BIN_DIR:?a folder with the git-zipnn before the change}
after=${GIT_ZIPNN_BIN_DIR:?a folder with the git-zipnn after the change}
top=/tmp/zipnn-transfer-bench
# STEPS_DIR: another trajectory's step-*.safetensors for the timing of
# adds where nothing is shared (the fp32 run above, say: generating the
# bf16 one takes most of an hour on 2 cores).
gpt=$top/gpt-fp32-adam steps=${STEPS_DIR:-$top/gpt-bf16}
[ -f "$gpt/step-000060.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 256 --layers 4 --dtype fp32 \
  --pt --steps 60 --every 10 --out "$gpt" >/dev/null
[ -f "$steps/step-000060.safetensors" ] || /usr/bin/python3 "$maker" --family gpt --width 512 --layers 8 \
  --dtype bf16 --steps 60 --every 10 --out "$steps" >/dev/null
shared=/tmp/zipnn-shared-bench
if [ ! -f "$shared/lora/3/adapter_model.safetensors" ]; then
  /usr/bin/python3 - "$gpt" "$shared" "$maker" <<'PY'
import os, sys, torch
gpt, out, maker = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(maker)))
from make_trajectory import load_safetensors, save_safetensors
model = load_safetensors(f"{gpt}/step-000060.safetensors")
g = torch.Generator().manual_seed(0)
adapters = {}
for name, t in model.items():
    if "self_attn" in name and t.dim() == 2:
        stem = name.rsplit(".", 1)[0] if name.endswith(".weight") else name
        adapters[f"base_model.model.{stem}.lora_A.weight"] = torch.randn(8, t.shape[1], generator=g) * 0.01
        adapters[f"base_model.model.{stem}.lora_B.weight"] = torch.zeros(t.shape[0], 8)
frozen = {f"base_model.model.{name}": t for name, t in model.items()}
for save in (1, 2, 3):
    for name in adapters:
        adapters[name] = adapters[name] + torch.randn(adapters[name].shape, generator=g) * 1e-3
    os.makedirs(f"{out}/lora/{save}", exist_ok=True)
    save_safetensors(f"{out}/lora/{save}/adapter_model.safetensors", {**frozen, **adapters})
# A second naming scheme: what a conversion script maps names to.
first = load_safetensors(f"{gpt}/step-000040.safetensors")
os.makedirs(f"{out}/naming", exist_ok=True)
save_safetensors(f"{out}/naming/consolidated.safetensors",
                 {name.replace("blocks.", "layers.").replace("self_attn.", "attention.").replace(".weight", ".w")
                      .replace(".bias", ".b"): t for name, t in reversed(list(first.items()))})
# The first save exported under new names.
early = load_safetensors(f"{gpt}/step-000020.safetensors")
os.makedirs(f"{out}/export", exist_ok=True)
save_safetensors(f"{out}/export/model.safetensors", {f"model.{name}": t for name, t in early.items()})
adapter_params = sum(t.numel() for t in adapters.values())
model_params = sum(t.numel() for t in model.values())
print(f"adapter weights: {adapter_params} of {adapter_params + model_params} parameters "
      f"({100 * adapter_params / (adapter_params + model_params):.2f}%)")
PY
fi

if [ ! -f "$shared/sharded/60/original/consolidated.safetensors" ]; then
  /usr/bin/python3 - "$gpt" "$shared" "$maker" <<'PY'
import os, sys
gpt, out, maker = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(maker)))
from make_trajectory import load_safetensors, save_safetensors
for step in (40, 60):
    model = load_safetensors(f"{gpt}/step-0000{step}.safetensors")
    total = sum(t.numel() * t.element_size() for t in model.values())
    shards, size = [{}], 0
    for name, t in model.items():
        if size >= total * len(shards) / 3 and len(shards) < 3:
            shards.append({})
        shards[-1][name] = t
        size += t.numel() * t.element_size()
    os.makedirs(f"{out}/sharded/{step}/original", exist_ok=True)
    for k, shard in enumerate(shards):
        save_safetensors(f"{out}/sharded/{step}/model-{k + 1:05d}-of-{len(shards):05d}.safetensors", shard)
    save_safetensors(f"{out}/sharded/{step}/original/consolidated.safetensors",
                     {name.replace("blocks.", "layers.").replace(".weight", ".w").replace(".bias", ".b"): t
                      for name, t in reversed(list(model.items()))})
PY
fi

if [ ! -f "$shared/frozen/ft-4.safetensors" ]; then
  mkdir -p "$shared/frozen"
  python3 - "$gpt" "$shared/frozen" <<'PY'
import sys
sys.path.insert(0, "tests")
from rename_tensors import read, write
gpt, out = sys.argv[1:]
base = read(f"{gpt}/step-000010.safetensors")
for k, step in enumerate((20, 30, 40, 50), 1):
    later = read(f"{gpt}/step-0000{step}.safetensors")
    write(f"{out}/ft-{k}.safetensors", [b if i < len(base) // 2 else l for i, (b, l) in enumerate(zip(base, later))])
PY
fi

. tests/bench/builds_env.sh
row() { printf '%-56s %12s %12s %9s %9s\n' "$@"; }
share() { python3 -c "print(f'{100 * $1 / $2:.2f}%')"; }

row "stored bytes (share of raw)" before after before after
for label in before after; do
  bin=${!label}
  repo "$bin" "adapter-$label"
  put "$gpt/step-000060.safetensors" out/model.safetensors
  put "$shared/lora/1/adapter_model.safetensors" lora/adapter_model.safetensors
  read -r first first_raw < <(stored '^lora/')
  for s in 2 3; do put "$shared/lora/$s/adapter_model.safetensors" lora/adapter_model.safetensors; done
  read -r all all_raw < <(stored '^lora/')
  declare "first_$label=$first" "all_$label=$all"
  repo "$bin" "naming-$label"
  mkdir -p hf/original
  cp "$gpt/step-000040.safetensors" hf/model.safetensors
  cp "$shared/naming/consolidated.safetensors" hf/original/consolidated.safetensors
  git add hf && git commit -qm hf
  read -r naming naming_raw < <(stored '^hf/original/')
  declare "naming_$label=$naming"
  repo "$bin" "sharded-$label"
  for s in 40 60; do
    rm -rf hf && cp -r "$shared/sharded/$s" hf && git add hf && git commit -qm "sharded $s"
    [ "$s" = 40 ] && read -r sharded40 sharded_raw < <(stored '^hf/original/')
  done
  read -r sharded_both sharded_both_raw < <(stored '^hf/original/')
  declare "sharded40_$label=$sharded40" "sharded_both_$label=$sharded_both"
  repo "$bin" "frozen-$label"
  put "$gpt/step-000010.safetensors" base/model.safetensors
  for k in 1 2 3 4; do put "$shared/frozen/ft-$k.safetensors" ft/model.safetensors; done
  read -r frozen frozen_raw < <(stored '^ft/')
  declare "frozen_$label=$frozen"
  repo "$bin" "state-$label" '*.safetensors' '*.pt'
  mkdir out
  for s in 10 20 30 40 50 60; do
    cp "$gpt/step-0000$s.safetensors" out/model.safetensors
    cp "$gpt/step-0000$s.pt" out/training_state.pt
    git add out && git commit -qm "step $s"
  done
  read -r state state_raw < <(stored '^out/')
  declare "state_$label=$state"
  repo "$bin" "export-$label"
  for s in 20 40 60; do put "$gpt/step-0000$s.safetensors" out/model.safetensors; done
  put "$shared/export/model.safetensors" export/model.safetensors
  read -r export export_raw < <(stored '^export/')
  declare "export_$label=$export"
done
row "adapter, first save (raw $first_raw)" "$first_before" "$first_after" "$(share "$first_before" "$first_raw")" \
  "$(share "$first_after" "$first_raw")"
row "adapter, 3 saves (raw $all_raw)" "$all_before" "$all_after" "$(share "$all_before" "$all_raw")" \
  "$(share "$all_after" "$all_raw")"
row "second naming scheme (raw $naming_raw)" "$naming_before" "$naming_after" \
  "$(share "$naming_before" "$naming_raw")" "$(share "$naming_after" "$naming_raw")"
row "naming scheme, 3 shards (raw $sharded_raw)" "$sharded40_before" "$sharded40_after" \
  "$(share "$sharded40_before" "$sharded_raw")" "$(share "$sharded40_after" "$sharded_raw")"
row "and a second save (raw $sharded_both_raw)" "$sharded_both_before" "$sharded_both_after" \
  "$(share "$sharded_both_before" "$sharded_both_raw")" "$(share "$sharded_both_after" "$sharded_both_raw")"
row "first save exported (raw $export_raw)" "$export_before" "$export_after" \
  "$(share "$export_before" "$export_raw")" "$(share "$export_after" "$export_raw")"
row "fine-tune, half frozen, 4 saves (raw $frozen_raw)" "$frozen_before" "$frozen_after" \
  "$(share "$frozen_before" "$frozen_raw")" "$(share "$frozen_after" "$frozen_raw")"
row "weights + training state, 6 steps (raw $state_raw)" "$state_before" "$state_after" \
  "$(share "$state_before" "$state_raw")" "$(share "$state_after" "$state_raw")"

# Nothing shared: each save's add over one path, both builds in turn.
printf '\ngit add of %s saves of %s over one path (s, median of %s; stored bytes)\n' \
  "$(ls "$steps"/step-*.safetensors | wc -l)" "$(basename "$steps")" "$runs"
declare -A took stored_by
for run in $(seq "$runs"); do
  for label in before after; do
    repo "${!label}" "steps-$label"
    t=0
    for f in "$steps"/step-*.safetensors; do
      cp "$f" model.safetensors
      sync
      s=$(date +%s.%N)
      git add model.safetensors
      t=$(python3 -c "import time; print($t + time.time() - $s)")
      git commit -qm step
    done
    took[$label]+="$t "
    stored_by[$label]=$(stored '^model')
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
b=$(echo "${took[before]}" | median) a=$(echo "${took[after]}" | median)
printf '%-10s %8.3f s  %s\n%-10s %8.3f s  %s\n%-10s %8.3f\n' before "$b" "${stored_by[before]}" after "$a" \
  "${stored_by[after]}" after/before "$(python3 -c "print($a / $b)")"
