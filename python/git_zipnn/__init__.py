"""git-zipnn from Python.

Checkpoints kept in git with git-zipnn, read and committed from a training
script or a notebook:

    import git_zipnn
    git_zipnn.versions("out/model.safetensors")             # the log, as dicts
    w = git_zipnn.load_tensor("out/model.safetensors", "lm_head.weight", rev="HEAD~3")
    sd = git_zipnn.load_state_dict("out/model.safetensors", rev="HEAD~3", framework="torch")
    tables = git_zipnn.analyze("out/model.safetensors")     # pandas DataFrames when pandas is there
    git_zipnn.commit_checkpoint("out/checkpoint-500", step=500)

Everything goes through the git-zipnn binary (the one $GIT_ZIPNN names,
else `git-zipnn` on PATH) and git: no compiled extension. A tensor is
read by parts down its version's chain of deltas and checked, so one
tensor of an old version costs its own bytes, not the whole checkpoint.

numpy is needed to load tensors; torch is used for framework="torch",
pandas for analyze's tables, each only when present and asked for.
Importing this module needs neither.
"""

import json
import os
import shutil
import struct
import subprocess
import tempfile

__all__ = [
    "GitZipnnError",
    "versions",
    "list_tensors",
    "load_tensor",
    "load_state_dict",
    "analyze",
    "commit_checkpoint",
]


class GitZipnnError(RuntimeError):
    """A git-zipnn or git command failed; the message is what it said."""

    def __init__(self, message, command=None):
        super().__init__(message)
        self.command = command


# ---- Running git-zipnn and git ----


def _binary():
    found = os.environ.get("GIT_ZIPNN") or shutil.which("git-zipnn")
    if not found:
        raise GitZipnnError("git-zipnn is not on PATH (and $GIT_ZIPNN is not set): run the README's set-up first")
    return found


def _run(argv, cwd, stdin=None, env=None, warnings=False):
    """Runs argv in cwd (with `env` added to the environment); its
    standard output as bytes, or GitZipnnError with what it wrote to
    standard error. With `warnings`, the warnings it wrote go on to this
    process's standard error."""
    done = subprocess.run(argv, cwd=cwd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, **env) if env else None)
    if warnings:
        import sys

        for line in done.stderr.decode(errors="replace").splitlines():
            if "warning: " in line:
                print(line, file=sys.stderr)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        for prefix in ("error: ", "git-zipnn: ", "fatal: "):
            if said.startswith(prefix):
                said = said[len(prefix):]
        raise GitZipnnError(said or f"{' '.join(argv)} exited with {done.returncode}", argv)
    return done.stdout


def _zipnn(args, cwd):
    return _run([_binary()] + list(args), cwd)


# No string of the caller's is ever read as an option, by git-zipnn or by
# git: paths and revision specs go after "--", option values are joined
# to their option ("--rev=<rev>"), and git-zipnn refuses a revision that
# starts with "-" before git sees it. A folder in a cloned repository may
# well be named "--html=/home/me/notes.txt".


def _git(args, cwd, env=None):
    return _run(["git"] + list(args), cwd, env=env).decode()


def _place(path):
    """The top of the work tree that holds `path` (found from the nearest
    folder that exists, since a trainer may have removed the file), and
    the path from there: commands run at the top, and their messages name
    paths as git does."""
    full = os.path.abspath(path)
    folder = full if os.path.isdir(full) else os.path.dirname(full)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    top = _git(["rev-parse", "--show-toplevel"], folder).strip()
    return top, os.path.relpath(full, top)


def _spec(path, rev):
    top, rel = _place(path)
    return top, f"{rev}:{rel}"


# ---- Tensors out of safetensors bytes ----

_NUMPY_TYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}


def _numpy():
    try:
        import numpy
    except ImportError:
        raise GitZipnnError("loading tensors needs numpy (Debian: apt install python3-numpy)") from None
    return numpy


def _f8_table(numpy, exponent_bits, bias, finite_only):
    """The float32 value of each of the 256 bytes of an 8-bit float."""
    values = []
    mantissa_bits = 7 - exponent_bits
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exponent = (byte >> mantissa_bits) & ((1 << exponent_bits) - 1)
        mantissa = byte & ((1 << mantissa_bits) - 1)
        top = (1 << exponent_bits) - 1
        if finite_only and exponent == top and mantissa == (1 << mantissa_bits) - 1:
            values.append(float("nan"))  # e4m3fn: only S.1111.111 is NaN
        elif not finite_only and exponent == top:
            values.append(sign * float("inf") if mantissa == 0 else float("nan"))
        elif exponent == 0:
            values.append(sign * mantissa / (1 << mantissa_bits) * 2.0 ** (1 - bias))
        else:
            values.append(sign * (1 + mantissa / (1 << mantissa_bits)) * 2.0 ** (exponent - bias))
    return numpy.array(values, dtype=numpy.float32)


def _to_numpy(numpy, dtype, shape, raw):
    """A numpy array of safetensors `dtype`. numpy has no bf16 or 8-bit
    floats: those come back as float32, exactly (every value they hold is
    a float32)."""
    if dtype in _NUMPY_TYPES:
        return numpy.frombuffer(raw, dtype=_NUMPY_TYPES[dtype]).reshape(shape).copy()
    if dtype == "BF16":
        bits = numpy.frombuffer(raw, dtype="<u2").astype(numpy.uint32) << 16
        return bits.view(numpy.float32).reshape(shape)
    if dtype in ("F8_E4M3", "F8_E5M2"):
        table = _f8_table(numpy, 4, 7, True) if dtype == "F8_E4M3" else _f8_table(numpy, 5, 15, False)
        return table[numpy.frombuffer(raw, dtype=numpy.uint8)].reshape(shape)
    raise GitZipnnError(f"dtype {dtype} has no numpy type")


def _to_torch(dtype, shape, raw):
    import torch

    types = {
        "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
        "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
        "U8": torch.uint8, "BOOL": torch.bool,
    }
    for name, attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")):
        if hasattr(torch, attr):
            types[name] = getattr(torch, attr)
    if dtype not in types:
        raise GitZipnnError(f"this torch ({torch.__version__}) has no dtype for {dtype}")
    if not raw:
        return torch.empty(shape, dtype=types[dtype])
    return torch.frombuffer(bytearray(raw), dtype=types[dtype]).reshape(shape)


def _tensors_of(blob, framework):
    """The tensors of a safetensors file's bytes, by name, in file order."""
    if len(blob) < 8:
        raise GitZipnnError("git-zipnn wrote no safetensors header")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    numpy = None if framework == "torch" else _numpy()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytes(data[begin:end])
        if framework == "torch":
            out[name] = _to_torch(entry["dtype"], entry["shape"], raw)
        else:
            out[name] = _to_numpy(numpy, entry["dtype"], entry["shape"], raw)
    return out


def _check_framework(framework):
    if framework not in ("numpy", "torch"):
        raise ValueError(f"framework must be 'numpy' or 'torch', not {framework!r}")


# ---- The public functions ----


def versions(path, series=False):
    """The stored versions of the tracked checkpoint `path`, newest first
    (as git log lists commits), as `git zipnn log --json` gives them:
    dicts with path, commit, date, subject, id, kind ('base' or 'delta'),
    base, base_reason, depth, raw_bytes and stored_bytes. With
    series=True, those of every checkpoint of its series (the
    checkpoint-N folders of a run, deleted ones included), path by path,
    the last step first."""
    folder, rel = _place(path)
    return json.loads(_zipnn(["log", "--json"] + (["--series"] if series else []) + ["--", rel], folder))


def _approximate(approximate):
    return ["--approximate"] if approximate else []


def list_tensors(path, rev="HEAD", approximate=False):
    """The tensors of `path` at `rev`: dicts with name, dtype, shape,
    offset and bytes (and, for a view whose elements are out of order in
    a shared storage, strided and strides). approximate=True as for
    load_tensor."""
    folder, spec = _spec(path, rev)
    args = ["cat", "--list", "--json"] + _approximate(approximate)
    return json.loads(_zipnn(args + ["--", spec], folder))["tensors"]


def load_tensor(path, name, rev="HEAD", framework="numpy", approximate=False):
    """One tensor of `path` at `rev`, read by parts down its chain and
    checked. A numpy array (bf16 and 8-bit floats as float32, exactly), or
    a torch tensor with framework="torch".

    A version that retention thinned (`git zipnn retain`) is read only
    with approximate=True: its values rounded to the precision its record
    states (`git zipnn log` shows it), checked against the approximate
    version's own id. Without it, such a version raises GitZipnnError
    naming the flag."""
    _check_framework(framework)
    folder, spec = _spec(path, rev)
    args = ["cat", f"--tensor={name}", "--format=safetensors"] + _approximate(approximate)
    blob = _zipnn(args + ["--", spec], folder)
    tensors = _tensors_of(blob, framework)
    if name in tensors:
        return tensors[name]
    raise GitZipnnError(f"{name!r} names several tensors of {spec} ({', '.join(tensors)}); give one name")


def load_state_dict(path, rev="HEAD", framework="numpy", tensors=None, approximate=False):
    """Every tensor of `path` at `rev` (or those `tensors` names or globs),
    as a dict from name to array, in file order. torch.save files give
    their tensors by path in the saved structure ("model/fc.weight"),
    views of shared storages with their elements in order.
    approximate=True as for load_tensor."""
    _check_framework(framework)
    folder, spec = _spec(path, rev)
    args = ["cat", "--format=safetensors"] + _approximate(approximate)
    for pattern in tensors or []:
        args.append(f"--tensor={pattern}")
    return _tensors_of(_zipnn(args + ["--", spec], folder), framework)


def analyze(*paths, rev=None, against="previous", base_interval=None, tensors=None):
    """`git zipnn analyze` over one tracked checkpoint (its history or
    series) or checkpoint files in order: its tables ("checkpoints",
    "tensors", "exponents", "policies") as pandas DataFrames when pandas
    is present, else as lists of dicts."""
    if not paths:
        raise ValueError("analyze needs at least one path")
    top, _ = _place(paths[0])
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "analysis.json")
        args = ["analyze", f"--json={out}", f"--against={against}", "--top=0"]
        if rev is not None:
            args.append(f"--rev={rev}")
        if base_interval is not None:
            args.append(f"--base-interval={base_interval}")
        if tensors is not None:
            args.append(f"--tensors={tensors}")
        args += ["--"] + [os.path.relpath(os.path.abspath(p), top) for p in paths]
        _zipnn(args, top)
        with open(out) as f:
            doc = json.load(f)
    tables = {key: doc[key] for key in ("checkpoints", "tensors", "exponents", "policies")}
    try:
        import pandas
    except ImportError:
        return tables
    # Nullable types keep whole numbers whole where a column has gaps.
    return {key: pandas.DataFrame(rows).convert_dtypes() for key, rows in tables.items()}


def _job_ranks(asked, top):
    """(rank, world size, clones) of the torch.distributed job this process
    is a rank of, once every rank has come here (so that every rank has
    saved its files before any lists them); None outside such a job.
    Without an initialized process group, torchrun's RANK and WORLD_SIZE
    are left to git-zipnn. `clones` holds, for each rank, the ranks whose
    repository is the same as its own (one machine, or a shared file
    system): each rank leaves a file of its own in its repository's
    .git/zipnn/commit/ and looks for the others'.

    `asked` is what this rank was asked to commit; every rank must ask for
    the same. If they differ (a rank naming its own shard instead of the
    save's folder), every rank raises ValueError at once, where each would
    otherwise wait for the others for git-zipnn's --timeout."""
    import sys
    import uuid

    dist = getattr(sys.modules.get("torch"), "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    rank, world = dist.get_rank(), dist.get_world_size()
    meeting = os.path.join(top, _git(["rev-parse", "--git-common-dir"], top).strip(), "zipnn", "commit")
    os.makedirs(meeting, exist_ok=True)
    mark = os.path.join(meeting, f"probe-{uuid.uuid4().hex}")
    open(mark, "w").close()
    try:
        every = [None] * world
        dist.all_gather_object(every, (asked, os.path.basename(mark)))  # waits for every rank, as a barrier
        sees = [r for r, (_, name) in enumerate(every) if os.path.exists(os.path.join(meeting, name))]
        clones = [None] * world
        dist.all_gather_object(clones, sees)  # once every rank has looked
    finally:
        os.remove(mark)
    every = [a for a, _ in every]
    if any(a != every[0] for a in every):
        differ = [i for i in range(len(asked)) if len({a[i] for a in every}) > 1]
        ranks_of = {}
        for r, a in enumerate(every):
            ranks_of.setdefault(a, []).append(r)

        def shown(key, value):
            return f"{key} {value!r}"

        groups = list(ranks_of.items())
        told = "; ".join(
            f"rank{'s' if len(rs) > 1 else ''} {','.join(map(str, rs[:8]))}{'...' if len(rs) > 8 else ''}: "
            + ", ".join(shown(*a[i]) for i in differ)
            for a, rs in groups[:4]) + (f"; and {len(groups) - 4} more" if len(groups) > 4 else "")
        raise ValueError(
            f"git_zipnn.commit_checkpoint: the {world} ranks of this job asked for different commits ({told}). "
            "Call it on every rank with the same path (the save's folder), step, message, parent and push, and "
            "name the files each rank wrote with rank_files=.")
    return rank, world, clones


def _commit_across_clones(dist, rank, clones, args, rank_files, top, rel):
    """commit_checkpoint on a rank of a job whose nodes each have a clone
    of their own: each rank stores its files in its clone and sends their
    objects to the remote's store (`git zipnn commit --store-only`), rank
    0 commits them all (`--pointers`), and every rank returns its commit."""
    world = len(clones)
    mine = clones[rank]
    store = ["commit", "--store-only", "--push", f"--rank={mine.index(rank)}", f"--world-size={len(mine)}"]
    store += [a for a in args[1:] if a.startswith("--parent=")]
    store += [f"--rank-file={os.path.abspath(f)}" for f in rank_files or []]
    try:
        # Files only rank 0's clone holds are committed from there: no
        # warning about them.
        stored = (True, _run([_binary()] + store + ["--", rel], top, warnings=rank not in clones[0]).decode())
    except GitZipnnError as e:
        stored = (False, str(e))
    every = [None] * world
    dist.all_gather_object(every, stored)
    failed = [(r, said) for r, (ok, said) in enumerate(every) if not ok]
    outcome = None
    if failed:
        outcome = (False, f"rank {failed[0][0]} could not store its files: {failed[0][1]}")
    elif rank == 0:
        # Files rank 0's clone holds are committed from there.
        here = {line.split("\t", 1)[1] for r in clones[0] for line in every[r][1].splitlines()}
        lines = "".join(line + "\n" for r in range(world) if r not in clones[0]
                        for line in every[r][1].splitlines() if line.split("\t", 1)[1] not in here)
        try:
            commit = _run([_binary()] + args + ["--rank=0", "--world-size=1", "--pointers=-", "--", rel], top,
                          stdin=lines.encode()).decode().strip()
            outcome = (True, commit or None)
        except GitZipnnError as e:
            outcome = (False, f"rank 0 did not commit: {e}")
    said = [outcome]
    dist.broadcast_object_list(said, src=0)
    ok, what = said[0]
    if not ok:
        raise GitZipnnError(what)
    if rank not in clones[0] and rank == mine[0]:
        # This clone moves to the commit too, its files kept.
        try:
            _zipnn(["commit", "--follow", "--", rel], top)
        except GitZipnnError as e:
            import sys

            print(f"git_zipnn.commit_checkpoint: warning: {top} stays at the commit before {what}: {e}",
                  file=sys.stderr)
    return what


def commit_checkpoint(path, step=None, message=None, parent=None, push=False, rank_files=None):
    """Commits what a training loop just saved at `path` (a file or a
    folder such as checkpoint-500/), and nothing else staged. Checkpoints
    removed beside it (a Trainer's save_total_limit deleting
    checkpoint-400/ as it writes checkpoint-500/) are committed as removed
    too. Returns the new commit's id, or None when nothing changed.
    Refuses a path git-zipnn does not track, naming the command to run.

    `parent` names what a fine-tune started from: a checkpoint file, or a
    folder whose file of the same name is meant, in the same repository.
    A checkpoint that is the first of its series is then stored as a
    delta of it when that pays (docs/policy.md, "Parents").

    push=True also pushes the commit to the upstream remote (else origin).

    In a distributed job (torch.distributed initialized, or torchrun's
    RANK and WORLD_SIZE set) call it on every rank with the same `path`:
    each rank stores its own files (`rank_files`, the paths it wrote, else
    its share of the folder's files) at the same time as the others, and
    with push=True sends their objects to the remote's store; rank 0
    commits once all have stored, and every rank returns that commit's id
    (`git zipnn commit`, docs/commands/commit.md). Nodes that share no
    file system each save into a clone of their own: then (push=True)
    every rank's objects meet in the remote's store, rank 0 commits all
    files, and each other clone moves to that commit (docs/python.md)."""
    top, rel = _place(path)
    args = ["commit"]
    if step is not None:
        args.append(f"--step={int(step)}")
    if message is not None:
        args.append(f"--message={message}")
    if parent is not None:
        args.append(f"--parent={os.path.abspath(parent)}")
    if push:
        args.append("--push")
    # From the top of the work tree: each node's clone may be elsewhere.
    asked = (("path", rel), ("step", None if step is None else int(step)), ("message", message),
             ("parent", None if parent is None else os.path.relpath(os.path.abspath(parent), top)),
             ("push", bool(push)))
    ranks = _job_ranks(asked, top)
    if ranks is not None and any(len(c) < ranks[1] for c in ranks[2]):
        if not push:
            raise ValueError(
                f"git_zipnn.commit_checkpoint: the {ranks[1]} ranks of this job see {len(set(map(tuple, ranks[2])))} "
                "repositories (nodes that share no file system), so their files can meet only in the remote's "
                "store: call it with push=True")
        import torch.distributed as dist

        return _commit_across_clones(dist, ranks[0], ranks[2], args, rank_files, top, rel)
    if ranks is not None:
        args += [f"--rank={ranks[0]}", f"--world-size={ranks[1]}"]
    for f in rank_files or []:
        args.append(f"--rank-file={os.path.abspath(f)}")
    out = _zipnn(args + ["--", rel], top).decode().strip()
    return out or None
