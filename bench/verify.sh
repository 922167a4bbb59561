#!/usr/bin/env bash
# Throughput of `aoi verify` reading stdin, against the practical limit (serde_json parsing every
# line into IgnoredAny) and against what users reach for (`jq empty`, `jaq empty`), in one run,
# on one file, every command reading stdin from the file with `<`. Prints medians in MB/s
# (10^6 bytes per second) and the ratios.
#
#   bench/verify.sh [FILE]          # FILE defaults to bench/data/stream.jsonl (generated if missing)
#
# Environment: RUNS (default 7) timed runs per command, WARMUP (default 1);
# NO_INSTALL=1 skips `cargo install jaq` when jaq is missing; NO_HYPERFINE=1 forces the bash loop.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
FILE=${1:-$ROOT/bench/data/stream.jsonl}
RUNS=${RUNS:-7}
WARMUP=${WARMUP:-1}
OUT=$ROOT/bench/data
mkdir -p "$OUT"

say() { printf '%s\n' "$*" >&2; }

if [[ ! -f $FILE ]]; then
    say "== generating $FILE"
    python3 "$ROOT/bench/gen_stream.py" --out "$FILE"
fi

say "== building (release)"
cargo build --release -q -p aoi-cli
cargo build --release -q -p aoi --example bench_ignored_any
AOI=$ROOT/target/release/aoi
BASELINE=$ROOT/target/release/examples/bench_ignored_any

JAQ=""
if [[ -x $ROOT/bench/.tools/bin/jaq ]]; then
    JAQ=$ROOT/bench/.tools/bin/jaq
elif command -v jaq >/dev/null 2>&1; then
    JAQ=$(command -v jaq)
elif [[ -z ${NO_INSTALL:-} ]]; then
    say "== installing jaq into bench/.tools (cargo install --locked --root bench/.tools jaq)"
    if cargo install --locked --root "$ROOT/bench/.tools" jaq >"$OUT/jaq-install.log" 2>&1; then
        JAQ=$ROOT/bench/.tools/bin/jaq
    else
        say "   jaq did not install (see $OUT/jaq-install.log); measuring without it"
    fi
fi
JQ=$(command -v jq || true)

# Every tool must accept the file before its time means anything.
say "== checking that each tool accepts $FILE"
status=0; "$AOI" verify <"$FILE" >/dev/null 2>&1 || status=$?
if [[ $status -ne 0 ]]; then
    say "aoi verify exited $status on $FILE (expected 0):"
    "$AOI" verify <"$FILE" | head -20 >&2 || true
    exit 1
fi
"$BASELINE" <"$FILE"
[[ -n $JQ ]] && "$JQ" empty <"$FILE"
[[ -n $JAQ ]] && "$JAQ" empty <"$FILE"

names=("aoi verify" "serde_json IgnoredAny" )
cmds=("$AOI verify" "$BASELINE")
[[ -n $JQ ]] && { names+=("jq empty"); cmds+=("$JQ empty"); }
[[ -n $JAQ ]] && { names+=("jaq empty"); cmds+=("$JAQ empty"); }

BYTES=$(stat -c %s "$FILE")
say "== file: $FILE ($BYTES bytes, $(wc -l <"$FILE") lines)"
say "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
say "== $(date -u +%Y-%m-%dT%H:%MZ), $RUNS runs per command after $WARMUP warm-up; load average $(cut -d' ' -f1-3 /proc/loadavg)"

MEDIANS=$OUT/verify-medians.txt
: >"$MEDIANS"
if command -v hyperfine >/dev/null 2>&1 && [[ -z ${NO_HYPERFINE:-} ]]; then
    hf=(hyperfine --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$OUT/verify-hyperfine.json")
    for i in "${!cmds[@]}"; do
        hf+=(--command-name "${names[$i]}" "${cmds[$i]} < '$FILE' > /dev/null")
    done
    "${hf[@]}" >&2
    python3 - "$OUT/verify-hyperfine.json" >"$MEDIANS" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f'{r["command"]}\t{r["median"]:.6f}')
EOF
else
    say "(timing with a bash loop: hyperfine not found or NO_HYPERFINE set)"
    for i in "${!cmds[@]}"; do
        times=()
        for ((r = 0; r < WARMUP + RUNS; r++)); do
            t0=$(date +%s%N)
            ${cmds[$i]} <"$FILE" >/dev/null
            t1=$(date +%s%N)
            ((r >= WARMUP)) && times+=($((t1 - t0)))
        done
        median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.6f", m/1e9}')
        printf '%s\t%s\n' "${names[$i]}" "$median" >>"$MEDIANS"
    done
fi

say "== load average after: $(cut -d' ' -f1-3 /proc/loadavg) (this run adds about 1; much more means other work shared the 2 cores)"
python3 - "$MEDIANS" "$BYTES" <<'EOF'
import sys
bytes_ = int(sys.argv[2])
med = {}
for line in open(sys.argv[1]):
    name, secs = line.rstrip("\n").split("\t")
    med[name] = float(secs)
print(f"{'command':<24} {'median s':>10} {'MB/s':>9}")
for name, secs in med.items():
    print(f"{name:<24} {secs:>10.4f} {bytes_ / 1e6 / secs:>9.1f}")
aoi = med["aoi verify"]
def ratio(other, target, label):
    if other not in med:
        print(f"aoi / {other}: not measured")
        return
    r = med[other] / aoi  # throughput ratio = inverse time ratio
    verdict = "met" if r >= target else "NOT met"
    print(f"aoi verify / {other}: {r:.2f}x  (target >= {label}: {verdict})")
ratio("serde_json IgnoredAny", 0.70, "0.70")
ratio("jq empty", 5.0, "5x")
ratio("jaq empty", 5.0, "5x")
EOF
