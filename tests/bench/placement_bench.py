#!/usr/bin/env python3
"""What placements of forward deltas could store, for a trajectory.

Compresses every save standalone and as a delta against every earlier
save (`git zipnn compress --base`), then finds, for each bound on the
chain length, the smallest store any placement could reach with
hindsight: each save a base, or a delta against an earlier save whose
chain is shorter than the bound. That is the floor no placement rule
(skip-deltas, sub-bases, ...) can beat on this trajectory, beside what
the default (every 10th a base, the rest against the previous save)
stores. docs/policy.md, "Storage against restore time".

    python3 tests/bench/placement_bench.py DIR [GIT_ZIPNN]

DIR holds step-*.safetensors (any checkpoints whose names sort by step).
"""
import glob
import os
import subprocess
import sys
import tempfile


def object_size(git_zipnn, out, target, base=None):
    cmd = [git_zipnn, "compress", "-q", "-f", "-o", out]
    if base:
        cmd += ["--base", base]
    subprocess.run(cmd + [target], check=True)
    return os.path.getsize(out)


def best_store(size, n, bound):
    """The smallest total over placements whose chains are at most `bound`."""
    best = [float("inf"), None]
    parent, depth = [None] * n, [0] * n

    def place(j, total):
        if total >= best[0]:
            return
        if j == n:
            best[0], best[1] = total, list(parent)
            return
        choices = [(None, size[j, j])]
        if j > 0:
            choices += [(p, size[p, j]) for p in range(j) if depth[p] < bound]
        for p, cost in sorted(choices, key=lambda c: c[1]):
            parent[j], depth[j] = p, 0 if p is None else depth[p] + 1
            place(j + 1, total + cost)

    place(0, 0)
    return best


def main():
    folder = sys.argv[1]
    git_zipnn = sys.argv[2] if len(sys.argv) > 2 else "git-zipnn"
    saves = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    n = len(saves)
    size = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "object")
        for j in range(n):
            size[j, j] = object_size(git_zipnn, out, saves[j])
            for i in range(j):
                size[i, j] = object_size(git_zipnn, out, saves[j], saves[i])
    default = sum(size[j, j] if j % 10 == 0 else size[j - 1, j] for j in range(n))
    print(f"{n} saves of {folder}; default (every 10th a base, else the previous): {default / 2**20:.1f} MiB")
    print(f"{'chain at most':>14} {'best store':>12} {'of default':>11}  parents (- = a base)")
    for bound in range(0, min(n, 10)):
        total, parents = best_store(size, n, bound)
        shown = " ".join("-" if p is None else str(p) for p in parents)
        print(f"{bound:>14} {total / 2**20:>8.1f} MiB {total / default:>11.3f}  {shown}")


if __name__ == "__main__":
    main()
