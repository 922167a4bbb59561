"""The producer: every byte of machine-mode stdout, written through one :class:`Emitter`.

A complete stream, as this module writes it (AOI-CLI §2, §8, §19.1)::

    {"type":"aoi:meta","aoi":{"seq":0,"run":"01K…","t":0},"tool":"bookmarks","tool_version":"0.1.0","aoi_version":"1.0-alpha","schema_name":"io.machinemode.examples.bookmarks.events","schema_version":"1.0.0","command":"list"}
    {"type":"bookmark","aoi":{"seq":1,"run":"01K…","t":2},"id":"b1","url":"https://example.com/","title":"Example","tags":[]}
    {"type":"aoi:summary","aoi":{"seq":2,"run":"01K…","t":3},"ok":true,"event_count":3,"count":1,"warning_count":0,"error_count":0,"partial":false,"truncated":false,"elapsed_ms":3,"tool":"bookmarks",…}

What the emitter owns, so the caller cannot get it wrong:

* the nested envelope ``aoi`` on every line, ``seq`` from 0 without gaps, one ULID ``run``,
  ``t`` in milliseconds since ``aoi:meta`` (§8.1);
* ``aoi:meta`` first, written before any other event if the caller did not (§4), carrying the
  identity triple, which ``aoi:summary`` repeats (§5);
* the counters of ``aoi:summary``: ``event_count`` (lines including the summary),
  ``count`` (domain events only), ``warning_count`` and ``error_count`` (§8.3);
* the reserved names: a domain event cannot be an ``aoi:*`` type nor carry ``type`` or ``aoi``
  as a field (§8.1, §8.2); tool-specific data on a framework event goes in ``properties``;
* one line per event: compact JSON, UTF-8, ``\\n`` after every event including the summary
  (§2); C1 controls are escaped so no raw CSI reaches the stream;
* nothing after the summary (§13.1: the summary is the last event).

Writes are buffered and flushed when the buffer fills, on :meth:`Emitter.flush`, and at the
summary (``flush_each=True`` flushes every line, for unbounded commands, §4.2). A write that
fails raises :class:`StreamClosed` (the reader went away: EPIPE) or :class:`StreamFailed`
(any other failure: ENOSPC, EIO, a closed descriptor); both are BaseExceptions so a tool's
``except Exception`` does not swallow them, and the harness turns them into exit 141 and 74.
"""

from __future__ import annotations

import dataclasses
import errno as _errno
import json
import re
import time
from typing import Any, BinaryIO, Callable, Collection, Dict, Mapping, Optional, Set, Tuple

from . import signals
from .errors import ERROR_FIELDS, REASONS, WRAPPED_FIELDS, AoiError, clean_message, in_order, sorted_keys
from .schemas import RESERVED_FIELDS, event_type_of, to_fields
from .ulid import new_ulid

__all__ = ["AOI_VERSION", "Emitter", "Identity", "StreamClosed", "StreamFailed", "encode_line"]

#: The AOI version this SDK speaks (``aoi_version``, a field name frozen forever, §5).
AOI_VERSION = "1.0-alpha"

_TYPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# The key order of ``caused_by`` and ``upstream`` (§13.1), as the Rust SDK's structs write them.
_CAUSED_BY_ORDER = ("origin", "category", "code", "retryable", "retry_after_ms")
_UPSTREAM_ORDER = ("tool", "tool_version", "schema_name", "schema_version")


class StreamClosed(BaseException):
    """The reader closed stdout (EPIPE / SIGPIPE): end quietly with exit 141 (§6, §7)."""


class StreamFailed(BaseException):
    """Stdout cannot be written for another reason (ENOSPC, EIO, EBADF): exit 74 (§6)."""

    def __init__(self, errno: Optional[int] = None) -> None:
        super().__init__(errno)
        self.errno = errno


@dataclasses.dataclass(frozen=True)
class Identity:
    """The identity triple of §5 (tool, AOI and schema versions) carried by meta and summary."""

    tool: str
    tool_version: str
    schema_name: str
    schema_version: str
    aoi_version: str = AOI_VERSION

    def fields(self) -> Dict[str, str]:
        """The five identity fields, in the spec's order (§5 example)."""
        return {"tool": self.tool, "tool_version": self.tool_version,
                "aoi_version": self.aoi_version, "schema_name": self.schema_name,
                "schema_version": self.schema_version}


# The order the Rust SDK writes a forwarded error's and warning's fields in (its structs').
_FORWARDED_ORDER: Dict[str, Tuple[str, ...]] = {
    "aoi:error": (*ERROR_FIELDS, "properties"),
    "aoi:warning": ("code", "message", "origin", "target", "line_number", "details",
                    "properties"),
}


def encode_line(event: Mapping[str, Any]) -> bytes:
    """One event as one line: compact JSON, UTF-8, a final ``\\n`` (§2).

    C0 controls are escaped by ``json``; U+009B (the C1 CSI) is escaped here, so the bytes
    carry no ANSI control introducer; a lone surrogate becomes ``?``. Floats are written as the
    Rust SDK writes them. The bytes are the Rust SDK's for the same event (docs/discovery.md,
    "Serialization"; ``tests/scenarios/``).

    :raises ValueError: for NaN or an infinity, which JSON cannot carry.
    """
    text = _encode(event)
    # Substring tests first: the regex below costs a microsecond a line, and is rarely needed.
    if "e-" in text and _NEG_EXPONENT_RE.search(text):  # a float like 1e-07, or text like it
        text = _encode_floats_as_rust(event)
    if "\x9b" in text:  # U+009B, the C1 CSI, escaped as the Rust SDK escapes it (not the rest of C1)
        text = text.replace("\x9b", "\\u009b")
    return text.encode("utf-8", "replace") + b"\n"


def _line_encoder() -> Callable[[Any], str]:
    """Compact JSON without NaN, built once: ``json.dumps`` with options builds an encoder
    per call, and ``JSONEncoder.encode`` its C half per call too."""
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return plain.encode
    # No circular-reference markers: a cycle ends in RecursionError, reported as ValueError.
    chunks = make(None, plain.default, json.encoder.encode_basestring, None, ":", ",",
                  False, False, False)

    def encode(obj: Any) -> str:
        try:
            return "".join(chunks(obj, 0))
        except RecursionError:
            raise ValueError("the event is nested too deeply or refers to itself") from None

    return encode


_encode = _line_encoder()

# A float with a negative exponent as ``repr`` writes it (``1e-07``, ``1.5e-05``); the Rust SDK
# (serde_json) writes ``1e-7`` and ``0.000015`` (docs/discovery.md, "Numbers").
_NEG_EXPONENT_RE = re.compile(r"\de-")


def _float_text(value: float) -> str:
    """A float as the Rust SDK writes it: ``repr``'s shortest digits, a decimal point from
    1e-5 to below 1e16, else ``DeN`` with a signed, unpadded exponent."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not JSON (§2)")
    text = float.__repr__(value)
    if "e" not in text:
        return text
    mantissa, exp_text = text.split("e")
    exponent = int(exp_text)
    if exponent == -5:
        return ("-" if value < 0 else "") + "0.0000" + mantissa.lstrip("-").replace(".", "")
    return f"{mantissa}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def _encode_floats_as_rust(event: Any) -> str:
    """The line through json's pure-Python encoder with :func:`_float_text` for floats."""
    make = getattr(json.encoder, "_make_iterencode", None)
    if make is None:  # not in this interpreter's json: keep repr's spelling, still valid JSON
        return _encode(event)
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    chunks = make({}, plain.default, json.encoder.encode_basestring, None, _float_text,
                  ":", ",", False, False, True)
    return "".join(chunks(event, 0))
if RESERVED_FIELDS != ("type", "aoi"):  # Emitter.emit tests the two names inline
    raise ImportError("machinemode.schemas.RESERVED_FIELDS changed; update Emitter.emit")


class Emitter:
    """Writes one AOI JSONL stream to a binary stream.

    :param stream: where the lines go (``sys.stdout.buffer``; ``None`` for a closed stdout,
        which makes every flush a :class:`StreamFailed`).
    :param identity: the §5 identity of this run.
    :param command: ``aoi:meta.command``.
    :param event_types: the domain types this command declared; emitting another is a
        ``ValueError`` (discovery cannot drift from the stream). ``None`` accepts any.
    :param flush_each: flush after every line (unbounded streams, §4.2).
    :param timestamps: write ``aoi.t`` on every line (§8.1 MAY); on by default.
    """

    def __init__(
        self,
        stream: Optional[BinaryIO],
        identity: Identity,
        *,
        command: Optional[str] = None,
        event_types: Optional[Collection[str]] = None,
        run: Optional[str] = None,
        clock: Callable[[], float] = time.monotonic,
        flush_each: bool = False,
        buffer_limit: int = 1 << 16,
        trace_id: Optional[str] = None,
        timestamps: bool = True,
    ) -> None:
        self._stream = stream
        self._timestamps = timestamps
        self.identity = identity
        self.command = command
        self._types = None if event_types is None else frozenset(event_types)
        self.item_error_count = 0  # item-scope errors written: ``partial``'s default (§8.3)
        #: The first process-scope error written: the run is over (§9.1), and its category
        #: decides the exit status (the harness reads it).
        self.first_process_error: Optional[AoiError] = None
        self._checked_types: Set[str] = set()  # types already found plain and declared
        self.run = run or new_ulid()
        self._clock = clock
        self._t0: Optional[float] = None
        self.flush_each = flush_each
        self._limit = buffer_limit
        self._trace_id = trace_id
        self._buf = bytearray()
        self.seq = 0
        self.count = 0
        self.warning_count = 0
        #: Records consumed from input (§8.3 ``input_count``), once :meth:`note_input` is called.
        self.input_count: Optional[int] = None
        self.error_count = 0
        self.bytes_written = 0
        self.meta_written = False
        self.finished = False
        self._failure: Optional[BaseException] = None

    # -- writing ---------------------------------------------------------------------------

    def _envelope(self) -> Dict[str, Any]:
        assert self._t0 is not None
        env: Dict[str, Any] = {"seq": self.seq, "run": self.run}
        if self._timestamps:
            env["t"] = max(0, int((self._clock() - self._t0) * 1000))
        if self._trace_id is not None:
            env["trace_id"] = self._trace_id
        return env

    def _write(self, etype: str, fields: Mapping[str, Any]) -> None:
        if self.finished:
            raise RuntimeError("the stream is finished: nothing follows aoi:summary (§13.1)")
        if self._failure is not None:
            raise self._failure
        if self._t0 is None:
            self._t0 = self._clock()
        line = encode_line({"type": etype, "aoi": self._envelope(), **fields})
        with signals.HELD:
            self._buf += line
            self.seq += 1
            self.bytes_written += len(line)
            if etype == "aoi:warning":
                self.warning_count += 1
            elif etype == "aoi:error":
                self.error_count += 1
            elif not etype.startswith("aoi:"):
                self.count += 1
            if self.flush_each or len(self._buf) >= self._limit:
                self._flush_buffer()

    def _flush_buffer(self) -> None:
        if self._failure is not None:
            raise self._failure
        data, self._buf = bytes(self._buf), bytearray()
        try:
            if self._stream is None:
                raise OSError(_errno.EBADF, "stdout is closed")
            view = memoryview(data)
            while view:
                n = self._stream.write(view)
                if n is None:  # a non-blocking raw stream that took nothing
                    raise OSError(_errno.EAGAIN, "stdout would block")
                view = view[n:]
            self._stream.flush()
        except BrokenPipeError:
            self._failure = StreamClosed()
            raise self._failure from None
        except (OSError, ValueError) as exc:  # ValueError: the file object is closed
            self._failure = StreamFailed(getattr(exc, "errno", None))
            raise self._failure from None

    def flush(self) -> None:
        """Write what is buffered (the summary flushes by itself)."""
        with signals.critical():
            if self._buf:
                self._flush_buffer()

    # -- framework events ------------------------------------------------------------------

    def meta(self, *, properties: Optional[Mapping[str, Any]] = None,
             args_redacted: Optional[bool] = None,
             input_fingerprint: Optional[str] = None) -> None:
        """Write ``aoi:meta`` (§5, §8.3, §11); only the first call writes. Raw argv and the
        environment are never echoed (§8.3): only what the caller names here."""
        if self.meta_written:
            return
        fields: Dict[str, Any] = dict(self.identity.fields())
        if self.command is not None:
            fields["command"] = self.command
        if args_redacted is not None:  # the Rust SDK's order: args_redacted, input_fingerprint
            fields["args_redacted"] = bool(args_redacted)
        if input_fingerprint is not None:
            fields["input_fingerprint"] = input_fingerprint
        if properties:
            fields["properties"] = sorted_keys(properties)
        self.meta_written = True
        self._write("aoi:meta", fields)

    def _start(self) -> None:
        if not self.meta_written:
            self.meta()

    def emit(self, event: Any, fields: Optional[Mapping[str, Any]] = None) -> None:
        """Write one domain event: an :func:`machinemode.event` instance, or a type name and
        its fields (``emit("hit", {"id": …})``).

        :raises ValueError: for an ``aoi:`` type, a reserved field (``type``, ``aoi``), or a
            type this command did not declare.
        """
        if isinstance(event, str):
            etype = event
            body = fields if fields is not None else {}
        else:
            declared = event_type_of(event)
            if declared is None:
                raise ValueError(f"{type(event).__name__} is not marked with @event(...)")
            etype = declared
            body = to_fields(event)
            if fields:
                body.update(fields)
        if etype.startswith("aoi:"):
            raise ValueError(f"{etype}: the aoi: namespace is the framework's (§8.2); "
                             "use the emitter's own methods")
        if etype not in self._checked_types:
            if not _TYPE_RE.match(etype):
                raise ValueError(f"event type {etype!r} is not a plain name")
            if self._types is not None and etype not in self._types:
                raise ValueError(f"event type {etype!r} is not declared by this command")
            self._checked_types.add(etype)
        if "type" in body or "aoi" in body:  # RESERVED_FIELDS
            name = "type" if "type" in body else "aoi"
            raise ValueError(f"field {name!r} is reserved on every event (§8.1)")
        self._start()
        self._write(etype, body)

    def plan(self, action: str, target: str, detail: Optional[str] = None) -> None:
        """One ``aoi:plan``: a side effect a ``--dry-run`` would have made (§14.2)."""
        self._start()
        fields: Dict[str, Any] = {"action": action, "target": target}
        if detail is not None:
            fields["detail"] = clean_message(detail)
        self._write("aoi:plan", fields)

    def warning(self, code: str, message: str, **fields: Any) -> None:
        """One ``aoi:warning``: a recoverable issue, the run continues (§8.3).

        Takes the §9.1 fields; a warning has no required category, so ``category`` defaults to
        none. Counted into ``warning_count``.
        """
        category = fields.pop("category", None)
        err = AoiError(category or "internal", code, message, **fields)
        body = err.fields("item")
        # The Rust SDK's order (its ``Warning``): code, message, origin, target, line_number,
        # details; the §9.1 fields it does not carry come after line_number.
        out: Dict[str, Any] = {"code": body.pop("code"), "message": body.pop("message")}
        if category is not None:
            out["category"] = body["category"]
            out["retryable"] = body["retryable"]
        for name in ("scope", "category", "retryable", "retry_after_ms"):
            body.pop(name, None)
        details = body.pop("details", None)
        properties = body.pop("properties", None)
        for name in ("origin", "target", "line_number"):
            if name in body:
                out[name] = body.pop(name)
        out.update(body)
        if details is not None:
            out["details"] = details
        if properties is not None:
            out["properties"] = properties
        self._start()
        self._write("aoi:warning", out)

    def error(self, err: AoiError, *, scope: str = "item") -> None:
        """One ``aoi:error`` (§9.1). ``scope="item"``: the stream continues; the harness
        writes the process-scope error that ends a run. Counted into ``error_count``."""
        self._start()
        fields = err.fields(scope)
        if "domain" not in fields:
            # §9.1 `domain` SHOULD, its default the tool: written as the tool's name.
            fields = in_order({**fields, "domain": self.identity.tool}, (*ERROR_FIELDS, "properties"))
        self._write("aoi:error", fields)
        if scope == "process":
            if self.first_process_error is None:
                self.first_process_error = err
        else:
            self.item_error_count += 1

    def forward(self, etype: str, fields: Mapping[str, Any], origin: str) -> None:
        """Forward an upstream ``aoi:error`` or ``aoi:warning``, tagged with ``origin``
        (§13.1); it counts into this stream's error or warning count."""
        if etype not in ("aoi:error", "aoi:warning"):
            raise ValueError("only aoi:error and aoi:warning are forwarded (§13.1)")
        body = {k: v for k, v in fields.items() if k not in RESERVED_FIELDS}
        if not isinstance(body.get("origin"), str):
            body["origin"] = origin
        for key in ("message", "hint"):
            if isinstance(body.get(key), str):
                body[key] = clean_message(body[key])
        if etype == "aoi:error":
            body.setdefault("scope", "process")  # the Rust SDK's default for an absent scope
            if body.get("retryable") is not True:
                body.pop("retry_after_ms", None)  # §9.1: no retry delay without retryable
        # The fields §9.1 defines, in the Rust SDK's order; a field it does not define would
        # break §8.1 on our stream (FRAMEWORK_EXTRA_FIELD), and Rust drops it too.
        body = {k: body[k] for k in _FORWARDED_ORDER[etype] if k in body}
        # The maps as the Rust SDK decodes and writes them: keys sorted at every depth, and
        # ``wrapped`` with only §9.1's fields, in their order (docs/discovery.md, "Serialization").
        for key in ("details", "properties"):
            if isinstance(body.get(key), dict):
                body[key] = sorted_keys(body[key])
        if isinstance(body.get("wrapped"), dict):
            body["wrapped"] = {k: body["wrapped"][k] for k in WRAPPED_FIELDS if k in body["wrapped"]}
        self._start()
        self._write(etype, body)

    def note_input(self, n: int) -> None:
        """Count ``n`` records consumed from input into the summary's ``input_count`` (§8.3),
        on every ending, a failure included; ``note_input(0)`` makes it 0 rather than absent."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("note_input takes a count >= 0")
        self.input_count = (self.input_count or 0) + n

    def consumed(self, *, warnings: int = 0, errors: int = 0) -> None:
        """Count upstream warnings and errors read but not forwarded (§8.3: emitted plus
        consumed)."""
        self.warning_count += warnings
        self.error_count += errors

    def check(self, name: str, ok: bool, severity: str = "info",
              detail: Optional[str] = None) -> None:
        """One ``aoi:check`` of a doctor command (§8.3, §19.3)."""
        self._start()
        fields: Dict[str, Any] = {"name": name, "ok": bool(ok), "severity": severity}
        if detail is not None:
            fields["detail"] = clean_message(detail)
        self._write("aoi:check", fields)

    def progress(self, completed: int, total: Optional[int] = None,
                 unit: Optional[str] = None) -> None:
        """One ``aoi:progress``; never required for correctness (§8.3)."""
        self._start()
        fields: Dict[str, Any] = {"completed": completed}
        if total is not None:
            fields["total"] = total
        if unit is not None:
            fields["unit"] = unit
        self._write("aoi:progress", fields)

    def heartbeat(self, interval_ms: Optional[int] = None) -> None:
        """One ``aoi:heartbeat`` of an unbounded stream (§4.2, §8.3)."""
        self._start()
        self._write("aoi:heartbeat", {} if interval_ms is None else {"interval_ms": interval_ms})

    def summary(
        self,
        ok: bool,
        *,
        reason: Optional[str] = None,
        partial: Optional[bool] = None,
        truncated: bool = False,
        next_cursor: Optional[str] = None,
        input_count: Optional[int] = None,
        caused_by: Optional[Mapping[str, Any]] = None,
        upstream: Optional[Mapping[str, Any]] = None,
        properties: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Write the terminal ``aoi:summary`` with every field of §8.3 and flush.

        ``ok`` has no default (§4). ``reason`` is required with ``ok`` false (``failed`` when
        not given) and may only be ``skipped`` with ``ok`` true. ``upstream`` is omitted when
        unknown, never null (§13.1).
        """
        if not isinstance(ok, bool):
            raise TypeError("ok is a bool, and has no default (§4)")
        if ok and self.first_process_error is not None:
            ok, reason = False, "failed"  # success after a process-scope error is a lie (§9.1)
        if ok and reason not in (None, "skipped"):
            raise ValueError("with ok true the only reason is skipped (§8.3)")
        if not ok:
            reason = reason or "failed"
            if reason not in REASONS:
                raise ValueError(f"reason {reason!r} is not one of {REASONS} (§8.3)")
        self._start()
        fields: Dict[str, Any] = {"ok": ok}
        if reason is not None:
            fields["reason"] = reason
        # The Rust SDK's order and omissions (docs/discovery.md, "Serialization").
        fields["event_count"] = self.seq + 1
        fields["count"] = self.count
        if input_count is None:  # a count given here is the total; else what was noted
            input_count = self.input_count
        if input_count is not None:
            fields["input_count"] = input_count
        fields["warning_count"] = self.warning_count
        fields["error_count"] = self.error_count
        fields["partial"] = bool(partial) if partial is not None \
            else self.item_error_count > 0 and self.count > 0
        fields["truncated"] = bool(truncated)
        if truncated and next_cursor is not None:  # omitted, never null; only with truncated (§15)
            fields["next_cursor"] = next_cursor
        if self._t0 is not None:
            fields["elapsed_ms"] = max(0, int((self._clock() - self._t0) * 1000))
        if caused_by is not None and not ok:  # §8.3: present when ok is false
            fields["caused_by"] = in_order(caused_by, _CAUSED_BY_ORDER)
        if upstream:
            fields["upstream"] = in_order({k: v for k, v in upstream.items() if isinstance(v, str)},
                                          _UPSTREAM_ORDER)
        fields.update(self.identity.fields())
        if properties:
            fields["properties"] = sorted_keys(properties)
        self._write("aoi:summary", fields)
        self.finished = True
        self.flush()
