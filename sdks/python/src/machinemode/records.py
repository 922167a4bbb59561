"""Reading ``--input-jsonl`` records, and an upstream AOI stream, for sinks (AOI-CLI §12, §13.1).

:func:`read_records` reads the whole input before the command acts, so fail-fast (§12.2
"whole-input fail-fast") writes nothing when any line is bad, the lines before it included.
Each line is a record of the command's record type (checked by :func:`machinemode.load`, the
rules ``$defs.record`` publishes) or an event of an upstream AOI stream:

* upstream ``aoi:meta`` and ``aoi:summary`` are never forwarded (§13.1); the meta's identity
  becomes ``aoi:summary.upstream``;
* upstream ``aoi:error`` and ``aoi:warning`` are forwarded with ``origin`` and counted; an
  upstream error fails the run with ``caused_by`` unless ``--continue-on-error`` (§13.1);
* an upstream stream that ends without its summary, or whose last line is cut, is an ``io``
  error and nothing is done (§13.1, §2);
* unprefixed event types the record does not describe are ignored (§13).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any, Dict, Generic, List, Optional, Tuple, Type, TypeVar

from .emitter import Emitter
from .errors import AoiError, io, unsupported, usage, validation
from .harness import Outcome, Stop
from .schemas import RecordError, load

__all__ = ["RecordBatch", "Stop", "read_document", "read_records"]

T = TypeVar("T")
_CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_KNOWN_FRAMEWORK = {"aoi:plan", "aoi:progress", "aoi:heartbeat", "aoi:check"}


@dataclasses.dataclass
class RecordBatch(Generic[T]):
    """The good records of the input, with their line numbers, and what the input said."""

    records: List[Tuple[int, T]]
    input_count: int
    item_errors: int
    upstream: Optional[Dict[str, str]]
    upstream_errors: List[Dict[str, Any]]


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    obj: Dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError("duplicate key")
        obj[k] = v
    return obj


def _reject_constant(_name: str) -> Any:
    raise ValueError("NaN and infinities are not JSON")


def _read_source(path: str) -> bytes:
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            return b""
        try:
            if stdin.isatty():
                raise usage("STDIN_IS_TERMINAL",
                            "--input-jsonl - reads standard input, which is a terminal.")
            return stdin.buffer.read()
        except (OSError, ValueError):
            return b""  # a closed stdin is an empty input
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise io("INPUT_NOT_FOUND", "The input file does not exist.", target=path) from None
    except OSError as e:
        raise io("INPUT_UNREADABLE", f"The input file cannot be read: {e.strerror}.",
                 target=path) from None


def caused_by_of(err: Dict[str, Any], origin: str) -> Dict[str, Any]:
    """§13.1: the retry-critical fields of an upstream error, for ``aoi:summary.caused_by``."""
    cb: Dict[str, Any] = {
        "origin": err["origin"] if isinstance(err.get("origin"), str) else origin,
        "category": err["category"] if isinstance(err.get("category"), str) else "internal",
        "code": err["code"] if isinstance(err.get("code"), str)
        and _CODE_RE.match(err["code"]) else "UPSTREAM_ERROR",
        "retryable": err["retryable"] if isinstance(err.get("retryable"), bool) else False,
    }
    ra = err.get("retry_after_ms")
    if cb["retryable"] and isinstance(ra, int) and not isinstance(ra, bool) and ra >= 0:
        cb["retry_after_ms"] = ra
    return cb


def read_records(out: Emitter, path: str, record_type: Type[T], *,
                 continue_on_error: bool) -> RecordBatch[T]:
    """Read and check every line of ``path`` (``-``: stdin); see the module doc.

    :raises AoiError: fail-fast on the first bad line (``validation``, with
        ``line_number``), or on a cut upstream (``io``), before anything is done.
    :raises Stop: on an upstream failure without ``--continue-on-error``.
    """
    raw = _read_source(path)
    parts = raw.split(b"\n")
    cut = parts.pop()
    numbered = [(i + 1, line) for i, line in enumerate(parts)]
    is_aoi = b'"aoi:' in raw
    if cut.strip():
        if is_aoi:
            raise io("UPSTREAM_TRUNCATED",
                     "The upstream stream's last line has no line feed: it was cut.",
                     line_number=len(parts) + 1, target=path)
        numbered.append((len(parts) + 1, cut))
    records: List[Tuple[int, T]] = []
    upstream: Optional[Dict[str, str]] = None
    summary: Optional[Dict[str, Any]] = None
    upstream_errors: List[Dict[str, Any]] = []
    pending_forward: List[Tuple[str, Dict[str, Any]]] = []
    bad: List[AoiError] = []
    input_count = 0
    for ln, line in numbered:
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode("utf-8"), object_pairs_hook=_no_duplicates,
                             parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            input_count += 1
            bad.append(validation("INPUT_JSONL_PARSE_ERROR", f"Invalid JSON on input line {ln}.",
                                  line_number=ln))
            continue
        etype = obj.get("type") if isinstance(obj, dict) else None
        if isinstance(etype, str) and etype.startswith("aoi:"):
            if etype == "aoi:meta":
                upstream = {k: obj[k] for k in ("tool", "tool_version", "schema_name",
                                                "schema_version") if isinstance(obj.get(k), str)}
            elif etype == "aoi:summary":
                summary = obj
            elif etype in ("aoi:error", "aoi:warning"):
                pending_forward.append((etype, obj))
            elif etype not in _KNOWN_FRAMEWORK:
                bad.append(unsupported("UNKNOWN_UPSTREAM_EVENT",
                                       f"Input line {ln} is a framework event this version "
                                       "cannot interpret.", line_number=ln))
            continue
        if isinstance(etype, str):
            continue  # an upstream domain event the record does not describe (§13)
        input_count += 1
        try:
            records.append((ln, load(record_type, obj)))
        except RecordError as e:
            bad.append(validation("INPUT_RECORD_INVALID", f"Input line {ln}: {e}.",
                                  line_number=ln, field=e.field))
    if is_aoi and summary is None and (upstream is not None or pending_forward):
        raise io("UPSTREAM_INCOMPLETE", "The upstream stream ended without its aoi:summary.",
                 target=path)
    if bad and not continue_on_error:
        raise bad[0]  # fail fast: nothing has been done
    origin = (upstream or {}).get("tool") or "upstream"
    for etype, obj in pending_forward:
        fields = {k: v for k, v in obj.items() if k not in ("type", "aoi")}
        out.forward(etype, fields, origin)
        if etype == "aoi:error":
            upstream_errors.append(fields)
    for err in bad:
        out.error(err, scope="item")
    if not continue_on_error:
        if upstream_errors:
            raise Stop(Outcome.failure(caused_by=caused_by_of(upstream_errors[0], origin),
                                       upstream=upstream, input_count=input_count,
                                       exit_code=75 if upstream_errors[0].get("retryable")
                                       is True else 1))
        if summary is not None and summary.get("ok") is False:
            cb = summary.get("caused_by")
            cause = caused_by_of(cb if isinstance(cb, dict) else {"code": "UPSTREAM_FAILED"},
                                 origin)
            raise Stop(Outcome.failure(caused_by=cause, upstream=upstream,
                                       input_count=input_count))
    return RecordBatch(records, input_count, len(bad), upstream, upstream_errors)


def read_document(out: Emitter, path: str, record_type: Type[T], *,
                  continue_on_error: bool) -> RecordBatch[T]:
    """Read ``--input-json PATH`` (``-``: stdin): one JSON document, an object (one record)
    or an array of objects, as the Rust SDK reads it (docs/discovery.md, "--input-json").

    A document that does not parse is ``validation`` ``INPUT_JSON_PARSE_ERROR`` (its
    ``line_number``); an item that is not an object ``INPUT_JSON_ITEM_INVALID``, a record
    that breaks the record type ``INPUT_RECORD_INVALID``, both with the 0-based
    ``item_index``. Everything is read and checked before the command acts, so fail-fast
    writes nothing (§12.2); with ``continue_on_error`` a bad item is an item-scope error.
    """
    raw = _read_source(path)
    try:
        doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates,
                         parse_constant=_reject_constant)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        line = getattr(e, "lineno", None)
        raise validation("INPUT_JSON_PARSE_ERROR", "The input is not one JSON document.",
                         line_number=line) from None
    except RecursionError:
        raise validation("INPUT_JSON_PARSE_ERROR", "The input is nested too deeply.") from None
    items = doc if isinstance(doc, list) else [doc]
    records: List[Tuple[int, T]] = []
    bad: List[AoiError] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            bad.append(validation("INPUT_JSON_ITEM_INVALID",
                                  f"Input item {index} is {_kind(item)}, not an object.",
                                  item_index=index))
            continue
        try:
            records.append((index, load(record_type, item)))
        except RecordError as e:
            bad.append(validation("INPUT_RECORD_INVALID", f"Input item {index}: {e}.",
                                  item_index=index, field=e.field))
    if bad and not continue_on_error:
        raise bad[0]  # fail fast: nothing has been done
    for err in bad:
        out.error(err, scope="item")
    return RecordBatch(records, len(items), len(bad), None, [])


def _kind(value: Any) -> str:
    """What a JSON value is, for messages (the Rust SDK's words)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"

