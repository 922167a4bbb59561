"""Peak RSS of `aoi mcp` for one large result: python3 bench/mcp_peak_rss.py TOOL [aoi mcp flags]

Serves tests/data/mcp/hostile.py under /usr/bin/time -v, calls TOOL (huge: 500 MB of events,
cut at --max-output; detach: a one-event run, the baseline), prints the response size and the
adapter's maximum resident set size. Run from the repository root."""
import json, os, subprocess, sys
p = subprocess.Popen(["/usr/bin/time","-v",os.environ.get("AOI", "target/release/aoi"),"mcp"]+sys.argv[2:]+["--tool","crates/aoi-cli/tests/data/mcp/hostile.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
def send(m): p.stdin.write((json.dumps(m)+"\n").encode()); p.stdin.flush()
send({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
p.stdout.readline()
send({"jsonrpc":"2.0","method":"notifications/initialized"})
send({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":sys.argv[1],"arguments":{}}})
line = p.stdout.readline()
r = json.loads(line)["result"]
print("bytes", len(line), "isError", r.get("isError"), r["content"][0]["text"][:300], "events", len(r["structuredContent"]["events"]), "struct-bytes", len(json.dumps(r["structuredContent"], separators=(",",":"))))
p.stdin.close(); err = p.stderr.read().decode(); p.wait()
print([l.strip() for l in err.splitlines() if "Maximum resident" in l or "Elapsed" in l])
