#!/usr/bin/env python3
"""Writes a large safetensors checkpoint out of a real one, for memory
benchmarks that need a file bigger than a CPU can train in a session.

Every tensor of SOURCE appears COPIES times, as "copy<i>.<name>", with its
bytes unchanged, so the result holds real trained weights (and tiling
consecutive checkpoints of one run gives real deltas). The bytes are
copied in blocks, so this needs little memory whatever the size.

    python3 tests/bench/tile_checkpoint.py SOURCE COPIES OUT
"""
import json
import os
import struct
import sys

BLOCK = 16 << 20


def read_header(f):
    (n,) = struct.unpack("<Q", f.read(8))
    return n, json.loads(f.read(n))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(source, "rb") as f:
        header_len, header = read_header(f)
        data_start = 8 + header_len
        data_len = os.path.getsize(source) - data_start
        tiled = {}
        for i in range(copies):
            for name, t in header.items():
                if name == "__metadata__":
                    continue
                a, b = t["data_offsets"]
                tiled[f"copy{i}.{name}"] = dict(t, data_offsets=[a + i * data_len, b + i * data_len])
        if "__metadata__" in header:
            tiled["__metadata__"] = header["__metadata__"]
        text = json.dumps(tiled, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(out + ".tmp", "wb") as o:
            o.write(struct.pack("<Q", len(text)))
            o.write(text)
            for _ in range(copies):
                f.seek(data_start)
                left = data_len
                while left:
                    block = f.read(min(BLOCK, left))
                    o.write(block)
                    left -= len(block)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
