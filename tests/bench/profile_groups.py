"""Sums the samples of a `perf report --sort parent,dso,sym` into the kinds of
work profile_bench.sh reports, and prints them as one row of its table.

    perf report ... | python3 profile_groups.py NAME
    python3 profile_groups.py --header

A user-space symbol goes to the first kind whose pattern matches it or
its library (Debian's libxxhash and libzstd keep only their exported
names); a kernel symbol ([k]) goes by its parent, the system call it ran
under.
"""
import re
import sys

# The kinds of user-space work, in the order they are tried (planning a
# coder is statistics, whichever coder it plans), with the symbols each
# takes (C++ names as perf demangles them, and the C
# libraries'), matched against "library symbol": the first match wins.
USER_KINDS = [
    ("statistics (histograms, zero runs)",
     r"Count(Bytes|Group|Sample|ByClass)|EntropyBits|Histogram|HasZeroRun|IsAllZero|AllZero|IsUnchangedDelta|"
     r"SampledClassGain|Estimated|::Plan|LooksIncompressible|ChooseTransform"),
    ("rANS", r"Rans|Rounds|PutLockstep|Lane|ClassesOf|ClassifyByKey"),
    ("Huffman", r"Huffman|EncodeStreams|BuildLengths"),
    ("sparse", r"Sparse"),
    ("zstd", r"^libzstd|Zstd"),
    ("regroup, XOR, difference",
     r"Xor|Difference|Grouping|Regroup|::Apply<|SplitGroups|MergeGroups|StandaloneTake|StandaloneUndo|TakeDelta|Patch"),
    ("hash (XXH3)", r"^libxxhash|XXH"),
]
KERNEL_KINDS = [
    ("kernel: reading", r"read"),
    ("kernel: writing", r"write|fsync|fdatasync"),
]
COLUMNS = ["rANS", "Huffman", "sparse", "zstd", "statistics (histograms, zero runs)", "regroup, XOR, difference",
           "hash (XXH3)", "kernel: reading", "kernel: writing", "kernel: other", "other"]

LINE = re.compile(r"^\s*([0-9.]+)%\s+(\S+)\s+(\S+)\s+\[([k.])\]\s+(.*)$")


def main():
    if sys.argv[1:] == ["--header"]:
        print("| path | " + " | ".join(COLUMNS) + " |")
        print("|---" * (len(COLUMNS) + 1) + "|")
        return
    name = sys.argv[1]
    shares = dict.fromkeys(COLUMNS, 0.0)
    for line in sys.stdin:
        m = LINE.match(line)
        if not m:
            continue
        percent, parent, library, space, symbol = float(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)
        if space == "k":
            kind = next((k for k, p in KERNEL_KINDS if re.search(p, parent)), "kernel: other")
        else:
            kind = next((k for k, p in USER_KINDS if re.search(p, library + " " + symbol)), "other")
        shares[kind] += percent
    total = sum(shares.values()) or 1.0
    cells = ["%.0f%%" % (100 * shares[k] / total) if round(100 * shares[k] / total) >= 1 else "–" for k in COLUMNS]
    print("| " + name + " | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
