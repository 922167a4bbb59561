"""Machine Mode (AOI-CLI v1.0-alpha) for Python command-line tools.

Everything a tool author or a consumer uses is here, at the top level (``from machinemode
import Tool, Context, Outcome``); the submodules hold the same names and the details:

* a tool: :class:`Tool`, :class:`Command`, :class:`Context`, the flag groups (:data:`PAGING`,
  :data:`DRY_RUN`, :data:`CONFIRM`, :data:`IDEMPOTENCY`, :data:`INPUT_JSONL`,
  :data:`INPUT_JSON`, :data:`TIMEOUT`), :func:`path`;
* its events and errors: :func:`event`, :class:`AoiError` and one builder per §9.2 category in
  :mod:`machinemode.errors`, :class:`Outcome`, :class:`Stop`;
* the process: :func:`run`, :func:`main` (a machine-only tool), :class:`Emitter`,
  :class:`Identity`, :class:`Cancelled`, :func:`critical`;
* paging, writes and input: :meth:`Context.page`, :meth:`Context.mutate` (dry run,
  confirmation, idempotency key), :class:`CursorCodec`, :class:`Idempotency` with
  :class:`FileIdempotencyStore`, :class:`JsonFile` (a tool's own data file),
  :func:`read_records`, :func:`read_document`, :class:`UpstreamReader`;
* reading another tool's stream: :func:`spawn`, :func:`read_stream`, :class:`StreamReader`,
  :class:`Conclusion`;
* the closed sets of the spec as types: :data:`Category`, :data:`Reason`, :data:`Verdict`,
  :data:`Group`.

The click integration is :mod:`machinemode.click` (it needs click, which this package does not
depend on).
"""

from typing import Any

from . import errors
from .cli import (
    CONFIRM,
    DRY_RUN,
    IDEMPOTENCY,
    INPUT_JSON,
    INPUT_JSONL,
    PAGING,
    TIMEOUT,
    Command,
    Context,
    Group,
    Tool,
    path,
)
from .consumer import Conclusion, Reading, Run, StreamReader, Verdict, read_stream, spawn
from .cursor import CursorCodec, CursorError
from .emitter import AOI_VERSION, Emitter, Identity, StreamClosed, StreamFailed
from .errors import AoiError, Category, Reason
from .harness import Outcome, Stop, main, run
from .idempotency import (
    FileIdempotencyStore,
    Idempotency,
    IdempotencyConflict,
    IdempotencyStore,
    MemoryIdempotencyStore,
)
from .records import RecordBatch, read_document, read_records
from .schemas import RecordError, event, load, schema_of
from .signals import Cancelled, TimedOut, critical
from .store import JsonFile
from .upstream import UpstreamReader


def __getattr__(name: str) -> Any:
    """``__version__``, read from the installed distribution's metadata on first use
    (importing :mod:`importlib.metadata` costs more than the rest of the package, and a tool
    that never asks should not pay for it)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("machinemode")
        except PackageNotFoundError:  # run from a source tree, not installed
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AOI_VERSION",
    "CONFIRM",
    "DRY_RUN",
    "IDEMPOTENCY",
    "INPUT_JSON",
    "INPUT_JSONL",
    "PAGING",
    "TIMEOUT",
    "AoiError",
    "Cancelled",
    "Category",
    "Command",
    "Conclusion",
    "Context",
    "CursorCodec",
    "CursorError",
    "Emitter",
    "FileIdempotencyStore",
    "Group",
    "Idempotency",
    "IdempotencyConflict",
    "IdempotencyStore",
    "Identity",
    "JsonFile",
    "MemoryIdempotencyStore",
    "Outcome",
    "Reading",
    "Reason",
    "RecordBatch",
    "RecordError",
    "Run",
    "Stop",
    "StreamClosed",
    "StreamFailed",
    "StreamReader",
    "TimedOut",
    "Tool",
    "UpstreamReader",
    "Verdict",
    "critical",
    "errors",
    "event",
    "load",
    "main",
    "path",
    "read_document",
    "read_records",
    "read_stream",
    "run",
    "schema_of",
    "spawn",
]
