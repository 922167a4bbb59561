#!/usr/bin/env bash
# `aoi mcp -- outline` over stdio, measured by a std-only Rust client (bench/mcp_driver.rs, rustc -O):
#   1. warm `tools/list` round trip on one long-lived server (median, p90);
#   2. warm `tools/call search {"query":"rollback","limit":5}` against spawning
#      `outline search rollback --limit=5 --output jsonl` directly, interleaved: overhead ≤ 1 ms;
#   3. cold start: spawn, initialize, notifications/initialized, tools/list until its response
#      (target < 20 ms), interleaved with spawning `outline capabilities --output json`;
#   4. the transports side by side: the same warm `tools/call search` through `aoi mcp -- outline`
#      on stdio and through `aoi mcp --listen 0 -- outline` on Streamable HTTP (one keep-alive
#      connection), interleaved in one loop with the direct spawn: HTTP costs ≤ 1 ms more than
#      stdio, stdio ≤ 0.5 ms more than the spawn; then `tools/list`'s bytes on both.
# Unless NO_PEERS=1, the same three for a server on the official Python SDK (`mcp` on PyPI,
# installed into bench/data/mcp-venv) with one `search` tool that spawns the same command:
# bench/mcp_sdk_server.py. LIST_RUNS, CALL_RUNS, COLD_RUNS, PEER_COLD_RUNS, TRANSPORT_RUNS set
# the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/data
cargo build --release --locked -p aoi-cli -p outline >/dev/null 2>&1
rustc --edition 2021 -O bench/mcp_driver.rs -o bench/data/mcp_driver
aoi=$PWD/target/release/aoi
outline=$PWD/target/release/outline
driver=bench/data/mcp_driver
if [ "${NO_PEERS:-0}" != 1 ] && [ ! -x bench/data/mcp-venv/bin/python ]; then
  python3 -m venv bench/data/mcp-venv
  bench/data/mcp-venv/bin/pip install -q mcp
fi
export XDG_DATA_HOME
XDG_DATA_HOME=$(mktemp -d)
trap 'rm -rf "$XDG_DATA_HOME"' EXIT
"$outline" import --input-jsonl examples/outline/handbook.jsonl >/dev/null
search="$outline search rollback --limit=5 --output jsonl"
caps="$outline capabilities --output json"
out=bench/data/mcp
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$driver" list "${LIST_RUNS:-1000}" -- "$aoi" mcp -- "$outline" >"$out-aoi-list.tsv"
"$driver" call "${CALL_RUNS:-200}" "$search" -- "$aoi" mcp -- "$outline" >"$out-aoi-call.tsv"
"$driver" transports "${TRANSPORT_RUNS:-200}" "$search" -- "$aoi" mcp -- "$outline" \
  ++ "$aoi" mcp --listen 0 -- "$outline" >"$out-aoi-transports.tsv"
# Warm the discovery cache once, so the cold start below is a host restarting the server;
# the first start after installing or upgrading the CLI (no cache) is measured next to it.
"$aoi" mcp --print-config -- "$outline" >/dev/null
"$driver" cold "${COLD_RUNS:-50}" "$caps" -- "$aoi" mcp -- "$outline" >"$out-aoi-cold.tsv"
"$driver" cold "${COLD_RUNS:-50}" "$caps" -- "$aoi" mcp --no-cache -- "$outline" >"$out-aoi-first.tsv"
peers=
if [ "${NO_PEERS:-0}" != 1 ]; then
  py=(bench/data/mcp-venv/bin/python bench/mcp_sdk_server.py "$outline")
  "$driver" list "${LIST_RUNS:-1000}" -- "${py[@]}" >"$out-py-list.tsv"
  "$driver" call "${CALL_RUNS:-200}" "$search" -- "${py[@]}" >"$out-py-call.tsv"
  "$driver" cold "${PEER_COLD_RUNS:-30}" "$caps" -- "${py[@]}" >"$out-py-cold.tsv"
  peers="mcp $(bench/data/mcp-venv/bin/pip show mcp 2>/dev/null | sed -n 's/^Version: //p')"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$peers" <<'PY'
import os, statistics, sys
out, peers = sys.argv[1], sys.argv[2]

def load(name):
    path = f"{out}-{name}.tsv"
    if not os.path.exists(path):
        return None
    d = {}
    for line in open(path):
        k, v = line.split("\t")
        d.setdefault(k, []).append(int(v))
    return d

def ms(xs):
    return statistics.median(xs) / 1e6

def p90(xs):
    return sorted(xs)[int(0.9 * (len(xs) - 1))] / 1e6

servers = {"aoi": "aoi mcp -- outline"}
if peers:
    servers["py"] = f"Python SDK ({peers}) server"
r = {s: {m: load(f"{s}-{m}") for m in ("list", "call", "cold")} for s in servers}
a = r["aoi"]
print(f"\n{'measurement':58} {'median ms':>10} {'p90 ms':>8}")
for s, label in servers.items():
    x = r[s]
    print(f"{label}: tools/list warm ({x['list']['list_bytes'][0]} B response, n={len(x['list']['list'])})"
          .ljust(58) + f" {ms(x['list']['list']):10.3f} {p90(x['list']['list']):8.3f}")
    print(f"{label}: tools/call search warm (n={len(x['call']['call'])})".ljust(58)
          + f" {ms(x['call']['call']):10.3f} {p90(x['call']['call']):8.3f}")
    print(f"  same run: spawn outline search directly".ljust(58)
          + f" {ms(x['call']['direct']):10.3f} {p90(x['call']['direct']):8.3f}")
    print(f"{label}: cold start to tools/list (n={len(x['cold']['cold'])})".ljust(58)
          + f" {ms(x['cold']['cold']):10.3f} {p90(x['cold']['cold']):8.3f}")
    print(f"  same run: spawn outline capabilities --output json".ljust(58)
          + f" {ms(x['cold']['direct']):10.3f} {p90(x['cold']['direct']):8.3f}")

over = ms(a["call"]["call"]) - ms(a["call"]["direct"])
cold = ms(a["cold"]["cold"])
print(f"\ntools/list warm median {ms(a['list']['list']):.3f} ms (p90 {p90(a['list']['list']):.3f}); no numeric target")
print(f"tools/call overhead over a direct spawn: {over:+.3f} ms at the median "
      f"({ms(a['call']['call']) / ms(a['call']['direct']):.2f}x) (target <= 0.5 ms): {'met' if over <= 0.5 else 'NOT met'}")
print(f"cold start to tools/list: {cold:.2f} ms (target < 20 ms): {'met' if cold < 20 else 'NOT met'}; "
      f"{cold / ms(a['cold']['direct']):.1f}x one `outline capabilities`")
t = load("aoi-transports")
if t:
    stdio, http, direct = t["stdio"], t["http"], t["direct"]
    print(f"\nthe transports side by side, one run, interleaved (n={len(stdio)} each):")
    for label, xs in (("tools/call search over stdio", stdio), ("tools/call search over Streamable HTTP", http),
                      ("spawn outline search directly", direct)):
        print(f"  {label}".ljust(58) + f" {ms(xs):10.3f} {p90(xs):8.3f}")
    h_s = ms(http) - ms(stdio)
    s_d = ms(stdio) - ms(direct)
    print(f"HTTP over stdio: {h_s:+.3f} ms at the median ({ms(http) / ms(stdio):.2f}x) "
          f"(target <= 1 ms): {'met' if h_s <= 1 else 'NOT met'}")
    print(f"stdio over a direct spawn: {s_d:+.3f} ms at the median ({ms(stdio) / ms(direct):.2f}x) "
          f"(target <= 0.5 ms): {'met' if s_d <= 0.5 else 'NOT met'}")
    line, body, payload = (t[k][0] for k in ("list_bytes_stdio", "list_bytes_http_body", "list_bytes_http_json"))
    print(f"tools/list for outline: {line} B on stdio (the JSON-RPC line and its newline), "
          f"{body} B of HTTP body ({payload} B of JSON in SSE framing, +{body - payload} B); "
          f"HTTP/stdio {body / line:.4f}x")
first = load("aoi-first")
if first:
    print(f"first start after an install or upgrade (--no-cache, discovery runs): "
          f"{ms(first['cold']):.2f} ms median (p90 {p90(first['cold']):.2f})")
if peers:
    p = r["py"]
    pover = ms(p["call"]["call"]) - ms(p["call"]["direct"])
    print(f"\nPython SDK / aoi: tools/list {ms(p['list']['list']) / ms(a['list']['list']):.2f}x, "
          f"tools/call {ms(p['call']['call']) / ms(a['call']['call']):.2f}x "
          f"(Python overhead {pover:+.3f} ms), cold start {ms(p['cold']['cold']) / cold:.1f}x")
PY
