"""Reading JSONL input that may be another tool's AOI stream (AOI-CLI §12, §13, §13.1).

The one reader of structured input lines: a transformer iterates it, and a sink's
:func:`machinemode.records.read_records` reads its records through it, so each rule below is
written once (as the Rust SDK's ``aoi::read::UpstreamState`` with ``aoi::Input``). A line is
one of:

* a record: a domain event (its ``type`` kept, :class:`~machinemode.consumer.DomainEvent`)
  or a plain JSON object without a string ``type`` (:class:`PlainRecord`); §13 "domain events
  are data";
* an upstream ``aoi:error`` or ``aoi:warning``: counted (§8.3, §13.1), and forwarded tagged
  with ``origin`` (:meth:`UpstreamReader.forward`);
* another framework event: consumed here; ``aoi:meta`` and ``aoi:summary`` are never
  forwarded (§13.1), the meta names the ``upstream`` of this run's summary;
* a malformed line (not JSON, not an object, over the line limit): an
  :class:`InputLineError`, ``validation`` ``INPUT_JSONL_PARSE_ERROR`` with its
  ``line_number`` (§12.2); whitespace-only lines are skipped.

At the end, :meth:`UpstreamReader.accounting` says what the upstream does to this run, with
the Rust SDK's codes:

* an upstream ``aoi:error``, or an upstream ``ok:false``, fails the run unless
  ``--continue-on-error`` (§13.1), with ``caused_by``: the upstream summary's own
  ``caused_by``, else the retry fields of the most severe upstream error (the first
  process-scope one, else the first);
* a last line without its ``\\n``, or an AOI stream (a framework event or an envelope was
  seen) that ends without ``aoi:summary``, is ``io`` ``UPSTREAM_TRUNCATED`` (§2, §13.1);
* an ``aoi:`` event this version does not know is ``unsupported``
  ``UPSTREAM_UNKNOWN_FRAMEWORK_EVENT``: success cannot be reported over it (§13);
* an AOI stream that breaks Part I (the verifier's verdict, :mod:`machinemode.consumer`) is
  ``validation`` ``UPSTREAM_PROTOCOL_VIOLATION``;
* plain JSONL needs no summary.

Usage::

    reader = UpstreamReader(sys.stdin.buffer, continue_on_error=False)
    for item in reader:
        if isinstance(item, (DomainEvent, PlainRecord)): ...transform record_fields(item)...
        else: emit(reader.forward(item))        # an ErrorEvent or WarningEvent, origin-tagged
    acc = reader.accounting()
    if acc.io_error: emit(acc.io_error)
    summary.update(acc.summary_fields(count=n))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from .consumer import (
    CATEGORIES,
    DEFAULT_MAX_LINE,
    VIOLATION,
    CausedBy,
    Conclusion,
    DomainEvent,
    ErrorEvent,
    JsonRefused,
    Meta,
    StreamReader,
    Summary,
    WarningEvent,
    parse_json,
    split_lines,
)
from .errors import AoiError, io, unsupported, validation

__all__ = ["UpstreamReader", "UpstreamAccounting", "InputLineError", "PlainRecord", "Observed",
           "distinct_object", "record_fields", "FIX_INPUT_HINT", "UPSTREAM_TRUNCATED",
           "UPSTREAM_PROTOCOL_VIOLATION", "UPSTREAM_UNKNOWN_FRAMEWORK_EVENT",
           "INPUT_JSONL_PARSE_ERROR"]

UPSTREAM_TRUNCATED = "UPSTREAM_TRUNCATED"
UPSTREAM_PROTOCOL_VIOLATION = "UPSTREAM_PROTOCOL_VIOLATION"
UPSTREAM_UNKNOWN_FRAMEWORK_EVENT = "UPSTREAM_UNKNOWN_FRAMEWORK_EVENT"
INPUT_JSONL_PARSE_ERROR = "INPUT_JSONL_PARSE_ERROR"
#: The hint of a bad input item that ends a fail-fast run (the Rust SDK's words).
FIX_INPUT_HINT = "fix the input, or pass --continue-on-error to skip bad records"
_UPSTREAM_IDENTITY = ("tool", "tool_version", "schema_name", "schema_version")
_RESERVED = ("type", "aoi")
# What the verifier says of a line it could not read as an event; the two type findings
# mean a plain object (a record of plain JSONL), every other one a malformed line.
_NO_TYPE = ("TYPE_MISSING", "TYPE_NOT_STRING")
_UNKNOWN_FRAMEWORK = "UNKNOWN_FRAMEWORK_EVENT"
_WHITESPACE = b" \t\n\x0c\r"  # Rust's u8::is_ascii_whitespace


@dataclass(frozen=True)
class PlainRecord:
    """A JSON object without a string ``type``: a record of plain JSONL, not an event (§12.1)."""

    raw: Mapping[str, Any]

    @property
    def type(self) -> Optional[str]:
        """Always ``None``: a plain record has no domain type."""
        return None


Item = Union[DomainEvent, PlainRecord, ErrorEvent, WarningEvent]


@dataclass(frozen=True)
class InputLineError:
    """A malformed input line (§12.2): ``validation`` ``INPUT_JSONL_PARSE_ERROR`` with its
    ``line_number`` and the 0-based ``item_index`` it took among the records."""

    line_number: int
    message: str
    item_index: Optional[int] = None

    def aoi_error(self, *, hint: Optional[str] = None) -> AoiError:
        """The error, to raise (fail-fast) or to write as an item error."""
        return validation(INPUT_JSONL_PARSE_ERROR, self.message, line_number=self.line_number,
                          item_index=self.item_index, hint=hint)

    def to_error(self) -> Dict[str, Any]:
        """The item-scope ``aoi:error`` event."""
        return {"type": "aoi:error", **self.aoi_error().fields("item")}


@dataclass(frozen=True)
class Observed:
    """One non-blank input line, classified: ``item_index`` counts records and malformed lines
    from 0 (``None`` for an upstream error or warning)."""

    line_number: int
    item_index: Optional[int]
    item: Union[Item, InputLineError]


@dataclass
class UpstreamAccounting:
    """What the upstream means for this tool's terminal ``aoi:summary`` (§13.1)."""

    input_count: int
    warning_count: int
    error_count: int
    ok: bool
    caused_by: Optional[CausedBy]
    upstream: Optional[Dict[str, str]]
    #: The ``aoi:error`` this tool writes itself: a cut, unknown or non-conforming upstream,
    #: or the malformed line a fail-fast read stopped at (process scope).
    error: Optional[AoiError] = None
    input_errors: List[InputLineError] = field(default_factory=list)
    conclusion: Optional[Conclusion] = None
    #: The upstream makes this run fail (the Rust SDK's ``UpstreamVerdict.fails_run``); ``ok``
    #: also counts malformed lines.
    upstream_fails: bool = False

    @property
    def io_error(self) -> Optional[Dict[str, Any]]:
        """:attr:`error` as the process-scope ``aoi:error`` event to write."""
        return None if self.error is None else {"type": "aoi:error", **self.error.fields("process")}

    def summary_fields(self, *, count: int, warnings: int = 0, errors: int = 0) -> Dict[str, Any]:
        """Fields for this tool's summary: ``count``, ``input_count``, the counters (ours plus upstream's), ``ok``,
        ``reason``, ``caused_by`` and ``upstream`` (each only when it applies)."""
        out: Dict[str, Any] = {
            "ok": self.ok,
            "count": count,
            "input_count": self.input_count,
            "warning_count": warnings + self.warning_count,
            "error_count": errors + self.error_count + (1 if self.error else 0),
        }
        if not self.ok:
            out["reason"] = "failed"
            if self.caused_by is not None:
                out["caused_by"] = self.caused_by.to_json()
        if self.upstream:
            out["upstream"] = dict(self.upstream)
        return out


def distinct_object(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """An ``object_pairs_hook`` that refuses a repeated key: readers disagree on which
    occurrence counts (RFC 8259 §4), so a record with one is not read at all."""
    obj: Dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise JsonRefused("DUPLICATE_KEY", f"the key {json.dumps(k)} repeats")
        obj[k] = v
    return obj


def record_fields(item: Union[DomainEvent, PlainRecord]) -> Dict[str, Any]:
    """A record's fields: a domain event's without ``type`` and ``aoi``; a plain object's all."""
    if isinstance(item, PlainRecord):
        return dict(item.raw)
    return {k: v for k, v in item.raw.items() if k not in _RESERVED}


def _replaces(worst: Optional[ErrorEvent], e: ErrorEvent) -> bool:
    # "The most severe upstream error" (§13.1), as the Rust SDK: the first process-scope
    # error, which ended the upstream run, else the first error.
    return worst is None or (e.scope == "process" and worst.scope != "process")


class UpstreamReader:
    """Iterate an upstream stream's records; then read :meth:`accounting`.

    ``fail_fast``: iteration stops at the first malformed line, which :meth:`accounting`
    reports as the process error; otherwise each is an item error (``input_errors``).
    ``distinct_keys``: a record with a repeated key is a malformed line (a sink's rule).
    """

    def __init__(
        self,
        source: Union[IO[bytes], Iterable[bytes]],
        *,
        continue_on_error: bool = False,
        fail_fast: bool = True,
        max_line: int = DEFAULT_MAX_LINE,
        distinct_keys: bool = False,
    ) -> None:
        self._source = source
        self.continue_on_error = continue_on_error
        self.fail_fast = fail_fast
        self._max_line = max_line
        self._distinct_keys = distinct_keys
        self._reader = StreamReader()
        self.meta: Optional[Meta] = None
        self.summary: Optional[Summary] = None
        self._records = self._warnings = self._errors = self._items = 0
        self._worst: Optional[ErrorEvent] = None
        self._input_errors: List[InputLineError] = []
        self._unknown_framework: List[str] = []
        self._aoi_stream = False
        self._truncated = False
        self._aborted = False
        self._lines = self._observe_all()

    def _chunks(self) -> Iterator[bytes]:
        src = self._source
        if hasattr(src, "read"):
            stream: Any = src
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    return
                yield chunk
        else:
            yield from src

    @property
    def origin(self) -> str:
        """The name a forwarded event is tagged with: the upstream's ``aoi:meta.tool``."""
        return self.meta.tool if self.meta is not None and self.meta.tool else "upstream"

    def lines(self) -> Iterator[Observed]:
        """Every non-blank line in input order, malformed ones included, whatever
        ``fail_fast`` says: what a reader that applies its own mode needs. The source is read
        once: this, iteration and :meth:`accounting` share one pass."""
        return self._lines

    def __iter__(self) -> Iterator[Item]:
        for seen in self._lines:
            if isinstance(seen.item, InputLineError):
                if self.fail_fast:
                    self._aborted = True
                    return
                continue
            yield seen.item

    def _observe_all(self) -> Iterator[Observed]:
        line_number = 0
        for line, terminated in split_lines(self._chunks(), self._max_line):
            if not terminated:
                self._truncated = True  # §2: a cut input, never a record
                self._reader.feed(line, False)
                continue
            line_number += 1
            if line is not None and not line.strip(_WHITESPACE):
                continue
            seen = self._observe(line, line_number)
            if seen is not None:
                yield seen

    def _observe(self, line: Optional[bytes], line_number: int) -> Optional[Observed]:
        before = len(self._reader._findings)
        event = self._reader.feed(line, True)
        found = self._reader._findings[before:]
        if any(f.code == _UNKNOWN_FRAMEWORK for f in found):
            self._unknown_framework.append(getattr(event, "type", ""))
        item: Union[Item, InputLineError, None]
        if event is None:
            item = self._not_an_event(line, found[-1].message if found else "unreadable line",
                                      any(f.code in _NO_TYPE for f in found), line_number)
        elif isinstance(event, DomainEvent):
            self._aoi_stream = self._aoi_stream or isinstance(event.raw.get("aoi"), dict)
            item = self._refused(line, line_number) if self._distinct_keys else None
            item = item or event
        else:
            self._aoi_stream = True
            item = self._framework(event)
        if item is None:
            return None
        if isinstance(item, (ErrorEvent, WarningEvent)):
            return Observed(line_number, None, item)
        self._items += 1
        if isinstance(item, InputLineError):
            item = InputLineError(line_number, item.message, self._items - 1)
            self._input_errors.append(item)
        else:
            self._records += 1
        return Observed(line_number, self._items - 1, item)

    def _not_an_event(self, line: Optional[bytes], why: str, plain: bool,
                      line_number: int) -> Union[PlainRecord, InputLineError]:
        if plain and line is not None:
            # A JSON object without a string type; the verifier parsed it, so only the
            # repeated-key rule can refuse it here.
            try:
                raw = parse_json(line.decode("utf-8"), distinct_object if self._distinct_keys else None)
                return PlainRecord(raw)
            except JsonRefused as e:
                why = str(e)
        return InputLineError(line_number, f"invalid JSON on input line {line_number}: {why}")

    def _refused(self, line: Optional[bytes], line_number: int) -> Optional[InputLineError]:
        """The malformed-line error of a record with a repeated key, or ``None``."""
        if line is None:
            return None
        try:
            parse_json(line.decode("utf-8"), distinct_object)
        except JsonRefused as e:
            return InputLineError(line_number, f"invalid JSON on input line {line_number}: {e}")
        return None

    def _framework(self, event: Any) -> Optional[Item]:
        if isinstance(event, Meta):
            if self.meta is None:
                self.meta = event
            return None  # §13.1 MUST NOT forward
        if isinstance(event, Summary):
            if self.summary is None:
                self.summary = event
            return None  # §13.1 MUST NOT forward
        if isinstance(event, ErrorEvent):
            self._errors += 1
            if _replaces(self._worst, event):
                self._worst = event
            return event
        if isinstance(event, WarningEvent):
            self._warnings += 1
            return event
        return None  # progress, heartbeat, plan, check: consumed

    def forward(self, event: Union[ErrorEvent, WarningEvent]) -> Dict[str, Any]:
        """The event to re-emit: without the upstream envelope, tagged with ``origin`` (§13.1).

        An event that already has an ``origin`` (forwarded further up) keeps it.
        """
        out = {k: v for k, v in event.raw.items() if k != "aoi"}
        out.setdefault("origin", self.origin)
        return out

    def _cause(self) -> Optional[CausedBy]:
        """§13.1 ``caused_by``: the upstream summary's own, else the most severe error's retry
        fields; a category this version does not know is routed as ``internal`` (§9.4)."""
        cause = self.summary.caused_by if self.summary is not None else None
        if cause is None and self._worst is not None:
            w = self._worst
            cause = CausedBy(w.category, w.code, w.retryable, w.retry_after_ms,
                             w.origin or (self.meta.tool if self.meta is not None else None))
        if cause is None:
            return None
        return CausedBy(cause.category if cause.category in CATEGORIES else "internal", cause.code,
                        cause.retryable, cause.retry_after_ms if cause.retryable else None,
                        cause.origin)

    def _verdict_error(self, conclusion: Conclusion) -> Optional[AoiError]:
        """The error this tool writes for its upstream: a cut, an unknown framework event, a
        stream that breaks Part I (checked in that order, the first one only)."""
        tool = self.meta.tool if self.meta is not None else None
        source = f"the upstream stream from {tool}" if tool else "the upstream stream"
        if self._truncated or (self._aoi_stream and self.summary is None):
            return io(UPSTREAM_TRUNCATED, f"{source} was cut (no newline at its end, or no "
                      "aoi:summary): its producer crashed or the pipe was cut", retryable=False)
        if self._unknown_framework:
            return unsupported(UPSTREAM_UNKNOWN_FRAMEWORK_EVENT,
                               f"upstream sent {json.dumps(self._unknown_framework[0])}, a framework "
                               "event this tool does not understand; it cannot report success over it")
        if self._aoi_stream and conclusion.verdict == VIOLATION and conclusion.violations:
            first = conclusion.violations[0]
            return validation(UPSTREAM_PROTOCOL_VIOLATION, f"{source} violates AOI-CLI: "
                              f"{first.code} ({first.section}): {first.message}")
        return None

    def accounting(self) -> UpstreamAccounting:
        """How the upstream ended and what it does to this tool's summary; reads what is
        left of the input first (unless a fail-fast iteration stopped at a malformed line)."""
        if not self._aborted:
            for _ in self._lines:
                pass
        conclusion = self._reader.finish()
        identity: Optional[Dict[str, str]] = None
        if self.meta is not None:
            identity = {k: v for k in _UPSTREAM_IDENTITY if isinstance(v := self.meta.raw.get(k), str)}
            if not identity:
                identity = None
        upstream_failed = self._errors > 0 or (self.summary is not None and not self.summary.ok)
        if self._aborted:
            error: Optional[AoiError] = self._input_errors[0].aoi_error(hint=FIX_INPUT_HINT)
        else:
            error = self._verdict_error(conclusion)
        fails = error is not None or (upstream_failed and not self.continue_on_error)
        return UpstreamAccounting(
            input_count=self._records,
            warning_count=self._warnings,
            error_count=self._errors + (0 if self._aborted else len(self._input_errors)),
            # §19.4: a malformed line, even one skipped, fails the run.
            ok=not fails and not self._input_errors,
            caused_by=self._cause() if upstream_failed else None,
            upstream=identity,
            error=error,
            input_errors=list(self._input_errors),
            conclusion=conclusion,
            upstream_fails=fails,
        )
