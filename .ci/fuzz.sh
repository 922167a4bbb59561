#!/usr/bin/env bash
# Builds every fuzz target of fuzz/ on the stable toolchain (libFuzzer through libfuzzer-sys,
# coverage through the sancov passes: no cargo-fuzz, no nightly; see fuzz/README.md) and runs
# each for FUZZ_SECONDS (default 45) from a fresh copy of its seeds, fuzz/seeds/<target>.
# A crash, timeout or OOM is printed with its input (hex and base64) and fails the job, after
# every target has had its turn. On success each target's last libFuzzer status is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-45}"
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

failed=()
summary=()
for target in "${targets[@]}"; do
  seeds="fuzz/seeds/$target"
  if [ ! -d "$seeds" ]; then
    echo "fuzz.sh: $target has no seeds in $seeds" >&2
    failed+=("$target")
    continue
  fi
  corpus="$work/$target/corpus"
  artifacts="$work/$target/artifacts"
  log="$work/$target/fuzz.log"
  mkdir -p "$corpus" "$artifacts"
  cp -R "$seeds/." "$corpus/"
  echo "--- $target: ${FUZZ_SECONDS}s from $(find "$corpus" -type f | wc -l) seeds"
  status=0
  "$CARGO_TARGET_DIR/$TRIPLE/release/$target" \
    -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
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
  if [ "$status" -eq 0 ] && [ "${#found[@]}" -eq 0 ]; then
    echo "$line"
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

echo "=== fuzz summary (${FUZZ_SECONDS}s per target)"
for line in "${summary[@]}"; do echo "$line"; done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]} (artifacts kept under $work)" >&2
  exit 1
fi
