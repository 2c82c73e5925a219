#!/usr/bin/python3
"""Recomputes what `git-zipnn analyze` reports, from the checkpoint files
alone, and compares it with the tool's CSV and JSON output.

Nothing here is taken from the C++ code: the safetensors files are parsed
directly and every statistic is computed again with numpy from the raw
element bits, from the written definitions of the analysis (changed elements
and byte groups of the sign-rotated XOR, update norms over finite pairs,
tensor statuses, exponent histograms).

  usage: analyze_check.py --against previous|base --base-interval K
                          [--at INDEX] --csv OUT.csv --json OUT.json FILE...

FILE... are the checkpoints in the order the tool was given them. Each check
prints one "ok" line; the first mismatch prints a line naming the output,
checkpoint, tensor and column with both values, and the exit code is 1.
Checkpoints whose data the checker cannot interpret (an unknown dtype, a file
that is not safetensors) end it with exit code 2.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import pandas as pd

REL_TOL = 1e-9

# Per safetensors dtype: the tool's name, element width in bytes, and for
# floating-point types (exponent bits, bias). Floats have their sign rotated
# into bit 0 before the bytes are split into groups; integers do not.
DTYPES = {
    "F64": ("fp64", 8, (11, 1023)),
    "F32": ("fp32", 4, (8, 127)),
    "BF16": ("bf16", 2, (8, 127)),
    "F16": ("fp16", 2, (5, 15)),
    "I64": ("i64", 8, None),
    "U64": ("u64", 8, None),
    "I32": ("i32", 4, None),
    "U32": ("u32", 4, None),
    "I16": ("i16", 2, None),
    "U16": ("u16", 2, None),
    "I8": ("i8", 1, None),
    "U8": ("u8", 1, None),
    "BOOL": ("bool", 1, None),
}

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class Mismatch(Exception):
    pass


class Unreadable(Exception):
    pass


# --- reading checkpoints ---


class Tensor:
    def __init__(self, name, st_dtype, shape, raw):
        self.name = name
        self.st_dtype = st_dtype
        self.dtype, self.width, self.exp_field = DTYPES[st_dtype]
        self.shape = list(shape)
        self.bits = np.frombuffer(raw, dtype=np.dtype(UINT[self.width]).newbyteorder("<"))
        self.elements = len(self.bits)

    @property
    def is_float(self):
        return self.exp_field is not None

    def groups(self):
        """Group name of each byte, from byte 0 (least significant) up."""
        if not self.is_float:
            return ["b%d" % k for k in range(self.width)]
        return ["man%d" % k for k in range(self.width - 1)] + ["exp"]

    def values(self):
        """The elements as float64, exactly."""
        b = self.bits
        if self.st_dtype == "F64":
            return b.view("<f8").astype(np.float64)
        if self.st_dtype == "F32":
            return b.view("<f4").astype(np.float64)
        if self.st_dtype == "F16":
            return b.view("<f2").astype(np.float64)
        # bf16 is the upper half of an f32.
        return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)

    def biased_exponents(self):
        exp_bits, _ = self.exp_field
        shift = 8 * self.width - 1 - exp_bits
        t = self.bits.dtype.type
        return ((self.bits >> t(shift)) & t((1 << exp_bits) - 1)).astype(np.int64)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Unreadable("%s: shorter than the 8-byte header length" % path)
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise Unreadable("%s: header length %d runs past the end" % (path, header_len))
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data = memoryview(blob)[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in DTYPES:
            raise Unreadable("%s: tensor %s has dtype %s, which this checker does not handle"
                             % (path, name, entry["dtype"]))
        begin, end = entry["data_offsets"]
        t = Tensor(name, entry["dtype"], entry["shape"], data[begin:end])
        if t.elements != math.prod(t.shape):
            raise Unreadable("%s: tensor %s holds %d elements for shape %s" % (path, name, t.elements, t.shape))
        tensors[name] = t
    return {"path": path, "size": len(blob), "tensors": tensors}


# --- recomputing the statistics ---


def new_totals():
    return {"elements": 0, "changed": 0, "group_bytes": {}, "group_changed": {},
            "diff_sq": 0.0, "ref_sq": 0.0, "non_finite": 0, "float_elements": 0}


def add_group(totals, group, n_bytes, n_changed):
    totals["group_bytes"][group] = totals["group_bytes"].get(group, 0) + n_bytes
    totals["group_changed"][group] = totals["group_changed"].get(group, 0) + n_changed


def compare(t, ref):
    """Statistics of tensor `t` against its same-dtype, same-shape twin."""
    s = new_totals()
    s["elements"] = t.elements
    x = t.bits ^ ref.bits
    s["changed"] = int(np.count_nonzero(x))
    kind = x.dtype.type
    if t.is_float:
        bits = 8 * t.width
        x = (x << kind(1)) | (x >> kind(bits - 1))
    for k, group in enumerate(t.groups()):
        changed = int(np.count_nonzero((x >> kind(8 * k)) & kind(0xFF)))
        add_group(s, group, t.elements, changed)
    if t.is_float:
        s["float_elements"] = t.elements
        w, w_ref = t.values(), ref.values()
        finite = np.isfinite(w) & np.isfinite(w_ref)
        s["non_finite"] = int(t.elements - np.count_nonzero(finite))
        d = w[finite] - w_ref[finite]
        s["diff_sq"] = float(np.dot(d, d))
        s["ref_sq"] = float(np.dot(w_ref[finite], w_ref[finite]))
    return s


def all_changed(t):
    s = new_totals()
    s["elements"] = s["changed"] = t.elements
    for group in t.groups():
        add_group(s, group, t.elements, t.elements)
    return s


def fraction(part, whole):
    return part / whole if whole else math.nan


def relative_update(s):
    if s["float_elements"] == s["non_finite"] or s["ref_sq"] <= 0:
        return math.nan
    return math.sqrt(s["diff_sq"]) / math.sqrt(s["ref_sq"])


def reference_of(i, against, k):
    base = (i - 1) // k * k
    return base if against == "base" else i - 1


def expected_tables(checkpoints, against, k, at):
    rows, tensor_rows, slots = [], [], set()
    for i, cp in enumerate(checkpoints):
        row = {"index": i, "source": cp["path"], "raw_bytes": cp["size"],
               "tensors": len(cp["tensors"]),
               "parameters": sum(t.elements for t in cp["tensors"].values())}
        rows.append(row)
        if i == 0:
            continue
        r = reference_of(i, against, k)
        base = (i - 1) // k * k
        row.update({"reference_index": r, "base_index": base, "base_distance": i - base})
        ref = checkpoints[r]["tensors"]
        totals = new_totals()
        status_count = {s: 0 for s in ("changed", "frozen", "added", "removed", "reshaped")}
        for name, t in cp["tensors"].items():
            twin = ref.get(name)
            if twin is None:
                status, s = "added", all_changed(t)
            elif twin.st_dtype != t.st_dtype or twin.shape != t.shape:
                status, s = "reshaped", all_changed(t)
            else:
                s = compare(t, twin)
                status = "frozen" if s["changed"] == 0 else "changed"
            status_count[status] += 1
            for key in ("elements", "changed", "diff_sq", "ref_sq", "non_finite", "float_elements"):
                # One-element tensors (step counters) stay out of the row's norms.
                if key in ("diff_sq", "ref_sq") and s["elements"] <= 1:
                    continue
                totals[key] += s[key]
            for g in s["group_bytes"]:
                add_group(totals, g, s["group_bytes"][g], s["group_changed"][g])
                if s["group_bytes"][g] > 0:
                    slots.add(g)
            floats = status in ("changed", "frozen") and s["float_elements"] > 0
            tr = {"checkpoint_index": i, "tensor": t.name, "dtype": t.dtype, "status": status,
                  "shape": "x".join(str(d) for d in t.shape),
                  "elements": s["elements"], "changed": s["changed"],
                  "changed_fraction": fraction(s["changed"], s["elements"]),
                  "groups": {g: fraction(s["group_changed"][g], s["group_bytes"][g]) for g in s["group_bytes"]},
                  "relative_update": relative_update(s) if floats else math.nan,
                  "update_norm": math.sqrt(s["diff_sq"]) if floats else math.nan,
                  "reference_norm": math.sqrt(s["ref_sq"]) if floats else math.nan,
                  "non_finite": s["non_finite"] if floats else None}
            tensor_rows.append(tr)
        for name, twin in ref.items():
            if name not in cp["tensors"]:
                status_count["removed"] += 1
                tensor_rows.append({"checkpoint_index": i, "tensor": name, "dtype": twin.dtype,
                                    "status": "removed", "shape": "x".join(str(d) for d in twin.shape),
                                    "elements": None, "changed": None, "changed_fraction": math.nan,
                                    "groups": {}, "relative_update": math.nan, "update_norm": math.nan,
                                    "reference_norm": math.nan, "non_finite": None})
        row.update({"changed_params": fraction(totals["changed"], totals["elements"]),
                    "groups": {g: fraction(totals["group_changed"][g], totals["group_bytes"][g])
                               for g in totals["group_bytes"]},
                    "relative_update": relative_update(totals), "non_finite": totals["non_finite"]})
        for status, n in status_count.items():
            row[status + "_tensors"] = n

    histogram = {}
    for t in checkpoints[at]["tensors"].values():
        if not t.is_float:
            continue
        counts = np.bincount(t.biased_exponents(), minlength=1 << t.exp_field[0])
        h = histogram.setdefault(t.dtype, {"bias": t.exp_field[1], "top": (1 << t.exp_field[0]) - 1,
                                           "counts": np.zeros(len(counts), dtype=np.int64)})
        h["counts"] += counts
    return rows, tensor_rows, slots, histogram


# --- reading the tool's output ---

TEXT_COLUMNS = {
    "checkpoints": {"label", "source", "subject", "id", "format", "reference_label", "base_label"},
    "tensors": {"checkpoint_label", "tensor", "dtype", "shape", "status"},
    "exponents": {"checkpoint_label", "dtype", "kind"},
    "policies": {"newest", "against", "current"},
    "thinning": {"precision", "kind"},
}


def csv_paths(path):
    stem = path[:-4] if path.endswith(".csv") else path
    return {"checkpoints": path, "tensors": stem + ".tensors.csv",
            "exponents": stem + ".exponents.csv", "policies": stem + ".policies.csv",
            "thinning": stem + ".thinning.csv"}


def read_csv_tables(path):
    tables = {}
    for name, file in csv_paths(path).items():
        header = pd.read_csv(file, nrows=0).columns
        # Labels such as "000040" and shapes such as "16" are text; every
        # other column is left to pandas' own type inference.
        text = {c: str for c in header if c in TEXT_COLUMNS[name] and c != "current"}
        tables[name] = pd.read_csv(file, dtype=text, keep_default_na=False,
                                   na_values={c: [""] for c in header if c not in text})
    return tables


def records(frame):
    out = []
    for rec in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out


def nullable(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


# --- comparing ---


class Where:
    """Names a cell for a message: output, checkpoint, row (a phrase), column."""

    def __init__(self, source, checkpoint=None, row=None):
        self.source, self.checkpoint, self.row = source, checkpoint, row

    def text(self, column):
        parts = [self.source]
        if self.checkpoint is not None:
            parts.append("checkpoint %s" % self.checkpoint)
        if self.row is not None:
            parts.append(self.row)
        parts.append("column %s" % column)
        return ", ".join(parts)


def shown(value):
    # A count read by pandas from a column with empty cells is a float.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def fail(where, column, got, want):
    raise Mismatch("%s: tool wrote %r, recomputed %r" % (where.text(column), shown(got), want))


def same_count(where, column, got, want):
    if want is None:
        if not nullable(got):
            fail(where, column, got, "empty")
        return
    if nullable(got) or isinstance(got, bool) or float(got) != want or int(got) != want:
        fail(where, column, got, want)


def same_real(where, column, got, want):
    if math.isnan(want):
        if not nullable(got):
            fail(where, column, got, "empty")
        return
    if nullable(got) or isinstance(got, (bool, str)):
        fail(where, column, got, want)
    got = float(got)
    if abs(got - want) > REL_TOL * max(abs(got), abs(want)):
        fail(where, column, got, want)


def same_text(where, column, got, want):
    if str(got) != str(want):
        fail(where, column, got, want)


def group_columns(table_rows, not_groups):
    """The changed_<group> columns of a table."""
    if not table_rows:
        return []
    return [c for c in table_rows[0] if c.startswith("changed_") and c not in not_groups]


def check_checkpoints(source, got_rows, want_rows, slots):
    if len(got_rows) != len(want_rows):
        raise Mismatch("%s: %d checkpoint rows, expected %d" % (source, len(got_rows), len(want_rows)))
    columns = group_columns(got_rows, {"changed_params", "changed_tensors"})
    if set(columns) != {"changed_" + g for g in slots}:
        raise Mismatch("%s: checkpoint byte-group columns %s, expected %s"
                       % (source, sorted(columns), sorted("changed_" + g for g in slots)))
    labels = [r["label"] for r in got_rows]
    for got, want in zip(got_rows, want_rows):
        w = Where(source, "%s (%s)" % (want["index"], got.get("label")))
        for c in ("index", "raw_bytes", "tensors", "parameters"):
            same_count(w, c, got[c], want[c])
        if want["index"] == 0:
            for c in ["reference_index", "changed_params", "relative_update", "base_index"] + columns:
                if not nullable(got[c]):
                    fail(w, c, got[c], "empty")
            continue
        for c in ("reference_index", "base_index", "base_distance", "non_finite", "changed_tensors",
                  "frozen_tensors", "added_tensors", "removed_tensors", "reshaped_tensors"):
            same_count(w, c, got[c], want[c])
        same_text(w, "reference_label", got["reference_label"], labels[want["reference_index"]])
        same_text(w, "base_label", got["base_label"], labels[want["base_index"]])
        same_real(w, "changed_params", got["changed_params"], want["changed_params"])
        for c in columns:
            same_real(w, c, got[c], want["groups"].get(c[len("changed_"):], math.nan))
        same_real(w, "relative_update", got["relative_update"], want["relative_update"])


def check_tensors(source, got_rows, want_rows):
    if len(got_rows) != len(want_rows):
        raise Mismatch("%s: %d tensor rows, expected %d" % (source, len(got_rows), len(want_rows)))
    by_key = {}
    for r in got_rows:
        key = (int(r["checkpoint_index"]), r["tensor"])
        if key in by_key:
            raise Mismatch("%s: checkpoint %d has two rows for tensor '%s'" % (source, key[0], key[1]))
        by_key[key] = r
    columns = group_columns(got_rows, {"changed_fraction"})
    for want in want_rows:
        w = Where(source, want["checkpoint_index"], "tensor '%s'" % want["tensor"])
        got = by_key.get((want["checkpoint_index"], want["tensor"]))
        if got is None:
            raise Mismatch("%s: no row (expected status %s)" % (w.text("tensor"), want["status"]))
        for c in ("status", "dtype", "shape"):
            same_text(w, c, got[c], want[c])
        for c in ("elements", "changed", "non_finite"):
            same_count(w, c, got[c], want[c])
        for c in ("changed_fraction", "relative_update", "update_norm", "reference_norm"):
            same_real(w, c, got[c], want[c])
        for c in columns:
            same_real(w, c, got[c], want["groups"].get(c[len("changed_"):], math.nan))


def check_exponents(source, got_rows, histogram, at, label):
    want = {}
    for dtype, h in histogram.items():
        total = int(h["counts"].sum())
        for e, n in enumerate(h["counts"]):
            if n:
                want[(dtype, e)] = (int(n), n / total, h)
    seen = set()
    for r in got_rows:
        key = (r["dtype"], int(r["biased_exponent"]))
        w = Where(source, "%d (%s)" % (at, label), "%s biased exponent %d" % key)
        if key in seen:
            raise Mismatch("%s: listed twice" % w.text("biased_exponent"))
        seen.add(key)
        same_count(w, "checkpoint_index", r["checkpoint_index"], at)
        if key not in want:
            fail(w, "count", r["count"], 0)
        n, share, h = want[key]
        same_count(w, "count", r["count"], n)
        same_real(w, "share", r["share"], share)
        e = key[1]
        special = e == 0 or e == h["top"]
        same_count(w, "exponent", r["exponent"], None if special else e - h["bias"])
        same_text(w, "kind", r["kind"], "zero/subnormal" if e == 0 else "inf/nan" if special else "normal")
    missing = sorted(set(want) - seen)
    if missing:
        dtype, e = missing[0]
        raise Mismatch("%s: checkpoint %d: no row for %s biased exponent %d (count %d)"
                       % (source, at, dtype, e, want[missing[0]][0]))


def check_auto_never_worse(source, got_rows, slack):
    for r in got_rows:
        w = Where(source, "%s (%s)" % (r["index"], r["label"]))
        for kind in ("standalone", "previous", "base"):
            auto, huff, zstd = r[kind + "_auto"], r[kind + "_huffman"], r[kind + "_zstd"]
            if nullable(auto):
                if kind == "standalone" or int(r["index"]) > 0:
                    fail(w, kind + "_auto", auto, "a size")
                continue
            if auto > min(huff, zstd) * (1 + slack):
                raise Mismatch("%s: auto is larger than a single coder: auto %d, huffman %d, zstd %d"
                               % (w.text(kind + "_auto"), auto, huff, zstd))


def check_policies(source, got_rows, raw_total):
    if not got_rows:
        raise Mismatch("%s: the policies table is empty" % source)
    for r in got_rows:
        w = Where(source, None, "policy every %s against %s, newest %s"
                  % (r["base_interval"], r["against"], r["newest"]))
        same_real(w, "stored_share", r["stored_share"], r["stored_bytes"] / raw_total)
        # A clone of the last checkpoint fetches part of what is stored.
        if not 0 < r["latest_bytes"] <= r["stored_bytes"]:
            fail(w, "latest_bytes", r["latest_bytes"], "between 0 and stored_bytes %d" % r["stored_bytes"])


# --- thinning, recomputed in float arithmetic (the tool rounds bits) ---

# Mantissa bits, and the largest finite value, of the types thinning rounds.
THINNABLE = {"F64": (52, np.finfo(np.float64).max), "F32": (23, float(np.finfo(np.float32).max)),
             "BF16": (7, float.fromhex("0x1.fep127")), "F16": (10, 65504.0)}


def to_bits(t, values):
    """float64 values, each exactly representable in t's dtype, as t's bits."""
    if t.st_dtype == "F64":
        return values.view(np.uint64)
    if t.st_dtype == "F16":
        return values.astype(np.float16).view(np.uint16)
    wide = values.astype(np.float32).view(np.uint32)
    if t.st_dtype == "F32":
        return wide
    if np.any(wide & np.uint32(0xFFFF)):
        raise Mismatch("%s: a rounded bf16 value is not a bf16 value" % t.name)
    return (wide >> np.uint32(16)).astype(np.uint16)


def thin(t, kind, bits):
    """t's values rounded as `kind` precision `bits` says (docs/retention.md): the
    bits after, in float64 the values before and after."""
    man, largest = THINNABLE[t.st_dtype]
    x = t.values()
    finite = np.isfinite(x)
    y = x.copy()
    if kind == "absolute":
        scale = 2.0 ** bits
        y[finite] = np.rint(x[finite] * scale) / scale
    else:
        # Normal values only: |x| >= the smallest normal of the type.
        exp_bits, bias = t.exp_field
        normal = finite & (np.abs(x) >= 2.0 ** (1 - bias))
        if bits < man:
            _, e = np.frexp(x[normal])  # |x| in [2^(e-1), 2^e)
            step = np.ldexp(1.0, e - 1 - bits)
            y[normal] = np.rint(x[normal] / step) * step
        # A value that would round past the largest finite one stays.
        y[np.abs(y) > largest] = x[np.abs(y) > largest]
    after = t.bits.copy()
    after[finite] = to_bits(t, y)[finite]
    return after, x, np.where(finite, y, x)


def check_thinning(source, got_rows, checkpoint_rows, checkpoints, k, raw_total):
    if not got_rows or got_rows[0]["kind"] != "exact":
        raise Mismatch("%s: the thinning table has no exact row first" % source)
    exact = sum(r["standalone_auto"] if r["index"] % k == 0 else r["previous_auto"] for r in checkpoint_rows)
    same_count(Where(source, None, "thinning, exact"), "stored_bytes", got_rows[0]["stored_bytes"], exact)
    for r in got_rows[1:]:
        w = Where(source, None, "thinning, %s" % r["precision"])
        same_real(w, "stored_share", r["stored_share"], r["stored_bytes"] / raw_total)
        same_real(w, "of_exact", r["of_exact"], r["stored_bytes"] / exact)
        bound = 2.0 ** -(r["bits"] + 1)
        same_real(w, "bound", r["bound"], bound)
        rounded = values = zeroed = 0
        optimizer = {"values": 0, "rounded": 0, "zeroed": 0}  # tensors named optimizer...
        max_abs = max_rel = 0.0
        for cp in checkpoints:
            for t in cp["tensors"].values():
                if t.st_dtype not in THINNABLE or t.elements < 2:  # one element stays exact
                    continue
                after, x, y = thin(t, r["kind"], int(r["bits"]))
                changed = after != t.bits
                rounded += int(np.count_nonzero(changed))
                values += t.elements
                to_zero = int(np.count_nonzero(changed & (y == 0)))
                zeroed += to_zero
                if t.name.startswith("optimizer"):
                    optimizer["values"] += t.elements
                    optimizer["rounded"] += int(np.count_nonzero(changed))
                    optimizer["zeroed"] += to_zero
                if np.any(changed):
                    diff = np.abs(y[changed] - x[changed])
                    max_abs = max(max_abs, float(diff.max()))
                    max_rel = max(max_rel, float((diff / np.abs(x[changed])).max()))
        same_count(w, "rounded_values", r["rounded_values"], rounded)
        same_count(w, "float_values", r["float_values"], values)
        same_count(w, "zeroed_values", r["zeroed_values"], zeroed)
        same_count(w, "optimizer_values", r["optimizer_values"], optimizer["values"])
        same_count(w, "optimizer_rounded_values", r["optimizer_rounded_values"], optimizer["rounded"])
        same_count(w, "optimizer_zeroed_values", r["optimizer_zeroed_values"], optimizer["zeroed"])
        same_real(w, "max_abs_error", r["max_abs_error"], max_abs)
        same_real(w, "max_rel_error", r["max_rel_error"], max_rel)
        limit = max_abs if r["kind"] == "absolute" else max_rel
        if limit > bound:
            fail(w, "max_%s_error" % ("abs" if r["kind"] == "absolute" else "rel"), limit, "at most %g" % bound)


def check_numeric_dtypes(source, tables, all_null_ok):
    for name, frame in tables.items():
        for c in frame.columns:
            if c in TEXT_COLUMNS[name]:
                continue
            if all_null_ok and frame[c].isna().all():
                continue
            if not pd.api.types.is_numeric_dtype(frame[c]):
                raise Mismatch("%s: table %s column %s has dtype %s, not numeric"
                               % (source, name, c, frame[c].dtype))


def check_source(source, got_rows, checkpoints):
    for r, cp in zip(got_rows, checkpoints):
        w = Where(source, "%s (%s)" % (r["index"], r["label"]))
        if os.path.realpath(str(r["source"])) != os.path.realpath(cp["path"]):
            fail(w, "source", r["source"], cp["path"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--against", choices=["previous", "base"], required=True)
    p.add_argument("--base-interval", type=int, required=True)
    p.add_argument("--at", type=int, help="index of the checkpoint of the exponent table (default: the last)")
    p.add_argument("--auto-slack", type=float, default=0.0,
                   help="allowed excess of auto over the better single coder, as a fraction")
    p.add_argument("--csv", required=True)
    p.add_argument("--json", required=True)
    args = p.parse_args()

    try:
        checkpoints = [read_safetensors(f) for f in args.files]
    except (Unreadable, OSError, ValueError, KeyError) as e:
        print("cannot recompute: %s" % e)
        return 2
    at = len(checkpoints) - 1 if args.at is None else args.at
    rows, tensor_rows, slots, histogram = expected_tables(checkpoints, args.against, args.base_interval, at)

    with open(args.json) as f:
        doc = json.load(f)
    csv_tables = read_csv_tables(args.csv)
    json_frames = {name: pd.DataFrame(doc[name]) for name in TEXT_COLUMNS}
    sources = [("csv", {n: records(t) for n, t in csv_tables.items()}),
               ("json", {n: doc[n] for n in TEXT_COLUMNS}),
               ("json-dataframe", {n: records(t) for n, t in json_frames.items()})]
    raw_total = sum(cp["size"] for cp in checkpoints)
    try:
        if doc.get("against") != args.against or doc.get("base_interval") != args.base_interval:
            raise Mismatch("json: against %r every %r, expected %r every %r" % (
                doc.get("against"), doc.get("base_interval"), args.against, args.base_interval))
        if doc.get("tensor_filter"):
            raise Mismatch("json: tensor_filter %r; this checker recomputes unfiltered runs only"
                           % doc["tensor_filter"])
        for name, frame in csv_tables.items():
            if list(frame.columns) != list(json_frames[name].columns if doc[name] else frame.columns):
                raise Mismatch("table %s: csv columns %s differ from json keys %s"
                               % (name, list(frame.columns), list(json_frames[name].columns)))
        print("ok  csv and json have the same columns in the same order")
        check_numeric_dtypes("csv", csv_tables, all_null_ok=False)
        check_numeric_dtypes("json-dataframe", json_frames, all_null_ok=True)
        print("ok  pandas infers numeric dtypes for every numeric column")

        for source, tables in sources:
            check_tensors(source, tables["tensors"], tensor_rows)
            print("ok  %s: %d tensor rows match the recomputed changes and norms" % (source, len(tensor_rows)))
            check_checkpoints(source, tables["checkpoints"], rows, slots)
            print("ok  %s: %d checkpoint rows match (groups %s)" % (source, len(rows), ", ".join(sorted(slots))))
            label = tables["checkpoints"][at]["label"]
            check_exponents(source, tables["exponents"], histogram, at, label)
            print("ok  %s: exponent histogram of checkpoint %d matches (%s)"
                  % (source, at, ", ".join(sorted(histogram)) or "no float tensors"))
            check_policies(source, tables["policies"], raw_total)
            check_source(source, tables["checkpoints"], checkpoints)
            print("ok  %s: policy shares and checkpoint sources match" % source)
            check_thinning(source, tables["thinning"], tables["checkpoints"], checkpoints, args.base_interval,
                           raw_total)
            print("ok  %s: %d thinning rows match the values rounded with numpy, within their bounds"
                  % (source, len(tables["thinning"]) - 1))
        # A property of the coders rather than of the statistics: checked
        # last, so that a failure here does not hide the checks above.
        for source, tables in sources:
            check_auto_never_worse(source, tables["checkpoints"], args.auto_slack)
            print("ok  %s: auto is never larger than Huffman or zstd alone%s"
                  % (source, " (by more than %g)" % args.auto_slack if args.auto_slack else ""))
    except Mismatch as e:
        print("MISMATCH %s" % e)
        return 1
    print("all checks passed: %d checkpoints, %d tensor rows" % (len(rows), len(tensor_rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
