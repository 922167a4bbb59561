"""A tiny Machine Mode tool written by hand, without the aoi SDK: the shared body of the
Python tools of aoi lint's corpus. `main(fault)` runs it with one fault switched on:

- None: conforming.
- "pipe-trace": a closed pipe is not handled, so Python prints a traceback (check 10).
- "no-seq": events carry no `aoi` envelope, so there is no aoi.seq (check 15).
"""

import json
import os
import random
import signal
import sys
import time

TOOL = "py-minitool"
VERSION = "0.1.0"
SCHEMA_NAME = "io.machinemode.tests.py-minitool"
SCHEMA_VERSION = "1.0.0"
ITEMS = ["apple", "banana", "cherry", "damson"]

CAPABILITIES = {
    "tool": TOOL,
    "tool_version": VERSION,
    "aoi_versions": ["1.0-alpha"],
    "outputs": ["human", "jsonl"],
    "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
    "commands": [
        {"name": "list", "read_only": True, "bounded": True, "supports_cursor": True,
         "event_types": ["fruit"], "examples": [["list", "--limit", "2"]]},
        {"name": "watch", "read_only": True, "unbounded": True,
         "event_types": ["aoi:heartbeat"], "examples": [["watch"]]},
        {"name": "schema", "read_only": True},
        {"name": "input-schema", "read_only": True},
        {"name": "capabilities", "read_only": True},
    ],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://schemas.machinemode.io/tests/py-minitool.json",
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "x-aoi": {"schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION},
}


def input_schema(command):
    props, flags = {}, {}
    if command == "list":
        props = {"limit": {"type": "integer", "minimum": 1}, "cursor": {"type": "string"}}
        flags = {"limit": "--limit", "cursor": "--cursor"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": props,
        "additionalProperties": False,
        "x-aoi": {"flags": flags},
    }


class Stream:
    def __init__(self, command, fault):
        self.fault = fault
        self.run = "".join(random.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(26))
        self.seq = 0
        self.domain = 0
        self.identity = {"tool": TOOL, "tool_version": VERSION, "aoi_version": "1.0-alpha",
                         "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}
        self.write(dict({"type": "aoi:meta"}, command=command, **self.identity))

    def write(self, event):
        if self.fault != "no-seq":
            event = dict(event)
            event["aoi"] = {"seq": self.seq, "run": self.run}
        self.seq += 1
        if not event["type"].startswith("aoi:"):
            self.domain += 1
        line = json.dumps(event, separators=(",", ":")) + "\n"
        if self.fault == "pipe-trace":
            sys.stdout.write(line)
            sys.stdout.flush()
            return
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except BrokenPipeError:
            # Quietly, with the status a shell gives a process ended by SIGPIPE.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(141)

    def summary(self, ok=True, reason=None, **fields):
        event = {"type": "aoi:summary", "ok": ok}
        if reason:
            event["reason"] = reason
        event.update({"event_count": self.seq + 1, "count": self.domain, "warning_count": 0,
                      "error_count": 0, "partial": False})
        event.update(fields)
        event.update(self.identity)
        self.write(event)


def usage(message):
    sys.stderr.write("error: %s\n" % message)
    sys.exit(64)


def main(fault=None):
    args = sys.argv[1:]
    output, words, opts = "human", [], {}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--output", "--format", "--limit", "--cursor", "--command"):
            if i + 1 >= len(args):
                usage("%s needs a value" % a)
            opts[a] = args[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            usage("unknown flag %s" % a.split("=")[0])
        words.append(a)
        i += 1
    output = opts.get("--output", opts.get("--format", "human"))
    if words == ["capabilities"]:
        print(json.dumps(CAPABILITIES))
        return 0
    if words == ["schema"]:
        print(json.dumps(SCHEMA))
        return 0
    if words == ["input-schema"]:
        print(json.dumps(input_schema(opts.get("--command"))))
        return 0
    if words == ["list"]:
        try:
            limit = int(opts.get("--limit", "20"))
            start = int(opts.get("--cursor", "0"))
        except ValueError:
            usage("--limit and --cursor take numbers")
        if limit < 1:
            usage("--limit must be at least 1")
        page = ITEMS[start:start + limit]
        more = start + limit < len(ITEMS)
        if output == "human":
            for name in page:
                print(name)
            return 0
        out = Stream("list", fault)
        for n, name in enumerate(page):
            out.write({"type": "fruit", "id": "fruit-%d" % (start + n + 1), "name": name})
        if more:
            out.summary(truncated=True, next_cursor=str(start + limit))
        else:
            out.summary(truncated=False)
        return 0
    if words == ["watch"]:
        if output == "human":
            usage("watch speaks machine mode only: add --output jsonl")
        out = Stream("watch", fault)

        def cancelled(signum, _frame):
            out.summary(ok=False, reason="cancelled")
            sys.exit(130 if signum == signal.SIGINT else 143)

        signal.signal(signal.SIGINT, cancelled)
        signal.signal(signal.SIGTERM, cancelled)
        while True:
            out.write({"type": "aoi:heartbeat", "interval_ms": 50})
            time.sleep(0.05)
    usage("unknown command %r" % " ".join(words))
