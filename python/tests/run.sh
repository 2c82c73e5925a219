#!/usr/bin/env bash
# The Python module's tests (python/tests), run by Bazel from the
# runfiles root: Debian's python3 (which has numpy, torch and pandas),
# this build's git-zipnn, and the fixtures of tests/data.
set -euo pipefail
export GIT_ZIPNN="$PWD/cmd/git-zipnn" PYTHONPATH="$PWD/python"
exec /usr/bin/python3 -m unittest discover -s python/tests -v
