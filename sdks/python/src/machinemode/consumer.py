"""Read an AOI-CLI v1.0-alpha stream and decide what it says.

A consumer of a Machine Mode tool must not take "exit 0" or "the last line
parsed" for success (AOI-CLI §4, §21). This module reads a stream line by
line, yields typed events as they arrive, and ends with one :class:`Conclusion`:

* ``succeeded``: the stream conforms, its terminal ``aoi:summary`` says
  ``ok:true`` and (when the process was run) it exited 0 (§4.1);
* ``failed``: the stream conforms and the run cannot be reported as a
  success: ``ok:false`` (with its ``reason`` and ``caused_by``, §8.3, §13.1),
  a non-zero exit (§4.1), or an ``aoi:`` event this version cannot interpret
  (§13);
* ``killed``: the process was ended by a signal and the stream conforms so
  far (§4, §7);
* ``unterminated``: only for a stream documented as unbounded (§4.2);
* ``violation``: the stream breaks a MUST of Part I (framing §2, the
  envelope §8.1, ``aoi:meta`` first and ``aoi:summary`` last §13.1, ``seq``
  contiguous and reconciled with ``event_count`` §8.3, the error fields
  §9.1, no summary at EOF §4): nothing it says can be trusted.

The decisions beyond the literal MUSTs follow ``docs/verifier.md`` (version 1),
and every finding carries that page's stable code, so a verdict here agrees
with ``aoi verify`` on the same bytes. Example::

    >>> data = (b'{"type":"aoi:meta","aoi":{"seq":0,"run":"r1"},"tool":"t"}\\n'
    ...         b'{"type":"hit","aoi":{"seq":1,"run":"r1"},"id":"a"}\\n'
    ...         b'{"type":"aoi:summary","aoi":{"seq":2,"run":"r1"},"ok":true,'
    ...         b'"event_count":3,"count":1}\\n')
    >>> reading = read_stream(data)
    >>> reading.conclusion.verdict, [e.type for e in reading.events]
    ('succeeded', ['aoi:meta', 'hit', 'aoi:summary'])
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from .errors import CATEGORIES as _CATEGORIES
from .errors import category_for_wrapped
from .redact import unredacted_args

__all__ = [
    "SUCCEEDED",
    "FAILED",
    "KILLED",
    "UNTERMINATED",
    "VIOLATION",
    "CATEGORIES",
    "DEFAULT_MAX_LINE",
    "Envelope",
    "Meta",
    "Summary",
    "CausedBy",
    "ErrorEvent",
    "WarningEvent",
    "ProgressEvent",
    "CheckEvent",
    "FrameworkEvent",
    "DomainEvent",
    "Event",
    "Finding",
    "Conclusion",
    "Verdict",
    "JsonRefused",
    "Reading",
    "StreamReader",
    "Run",
    "spawn",
    "parse_json",
    "read_stream",
    "split_lines",
]

#: How a stream ended, as a type (the verdicts below).
Verdict = Literal["succeeded", "failed", "killed", "unterminated", "violation"]
SUCCEEDED: Verdict = "succeeded"
FAILED: Verdict = "failed"
KILLED: Verdict = "killed"
UNTERMINATED: Verdict = "unterminated"
VIOLATION: Verdict = "violation"

#: The closed category enum of §9.2.
CATEGORIES = frozenset(_CATEGORIES)

#: A longer line is skipped without being held and reported (docs/verifier.md, §2).
DEFAULT_MAX_LINE = 64 * 1024 * 1024

_MAX_DEPTH = 127
_CODE = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}\Z")
_FAILURE_REASONS = frozenset({"failed", "cancelled", "timeout", "denied"})
_IDENTITY = ("tool", "tool_version", "aoi_version", "schema_name", "schema_version")
_ENVELOPE_KEYS = frozenset({"seq", "run", "t", "trace_id"})
_COUNTERS = ("event_count", "count", "input_count", "warning_count", "error_count", "elapsed_ms")
_ERROR_FIELDS = frozenset(
    {
        "category", "code", "message", "retryable", "retry_after_ms", "domain", "origin", "scope",
        "target", "item_index", "line_number", "field", "wrapped", "hint", "docs", "details",
        "properties",
    }
)
_KNOWN_FIELDS: Dict[str, frozenset[str]] = {
    "aoi:meta": frozenset(
        {*_IDENTITY, "command", "args", "args_redacted", "input_fingerprint", "properties"}
    ),
    "aoi:summary": frozenset(
        {
            *_IDENTITY, *_COUNTERS, "ok", "reason", "partial", "truncated", "next_cursor",
            "caused_by", "upstream", "properties",
        }
    ),
    "aoi:error": _ERROR_FIELDS,
    "aoi:warning": _ERROR_FIELDS,
    "aoi:check": frozenset({"name", "ok", "severity", "detail", "hint", "properties"}),
}
_OPEN_TYPES = frozenset({"aoi:plan", "aoi:progress", "aoi:heartbeat"})

Json = Any


def _args_as_strings(value: Json) -> Optional[List[str]]:
    """``aoi:meta.args`` as a list of strings, whatever its shape (§11 gives it none): an array keeps
    its strings (other items as their JSON text), an object gives ``--key=value`` entries, anything
    else one entry. The Rust reader's ``args_as_strings``."""

    def text(v: Json) -> str:
        return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))

    if value is None:
        return None
    if isinstance(value, list):
        return [text(v) for v in value]
    if isinstance(value, dict):
        return [f"--{k}={text(v)}" for k, v in sorted(value.items())]
    return [text(value)]


# --------------------------------------------------------------------------- typed events


@dataclass(frozen=True)
class Envelope:
    """The reserved ``aoi`` object of an event (§8.1)."""

    seq: Optional[int] = None
    run: Optional[str] = None
    t: Optional[float] = None
    trace_id: Optional[str] = None


@dataclass(frozen=True)
class Meta:
    """``aoi:meta``: what the stream is (§5, §8.3)."""

    type: str
    envelope: Envelope
    tool: Optional[str]
    tool_version: Optional[str]
    aoi_version: Optional[str]
    schema_name: Optional[str]
    schema_version: Optional[str]
    command: Optional[str]
    properties: Mapping[str, Json]
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class CausedBy:
    """The retry-critical fields of the upstream error a run failed on (§13.1)."""

    category: str
    code: str
    retryable: bool
    retry_after_ms: Optional[int] = None
    origin: Optional[str] = None

    def to_json(self) -> Dict[str, Json]:
        """The object as it goes into ``aoi:summary.caused_by``."""
        out: Dict[str, Json] = {}
        if self.origin is not None:
            out["origin"] = self.origin
        out.update(category=self.category, code=self.code, retryable=self.retryable)
        if self.retry_after_ms is not None and self.retryable:
            out["retry_after_ms"] = self.retry_after_ms
        return out


@dataclass(frozen=True)
class Summary:
    """``aoi:summary``: the outcome of the process that wrote the stream (§4, §8.3)."""

    type: str
    envelope: Envelope
    ok: bool
    reason: Optional[str]
    event_count: Optional[int]
    count: Optional[int]
    input_count: Optional[int]
    warning_count: Optional[int]
    error_count: Optional[int]
    partial: bool
    truncated: bool
    next_cursor: Optional[str]
    caused_by: Optional[CausedBy]
    upstream: Optional[Mapping[str, Json]]
    properties: Mapping[str, Json]
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class ErrorEvent:
    """``aoi:error`` (§9.1); an unknown category is routed as ``internal`` (§9.4)."""

    type: str
    envelope: Envelope
    category: str
    code: str
    message: str
    retryable: bool
    retry_after_ms: Optional[int]
    scope: str
    origin: Optional[str]
    raw: Mapping[str, Json]

    @property
    def route(self) -> str:
        """The category to route on: ``internal`` when this version does not know it (§9.4)."""
        return self.category if self.category in CATEGORIES else "internal"


@dataclass(frozen=True)
class WarningEvent:
    """``aoi:warning``: a recoverable issue (§8.3)."""

    type: str
    envelope: Envelope
    code: Optional[str]
    message: Optional[str]
    origin: Optional[str]
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class ProgressEvent:
    """``aoi:progress``: never required for correctness (§8.3)."""

    type: str
    envelope: Envelope
    completed: Optional[float]
    total: Optional[float]
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class CheckEvent:
    """``aoi:check``: one readiness check (§8.3)."""

    type: str
    envelope: Envelope
    name: str
    ok: bool
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class FrameworkEvent:
    """Another ``aoi:`` event (``aoi:plan``, ``aoi:heartbeat``, or one this version does not know)."""

    type: str
    envelope: Envelope
    raw: Mapping[str, Json]


@dataclass(frozen=True)
class DomainEvent:
    """An unprefixed event, owned by the tool's schema (§8.2); its fields are kept raw."""

    type: str
    envelope: Envelope
    raw: Mapping[str, Json]


Event = Union[Meta, Summary, ErrorEvent, WarningEvent, ProgressEvent, CheckEvent, FrameworkEvent, DomainEvent]


@dataclass(frozen=True)
class Finding:
    """One finding: ``code`` is the stable code of docs/verifier.md."""

    code: str
    section: str
    message: str
    line: Optional[int] = None
    level: str = "violation"


@dataclass(frozen=True)
class Conclusion:
    """How a stream (and, when known, its process) ended: the consumer's verdict, as the Rust
    SDK's ``aoi::read::Conclusion`` (a producer's :class:`machinemode.Outcome` is what a
    command reports; this is what a reader concludes)."""

    verdict: Verdict
    summary: Optional[Summary]
    caused_by: Optional[CausedBy]
    findings: Tuple[Finding, ...]
    lines: int
    exit_code: Optional[int] = None
    signal: Optional[int] = None

    @property
    def ok(self) -> bool:
        """True exactly when the run may be reported as a success."""
        return self.verdict == SUCCEEDED

    @property
    def violations(self) -> Tuple[Finding, ...]:
        """The findings that break a MUST."""
        return tuple(f for f in self.findings if f.level == "violation")

    @property
    def rule(self) -> Optional[str]:
        """The code of the first violation, when the verdict is ``violation``."""
        v = self.violations
        return v[0].code if v else None


@dataclass(frozen=True)
class Reading:
    """What :func:`read_stream` returns: every event and the conclusion."""

    events: Tuple[Event, ...]
    conclusion: Conclusion


# --------------------------------------------------------------------------- parsing helpers


class JsonRefused(ValueError):
    """JSON text :func:`parse_json` refuses; ``code`` is the finding's stable code
    (docs/verifier.md) and ``line_number`` the 1-based line of the text, when known."""

    def __init__(self, code: str, message: str, line_number: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code
        self.line_number = line_number


def _reject_constant(name: str) -> Json:
    raise JsonRefused("INVALID_JSON", f"{name} is not JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonRefused("NUMBER_OUT_OF_RANGE", f"{text} is beyond an IEEE 754 double")
    return value


def _nesting_depth(text: str) -> int:
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _has_surrogate(value: Json) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _is_counter(v: Json) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def _is_number(v: Json) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _single_line(s: str) -> bool:
    return "\n" not in s and "\r" not in s and "\x1b" not in s and "\x9b" not in s


def parse_json(text: str, object_pairs_hook: Optional[Callable[[List[Tuple[str, Json]]], Json]] = None) -> Json:
    """One JSON text as ``aoi verify`` and serde_json accept it (docs/verifier.md, §2): RFC 8259,
    at most 127 nested arrays and objects, no NaN or infinity, no number beyond a double, no
    lone UTF-16 surrogate. ``object_pairs_hook`` builds each object (the reader's rule for a
    repeated key; Python's ``json`` keeps the last, as serde_json does).

    :raises JsonRefused: ``NESTING_TOO_DEEP``, ``INVALID_JSON``, ``NUMBER_OUT_OF_RANGE`` or
        ``LONE_SURROGATE``; a :class:`JsonRefused` the hook raises passes through.
    """
    if _nesting_depth(text) > _MAX_DEPTH:
        raise JsonRefused("NESTING_TOO_DEEP", f"nesting deeper than {_MAX_DEPTH}")
    try:
        value = json.loads(
            text, object_pairs_hook=object_pairs_hook, parse_constant=_reject_constant, parse_float=_parse_float
        )
    except JsonRefused:
        raise
    except json.JSONDecodeError as e:
        raise JsonRefused("INVALID_JSON", f"not JSON: {e}", e.lineno) from None
    except (ValueError, RecursionError) as e:
        raise JsonRefused("INVALID_JSON", f"not JSON: {e}") from None
    if _has_surrogate(value):
        raise JsonRefused("LONE_SURROGATE", "a string holds a lone UTF-16 surrogate")
    return value


def split_lines(chunks: Iterable[bytes], max_line: int = DEFAULT_MAX_LINE) -> Iterator[Tuple[Optional[bytes], bool]]:
    """Split bytes into ``(line, terminated)`` pairs on ``\\n`` only (§2).

    A line longer than ``max_line`` is yielded as ``(None, terminated)`` and never held
    whole; a last line without ``\\n`` is yielded with ``terminated=False``.
    """
    buf = bytearray()
    overlong = False
    for chunk in chunks:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not overlong:
                    buf += chunk[start:]
                    if len(buf) > max_line:
                        overlong = True
                        buf.clear()
                break
            if overlong:
                yield None, True
            else:
                buf += chunk[start:nl]
                if len(buf) > max_line:
                    yield None, True
                else:
                    yield bytes(buf), True
            buf.clear()
            overlong = False
            start = nl + 1
    if overlong:
        yield None, False
    elif buf:
        yield bytes(buf), False


# --------------------------------------------------------------------------- the reader


@dataclass
class _State:
    lines: int = 0
    events: int = 0
    seq_lo: int = 0
    seq_hi: int = 0
    seq_seen: bool = False
    lines_without_seq: List[int] = field(default_factory=list)
    strays: int = 0
    run: Optional[str] = None
    meta: Optional[Meta] = None
    summary: Optional[Summary] = None
    summary_line: int = 0
    lines_through_summary: int = 0
    strays_through_summary: int = 0
    domain: int = 0
    errors: int = 0
    warnings: int = 0
    local_process_error: Optional[ErrorEvent] = None
    last_process_error: Optional[ErrorEvent] = None
    uninterpreted: bool = False
    lenient: bool = False
    truncated_line: Optional[int] = None


class StreamReader:
    """Checks a stream one line at a time; call :meth:`feed` per line, then :meth:`finish`.

    ``unbounded`` says the command is documented as unbounded (§4.2): EOF without a
    summary is then no violation.
    """

    def __init__(self, *, unbounded: bool = False) -> None:
        self._unbounded = unbounded
        self._s = _State()
        self._findings: List[Finding] = []

    # -- findings

    def _v(self, code: str, section: str, message: str, line: Optional[int] = None) -> None:
        self._findings.append(Finding(code, section, message, line, "violation"))

    def _n(self, code: str, section: str, message: str, line: Optional[int] = None) -> None:
        self._findings.append(Finding(code, section, message, line, "notice"))

    def _v_or_n(self, code: str, section: str, message: str, line: int, lenient: bool) -> None:
        (self._n if lenient else self._v)(code, section, message, line)

    # -- lines

    def feed(self, line: Optional[bytes], terminated: bool = True) -> Optional[Event]:
        """Read one line (without its ``\\n``); ``None`` stands for a line over the limit.

        Returns the typed event, or ``None`` when the line is not one.
        """
        s = self._s
        if not terminated:
            # §2: a last line without its terminator is never an event.
            s.truncated_line = s.lines + 1
            return None
        s.lines += 1
        n = s.lines
        if s.summary is not None:
            self._v("SUMMARY_NOT_LAST", "§13.1", "a line after the terminal aoi:summary", n)
        if line is None:
            self._v("LINE_TOO_LONG", "§2", "line longer than the reader's limit", n)
            return self._invalid()
        obj = self._decode(line, n)
        if obj is None:
            return self._invalid()
        return self._event(obj, n)

    def _invalid(self) -> Optional[Event]:
        # An invalid line may hold a seq slot or not (docs/verifier.md, "the envelope").
        self._s.seq_hi += 1
        return None

    def _decode(self, line: bytes, n: int) -> Optional[Dict[str, Json]]:
        if line.endswith(b"\r"):
            self._n("CRLF_LINE_ENDING", "§2", "line ends in \\r\\n", n)
        if b"\x1b" in line or b"\xc2\x9b" in line:
            self._v("ANSI_ESCAPE", "§2", "raw ANSI control on stdout", n)
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self._v("INVALID_UTF8", "§2", "line is not UTF-8", n)
            return None
        if not text.strip(" \t\r"):
            self._v("EMPTY_LINE", "§2", "empty line", n)
            return None
        dups: List[Tuple[Dict[str, Json], List[str]]] = []

        def pairs(items: List[Tuple[str, Json]]) -> Dict[str, Json]:
            d: Dict[str, Json] = {}
            repeated: List[str] = []
            for k, v in items:
                if k in d:
                    repeated.append(k)
                d[k] = v
            if repeated:
                dups.append((d, repeated))
            return d

        try:
            value = parse_json(text, pairs)
        except JsonRefused as e:
            self._v(e.code, "§2", str(e), n)
            return None
        if not isinstance(value, dict):
            self._v("NOT_AN_OBJECT", "§2", "line is not a JSON object", n)
            return None
        if "type" not in value:
            self._v("TYPE_MISSING", "§8.1", "event has no type", n)
            return None
        if not isinstance(value["type"], str):
            self._v("TYPE_NOT_STRING", "§8.1", "type is not a string", n)
            return None
        framework = value["type"].startswith("aoi:")
        env = value.get("aoi")
        for d, keys in dups:
            if (
                framework
                or (d is value and ("type" in keys or "aoi" in keys))
                or (d is env and _ENVELOPE_KEYS.intersection(keys))
            ):
                self._v("DUPLICATE_KEY", "§8.1", f"repeated key {keys[0]!r}", n)
                break
        return value

    # -- the envelope

    def _envelope(self, obj: Mapping[str, Json], n: int) -> Envelope:
        s = self._s
        raw = obj.get("aoi")
        if "aoi" not in obj:
            env: Mapping[str, Json] = {}
        elif not isinstance(raw, dict):
            self._v("ENVELOPE_NOT_OBJECT", "§8.1", "aoi is not an object", n)
            env = {}
        else:
            env = raw
        for k in env:
            if k not in _ENVELOPE_KEYS:
                self._v_or_n("ENVELOPE_EXTRA_FIELD", "§8.1", f"aoi.{k} is not defined", n, s.lenient)
        seq: Any = env.get("seq")
        run_id: Any = env.get("run")
        t: Any = env.get("t")
        if "t" in env and (not _is_number(t) or t < 0 or (t == 0 and math.copysign(1.0, t) < 0)):
            self._v("ENVELOPE_FIELD_INVALID", "§8.1", "aoi.t is not a non-negative number", n)
        trace = env.get("trace_id")
        if "trace_id" in env and not isinstance(trace, str):
            self._v("ENVELOPE_FIELD_INVALID", "§8.1", "aoi.trace_id is not a string", n)
        if "seq" not in env:
            s.lines_without_seq.append(n)
            s.seq_hi += 1
            seq_value: Optional[int] = None
        elif not _is_counter(seq):
            self._v("SEQ_INVALID", "§8.1", "aoi.seq is not a non-negative integer", n)
            s.seq_hi += 1
            seq_value = None
        else:
            seq_value = seq
            if not s.seq_lo <= seq <= s.seq_hi:
                if not s.seq_seen and s.seq_lo == 0:
                    self._v("SEQ_NOT_ZERO_BASED", "§8.1", f"first aoi.seq is {seq}, not 0", n)
                else:
                    what = "repeated" if seq < s.seq_lo else "skipped"
                    self._v("SEQ_GAP", "§8.1", f"aoi.seq {seq}: a number {what} (expected {s.seq_lo})", n)
            else:
                s.strays += s.seq_hi - seq
            s.seq_seen = True
            s.seq_lo = s.seq_hi = seq + 1
            if not isinstance(run_id, str):
                self._v("RUN_MISSING", "§8.1", "aoi.seq without a string aoi.run", n)
        run_value = run_id if isinstance(run_id, str) else None
        if run_value is not None:
            if s.run is None:
                s.run = run_value
                if not _ULID.match(run_value):
                    self._n("RUN_NOT_ULID", "§8.1", f"aoi.run {run_value!r} is not a ULID, which §8.1 recommends", n)
            elif s.run != run_value:
                self._v("RUN_CHANGED", "§8.1", f"aoi.run changed from {s.run!r} to {run_value!r}", n)
        return Envelope(
            seq=seq_value,
            run=run_value,
            t=float(t) if _is_number(t) else None,
            trace_id=trace if isinstance(trace, str) else None,
        )

    # -- events

    def _event(self, obj: Dict[str, Json], n: int) -> Event:
        s = self._s
        s.events += 1
        type_ = obj["type"]
        if type_ == "aoi:meta" and n == 1:
            self._set_version(obj, n)
        env = self._envelope(obj, n)
        if not type_.startswith("aoi:"):
            if s.summary is None:
                s.domain += 1
            if "seq" in obj and "run" in obj:
                self._n("V02_FLAT_ENVELOPE", "§5.2", "top-level seq and run on a domain event", n)
            return DomainEvent(type_, env, obj)
        if "seq" in obj or "run" in obj:
            self._v("V02_FLAT_ENVELOPE", "§5.2", "framework field at the top level (v0.2 envelope)", n)
        known = _KNOWN_FIELDS.get(type_)
        if known is not None:
            for k in obj:
                if k not in known and k not in ("type", "aoi", "seq", "run"):
                    if type_ == "aoi:error" and k == "upstream":
                        self._v("V02_ERROR_UPSTREAM", "§5.2", "aoi:error.upstream is v0.2: use wrapped", n)
                    else:
                        self._v_or_n(
                            "FRAMEWORK_EXTRA_FIELD", "§8.1", f"{type_}.{k} is not defined: use properties", n,
                            s.lenient,
                        )
        if "properties" in obj and not isinstance(obj["properties"], dict):
            code = {"aoi:meta": "META", "aoi:summary": "SUMMARY", "aoi:warning": "WARNING"}.get(type_, "ERROR")
            self._v(f"{code}_FIELD_INVALID", "§8.1", "properties is not an object", n)
        if type_ == "aoi:meta":
            return self._meta(obj, env, n)
        if type_ == "aoi:summary":
            return self._summary(obj, env, n)
        if type_ == "aoi:error":
            return self._error(obj, env, n)
        if type_ == "aoi:warning":
            return self._warning(obj, env, n)
        if type_ == "aoi:check":
            name, ok = obj.get("name"), obj.get("ok")
            if not isinstance(name, str) or not isinstance(ok, bool):
                self._v("CHECK_INVALID", "§8.3", "aoi:check needs a string name and a boolean ok", n)
            for k in ("severity", "detail", "hint"):
                if k in obj and not isinstance(obj[k], str):
                    self._v("CHECK_INVALID", "§8.3", f"aoi:check.{k} is not a string", n)
            return CheckEvent(type_, env, name if isinstance(name, str) else "", ok is True, obj)
        if type_ == "aoi:progress":
            c, t = obj.get("completed"), obj.get("total")
            return ProgressEvent(
                type_, env, c if _is_number(c) else None, t if _is_number(t) else None, obj
            )
        if type_ not in _OPEN_TYPES:
            self._v_or_n("UNKNOWN_FRAMEWORK_EVENT", "§13", f"unknown framework event {type_!r}", n, s.lenient)
            s.uninterpreted = True
        return FrameworkEvent(type_, env, obj)

    def _set_version(self, obj: Mapping[str, Json], n: int) -> None:
        version = obj.get("aoi_version")
        if version is None or version == "1.0-alpha":
            return
        if isinstance(version, str) and version.startswith("1."):
            self._s.lenient = True
        else:
            self._v("AOI_VERSION_UNKNOWN", "§5", f"aoi_version {version!r}: another major", n)

    def _identity_complete(self, obj: Mapping[str, Json], what: str, n: int) -> None:
        """§5: meta and summary SHOULD each carry the identity triple (a notice when not)."""
        missing = [k for k in _IDENTITY if not isinstance(obj.get(k), str)]
        if missing:
            self._n("IDENTITY_INCOMPLETE", "§5", f"{what} lacks {', '.join(missing)}", n)

    def _meta(self, obj: Dict[str, Json], env: Envelope, n: int) -> Meta:
        s = self._s
        if s.meta is not None:
            self._v("META_REPEATED", "§13.1", "a second aoi:meta", n)
        elif n != 1:
            self._v("META_NOT_FIRST", "§13.1", "aoi:meta is not the first line", n)
        for k in (*_IDENTITY, "command", "input_fingerprint"):
            if k in obj and not isinstance(obj[k], str):
                self._v("META_FIELD_INVALID", "§8.3", f"aoi:meta.{k} is not a string", n)
        self._identity_complete(obj, "aoi:meta", n)
        if "args_redacted" in obj and not isinstance(obj["args_redacted"], bool):
            self._v("META_FIELD_INVALID", "§11", "aoi:meta.args_redacted is not a boolean", n)
        # §11 gives `args` no shape: read as the Rust reader reads it, and every value judged.
        args = _args_as_strings(obj["args"]) if "args" in obj else None
        if args:
            leaks = unredacted_args(args)
            if leaks:
                at = ", ".join(str(i) for i in leaks)
                message = f"aoi:meta.args echoes a sensitive value unredacted at position {at}"
                self._v("ARGS_NOT_REDACTED", "§11", message, n)

        def st(k: str) -> Optional[str]:
            v = obj.get(k)
            return v if isinstance(v, str) else None

        props = obj.get("properties")
        meta = Meta(
            "aoi:meta", env, st("tool"), st("tool_version"), st("aoi_version"), st("schema_name"),
            st("schema_version"), st("command"), props if isinstance(props, dict) else {}, obj,
        )
        if s.meta is None:
            s.meta = meta
        return meta

    def _caused_by(self, raw: Json, n: int) -> Optional[CausedBy]:
        if not isinstance(raw, dict):
            self._v("CAUSED_BY_INVALID", "§13.1", "caused_by is not an object", n)
            return None
        origin = raw.get("origin")
        if "origin" in raw and not isinstance(origin, str):
            self._v("CAUSED_BY_INVALID", "§13.1", "caused_by.origin is not a string", n)
        category = raw.get("category")
        if not isinstance(category, str):
            self._v("CAUSED_BY_INVALID", "§13.1", "caused_by.category missing or not a string", n)
        else:
            self._category(category, n, forwarded=isinstance(origin, str))
        code = raw.get("code")
        if not isinstance(code, str) or not _CODE.match(code):
            self._v("CAUSED_BY_INVALID", "§13.1", "caused_by.code missing or not [A-Z][A-Z0-9_]*", n)
        retryable = raw.get("retryable")
        if not isinstance(retryable, bool):
            self._v("CAUSED_BY_INVALID", "§13.1", "caused_by.retryable missing or not a boolean", n)
        after = self._retry_after(raw, retryable, n)
        return CausedBy(
            category if isinstance(category, str) else "internal",
            code if isinstance(code, str) else "",
            retryable is True,
            after,
            origin if isinstance(origin, str) else None,
        )

    def _summary(self, obj: Dict[str, Json], env: Envelope, n: int) -> Summary:
        s = self._s
        if s.summary is not None:
            self._v("SUMMARY_REPEATED", "§13.1", "a second aoi:summary", n)
        ok = obj.get("ok")
        if "ok" not in obj:
            self._v("OK_MISSING", "§4", "aoi:summary has no ok", n)
        elif not isinstance(ok, bool):
            self._v("OK_NOT_BOOLEAN", "§4", "aoi:summary.ok is not a boolean", n)
        reason = obj.get("reason")
        if ok is False and "reason" not in obj:
            self._v("REASON_MISSING", "§8.3", "ok:false needs a reason", n)
        elif "reason" in obj:
            if ok is False and reason not in _FAILURE_REASONS:
                self._v("REASON_INVALID", "§8.3", f"reason {reason!r} with ok:false", n)
            elif ok is True and reason != "skipped":
                self._v("REASON_INVALID", "§8.3", f"reason {reason!r} with ok:true", n)
        for k in _COUNTERS:
            if k in obj and not _is_counter(obj[k]):
                self._v("SUMMARY_FIELD_INVALID", "§8.3", f"aoi:summary.{k} is not a non-negative integer", n)
        for k in ("partial", "truncated"):
            if k in obj and not isinstance(obj[k], bool):
                self._v("SUMMARY_FIELD_INVALID", "§8.3", f"aoi:summary.{k} is not a boolean", n)
        if "next_cursor" in obj and not (obj["next_cursor"] is None or isinstance(obj["next_cursor"], str)):
            self._v("SUMMARY_FIELD_INVALID", "§15", "aoi:summary.next_cursor is not a string", n)
        if isinstance(obj.get("next_cursor"), str) and obj.get("truncated") is not True:
            # §15 is Part II, not required for conformance: a notice, as the Rust verifier says.
            message = "`next_cursor` names more data, but `truncated` is not true (§15)"
            self._n("SUMMARY_FIELD_INVALID", "§15", message, n)
        self._identity_complete(obj, "aoi:summary", n)
        for k in _IDENTITY:
            if k in obj and not isinstance(obj[k], str):
                self._v("SUMMARY_FIELD_INVALID", "§5", f"aoi:summary.{k} is not a string", n)
            elif s.meta is not None and k in obj and k in s.meta.raw and s.meta.raw[k] != obj[k]:
                self._v("IDENTITY_MISMATCH", "§5", f"{k} differs between aoi:meta and aoi:summary", n)
        caused_by = self._caused_by(obj["caused_by"], n) if "caused_by" in obj else None
        if caused_by is not None and ok is True:
            self._n("CAUSED_BY_ON_SUCCESS", "§8.3", "caused_by with ok:true", n)
        upstream = obj.get("upstream")
        if "upstream" in obj:
            if isinstance(upstream, dict) and "protocol" in upstream and "status" in upstream:
                self._v("V02_UPSTREAM_SHAPE", "§5.2", "upstream shaped {protocol,status}: that is wrapped", n)
                upstream = None
            elif not isinstance(upstream, dict) or any(not isinstance(v, str) for v in upstream.values()):
                self._v("UPSTREAM_INVALID", "§13.1", "upstream must be an object of strings, never null", n)
                upstream = None
            elif not upstream:
                self._n("UPSTREAM_INVALID", "§13.1", "upstream is empty", n)
        if s.summary is None:
            # The counters are reconciled against what came before the first summary.
            if ok is True and s.local_process_error is not None:
                self._v("OK_AFTER_PROCESS_ERROR", "§9.1", "ok:true after a process-scope aoi:error", n)
            self._reconcile(obj, n)
        nc = obj.get("next_cursor")
        props = obj.get("properties")

        def counter(k: str) -> Optional[int]:
            v = obj.get(k)
            return v if _is_counter(v) else None

        summary = Summary(
            "aoi:summary", env, ok is True, reason if isinstance(reason, str) else None,
            counter("event_count"), counter("count"), counter("input_count"), counter("warning_count"),
            counter("error_count"), obj.get("partial") is True, obj.get("truncated") is True,
            nc if isinstance(nc, str) else None, caused_by,
            upstream if isinstance(upstream, dict) else None,
            props if isinstance(props, dict) else {}, obj,
        )
        if s.summary is None:
            s.summary = summary
            s.summary_line = n
            s.lines_through_summary = n
        return summary

    def _reconcile(self, obj: Mapping[str, Json], n: int) -> None:
        s = self._s
        ec = obj.get("event_count")
        if "event_count" not in obj:
            self._n("EVENT_COUNT_MISSING", "§8.3", "no event_count: line loss cannot be reconciled", n)
        elif _is_counter(ec) and ec != n:
            if ec == n - s.strays:
                self._n("EVENT_COUNT_MISMATCH", "§8.3", "event_count leaves out stray lines only", n)
            else:
                self._v("EVENT_COUNT_MISMATCH", "§8.3", f"event_count {ec}, lines {n}: lines were lost", n)
        count = obj.get("count")
        if _is_counter(count) and count != s.domain:
            self._v("COUNT_MISMATCH", "§8.3", f"count {count}, domain events {s.domain}", n)
        for k, seen, code in (
            ("error_count", s.errors, "ERROR_COUNT_MISMATCH"),
            ("warning_count", s.warnings, "WARNING_COUNT_MISMATCH"),
        ):
            v: Any = obj.get(k)
            if _is_counter(v) and v < seen:
                self._v(code, "§8.3", f"{k} {v} is below the {seen} in the stream", n)
        if obj.get("partial") is True and obj.get("error_count", 0) == 0:
            self._n("PARTIAL_WITHOUT_ERRORS", "§8.3", "partial:true without errors", n)
        if obj.get("reason") == "skipped" and s.domain:
            self._n("SKIPPED_WITH_EVENTS", "§8.3", "skipped, yet domain events were emitted", n)

    def _category(self, category: str, n: int, forwarded: bool) -> None:
        if category in CATEGORIES:
            return
        if category == "temporary":
            self._v("V02_CATEGORY_TEMPORARY", "§5.2", "category temporary is now unavailable", n)
        elif category == "partial":
            self._v("V02_CATEGORY_PARTIAL", "§5.2", "category partial was removed", n)
        else:
            self._v_or_n(
                "ERROR_CATEGORY_INVALID", "§9.2", f"unknown category {category!r} (routed as internal)", n,
                self._s.lenient or forwarded,
            )

    def _retry_after(self, obj: Mapping[str, Json], retryable: Json, n: int) -> Optional[int]:
        if "retry_after_ms" not in obj:
            return None
        after = obj["retry_after_ms"]
        if retryable is False:
            self._v("RETRY_AFTER_NOT_RETRYABLE", "§9.1", "retry_after_ms with retryable:false", n)
        if not _is_counter(after):
            self._v("RETRY_AFTER_INVALID", "§9.1", "retry_after_ms is not a non-negative integer", n)
            return None
        return int(after)

    def _error_fields(self, obj: Mapping[str, Json], n: int, code: str) -> None:
        for k in ("origin", "domain", "target", "field", "hint", "docs"):
            if k in obj and not isinstance(obj[k], str):
                self._v(code, "§9.1", f"{k} is not a string", n)
        if "details" in obj and not isinstance(obj["details"], dict):
            self._v(code, "§9.1", "details is not an object", n)
        for k in ("item_index", "line_number"):
            if k in obj and not _is_counter(obj[k]):
                self._v(code, "§9.1", f"{k} is not a non-negative integer", n)
        if "scope" in obj and obj["scope"] not in ("process", "item"):
            self._v(code, "§9.1", "scope is neither process nor item", n)
        if "wrapped" in obj:
            w = obj["wrapped"]
            if (
                not isinstance(w, dict)
                or w.get("protocol") not in ("http", "grpc", "exit")
                or any(k in w and not (isinstance(w[k], (int, str)) and not isinstance(w[k], bool))
                       for k in ("status", "code"))
            ):
                self._v(code, "§9.1", "wrapped is not {protocol: http|grpc|exit, status?, code?}", n)

    def _recommended_error_fields(self, obj: Mapping[str, Json], category: Json, retryable: Json, n: int) -> None:
        """The §9.1, §9.2 and §9.5 SHOULDs of an error, each a notice when unmet."""
        if obj.get("scope") == "item" and "item_index" not in obj and "line_number" not in obj:
            self._n("ITEM_ERROR_INDEX_MISSING", "§9.2", "an item error with neither item_index nor line_number", n)
        if "domain" not in obj:
            self._n("ERROR_DOMAIN_MISSING", "§9.1", "aoi:error has no domain", n)
        if category == "not_found" and "target" not in obj:
            self._n("ERROR_TARGET_MISSING", "§9.1", "a not_found error without target", n)
        if category == "rate_limited" and retryable is True and "retry_after_ms" not in obj:
            self._n("RETRY_AFTER_MISSING", "§9.2", "a retryable rate_limited error without retry_after_ms", n)
        wrapped = obj.get("wrapped")
        mapped = category_for_wrapped(wrapped) if isinstance(wrapped, dict) else None
        if mapped is not None and isinstance(category, str) and category in CATEGORIES and category != mapped[1]:
            self._n("WRAPPED_MAPPING_DIFFERS", "§9.5", f"wrapped is {mapped[0]}, which §9.5 maps to {mapped[1]}", n)

    def _error(self, obj: Dict[str, Json], env: Envelope, n: int) -> ErrorEvent:
        s = self._s
        origin = obj.get("origin")
        forwarded = "origin" in obj
        category = obj.get("category")
        if "category" not in obj:
            self._v("ERROR_CATEGORY_MISSING", "§9.1", "aoi:error has no category", n)
        elif not isinstance(category, str):
            self._v("ERROR_CATEGORY_INVALID", "§9.2", "category is not a string", n)
        else:
            self._category(category, n, forwarded)
        code = obj.get("code")
        if not isinstance(code, str) or not _CODE.match(code):
            self._v("ERROR_CODE_INVALID", "§9.1", "code missing or not [A-Z][A-Z0-9_]*", n)
        message = obj.get("message")
        if not isinstance(message, str) or not _single_line(message):
            self._v("ERROR_MESSAGE_INVALID", "§9.1", "message missing or not a single clean line", n)
        retryable = obj.get("retryable")
        if not isinstance(retryable, bool):
            self._v("ERROR_RETRYABLE_MISSING", "§9.3", "retryable missing or not a boolean", n)
        after = self._retry_after(obj, retryable, n)
        self._error_fields(obj, n, "ERROR_FIELD_INVALID")
        self._recommended_error_fields(obj, category, retryable, n)
        scope = obj.get("scope", "process")
        event = ErrorEvent(
            "aoi:error", env, category if isinstance(category, str) else "internal",
            code if isinstance(code, str) else "", message if isinstance(message, str) else "",
            retryable is True, after, scope if scope in ("process", "item") else "process",
            origin if isinstance(origin, str) else None, obj,
        )
        if s.summary is None:
            s.errors += 1
            if event.scope == "process":
                s.last_process_error = event
                if not forwarded:
                    s.local_process_error = event
        return event

    def _warning(self, obj: Dict[str, Json], env: Envelope, n: int) -> WarningEvent:
        s = self._s
        code, message = obj.get("code"), obj.get("message")
        if "code" in obj and (not isinstance(code, str) or not _CODE.match(code)):
            self._v("WARNING_FIELD_INVALID", "§9.1", "code is not [A-Z][A-Z0-9_]*", n)
        if "message" in obj and (not isinstance(message, str) or not _single_line(message)):
            self._v("WARNING_FIELD_INVALID", "§9.1", "message is not a single clean line", n)
        if "retryable" in obj and not isinstance(obj["retryable"], bool):
            self._v("WARNING_FIELD_INVALID", "§9.1", "retryable is not a boolean", n)
        if "category" in obj:
            category = obj["category"]
            if not isinstance(category, str):
                self._v("WARNING_FIELD_INVALID", "§9.1", "category is not a string", n)
            else:
                self._category(category, n, "origin" in obj)
        if "retry_after_ms" in obj:
            self._retry_after(obj, obj.get("retryable"), n)
        self._error_fields(obj, n, "WARNING_FIELD_INVALID")
        if s.summary is None:
            s.warnings += 1
        origin = obj.get("origin")
        return WarningEvent(
            "aoi:warning", env, code if isinstance(code, str) else None,
            message if isinstance(message, str) else None, origin if isinstance(origin, str) else None, obj,
        )

    # -- the end

    def finish(self, exit_code: Optional[int] = None, signal: Optional[int] = None) -> Conclusion:
        """Decide the conclusion at EOF; ``exit_code``/``signal`` when the process was run.

        ``signal`` is the number of the signal that killed the process (§6, §7).
        """
        s = self._s
        died = signal is not None or (exit_code is not None and exit_code != 0)
        if s.truncated_line is not None:
            if died:
                self._n("TRUNCATED_LINE", "§2", "last line cut: the process died mid-write", s.truncated_line)
            else:
                self._v("TRUNCATED_LINE", "§2", "last line has no line feed: discarded", s.truncated_line)
        if s.seq_seen and s.lines_without_seq:
            for ln in s.lines_without_seq:
                self._v("SEQ_MISSING", "§8.1", "aoi.seq absent while other lines carry it", ln)
        elif not s.seq_seen and s.events:
            self._n("SEQ_ABSENT", "§8.1", "no aoi.seq: Verifiable not claimed")
        if s.meta is None and s.events:
            self._n("META_MISSING", "§4", "no aoi:meta")
        summary = s.summary
        if summary is None:
            if s.lines == 0 and s.truncated_line is None and died:
                self._n("STREAM_NOT_STARTED", "§2", "nothing on stdout: the stream never started")
            elif died or self._unbounded:
                self._n("SUMMARY_MISSING", "§4", "EOF without aoi:summary")
            else:
                self._v("SUMMARY_MISSING", "§4.1", "EOF without aoi:summary: incomplete stream")
        elif summary.ok and died:
            self._v("EXIT_STATUS_MISMATCH", "§4.1", "ok:true but the process did not exit 0")
        elif not summary.ok and exit_code == 0:
            self._n("EXIT_STATUS_MISMATCH", "§6", "ok:false but exit 0")
        if died:
            self._n("PROCESS_FAILED", "§4.1", f"exit {exit_code}" if signal is None else f"signal {signal}")
        findings = tuple(self._findings)
        caused_by: Optional[CausedBy] = None
        if summary is not None and summary.caused_by is not None:
            caused_by = summary.caused_by
        elif s.last_process_error is not None and (summary is None or not summary.ok):
            e = s.last_process_error
            caused_by = CausedBy(e.route, e.code, e.retryable, e.retry_after_ms, e.origin)
        if any(f.level == "violation" for f in findings):
            verdict = VIOLATION
        elif signal is not None:
            verdict = KILLED
        elif summary is None:
            verdict = FAILED if died else UNTERMINATED
        elif not summary.ok or died or s.uninterpreted:
            verdict = FAILED
        else:
            verdict = SUCCEEDED
        return Conclusion(verdict, summary, caused_by, findings, s.lines, exit_code, signal)


def read_stream(
    data: Union[bytes, Iterable[bytes]],
    *,
    exit_code: Optional[int] = None,
    signal: Optional[int] = None,
    unbounded: bool = False,
    max_line: int = DEFAULT_MAX_LINE,
) -> Reading:
    """Read a stream already captured: ``bytes``, or an iterable of chunks (lines with their ``\\n``).

    ``exit_code`` and ``signal`` say how the process ended when that is known.
    """
    chunks: Iterable[bytes] = [data] if isinstance(data, (bytes, bytearray)) else data
    reader = StreamReader(unbounded=unbounded)
    events: List[Event] = []
    for line, terminated in split_lines(chunks, max_line):
        ev = reader.feed(line, terminated)
        if ev is not None:
            events.append(ev)
    return Reading(tuple(events), reader.finish(exit_code, signal))


def _chunks(stream: IO[bytes], size: int = 65536) -> Iterator[bytes]:
    while True:
        chunk = stream.read1(size) if hasattr(stream, "read1") else stream.read(size)
        if not chunk:
            return
        yield chunk


class Run:
    """A command run in machine mode: iterate it for events as they arrive, then read :attr:`conclusion`.

    Its stdin is closed unless ``stdin`` bytes are given; stderr is inherited. Leaving the
    loop early closes the pipe and waits for the process (it sees a closed stdout, §7).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: Optional[bytes] = None,
        unbounded: bool = False,
        max_line: int = DEFAULT_MAX_LINE,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
    ) -> None:
        self.argv = list(argv)
        self._stdin = stdin
        self._unbounded = unbounded
        self._max_line = max_line
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._conclusion: Optional[Conclusion] = None
        self._started = False

    @property
    def conclusion(self) -> Conclusion:
        """The conclusion; only once the events have been read to the end."""
        if self._conclusion is None:
            raise RuntimeError("the run has not been read to its end")
        return self._conclusion

    def __iter__(self) -> Iterator[Event]:
        if self._started:
            raise RuntimeError("a Run is read once")
        self._started = True
        proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE if self._stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=self._env,
            cwd=self._cwd,
        )
        assert proc.stdout is not None
        if proc.stdin is not None and self._stdin is not None:
            try:
                proc.stdin.write(self._stdin)
            except BrokenPipeError:
                pass
            finally:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
        reader = StreamReader(unbounded=self._unbounded)
        finished = False
        try:
            for line, terminated in split_lines(_chunks(proc.stdout), self._max_line):
                ev = reader.feed(line, terminated)
                if ev is not None:
                    yield ev
            finished = True
        finally:
            proc.stdout.close()
            rc = proc.wait()
            if finished:
                self._conclusion = reader.finish(
                    exit_code=rc if rc >= 0 else None, signal=-rc if rc < 0 else None
                )

    def wait(self) -> Conclusion:
        """Read every event, discard them, and return the conclusion."""
        for _ in self:
            pass
        return self.conclusion


def spawn(argv: Sequence[str], **kwargs: Any) -> Run:
    """Run ``argv`` and return a :class:`Run` to iterate; see :class:`Run` for the options."""
    return Run(argv, **kwargs)
