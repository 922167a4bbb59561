#!/usr/bin/env bash
# Throughput of `aoi verify --schema FILE` (every event also validated against the tool's
# published JSON Schema) against `aoi verify` alone on the same 100 MB stream, in one run; then,
# on a 10 MB stream of the same shape, against what users reach for: Python `jsonschema` and
# `ajv` (Node), each parsing every line and validating it against the same schema. Every command
# reads the file from stdin with `<`. Prints medians in MB/s (10^6 bytes per second) and ratios.
#
#   bench/verify_schema.sh [FILE]   # FILE defaults to bench/data/stream.jsonl (generated if missing)
#
# The schema is the one a tool built on the SDK would publish for the stream's identity and its
# `hit` event: crates/aoi/examples/bench_schema.rs prints it into bench/data/schema.json.
#
# Targets: `--schema` at >= 0.5x the throughput of `aoi verify` and >= 150 MB/s. The cpu column
# (user + system) shows how much of `--schema` ran in parallel: on a shared machine a busy
# neighbour takes a core from it and not from single-threaded `aoi verify`, so compare the load
# averages printed before and after.
#
# Environment: RUNS (default 7) timed runs per `aoi` command, WARMUP (default 1); PEER_RUNS
# (default 3) for the slow peers; SLICE_MB (default 10) the size of their stream; NO_INSTALL=1
# skips installing them (Python `jsonschema` with pip, `ajv` with npm, both into bench/.tools);
# NO_PEERS=1 measures `aoi` only.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
FILE=${1:-$ROOT/bench/data/stream.jsonl}
RUNS=${RUNS:-7}
WARMUP=${WARMUP:-1}
PEER_RUNS=${PEER_RUNS:-3}
SLICE_MB=${SLICE_MB:-10}
OUT=$ROOT/bench/data
TOOLS=$ROOT/bench/.tools
mkdir -p "$OUT" "$TOOLS"

say() { printf '%s\n' "$*" >&2; }

if [[ ! -f $FILE ]]; then
    say "== generating $FILE"
    python3 "$ROOT/bench/gen_stream.py" --out "$FILE"
fi
SLICE=$OUT/stream-${SLICE_MB}mb.jsonl
if [[ -z ${NO_PEERS:-} && ! -f $SLICE ]]; then
    # The generator is deterministic: this is the start of the same stream, with its own summary.
    say "== generating $SLICE"
    python3 "$ROOT/bench/gen_stream.py" --size-mb "$SLICE_MB" --out "$SLICE"
fi

say "== building (release)"
cargo build --release -q -p aoi-cli
cargo build --release -q -p aoi --example bench_schema
AOI=$ROOT/target/release/aoi
SCHEMA=$OUT/schema.json
"$ROOT/target/release/examples/bench_schema" >"$SCHEMA"

# --- the peers: each parses every line and validates it; exit 1 if any line is invalid --------
PY_VALIDATE=$OUT/validate_jsonschema.py
cat >"$PY_VALIDATE" <<'EOF'
import json, sys
from jsonschema import Draft202012Validator
validator = Draft202012Validator(json.load(open(sys.argv[1])))
bad = sum(1 for line in sys.stdin.buffer if not validator.is_valid(json.loads(line)))
sys.exit(1 if bad else 0)
EOF
AJV_VALIDATE=$OUT/validate_ajv.js
cat >"$AJV_VALIDATE" <<'EOF'
// Reads JSONL on stdin in chunks, parses every line and validates it with ajv (draft 2020-12).
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020");
// strict:false lets the schema's `x-aoi` and its `format`s (uint64, double: annotations only).
const ajv = new Ajv2020({ strict: false, validateFormats: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(process.argv[2], "utf8")));
let bad = 0, rest = "";
const buf = Buffer.alloc(1 << 18);
const decoder = new (require("string_decoder").StringDecoder)("utf8");
for (;;) {
  const n = fs.readSync(0, buf, 0, buf.length, null);
  if (n === 0) break;
  const lines = (rest + decoder.write(buf.subarray(0, n))).split("\n");
  rest = lines.pop();
  for (const line of lines) if (!validate(JSON.parse(line))) bad++;
}
process.exit(bad || rest.length ? 1 : 0);
EOF

PY=""
NODE=""
if [[ -z ${NO_PEERS:-} ]]; then
    if python3 -c 'import jsonschema' 2>/dev/null; then
        PY=python3
    elif PYTHONPATH=$TOOLS/py python3 -c 'import jsonschema' 2>/dev/null; then
        PY="env PYTHONPATH=$TOOLS/py python3"
    elif [[ -z ${NO_INSTALL:-} ]]; then
        say "== installing jsonschema into bench/.tools/py (pip install --target)"
        if python3 -m pip install -q --target "$TOOLS/py" jsonschema >"$OUT/jsonschema-install.log" 2>&1; then
            PY="env PYTHONPATH=$TOOLS/py python3"
        else
            say "   jsonschema did not install (see $OUT/jsonschema-install.log); measuring without it"
        fi
    fi
    if command -v node >/dev/null 2>&1; then
        if [[ ! -d $TOOLS/node/node_modules/ajv && -z ${NO_INSTALL:-} ]]; then
            say "== installing ajv into bench/.tools/node (npm install ajv@8)"
            mkdir -p "$TOOLS/node"
            npm install --no-audit --no-fund --prefix "$TOOLS/node" ajv@8 >"$OUT/ajv-install.log" 2>&1 ||
                say "   ajv did not install (see $OUT/ajv-install.log); measuring without it"
        fi
        [[ -d $TOOLS/node/node_modules/ajv ]] && NODE="env NODE_PATH=$TOOLS/node/node_modules node"
    fi
fi

# Every command must accept its input before its time means anything.
say "== checking that each command accepts its input"
for with_schema in no yes; do
    args=(verify)
    [[ $with_schema == yes ]] && args+=(--schema "$SCHEMA")
    status=0; "$AOI" "${args[@]}" <"$FILE" >/dev/null 2>&1 || status=$?
    if [[ $status -ne 0 ]]; then
        say "aoi ${args[*]} exited $status on $FILE (expected 0):"
        "$AOI" "${args[@]}" <"$FILE" | head -20 >&2 || true
        exit 1
    fi
done
if [[ -n $PY ]] && ! $PY "$PY_VALIDATE" "$SCHEMA" <"$SLICE"; then
    say "Python jsonschema rejects a line of $SLICE"; exit 1
fi
if [[ -n $NODE ]] && ! $NODE "$AJV_VALIDATE" "$SCHEMA" <"$SLICE"; then
    say "ajv rejects a line of $SLICE"; exit 1
fi

BYTES=$(stat -c %s "$FILE")
say "== file: $FILE ($BYTES bytes, $(wc -l <"$FILE") lines)"
[[ -z ${NO_PEERS:-} ]] && say "== peers' file: $SLICE ($(stat -c %s "$SLICE") bytes)"
say "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
say "== $(date -u +%Y-%m-%dT%H:%MZ), $RUNS runs per aoi command after $WARMUP warm-up, $PEER_RUNS per peer; load average $(cut -d' ' -f1-3 /proc/loadavg)"

command -v hyperfine >/dev/null 2>&1 || { say "hyperfine is required"; exit 1; }
JSON=$OUT/verify-schema-hyperfine.json
hf=(hyperfine --style basic --export-json "$JSON" --warmup "$WARMUP" --runs "$RUNS"
    --command-name "aoi verify" "$AOI verify < '$FILE' > /dev/null"
    --command-name "aoi verify --schema" "$AOI verify --schema '$SCHEMA' < '$FILE' > /dev/null")
"${hf[@]}" >&2
PEERS_JSON=$OUT/verify-schema-peers-hyperfine.json
rm -f "$PEERS_JSON"
if [[ -z ${NO_PEERS:-} ]]; then
    hf=(hyperfine --style basic --export-json "$PEERS_JSON" --warmup 1 --runs "$PEER_RUNS"
        --command-name "aoi verify --schema (slice)" "$AOI verify --schema '$SCHEMA' < '$SLICE' > /dev/null")
    [[ -n $PY ]] && hf+=(--command-name "python jsonschema" "$PY '$PY_VALIDATE' '$SCHEMA' < '$SLICE'")
    [[ -n $NODE ]] && hf+=(--command-name "ajv" "$NODE '$AJV_VALIDATE' '$SCHEMA' < '$SLICE'")
    "${hf[@]}" >&2
fi
say "== load average after: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores: well above 2 means other work shared them)"

python3 - "$JSON" "$BYTES" "$PEERS_JSON" "$SLICE" <<'EOF'
import json, os, statistics, sys
def medians(path):
    return {r["command"]: r["median"] for r in json.load(open(path))["results"]}
def cpu(path):
    # User + system time of a run (hyperfine reports their means): above its wall time,
    # threads ran in parallel.
    def total(r):
        u, s = r["user"], r["system"]
        if isinstance(u, list):
            return statistics.median(a + b for a, b in zip(u, s))
        return u + s
    return {r["command"]: total(r) for r in json.load(open(path))["results"]
            if "user" in r and "system" in r}
main, size = medians(sys.argv[1]), int(sys.argv[2])
cpus = cpu(sys.argv[1])
print(f"{'command':<30} {'input':>8} {'median s':>10} {'MB/s':>9} {'cpu s':>8}  (cpu: user + system)")
for name, secs in main.items():
    used = f"{cpus[name]:>8.4f}" if name in cpus else ""
    print(f"{name:<30} {size / 1e6:>6.0f}MB {secs:>10.4f} {size / 1e6 / secs:>9.1f} {used}")
plain, schema = main["aoi verify"], main["aoi verify --schema"]
rate = size / 1e6 / schema
print(f"aoi verify --schema / aoi verify: {plain / schema:.2f}x the throughput"
      f"  (target >= 0.50x: {'met' if plain / schema >= 0.5 else 'NOT met'};"
      f" target >= 150 MB/s: {'met' if rate >= 150 else 'NOT met'})")
if os.path.exists(sys.argv[3]):
    peers, slice_size = medians(sys.argv[3]), os.path.getsize(sys.argv[4])
    for name, secs in peers.items():
        print(f"{name:<30} {slice_size / 1e6:>6.0f}MB {secs:>10.4f} {slice_size / 1e6 / secs:>9.1f}")
    ours = peers["aoi verify --schema (slice)"]
    for name, secs in peers.items():
        if name != "aoi verify --schema (slice)":
            print(f"aoi verify --schema / {name}: {secs / ours:.1f}x")
EOF
