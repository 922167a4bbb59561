# The environment of every CI job (.ci/run, .ci/stress.sh), sourced.

# Tests whose prerequisite is missing fail here instead of skipping (aoi_test::prerequisite,
# sdks/python/tests/conftest.py).
export CI=true
# Every crate of a CI run is built once: incremental state would only be written, never read.
export CARGO_INCREMENTAL=0
# The tests start Python tools (`#!/usr/bin/env python3`) thousands of times. Where `python3`
# is a version manager's shim (pyenv's is a bash script), each start costs 160 ms instead of
# 65: the interpreter the shim would choose goes first in PATH, so the tests run the same
# Python without the shim (the lint tests take 93 s instead of 155, measured).
if command -v python3 >/dev/null 2>&1; then
  PATH="$(dirname "$(python3 -c 'import sys; print(sys.executable)')"):$PATH"
  export PATH
fi
