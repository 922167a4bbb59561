"""SIGINT and SIGTERM as an exception raised between lines, never inside one (§7).

The harness installs :func:`install`: a signal raises :class:`Cancelled` in the main thread,
which the harness turns into ``aoi:summary`` with ``ok:false``, ``reason:"cancelled"`` and exit
128 + the signal number (130, 143). Inside :func:`critical` (which the emitter uses around every
write, and a tool may use around a commit and the audit events that report it) the signal is
held and raised when the block ends, so a line is never half-buffered and a commit is never
left unreported. Once the harness starts writing the terminal summary, signals are recorded
and ignored: §7 "if emitting a final summary would corrupt state or hang, exiting promptly is
more important", and the summary is already on its way.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Optional

__all__ = ["Cancelled", "TimedOut", "critical", "deadline", "install", "finishing"]


class Cancelled(BaseException):
    """Raised in the main thread on SIGINT or SIGTERM (a BaseException, like
    KeyboardInterrupt, so a tool's ``except Exception`` does not swallow a cancellation)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number: 130 for SIGINT, 143 for SIGTERM (§6)."""
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        """``SIGINT``, ``SIGTERM``: the summary's ``properties.signal`` (docs/discovery.md)."""
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return str(self.signum)


class TimedOut(Cancelled):
    """Raised in the main thread when ``--timeout`` passes (:func:`deadline`): the harness
    ends the run with a ``timeout`` error and ``reason:"timeout"``, exit 124 (§6, §16.1)."""

    @property
    def exit_code(self) -> int:
        return 124


_depth = 0
_pending: Optional[int] = None
_finishing = False


def _raise(signum: int) -> None:
    if signum == _ALARM:
        raise TimedOut(signum)
    raise Cancelled(signum)


def _handler(signum: int, _frame: Optional[FrameType]) -> None:
    global _pending
    if _depth or _finishing:
        if _pending is None or signum != _ALARM:  # a signal outranks the deadline
            _pending = signum
        return
    _raise(signum)


_ALARM = getattr(signal, "SIGALRM", -1)


def deadline(seconds: Optional[float]) -> None:
    """End the run with :class:`TimedOut` once ``seconds`` have passed (``--timeout``), held
    like a signal inside :func:`critical`. ``None`` sets no deadline. Needs ``SIGALRM``
    (POSIX); elsewhere the deadline is not enforced."""
    if seconds is None or _ALARM == -1:
        return
    signal.signal(_ALARM, _handler)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))


def install() -> None:
    """Route SIGINT and SIGTERM to :class:`Cancelled` (main thread only)."""
    global _pending, _finishing, _depth
    _pending, _finishing, _depth = None, False, 0
    for name in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, _handler)


def finishing() -> None:
    """From now on a signal is recorded, never raised: the summary is being written."""
    global _finishing
    _finishing = True


class _Held:
    """The block of :func:`critical`, as a plain context manager: the emitter enters one
    around every line, where a generator-based one would cost a tenth of the write."""

    def __enter__(self) -> None:
        global _depth
        _depth += 1

    def __exit__(self, *_exc: object) -> None:
        global _depth, _pending
        _depth -= 1
        if not _depth and not _finishing and _pending is not None:
            signum, _pending = _pending, None
            _raise(signum)


#: The one instance (it holds no state of its own: the depth is the module's).
HELD = _Held()


def critical() -> _Held:
    """Hold SIGINT/SIGTERM for the block; a signal that arrived is raised at its end."""
    return HELD
