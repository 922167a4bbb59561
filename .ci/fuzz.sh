#!/usr/bin/env bash
# Builds every fuzz target of fuzz/ on the stable toolchain (libFuzzer through libfuzzer-sys,
# coverage through the sancov passes: no cargo-fuzz, no nightly; see fuzz/README.md) and runs
# each for FUZZ_SECONDS (default 45) from a fresh copy of its seeds, fuzz/seeds/<target>,
# FUZZ_JOBS targets at a time (default: one per core, `nproc`). The build is the check that
# the targets compile against the SDK on stable; nothing else builds them.
# A crash, timeout or OOM is printed with its input (hex and base64) and fails the job, after
# every target has had its turn. On success each target's last libFuzzer status is printed,
# in the order of fuzz/Cargo.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-45}"
FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}"
TRIPLE=x86_64-unknown-linux-gnu
export CARGO_TARGET_DIR=fuzz/target
# The flags cargo-fuzz passes, minus AddressSanitizer (nightly only; safe Rust needs none).
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"

# Every [[bin]] of fuzz/Cargo.toml is a target.
mapfile -t targets < <(sed -n '/^\[\[bin\]\]/,/^$/s/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz.sh: no [[bin]] targets in fuzz/Cargo.toml" >&2
  exit 1
fi

# `--target` keeps the sancov flags off build scripts and proc macros.
cargo build --manifest-path fuzz/Cargo.toml --locked --release --target "$TRIPLE" --bins

work="$(mktemp -d "${TMPDIR:-/tmp}/aoi-fuzz.XXXXXX")"
keep_work=0
cleanup() { [ "$keep_work" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# One target's run, in the background: its log and artifacts under $work/<target>/, and its
# libFuzzer exit status in $work/<target>/status once it is over.
fuzz_one() {
  local target=$1 corpus="$work/$1/corpus" artifacts="$work/$1/artifacts" status=0
  mkdir -p "$corpus" "$artifacts"
  cp -R "fuzz/seeds/$target/." "$corpus/"
  "$CARGO_TARGET_DIR/$TRIPLE/release/$target" \
    -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts/" "$corpus" >"$work/$target/fuzz.log" 2>&1 || status=$?
  echo "$status" >"$work/$target/status"
}

failed=()
summary=()
runnable=()
for target in "${targets[@]}"; do
  if [ ! -d "fuzz/seeds/$target" ]; then
    echo "fuzz.sh: $target has no seeds in fuzz/seeds/$target" >&2
    failed+=("$target")
    continue
  fi
  runnable+=("$target")
done

# FUZZ_JOBS at a time: start one as soon as one ends.
running=0
for target in "${runnable[@]}"; do
  if [ "$running" -ge "$FUZZ_JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
  mkdir -p "$work/$target"
  echo "--- $target: ${FUZZ_SECONDS}s from $(find "fuzz/seeds/$target" -type f | wc -l) seeds"
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

for target in "${runnable[@]}"; do
  log="$work/$target/fuzz.log"
  artifacts="$work/$target/artifacts"
  status="$(cat "$work/$target/status" 2>/dev/null || echo "?")"
  # The last status line: `#RUNS <event> cov: N ft: N corp: ... exec/s: N rss: ...`.
  last="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
  runs="$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")"
  cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")"
  ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")"
  execs="$(sed -nE 's/.* exec\/s: ([0-9]+).*/\1/p' <<<"$last")"
  line="$(printf '%-14s runs %-10s exec/s %-8s cov %-6s ft %s' \
    "$target" "${runs:-?}" "${execs:-?}" "${cov:-?}" "${ft:-?}")"
  found=()
  while IFS= read -r -d '' file; do found+=("$file"); done \
    < <(find "$artifacts" -type f -print0)
  if [ "$status" = 0 ] && [ "${#found[@]}" -eq 0 ]; then
    summary+=("$line")
    continue
  fi
  keep_work=1
  failed+=("$target")
  echo "FAILED $target (libFuzzer exit $status); its log ends:"
  tail -n 60 "$log"
  for file in "${found[@]}"; do
    size="$(wc -c <"$file")"
    echo "=== $target: artifact $file ($size bytes)"
    echo "--- hex (first 4096 bytes)"
    head -c 4096 "$file" | od -An -tx1 -v
    echo "--- base64 (first 65536 bytes)"
    head -c 65536 "$file" | base64
    echo "--- replay: $CARGO_TARGET_DIR/$TRIPLE/release/$target <file>"
  done
done

echo "=== fuzz summary (${FUZZ_SECONDS}s per target, $FUZZ_JOBS at a time)"
for line in "${summary[@]}"; do echo "$line"; done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]} (artifacts kept under $work)" >&2
  exit 1
fi
