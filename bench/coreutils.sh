#!/usr/bin/env bash
# aoi-coreutils against the tools an agent would otherwise run, on the same data, in one run,
# with the ratios printed (higher is better for throughput ratios; "within" for start-up):
#
#   grep   vs `rg --json` (newest ripgrep from crates.io) on a >= 1 GB corpus, a literal and a regex
#          target: >= 1.0x rg's throughput
#   find   vs `fd` (newest fd-find from crates.io) on a 200k-file tree          target: >= 0.9x
#   ls -l  vs GNU `ls -l` on a 100k-entry directory                            target: <= 1.2x time
#   wc     vs GNU `wc` on a 1 GB file                                           target: >= 1.0x
#   cat start-up vs a Rust hello-world                                         target: within 1 ms
#
#   bench/coreutils.sh
#
# Environment: RUNS (default 5) timed runs per command of `wc`, QUICK_RUNS (default 20) of the
# comparisons that take well under a second (grep, find, ls), WARMUP (default 1), ROUNDS (default 3)
# rounds of each comparison, alternating the two commands between rounds (the ratio quoted is
# the median of the rounds' ratios, so a burst of load in one round moves it little); CORPUS_MB (default
# 1100) the grep corpus size; FILES (default 200000) the find tree's files; NO_INSTALL=1 uses rg
# and fd from PATH instead of installing them into bench/.tools.
# grep runs in machine mode with its bounds lifted (--limit, --max-bytes), since rg has none;
# find, ls, wc and cat in human mode, which is GNU's and unbounded: the same work, all of it
# written to /dev/null. CU (default target/release/aoi-coreutils) is the binary measured;
# CU_BEFORE, another build of it (e.g. the commit before a change), is then run beside it in
# the same rounds, and the report adds its figures and the ratio after/before.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
RUNS=${RUNS:-5}
QUICK_RUNS=${QUICK_RUNS:-20}
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-3}
DATA=$ROOT/bench/data/coreutils
mkdir -p "$DATA"
say() { printf '%s\n' "$*" >&2; }
command -v hyperfine >/dev/null || { say "hyperfine is needed: apt-get install -y hyperfine"; exit 1; }

if [[ -z ${NO_INSTALL:-} ]]; then
    if [[ ! -x $ROOT/bench/.tools/bin/rg || ! -x $ROOT/bench/.tools/bin/fd ]]; then
        say "== installing ripgrep and fd-find into bench/.tools (cargo install --locked)"
        cargo install -q --locked --root "$ROOT/bench/.tools" ripgrep fd-find
    fi
    RG=$ROOT/bench/.tools/bin/rg
    FD=$ROOT/bench/.tools/bin/fd
else
    RG=$(command -v rg)
    FD=$(command -v fd || command -v fdfind)
fi

say "== building (release)"
cargo build --release -q -p aoi-coreutils
CU=${CU:-$ROOT/target/release/aoi-coreutils}
rustc -O bench/hello.rs -o bench/data/hello
LIFT=(--limit 1000000000 --max-bytes 1000000000000)

say "== data in $DATA"
python3 - "$DATA" "${CORPUS_MB:-1100}" "${FILES:-200000}" <<'PY'
import os, random, sys
data, corpus_mb, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
words = [w for w in """the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there been one all we their has would when if so
no will what can more about said out up its into them than only other time new some could these
two may first then do any like my now over such our man me even most made after also did many off
before must well back through years much where your way down should because each just those people
mr how too little state good very make world still see own men work long here get both between life
being under never day same another know while last might us great old year come since against go
came right used take three states himself few house use during without again place american around
however home small found mrs thought went say part once general high upon school every don does got
united left number course war until always away something fact though water less public put think
almost hand enough far took head yet government system better set told nothing night end why called
didn't eyes find going look asked later knew point next program city business give group toward
young days let room president side social given present several order national possible rather
second face per among form important often things looking early white case john become large big
need four within felt along children saw best church ever least power development light""".split()]
corpus = os.path.join(data, "corpus")
if not os.path.isdir(corpus):
    os.makedirs(corpus)
    # 1,000 files of about corpus_mb/1000 MB each, in 10 directories; lines of 40-120 bytes, some
    # with the literal needle and some with a regex hit, some non-ASCII.
    per = corpus_mb * 1024 * 1024 // 1000
    for i in range(1000):
        d = os.path.join(corpus, f"d{i % 10}")
        os.makedirs(d, exist_ok=True)
        out, size = [], 0
        while size < per:
            n = rng.randint(6, 18)
            line = " ".join(rng.choice(words) for _ in range(n))
            r = rng.random()
            if r < 0.0004:
                line += " needle_in_haystack"
            elif r < 0.0008:
                line += f" error{rng.randint(0, 999)}: code {rng.randint(100, 599)}"
            elif r < 0.01:
                line += " naïve café über"
            out.append(line)
            size += len(line.encode()) + 1
        with open(os.path.join(d, f"f{i:04}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
big = os.path.join(data, "big.txt")
if not os.path.exists(big):
    with open(big, "wb") as out:
        for root, _, names in sorted(os.walk(corpus)):
            for n in sorted(names):
                with open(os.path.join(root, n), "rb") as f:
                    out.write(f.read())
            if out.tell() >= 1024 ** 3:
                break
tree = os.path.join(data, "tree")
if not os.path.isdir(tree):
    # files spread over a three-level tree of about 40 files per directory
    for i in range(files):
        d = os.path.join(tree, f"a{i % 50}", f"b{(i // 50) % 100}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"file{i}.txt"), "w").close()
flat = os.path.join(data, "flat")
if not os.path.isdir(flat):
    os.makedirs(flat)
    for i in range(100_000):
        with open(os.path.join(flat, f"entry{i:06}.dat"), "w") as f:
            f.write("x" * (i % 100))
small = os.path.join(data, "small.txt")
if not os.path.exists(small):
    with open(small, "w") as f:
        f.write("hello\n" * 100)
PY
du -sh "$DATA/corpus" "$DATA/big.txt" >&2

JSON=$ROOT/bench/data/coreutils-results
mkdir -p "$JSON"
rm -f "$JSON"/*.json
bench() { # name, peer command, our command: ROUNDS rounds, the order swapped every other one
    local name=$1 peer=$2 ours=$3 round
    local commands=("$peer" "$ours")
    # The build before, when given: our command with its binary swapped.
    [[ -z ${CU_BEFORE:-} ]] || commands+=("${ours/#"$CU"/$CU_BEFORE}")
    for ((round = 1; round <= ROUNDS; round++)); do
        say "== $name (round $round of $ROUNDS)"
        if ((round % 2)); then
            hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$JSON/$name.$round.json" "${commands[@]}" >&2
        else
            local reversed=()
            for ((i = ${#commands[@]} - 1; i >= 0; i--)); do reversed+=("${commands[i]}"); done
            hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$JSON/$name.$round.json" "${reversed[@]}" >&2
        fi
    done
}

cd "$DATA"
RUNS=$QUICK_RUNS bench grep-literal \
    "$RG --json -F needle_in_haystack corpus" \
    "$CU grep --output jsonl -F needle_in_haystack corpus ${LIFT[*]}"
RUNS=$QUICK_RUNS bench grep-regex \
    "$RG --json 'error[0-9]+: code 5[0-9]{2}' corpus" \
    "$CU grep --output jsonl -E 'error[0-9]+: code 5[0-9]{2}' corpus ${LIFT[*]}"
# find and ls in human mode are GNU's syntax and output (uutils, src/gnu.rs), unbounded.
RUNS=$QUICK_RUNS bench find \
    "$FD --no-ignore --hidden . tree" \
    "$CU find tree"
RUNS=$QUICK_RUNS bench ls-l \
    "ls -l flat" \
    "$CU ls -l flat"
bench wc \
    "wc big.txt" \
    "$CU wc big.txt"
# A start-up is about a millisecond: a few runs would measure the noise, so 500 (and 50 warm).
RUNS=500 WARMUP=50 bench cat-startup \
    "$ROOT/bench/data/hello" \
    "$CU cat small.txt"
cd "$ROOT"

python3 - "$JSON" "$CU" "${CU_BEFORE:-}" <<'PY'
import glob, json, os, statistics, sys
d, cu, before = sys.argv[1], sys.argv[2], sys.argv[3]
def who(command):
    if command.startswith(cu):
        return "ours"
    if before and command.startswith(before):
        return "before"
    return "peer"
def rounds(name, with_before=False):
    """(peer, ours) medians of each round, by command rather than by position; with
    `with_before`, (before, ours)."""
    out = []
    for path in sorted(glob.glob(os.path.join(d, name + ".*.json"))):
        rs = json.load(open(path))["results"]
        m = {who(r["command"]): statistics.median(r["times"]) for r in rs}
        out.append((m["before" if with_before else "peer"], m["ours"]))
    return out
rows = []
for name, target, kind in [("grep-literal", 1.0, "speed"), ("grep-regex", 1.0, "speed"),
                           ("find", 0.9, "speed"), ("ls-l", 1.2, "time"), ("wc", 1.0, "speed"),
                           ("cat-startup", 1.0, "ms")]:
    rs = rounds(name)
    peer = statistics.median(p for p, _ in rs)
    ours = statistics.median(o for _, o in rs)
    each = ", ".join(f"{p / o:.2f}" if kind == "speed" else f"{o / p:.2f}" if kind == "time" else f"+{(o - p) * 1000:.2f}" for p, o in rs)
    if kind == "speed":
        ratio = statistics.median(p / o for p, o in rs)
        ok = ratio >= target
        rows.append(f"{name:14} peer {peer*1000:9.1f} ms  aoi-coreutils {ours*1000:9.1f} ms  throughput {ratio:5.2f}x (target >= {target}x) {'met' if ok else 'NOT met'}  rounds: {each}")
    elif kind == "time":
        ratio = statistics.median(o / p for p, o in rs)
        ok = ratio <= target
        rows.append(f"{name:14} peer {peer*1000:9.1f} ms  aoi-coreutils {ours*1000:9.1f} ms  time {ratio:5.2f}x (target <= {target}x) {'met' if ok else 'NOT met'}  rounds: {each}")
    else:
        diff = statistics.median(o - p for p, o in rs) * 1000
        ok = diff <= target
        rows.append(f"{name:14} hello {peer*1000:8.2f} ms  aoi-coreutils {ours*1000:8.2f} ms  +{diff:5.2f} ms (target <= {target} ms) {'met' if ok else 'NOT met'}  rounds: {each}")
    if before:
        bs = rounds(name, with_before=True)
        change = statistics.median(o / b for b, o in bs)
        rows.append(f"{'':14} the build before {statistics.median(b for b, _ in bs)*1000:9.1f} ms: after/before time {change:5.2f}x")
print("\n".join(rows))
PY

# Behind `aoi mcp`: a filesystem MCP server, next to the official one, on the same tree.
if [[ -z ${NO_MCP:-} ]]; then
    FS_JS=$ROOT/bench/.tools/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
    if [[ ! -f $FS_JS ]]; then
        say "== installing @modelcontextprotocol/server-filesystem into bench/.tools/npm"
        npm install --silent --prefix "$ROOT/bench/.tools/npm" @modelcontextprotocol/server-filesystem
    fi
    cargo build --release -q -p aoi-cli
    MCP_ROOT=$DATA/mcp-root
    if [[ ! -d $MCP_ROOT ]]; then
        mkdir -p "$MCP_ROOT/src"
        for i in $(seq 1 200); do printf 'line %s of file %s\n' 1 "$i" > "$MCP_ROOT/src/file$i.txt"; done
        echo "a needle here" > "$MCP_ROOT/src/has-needle.txt"
        head -c 60000 "$DATA/big.txt" > "$MCP_ROOT/src/big.txt"
    fi
    say "== MCP: aoi mcp -- aoi-coreutils vs @modelcontextprotocol/server-filesystem $(node -p "require('$ROOT/bench/.tools/npm/node_modules/@modelcontextprotocol/server-filesystem/package.json').version")"
    python3 bench/coreutils_mcp.py "$MCP_ROOT" "$ROOT/target/release/aoi" "$CU" "$FS_JS" "${MCP_RUNS:-30}"
fi
