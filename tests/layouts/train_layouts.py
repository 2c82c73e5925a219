#!/usr/bin/python3
"""Checkpoint folders in the shapes real training frameworks leave behind.

Trains one small character-level transformer (about 80k parameters, AdamW,
warmup + linear-decay LR) on the licence texts every Debian machine ships in
/usr/share/common-licenses, on CPU, single-threaded and seeded, so two runs
produce byte-identical files. A second, separate pair of small models (an
encoder and a decoder of different shapes, each with its own AdamW) is
trained alongside for the `sidebyside` layout.

Every N-th step the SAME training state is written in each requested layout
(HF Trainer, its save_total_limit=1 variant, sharded and unsharded
safetensors, DeepSpeed ZeRO, Megatron tensor-parallel, Lightning, numbered
step files, a file overwritten in place, two unrelated models side by side).
For layout L and save k the script leaves DIR/L/<k>/ holding exactly what
that framework's output folder (under `out/`) would hold right after save
k: layouts that keep old saves carry them forward (as hard links to the
previous snapshot, to save disk), layouts that prune or overwrite don't.
A test can then copy each snapshot into a work tree in turn, `git add -A`
and commit, which is how a checkpoint series reaches git in real life.
DIR/manifest.json lists each snapshot's files and its training step.

The point is to exercise git-zipnn on the file names, container formats
(safetensors, torch.save zip/pickle), tensor splits (shards, ZeRO flat
partitions, tensor-parallel halves) and dtypes that people really commit,
rather than on one synthetic file.

Usage: /usr/bin/python3 tests/layouts/train_layouts.py --out DIR
         [--saves N] [--every S] [--layouts a,b,...] [--dtype fp32|bf16]
Needs Debian's python3-torch (apt-get install python3-torch); no other
packages, no network.
"""
import argparse
import glob
import json
import os
import random
import shutil
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LAYOUTS = ["trainer", "trainer-limit1", "sharded", "unsharded", "deepspeed",
           "megatron", "lightning", "stepfiles", "overwrite", "sidebyside"]

STEPS_PER_EPOCH = 40   # nominal epoch length, used for "epoch" fields
SEQ = 32               # context length of the transformer
BATCH = 8
# Fixed vocabulary: newline plus printable ASCII, so the shapes never depend
# on which characters the licence files happen to contain.
VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))   # 96 symbols


# ---------------------------------------------------------------- data

def corpus():
    text = []
    for p in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(p):
            with open(p, encoding="utf-8", errors="ignore") as f:
                text.append(f.read())
    s = "\n".join(text).replace("\t", " ")
    index = {c: i for i, c in enumerate(VOCAB)}
    ids = [index[c] for c in s if c in index]
    if len(ids) < 10000:
        sys.exit("train_layouts: too little text under /usr/share/common-licenses")
    return torch.tensor(ids, dtype=torch.long)


# ---------------------------------------------------------------- models

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.attn_qkv = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp_fc = nn.Linear(d, 2 * d)
        self.mlp_proj = nn.Linear(2 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.attn_qkv(self.ln_1(x)).split(d, dim=2)
        def heads(z):
            return z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.mlp_fc(self.ln_2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d=64, layers=2, heads=4, seq=SEQ):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1),
                             persistent=False)

    def forward(self, x):
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
        for blk in self.h:
            h = blk(h, self.mask)
        return self.lm_head(self.ln_f(h))


def side_models(vocab, ctx=16):
    """Encoder (context window -> 32-d code) and decoder (code -> next char).
    Both are nn.Sequential on purpose: their tensor names overlap
    ("0.weight", "2.weight", ...) while every shape differs."""
    enc = nn.Sequential(nn.Embedding(vocab, 16), nn.Flatten(), nn.Linear(ctx * 16, 128),
                        nn.GELU(), nn.Linear(128, 32))
    dec = nn.Sequential(nn.Linear(32, 192), nn.GELU(), nn.Linear(192, 192), nn.GELU(),
                        nn.Linear(192, vocab))
    return enc, dec


def param_groups(model, wd):
    """HF-style split: matrices decay, biases and norms do not."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def lr_factor(step, warmup=10, horizon=1000):
    # Independent of --saves, so a longer run starts with the same saves.
    if step < warmup:
        return (step + 1) / warmup
    return max(0.1, 1.0 - (step - warmup) / horizon)


# ---------------------------------------------------------------- writers

ST_DTYPE = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
            torch.int64: "I64"}


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:          # numpy has no bfloat16
        t = t.view(torch.uint8)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Safetensors by hand: u64 header length, JSON header, raw data."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name]
        b = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def write_text(path, s):
    with open(path, "w") as f:
        f.write(s)


def cast(sd, dtype):
    return {k: (v.detach().to(dtype) if v.is_floating_point() else v.detach()).clone()
            for k, v in sd.items()}


class Snapshots:
    """Builds DIR/<layout>/<k>/ for one layout. Files a save writes are new
    files in snapshot k; files still present from earlier saves are hard links
    to the previous snapshot's copy (never written again, so sharing inodes is
    safe)."""

    def __init__(self, root, layout):
        self.base = os.path.join(root, layout)
        shutil.rmtree(self.base, ignore_errors=True)
        self.live = {}        # relative path -> file holding its current bytes
        self.k = 0
        self.dir = None
        self.written = set()

    def begin(self, k):
        self.k = k
        self.dir = os.path.join(self.base, str(k))
        os.makedirs(self.dir)
        self.written = set()

    def path(self, rel):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        self.written.add(rel)
        self.live[rel] = p
        return p

    def delete_under(self, prefix):
        for rel in [r for r in self.live if r.startswith(prefix) and r not in self.written]:
            del self.live[rel]

    def end(self):
        for rel, src in sorted(self.live.items()):
            if rel in self.written:
                continue
            dst = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.link(src, dst)
            self.live[rel] = dst
        return sorted(self.live)


# ---------------------------------------------------------------- layouts
# Each takes the snapshot builder and the training state `st` at this save.

def hf_checkpoint(snap, st, sharded=False, full=True):
    d = f"out/checkpoint-{st['step']}/"
    weights = cast(st["model"], st["dtype"])
    meta = {"format": "pt"}
    if sharded:
        names = sorted(weights)
        sizes = [weights[n].numel() * weights[n].element_size() for n in names]
        total, acc, cut = sum(sizes), 0, len(names)
        for i, s in enumerate(sizes):
            if acc + s / 2 >= total / 2:
                cut = i
                break
            acc += s
        cut = min(max(cut, 1), len(names) - 1)
        parts = [names[:cut], names[cut:]]
        weight_map = {}
        for i, part in enumerate(parts, 1):
            fn = f"model-{i:05d}-of-00002.safetensors"
            write_safetensors(snap.path(d + fn), {n: weights[n] for n in part}, meta)
            weight_map.update({n: fn for n in part})
        write_json(snap.path(d + "model.safetensors.index.json"),
                   {"metadata": {"total_size": total}, "weight_map": weight_map})
    else:
        write_safetensors(snap.path(d + "model.safetensors"), weights, meta)
    torch.save(st["optimizer"], snap.path(d + "optimizer.pt"))
    if full:
        torch.save(st["scheduler"], snap.path(d + "scheduler.pt"))
        torch.save(st["rng"], snap.path(d + "rng_state.pth"))
        write_json(snap.path(d + "trainer_state.json"), {
            "best_metric": None, "best_model_checkpoint": None,
            "epoch": st["step"] / STEPS_PER_EPOCH, "global_step": st["step"],
            "is_hyper_param_search": False, "is_local_process_zero": True,
            "is_world_process_zero": True, "log_history": st["log"],
            "logging_steps": 5, "max_steps": st["max_steps"],
            "num_train_epochs": -(-st["max_steps"] // STEPS_PER_EPOCH),
            "save_steps": st["every"], "train_batch_size": BATCH,
            "total_flos": 0.0, "trial_name": None, "trial_params": None})


def lay_trainer(snap, st):
    hf_checkpoint(snap, st)


def lay_trainer_limit1(snap, st):
    snap.delete_under("out/checkpoint-")          # rotate: keep only the newest
    hf_checkpoint(snap, st)


def lay_sharded(snap, st):
    hf_checkpoint(snap, st, sharded=True, full=False)


def lay_unsharded(snap, st):
    hf_checkpoint(snap, st, sharded=False, full=False)


def flat_groups(model, opt):
    """ZeRO-style flattening: one flat fp32 vector per param group (params,
    exp_avg, exp_avg_sq), padded to an even length."""
    out = []
    for g in opt.param_groups:
        pieces = {"params": [], "exp_avg": [], "exp_avg_sq": []}
        for p in g["params"]:
            s = opt.state[p]
            pieces["params"].append(p.detach().reshape(-1))
            pieces["exp_avg"].append(s["exp_avg"].reshape(-1))
            pieces["exp_avg_sq"].append(s["exp_avg_sq"].reshape(-1))
        flat = {k: torch.cat(v) for k, v in pieces.items()}
        if flat["params"].numel() % 2:
            flat = {k: torch.cat([v, v.new_zeros(1)]) for k, v in flat.items()}
        out.append(flat)
    return out


def lay_deepspeed(snap, st):
    s = st["step"]
    d = f"out/global_step{s}/"
    ds_config = {"train_micro_batch_size_per_gpu": BATCH // 2, "gradient_accumulation_steps": 1,
                 "bf16": {"enabled": st["dtype"] == torch.bfloat16},
                 "zero_optimization": {"stage": 2}, "gradient_clipping": 1.0}
    model = st["model_obj"]
    torch.save({
        "module": cast(st["model"], st["dtype"]),
        "buffer_names": [],
        "optimizer": None,
        "param_shapes": [{n: p.shape for n, p in model.named_parameters() if (p.ndim >= 2) == dec}
                         for dec in (True, False)],
        "lr_scheduler": st["scheduler"],
        "sparse_tensor_module_names": set(),
        "skipped_steps": 0,
        "global_steps": s,
        "global_samples": s * BATCH,
        "dp_world_size": 2,
        "mp_world_size": 1,
        "ds_config": ds_config,
        "ds_version": "0.9.5",
    }, snap.path(d + "mp_rank_00_model_states.pt"))
    groups = flat_groups(model, st["opt_obj"])
    for rank in range(2):
        def half(v):
            n = v.numel() // 2
            return v[rank * n:(rank + 1) * n].clone()
        base_state = {gi: {"step": torch.tensor(float(s)), "exp_avg": half(g["exp_avg"]),
                           "exp_avg_sq": half(g["exp_avg_sq"])} for gi, g in enumerate(groups)}
        pg = [{k: v for k, v in g.items() if k != "params"} | {"params": [gi]}
              for gi, g in enumerate(st["optimizer"]["param_groups"])]
        torch.save({
            "optimizer_state_dict": {
                "loss_scaler": None, "dynamic_loss_scale": False, "overflow": False,
                "clip_grad": 1.0,
                "base_optimizer_state": {"state": base_state, "param_groups": pg},
                "single_partition_of_fp32_groups": [half(g["params"]) for g in groups],
                "zero_stage": 2,
                # the padding added to make a group even sits in the last rank
                "group_paddings": [(g["params"].numel() - sum(p.numel() for p in og["params"]))
                                   if rank == 1 else 0
                                   for g, og in zip(groups, st["opt_obj"].param_groups)],
                "partition_count": [2, 2],
                "ds_version": "0.9.5",
            },
            "ds_config": ds_config,
            "ds_version": "0.9.5",
        }, snap.path(d + f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"))
    write_text(snap.path("out/latest"), f"global_step{s}")


def lay_megatron(snap, st):
    s = st["step"]
    opt = st["opt_obj"]
    split = lambda t: t.ndim >= 2 and t.shape[0] % 2 == 0   # matrices only; norms/biases replicated
    for rank in range(2):
        def part(t):
            if not split(t):
                return t.detach().clone()
            n = t.shape[0] // 2
            return t.detach()[rank * n:(rank + 1) * n].clone()
        sd = {k: part(v) for k, v in st["model"].items()}
        state, groups, masters, idx = {}, [], [], 0
        for g in opt.param_groups:
            ids, m = [], []
            for p in g["params"]:
                ps = opt.state[p]
                state[idx] = {"step": ps["step"].clone(), "exp_avg": part(ps["exp_avg"]),
                              "exp_avg_sq": part(ps["exp_avg_sq"])}
                m.append(part(p))
                ids.append(idx)
                idx += 1
            groups.append({k: v for k, v in g.items() if k != "params"} | {"params": ids})
            masters.append(m)
        args = argparse.Namespace(
            tensor_model_parallel_size=2, pipeline_model_parallel_size=1, num_layers=2,
            hidden_size=64, num_attention_heads=4, seq_length=SEQ, micro_batch_size=BATCH,
            lr=1e-3, bf16=st["dtype"] == torch.bfloat16, iteration=s)
        torch.save({
            "args": args,
            "checkpoint_version": 3.0,
            "iteration": s,
            "model": {"language_model": cast(sd, st["dtype"])},
            "optimizer": {"optimizer": {"state": state, "param_groups": groups},
                          "fp32_from_fp16_params": masters},
            "opt_param_scheduler": {"max_lr": 1e-3, "num_steps": s * BATCH,
                                    "warmup_steps": 10, "decay_style": "linear"},
            "rng_state": [{"random_rng_state": st["rng"]["python"],
                           "np_rng_state": st["rng"]["numpy"],
                           "torch_rng_state": st["rng"]["cpu"],
                           "rng_tracker_states": {}}],
        }, snap.path(f"out/iter_{s:07d}/mp_rank_{rank:02d}/model_optim_rng.pt"))
    write_text(snap.path("out/latest_checkpointed_iteration.txt"), str(s))


def lay_lightning(snap, st):
    s = st["step"]
    e = s // STEPS_PER_EPOCH
    torch.save({
        "epoch": e,
        "global_step": s,
        "pytorch-lightning_version": "1.9.5",
        "state_dict": {"model." + k: v for k, v in st["model"].items()},
        "loops": {"fit_loop": {"epoch_progress": {"current": {"completed": e}},
                               "epoch_loop.batch_progress": {"current": {"completed": s}}}},
        "callbacks": {"ModelCheckpoint{'monitor': None, 'mode': 'min', 'every_n_train_steps': %d}"
                      % st["every"]: {"dirpath": "out/checkpoints", "save_top_k": -1}},
        "optimizer_states": [st["optimizer"]],
        "lr_schedulers": [st["scheduler"]],
        "hparams_name": "kwargs",
        "hyper_parameters": {"d_model": 64, "layers": 2, "lr": 1e-3},
    }, snap.path(f"out/checkpoints/epoch={e}-step={s}.ckpt"))


def lay_stepfiles(snap, st):
    s = st["step"]
    write_safetensors(snap.path(f"out/step_{s:06d}.safetensors"),
                      cast(st["model"], st["dtype"]), {"step": str(s)})
    torch.save({"model": st["model"], "optimizer": st["optimizer"], "step": s},
               snap.path(f"out/step_{s:06d}.pt"))


def lay_overwrite(snap, st):
    write_safetensors(snap.path("out/model.safetensors"), cast(st["model"], st["dtype"]),
                      {"format": "pt"})
    torch.save(st["optimizer"], snap.path("out/optimizer.pt"))


def lay_sidebyside(snap, st):
    s = st["step"]
    for name in ("encoder", "decoder"):
        torch.save({"model": st[name], "optimizer": st[name + "_opt"], "step": s},
                   snap.path(f"out/{name}-step{s}.pt"))


WRITERS = {"trainer": lay_trainer, "trainer-limit1": lay_trainer_limit1,
           "sharded": lay_sharded, "unsharded": lay_unsharded, "deepspeed": lay_deepspeed,
           "megatron": lay_megatron, "lightning": lay_lightning, "stepfiles": lay_stepfiles,
           "overwrite": lay_overwrite, "sidebyside": lay_sidebyside}


# ---------------------------------------------------------------- main

def snapshot_state(x):
    """Deep copy of a (nested) state dict, so later steps can't mutate it."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, dict):
        return {k: snapshot_state(v) for k, v in x.items()}
    if isinstance(x, list):
        return [snapshot_state(v) for v in x]
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--saves", type=int, default=4)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16",
                    help="dtype of the saved weights (safetensors, DeepSpeed module, "
                         "Megatron model); optimizer states and other .pt files stay fp32")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    layouts = [l for l in a.layouts.split(",") if l]
    bad = [l for l in layouts if l not in WRITERS]
    if bad or not layouts:
        ap.error(f"unknown layout(s) {bad}; known: {','.join(LAYOUTS)}")
    if a.saves < 1 or a.every < 1:
        ap.error("--saves and --every must be >= 1")

    t0 = time.time()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    random.seed(a.seed)
    torch.use_deterministic_algorithms(True)

    data = corpus()
    V = len(VOCAB)
    model = TinyGPT(V)
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-3, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    enc, dec = side_models(V)
    enc_opt = torch.optim.AdamW(enc.parameters(), lr=2e-3, weight_decay=0.01)
    dec_opt = torch.optim.AdamW(dec.parameters(), lr=2e-3, weight_decay=0.01)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"train_layouts: model {nparams} params, side models "
          f"{sum(p.numel() for p in enc.parameters())}+{sum(p.numel() for p in dec.parameters())}",
          file=sys.stderr)

    os.makedirs(a.out, exist_ok=True)
    snaps = {l: Snapshots(a.out, l) for l in layouts}
    manifest = {"saves": a.saves, "every": a.every, "dtype": a.dtype, "seed": a.seed,
                "layouts": {l: [] for l in layouts}}
    max_steps = a.saves * a.every
    log, running = [], []
    wdtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    for step in range(1, max_steps + 1):
        ix = torch.randint(0, len(data) - SEQ - 1, (BATCH,))
        x = torch.stack([data[i:i + SEQ] for i in ix])
        y = torch.stack([data[i + 1:i + SEQ + 1] for i in ix])
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running.append(loss.item())

        # the side-by-side pair: predict the char after a 16-char window
        ctx = x[:, :16]
        side_loss = F.cross_entropy(dec(enc(ctx)), x[:, 16])
        enc_opt.zero_grad(set_to_none=True)
        dec_opt.zero_grad(set_to_none=True)
        side_loss.backward()
        enc_opt.step()
        dec_opt.step()

        if step % 5 == 0:
            log.append({"epoch": round(step / STEPS_PER_EPOCH, 4),
                        "learning_rate": sched.get_last_lr()[0],
                        "loss": round(sum(running) / len(running), 4), "step": step})
            running = []
        if step % a.every:
            continue
        k = step // a.every
        st = {
            "step": step, "every": a.every, "max_steps": max_steps, "dtype": wdtype,
            "model": snapshot_state(model.state_dict()),
            "optimizer": snapshot_state(opt.state_dict()),
            "scheduler": snapshot_state(sched.state_dict()),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "cpu": torch.get_rng_state()},
            "log": [dict(e) for e in log],
            "model_obj": model, "opt_obj": opt,
            "encoder": snapshot_state(enc.state_dict()),
            "encoder_opt": snapshot_state(enc_opt.state_dict()),
            "decoder": snapshot_state(dec.state_dict()),
            "decoder_opt": snapshot_state(dec_opt.state_dict()),
        }
        for l in layouts:
            sn = snaps[l]
            sn.begin(k)
            WRITERS[l](sn, st)
            files = sn.end()
            manifest["layouts"][l].append({"k": k, "step": step, "files": files})
        print(f"train_layouts: save {k}/{a.saves} at step {step}, loss {loss.item():.4f}",
              file=sys.stderr)

    write_json(os.path.join(a.out, "manifest.json"), manifest)
    print(f"train_layouts: done in {time.time() - t0:.1f}s -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
