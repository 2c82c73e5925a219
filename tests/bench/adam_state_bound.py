#!/usr/bin/python3
"""What Adam's state can store at best, alone and as a delta of an earlier save.

For two torch.save files holding an optimizer's state_dict (alone, as the
Hugging Face Trainer writes optimizer.pt, or under the key "optimizer"),
prints per moment (exp_avg, exp_avg_sq) the order-0 bound of its fp32
bytes taken by byte group in 64 Ki-value chunks, the way the codec
regroups them (docs/codec.md), standalone, as an XOR of the earlier save,
and as an integer difference of it; the share of raw each would store.
No coder stores less than its order-0 bound by more than a few bytes per
chunk, so a row's best column is the floor for that moment.

  /usr/bin/python3 tests/bench/adam_state_bound.py EARLIER.pt LATER.pt
"""
import sys

import numpy as np
import torch

CHUNK = 1 << 16  # values


def bound(words):
    """Order-0 bound, in bytes, of uint32 `words` split into 4 byte groups."""
    total = 0.0
    for start in range(0, words.size, CHUNK):
        chunk = words[start:start + CHUNK]
        for shift in (0, 8, 16, 24):
            counts = np.bincount((chunk >> shift) & 255, minlength=256)
            p = counts[counts > 0] / chunk.size
            total += -(p * np.log2(p)).sum() * chunk.size / 8
    return total


def state(path):
    saved = torch.load(path, weights_only=False, map_location="cpu")
    return saved.get("optimizer", saved)["state"]


def words(tensor):
    return tensor.detach().float().contiguous().view(torch.int32).numpy().view(np.uint32).ravel()


def main(earlier_path, later_path):
    earlier, later = state(earlier_path), state(later_path)
    print(f"{'moment':12} {'raw MiB':>9} {'alone':>8} {'xor':>8} {'difference':>11}")
    for moment in ("exp_avg", "exp_avg_sq"):
        raw = alone = xor = diff = 0.0
        for key, entry in later.items():
            if moment not in entry or key not in earlier:
                continue
            now, before = words(entry[moment]), words(earlier[key][moment])
            if now.size != before.size:
                continue
            raw += now.size * 4
            alone += bound(now)
            xor += bound(now ^ before)
            diff += bound((now.astype(np.int64) - before.astype(np.int64)).astype(np.uint32))
        if raw:
            print(f"{moment:12} {raw / 2**20:9.1f} {alone / raw:8.1%} {xor / raw:8.1%} {diff / raw:11.1%}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
