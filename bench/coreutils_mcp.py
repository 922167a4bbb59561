"""Per-call latency of two filesystem MCP servers on the same tree, in one run.

    python3 bench/coreutils_mcp.py ROOT AOI AOI_COREUTILS FS_SERVER_JS [N]

Server A is ``AOI mcp --root ROOT --no-cache -- AOI_COREUTILS``; server B is the official
``@modelcontextprotocol/server-filesystem`` (``node FS_SERVER_JS ROOT``). Both speak MCP over
stdio to this client (standard library only: one JSON-RPC line out, lines in until the
response). For each of list, read and search, the same request is made N times (default 30)
alternating A and B after two warm-up calls each, and the median and p90 wall time of a round
trip are printed, with each server's tools/list size and tool names.

The calls (the closest each server offers):
- list:   A ``ls {paths: [ROOT/src]}``;            B ``list_directory {path: ROOT/src}``
- read:   A ``cat {files: [ROOT/src/big.txt]}``;   B ``read_text_file {path: ROOT/src/big.txt}``
- search: A ``grep {pattern: "needle", paths: [ROOT]}`` (file contents);
          B ``search_files {path: ROOT, pattern: "**/*needle*"}`` (names only: B has no
          content search).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List


class Server:
    def __init__(self, argv: List[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "coreutils_mcp", "version": "0"}})
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def rpc(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"server ended during {method}")
            msg = json.loads(line)
            if msg.get("id") == rid:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return dict(msg["result"])

    def call(self, tool: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        result = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{tool} failed: {json.dumps(result)[:400]}")
        return result

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def main() -> None:
    root, aoi, coreutils, fs_js = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    a = Server([aoi, "mcp", "--root", root, "--no-cache", "--", coreutils])
    b = Server(["node", fs_js, root])
    for name, s in (("aoi mcp -- aoi-coreutils", a), ("server-filesystem", b)):
        listing = s.rpc("tools/list", {})
        size = len(json.dumps(listing, separators=(",", ":")))
        names = sorted(t["name"] for t in listing["tools"])
        print(f"{name}: {len(names)} tools, tools/list {size} bytes: {' '.join(names)}")
    calls = {
        "list": ((a, "ls", {"paths": [f"{root}/src"]}), (b, "list_directory", {"path": f"{root}/src"})),
        "read": ((a, "cat", {"files": [f"{root}/src/big.txt"]}),
                 (b, "read_text_file", {"path": f"{root}/src/big.txt"})),
        "search": ((a, "grep", {"pattern": "needle", "paths": [root]}),
                   (b, "search_files", {"path": root, "pattern": "**/*needle*"})),
    }
    print(f"{'call':8} {'aoi median ms':>14} {'aoi p90':>8} {'fs median ms':>13} {'fs p90':>7} {'aoi bytes':>10} {'fs bytes':>9}")
    for label, ((sa, ta, aa), (sb, tb, ab)) in calls.items():
        times: Dict[int, List[float]] = {0: [], 1: []}
        sizes = [0, 0]
        for i in range(n + 2):
            for k, (s, t, args) in enumerate(((sa, ta, aa), (sb, tb, ab))):
                start = time.perf_counter()
                result = s.call(t, args)
                elapsed = time.perf_counter() - start
                if i >= 2:
                    times[k].append(elapsed * 1000)
                sizes[k] = len(json.dumps(result, separators=(",", ":")))

        def p90(xs: List[float]) -> float:
            return sorted(xs)[int(len(xs) * 0.9) - 1]

        print(f"{label:8} {statistics.median(times[0]):14.2f} {p90(times[0]):8.2f} "
              f"{statistics.median(times[1]):13.2f} {p90(times[1]):7.2f} {sizes[0]:10} {sizes[1]:9}")
    a.close()
    b.close()


if __name__ == "__main__":
    main()
