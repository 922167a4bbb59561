"""The process harness: a summary on every exit under the process's control (AOI-CLI §4, §6, §7).

:func:`run` calls a tool's body and ends the process itself, whatever the body did:

==========================================  ==============================================  ====
the body                                    the stream ends with                            exit
==========================================  ==============================================  ====
returns an :class:`Outcome` (or ``None``)   ``aoi:summary`` from the outcome                0 / §6
raises :class:`~machinemode.AoiError`       a process-scope ``aoi:error``, ``ok:false``     §6 by category
raises any other exception                  ``internal`` ``INTERNAL_ERROR``, ``ok:false``    70
SIGINT / SIGTERM (:class:`Cancelled`)       ``ok:false``, ``reason:"cancelled"``             130 / 143
the reader closes stdout (EPIPE)            nothing more: the reader is gone                141
stdout fails (ENOSPC, EIO, closed)          one line on stderr                              74
==========================================  ==============================================  ====

No traceback is ever printed in machine mode, on stdout or stderr: an exception is the
``internal`` error of §9.2 (its type and, with ``debug``, where it was raised, in
``details``; never its message, which may carry data). Before exiting after a closed or
failing stdout, the harness points file descriptor 1 at ``/dev/null``, as the Python
documentation recommends for SIGPIPE ("Note on SIGPIPE" in the ``signal`` module), so the
interpreter's own flush at shutdown cannot print "Exception ignored ... BrokenPipeError".
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, NoReturn, Optional

from . import signals
from .emitter import Emitter, Identity, StreamClosed, StreamFailed
from .errors import EXIT_BROKEN_PIPE, EXIT_IOERR, EXIT_NOPERM, AoiError, Reason, clean_message, internal, timeout

#: What a run that outlived ``--timeout`` reports (the Rust SDK's words).
TIMEOUT_ERROR = timeout("TIMEOUT", "the command did not finish within --timeout",
                        hint="raise --timeout, or narrow the request")

__all__ = ["Outcome", "Stop", "main", "run", "stdout_stream"]

#: The exit status of a failed outcome by ``reason`` when the tool does not give one (§6).
_EXIT_FOR_REASON = {"failed": 1, "cancelled": 130, "timeout": 124, "denied": 77}


@dataclasses.dataclass
class Outcome:
    """What a command accomplished: the fields of its ``aoi:summary`` (§8.3) and its exit."""

    ok: bool
    reason: Optional[Reason] = None
    partial: Optional[bool] = None  # None: item errors beside domain events (the emitter decides)
    truncated: bool = False
    next_cursor: Optional[str] = None
    input_count: Optional[int] = None
    caused_by: Optional[Mapping[str, Any]] = None
    upstream: Optional[Mapping[str, Any]] = None
    properties: Optional[Mapping[str, Any]] = None
    exit_code: Optional[int] = None

    @classmethod
    def success(cls, **fields: Any) -> Outcome:
        """``ok:true``: the tool accomplished what was asked (§4)."""
        return cls(ok=True, **fields)

    @classmethod
    def failure(cls, reason: Reason = "failed", **fields: Any) -> Outcome:
        """``ok:false`` with a ``reason`` of §8.3's closed enum."""
        return cls(ok=False, reason=reason, **fields)

    def exit_status(self, process_error: Optional[AoiError] = None) -> int:
        """The exit status of the run this outcome ends, decided as the Rust SDK decides it
        (§6; docs/discovery.md, "Serialization"): 0 for success; for a failure 77 when
        ``denied``, else the status of ``process_error`` (the first process-scope error the
        stream carries, which also makes a success a failure), else :attr:`exit_code` when
        not 0, else the reason's conventional status (1, 130, 124)."""
        if self.ok and process_error is None:
            return 0
        reason = (self.reason or "failed") if not self.ok else "failed"
        if reason == "denied":
            return EXIT_NOPERM
        if process_error is not None:
            return process_error.exit_code
        if self.exit_code:
            return self.exit_code
        return _EXIT_FOR_REASON.get(reason, 1)

    def summarize(self, out: Emitter) -> None:
        """Write this outcome as ``aoi:summary``."""
        out.summary(self.ok, reason=self.reason, partial=self.partial,
                    truncated=self.truncated, next_cursor=self.next_cursor,
                    input_count=self.input_count, caused_by=self.caused_by,
                    upstream=self.upstream, properties=self.properties)


class Stop(Exception):
    """Raised by a command to end with this outcome (an upstream failure with ``caused_by``,
    a refusal that is not an error of its own)."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def stdout_stream() -> Optional[BinaryIO]:
    """Standard output as an unbuffered binary stream, or None when it is closed.

    The emitter buffers by itself; writing to the raw file leaves nothing in Python's own
    buffer for the interpreter to flush (and fail on) at shutdown.
    """
    text = sys.stdout
    if text is None:
        return None
    buffer = getattr(text, "buffer", None)
    if buffer is None:
        return None
    raw = getattr(buffer, "raw", None)
    stream: BinaryIO = raw if raw is not None else buffer
    return stream


def _say(text: str) -> None:
    """One line on stderr; a stderr that cannot be written is ignored."""
    with contextlib.suppress(Exception):
        err = sys.stderr
        if err is not None:
            err.write(clean_message(text) + "\n")
            err.flush()


def _silence_stdout() -> None:
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)


def _exit(code: int) -> NoReturn:
    """Flush what Python holds for stdout and exit with ``code``; a failure of that flush
    is still a pipe close (141) or an I/O error (74), never a success and never noise."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = code or EXIT_BROKEN_PIPE
    except (OSError, ValueError):
        _silence_stdout()
        code = code or EXIT_IOERR
    with contextlib.suppress(Exception):
        if sys.stderr is not None:
            sys.stderr.flush()
    raise SystemExit(code)


def _internal_error(exc: BaseException, debug: bool) -> AoiError:
    details: Optional[Dict[str, Any]] = None
    if debug:
        import traceback

        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else "unknown"
        details = {"exception": type(exc).__name__, "where": where}
    return internal("INTERNAL_ERROR", f"Unexpected {type(exc).__name__}.", details=details)


def run(
    body: Callable[[], Optional[Outcome]],
    *,
    emitter: Optional[Emitter],
    name: str,
    debug: bool = False,
    timeout: Optional[float] = None,
) -> NoReturn:
    """Run ``body`` under the harness and exit the process (see the module's table).

    :param emitter: the machine-mode stream, or ``None`` in human mode (then errors are one
        line on stderr, ``NAME: error: MESSAGE``).
    :param name: the tool's name, for stderr lines.
    :param debug: ``--debug``: say where an unexpected exception was raised (in
        ``details`` in machine mode; a traceback on stderr in human mode).
    :param timeout: ``--timeout``: seconds after which the run ends with a ``timeout``
        ``aoi:error`` ``TIMEOUT``, ``reason:"timeout"``, exit 124.
    """
    signals.install()
    signals.deadline(timeout)
    code: int
    try:
        code = _run(body, emitter, name, debug)
    except StreamClosed:
        _silence_stdout()
        code = EXIT_BROKEN_PIPE
    except BrokenPipeError:  # a human-mode print() to a closed pipe
        _silence_stdout()
        code = EXIT_BROKEN_PIPE
    except StreamFailed:
        _silence_stdout()
        _say(f"{name}: error: standard output cannot be written")
        code = EXIT_IOERR
    except signals.Cancelled as c:  # a second signal while reporting the first
        _silence_stdout()
        code = c.exit_code
    except BaseException:  # never a traceback, whatever happened while reporting
        _silence_stdout()
        code = 70
    _exit(code)


def _run(body: Callable[[], Optional[Outcome]], out: Optional[Emitter], name: str,
         debug: bool) -> int:
    try:
        try:
            outcome = body()
        except OSError as exc:
            if out is None and isinstance(exc, BrokenPipeError):
                raise
            if out is None and getattr(exc, "filename", None) is None \
                    and _is_stdout_failure(exc):
                raise StreamFailed(exc.errno) from None
            raise
        if outcome is None:
            outcome = Outcome.success()
        signals.finishing()
        if out is not None:
            if not out.finished:
                outcome.summarize(out)
            else:
                out.flush()
            return outcome.exit_status(out.first_process_error)
        return outcome.exit_status()
    except Stop as stop:
        signals.finishing()
        if out is not None and not out.finished:
            stop.outcome.summarize(out)
        return stop.outcome.exit_status(None if out is None else out.first_process_error)
    except AoiError as err:
        signals.finishing()
        if out is not None:
            _fail(out, err)
            # As the Rust SDK: the first process-scope error of the stream decides (§9.1).
            return Outcome.failure(err.reason).exit_status(out.first_process_error or err)
        _say(f"{name}: error: {err.message}")
        if err.hint and err.category != "usage":
            _say(f"hint: {err.hint}")
        # The machine mode's status (§6): a refusal is 77 in both modes, whatever its category.
        return Outcome.failure(err.reason).exit_status(err)
    except signals.TimedOut as t:
        signals.finishing()
        if out is not None and not out.finished:
            _fail(out, TIMEOUT_ERROR)
        else:
            _say(f"{name}: error: {TIMEOUT_ERROR.message}")
        return t.exit_code
    except signals.Cancelled as c:
        signals.finishing()
        if out is not None and not out.finished:
            # As the Rust SDK: no aoi:error, the signal named in the summary's properties.
            out.summary(False, reason="cancelled", properties={"signal": c.signal_name})
        else:
            _say(f"{name}: cancelled")
        return c.exit_code
    except KeyboardInterrupt:  # handlers not installed (a thread, an embedding)
        signals.finishing()
        if out is not None and not out.finished:
            out.summary(False, reason="cancelled")
        return 130
    except SystemExit as se:
        signals.finishing()
        status = se.code if isinstance(se.code, int) else (0 if se.code is None else 1)
        if out is not None and not out.finished:
            if status == 0:
                out.summary(True)
            else:
                out.summary(False, reason="failed")
        return status
    except (StreamClosed, StreamFailed, BrokenPipeError):
        raise
    except Exception as exc:
        signals.finishing()
        bug = _internal_error(exc, debug)
        if out is not None:
            _fail(out, bug)
        else:
            _say(f"{name}: internal error: {type(exc).__name__}")
            if debug:
                with contextlib.suppress(Exception):
                    import traceback

                    traceback.print_exc()
        return 70


def _is_stdout_failure(exc: OSError) -> bool:
    return exc.errno in (5, 9, 28)  # EIO, EBADF, ENOSPC


def _fail(out: Emitter, err: AoiError) -> None:
    if out.finished:
        out.flush()
        return
    out.error(err, scope="process")
    out.summary(False, reason=err.reason)


def main(
    *,
    identity: Identity,
    command: Optional[str] = None,
    event_types: Optional[List[str]] = None,
    flush_each: bool = False,
    timeout: Optional[float] = None,
) -> Callable[[Callable[[Emitter], Optional[Outcome]]], Callable[[], NoReturn]]:
    """A decorator for a machine-only tool: ``fn(out)`` runs under :func:`run` on stdout
    (``timeout``: :func:`run`'s deadline in seconds).

    Example::

        @machinemode.main(identity=Identity("hello", "1.0.0", "io.example.hello", "1.0.0"))
        def hello(out):
            out.emit("greeting", {"text": "hello"})
            return Outcome.success()

        if __name__ == "__main__":
            hello()
    """

    def wrap(fn: Callable[[Emitter], Optional[Outcome]]) -> Callable[[], NoReturn]:
        def start() -> NoReturn:
            out = Emitter(stdout_stream(), identity, command=command,
                          event_types=event_types, flush_each=flush_each)
            run(lambda: fn(out), emitter=out, name=identity.tool, timeout=timeout)

        start.__name__ = fn.__name__
        start.__doc__ = fn.__doc__
        return start

    return wrap
