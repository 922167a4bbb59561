"""Reading another tool's stream as a transformer or sink (AOI-CLI §12, §13, §13.1).

A transformer reads an upstream AOI stream on stdin and emits its own. §13.1
binds it to:

* never forward the upstream's ``aoi:meta`` or ``aoi:summary`` (this reader
  never yields them);
* tag a forwarded ``aoi:error``/``aoi:warning`` with ``origin`` (:meth:`UpstreamReader.forward`);
* count upstream warnings into its ``warning_count`` and errors into ``error_count`` (§8.3);
* an upstream ``aoi:error`` sets ``ok:false`` unless ``--continue-on-error``;
* an upstream EOF without ``aoi:summary`` sets ``ok:false`` and SHOULD emit an
  ``io`` ``aoi:error`` first;
* when failing because of upstream, carry ``caused_by`` with the retry-critical
  fields of the most severe upstream error, and ``upstream`` naming the direct
  upstream (omitted, never null, when unknown).

§12.2: a malformed input line is either fatal (``fail_fast``, the default for a
mutating import) or an item error with its ``line_number`` (``continue_on_error``).
§13: an unknown unprefixed type is data the transformer may ignore; an unknown
``aoi:`` type forbids reporting success.

Usage::

    reader = UpstreamReader(sys.stdin.buffer, continue_on_error=False)
    for item in reader:
        if isinstance(item, DomainEvent): ...transform item.raw...
        else: emit(reader.forward(item))        # an ErrorEvent or WarningEvent, origin-tagged
    acc = reader.accounting()
    if acc.io_error: emit(acc.io_error)
    summary.update(acc.summary_fields(count=n))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Union

from .consumer import (
    DEFAULT_MAX_LINE,
    VIOLATION,
    CausedBy,
    DomainEvent,
    ErrorEvent,
    Meta,
    Outcome,
    StreamReader,
    Summary,
    WarningEvent,
    split_lines,
)

__all__ = ["UpstreamReader", "UpstreamAccounting", "InputLineError", "UPSTREAM_TRUNCATED",
           "UPSTREAM_VIOLATION", "INPUT_JSONL_PARSE_ERROR"]

UPSTREAM_TRUNCATED = "UPSTREAM_TRUNCATED"
UPSTREAM_VIOLATION = "UPSTREAM_VIOLATION"
INPUT_JSONL_PARSE_ERROR = "INPUT_JSONL_PARSE_ERROR"
_UPSTREAM_IDENTITY = ("tool", "tool_version", "schema_name", "schema_version")
# What a failed upstream summary without an error means for our caused_by (§8.3 reasons).
_REASON_CAUSE = {
    "cancelled": ("cancelled", "UPSTREAM_CANCELLED", False),
    "timeout": ("timeout", "UPSTREAM_TIMEOUT", True),
    "denied": ("authz", "UPSTREAM_DENIED", False),
}

Item = Union[DomainEvent, ErrorEvent, WarningEvent]


@dataclass(frozen=True)
class InputLineError:
    """A malformed input line (§12.2): an item-scope ``validation`` error with its ``line_number``."""

    line_number: int
    message: str

    def to_error(self) -> Dict[str, Any]:
        return {"type": "aoi:error", "scope": "item", "category": "validation", "code": INPUT_JSONL_PARSE_ERROR,
                "line_number": self.line_number, "message": self.message, "retryable": False}


@dataclass
class UpstreamAccounting:
    """What the upstream means for this tool's terminal ``aoi:summary`` (§13.1)."""

    input_count: int
    warning_count: int
    error_count: int
    ok: bool
    caused_by: Optional[CausedBy]
    upstream: Optional[Dict[str, str]]
    io_error: Optional[Dict[str, Any]]
    input_errors: List[InputLineError] = field(default_factory=list)
    outcome: Optional[Outcome] = None

    def summary_fields(self, *, count: int, warnings: int = 0, errors: int = 0) -> Dict[str, Any]:
        """Fields for this tool's summary: ``count``, ``input_count``, the counters (ours plus upstream's), ``ok``,
        ``reason``, ``caused_by`` and ``upstream`` (each only when it applies)."""
        out: Dict[str, Any] = {
            "ok": self.ok,
            "count": count,
            "input_count": self.input_count,
            "warning_count": warnings + self.warning_count,
            "error_count": errors + self.error_count + (1 if self.io_error else 0),
        }
        if not self.ok:
            out["reason"] = "failed"
            if self.caused_by is not None:
                out["caused_by"] = self.caused_by.to_json()
        if self.upstream:
            out["upstream"] = dict(self.upstream)
        return out


def _severity(e: ErrorEvent) -> int:
    # Process scope ends the run; a non-retryable error cannot be fixed by retrying.
    return (2 if e.scope == "process" else 0) + (1 if not e.retryable else 0)


class UpstreamReader:
    """Iterate an upstream stream's records; then read :meth:`accounting`."""

    def __init__(
        self,
        source: Union[IO[bytes], Iterable[bytes]],
        *,
        continue_on_error: bool = False,
        fail_fast: bool = True,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        self._source = source
        self.continue_on_error = continue_on_error
        self.fail_fast = fail_fast
        self._max_line = max_line
        self._reader = StreamReader()
        self.meta: Optional[Meta] = None
        self.summary: Optional[Summary] = None
        self._input = self._warnings = self._errors = 0
        self._worst: Optional[ErrorEvent] = None
        self._input_errors: List[InputLineError] = []
        self._aborted = False
        self._uninterpreted = False
        self._done = False

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

    def __iter__(self) -> Iterator[Item]:
        line_number = 0
        for line, terminated in split_lines(self._chunks(), self._max_line):
            if terminated:
                line_number += 1
            before = len(self._reader._findings)
            event = self._reader.feed(line, terminated)
            if event is None:
                if terminated and any(
                    f.code in ("INVALID_JSON", "INVALID_UTF8", "EMPTY_LINE", "NOT_AN_OBJECT", "TYPE_MISSING",
                               "TYPE_NOT_STRING", "LINE_TOO_LONG", "NESTING_TOO_DEEP", "NUMBER_OUT_OF_RANGE",
                               "LONE_SURROGATE")
                    for f in self._reader._findings[before:]
                ):
                    self._input_errors.append(InputLineError(line_number, f"invalid JSON on input line {line_number}"))
                    if self.fail_fast:
                        self._aborted = True
                        break
                continue
            if isinstance(event, Meta):
                if self.meta is None:
                    self.meta = event
                continue  # §13.1 MUST NOT forward
            if isinstance(event, Summary):
                if self.summary is None:
                    self.summary = event
                continue  # §13.1 MUST NOT forward
            if isinstance(event, ErrorEvent):
                if self.summary is None:
                    self._errors += 1
                    if self._worst is None or _severity(event) > _severity(self._worst):
                        self._worst = event
                yield event
            elif isinstance(event, WarningEvent):
                if self.summary is None:
                    self._warnings += 1
                yield event
            elif isinstance(event, DomainEvent):
                self._input += 1
                yield event
            elif event.type.startswith("aoi:") and event.type not in (
                "aoi:progress", "aoi:heartbeat", "aoi:plan", "aoi:check"
            ):
                self._uninterpreted = True  # §13: MUST NOT report success
        self._done = True

    def forward(self, event: Union[ErrorEvent, WarningEvent]) -> Dict[str, Any]:
        """The event to re-emit: without the upstream envelope, tagged with ``origin`` (§13.1).

        An event that already has an ``origin`` (forwarded further up) keeps it.
        """
        out = {k: v for k, v in event.raw.items() if k != "aoi"}
        out.setdefault("origin", self.origin)
        return out

    def accounting(self) -> UpstreamAccounting:
        """How the upstream ended and what it does to this tool's summary."""
        if not self._done:
            for _ in self:
                pass
        outcome = self._reader.finish()
        identity: Optional[Dict[str, str]] = None
        if self.meta is not None:
            identity = {k: v for k in _UPSTREAM_IDENTITY if isinstance(v := self.meta.raw.get(k), str)}
            if not identity:
                identity = None
        caused_by: Optional[CausedBy] = None
        io_error: Optional[Dict[str, Any]] = None
        if self._aborted:
            first = self._input_errors[0]
            caused_by = CausedBy("validation", INPUT_JSONL_PARSE_ERROR, False)
            io_error = first.to_error() | {"scope": "process"}
        elif self.summary is None:
            # §13.1: upstream EOF without a terminal summary is an io failure.
            caused_by = CausedBy("io", UPSTREAM_TRUNCATED, False, origin=self.origin)
            io_error = {"type": "aoi:error", "scope": "process", "category": "io", "code": UPSTREAM_TRUNCATED,
                        "message": "the upstream stream ended without its aoi:summary", "retryable": False}
        elif outcome.verdict == VIOLATION:
            caused_by = CausedBy("io", UPSTREAM_VIOLATION, False, origin=self.origin)
            io_error = {"type": "aoi:error", "scope": "process", "category": "io", "code": UPSTREAM_VIOLATION,
                        "message": f"the upstream stream violates AOI-CLI: {outcome.rule}", "retryable": False}
        elif self._worst is not None and (not self.continue_on_error or not self.summary.ok):
            w = self._worst
            caused_by = CausedBy(w.route, w.code, w.retryable, w.retry_after_ms, w.origin or self.origin)
        elif not self.summary.ok:
            if self.summary.caused_by is not None:
                caused_by = self.summary.caused_by
            else:
                cat, code, retry = _REASON_CAUSE.get(self.summary.reason or "", ("internal", "UPSTREAM_FAILED", False))
                caused_by = CausedBy(cat, code, retry, origin=self.origin)
        ok = caused_by is None and not self._uninterpreted
        if not self.fail_fast and self._input_errors and not self.continue_on_error:
            ok = False
            caused_by = caused_by or CausedBy("validation", INPUT_JSONL_PARSE_ERROR, False)
        upstream_errors = self._errors
        if self.summary is not None and self.summary.error_count is not None:
            upstream_errors = max(upstream_errors, self.summary.error_count)
        upstream_warnings = self._warnings
        if self.summary is not None and self.summary.warning_count is not None:
            upstream_warnings = max(upstream_warnings, self.summary.warning_count)
        return UpstreamAccounting(
            input_count=self._input,
            warning_count=upstream_warnings,
            error_count=upstream_errors + (0 if self.fail_fast else len(self._input_errors)),
            ok=ok,
            caused_by=caused_by,
            upstream=identity,
            io_error=io_error,
            input_errors=list(self._input_errors),
            outcome=outcome,
        )
