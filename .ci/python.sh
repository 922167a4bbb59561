#!/usr/bin/env bash
# The Python SDK's checks: ruff, mypy --strict, pytest (end-to-end tests use target/debug/aoi).
# Works on a fresh machine: a new venv under sdks/python/.venv, pinned tools from PyPI.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdk="$root/sdks/python"
venv="$sdk/.venv"

python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade "pip==24.3.1"
"$venv/bin/python" -m pip install --quiet -e "$sdk" "pytest==8.3.4" "mypy==1.13.0" "ruff==0.8.4" "click==8.1.8" "typer==0.15.1"

target="${CARGO_TARGET_DIR:-$root/target}"
if [[ ! -x "$target/debug/aoi" ]]; then
  (cd "$root" && cargo build --locked -p aoi-cli)
fi

cd "$sdk"
"$venv/bin/ruff" check src tests examples
"$venv/bin/mypy" --strict src
# Python 3.9 is the oldest supported (pyproject's requires-python); no older interpreter is
# installed here, so vermin checks every construct and standard-library name against 3.9
# (annotations counted as evaluated: @event dataclasses' hints are read at run time).
"$venv/bin/python" -m pip install --quiet "vermin==1.6.0"
"$venv/bin/vermin" --target=3.9- --violations --eval-annotations --no-tips src examples tests
AOI_BIN="$target/debug/aoi" "$venv/bin/pytest" -q
