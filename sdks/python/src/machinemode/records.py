"""Reading the records of ``--input-jsonl`` and ``--input-json`` for sinks (AOI-CLI §12, §13.1).

Both readers take the whole input before the command acts, so fail-fast (§12.2 "whole-input
fail-fast") writes nothing when any item is bad, the items before it included; with
``continue_on_error`` each bad item is an item-scope ``aoi:error`` and the rest is read. The
codes are the Rust SDK's (``aoi::Input``, docs/discovery.md "--input-json"):

* every record is checked against the command's record type (:func:`machinemode.load`, the
  rules ``$defs.record`` publishes): ``validation`` ``INPUT_RECORD_INVALID`` with its
  ``field``; a record with a repeated key is not read (readers disagree on which one counts);
* every bad item carries its 0-based ``item_index``, and in JSONL its ``line_number``;
* ``PATH`` ``-`` is standard input; a file that cannot be opened is ``not_found``
  ``FILE_NOT_FOUND``, ``authz`` ``FILE_NOT_READABLE`` or ``io`` ``FILE_OPEN_FAILED``; reading
  that fails is ``io`` ``INPUT_READ_FAILED``.

:func:`read_records` (``--input-jsonl``) reads lines through
:class:`machinemode.upstream.UpstreamReader`, so plain JSONL and an upstream AOI stream follow
the one set of §13.1 rules written there: a malformed line is ``INPUT_JSONL_PARSE_ERROR``;
upstream ``aoi:error``/``aoi:warning`` are forwarded with ``origin`` in input order; an upstream
error or ``ok:false`` ends the run, before anything is done, with ``caused_by`` and
``upstream`` unless ``--continue-on-error``; a cut, unknown or non-conforming upstream ends it
with the error the reader names, in either mode.

:func:`read_document` (``--input-json``) reads one JSON document: an object (one record) or
an array of objects. A document that does not parse is ``INPUT_JSON_PARSE_ERROR`` (with its
``line_number`` when known) in either mode, as there are no items to go on with; an item that
is not an object is ``INPUT_JSON_ITEM_INVALID``.
"""

from __future__ import annotations

import dataclasses
import errno
import sys
from typing import (
    Any,
    BinaryIO,
    Dict,
    Generic,
    Iterator,
    List,
    Mapping,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from .consumer import ErrorEvent, JsonRefused, WarningEvent, parse_json
from .emitter import Emitter
from .errors import AoiError, authz, io, not_found, usage, validation
from .harness import Outcome, Stop
from .schemas import RecordError, load
from .upstream import FIX_INPUT_HINT, InputLineError, UpstreamReader, distinct_object, record_fields

__all__ = ["RecordBatch", "Stop", "read_document", "read_records"]

T = TypeVar("T")

INPUT_RECORD_INVALID = "INPUT_RECORD_INVALID"
INPUT_JSON_PARSE_ERROR = "INPUT_JSON_PARSE_ERROR"
INPUT_JSON_ITEM_INVALID = "INPUT_JSON_ITEM_INVALID"
INPUT_READ_FAILED = "INPUT_READ_FAILED"


@dataclasses.dataclass
class RecordBatch(Generic[T]):
    """The good records of the input, each with its line number (JSONL) or its 0-based item
    index (JSON), and what the input said."""

    records: List[Tuple[int, T]]
    input_count: int
    item_errors: int
    upstream: Optional[Dict[str, str]]
    upstream_errors: List[Dict[str, Any]]


class _Check(Generic[T]):
    """The part both readers share: each record checked, each bad item kept in input order
    with what is forwarded, then the mode applied (:meth:`settle`)."""

    def __init__(self, record_type: Type[T], continue_on_error: bool) -> None:
        self.record_type = record_type
        self.continue_on_error = continue_on_error
        self.records: List[Tuple[int, T]] = []
        self.input_count = 0
        self.bad: List[AoiError] = []
        # Records read before the first bad item: what a streaming reader had consumed when
        # fail-fast stopped it (the Rust SDK's input_count on that failure).
        self.input_before_bad = 0
        # In input order: an item error, or an upstream event to forward (type, fields).
        self.pending: List[Union[AoiError, Tuple[str, Dict[str, Any]]]] = []
        self.upstream_errors: List[Dict[str, Any]] = []
        self.upstream_warnings = 0

    @property
    def hint(self) -> Optional[str]:
        return None if self.continue_on_error else FIX_INPUT_HINT

    def record(self, fields: Mapping[str, Any], item_index: int,
               line_number: Optional[int]) -> None:
        self.input_count += 1  # §8.3: every record consumed, good or not
        try:
            value = load(self.record_type, fields)
        except RecordError as e:
            where = f"input item {item_index}" if line_number is None \
                else f"input line {line_number}"
            self.refuse(validation(INPUT_RECORD_INVALID, f"{where} is invalid: {e}",
                                   field=e.field, item_index=item_index,
                                   line_number=line_number, hint=self.hint))
            return
        self.records.append((item_index if line_number is None else line_number, value))

    def refuse(self, err: AoiError) -> None:
        if not self.bad:
            self.input_before_bad = self.input_count
        self.bad.append(err)
        self.pending.append(err)

    def upstream_event(self, etype: str, fields: Dict[str, Any]) -> None:
        self.pending.append((etype, fields))
        if etype == "aoi:error":
            self.upstream_errors.append(fields)
        else:
            self.upstream_warnings += 1

    def settle(self, out: Emitter, origin: str = "upstream") -> None:
        """Fail fast on the first bad item, having written nothing (the upstream's events
        only counted, §13.1), or write everything in input order."""
        if self.bad and not self.continue_on_error:
            out.consumed(warnings=self.upstream_warnings, errors=len(self.upstream_errors))
            out.note_input(self.input_before_bad)
            raise self.bad[0]
        out.note_input(self.input_count)
        for p in self.pending:
            if isinstance(p, AoiError):
                out.error(p, scope="item")
            else:
                out.forward(p[0], p[1], origin)

    def batch(self, upstream: Optional[Dict[str, str]]) -> RecordBatch[T]:
        return RecordBatch(self.records, self.input_count, len(self.bad), upstream,
                           self.upstream_errors)


def _open(path: str, flag: str) -> Optional[BinaryIO]:
    """The input ``flag`` names, or ``None`` for a closed standard input (an empty input)."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            return None
        try:
            if stdin.isatty():
                raise usage("STDIN_IS_TERMINAL", f"{flag} - reads standard input, which is a "
                            "terminal.", field=flag[2:].replace("-", "_"))
            return stdin.buffer
        except (OSError, ValueError):
            return None  # a closed stdin is an empty input
    try:
        return open(path, "rb")
    except IsADirectoryError as e:  # Rust opens a directory and fails to read it
        raise io(INPUT_READ_FAILED, f"reading the input failed: {e.strerror}",
                 target=path) from None
    except OSError as e:  # the Rust SDK's ErrorEvent::cannot_open
        message = f"cannot open {path}: {e.strerror}"
        if isinstance(e, FileNotFoundError):
            raise not_found("FILE_NOT_FOUND", message, target=path) from None
        if isinstance(e, PermissionError):
            raise authz("FILE_NOT_READABLE", message, target=path) from None
        raise io("FILE_OPEN_FAILED", message, target=path) from None


def _chunks(path: str, flag: str) -> Iterator[bytes]:
    """The bytes of the input, as they are read."""
    stream = _open(path, flag)
    if stream is None:
        return
    try:
        while True:
            chunk = stream.read(65536)
            if not chunk:
                return
            yield chunk
    except ValueError:
        return  # closed under us: nothing more to read
    except OSError as e:
        if e.errno == errno.EBADF:
            return  # a closed stdin is an empty input
        raise io(INPUT_READ_FAILED, f"reading the input failed: {e.strerror}") from None
    finally:
        if path != "-":
            stream.close()


def read_records(out: Emitter, path: str, record_type: Type[T], *,
                 continue_on_error: bool) -> RecordBatch[T]:
    """Read and check every line of ``--input-jsonl PATH`` (``-``: stdin); see the module doc.

    :raises AoiError: fail-fast on the first bad line (``validation``, with ``line_number``
        and ``item_index``), or for an input that cannot be read; the upstream's own error (a
        cut, unknown or non-conforming stream) is written and ends the run with :class:`Stop`.
    :raises Stop: on an upstream failure without ``--continue-on-error``, before anything is
        done.
    """
    reader = UpstreamReader(_chunks(path, "--input-jsonl"), continue_on_error=continue_on_error,
                            fail_fast=False, distinct_keys=True)
    check = _Check(record_type, continue_on_error)
    for seen in reader.lines():
        item = seen.item
        if isinstance(item, InputLineError):
            check.refuse(item.aoi_error(hint=check.hint))
        elif isinstance(item, (ErrorEvent, WarningEvent)):
            check.upstream_event(item.type, reader.forward(item))
        else:
            assert seen.item_index is not None  # a record always has one
            check.record(record_fields(item), seen.item_index, seen.line_number)
    acc = reader.accounting()
    check.settle(out, reader.origin)
    if acc.upstream_fails:
        if acc.error is not None:
            out.error(acc.error, scope="process")
        raise Stop(Outcome.failure(
            caused_by=None if acc.caused_by is None else acc.caused_by.to_json(),
            upstream=acc.upstream, input_count=check.input_count,
            exit_code=None if acc.error is None else acc.error.exit_code))
    return check.batch(acc.upstream)


def read_document(out: Emitter, path: str, record_type: Type[T], *,
                  continue_on_error: bool) -> RecordBatch[T]:
    """Read ``--input-json PATH`` (``-``: stdin): one JSON document, an object (one record)
    or an array of objects; see the module doc.

    :raises AoiError: ``INPUT_JSON_PARSE_ERROR`` for a document that does not parse; fail-fast
        on the first bad item (``validation``, with ``item_index``); or for an input that
        cannot be read.
    """
    raw = b"".join(_chunks(path, "--input-json"))
    try:
        doc = parse_json(raw.decode("utf-8"), distinct_object)
    except UnicodeDecodeError:
        raise validation(INPUT_JSON_PARSE_ERROR,
                         "the input is not one JSON document: it is not UTF-8") from None
    except JsonRefused as e:
        raise validation(INPUT_JSON_PARSE_ERROR, f"the input is not one JSON document: {e}",
                         line_number=e.line_number) from None
    check = _Check(record_type, continue_on_error)
    for index, item in enumerate(doc if isinstance(doc, list) else [doc]):
        if isinstance(item, dict):
            check.record(item, index, None)
        else:
            check.refuse(validation(INPUT_JSON_ITEM_INVALID,
                                    f"invalid JSON on input item {index}: item is {_kind(item)}, "
                                    "not an object", item_index=index, hint=check.hint))
    check.settle(out)
    return check.batch(None)


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
