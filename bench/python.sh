#!/usr/bin/env bash
# The Python SDK's two speed targets, each next to its limit in one run:
#  1. the Emitter against bare json.dumps + a buffered write of the same events (target >= 0.8x);
#  2. `bookmarks.py schema` (import plus discovery) against `python3 -c pass` (target <= 60 ms).
# The interpreter is called by its real path (a pyenv shim is a shell script that costs more
# than the run it starts); PYTHON picks another. RUNS sets hyperfine's run count (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 1; }
py="${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
mkdir -p bench/data

echo "== emitter vs bare json.dumps ($("$py" --version))"
"$py" bench/python_emit.py "${EVENTS:-200000}" "${EMIT_RUNS:-7}"

echo "== import plus discovery vs an empty interpreter"
# Bytecode first, as `pip install` leaves it: with PYTHONDONTWRITEBYTECODE set (or a read-only
# tree), every start would otherwise compile each changed module from source again.
"$py" -m compileall -q sdks/python/src sdks/python/examples
example=sdks/python/examples/bookmarks.py
hyperfine -N --warmup 5 --runs "${RUNS:-50}" --export-json bench/data/python_startup.json \
  "$py -c pass" \
  "$py $example schema --output json" \
  "$py $example capabilities --output json" \
  "$py $example input-schema --command import --output json" >/dev/null
"$py" - <<'PY'
import json, statistics
results = json.load(open("bench/data/python_startup.json"))["results"]
med = {r["command"].split("/")[-1]: statistics.median(r["times"]) * 1000 for r in results}
base = next(v for k, v in med.items() if k.endswith("-c pass"))
print(f"{'command':60} {'median ms':>10} {'- pass ms':>10}")
for cmd, ms in med.items():
    print(f"{cmd:60} {ms:10.1f} {ms - base:10.1f}")
schema = next(v for k, v in med.items() if " schema " in k)
print(f"schema {schema:.1f} ms (target <= 60): {'met' if schema <= 60 else 'NOT met'}")
PY
