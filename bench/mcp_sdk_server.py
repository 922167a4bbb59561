"""The peer for bench/mcp.sh: an MCP server on the official Python SDK (`mcp` on PyPI, 2.x, where
FastMCP is called MCPServer) with one tool, `search`, that does what `aoi mcp` does for a call:
spawn `outline search QUERY --limit N --output jsonl`, read all of its output, parse each line
and return the events and the summary as structured content.

    python3 bench/mcp_sdk_server.py PATH/TO/outline
"""
import json
import subprocess
import sys

from mcp.server.mcpserver import MCPServer

OUTLINE = sys.argv[1]
app = MCPServer("outline-py")


@app.tool()
def search(query: str, limit: int = 20) -> dict:
    """Full-text search over the documents"""
    run = subprocess.run(
        [OUTLINE, "search", query, f"--limit={limit}", "--output", "jsonl"],
        stdin=subprocess.DEVNULL, capture_output=True, check=False,
    )
    events, summary = [], None
    for line in run.stdout.splitlines():
        event = json.loads(line)
        kind = event.get("type")
        if kind == "aoi:summary":
            summary = event
        elif kind != "aoi:meta":
            events.append(event)
    return {"events": events, "summary": summary, "exit_code": run.returncode}


if __name__ == "__main__":
    app.run()
