#!/usr/bin/env bash
# outline (crates/outline) on 100k generated documents, whole-process wall time:
#   1. `import --input-jsonl` into a fresh database, against two floors writing the same rows
#      into the same tables and FTS5 index (hashsize 64 MiB, as outline sets it) in one
#      transaction: Python's sqlite3 one row at a time, and the sqlite3 shell with one
#      INSERT ... SELECT per table. Target: >= 50k docs/s. One extra outline run under
#      /usr/bin/time gives the import's peak RSS.
#   2. `search QUERY`, machine and human mode, default limit, a selective and a common query,
#      against a Rust hello-world in the same hyperfine run. Target: selective query within
#      3 ms of hello world.
#   3. `list --limit 100` paged with cursors through all documents: every document once, and
#      the last page costs about what the first does.
# RUNS (search, default 100), IMPORT_RUNS (default 5), PAGE_RUNS (list pages, default 30) and
# DOCS (default 100000) override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 1; }
mkdir -p bench/data
n=${DOCS:-100000}
docs=bench/data/docs-$n.jsonl
queries=bench/data/docs-$n.queries.json
[[ -s $docs && -s $queries ]] || nice python3 bench/gen_docs.py gen "$docs" "$n" >/dev/null
rustc -O bench/hello.rs -o bench/data/hello
nice cargo build --release --locked -p outline >/dev/null 2>&1
outline=target/release/outline
db=bench/data/outline.db
floor=bench/data/floor.db
floor_sql=bench/data/floor-sql.db
command -v sqlite3 >/dev/null || { echo "the sqlite3 shell is needed: apt-get install -y sqlite3" >&2; exit 1; }
python3 bench/gen_docs.py sql "$docs" >bench/data/floor-$n.sql
sel=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['selective']['query'])" "$queries")
com=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['common']['query'])" "$queries")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. Import. Each run starts from no database; the last run's database stays for 2 and 3.
hyperfine -N --runs "${IMPORT_RUNS:-5}" --export-json bench/data/outline_import.json \
  --prepare "rm -f $db $db-wal $db-shm $db-search $db-search-wal $db-search-shm" \
  --prepare "rm -f $floor $floor-wal $floor-shm" \
  --prepare "rm -f $floor_sql $floor_sql-wal $floor_sql-shm" \
  -n "outline import" "$outline --db $db import --input-jsonl $docs --output jsonl" \
  -n "floor python sqlite3" "python3 bench/gen_docs.py floor $floor $docs" \
  -n "floor sqlite3 shell" "sqlite3 $floor_sql .read\ bench/data/floor-$n.sql" >/dev/null
# Peak RSS of the import: one more run, outside hyperfine, into a fresh database.
command -v /usr/bin/time >/dev/null || { echo "/usr/bin/time is needed: apt-get install -y time" >&2; exit 1; }
rm -f $db $db-wal $db-shm $db-search $db-search-wal $db-search-shm
/usr/bin/time -f %M -o bench/data/outline_import_rss_kb "$outline" --db $db import --input-jsonl $docs --output jsonl >/dev/null
for f in "$floor" "$floor_sql"; do
  [[ $(sqlite3 "$f" "SELECT count(*) FROM documents") == "$n" ]] || { echo "$f: not $n documents" >&2; exit 1; }
done

# The match counts outline reports, against the generator's document frequencies.
for q in "$sel" "$com"; do
  "$outline" --db "$db" search "$q" --output jsonl | tail -n 1 >"bench/data/outline_search_$q.summary"
done

# 2. Search. The common query's first page writes its ranking to the snapshot cache
# (<db>-search) each time, as it would for a user.
hyperfine -N --warmup 10 --runs "${RUNS:-100}" --export-json bench/data/outline_search.json \
  -n hello bench/data/hello \
  -n "search selective jsonl" "$outline --db $db search $sel --output jsonl" \
  -n "search selective human" "$outline --db $db search $sel" \
  -n "search common jsonl" "$outline --db $db search $com --output jsonl" \
  -n "search common human" "$outline --db $db search $com" >/dev/null

# 3. List: page through everything once (timing each process), then time chosen pages.
python3 - "$outline" "$db" "$n" <<'PY'
import json, subprocess, sys, time
outline, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids, cursors, times, cursor = [], [None], [], None
while True:
    args = [outline, "--db", db, "list", "--limit", "100", "--output", "jsonl"]
    if cursor:
        args += ["--cursor", cursor]
    t = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=True).stdout
    times.append(time.perf_counter() - t)
    summary = None
    for line in out.splitlines():
        e = json.loads(line)
        if e["type"] == "entry":
            ids.append(e["id"])
        elif e["type"] == "aoi:summary":
            summary = e
    cursor = summary.get("next_cursor")
    if not cursor:
        break
    cursors.append(cursor)
pages = len(times)
# Least-squares slope of the per-page time against the page number.
mx, my = (pages - 1) / 2, sum(times) / pages
slope = sum((i - mx) * (t - my) for i, t in enumerate(times)) / sum((i - mx) ** 2 for i in range(pages))
json.dump({"pages": pages, "visited": len(ids), "distinct": len(set(ids)), "expected": n,
           "loop_ms": [t * 1000 for t in times], "slope_ms_per_page": slope * 1000,
           "cursors": cursors}, open("bench/data/outline_list_walk.json", "w"))
PY
mapfile -t picks < <(python3 - <<'PY'
import json
w = json.load(open("bench/data/outline_list_walk.json"))
p = w["pages"]
for i in sorted({0, 1, p // 4, p // 2, 3 * p // 4, p - 2, p - 1}):
    print(i)
PY
)
list_cmds=()
for i in "${picks[@]}"; do
  c=$(python3 -c "import json,sys; print(json.load(open('bench/data/outline_list_walk.json'))['cursors'][int(sys.argv[1])] or '')" "$i")
  cmd="$outline --db $db list --limit 100 --output jsonl"
  [[ -n $c ]] && cmd="$cmd --cursor $c"
  list_cmds+=(-n "list page $((i + 1))" "$cmd")
done
hyperfine -N --warmup 5 --runs "${PAGE_RUNS:-30}" --export-json bench/data/outline_list.json \
  -n hello bench/data/hello "${list_cmds[@]}" >/dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$queries" <<'PY'
import json, statistics, sys
med = lambda r: statistics.median(r["times"])
q = json.load(open(sys.argv[1]))
n = q["documents"]
print(f"\n{n} documents, {q['selective']['query']!r} in {q['selective']['matches']}, "
      f"{q['common']['query']!r} in {q['common']['matches']} (generator's counts)")
for k in ("selective", "common"):
    s = json.loads(open(f"bench/data/outline_search_{q[k]['query']}.summary").read())
    print(f"  outline search {q[k]['query']}: total {s.get('properties', {}).get('total')}, truncated {s.get('truncated', False)}")

imp = {r["command"]: r for r in json.load(open("bench/data/outline_import.json"))["results"]}
o = imp["outline import"]
rate = lambda r: n / med(r)
print(f"\n1. import ({len(o['times'])} runs, fresh database each)")
print(f"{'command':28} {'median s':>9} {'docs/s':>9} {'mean user+sys s':>16}")
for name, r in imp.items():
    cpu = r["user"] + r["system"]  # hyperfine 1.15 exports the mean only
    print(f"{name:28} {med(r):9.3f} {rate(r):9.0f} {cpu:16.3f}")
for name in ("floor python sqlite3", "floor sqlite3 shell"):
    print(f"outline / {name} (docs/s): {rate(o) / rate(imp[name]):.2f}")
rss = int(open("bench/data/outline_import_rss_kb").read().split()[-1])
print(f"outline import peak RSS (one extra run, /usr/bin/time): {rss / 1024:.0f} MiB ({rss} KiB)")
print(f"target >= 50000 docs/s: {rate(o):.0f} -> {'met' if rate(o) >= 50000 else 'NOT met'}")

res = json.load(open("bench/data/outline_search.json"))["results"]
hello = med(res[0]) * 1000
print(f"\n2. search (default limit 20, {len(res[0]['times'])} runs)")
print(f"{'command':28} {'median ms':>9} {'- hello':>8} {'x hello':>8}  target <= hello + 3 ms")
for r in res:
    ms = med(r) * 1000
    verdict = "" if r["command"] == "hello" else ("met" if ms - hello <= 3 else "NOT met")
    print(f"{r['command']:28} {ms:9.2f} {ms - hello:8.2f} {ms / hello:8.2f}  {verdict}")

w = json.load(open("bench/data/outline_list_walk.json"))
print(f"\n3. list --limit 100: {w['pages']} pages, {w['visited']} visited, {w['distinct']} distinct, "
      f"expected {w['expected']} -> {'ok' if w['visited'] == w['distinct'] == w['expected'] else 'WRONG'}")
loop = w["loop_ms"]
print(f"walk (one process per page, python loop): total {sum(loop) / 1000:.2f} s, median page "
      f"{statistics.median(loop):.2f} ms, first 10 pages median {statistics.median(loop[:10]):.2f} ms, "
      f"last 10 median {statistics.median(loop[-10:]):.2f} ms, slope {w['slope_ms_per_page'] * 1000:.2f} us/page")
res = json.load(open("bench/data/outline_list.json"))["results"]
hello = med(res[0]) * 1000
first = med(res[1]) * 1000
print(f"{'command':28} {'median ms':>9} {'- hello':>8} {'x page 1':>8}")
for r in res:
    ms = med(r) * 1000
    print(f"{r['command']:28} {ms:9.2f} {ms - hello:8.2f} {ms / first:8.2f}")
last = med(res[-1]) * 1000
print(f"last page / first page: {last / first:.2f} -> {'flat (linear walk)' if last / first < 1.25 else 'NOT flat'}")
PY
