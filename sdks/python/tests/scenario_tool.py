"""The Python half of the same-bytes corpus (``tests/scenarios/*.json`` at the repository root).

Makes the calls a scenario lists through ``machinemode``'s public API (:class:`Emitter`,
:func:`machinemode.harness.run`, :class:`AoiError`, :class:`Outcome`, the idempotency
replay), as ``crates/aoi/examples/scenario.rs`` makes them through the Rust SDK;
``test_scenarios.py`` holds the two streams to the same bytes. The format is in
``tests/scenarios/README.md``. ``python scenario_tool.py FILE``; a scenario it cannot read
exits 2 before any stream, with one line on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any, Callable, Dict, List, NoReturn, Tuple

from machinemode import AoiError, Emitter, Identity
from machinemode.harness import Outcome, run, stdout_stream
from machinemode.idempotency import Idempotency, IdempotencyRecord

BAD_SCENARIO = 2

Call = Callable[[Emitter], None]


class ScenarioError(Exception):
    """The scenario does not follow the format."""


class Fields:
    """One object of the scenario, its fields taken one by one; any left over is an error."""

    def __init__(self, what: str, value: Any) -> None:
        if not isinstance(value, dict):
            raise ScenarioError(f"{what} is not an object")
        self.what = what
        self.rest = dict(value)

    def take(self, key: str, kind: Any = None, default: Any = None) -> Any:
        if key not in self.rest:
            return default
        value = self.rest.pop(key)
        if kind is not None:
            bad = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
            if bad or (kind is int and value < 0):
                raise ScenarioError(f"{self.what}.{key} is not {getattr(kind, '__name__', kind)}")
        return value

    def required(self, key: str, kind: Any = str) -> Any:
        if key not in self.rest:
            raise ScenarioError(f"{self.what} needs {key}")
        return self.take(key, kind)

    def done(self) -> None:
        if self.rest:
            raise ScenarioError(f"{self.what} has an unknown field {next(iter(self.rest))!r}")


_ERROR_KEYS: Tuple[Tuple[str, Any], ...] = (
    ("retryable", bool), ("retry_after_ms", int), ("domain", str), ("origin", str),
    ("target", str), ("item_index", int), ("line_number", int), ("field", str),
    ("wrapped", dict), ("hint", str), ("docs", str), ("details", dict), ("properties", dict))


def error_of(what: str, value: Any, **extra: Any) -> Tuple[AoiError, str]:
    f = Fields(what, value)
    category = f.required("category")
    code = f.required("code")
    message = f.required("message")
    scope = f.take("scope", str, "process")
    if scope not in ("process", "item"):
        raise ScenarioError(f"{what}.scope is process or item")
    kwargs = {k: f.take(k, kind) for k, kind in _ERROR_KEYS if k in f.rest}
    f.done()
    return AoiError(category, code, message, **kwargs, **extra), scope


def parse_call(index: int, call: Any) -> Tuple[str, Call]:
    what = f"calls[{index}]"
    if not isinstance(call, dict) or len(call) != 1:
        raise ScenarioError(f"{what} must have exactly one key, the call's name")
    ((name, arg),) = call.items()
    what = f"{what}.{name}"
    if name == "emit":
        if not isinstance(arg, dict) or not isinstance(arg.get("type"), str):
            raise ScenarioError(f"{what} needs a string type")
        etype, fields = arg["type"], {k: v for k, v in arg.items() if k != "type"}
        return name, lambda out: out.emit(etype, fields)
    if name == "warning":
        f = Fields(what, arg)
        code, message = f.required("code"), f.required("message")
        kw = {k: f.take(k, kind) for k, kind in (("origin", str), ("target", str), ("line_number", int),
                                                 ("details", dict), ("properties", dict)) if k in f.rest}
        f.done()
        return name, lambda out: out.warning(code, message, **kw)
    if name == "error":
        err, scope = error_of(what, arg)
        return name, lambda out: out.error(err, scope=scope)
    if name == "forward":
        f = Fields(what, arg)
        etype, origin, event = f.required("type"), f.required("origin"), f.required("event", dict)
        f.done()
        return name, lambda out: out.forward(etype, event, origin)
    if name == "plan":
        f = Fields(what, arg)
        action, target, detail = f.required("action"), f.required("target"), f.take("detail", str)
        f.done()
        return name, lambda out: out.plan(action, target, detail)
    if name == "progress":
        f = Fields(what, arg)
        completed, total, unit = f.required("completed", int), f.take("total", int), f.take("unit", str)
        f.done()
        return name, lambda out: out.progress(completed, total, unit)
    if name == "heartbeat":
        f = Fields(what, arg)
        interval = f.take("interval_ms", int)
        f.done()
        return name, lambda out: out.heartbeat(interval)
    if name == "check":
        f = Fields(what, arg)
        cname, ok = f.required("name"), f.required("ok", bool)
        severity, detail = f.required("severity"), f.take("detail", str)
        f.done()
        return name, lambda out: out.check(cname, ok, severity, detail)
    if name == "consumed":
        f = Fields(what, arg)
        errors, warnings = f.take("errors", int, 0), f.take("warnings", int, 0)
        f.done()
        return name, lambda out: out.consumed(errors=errors, warnings=warnings)
    if name == "input":
        if not isinstance(arg, int) or isinstance(arg, bool) or arg < 0:
            raise ScenarioError(f"{what} is not an int")
        return name, lambda out: out.note_input(arg)
    if name == "flush":
        return name, lambda out: out.flush()
    if name == "signal":
        if arg not in ("SIGINT", "SIGTERM"):
            raise ScenarioError(f"{what} is SIGINT or SIGTERM")
        signum = getattr(signal, arg)
        return name, lambda out: os.kill(os.getpid(), signum)
    if name == "sleep_ms":
        if not isinstance(arg, int) or isinstance(arg, bool) or arg < 0:
            raise ScenarioError(f"{what} is not an int")
        return name, lambda out: time.sleep(arg / 1000)
    raise ScenarioError(f"{what}: unknown call {name!r}")


def parse_end(value: Any) -> Callable[[Emitter], Outcome]:
    f = Fields("end", value)
    if "fail" in f.rest:
        denied = f.take("denied", bool, False)
        err, _ = error_of("end.fail", f.take("fail"), **({"reason": "denied"} if denied else {}))
        f.done()

        def fail(out: Emitter) -> Outcome:
            raise err

        return fail
    if "replay" in f.rest:
        r = Fields("end.replay", f.take("replay"))
        f.done()
        events = r.required("events", list)
        if not all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in events):
            raise ScenarioError("end.replay.events[] are objects with a string type")
        ok = r.required("ok", bool)
        summary: Dict[str, Any] = {"ok": ok}
        if "properties" in r.rest:
            summary["properties"] = r.take("properties", dict)
        r.done()
        record = IdempotencyRecord("key", "", tuple(events), summary, 0.0)

        def replay(out: Emitter) -> Outcome:
            for event in Idempotency.replay_events(record):
                out.emit(event.pop("type"), event)
            return Outcome(ok=ok, reason=None if ok else "failed", properties=Idempotency.replay_properties(record))

        return replay
    ok = f.required("ok", bool)
    truncated = f.take("truncated", bool, False)
    next_cursor = f.take("next_cursor", str)
    if next_cursor is not None and not truncated:
        raise ScenarioError("end.next_cursor goes with truncated: true")
    outcome = Outcome(ok=ok, reason=f.take("reason", str), partial=f.take("partial", bool),
                      truncated=truncated, next_cursor=next_cursor,
                      caused_by=f.take("caused_by", dict), upstream=f.take("upstream", dict),
                      properties=f.take("properties", dict), exit_code=f.take("exit_code", int))
    f.done()
    return lambda out: outcome


def main(path: str) -> NoReturn:
    try:
        with open(path, encoding="utf-8") as file:
            top = Fields("scenario", json.load(file))
        top.take("description", str)
        top.take("expect")
        ident = Fields("identity", top.required("identity", dict))
        identity = Identity(ident.required("tool"), ident.required("tool_version"),
                            ident.required("schema_name"), ident.required("schema_version"))
        ident.done()
        command = top.required("command")
        env = Fields("envelope", top.take("envelope", dict, {}))
        timestamps, trace_id = env.take("timestamps", bool, True), env.take("trace_id", str)
        env.done()
        timeout_ms = top.take("timeout_ms", int)
        meta = Fields("meta", top.take("meta", dict, {}))
        meta_args = {"args_redacted": meta.take("args_redacted", bool),
                     "input_fingerprint": meta.take("input_fingerprint", str),
                     "properties": meta.take("properties", dict)}
        meta.done()
        raw_calls = top.take("calls", list, [])
        parsed = [parse_call(i, c) for i, c in enumerate(raw_calls)]
        end = parse_end(top.required("end", dict))
        top.done()
    except (OSError, ValueError, ScenarioError) as exc:
        sys.stderr.write(f"scenario: {exc}\n")
        raise SystemExit(BAD_SCENARIO) from None
    calls: List[Call] = [c for _, c in parsed]

    out = Emitter(stdout_stream(), identity, command=command, trace_id=trace_id, timestamps=timestamps)
    out.meta(**meta_args)

    def body() -> Outcome:
        for call in calls:
            call(out)
        return end(out)

    run(body, emitter=out, name=identity.tool, timeout=None if timeout_ms is None else timeout_ms / 1000)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: scenario_tool.py FILE.json\n")
        raise SystemExit(BAD_SCENARIO)
    main(sys.argv[1])
