#!/usr/bin/env python3
"""badcli: a Machine Mode CLI whose discovery is honest and whose commands misbehave, to test
what `aoi mcp` makes of each (crates/aoi-cli/tests/it/mcp.rs).

- `unavailable`: a conforming failure: a process aoi:error, unavailable, retryable, with
  retry_after_ms, then a summary with ok:false.
- `nosummary`: a valid start, then the stream ends without aoi:summary (exit 0).
- `garbage`: prints lines that are not JSON (exit 0).
- `hang`: starts a grandchild in its own process group, writes both pids to `--pidfile`, then
  never ends and ignores SIGTERM and SIGINT.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True

TOOL = "badcli"
VERSION = "0.1.0"
SCHEMA_NAME = "io.machinemode.tests.badcli"
SCHEMA_VERSION = "1.0.0"
RUN = "01M8P000000000000000000000"
IDENTITY = {"tool": TOOL, "tool_version": VERSION, "aoi_version": "1.0-alpha",
            "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}

MISBEHAVING = ["unavailable", "nosummary", "garbage", "hang"]

CAPABILITIES = {
    "tool": TOOL,
    "tool_version": VERSION,
    "aoi_versions": ["1.0-alpha"],
    "outputs": ["jsonl"],
    "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
    "commands": [{"name": name, "read_only": True, "event_types": ["note"]} for name in MISBEHAVING]
    + [{"name": n, "read_only": True} for n in ("schema", "input-schema", "capabilities")],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "x-aoi": {"schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION},
}


def input_schema(command):
    props = {"output": {"type": "string", "enum": ["human", "jsonl"]}}
    flags = {"output": "--output"}
    if command == "hang":
        props["pidfile"] = {"type": "string"}
        flags["pidfile"] = "--pidfile"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": props, "additionalProperties": False, "x-aoi": {"flags": flags}}


class Stream:
    def __init__(self, command):
        self.seq = 0
        self.write(dict({"type": "aoi:meta", "command": command}, **IDENTITY))

    def write(self, event):
        event = dict(event, aoi={"seq": self.seq, "run": RUN})
        self.seq += 1
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def main():
    words, opts = [], {}
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
            opts[key] = value
        elif a in ("--output", "--format", "--command", "--pidfile"):
            opts[a] = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif a != "--":
            words.append(a)
        i += 1
    if words == ["capabilities"]:
        print(json.dumps(CAPABILITIES))
        return 0
    if words == ["schema"]:
        print(json.dumps(SCHEMA))
        return 0
    if words == ["input-schema"]:
        print(json.dumps(input_schema(opts.get("--command"))))
        return 0
    command = " ".join(words)
    if command == "unavailable":
        out = Stream(command)
        error = {"type": "aoi:error", "scope": "process", "category": "unavailable",
                 "code": "BACKEND_DOWN", "message": "the backend is restarting",
                 "retryable": True, "retry_after_ms": 1500}
        out.write(error)
        out.write(dict({"type": "aoi:summary", "ok": False, "reason": "failed",
                        "event_count": 3, "count": 0, "warning_count": 0, "error_count": 1,
                        "partial": False}, **IDENTITY))
        return 69
    if command == "nosummary":
        out = Stream(command)
        out.write({"type": "note", "text": "and then nothing"})
        return 0
    if command == "garbage":
        sys.stdout.write("this is not json\n<html>nor this</html>\n")
        sys.stdout.flush()
        return 0
    if command == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        grandchild = subprocess.Popen(["sleep", "300"])
        with open(opts["--pidfile"], "w") as f:
            f.write("%d %d\n" % (os.getpid(), grandchild.pid))
        Stream(command)
        while True:
            time.sleep(1)
    sys.stderr.write("badcli: unknown command %r\n" % command)
    return 64


if __name__ == "__main__":
    sys.exit(main())
