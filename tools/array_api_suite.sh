#!/usr/bin/env bash
# Runs the data-apis Array API test suite against a namespace and prints the
# pass/fail counts (issue #15 item 4; the README's "Array API" row).
#
#   tools/array_api_suite.sh [module] [python]     # default: ember.numpy, .venv/bin/python
#
# The suite is not vendored: it is read from a checkout (ARRAY_API_TESTS_DIR,
# with its array-api spec submodule filled in) or extracted from the git
# snapshots that the tool library's `fetch` leaves under /work/.mirror. The
# python needs pytest and hypothesis (the project's venv has both); the suite's
# other dependencies (ndindex, pytest-json-report) go into a private target
# directory, never into a venv. Settings are the ones the issue
# names: --max-examples=20, x64 off. The whole log goes to $work/log.txt.
# Failures are reported one line each (--tb=line): Hypothesis shrinks and
# explains every failing example, and pytest's long tracebacks parse the
# source files of every frame for each one, which made most of the suite's
# time (4x; measured in the 38th session), not Ember's own work.
set -euo pipefail
module=${1:-ember.numpy}
py=${2:-.venv/bin/python}
work=${ARRAY_API_WORK:-/tmp/array-api-suite}
suite=${ARRAY_API_TESTS_DIR:-}
mirror=${ARRAY_API_MIRROR:-/work/.mirror}

if [ -z "$suite" ]; then
  tests_git=$mirror/data-apis+array-api-tests/repo
  spec_git=$mirror/data-apis+array-api/repo
  if [ ! -d "$tests_git" ] || [ ! -d "$spec_git" ]; then
    echo "no suite: set ARRAY_API_TESTS_DIR or fetch data-apis/array-api-tests and data-apis/array-api" >&2
    exit 2
  fi
  suite=$work/suite
  if [ ! -d "$suite/array_api_tests" ]; then
    rm -rf "$suite" && mkdir -p "$suite/array-api"
    git --git-dir="$tests_git" archive HEAD | tar x -C "$suite"
    spec_commit=$(git --git-dir="$tests_git" ls-tree HEAD array-api | awk '{print $3}')
    git --git-dir="$spec_git" archive "$spec_commit" | tar x -C "$suite/array-api"
  fi
fi
deps=$work/deps
if [ ! -d "$deps/ndindex" ]; then
  "$py" -m pip install -q --no-deps --target "$deps" ndindex pytest-json-report pytest-metadata
fi
py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")
# A fresh Hypothesis example database per run: a shared one replays earlier
# runs' failing examples (another module's too), which lowers later counts.
db=$work/hypothesis-db
rm -rf "$db"
cd "$suite"
HYPOTHESIS_STORAGE_DIRECTORY=$db JAX_ENABLE_X64=0 ARRAY_API_TESTS_MODULE=$module PYTHONPATH=$deps \
  "$py" -m pytest array_api_tests -q -p no:cacheprovider --max-examples=20 \
  --disable-warnings --tb=line "${@:3}" >"$work/log.txt" 2>&1 || true
tail -n 1 "$work/log.txt"
