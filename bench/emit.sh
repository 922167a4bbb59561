#!/usr/bin/env bash
# Emitter against bare serde_json, in one run: the same 200,000 hit lines written through the
# aoi Emitter and through serde_json::to_writer + BufWriter (crates/aoi/examples/bench_emit.rs).
# Reports callgrind instruction counts (load-independent) and the median wall time of
# alternating runs. Target: the emitter at >= 85% of bare serde_json.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p aoi --example bench_emit >/dev/null 2>&1
bin=target/release/examples/bench_emit
runs=${RUNS:-9}
for i in $(seq "$runs"); do
  $bin aoi 2>&1
  $bin serde 2>&1
done | python3 -c '
import sys, statistics
t = {}
for line in sys.stdin:
    mode, secs = line.split()
    t.setdefault(mode, []).append(float(secs))
a, s = statistics.median(t["aoi"]), statistics.median(t["serde"])
n = len(t["aoi"])
print(f"wall (median of {n} alternating runs): aoi {a*1000:.1f} ms, serde_json {s*1000:.1f} ms, serde/aoi = {s/a:.2f}")
'
if command -v valgrind >/dev/null; then
  declare -A refs
  for m in none aoi serde; do
    refs[$m]=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $bin $m 2>&1 | awk '/I *refs/ {gsub(",", "", $4); print $4}')
  done
  python3 -c "
none, aoi, serde = ${refs[none]}, ${refs[aoi]}, ${refs[serde]}
a, s = aoi - none, serde - none
print(f'instructions (writing loop only): aoi {a/1e6:.0f} M, serde_json {s/1e6:.0f} M, serde/aoi = {s/a:.2f} (target >= 0.85: {\"met\" if s/a >= 0.85 else \"NOT met\"})')
"
fi
