#!/usr/bin/env python3
"""conformance: a Machine Mode CLI in plain Python (standard library only, no SDK, no `x-aoi`)
whose commands are the tools the MCP conformance suite's server scenarios call, as far as a
CLI can express them (crates/aoi-cli/tests/it/mcp_conformance.rs serves it through
`aoi mcp --listen` and runs the suite against it).

- `test_simple_text`: one `text` event, "This is a simple text response for testing."
- `test_error_handling`: a process-level aoi:error (internal, not retryable), ok:false, exit 70.
- `test_tool_with_progress`: aoi:progress 0, 50 and 100 of 100, 50 ms apart, then a `text`.
- `test_reconnection`: a `text` after 300 ms (the suite's SSE scenario closes and resumes the
  HTTP stream around it; the command only has to take a while and succeed).
- `json_schema_2020_12_tool`: takes `--name`, `--address` (a JSON object: street, city),
  `--contactMethod` (phone or email), `--phone` and `--email`; its input schema is the one the
  suite's json-schema-2020-12 scenario names (`$schema`, `$defs` with an `$anchor`,
  `additionalProperties: false`, `allOf`/`anyOf`, `if`/`then`/`else`), and the command keeps
  what it says: a phone or an email, the phone when the contact method is phone.
- `test_logging_tool`: writes a diagnostic line on stderr and an aoi:warning, then a `text`;
  the suite checks that the adapter sends no `notifications/message` for it (MCP logging is not
  a capability aoi mcp declares).
- `test_custom_header`: takes `--region`, a property annotated `x-mcp-header: Region`, whose
  value a 2026-07-28 client also sends as the `Mcp-Param-Region` header (SEP-2243); the suite
  checks that the server holds the header to the argument.

Discovery follows docs/discovery.md: `capabilities`, `schema` and `input-schema --command NAME`
print one JSON document each; every command takes `--output jsonl|human` and `--help`; a usage
error exits 64 (in machine mode with a `usage` aoi:error). Flags are spelled by the convention
(`--name`, `--address`), so the input schemas need no `x-aoi`.
"""

import contextlib
import json
import os
import signal
import sys
import time

sys.dont_write_bytecode = True

TOOL = "conformance"
VERSION = "0.1.0"
AOI_VERSION = "1.0-alpha"
SCHEMA_NAME = "io.machinemode.tests.conformance"
SCHEMA_VERSION = "1.0.0"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
IDENTITY = {"tool": TOOL, "tool_version": VERSION, "aoi_version": AOI_VERSION,
            "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}

SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"

FRAMEWORK = ["aoi:meta", "aoi:error", "aoi:summary"]

COMMANDS = [
    {"name": "test_simple_text", "summary": "Returns a fixed line of text",
     "event_types": ["aoi:meta", "text", "aoi:summary"], "examples": [["test_simple_text"]]},
    {"name": "test_error_handling", "summary": "Always fails, with an internal error",
     "event_types": FRAMEWORK, "examples": [["test_error_handling"]]},
    {"name": "test_tool_with_progress", "summary": "Reports progress 0, 50 and 100 of 100",
     "event_types": ["aoi:meta", "aoi:progress", "text", "aoi:summary"],
     "examples": [["test_tool_with_progress"]]},
    {"name": "test_reconnection", "summary": "Takes 300 ms, then returns a line of text",
     "event_types": ["aoi:meta", "text", "aoi:summary"], "examples": [["test_reconnection"]]},
    {"name": "json_schema_2020_12_tool",
     "summary": "Echoes a name and an address, through an input schema with $defs",
     "event_types": ["aoi:meta", "text", "aoi:error", "aoi:summary"],
     "examples": [["json_schema_2020_12_tool", "--name", "Ada", "--email", "ada@example.org"]]},
    {"name": "test_logging_tool", "summary": "Writes a diagnostic line and a warning, then text",
     "event_types": ["aoi:meta", "aoi:warning", "text", "aoi:summary"],
     "examples": [["test_logging_tool"]]},
    {"name": "test_custom_header", "summary": "Echoes a region that is also an HTTP header",
     "event_types": ["aoi:meta", "text", "aoi:summary"],
     "examples": [["test_custom_header", "--region", "eu-west-1"]]},
]

CAPABILITIES = {
    "tool": TOOL,
    "tool_version": VERSION,
    "aoi_versions": [AOI_VERSION],
    "outputs": ["jsonl"],
    "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
    "commands": [dict({"read_only": True, "destructive": False, "requires_confirm": False,
                       "supports_dry_run": False, "supports_idempotency_key": False,
                       "bounded": True, "supports_cursor": False, "input_modes": ["args"]},
                      **c) for c in COMMANDS],
}

SCHEMA = {
    "$schema": DIALECT,
    "$id": "https://machinemode.io/schemas/tests/conformance/1.0.0.json",
    "title": "conformance events",
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "allOf": [{"if": {"properties": {"type": {"const": "text"}}, "required": ["type"]},
               "then": {"$ref": "#/$defs/text"}}],
    "$defs": {"text": {"type": "object", "required": ["text"],
                       "properties": {"text": {"type": "string",
                                               "description": "What the command says"}}}},
}

OUTPUT = {"type": "string", "enum": ["human", "jsonl"], "default": "human",
          "description": "human (default) or jsonl (machine mode)"}


def input_schema(command):
    schema = {"$schema": DIALECT, "title": "%s %s" % (TOOL, command), "type": "object",
              "properties": {"output": OUTPUT}, "additionalProperties": False}
    if command == "json_schema_2020_12_tool":
        schema["$defs"] = {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}}
        schema["properties"].update({
            "name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"}, "email": {"type": "string"}})
        schema["allOf"] = [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}]
        schema["if"] = {"properties": {"contactMethod": {"const": "phone"}},
                        "required": ["contactMethod"]}
        schema["then"] = {"required": ["phone"]}
        schema["else"] = {"required": ["email"]}
    elif command == "test_custom_header":
        schema["properties"]["region"] = {"type": "string", "x-mcp-header": "Region",
                                          "description": "Where the request is served"}
        schema["required"] = ["region"]
    return schema


OPTIONS = {"json_schema_2020_12_tool": {"name", "address", "contactMethod", "phone", "email"},
           "test_custom_header": {"region"}}


def contact_problem(opts):
    """What the json_schema_2020_12_tool's allOf and if/then/else refuse in `opts`, or None."""
    method = opts.get("contactMethod")
    if method is not None and method not in ("phone", "email"):
        return "--contactMethod takes phone or email, not %r" % method
    if method == "phone" and "phone" not in opts:
        return "--contactMethod phone needs --phone"
    if method != "phone" and "email" not in opts:
        return "--email is required unless --contactMethod is phone"
    return None


class Cancelled(BaseException):
    """SIGINT or SIGTERM arrived: the run ends with reason cancelled."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, _frame):
    raise Cancelled(signum)


def set_signals(handler):
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


class Stream:
    """One run's machine-mode stdout: numbered lines, a run id, counters for the summary."""

    def __init__(self, command):
        self.seq = 0
        self.run = "01CONF%020d" % (os.getpid() * 1000003 + int(time.time() * 1000))
        self.count = 0
        self.warnings = 0
        self.errors = 0
        self.write(dict({"type": "aoi:meta", "command": command}, **IDENTITY))

    def write(self, event):
        event = dict(event, aoi={"seq": self.seq, "run": self.run})
        self.seq += 1
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def text(self, text):
        self.count += 1
        self.write({"type": "text", "text": text})

    def error(self, category, code, message):
        self.errors += 1
        self.write({"type": "aoi:error", "scope": "process", "category": category, "code": code,
                    "message": message, "retryable": False})

    def summary(self, ok, reason="failed"):
        event = {"type": "aoi:summary", "ok": ok, "event_count": self.seq + 1,
                 "count": self.count, "warning_count": self.warnings, "error_count": self.errors,
                 "partial": False, "truncated": False}
        if not ok:
            event["reason"] = reason
        self.write(dict(event, **IDENTITY))


def usage(machine, message):
    """A usage error: exit 64, with an aoi:error in machine mode."""
    if machine:
        out = Stream("usage")
        out.error("usage", "USAGE", message)
        out.summary(False)
    else:
        sys.stderr.write("conformance: %s\n" % message)
    return 64


def parse(argv):
    """Words and options: `--flag VALUE`, `--flag=VALUE`, bare `--help`; operands after `--`."""
    words, opts = [], {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            words.extend(argv[i + 1:])
            break
        if a in ("--help", "-h"):
            opts["help"] = True
        elif a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if not eq:
                if i + 1 >= len(argv):
                    raise ValueError("--%s needs a value" % name)
                i += 1
                value = argv[i]
            opts[name.replace("-", "_")] = value
        else:
            words.append(a)
        i += 1
    return words, opts


def main():
    try:
        words, opts = parse(sys.argv[1:])
    except ValueError as e:
        argv = sys.argv[1:]
        machine = "--output=jsonl" in argv or any(
            a == "--output" and b == "jsonl" for a, b in zip(argv, argv[1:]))
        return usage(machine, str(e))
    output = opts.pop("output", "human")
    machine = output == "jsonl"
    documents = ("capabilities", "schema", "input-schema")
    document = len(words) == 1 and words[0] in documents
    if output not in ("human", "jsonl") and not (output == "json" and document):
        return usage(False, "--output takes human or jsonl (json for %s), not %r"
                     % (", ".join(documents), output))
    names = [c["name"] for c in COMMANDS]
    if opts.pop("help", False):
        sys.stdout.write("usage: conformance COMMAND [--output human|jsonl]\n\ncommands:\n")
        for c in COMMANDS:
            sys.stdout.write("  %-26s %s\n" % (c["name"], c["summary"]))
        return 0
    if words == ["capabilities"]:
        print(json.dumps(CAPABILITIES))
        return 0
    if words == ["schema"]:
        print(json.dumps(SCHEMA))
        return 0
    if words == ["input-schema"]:
        command = opts.get("command")
        if command not in names:
            return usage(machine, "input-schema --command takes one of %s" % ", ".join(names))
        print(json.dumps(input_schema(command)))
        return 0
    if len(words) != 1 or words[0] not in names:
        return usage(machine, "unknown command %r" % " ".join(words))
    command = words[0]
    unknown = sorted(set(opts) - OPTIONS.get(command, set()))
    if unknown:
        return usage(machine, "%s takes no --%s" % (command, unknown[0].replace("_", "-")))
    if command == "test_custom_header" and "region" not in opts:
        return usage(machine, "test_custom_header needs --region")
    if command == "json_schema_2020_12_tool" and contact_problem(opts):
        return usage(machine, contact_problem(opts))
    if command == "json_schema_2020_12_tool" and "address" in opts:
        try:
            address = json.loads(opts["address"])
            if not isinstance(address, dict):
                raise ValueError("not an object")
        except ValueError:
            return usage(machine, "--address takes a JSON object with street and city")
        opts["address"] = address

    if not machine:
        return human(command, opts)
    out = Stream(command)
    try:
        return run(command, opts, out)
    except Cancelled as c:
        set_signals(signal.SIG_IGN)
        out.summary(False, reason="cancelled")
        return 128 + int(c.signum)


def run(command, opts, out):
    """Runs `command` in machine mode on `out`; its exit status."""
    if command == "test_simple_text":
        out.text(SIMPLE_TEXT)
    elif command == "test_error_handling":
        out.error("internal", "INTENTIONAL_ERROR", ERROR_TEXT)
        set_signals(signal.SIG_IGN)
        out.summary(False)
        return 70
    elif command == "test_tool_with_progress":
        for step, done in enumerate((0, 50, 100)):
            if step:
                time.sleep(0.05)
            out.write({"type": "aoi:progress", "completed": done, "total": 100})
        out.text("Progress reported: 0, 50 and 100 of 100")
    elif command == "test_reconnection":
        time.sleep(0.3)
        out.text("Reconnection test completed")
    elif command == "json_schema_2020_12_tool":
        out.text(json.dumps({key: opts.get(key) for key in sorted(OPTIONS[command])}))
    elif command == "test_logging_tool":
        sys.stderr.write("conformance: a diagnostic line, for stderr only\n")
        out.warnings += 1
        out.write({"type": "aoi:warning", "code": "DIAGNOSTIC", "message": "a recoverable issue"})
        out.text("Logged nothing to the client")
    elif command == "test_custom_header":
        out.text("region: %s" % opts["region"])
    set_signals(signal.SIG_IGN)
    out.summary(True)
    return 0


def human(command, opts):
    if command == "test_error_handling":
        sys.stderr.write("conformance: %s\n" % ERROR_TEXT)
        return 70
    if command == "test_tool_with_progress":
        time.sleep(0.1)
        print("Progress reported: 0, 50 and 100 of 100")
    elif command == "test_reconnection":
        time.sleep(0.3)
        print("Reconnection test completed")
    elif command == "json_schema_2020_12_tool":
        keys = sorted(OPTIONS[command])
        print(", ".join("%s: %s" % (key, json.dumps(opts.get(key))) for key in keys))
    elif command == "test_logging_tool":
        sys.stderr.write("conformance: a diagnostic line, for stderr only\n")
        print("Logged nothing to the client")
    elif command == "test_custom_header":
        print("region: %s" % opts["region"])
    else:
        print(SIMPLE_TEXT)
    return 0


def quiet_exit():
    """After a closed pipe: no more output, no stack trace, exit 141 (SIGPIPE's status)."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    return 141


if __name__ == "__main__":
    set_signals(on_signal)
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        code = quiet_exit()
    except Cancelled as c:  # before the stream started, or in human mode
        code = 128 + int(c.signum)
    sys.exit(code)
