#!/usr/bin/env python3
"""Compare git-zipnn with its peers on one trajectory of model checkpoints.

What it measures
  Codec rows, on the last K checkpoints of the trajectory (the "sample"):
  the bytes each tool stores, the ratio stored/raw, compress and decompress
  speed (raw bytes of a checkpoint / wall time) and peak resident memory.
  The tools are git-zipnn (standalone on 1 thread and on all cores, as a
  delta against the previous checkpoint, as a delta against the base of
  every 10th checkpoint), zstd -3 and -19 (1 thread and all cores),
  zstd --patch-from=<previous> and xdelta3 -s <previous>.
  Git rows, on the whole trajectory: every checkpoint committed, one commit
  each, to a fresh repository with git-zipnn, then with Git LFS: the time of
  `git add`, the bytes in the store, and the time to get back the version
  with the deepest delta chain (and the base of that chain).

How
  Every command runs as a child process; its wall time is time.monotonic()
  from start to reap, and its peak RSS is ru_maxrss of os.wait4() (which
  covers the descendants the child reaped, so git's filter process counts).
  A timed figure is the median of --runs runs (over every sample file),
  printed with its min-max spread. Every decompressed or restored file is
  compared byte for byte with the original; a mismatch stops the program.
  Scratch files live in one /tmp/peerbench-* folder, deleted as soon as
  each measurement is done and removed at exit.

How to run (from anywhere; paths are relative to the repository root)
  python3 tests/bench/peer_bench.py [--bin PATH] [--runs N] [--sample K]
                                    [--threads N] [--skip TOOL,...] [DIR]
  DIR holds step-*.safetensors files (ordered by the number in the name).
  Without DIR, a bf16 GPT trajectory (10 checkpoints of 1.1 GB) is trained
  into /tmp/zipnn-peer-bench/gpt-bf16 unless it is already there.
  The markdown table goes to stdout, progress lines to stderr.
"""

import argparse
import datetime
import fnmatch
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = Path("/tmp/zipnn-peer-bench/gpt-bf16")
DEFAULT_STEPS = 10
GENERATE = ["/usr/bin/python3", "../shared/data/make_trajectory.py", "--family", "gpt",
            "--width", "2048", "--layers", "11", "--dtype", "bf16",
            "--steps", str(DEFAULT_STEPS), "--every", "1", "--out", str(DEFAULT_DIR)]
DEPS = ["bash", ".ci/deps", "python3-torch", "python3-sklearn", "xdelta3", "git-lfs"]
PEER_TOOLS = ["zstd", "xdelta3", "git-lfs"]

MB = 1e6
MIB = 1 << 20
BASE_INTERVAL = 10           # row "delta against the base at k=10"
ZSTD19_PREFIX = 256 << 20   # zstd -19 codes ~2 MB/s: a 256 MiB prefix is enough
XDELTA_MAX_WINDOW = 1 << 31  # xdelta3 3.0: "-B: maximum value: 2147483648"
ZSTD_LONG = "--long=31"      # 2 GiB window: the most zstd allows on 64-bit
# A tool that stops on a file too large for it gets "fails (...)" in its
# row instead of aborting the whole benchmark.
TOO_LARGE = re.compile(r"too large|larger than|too big|exceed|EFBIG", re.IGNORECASE)


# ---------------------------------------------------------------- helpers

def say(message):
    """A progress line on stderr."""
    print(f"[peer-bench] {message}", file=sys.stderr, flush=True)


def die(message, detail=""):
    print(f"peer_bench: {message}", file=sys.stderr)
    if detail:
        print(detail.rstrip(), file=sys.stderr)
    sys.exit(1)


class TooLarge(Exception):
    """A tool refused a file because of its size."""


@dataclass
class Proc:
    seconds: float
    rss_kib: int
    stdout: str


def run(argv, *, cwd=None, env=None, capture=False):
    """Run argv to completion; return its wall time, peak RSS and stdout.

    A non-zero exit aborts the program with the command's stderr, unless
    the error says the input is too large (then TooLarge is raised)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out if capture else subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    if proc.returncode != 0:
        if TOO_LARGE.search(stderr):
            raise TooLarge(stderr.strip().splitlines()[-1][:80])
        die(f"command failed (exit {proc.returncode}): {shlex.join(map(str, argv))}"
            + (f" (in {cwd})" if cwd else ""), stderr)
    return Proc(seconds, usage.ru_maxrss, stdout)


def same_bytes(restored, original):
    """Fail loudly unless the two files hold the same bytes."""
    if subprocess.run(["cmp", "-s", str(restored), str(original)]).returncode != 0:
        die(f"restored bytes differ from the original: {restored} vs {original}")


def remove(*paths):
    for path in paths:
        if os.path.lexists(path):
            os.remove(path)


def tree_bytes(folder):
    """Sum of the sizes of the files under folder."""
    total = 0
    for root, _, names in os.walk(folder):
        total += sum(os.lstat(os.path.join(root, n)).st_size for n in names)
    return total


def median_spread(values):
    return statistics.median(values), min(values), max(values)


def num(x):
    """A figure with about three significant digits."""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def spread_cell(values):
    if not values:
        return "–"
    mid, lo, hi = median_spread(values)
    return num(mid) if len(values) == 1 else f"{num(mid)} ({num(lo)}–{num(hi)})"


# ----------------------------------------------------------- the machine

def machine_line():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                ram_kib = int(line.split()[1])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{cpu}, {os.cpu_count()} cores, {ram_kib / (1 << 20):.1f} GiB RAM, "
            f"Linux {platform.release()}, {now}")


def command_line():
    argv = getattr(sys, "orig_argv", [sys.executable] + sys.argv)
    return shlex.join([os.path.basename(argv[0])] + argv[1:])


def tool_versions(zipnn):
    def first_line(argv):
        try:
            out = subprocess.run(argv, capture_output=True, text=True)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"
    return "; ".join([first_line([zipnn, "version"]), first_line(["zstd", "-V"]),
                      first_line(["xdelta3", "-V"]).split(",")[0],
                      first_line(["git", "--version"]), first_line(["git", "lfs", "version"])])


# ------------------------------------------------------ inputs and setup

def step_number(path):
    digits = re.findall(r"\d+", path.name)
    return int(digits[-1]) if digits else -1


def trajectory(folder):
    files = sorted(Path(folder).glob("step-*.safetensors"), key=step_number)
    return [f.resolve() for f in files]


def prepare_trajectory(folder):
    """The checkpoints to measure: DIR, or the default trajectory (made here)."""
    if folder is not None:
        missing = [t for t in PEER_TOOLS if shutil.which(t) is None]
        if missing:
            die(f"missing tools: {' '.join(missing)}; install them with "
                f"`bash .ci/deps {' '.join(missing)}` (or apt-get install {' '.join(missing)})")
        return trajectory(folder)
    say("installing what the default trajectory needs: " + shlex.join(DEPS))
    subprocess.run(DEPS, cwd=REPO, check=True)
    if len(trajectory(DEFAULT_DIR)) >= DEFAULT_STEPS:
        say(f"{DEFAULT_DIR} already holds {DEFAULT_STEPS} checkpoints")
    else:
        say("training the default trajectory (long): " + shlex.join(GENERATE))
        subprocess.run(GENERATE, cwd=REPO, check=True)
    return trajectory(DEFAULT_DIR)


def find_binary(given):
    """The git-zipnn binary: --bin, or bazel-bin's (built when missing)."""
    if given:
        path = Path(given).resolve()
        if not os.access(path, os.X_OK):
            die(f"--bin {given}: not an executable file")
        return path
    path = REPO / "bazel-bin/cmd/git-zipnn"
    if not path.exists():
        say("building git-zipnn: bazel build //cmd:git-zipnn")
        subprocess.run(["bazel", "build", "//cmd:git-zipnn"], cwd=REPO, check=True)
    return path.resolve()


def git_environment(scratch, zipnn):
    """An environment for the git rows: its own HOME, no system config,
    and a folder first on PATH where git-zipnn has its proper name."""
    bindir = scratch / "bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "git-zipnn"
    if not link.exists():
        link.symlink_to(zipnn)
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", LC_ALL="C",
               PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}")
    return env


# ------------------------------------------------------------ the rows

@dataclass
class Row:
    key: str
    label: str
    raw: int = 0
    stored: int = 0
    compress: list = field(default_factory=list)    # MB/s per file and run
    decompress: list = field(default_factory=list)  # MB/s per file and run
    add: list = field(default_factory=list)         # seconds per run
    restore: list = field(default_factory=list)     # seconds per run
    restore_base: list = field(default_factory=list)
    rss_kib: int = 0
    failure: str = ""
    note: str = ""


@dataclass
class Codec:
    """How one tool compresses checkpoint i to obj and restores it to out."""
    key: str
    label: str
    compress: object     # (i, src, obj) -> argv; src: checkpoint i or its prefix
    decompress: object   # (i, obj, out) -> argv
    last_only: bool = False  # slow tools: the last sample file, one run
    prefix: int = 0          # > 0: only the first this many bytes of it
    note: str = ""


def xdelta_window(size):
    """xdelta3 rounds -B up to a power of two; cover the whole source."""
    window = 1 << max(size - 1, 1).bit_length()
    return min(window, XDELTA_MAX_WINDOW)


def codecs(zipnn, files, threads):
    """The codec rows, in table order."""
    zb = str(zipnn)
    f = [str(p) for p in files]
    n = str(threads)

    def zipnn_row(key, label, t, base_of=None, note=""):
        def base(i):
            b = base_of(i) if base_of else None
            return [] if b is None or b == i else ["--base", f[b]]
        return Codec(key, label,
                     lambda i, src, o: [zb, "compress", src, "-o", o, "--threads", t, "-f", "-q"] + base(i),
                     lambda i, o, d: [zb, "decompress", o, "-o", d, "--threads", t, "-f"] + base(i),
                     note=note)

    def zstd_row(key, level, t, slow=False, note=""):
        return Codec(key, f"zstd -{level} -T{t}",
                     lambda i, src, o: ["zstd", f"-{level}", f"-T{t}", "-q", "-f", src, "-o", o],
                     lambda i, o, d: ["zstd", "-d", "-q", "-f", o, "-o", d],
                     last_only=slow, prefix=ZSTD19_PREFIX if slow else 0, note=note)

    def window(i):
        return str(xdelta_window(os.path.getsize(f[i - 1])))

    return [
        zipnn_row("zipnn-t1", "git-zipnn standalone, 1 thread", "1"),
        zipnn_row("zipnn", f"git-zipnn standalone, {n} threads", n),
        zipnn_row("zipnn-prev", "git-zipnn delta vs previous", n, lambda i: i - 1),
        zipnn_row("zipnn-k10", f"git-zipnn delta vs base (k={BASE_INTERVAL})", n,
                  lambda i: BASE_INTERVAL * (i // BASE_INTERVAL), note="k"),
        zstd_row("zstd3-t1", 3, "1"),
        zstd_row("zstd3", 3, n),
        zstd_row("zstd19-t1", 19, "1", slow=True, note="19"),
        zstd_row("zstd19", 19, n, slow=True, note="19"),
        Codec("patch-from", f"zstd -3 -T{n} --patch-from=previous",
              lambda i, src, o: ["zstd", "-3", f"-T{n}", ZSTD_LONG, f"--patch-from={f[i - 1]}",
                                 "-q", "-f", src, "-o", o],
              lambda i, o, d: ["zstd", "-d", ZSTD_LONG, f"--patch-from={f[i - 1]}",
                               "-q", "-f", o, "-o", d],
              note="pf"),
        Codec("xdelta3", "xdelta3 -e -s previous",
              lambda i, src, o: ["xdelta3", "-e", "-f", "-q", "-B", window(i), "-s", f[i - 1], src, o],
              lambda i, o, d: ["xdelta3", "-d", "-f", "-q", "-B", window(i), "-s", f[i - 1], o, d],
              last_only=True, note="xd"),
    ]


GIT_ROWS = [("git-zipnn", "git-zipnn in git"), ("git-lfs", "Git LFS")]
CODEC_KEYS = ["zipnn-t1", "zipnn", "zipnn-prev", "zipnn-k10", "zstd3-t1", "zstd3",
              "zstd19-t1", "zstd19", "patch-from", "xdelta3"]
ALL_KEYS = CODEC_KEYS + [key for key, _ in GIT_ROWS]


def measure_codec(codec, files, sample, runs, scratch):
    """Compress and restore each sample file, runs times over; check bytes."""
    row = Row(codec.key, codec.label, note=codec.note)
    indices = sample[-1:] if codec.last_only else sample
    obj, out = str(scratch / "object"), str(scratch / "restored")
    cut = scratch / "prefix"
    try:
        for r in range(1 if codec.last_only else runs):
            for i in indices:
                src = files[i]
                if codec.prefix and os.path.getsize(src) > codec.prefix:
                    copy_prefix(src, cut, codec.prefix)
                    src = cut
                size = os.path.getsize(src)
                say(f"{codec.label}: run {r + 1}, {files[i].name}: compress")
                p = run(codec.compress(i, str(src), obj))
                row.compress.append(size / MB / p.seconds)
                row.rss_kib = max(row.rss_kib, p.rss_kib)
                if r == 0:
                    row.raw += size
                    row.stored += os.path.getsize(obj)
                say(f"{codec.label}: run {r + 1}, {files[i].name}: decompress")
                p = run(codec.decompress(i, obj, out))
                row.decompress.append(size / MB / p.seconds)
                row.rss_kib = max(row.rss_kib, p.rss_kib)
                same_bytes(out, src)
                remove(obj, out)
    except TooLarge as e:
        row.failure = f"fails ({e})"
    finally:
        remove(obj, out, cut)
    return row


def copy_prefix(src, dst, n):
    """The first n bytes of src, as the file dst."""
    with open(src, "rb") as i, open(dst, "wb") as o:
        while n > 0:
            block = i.read(min(n, 16 << 20))
            o.write(block)
            n -= len(block)


# --------------------------------------------------------------- git rows

def new_repository(path, env, kind):
    """A fresh repository whose *.safetensors go to git-zipnn or Git LFS."""
    def git(*args):
        return run(["git", *args], cwd=path, env=env, capture=True)
    run(["git", "init", "-q", str(path)], env=env)
    git("config", "user.name", "peer bench")
    git("config", "user.email", "peer-bench@example.com")
    git("config", "gc.auto", "0")  # no background gc in the middle of a timing
    if kind == "git-zipnn":
        git("zipnn", "install", "--local")
        git("zipnn", "track", "*.safetensors")
    else:
        git("lfs", "install", "--local")
        git("lfs", "track", "*.safetensors")
    git("add", ".gitattributes")
    git("commit", "-qm", "track checkpoints")
    (path / "run").mkdir()
    return git


def commit_trajectory(git, repo, files, row):
    """Copy each checkpoint in, time its `git add`, commit it. The work-tree
    copy is deleted after its commit so scratch stays small."""
    total = 0.0
    for f in files:
        target = repo / "run" / f.name
        shutil.copyfile(f, target)
        p = git("add", f"run/{f.name}")
        total += p.seconds
        row.rss_kib = max(row.rss_kib, p.rss_kib)
        git("commit", "-qm", f.name)
        remove(target)
    row.add.append(total)


def deepest_version(git):
    """(deepest version, root of its chain) from `git zipnn log --json`."""
    versions = json.loads(git("zipnn", "log", "--json").stdout)
    deepest = max(versions, key=lambda v: v["depth"])
    by_id = {v["id"]: v for v in versions}
    root = deepest
    while root["depth"] > 0 and root.get("base") in by_id:
        root = by_id[root["base"]]
    if root["depth"] != 0:  # the chain's root is not in the index: any base
        root = next(v for v in versions if v["depth"] == 0)
    return deepest, root


def zipnn_restore(git, path, original, out):
    """Seconds to `git zipnn restore` path; the output is checked."""
    p = git("zipnn", "restore", path, "-o", str(out))
    same_bytes(out, original)
    remove(out)
    return p.seconds


def lfs_restore(git, repo, path, original):
    """Seconds to check path out again from the LFS store; checked."""
    remove(repo / path)
    p = git("checkout", "--", path)
    same_bytes(repo / path, original)
    remove(repo / path)
    return p.seconds


def measure_git(kind, label, files, runs, scratch, env, chosen):
    """Commit the whole trajectory runs times, each in a fresh repository.
    chosen: dict shared by the two git rows: which versions to restore."""
    row = Row(kind, label, raw=sum(os.path.getsize(f) for f in files))
    originals = {f"run/{f.name}": f for f in files}
    for r in range(runs):
        repo = scratch / f"repo-{kind}"
        shutil.rmtree(repo, ignore_errors=True)
        say(f"{label}: run {r + 1}: committing {len(files)} checkpoints")
        git = new_repository(repo, env, kind)
        commit_trajectory(git, repo, files, row)
        if kind == "git-zipnn":
            row.stored = tree_bytes(repo / ".git/zipnn/objects")
            deepest, root = deepest_version(git)
            chosen.update(deepest=deepest["path"], depth=deepest["depth"], base=root["path"])
            say(f"{label}: run {r + 1}: restoring {deepest['path']} (depth {deepest['depth']})")
            row.restore.append(zipnn_restore(git, deepest["path"], originals[deepest["path"]],
                                             scratch / "restored"))
            say(f"{label}: run {r + 1}: restoring its base {root['path']}")
            row.restore_base.append(zipnn_restore(git, root["path"], originals[root["path"]],
                                                  scratch / "restored"))
        else:
            row.stored = tree_bytes(repo / ".git/lfs/objects")
            path = chosen.setdefault("deepest", f"run/{files[-1].name}")
            say(f"{label}: run {r + 1}: checking out {path} again")
            row.restore.append(lfs_restore(git, repo, path, originals[path]))
        shutil.rmtree(repo)
    return row


# ------------------------------------------------------------ the table

COLUMNS = ["tool", "stored (MB)", "ratio", "compress MB/s", "decompress MB/s",
           "git add s (trajectory)", "deepest restore s", "peak RSS MiB",
           "compress vs zstd -3 -T1", "decompress vs zstd -d"]


def versus(values, reference):
    if not values or not reference:
        return "–"
    ratio = statistics.median(values) / statistics.median(reference)
    return f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.2g}×"


def table_line(row, ref):
    name = row.label + (f" [{row.note}]" if row.note else "")
    if row.failure:
        return [name, row.failure] + ["–"] * (len(COLUMNS) - 2)
    return [name, f"{row.stored / MB:.1f}", f"{row.stored / row.raw:.3f}",
            spread_cell(row.compress), spread_cell(row.decompress),
            spread_cell(row.add), spread_cell(row.restore),
            f"{row.rss_kib / 1024:.0f}",
            versus(row.compress, ref.compress if ref else None),
            versus(row.decompress, ref.decompress if ref else None)]


def print_table(rows):
    ref = next((r for r in rows if r.key == "zstd3-t1" and not r.failure), None)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 1)) + "|")
    for row in rows:
        print("| " + " | ".join(table_line(row, ref)) + " |")


def print_notes(rows, files, sample, args, chosen, zipnn):
    by_key = {r.key: r for r in rows}
    names = ", ".join(files[i].name for i in sample)
    raw_sample = sum(os.path.getsize(files[i]) for i in sample)
    raw_all = sum(os.path.getsize(f) for f in files)
    n = args.threads
    print()
    print(f"Codec rows: the last {len(sample)} of {len(files)} checkpoints ({names}; "
          f"{raw_sample / MB:.0f} MB raw); ratio = stored/raw over them; MB/s = raw bytes of "
          f"a checkpoint / wall time, median (min–max) over {args.runs} run(s) × the sample files; "
          f"'all cores' = {n} threads; zstd objects are restored with `zstd -d` (one thread). "
          f"Git rows: the whole trajectory ({raw_all / MB:.0f} MB raw), {args.runs} run(s), a fresh "
          f"repository each; git add s is the sum over the checkpoints; peak RSS is the largest "
          f"over the adds (git and its filter process). Every restored file was compared "
          f"byte for byte with the original.")
    print(f"[k] checkpoint i (0-based in the trajectory) against checkpoint "
          f"{BASE_INTERVAL}·⌊i/{BASE_INTERVAL}⌋; when that is i itself it is stored standalone.")
    print(f"[19] zstd -19 is slow: only the last checkpoint ({files[sample[-1]].name}), at most "
          f"its first {ZSTD19_PREFIX >> 20} MiB, one run; its stored MB and ratio are for that.")
    print(f"[pf] `zstd -3 -T{n} {ZSTD_LONG} --patch-from=PREV`, restored with "
          f"`zstd -d {ZSTD_LONG} --patch-from=PREV`. zstd 1.5.4 already widens the window to "
          f"the reference's size and turns long mode on by itself; {ZSTD_LONG} says so "
          f"explicitly (same bytes) and lets any zstd -d accept a window up to 2 GiB. "
          f"References over 2 GiB lose ratio; zstd refuses files over 4 GiB.")
    print(f"[xd] `xdelta3 -e -B W -s PREV` / `xdelta3 -d -B W -s PREV`, W = the previous "
          f"checkpoint's size rounded up to a power of two (xdelta3 rounds -B so), at most "
          f"2 GiB (xdelta3's limit), so the whole previous checkpoint is the source window "
          f"(the default is 64 MiB); that buffer is in its peak RSS. xdelta3 is slow: only the "
          f"last checkpoint, one run.")
    zipnn_git, lfs = by_key.get("git-zipnn"), by_key.get("git-lfs")
    if zipnn_git and not zipnn_git.failure:
        deep, base = statistics.median(zipnn_git.restore), statistics.median(zipnn_git.restore_base)
        print(f"git-zipnn deepest restore: {chosen['deepest']} (depth {chosen['depth']}) "
              f"{num(deep)} s; its base {chosen['base']} (depth 0) "
              f"{spread_cell(zipnn_git.restore_base)} s; deepest/base = {deep / base:.2f}.")
    if lfs and not lfs.failure:
        print(f"Git LFS deepest restore: `rm {chosen['deepest']}; git checkout {chosen['deepest']}`.")
    if zipnn_git and lfs and not zipnn_git.failure and not lfs.failure:
        print(f"git-zipnn / Git LFS: git add time "
              f"{statistics.median(zipnn_git.add) / statistics.median(lfs.add):.2f}, "
              f"stored bytes {zipnn_git.stored / lfs.stored:.3f}.")
    print(f"Versions: {tool_versions(zipnn)}.")


# ---------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(
        description="Compare git-zipnn with zstd, xdelta3 and Git LFS on a checkpoint trajectory.")
    ap.add_argument("dir", nargs="?", metavar="DIR",
                    help="folder of step-*.safetensors (default: train one into "
                         f"{DEFAULT_DIR})")
    ap.add_argument("--bin", help="git-zipnn binary (default bazel-bin/cmd/git-zipnn)")
    ap.add_argument("--runs", type=int, default=3, help="runs per timed figure (median)")
    ap.add_argument("--sample", type=int, default=3,
                    help="codec rows use the last K checkpoints")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="thread count for the 'all cores' rows")
    ap.add_argument("--skip", default="",
                    help="comma-separated rows to leave out (globs allowed): " + ",".join(ALL_KEYS))
    args = ap.parse_args()
    if args.runs < 1 or args.sample < 1 or args.threads < 1:
        ap.error("--runs, --sample and --threads must be at least 1")
    args.skip = [s for s in args.skip.split(",") if s]
    for pattern in args.skip:
        if not fnmatch.filter(ALL_KEYS, pattern):
            ap.error(f"--skip {pattern}: no such row; rows: {','.join(ALL_KEYS)}")
    return args


def wanted(key, skip):
    return not any(fnmatch.fnmatch(key, pattern) for pattern in skip)


def check_disk(files, scratch):
    """Git LFS keeps the whole trajectory raw; codec rows need two files."""
    sizes = [os.path.getsize(f) for f in files]
    need = sum(sizes) + 3 * max(sizes)
    free = shutil.disk_usage(scratch).free
    if free < need:
        die(f"{scratch}: {free / 1e9:.1f} GB free, the benchmark needs about {need / 1e9:.1f} GB")


def main():
    args = parse_args()
    started = time.monotonic()
    files = prepare_trajectory(args.dir)
    if len(files) < 2:
        die(f"{args.dir or DEFAULT_DIR}: need at least two step-*.safetensors files")
    zipnn = find_binary(args.bin)
    sample = list(range(len(files)))[-min(args.sample, len(files) - 1):]
    scratch = Path(tempfile.mkdtemp(prefix="peerbench-", dir="/tmp"))
    try:
        check_disk(files, scratch)
        rows = []
        for codec in codecs(zipnn, files, args.threads):
            if wanted(codec.key, args.skip):
                rows.append(measure_codec(codec, files, sample, args.runs, scratch))
        env = git_environment(scratch, zipnn)
        chosen = {}
        for key, label in GIT_ROWS:
            if wanted(key, args.skip):
                rows.append(measure_git(key, label, files, args.runs, scratch, env, chosen))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"Machine: {machine_line()}. Command: `{command_line()}` (in {os.getcwd()})")
    print()
    print_table(rows)
    print_notes(rows, files, sample, args, chosen, zipnn)
    say(f"done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
