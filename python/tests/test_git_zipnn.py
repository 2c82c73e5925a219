"""Tests of the git_zipnn module against real git repositories, with the
git-zipnn of this build ($GIT_ZIPNN), Debian's numpy, torch and pandas,
and checkpoints of real training runs (tests/data) or saved by a small
training loop here."""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy
import torch

import git_zipnn

DATA = os.path.join(os.getcwd(), "tests", "data")


def safetensors_of(path):
    """name -> (dtype, shape, raw bytes) of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


class Repository(unittest.TestCase):
    """Each test gets a fresh repository with git-zipnn installed in it."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="git-zipnn-py-")
        self.addCleanup(shutil.rmtree, self.root)
        binary = os.environ["GIT_ZIPNN"]
        self.env = dict(os.environ, HOME=os.path.join(self.root, "home"), GIT_CONFIG_NOSYSTEM="1",
                        PATH=os.path.dirname(binary) + os.pathsep + os.environ["PATH"])
        os.mkdir(self.env["HOME"])
        self.saved_env = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        self.addCleanup(self.restore_env)
        self.repo = os.path.join(self.root, "repo")
        self.sh("git init -q repo && cd repo && git config user.email t@example.com && git config user.name T && "
                "git zipnn install --local >/dev/null", cwd=self.root)

    def restore_env(self):
        os.environ.clear()
        os.environ.update(self.saved_env)

    def sh(self, line, cwd=None):
        done = subprocess.run(["bash", "-c", line], cwd=cwd or self.repo, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()

    def path(self, *parts):
        return os.path.join(self.repo, *parts)


class ImportTest(unittest.TestCase):
    def test_import_needs_neither_numpy_nor_torch(self):
        out = subprocess.run([sys.executable, "-c", "import sys, git_zipnn; print(sorted(m for m in "
                              "('numpy', 'torch', 'pandas') if m in sys.modules))"],
                             stdout=subprocess.PIPE, check=True, env=os.environ)
        self.assertEqual(out.stdout.decode().strip(), "[]")


class TrainerFoldersTest(Repository):
    """Hugging Face Trainer-style folders committed with commit_checkpoint."""

    def setUp(self):
        super().setUp()
        self.sh("git zipnn track 'out/**/*.safetensors' >/dev/null && git add .gitattributes && git commit -qm setup")
        self.steps = ["000040", "000080", "000120", "000160", "000200"]
        self.commits = []
        for i, step in enumerate(self.steps):
            folder = self.path("out", f"checkpoint-{(i + 1) * 40}")
            os.makedirs(folder)
            shutil.copy(os.path.join(DATA, "cnn-bf16", f"step-{step}.safetensors"),
                        os.path.join(folder, "model.safetensors"))
            self.commits.append(git_zipnn.commit_checkpoint(folder, step=(i + 1) * 40))

    def test_commit_checkpoint_commits_each_save_and_only_it(self):
        self.assertTrue(all(len(c) == 40 for c in self.commits))
        self.assertEqual(self.sh("git log --format=%s -1"), "checkpoint at step 200\n")
        self.assertEqual(self.sh("git status --porcelain"), "")
        # Nothing new: no commit.
        self.assertIsNone(git_zipnn.commit_checkpoint(self.path("out", "checkpoint-200"), step=200))
        # Another staged file is left out of the checkpoint's commit.
        self.sh("echo notes > notes.txt && git add notes.txt")
        os.makedirs(self.path("out", "checkpoint-240"))
        shutil.copy(os.path.join(DATA, "cnn-bf16", "step-000040.safetensors"),
                    self.path("out", "checkpoint-240", "model.safetensors"))
        git_zipnn.commit_checkpoint(self.path("out", "checkpoint-240"), message="two hundred forty")
        self.assertEqual(self.sh("git show --name-only --format=%s HEAD"),
                         "two hundred forty\n\nout/checkpoint-240/model.safetensors\n")
        self.assertEqual(self.sh("git status --porcelain"), "A  notes.txt\n")

    def test_commit_checkpoint_takes_the_parent_a_fine_tune_started_from(self):
        # Step 80 with one weight moved: a fine-tune of step 40's model, in
        # the test's terms (step 80 itself is stored already).
        os.makedirs(self.path("ft", "checkpoint-10"))
        with open(os.path.join(DATA, "cnn-bf16", "step-000080.safetensors"), "rb") as f:
            tuned = bytearray(f.read())
        tuned[-1] ^= 1
        with open(self.path("ft", "checkpoint-10", "model.safetensors"), "wb") as f:
            f.write(tuned)
        self.sh("git zipnn track 'ft/**/*.safetensors' >/dev/null && git add .gitattributes && git commit -qm ft")
        with self.assertRaises(git_zipnn.GitZipnnError) as raised:
            git_zipnn.commit_checkpoint(self.path("ft", "checkpoint-10"), parent=self.root)
        self.assertIn("is not in the repository of", str(raised.exception))
        git_zipnn.commit_checkpoint(self.path("ft", "checkpoint-10"), step=10,
                                    parent=self.path("out", "checkpoint-40"))
        log = json.loads(self.sh("git zipnn log --json ft/checkpoint-10/model.safetensors"))
        self.assertEqual(log[0]["kind"], "delta")
        self.assertEqual(log[0]["parent"], "a delta of out/checkpoint-40/model.safetensors (named as its parent)")

    def test_commit_checkpoint_commits_a_folder_the_trainer_removed(self):
        # save_total_limit: checkpoint-240 written, checkpoint-40 deleted.
        os.makedirs(self.path("out", "checkpoint-240"))
        shutil.copy(os.path.join(DATA, "cnn-bf16", "step-000040.safetensors"),
                    self.path("out", "checkpoint-240", "model.safetensors"))
        shutil.rmtree(self.path("out", "checkpoint-40"))
        self.sh("echo notes > notes.txt")
        git_zipnn.commit_checkpoint(self.path("out", "checkpoint-240"), step=240)
        self.assertEqual(self.sh("git show --no-renames --name-status --format= HEAD"),
                         "A\tout/checkpoint-240/model.safetensors\nD\tout/checkpoint-40/model.safetensors\n")
        self.assertEqual(self.sh("git status --porcelain"), "?? notes.txt\n")
        # A path that holds nothing is named.
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            git_zipnn.commit_checkpoint(self.path("out", "checkpoint-999"))
        self.assertIn("nothing at", str(caught.exception))

    def test_messages_name_paths_from_the_top_of_the_work_tree(self):
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            git_zipnn.load_tensor(self.path("out", "checkpoint-80", "model.safetensors"), "fc1.weigth")
        self.assertIn("`git zipnn cat --list HEAD:out/checkpoint-80/model.safetensors`", str(caught.exception))
        tables = git_zipnn.analyze(self.path("out", "checkpoint-40", "model.safetensors"),
                                   self.path("out", "checkpoint-80", "model.safetensors"))
        self.assertEqual(list(tables["checkpoints"]["source"]),
                         ["out/checkpoint-40/model.safetensors", "out/checkpoint-80/model.safetensors"])
        self.assertEqual(str(tables["policies"]["base_interval"].dtype), "Int64")

    def test_commit_checkpoint_refuses_what_git_zipnn_does_not_track(self):
        os.makedirs(self.path("runs"))
        torch.save({"w": torch.zeros(3)}, self.path("runs", "model.pt"))
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            git_zipnn.commit_checkpoint(self.path("runs"))
        self.assertIn("is not tracked by git-zipnn", str(caught.exception))
        self.assertIn("git zipnn track", str(caught.exception))
        self.assertEqual(self.sh("git status --porcelain"), "?? runs/\n")

    def test_versions_lists_each_save_with_how_it_is_stored(self):
        found = git_zipnn.versions(self.path("out", "checkpoint-120", "model.safetensors"))
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["kind"], "delta")
        self.assertEqual(found[0]["depth"], 2)
        self.assertEqual(found[0]["raw_bytes"], os.path.getsize(self.path("out", "checkpoint-120", "model.safetensors")))
        first = git_zipnn.versions(self.path("out", "checkpoint-40", "model.safetensors"))
        self.assertEqual(first[0]["kind"], "base")
        self.assertEqual(first[0]["commit"], self.commits[0])
        # The whole series, a folder the trainer deleted included.
        self.sh("git rm -rq out/checkpoint-80 && git commit -qm 'save_total_limit'")
        run = git_zipnn.versions(self.path("out", "checkpoint-200", "model.safetensors"), series=True)
        # Newest first, as for one path.
        self.assertEqual([v["path"] for v in run], [f"out/checkpoint-{s}/model.safetensors" for s in (200, 160, 120, 80, 40)])
        self.assertEqual([v["commit"] for v in run], self.commits[::-1])

    def test_load_tensor_reads_any_version_exactly(self):
        want = safetensors_of(os.path.join(DATA, "cnn-bf16", "step-000120.safetensors"))
        got = git_zipnn.load_tensor(self.path("out", "checkpoint-120", "model.safetensors"), "fc1.weight")
        dtype, shape, raw = want["fc1.weight"]
        self.assertEqual(dtype, "BF16")
        self.assertEqual(got.dtype, numpy.float32)  # numpy has no bf16: widened exactly
        self.assertEqual(list(got.shape), shape)
        self.assertEqual((got.view(numpy.uint32) >> 16).astype("<u2").tobytes(), raw)
        as_torch = git_zipnn.load_tensor(self.path("out", "checkpoint-120", "model.safetensors"), "fc1.weight",
                                         framework="torch")
        self.assertEqual(as_torch.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(as_torch.float(), torch.from_numpy(got)))
        # An integer counter keeps its type.
        counter = git_zipnn.load_tensor(self.path("out", "checkpoint-120", "model.safetensors"),
                                        "b1.num_batches_tracked")
        self.assertEqual(counter.dtype, numpy.int64)
        self.assertEqual(counter.tobytes(), want["b1.num_batches_tracked"][2])

    def test_load_state_dict_of_an_old_revision(self):
        # The folder as it was two commits ago holds step 120's bytes.
        path = self.path("out", "checkpoint-200", "model.safetensors")
        old = git_zipnn.load_state_dict(self.path("out", "checkpoint-120", "model.safetensors"), rev="HEAD~2")
        want = safetensors_of(os.path.join(DATA, "cnn-bf16", "step-000120.safetensors"))
        self.assertEqual(list(old), list(want))
        some = git_zipnn.load_state_dict(path, tensors=["c1.*"], framework="torch")
        self.assertEqual(sorted(some), ["c1.bias", "c1.weight"])
        last = safetensors_of(os.path.join(DATA, "cnn-bf16", "step-000200.safetensors"))
        self.assertEqual(some["c1.weight"].view(torch.int16).numpy().tobytes(), last["c1.weight"][2])

    def test_list_tensors_and_errors_name_the_problem(self):
        path = self.path("out", "checkpoint-80", "model.safetensors")
        listed = git_zipnn.list_tensors(path)
        self.assertEqual(len(listed), 25)
        self.assertEqual(listed[0]["name"], "c1.weight")
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            git_zipnn.load_tensor(path, "fc1.weigth")
        self.assertIn("no tensor 'fc1.weigth'", str(caught.exception))
        self.assertIn("did you mean 'fc1.weight'?", str(caught.exception))
        with self.assertRaises(ValueError):
            git_zipnn.load_tensor(path, "fc1.weight", framework="jax")

    def test_analyze_returns_its_tables_as_data_frames(self):
        tables = git_zipnn.analyze(*[self.path("out", f"checkpoint-{s}", "model.safetensors")
                                     for s in (40, 80, 120, 160, 200)])
        self.assertEqual(sorted(tables), ["checkpoints", "exponents", "policies", "tensors"])
        checkpoints = tables["checkpoints"]
        self.assertEqual(len(checkpoints), 5)
        self.assertEqual(int(checkpoints["raw_bytes"].iloc[0]),
                         os.path.getsize(self.path("out", "checkpoint-40", "model.safetensors")))
        self.assertTrue((tables["tensors"]["tensor"] == "fc1.weight").any())


class TrainingLoopTest(Repository):
    """A plain PyTorch loop that saves model and optimizer with torch.save
    to one path, committing after each save, then reads old versions back."""

    def test_a_training_loop_commits_and_reads_back_each_save(self):
        self.sh("git zipnn track '*.pt' >/dev/null && git add .gitattributes && git commit -qm setup")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        saved = []
        for step in range(1, 4):
            for _ in range(5):
                x = torch.randn(8, 16)
                loss = model(x).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, self.path("ckpt.pt"))
            saved.append({k: v.clone() for k, v in model.state_dict().items()})
            git_zipnn.commit_checkpoint(self.path("ckpt.pt"), step=step)
        history = git_zipnn.versions(self.path("ckpt.pt"))
        # Newest first: the newest whole, the one before a delta of the first.
        self.assertEqual([v["kind"] for v in history], ["base", "delta", "base"])
        self.assertEqual([v["subject"] for v in history], [f"checkpoint at step {s}" for s in (3, 2, 1)])
        for back, want in zip((2, 1, 0), saved):
            got = git_zipnn.load_state_dict(self.path("ckpt.pt"), rev=f"HEAD~{back}", framework="torch",
                                            tensors=["model/*"])
            self.assertEqual(sorted(got), sorted("model/" + k for k in want))
            for name, tensor in want.items():
                self.assertEqual(got["model/" + name].shape, tensor.shape)
                self.assertTrue(torch.equal(got["model/" + name], tensor), name)
        # Adam's moments come back too, shaped like their parameters.
        moment = git_zipnn.load_tensor(self.path("ckpt.pt"), "optimizer/state/0/exp_avg", rev="HEAD~1")
        self.assertEqual(moment.shape, (32, 16))


class RetentionTest(Repository):
    """Versions thinned by `git zipnn retain`, read back with
    approximate=True and checked value by value in numpy against the
    saves of real training runs (tests/data): every value within the
    stated bound, every other byte exact."""

    STEPS = ["000040", "000080", "000120", "000160", "000200"]

    def setUp(self):
        super().setUp()
        with open(self.path(".zipnn.yaml"), "w") as f:
            f.write("retention:\n"
                    "  - checkpoints: fp32.safetensors\n    keep_newest: 1\n    rest: thin\n"
                    "    precision: absolute 12\n"
                    "  - checkpoints: bf16.safetensors\n    keep_newest: 1\n    rest: thin\n"
                    "    precision: relative 3\n")
        self.sh("git zipnn track '*.safetensors' >/dev/null && git add .gitattributes .zipnn.yaml && "
                "git commit -qm setup")
        for step in self.STEPS:
            for dtype in ("fp32", "bf16"):
                shutil.copy(os.path.join(DATA, f"cnn-{dtype}", f"step-{step}.safetensors"),
                            self.path(f"{dtype}.safetensors"))
            self.sh(f"git add fp32.safetensors bf16.safetensors && git commit -qm {step}")
        self.sh("git zipnn retain")

    def check(self, dtype, bound_of):
        for back, step in enumerate(reversed(self.STEPS)):
            want = safetensors_of(os.path.join(DATA, f"cnn-{dtype}", f"step-{step}.safetensors"))
            got = git_zipnn.load_state_dict(self.path(f"{dtype}.safetensors"), rev=f"HEAD~{back}", approximate=True)
            self.assertEqual(list(got), list(want))
            changed = 0
            for name, (kind, shape, raw) in want.items():
                if kind == "I64":  # counters stay exact
                    self.assertEqual(got[name].tobytes(), raw, name)
                    continue
                exact = (numpy.frombuffer(raw, "<f4") if kind == "F32" else
                         (numpy.frombuffer(raw, "<u2").astype(numpy.uint32) << 16).view(numpy.float32))
                x = exact.astype(numpy.float64)
                y = got[name].astype(numpy.float64).ravel()
                self.assertTrue(numpy.all(numpy.abs(y - x) <= bound_of(x)), f"{name} of step {step}")
                changed += int(numpy.count_nonzero(y != x))
            if back == 0:
                self.assertEqual(changed, 0)  # the newest is kept exactly
            else:
                self.assertGreater(changed, 0)

    def test_thinned_fp32_values_are_within_the_absolute_bound(self):
        self.check("fp32", lambda x: numpy.full_like(x, 2.0 ** -13))

    def test_thinned_bf16_values_are_within_the_relative_bound(self):
        self.check("bf16", lambda x: numpy.abs(x) * 2.0 ** -4)

    def test_a_thinned_version_is_read_only_when_asked(self):
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            git_zipnn.load_tensor(self.path("bf16.safetensors"), "fc1.weight", rev="HEAD~2")
        self.assertIn("thinned by retention on", str(caught.exception))
        self.assertIn("--approximate", str(caught.exception))
        listed = git_zipnn.list_tensors(self.path("bf16.safetensors"), rev="HEAD~2", approximate=True)
        self.assertEqual(len(listed), 25)
        history = git_zipnn.versions(self.path("bf16.safetensors"))
        self.assertEqual([v["kind"] for v in history], ["base", "thin", "thin", "thin", "thin"])
        self.assertIn("relative 3 mantissa bits", history[1]["retention"])


if __name__ == "__main__":
    unittest.main()
