#!/usr/bin/env bash
# Discovery start-up: `schema`, `capabilities` and `input-schema` of an example tool built on
# the SDK, against a Rust hello-world binary, in one hyperfine run. Target: under 3x hello world.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 1; }
mkdir -p bench/data
rustc -O bench/hello.rs -o bench/data/hello
cargo build --release --locked -p aoi --example feed >/dev/null 2>&1
feed=target/release/examples/feed
hyperfine -N --warmup 20 --runs "${RUNS:-300}" --export-json bench/data/discovery.json \
  bench/data/hello \
  "$feed schema" \
  "$feed capabilities" \
  "$feed input-schema --command list" >/dev/null
python3 - <<'PY'
import json, statistics
results = json.load(open("bench/data/discovery.json"))["results"]
med = {r["command"]: statistics.median(r["times"]) * 1000 for r in results}
hello = med["bench/data/hello"]
print(f"{'command':45} {'median ms':>10} {'x hello':>8}")
for cmd, ms in med.items():
    print(f"{cmd:45} {ms:10.2f} {ms / hello:8.2f}")
worst = max(ms / hello for cmd, ms in med.items() if cmd != "bench/data/hello")
print(f"worst ratio {worst:.2f} (target < 3): {'met' if worst < 3 else 'NOT met'}")
PY
