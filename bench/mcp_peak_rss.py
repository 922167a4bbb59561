"""Peak RSS of `aoi mcp` for one large result: python3 bench/mcp_peak_rss.py [--http] TOOL [aoi mcp flags]

Serves tests/data/mcp/hostile.py under /usr/bin/time -v (over stdio, or Streamable HTTP on
loopback with --http), calls TOOL (huge: 500 MB of events, cut at --max-output; detach: a
one-event run, the baseline), prints the response size and the adapter's maximum resident set
size. Run from the repository root."""
import json, os, subprocess, sys, urllib.request

args = sys.argv[1:]
http = args[:1] == ["--http"]
if http:
    args = args[1:]
tool, flags = args[0], args[1:]
aoi = os.environ.get("AOI", "target/release/aoi")
listen = ["--listen", "0"] if http else []
p = subprocess.Popen(["/usr/bin/time", "-v", aoi, "mcp"] + listen + flags
                     + ["--tool", "crates/aoi-cli/tests/data/mcp/hostile.py"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}}

if http:
    line = p.stderr.readline().decode()
    url = line.split("listening on ")[1].strip()
    session = {}

    def post(message):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18", **session}
        request = urllib.request.Request(url, json.dumps(message).encode(), headers)
        with urllib.request.urlopen(request) as r:
            if "Mcp-Session-Id" in r.headers:
                session["Mcp-Session-Id"] = r.headers["Mcp-Session-Id"]
            body = r.read()
        data = [l[5:].strip() for l in body.decode().splitlines() if l.startswith("data:")]
        return next((d for d in data if d), "")

    post(init)
    post(initialized)
    line = post(call).encode()
else:
    def send(m):
        p.stdin.write((json.dumps(m) + "\n").encode())
        p.stdin.flush()
    send(init)
    p.stdout.readline()
    send(initialized)
    send(call)
    line = p.stdout.readline()

r = json.loads(line)["result"]
print("bytes", len(line), "isError", r.get("isError"), r["content"][0]["text"][:300],
      "events", len(r["structuredContent"]["events"]),
      "struct-bytes", len(json.dumps(r["structuredContent"], separators=(",", ":"))))
if http:
    # /usr/bin/time's child is aoi: stop it, then read time's report.
    subprocess.run(["pkill", "-TERM", "-P", str(p.pid)])
p.stdin.close()
err = p.stderr.read().decode()
p.wait()
print([l.strip() for l in err.splitlines() if "Maximum resident" in l or "Elapsed" in l])
