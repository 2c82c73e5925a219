"""Writes a safetensors file's tensors again under other names, the same
bytes: what a second naming scheme of one model, or an adapter file that
carries its base model, holds.

  python3 rename_tensors.py <in> <out> <prefix> [--reverse] [--upper] [--add <file>:<tensor>:<name>]...
                            [--shard <k>/<n>] [--from <file>:<tensor>]... [--append <file>:<prefix>]...

Each tensor is named <prefix><name> (upper case with --upper, dots as
underscores); --reverse writes them in reverse order; --add appends a
tensor of another file under a new name (an adapter's own weights);
--shard keeps only the k-th of n runs of about as many tensors each, in
file order (one shard of a save cut as a sharded save is); --from takes a
tensor's bytes from another save of the same model, under its own name
(a layer trained on, where the others are frozen); --append adds every
tensor of another file, named <prefix><name> (one file consolidating
several shards).
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return [(name, e["dtype"], e["shape"], body[e["data_offsets"][0]:e["data_offsets"][1]])
            for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])]


def write(path, tensors):
    header, at = {}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))


def main(argv):
    source, out, prefix = argv[1], argv[2], argv[3]
    rest = argv[4:]
    tensors = read(source)
    for i, arg in enumerate(rest):
        if arg == "--shard":
            k, n = (int(v) for v in rest[i + 1].split("/"))
            tensors = [t for j, t in enumerate(tensors) if j * n // len(tensors) == k - 1]
    for i, arg in enumerate(rest):
        if arg == "--from":
            path, tensor = rest[i + 1].split(":")
            trained = {n: r for n, d, s, r in read(path)}
            tensors = [(n, d, s, trained[n] if n == tensor else r) for n, d, s, r in tensors]
    if "--reverse" in rest:
        tensors.reverse()
    upper = "--upper" in rest

    def rename(name, before=prefix):
        name = before + name
        return name.replace(".", "_").upper() if upper else name

    renamed = [(rename(n), d, s, r) for n, d, s, r in tensors]
    for i, arg in enumerate(rest):
        if arg == "--append":
            path, more = rest[i + 1].split(":")
            renamed += [(rename(n, more), d, s, r) for n, d, s, r in read(path)]
    for i, arg in enumerate(rest):
        if arg == "--add":
            path, tensor, name = rest[i + 1].split(":")
            for n, d, s, r in read(path):
                if n == tensor:
                    renamed.append((name, d, s, r))
    write(out, renamed)


if __name__ == "__main__":
    main(sys.argv)
