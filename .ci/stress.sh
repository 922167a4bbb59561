#!/usr/bin/env bash
# The whole test suite, run RUNS times in a row (default 5) under load: a release build of
# the workspace into a target dir of its own runs beside it the whole time, started afresh
# whenever it finishes, so the tests share the two cores with a compiler as they do on a
# loaded machine. Any failure fails the script; each run's summary lines and time are printed.
# A test that fails here once is a defect to fix, not to rerun (.ci/README.md).
#
# Usage: bash .ci/stress.sh [RUNS]      (not part of .ci/run: it takes RUNS times the tests)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
# The environment .ci/run gives the tests (CI=true, Python without its shim).
source .ci/env.sh
load_dir=$(mktemp -d "${TMPDIR:-/tmp}/aoi-stress-load.XXXXXX")
log=$(mktemp "${TMPDIR:-/tmp}/aoi-stress-log.XXXXXX")

# The load: a build that never ends while the tests run.
(
  while :; do
    cargo build --locked --release --workspace --quiet --target-dir "$load_dir" >/dev/null 2>&1 || true
    cargo clean --quiet --target-dir "$load_dir" >/dev/null 2>&1 || true
  done
) &
load=$!
trap 'kill $load 2>/dev/null || true; pkill -P $load 2>/dev/null || true; rm -rf "$load_dir" "$log"' EXIT

# The test binaries are built before the first run, without the load's competition counted.
cargo test --workspace --locked --no-run --quiet

failed=0
for i in $(seq "$runs"); do
  start=$SECONDS
  if cargo test --workspace --locked >"$log" 2>&1; then
    status=passed
  else
    status=FAILED
    failed=$((failed + 1))
    grep -E '^(---- |test .* FAILED|failures:|thread .* panicked)' "$log" | head -40 || true
  fi
  passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s += $1} END {print s + 0}')
  printf 'run %d/%d: %s, %d tests passed, %d s (load: a release build beside it)\n' \
    "$i" "$runs" "$status" "$passed" $((SECONDS - start))
done
printf 'stress: %d of %d runs failed\n' "$failed" "$runs"
((failed == 0))
