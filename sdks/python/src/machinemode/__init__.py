"""Machine Mode (AOI-CLI v1.0-alpha) for Python command-line tools.

The producer (:class:`Emitter`), the process harness (:func:`run`), the argparse surface with
discovery (:class:`Tool`), the error taxonomy (:class:`AoiError` and one builder per §9.2
category in :mod:`machinemode.errors`) and JSON Schema from type hints (:func:`event`).
"""

from . import errors
from .emitter import AOI_VERSION, Emitter, Identity, StreamClosed, StreamFailed
from .errors import AoiError
from .schemas import RecordError, event, load, schema_of
from .signals import Cancelled, critical

__version__ = "0.1.0"

__all__ = [
    "AOI_VERSION",
    "AoiError",
    "Cancelled",
    "Emitter",
    "Identity",
    "RecordError",
    "StreamClosed",
    "StreamFailed",
    "critical",
    "errors",
    "event",
    "load",
    "schema_of",
]
