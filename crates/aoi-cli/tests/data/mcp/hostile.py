#!/usr/bin/env python3
"""hostile: a Machine Mode CLI whose discovery is honest and whose commands attack the adapter
in front of it, to test that `aoi mcp` keeps its limits (crates/aoi-cli/tests/it/mcp_calls.rs).

Every command takes `--tag T`: each process it starts carries T in its argv, so a test can find
what is left of a call.

- `hang`: writes aoi:meta, starts a helper in its own group and one in its own session
  (`setsid`), both holding stdout, ignores SIGTERM and SIGINT, writes an aoi:progress once
  both run, and never ends.
- `detach`: starts a `setsid` helper holding stdout, then a correct run (ok:true) and exit 0.
- `flood`: valid events, as fast as it can, forever. `huge`: 500 MB of valid events, then a summary.
- `hugeline`: one 300 MB line (a note), then a summary. `hugecut`: 300 MB with no newline, exit 0.
- `deep`: a line of 1,000,000 `[`, then a summary. `deepobject`: a line of 600,000 `{"a":` (3 MB,
  under the default `--max-output`), then a summary.
- `garbageflood`: 500,000 lines that are not JSON, then a summary.
- `misfitflood`: 4,000 notes whose `text` is a 4 KB array, not a string, then ok:true.
  `errorflood` (not read-only): 8,000 item-scope aoi:errors with 4 KB of `details`, then
  ok:false.
- `badevents`: an array line, an object without `type`, a `note` that breaks the schema, a good
  note, then ok:true. `garbage`: lines that are not JSON. `nosummary`: no aoi:summary.
- `progress`: 2,000 aoi:progress steps, every 10th repeating the value before it (not increasing).
- `unknowncat`: an aoi:error of a category v1.0-alpha does not know, retryable:true.
- `watch`: unbounded; a note every 20 ms until SIGINT, then ok:false reason:cancelled.
- `write`: not read-only, takes an idempotency key; hangs.
- `helper`: what the others start: sleeps.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True

TOOL = "hostile"
VERSION = "0.1.0"
SCHEMA_NAME = "io.machinemode.tests.hostile"
SCHEMA_VERSION = "1.0.0"
RUN = "01M8P000000000000000000001"
IDENTITY = {"tool": TOOL, "tool_version": VERSION, "aoi_version": "1.0-alpha",
            "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}

READ_ONLY = ["hang", "detach", "flood", "huge", "badevents", "garbage", "nosummary", "progress",
             "unknowncat", "hugeline", "hugecut", "deep", "deepobject", "garbageflood",
             "misfitflood"]

CAPABILITIES = {
    "tool": TOOL,
    "tool_version": VERSION,
    "aoi_versions": ["1.0-alpha"],
    "outputs": ["jsonl"],
    "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
    "commands": [{"name": n, "read_only": True, "event_types": ["note"]} for n in READ_ONLY]
    + [{"name": "watch", "read_only": True, "unbounded": True, "event_types": ["note"]},
       {"name": "errorflood", "read_only": False, "event_types": ["note"]},
       {"name": "write", "read_only": False, "supports_idempotency_key": True,
        "event_types": ["note"]}]
    + [{"name": n, "read_only": True} for n in ("schema", "input-schema", "capabilities")],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "allOf": [{"if": {"properties": {"type": {"const": "note"}}, "required": ["type"]},
               "then": {"$ref": "#/$defs/note"}}],
    "$defs": {"note": {"type": "object", "required": ["text"],
                       "properties": {"text": {"type": "string"}}}},
    "x-aoi": {"schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION},
}


def input_schema(command):
    props = {"output": {"type": "string", "enum": ["human", "jsonl"]}, "tag": {"type": "string"}}
    flags = {"output": "--output", "tag": "--tag"}
    if command == "write":
        props["idempotency_key"] = {"type": "string"}
        flags["idempotency_key"] = "--idempotency-key"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": props, "additionalProperties": False, "x-aoi": {"flags": flags}}


class Stream:
    def __init__(self, command):
        self.seq = 0
        self.write(dict({"type": "aoi:meta", "command": command}, **IDENTITY))

    def line(self, event):
        event = dict(event, aoi={"seq": self.seq, "run": RUN})
        self.seq += 1
        return json.dumps(event, separators=(",", ":")) + "\n"

    def write(self, event):
        sys.stdout.write(self.line(event))
        sys.stdout.flush()

    def summary(self, ok, **fields):
        base = {"type": "aoi:summary", "ok": ok, "event_count": self.seq + 1, "count": 0,
                "warning_count": 0, "error_count": 0, "partial": False}
        if not ok:
            base["reason"] = fields.pop("reason", "failed")
        base.update(fields)
        self.write(dict(base, **IDENTITY))


def helper(tag, session):
    """A sleeping helper that inherits stdout; in its own session when `session`."""
    argv = [sys.executable, os.path.abspath(__file__), "helper", "--tag", tag]
    if session:
        argv = ["setsid"] + argv
    return subprocess.Popen(argv)


def main():
    words, opts = [], {}
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
            opts[key] = value
        elif a in ("--output", "--format", "--command", "--tag", "--idempotency-key"):
            opts[a] = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif a != "--":
            words.append(a)
        i += 1
    tag = opts.get("--tag", "untagged")
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
    if command == "helper":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        while True:
            time.sleep(1)
    if command in ("hang", "write"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        out = Stream(command)
        if command == "hang":
            helper(tag, session=False)
            helper(tag, session=True)
            # Both helpers run: a client that asked for progress knows when to act.
            out.write({"type": "aoi:progress", "completed": 1, "message": "helpers started"})
        while True:
            time.sleep(1)
    if command == "detach":
        helper(tag, session=True)
        out = Stream(command)
        out.write({"type": "note", "text": "done; a helper keeps stdout open"})
        out.summary(True, count=1)
        return 0
    if command in ("flood", "huge"):
        out = Stream(command)
        note = {"type": "note", "text": "x" * 200}
        written = 0
        while command == "flood" or written < 500_000_000:
            block = "".join(out.line(note) for _ in range(1000))
            sys.stdout.write(block)
            written += len(block)
        out.summary(True, count=written // 250)
        return 0
    if command in ("hugeline", "hugecut"):
        out = Stream(command)
        mb = b"x" * (1 << 20)
        sys.stdout.buffer.write(b'{"type":"note","aoi":{"seq":%d,"run":"%s"},"text":"'
                                % (out.seq, RUN.encode()))
        for _ in range(300):
            sys.stdout.buffer.write(mb)
        if command == "hugecut":
            sys.stdout.buffer.flush()
            return 0
        sys.stdout.buffer.write(b'"}\n')
        sys.stdout.buffer.flush()
        out.seq += 1
        out.summary(True, count=1)
        return 0
    if command in ("deep", "deepobject"):
        out = Stream(command)
        sys.stdout.buffer.write(b"[" * 1_000_000 if command == "deep" else b'{"a":' * 600_000)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()
        out.seq += 1
        out.summary(True)
        return 0
    if command == "garbageflood":
        out = Stream(command)
        block = b"this is not json\n" * 10_000
        for _ in range(50):
            sys.stdout.buffer.write(block)
        sys.stdout.buffer.flush()
        out.seq += 500_000
        out.summary(True)
        return 0
    if command in ("misfitflood", "errorflood"):
        out = Stream(command)
        if command == "misfitflood":
            event = {"type": "note", "text": ["x" * 4000]}
        else:
            event = {"type": "aoi:error", "scope": "item", "category": "not_found",
                     "code": "GONE", "message": "the item is gone", "retryable": False,
                     "details": {"pad": "x" * 4000}}
        lines = 4_000 if command == "misfitflood" else 8_000
        for _ in range(lines // 1000):
            sys.stdout.write("".join(out.line(event) for _ in range(1000)))
        if command == "misfitflood":
            out.summary(True, count=lines)
            return 0
        out.summary(False, error_count=lines)
        return 1
    if command == "badevents":
        out = Stream(command)
        sys.stdout.write("[1,2,3]\n")
        out.seq += 1
        out.write({"text": "an object without type"})
        out.write({"type": "note", "text": 5})
        out.write({"type": "note", "text": "a good note"})
        out.summary(True, count=2)
        return 0
    if command == "garbage":
        sys.stdout.write("this is not json\n<html>nor this</html>\n")
        sys.stdout.flush()
        return 0
    if command == "nosummary":
        out = Stream(command)
        out.write({"type": "note", "text": "and then nothing"})
        return 0
    if command == "progress":
        out = Stream(command)
        value = 0
        for step in range(2000):
            if step % 10 != 9:
                value += 1
            out.write({"type": "aoi:progress", "completed": value, "total": 1800,
                       "message": "step %d" % step})
        out.summary(True)
        return 0
    if command == "unknowncat":
        out = Stream(command)
        out.write({"type": "aoi:error", "scope": "process", "category": "quota_exhausted",
                   "code": "QUOTA", "message": "the monthly quota is spent", "retryable": True})
        out.summary(False, error_count=1)
        return 75
    if command == "watch":
        out = Stream(command)
        stop = []
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        n = 0
        while not stop:
            out.write({"type": "note", "text": "tick %d" % n})
            n += 1
            time.sleep(0.02)
        out.summary(False, reason="cancelled", count=n)
        return 130
    sys.stderr.write("hostile: unknown command %r\n" % command)
    return 64


if __name__ == "__main__":
    sys.exit(main())
