"""A real torch.distributed job (the gloo backend on CPU, one process per
rank) trains a small model with DistributedDataParallel and saves a
sharded checkpoint every few steps: each rank its own weight shard and
its optimizer state, as DeepSpeed and FSDP lay them out. Every rank
calls git_zipnn.commit_checkpoint; the test then checks what git holds
and that a fresh clone gives back every save, bit for bit."""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

WORKER = r'''
import hashlib, json, os, struct, sys
import torch
import torch.distributed as dist
import git_zipnn

out, saves, manifest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 256), torch.nn.GELU(),
                            torch.nn.Linear(256, 16))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
data = torch.Generator().manual_seed(1 + rank)

def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

hashes, commits = {}, []
for save in range(1, saves + 1):
    for _ in range(20):
        x = torch.randn(32, 64, generator=data)
        loss = (ddp(x) - x[:, :16]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    folder = os.path.join(out, f"checkpoint-{save * 20}")
    os.makedirs(folder, exist_ok=True)
    names = sorted(model.state_dict())
    mine = {n: model.state_dict()[n] for i, n in enumerate(names) if i % world == rank}
    files = [os.path.join(folder, f"model-{rank + 1:05d}-of-{world:05d}.safetensors"),
             os.path.join(folder, f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")]
    write_safetensors(files[0], mine)
    torch.save({"optimizer": opt.state_dict(), "rank": rank}, files[1])
    if rank == 0:
        with open(os.path.join(folder, "trainer_state.json"), "w") as f:
            json.dump({"global_step": save * 20}, f)
    if int(os.environ["LOCAL_RANK"]) == 0:
        # save_total_limit=2: the oldest save goes as the new one is made,
        # on each node
        old = os.path.join(out, f"checkpoint-{(save - 2) * 20}")
        if save > 2:
            for name in os.listdir(old):
                os.remove(os.path.join(old, name))
            os.rmdir(old)
    for path in files:
        with open(path, "rb") as f:
            hashes[f"{save}:{os.path.relpath(path, out)}"] = hashlib.sha256(f.read()).hexdigest()
    # Each rank names the files it wrote.
    commits.append(git_zipnn.commit_checkpoint(folder, step=save * 20, push=True, rank_files=files))
with open(f"{manifest}.{rank}", "w") as f:
    json.dump({"hashes": hashes, "commits": commits}, f)
dist.destroy_process_group()
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Job(unittest.TestCase):
    """A repository with a remote (a bare repository, its store a folder)
    for a job's ranks to commit in."""

    def make_home(self):
        """A scratch folder (self.root) with a HOME of its own in it, where
        git and this build's git-zipnn run."""
        self.root = tempfile.mkdtemp(prefix="git-zipnn-dist-")
        self.addCleanup(shutil.rmtree, self.root)
        binary = os.environ["GIT_ZIPNN"]
        self.env = dict(os.environ, HOME=os.path.join(self.root, "home"), GIT_CONFIG_NOSYSTEM="1",
                        PATH=os.path.dirname(binary) + os.pathsep + os.environ["PATH"])
        os.mkdir(self.env["HOME"])
        self.sh("git config --global user.email t@example.com && git config --global user.name T && "
                "git config --global init.defaultBranch main && git zipnn install >/dev/null")

    def setUp(self):
        self.make_home()
        self.sh("git init -q --bare origin.git && mkdir objects && git init -q repo && cd repo && "
                "git remote add origin ../origin.git && git config remote.origin.zipnnurl ../objects && "
                "git zipnn track '*.safetensors' '*.pt' >/dev/null && git add .gitattributes && "
                "git commit -qm 'track checkpoints' && git push -q -u origin main")

    def sh(self, line, cwd=None):
        done = subprocess.run(["bash", "-c", line], cwd=cwd or self.root, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()


class Launch:
    """A job of WORLD ranks, one process each, that trains and saves
    SAVES times (WORKER)."""
    WORLD = 3
    SAVES = 4

    def run_job(self, repo_of=lambda rank: "repo", local_rank=lambda rank: rank):
        """Runs the job, each rank saving into the clone repo_of(rank);
        each rank's manifest (its files' hashes and its commits)."""
        port = free_port()
        manifest = os.path.join(self.root, "manifest")
        ranks = []
        for rank in range(self.WORLD):
            env = dict(self.env, RANK=str(rank), WORLD_SIZE=str(self.WORLD), LOCAL_RANK=str(local_rank(rank)),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            ranks.append(subprocess.Popen([sys.executable, "-c", WORKER, os.path.join(self.root, repo_of(rank), "out"),
                                           str(self.SAVES), manifest], env=env, stderr=subprocess.PIPE))
        said = [p.communicate(timeout=540)[1].decode() for p in ranks]
        for rank, p in enumerate(ranks):
            self.assertEqual(p.returncode, 0, f"rank {rank}: {said[rank]}")
        results = []
        for rank in range(self.WORLD):
            with open(f"{manifest}.{rank}") as f:
                results.append(json.load(f))
        return results

    def check_saves(self, results, repo):
        """Every rank got the same commit for each save, one commit per
        save on top of the first; each holds every rank's two files (and
        rank 0's trainer_state.json) and drops the save two before it
        whole. The commits in order."""
        commits = results[0]["commits"]
        self.assertEqual(len(set(commits)), self.SAVES)
        for r in results:
            self.assertEqual(r["commits"], commits)
        log = self.sh("git log --format=%H", cwd=repo).split()
        self.assertEqual(log[:self.SAVES], commits[::-1])
        self.assertEqual(len(log), self.SAVES + 1)
        self.assertEqual(self.sh("git status --porcelain", cwd=repo), "")
        for save, commit in enumerate(commits, start=1):
            changed = self.sh(f"git show --no-renames --name-status --format= {commit}", cwd=repo).split("\n")
            added = sorted(line.split("\t")[1] for line in changed if line.startswith("A\t"))
            self.assertEqual(len(added), 2 * self.WORLD + 1, changed)
            self.assertTrue(all(a.startswith(f"out/checkpoint-{save * 20}/") for a in added), added)
            removed = [line for line in changed if line.startswith("D\t")]
            self.assertEqual(len(removed), 2 * self.WORLD + 1 if save > 2 else 0, changed)
        return commits

    def check_clone(self, results, commits, clone):
        """The fresh clone `clone` gives back every save, bit for bit."""
        self.sh("git zipnn fsck --all >/dev/null", cwd=clone)
        hashes = {}
        for r in results:
            hashes.update(r["hashes"])
        self.assertEqual(len(hashes), 2 * self.WORLD * self.SAVES)
        for save, commit in enumerate(commits, start=1):
            self.sh(f"git checkout -q {commit}", cwd=clone)
            for key, digest in hashes.items():
                at, rel = key.split(":", 1)
                if int(at) == save:
                    self.assertEqual(sha256(os.path.join(clone, "out", rel)), digest, key)


class DistributedSaveTest(Launch, Job):
    def test_every_rank_stores_its_shards_and_one_commits(self):
        results = self.run_job()
        repo = os.path.join(self.root, "repo")
        commits = self.check_saves(results, repo)
        # The ranks stored their files before git add: every checkpoint
        # file has its note, and git's add only checked them.
        notes = os.listdir(os.path.join(repo, ".git", "zipnn", "added"))
        self.assertEqual(len(notes), 2 * self.WORLD * self.SAVES)
        self.assertEqual(os.listdir(os.path.join(repo, ".git", "zipnn", "commit")), ["git.lock"])
        # A fresh clone gives back every save, bit for bit.
        self.sh("git clone -q -c remote.origin.zipnnurl=../objects origin.git clone")
        self.check_clone(results, commits, os.path.join(self.root, "clone"))


MISMATCHED = r'''
import os, shutil, sys
import torch.distributed as dist
import git_zipnn

out, data = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
folder = os.path.join(out, "checkpoint-20")
os.makedirs(folder, exist_ok=True)
mine = os.path.join(folder, f"model-{rank + 1:05d}-of-{world:05d}.safetensors")
shutil.copyfile(os.path.join(data, sorted(os.listdir(data))[rank]), mine)
try:
    # The mistake: each rank names its own shard, not the save's folder.
    git_zipnn.commit_checkpoint(mine, step=20)
except ValueError as e:
    print(e)
    # Out at once: the live process group's threads make the interpreter's
    # own exit abort now and then ("terminate called without an active
    # exception", from torch's gloo), which is not what is tested here.
    sys.stdout.flush()
    os._exit(3)
'''


class MismatchedRanksTest(Job):
    """Ranks of a torch.distributed job that ask for different commits
    hear so at once, not after git-zipnn's timeout."""

    def test_ranks_naming_their_own_files_are_told_at_once(self):
        port = free_port()
        data = os.path.join(os.getcwd(), "tests", "data", "cnn-bf16")
        out = os.path.join(self.root, "repo", "out")
        started = time.monotonic()
        ranks = []
        for rank in range(2):
            env = dict(self.env, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            ranks.append(subprocess.Popen([sys.executable, "-c", MISMATCHED, out, data], env=env,
                                          cwd=os.path.join(self.root, "repo"), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE))
        said = [p.communicate(timeout=120) for p in ranks]
        self.assertLess(time.monotonic() - started, 90)
        for rank, p in enumerate(ranks):
            self.assertEqual(p.returncode, 3, said[rank][1].decode())
            self.assertEqual(
                said[rank][0].decode().strip(),
                "git_zipnn.commit_checkpoint: the 2 ranks of this job asked for different commits (rank 0: path "
                "'out/checkpoint-20/model-00001-of-00002.safetensors'; rank 1: path "
                "'out/checkpoint-20/model-00002-of-00002.safetensors'). Call it on every rank with the same path "
                "(the save's folder), step, message, parent and push, and name the files each rank wrote with "
                "rank_files=.")
        # Nothing was stored or committed.
        repo = os.path.join(self.root, "repo")
        self.assertEqual(self.sh("git rev-list --count HEAD", cwd=repo), "1\n")
        added = os.path.join(repo, ".git", "zipnn", "added")
        self.assertEqual(os.listdir(added) if os.path.isdir(added) else [], [])


class Ranks:
    """`git zipnn commit` from a launcher that is not Python: one process
    per rank, RANK and WORLD_SIZE in each one's environment."""

    def ranks(self, args, world=3, extra=None, only=None):
        """Runs `git zipnn commit <args>` as every rank at once (or the
        ranks `only` names) in the repository; each one's (exit code,
        stdout, stderr)."""
        procs = []
        for rank in (only if only is not None else range(world)):
            env = dict(self.env, RANK=str(rank), WORLD_SIZE=str(world), MASTER_PORT="1")
            procs.append(subprocess.Popen(["git", "zipnn", "commit"] + args + (extra(rank) if extra else []),
                                          cwd=os.path.join(self.root, "repo"), env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE))
        said = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            said.append((p.returncode, out.decode(), err.decode()))
        return said

    def save(self, folder, tag):
        data = os.path.join(os.getcwd(), "tests", "data", "cnn-bf16")
        os.makedirs(os.path.join(self.root, "repo", folder), exist_ok=True)
        for i, name in enumerate(sorted(os.listdir(data))[:3]):
            with open(os.path.join(data, name), "rb") as src:
                blob = bytearray(src.read())
            blob[-1] ^= tag  # a last byte of its own for each save
            with open(os.path.join(self.root, "repo", folder, f"shard-{i}.safetensors"), "wb") as f:
                f.write(blob)


class CommandLineRanksTest(Ranks, Job):
    """The ranks of a job, a folder the remote's store."""

    def test_a_rank_that_cannot_store_stops_the_commit_on_every_rank(self):
        self.save("out/s1", 1)
        said = self.ranks(["out/s1"], extra=lambda r: ["--rank-file=out/s1/missing.safetensors"] if r == 1 else [])
        for rank, (code, out, err) in enumerate(said):
            self.assertNotEqual(code, 0)
            self.assertEqual(out, "")
            self.assertIn("out/s1/missing.safetensors is no file this rank can store" if rank == 1 else
                          "rank 1 could not store its files", err)
        self.assertEqual(self.sh("git rev-list --count HEAD", cwd=os.path.join(self.root, "repo")), "1\n")
        # The next try, with every rank able, commits.
        said = self.ranks(["out/s1"])
        self.assertEqual({out for _, out, _ in said}, {self.sh("git rev-parse HEAD", cwd=os.path.join(self.root,
                                                                                               "repo"))})

    def test_a_rank_that_fails_before_storing_stops_every_rank_at_once(self):
        self.save("out/s1", 1)
        started = time.monotonic()
        said = self.ranks(["--timeout=120", "out/s1"], extra=lambda r: ["--rank-file=/etc/passwd"] if r == 1 else [])
        self.assertLess(time.monotonic() - started, 60)
        for rank, (code, out, err) in enumerate(said):
            self.assertNotEqual(code, 0)
            self.assertIn("/etc/passwd is outside the work tree" if rank == 1 else
                          "rank 1 could not store its files: /etc/passwd is outside the work tree", err)

    def test_a_world_size_without_a_rank_is_refused_at_once(self):
        self.save("out/s1", 1)
        done = subprocess.run(["git", "zipnn", "commit", "out/s1"], cwd=os.path.join(self.root, "repo"),
                              env=dict(self.env, WORLD_SIZE="3"), stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(done.returncode, 1)
        self.assertIn("WORLD_SIZE is 3 but this process has no rank", done.stderr.decode())

    def test_what_a_killed_round_left_counts_for_nothing(self):
        repo = os.path.join(self.root, "repo")
        self.save("out/s1", 1)
        # Two of three ranks come, store, and are killed while they wait:
        # their files stay.
        commit_dir = os.path.join(repo, ".git", "zipnn", "commit")
        procs = [subprocess.Popen(["git", "zipnn", "commit", "out/s1"], cwd=repo, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL,
                                  env=dict(self.env, RANK=str(rank), WORLD_SIZE="3", MASTER_PORT="1"),
                                  start_new_session=True) for rank in (0, 1)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rounds = [r for r in os.listdir(commit_dir) if r != "git.lock"] if os.path.isdir(commit_dir) else []
            if rounds and all(os.path.exists(os.path.join(commit_dir, rounds[0], f"stored.{r}")) for r in (0, 1)):
                break
            time.sleep(0.05)
        for p in procs:  # git and git-zipnn, as a launcher ends a job
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.assertEqual(len(rounds), 1)
        folder = os.path.join(commit_dir, rounds[0])
        with open(os.path.join(folder, "begun")) as f:
            number = f.read()
        # As if its rank 0 had also said it committed, and rank 1 read it.
        for name, text in (("outcome", "commit " + "d" * 40), ("done.1", ""), ("stored.2", "ok")):
            with open(os.path.join(folder, name), "w") as f:
                f.write(f"{number}\n{text}")
        self.save("out/s1", 2)
        said = self.ranks(["out/s1"])
        self.assertTrue(all(code == 0 for code, _, _ in said), said)
        head = self.sh("git rev-parse HEAD", cwd=repo)
        self.assertEqual({out for _, out, _ in said}, {head})
        self.sh("git zipnn fsck >/dev/null && test -z \"$(git status --porcelain)\"", cwd=repo)
        self.assertEqual(os.listdir(os.path.join(repo, ".git", "zipnn", "commit")), ["git.lock"])

    def test_a_note_is_checked_against_the_bytes_git_sends(self):
        repo = os.path.join(self.root, "repo")
        self.save("out/s1", 1)
        said = self.ranks(["--step=1", "out/s1"])
        self.assertTrue(all(code == 0 for code, _, _ in said), said)
        staged = self.sh("git ls-files -s out/s1", cwd=repo)
        # Swap the pointers of two notes: each still names its file with
        # the file's own stat, but the other file's bytes.
        folder = os.path.join(repo, ".git", "zipnn", "added")
        notes = sorted(os.listdir(folder))
        texts = []
        for n in notes[:2]:
            with open(os.path.join(folder, n)) as f:
                texts.append(f.read().split("\n", 2))
        for n, (path, stamp, _), (_, _, pointer) in zip(notes[:2], texts, texts[::-1]):
            with open(os.path.join(folder, n), "w") as f:
                f.write(f"{path}\n{stamp}\n{pointer}")
        # Each file is refused once; its note is then forgotten, and the
        # next add stores the file's own bytes.
        for path, _, _ in texts:
            failed = subprocess.run(["git", "add", "--renormalize", "--", path], cwd=repo, env=self.env,
                                    stderr=subprocess.PIPE)
            self.assertNotEqual(failed.returncode, 0)
            self.assertIn("is not what `git zipnn commit` stored for it", failed.stderr.decode())
        self.sh(f"git add --renormalize -- {texts[0][0]} {texts[1][0]}", cwd=repo)
        self.assertEqual(self.sh("git ls-files -s out/s1", cwd=repo), staged)
        self.assertEqual(self.sh("git status --porcelain", cwd=repo), "")
        # A note that is a pipe is no note: nothing waits on it.
        for n in os.listdir(folder):
            os.remove(os.path.join(folder, n))
            os.mkfifo(os.path.join(folder, n))
        done = subprocess.run(["git", "add", "--renormalize", "--", "out/s1"], cwd=repo, env=self.env, timeout=60)
        self.assertEqual(done.returncode, 0)
        self.assertEqual(self.sh("git ls-files -s out/s1", cwd=repo), staged)

    def test_every_rank_of_a_round_returns_and_the_next_round_starts_clean(self):
        repo = os.path.join(self.root, "repo")
        heads = []
        for tag in (1, 2, 3):
            self.save("out/model", tag)  # one path, overwritten each save
            said = self.ranks(["out/model"])
            self.assertTrue(all(code == 0 for code, _, _ in said), said)
            self.assertEqual(len({out for _, out, _ in said}), 1)
            heads.append(said[0][1].strip())
            self.assertIn("has its 1 file (", said[0][2])
        self.assertEqual(self.sh("git log --format=%H -3", cwd=repo).split(), heads[::-1])
        # Nothing changed: no commit, on every rank.
        said = self.ranks(["out/model"])
        self.assertTrue(all(code == 0 and out == "" and "nothing changed" in err for code, out, err in said), said)
        self.assertEqual(os.listdir(os.path.join(repo, ".git", "zipnn", "commit")), ["git.lock"])


class LfsHostJob(Job):
    """A repository whose remote is a Git LFS host (tests/lfs_server.py,
    first shown to answer Debian's git-lfs as a host does)."""

    def setUp(self):
        self.make_home()
        os.makedirs(os.path.join(self.root, "srv"))
        log = open(os.path.join(self.root, "server.log"), "w")
        self.addCleanup(log.close)
        server = subprocess.Popen([sys.executable, os.path.join(os.getcwd(), "tests", "lfs_server.py"),
                                   os.path.join(self.root, "srv"), "u:pw"], stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(server.wait)
        self.addCleanup(server.kill)
        def said():
            with open(log.name) as f:
                return f.read()
        deadline = time.monotonic() + 30
        while "listening" not in said() and time.monotonic() < deadline:
            time.sleep(0.05)
        port = said().split("127.0.0.1:")[1].split()[0].strip("/")
        self.url = f"http://127.0.0.1:{port}"
        self.sh(f"printf 'http://u:pw@127.0.0.1:{port}\\n' > creds && "
                f"git config --global credential.helper 'store --file={self.root}/creds' && "
                f"git lfs install >/dev/null && "
                f"git init -q --bare -b main srv/lfs.git && git init -q --bare -b main srv/team.git && "
                # Debian's git-lfs first: the server takes and gives back an object as a host does.
                f"git init -q lfs && cd lfs && git lfs track '*.bin' >/dev/null && head -c 100000 /dev/urandom > a.bin && "
                f"git add . && git commit -qm lfs && git push -q {self.url}/lfs.git main && cd .. && "
                f"git clone -q {self.url}/lfs.git lfs-clone && cmp lfs/a.bin lfs-clone/a.bin && "
                f"git init -q repo && cd repo && git remote add origin {self.url}/team.git && "
                f"git zipnn track '*.safetensors' '*.pt' >/dev/null && git add .gitattributes && "
                f"git commit -qm track && git push -q -u origin main")


class GitLfsHostTest(Ranks, LfsHostJob):
    """The ranks of a job push to a Git LFS host: each sends its own
    objects, rank 0 the commit and the object map."""

    def test_every_rank_sends_its_objects_and_rank_0_the_commit(self):
        repo = os.path.join(self.root, "repo")
        for save in (1, 2):
            self.save(f"out/s{save}", save)
            said = self.ranks(["--push", f"--step={save}", f"out/s{save}"])
            self.assertTrue(all(code == 0 for code, _, _ in said), said)
            self.assertEqual(len({out for _, out, _ in said}), 1)
        self.assertEqual(self.sh("git rev-parse HEAD origin/main", cwd=repo).split()[0],
                         self.sh("git ls-remote origin refs/heads/main", cwd=repo).split()[0])
        self.assertIn("refs/zipnn/objects", self.sh("git ls-remote origin", cwd=repo))
        self.sh(f"git clone -q {self.url}/team.git clone && cd clone && git zipnn fsck --all >/dev/null && "
                f"for f in out/s1/* out/s2/*; do cmp $f ../repo/$f; done")



class ClonePerNodeTest(Launch, LfsHostJob):
    """A job on two nodes that share no file system: ranks 0 and 1 save
    into one clone, rank 2 into a clone of its own, and every object
    meets in the Git LFS host's store."""
    SAVES = 3

    def test_each_node_stores_its_files_in_its_clone_and_rank_0_commits_them_all(self):
        self.sh(f"git clone -q {self.url}/team.git node2")
        results = self.run_job(repo_of=lambda r: "node2" if r == 2 else "repo",
                               local_rank=lambda r: 0 if r == 2 else r)
        repo, node2 = os.path.join(self.root, "repo"), os.path.join(self.root, "node2")
        commits = self.check_saves(results, repo)
        self.assertEqual(self.sh("git ls-remote origin refs/heads/main", cwd=repo).split()[0], commits[-1])
        # The other node's clone is at the last commit too, its own files
        # as saved, the other checkpoints as pointers (rank 0's
        # trainer_state.json as it is), with nothing to commit.
        self.assertEqual(self.sh("git rev-parse HEAD", cwd=node2).strip(), commits[-1])
        self.assertEqual(self.sh("git status --porcelain", cwd=node2), "")
        last = os.path.join("out", f"checkpoint-{self.SAVES * 20}")
        hashes = results[2]["hashes"]
        for name in os.listdir(os.path.join(node2, last)):
            if name == "trainer_state.json":
                continue
            key = f"{self.SAVES}:{os.path.relpath(os.path.join(last, name), 'out')}"
            with open(os.path.join(node2, last, name), "rb") as f:
                head = f.read(20)
            self.assertEqual(key in hashes, head != b"git-zipnn pointer 2 ", name)
        # Rank 2's clone placed each save after the one before it (a
        # clone left where it was would see no earlier version).
        shard = os.path.join(last, f"model-00003-of-00003.safetensors")
        kinds = {v["subject"]: v["kind"] for v in json.loads(self.sh(f"git zipnn log --series --json -- {shard}",
                                                                     cwd=node2))}
        self.assertEqual(kinds["checkpoint at step 40"], "delta", kinds)
        # Rank 0's clone holds rank 2's files as pointers until a pull.
        self.assertIn("git zipnn pull writes them", self.sh("git zipnn status", cwd=repo))
        self.sh("git zipnn pull >/dev/null 2>&1", cwd=repo)
        self.assertEqual(sha256(os.path.join(repo, shard)), hashes[f"{self.SAVES}:{os.path.relpath(shard, 'out')}"])
        self.sh(f"git clone -q {self.url}/team.git clone")
        self.check_clone(results, commits, os.path.join(self.root, "clone"))


class PointerListTest(Job):
    """`git zipnn commit --store-only` on one node's clone and
    `--pointers` where the commit is made: a list is trusted for nothing."""

    def test_a_pointer_list_names_only_files_of_the_save_that_the_remote_holds(self):
        repo = os.path.join(self.root, "repo")
        self.sh("git clone -q -c remote.origin.zipnnurl=../objects origin.git node")
        node = os.path.join(self.root, "node")
        data = os.path.join(os.getcwd(), "tests", "data", "cnn-bf16")
        first, second = sorted(os.listdir(data))[:2]
        for clone, name in ((repo, first), (node, second)):
            os.makedirs(os.path.join(clone, "out", "s1"))
            shutil.copyfile(os.path.join(data, name), os.path.join(clone, "out", "s1", name))
        refused = subprocess.run(["git", "zipnn", "commit", "--store-only", "out/s1"], cwd=node, env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("--store-only sends this rank's objects to the remote's store", refused.stderr.decode())
        listed = self.sh("git zipnn commit --store-only --push out/s1", cwd=node)
        pointer, path = listed.rstrip("\n").split("\t")
        self.assertEqual(path, f"out/s1/{second}")
        self.assertTrue(pointer.startswith("git-zipnn pointer 2 "))
        forged = pointer[:-len(" safetensors") - 32] + "0" * 32 + " safetensors"

        def commit(text):
            return subprocess.run(["git", "zipnn", "commit", "--push", "--pointers=-", "out/s1"], cwd=repo,
                                  env=self.env, input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        for text, said in ((f"{pointer}\tout/s2/{second}\n", "which is no file of the save committed here"),
                           (f"{pointer}\t.git/config\n", "which is no file of the save committed here"),
                           (f"{pointer}\tout/s1/../../.git/x.safetensors\n", "which is no file of the save"),
                           (f"{pointer}\tout/s1/{first}\n", "is a file of this work tree, and another node"),
                           (f"{pointer}\tout/s1/a.txt\n", "git-zipnn does not track it here"),
                           (f"not a pointer\tout/s1/{second}\n", "which is no pointer"),
                           (f"{pointer}\n", "is no line of a pointer list"),
                           (f"{forged}\tout/s1/{second}\n", "does not hold its object")):
            done = commit(text)
            self.assertEqual(done.returncode, 1, text)
            self.assertIn(said, done.stderr.decode(), text)
            self.assertEqual(self.sh("git rev-list --count HEAD", cwd=repo), "1\n")
            self.assertFalse(os.path.exists(os.path.join(repo, "out", "s1", second)), text)
        # The list as printed: both files go in one commit, and a fresh
        # clone gives both back.
        done = commit(listed)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        head = done.stdout.decode().strip()
        self.assertEqual(self.sh("git ls-tree --name-only HEAD out/s1/", cwd=repo).split(),
                         [f"out/s1/{first}", f"out/s1/{second}"])
        # The node's next store moves its clone to that commit first; its
        # file of s1 stays, the other is written as its pointer.
        third = sorted(os.listdir(data))[2]
        os.makedirs(os.path.join(node, "out", "s2"))
        shutil.copyfile(os.path.join(data, third), os.path.join(node, "out", "s2", third))
        self.sh("git zipnn commit --store-only --push out/s2", cwd=node)
        self.assertEqual(self.sh("git rev-parse HEAD", cwd=node).strip(), head)
        self.assertEqual(self.sh("git status --porcelain", cwd=node), "?? out/s2/\n")
        self.assertEqual(self.sh(f"head -c 20 out/s1/{first}", cwd=node), "git-zipnn pointer 2 ")
        self.sh("git clone -q -c remote.origin.zipnnurl=../objects origin.git clone")
        for clone, name in ((repo, first), (node, second)):
            self.sh(f"cmp out/s1/{name} {clone}/out/s1/{name}", cwd=os.path.join(self.root, "clone"))


class NodeClonesTest(Job):
    """The steps of a save over clones that share no file system, from the
    command line, where a researcher's layouts make them hard."""

    def setUp(self):
        super().setUp()
        self.repo, self.node = os.path.join(self.root, "repo"), os.path.join(self.root, "node")
        self.sh("git clone -q -c remote.origin.zipnnurl=../objects origin.git node")
        data = os.path.join(os.getcwd(), "tests", "data", "cnn-bf16")
        self.data = [os.path.join(data, name) for name in sorted(os.listdir(data))]

    def put(self, clone, path, i):
        os.makedirs(os.path.dirname(os.path.join(clone, path)), exist_ok=True)
        shutil.copyfile(self.data[i], os.path.join(clone, path))

    def commit(self, text, *args):
        return subprocess.run(["git", "zipnn", "commit", "--push", "--pointers=-", *args], cwd=self.repo,
                              env=self.env, input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def test_a_list_is_checked_whole_before_any_file_is_written(self):
        self.put(self.node, "out/s1/m.safetensors", 0)
        pointer = self.sh("git zipnn commit --store-only --push out/s1", cwd=self.node).split("\t")[0]
        outside = os.path.join(self.root, "outside")
        os.makedirs(outside)
        os.makedirs(os.path.join(self.repo, "out", "s1"))
        os.symlink(outside, os.path.join(self.repo, "out", "s1", "link"))
        with open(os.path.join(self.repo, "out", "s1", "afile"), "w") as f:
            f.write("a file, not a folder\n")
        with open(os.path.join(self.repo, ".git", "info", "exclude"), "a") as f:
            f.write("out/s1/ign/\n")
        for lines, said in (([f"out/s1/link/x.safetensors"], "out/s1/link is a symbolic link here"),
                            ([f"out/s1/ign/x.safetensors"], "git ignores it here"),
                            ([f"out/s1/a/m.safetensors", f"out/s1/afile/m.safetensors"], "out/s1/afile is a file here")):
            done = self.commit("".join(f"{pointer}\t{line}\n" for line in lines), "out/s1")
            self.assertEqual(done.returncode, 1, lines)
            self.assertIn(said, done.stderr.decode(), lines)
            self.assertEqual(os.listdir(outside), [])
            self.assertFalse(os.path.exists(os.path.join(self.repo, "out", "s1", "a")))
            self.assertFalse(os.path.exists(os.path.join(self.repo, "out", "s1", "ign")))
        # A list that went through Windows, a blank line at its end, and a
        # save that this clone holds nothing of.
        done = self.commit(f"{pointer}\tout/s2/m.safetensors\r\n\r\n", "out/s2")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertEqual(self.sh("git ls-tree -r --name-only HEAD out", cwd=self.repo), "out/s2/m.safetensors\n")

    def test_a_clone_with_no_commit_yet_follows_only_with_nothing_staged(self):
        fresh = os.path.join(self.root, "fresh")
        self.sh("git init -q fresh && cd fresh && git remote add origin ../origin.git && "
                "git config remote.origin.zipnnurl ../objects && echo mine > mine.txt && git add mine.txt")
        done = subprocess.run(["git", "zipnn", "commit", "--follow", "out"], cwd=fresh, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 1)
        self.assertIn("this clone has mine.txt staged and no commit yet", done.stderr.decode())
        self.assertEqual(self.sh("git status --porcelain", cwd=fresh), "A  mine.txt\n")
        self.sh("git rm -q --cached mine.txt", cwd=fresh)
        head = self.sh("git zipnn commit --follow out", cwd=fresh)
        self.assertEqual(head, self.sh("git rev-parse HEAD", cwd=self.repo))
        self.assertEqual(self.sh("git status --porcelain", cwd=fresh), "?? mine.txt\n")

    def test_follow_leaves_alone_what_git_is_told_not_to_look_at_and_takes_type_changes(self):
        self.sh("mkdir d && echo w > d/w.txt && echo x > d/x.txt && echo a > a && mkdir g && echo h > g/h.txt && "
                "git add -A && git commit -qm files && git push -q", cwd=self.repo)
        self.sh("git zipnn commit --follow out", cwd=self.node)
        # Edits git is told not to see, and a sparse checkout without d/.
        self.sh("git update-index --assume-unchanged d/w.txt && echo mine > d/w.txt && "
                "git sparse-checkout set --no-cone '/*' '!/g/'", cwd=self.node)
        self.sh("echo w2 > d/w.txt && rm a g/h.txt && mkdir a && echo b > a/b && echo g > g2 && "
                "mkdir -p g && echo new > g/new.txt && git add -A && git commit -qm types && git push -q",
                cwd=self.repo)
        # Options after the path are options, not more lists.
        self.put(self.node, "out/m.safetensors", 0)
        listed = self.sh("git zipnn commit --store-only --push out", cwd=self.node)
        with open(os.path.join(self.root, "list"), "w") as f:
            f.write(listed)
        self.sh("git zipnn commit --push --pointers ../list out -m 'a save from the node'", cwd=self.repo)
        self.assertEqual(self.sh("git log -1 --format=%s", cwd=self.repo), "a save from the node\n")
        self.sh("git zipnn commit --follow out", cwd=self.node)
        self.assertEqual(self.sh("cat d/w.txt a/b", cwd=self.node), "mine\nb\n")
        self.assertFalse(os.path.exists(os.path.join(self.node, "g")))
        self.assertEqual(self.sh("git status --porcelain", cwd=self.node), "")

    def test_one_folder_saved_again_on_both_nodes_and_a_push_that_failed(self):
        # Save 1: each node writes its file of one folder.
        self.put(self.repo, "out/a.safetensors", 0)
        self.put(self.node, "out/b.safetensors", 1)
        listed = self.sh("git zipnn commit --store-only --push out", cwd=self.node)
        done = self.commit(listed, "out")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.sh("git zipnn commit --follow out", cwd=self.node)
        # Save 2 over the same paths: the node's clone holds rank 0's file
        # as a pointer now, which is not the node's to store.
        self.put(self.repo, "out/a.safetensors", 2)
        self.put(self.node, "out/b.safetensors", 3)
        listed = self.sh("git zipnn commit --store-only --push out", cwd=self.node)
        self.assertEqual([line.split("\t")[1] for line in listed.splitlines()], ["out/b.safetensors"])
        done = self.commit(listed, "out")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        # Files the commits added, changed or removed are so in the node's
        # clone where it holds them as they were (a file only touched
        # counts as it was); files it changed itself are kept.
        for line, expected in (("echo notes > README.md && echo v1 > NOTICE", "notes\n"),
                               ("echo notes2 > README.md && echo v2 > NOTICE", "notes2\n"),
                               ("git rm -q README.md NOTICE", None)):
            self.sh(f"{line} && git add -A && git commit -qm notes && git push -q", cwd=self.repo)
            self.sh("[ ! -f README.md ] || touch README.md; echo mine > local.txt; "
                    "[ ! -f NOTICE ] || echo changed here > NOTICE", cwd=self.node)
            self.sh("git zipnn commit --follow out", cwd=self.node)
            self.assertEqual(os.path.exists(os.path.join(self.node, "README.md")), expected is not None)
            if expected:
                self.assertEqual(self.sh("cat README.md", cwd=self.node), expected)
            self.assertEqual(self.sh("cat NOTICE", cwd=self.node), "changed here\n" if expected != "notes\n" else
                             "v1\n")
        self.assertEqual(self.sh("git status --porcelain", cwd=self.node), "?? NOTICE\n?? local.txt\n")
        self.sh(f"cmp out/b.safetensors {self.data[3]}", cwd=self.node)
        # Save 3, whose push the remote refuses: the next try pushes it.
        hook = os.path.join(self.root, "origin.git", "hooks", "pre-receive")
        with open(hook, "w") as f:
            f.write("#!/bin/sh\necho refused >&2\nexit 1\n")
        os.chmod(hook, 0o755)
        self.put(self.node, "out/b.safetensors", 4)
        listed = self.sh("git zipnn commit --store-only --push out", cwd=self.node)
        self.assertEqual(self.commit(listed, "out").returncode, 1)
        os.remove(hook)
        done = self.commit(listed, "out")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertIn("nothing changed; no commit made; HEAD is on origin", done.stderr.decode())
        self.assertEqual(self.sh("git rev-parse HEAD", cwd=self.repo),
                         self.sh("git rev-parse main", cwd=os.path.join(self.root, "origin.git")))
        self.sh("git clone -q -c remote.origin.zipnnurl=../objects origin.git clone")
        self.sh(f"cmp out/a.safetensors {self.data[2]} && cmp out/b.safetensors {self.data[4]}",
                cwd=os.path.join(self.root, "clone"))


if __name__ == "__main__":
    unittest.main()
