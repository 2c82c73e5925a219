"""No string a caller gives the git_zipnn module (a revision, a path that
a cloned repository may well hold) is read as an option by git-zipnn or by
git: each attack leaves its target file as it was and is refused, or is
taken as the path it is."""

import os
import shutil
import subprocess
import tempfile
import unittest

import git_zipnn

DATA = os.path.join(os.getcwd(), "tests", "data")
PRECIOUS = b"someone's work\n"


class OptionInjectionTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="git-zipnn-py-")
        self.addCleanup(shutil.rmtree, self.root)
        binary = os.environ["GIT_ZIPNN"]
        env = dict(os.environ, HOME=os.path.join(self.root, "home"), GIT_CONFIG_NOSYSTEM="1",
                   PATH=os.path.dirname(binary) + os.pathsep + os.environ["PATH"])
        os.mkdir(env["HOME"])
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        self.repo = os.path.join(self.root, "repo")
        self.sh("git init -q repo && cd repo && git config user.email t@example.com && git config user.name T && "
                "git zipnn install --local >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                "git add .gitattributes && git commit -qm setup", cwd=self.root)
        self.model = os.path.join(self.repo, "model.safetensors")
        for step in ("000040", "000080", "000120"):
            shutil.copy(os.path.join(DATA, "cnn-bf16", f"step-{step}.safetensors"), self.model)
            git_zipnn.commit_checkpoint(self.model, step=int(step))

    def sh(self, line, cwd=None):
        done = subprocess.run(["bash", "-c", line], cwd=cwd or self.repo, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()

    def precious(self, path):
        with open(path, "wb") as f:
            f.write(PRECIOUS)
        return path

    def assertUntouched(self, path):
        with open(path, "rb") as f:
            self.assertEqual(f.read(), PRECIOUS)

    def test_analyze_refuses_a_revision_that_git_would_read_as_an_option(self):
        # git log --output=F..HEAD would truncate F..HEAD and write there.
        victim = self.precious(os.path.join(self.repo, "F..HEAD"))
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            try:
                git_zipnn.analyze(self.model, rev="--output=F..HEAD")
            finally:
                self.assertUntouched(victim)
        self.assertIn("'--output=F..HEAD' is not a revision", str(caught.exception))
        # A real range still works.
        self.assertEqual(len(git_zipnn.analyze(self.model, rev="HEAD~1..HEAD")["checkpoints"]), 1)

    def test_a_revision_that_starts_with_a_dash_reads_nothing_and_writes_nothing(self):
        # As the spec "<rev>:<path>" of cat, whose -o/--output writes a file.
        victim = self.precious(os.path.join(self.repo, "v:model.safetensors"))
        for read in (lambda: git_zipnn.list_tensors(self.model, rev="--output=v"),
                     lambda: git_zipnn.load_tensor(self.model, "fc1.weight", rev="--output=v"),
                     lambda: git_zipnn.load_state_dict(self.model, rev="--output=v")):
            with self.assertRaises(git_zipnn.GitZipnnError) as caught:
                read()
            self.assertIn("'--output=v' is not a revision", str(caught.exception))
            self.assertUntouched(victim)

    def test_a_checkpoint_path_that_looks_like_an_option_is_a_path(self):
        # A folder of a cloned repository named "--html=" with the rest of
        # an absolute path under it: as an option, analyze would write its
        # HTML report over that file.
        victim = self.precious(os.path.join(self.root, "notes.txt"))
        odd = os.path.join(self.repo, "--html=" + os.path.dirname(victim), "notes.txt")
        os.makedirs(os.path.dirname(odd))
        shutil.copy(os.path.join(DATA, "cnn-bf16", "step-000200.safetensors"), odd)
        with self.assertRaises(git_zipnn.GitZipnnError) as caught:
            try:
                git_zipnn.analyze(self.model, odd)
            finally:
                self.assertUntouched(victim)
        # Read as the file it is: a checkpoint of another series.
        self.assertIn("not versions of one checkpoint", str(caught.exception))
        self.assertIn("--html=", str(caught.exception))
        # Alone, it is analysed.
        self.assertEqual(len(git_zipnn.analyze(odd)["checkpoints"]), 1)
        self.assertUntouched(victim)


if __name__ == "__main__":
    unittest.main()
