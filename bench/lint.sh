#!/usr/bin/env bash
# `aoi lint --tool outline` with every check, end to end: wall time (target: under 3 s on this
# 2-core machine) and how many processes of outline it spawns, next to one run of each of the
# same number of `outline status` processes spawned one after another (the floor a linter that
# runs that many processes sequentially cannot beat).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 1; }
cargo build --release --locked -p aoi-cli -p outline >/dev/null 2>&1
aoi=$PWD/target/release/aoi
outline=$PWD/target/release/outline
mkdir -p bench/data
cd crates/outline
processes=$("$aoi" lint --tool "$outline" --format jsonl | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("type") == "lint_verdict":
        print(e["processes"])')
export OUTLINE_DB=/tmp/aoi-lint-bench.db
"$outline" create --title seed >/dev/null
hyperfine -N --warmup 1 --runs "${RUNS:-10}" --export-json ../../bench/data/lint.json \
  "$aoi lint --tool $outline" \
  "bash -c 'for i in \$(seq $processes); do $outline status --output jsonl >/dev/null; done'" >/dev/null
rm -f /tmp/aoi-lint-bench.db*
python3 - "$processes" <<'PY'
import json, statistics, sys
processes = int(sys.argv[1])
results = json.load(open("../../bench/data/lint.json"))["results"]
lint, serial = (statistics.median(r["times"]) for r in results)
print(f"aoi lint --tool outline: {lint:.2f} s median, {processes} outline processes")
print(f"{processes} sequential `outline status` runs: {serial:.2f} s median")
print(f"lint / sequential floor: {lint / serial:.2f}")
print(f"target < 3 s: {'met' if lint < 3 else 'NOT met'}")
PY
