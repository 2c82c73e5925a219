"""Compares thinned saves with the saves they came from, value by value.

  check_thinned.py EXACT_DIR APPROX_DIR "absolute 23"|"relative 5"

For every file of APPROX_DIR (a `git zipnn restore --approximate` of a
torch.save file), loads it and the file of the same name in EXACT_DIR
with torch, takes every floating tensor to numpy (float64), and finds
the largest absolute error, and the largest error relative to the exact
value's magnitude. Prints the counts and the largest errors against the
stated bound (2^-(B+1) absolute, or 2^-(K+1) relative; for relative
rounding, subnormal values are left exact and so do not count), and
exits with 1 if any value exceeds it or any other tensor differs.
"""
import os
import sys

import numpy as np
import torch


def tensors(obj, prefix=""):
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from tensors(v, f"{prefix}/{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from tensors(v, f"{prefix}/{i}")


def main():
    exact_dir, approx_dir, precision = sys.argv[1:4]
    kind, bits = precision.split()
    bound = 2.0 ** -(int(bits) + 1)
    worst_abs = worst_rel = 0.0
    files = values = changed = 0
    bad = []
    for name in sorted(os.listdir(approx_dir)):
        a = dict(tensors(torch.load(os.path.join(exact_dir, name), map_location="cpu", weights_only=False)))
        b = dict(tensors(torch.load(os.path.join(approx_dir, name), map_location="cpu", weights_only=False)))
        files += 1
        for key, x in a.items():
            y = b[key]
            if not x.is_floating_point():
                if not torch.equal(x, y):
                    bad.append(f"{name}{key}: a tensor of {x.dtype} changed")
                continue
            xs = x.detach().to(torch.float64).numpy().ravel()
            ys = y.detach().to(torch.float64).numpy().ravel()
            err = np.abs(ys - xs)
            values += xs.size
            changed += int(np.count_nonzero(err))
            worst_abs = max(worst_abs, float(err.max(initial=0)))
            nz = xs != 0
            if kind == "relative":
                normal = np.abs(xs) >= np.finfo(x.numpy().dtype if x.dtype != torch.bfloat16 else np.float32).tiny
                nz &= normal
            rel = err[nz] / np.abs(xs[nz])
            worst_rel = max(worst_rel, float(rel.max(initial=0)))
            over = (err > bound) if kind == "absolute" else (err[nz] > bound * np.abs(xs[nz]))
            if over.any():
                bad.append(f"{name}{key}: {int(over.sum())} values beyond the bound")
    print(f"{files} thinned saves, {values} float values, {changed} changed; max error {worst_abs:.3g} absolute, "
          f"{worst_rel:.3g} relative; bound {bound:.3g} {kind}: {'within' if not bad else 'EXCEEDED'}")
    for line in bad[:10]:
        print("  " + line)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
