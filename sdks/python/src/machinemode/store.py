"""A tool's own data kept in one JSON document (the Rust SDK's ``aoi::surface::store::JsonFile``).

:class:`JsonFile` is read whole and replaced whole. :meth:`JsonFile.update` holds an exclusive
``flock`` on ``PATH.lock`` from the read to the write, so two runs changing the document at once
both count, and writes atomically (a temporary file beside it, synced, renamed over), so a run
killed mid-way leaves the old document or the new, never half of one::

    notes = JsonFile.for_tool("notes", "notes.json")   # $XDG_DATA_HOME/notes/notes.json
    with notes.update(list) as doc:                     # [] when there is none yet
        doc.append({"n": len(doc) + 1, "text": "buy milk"})

A document that cannot be read, or is not JSON, is an ``io`` error ``DATA_FILE_FAILED`` naming
the file, never an empty default.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

from .errors import AoiError
from .errors import io as io_error

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DATA_FILE_FAILED", "JsonFile", "write_atomically"]

DATA_FILE_FAILED = "DATA_FILE_FAILED"


def write_atomically(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` so that a reader sees the old content or the new: a new
    temporary file in the same directory (mode 0600), synced, renamed over ``path``."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _failed(path: Path, reason: str, **fields: Any) -> AoiError:
    return io_error(DATA_FILE_FAILED, f"{path}: {reason}", target=str(path), retryable=False,
                    **fields)


class JsonFile:
    """One JSON document of a tool's own (see the module docs)."""

    def __init__(self, path: Union[Path, str]) -> None:
        from pathlib import Path

        self.path = Path(path)

    @classmethod
    def for_tool(cls, tool: str, name: str) -> JsonFile:
        """``$XDG_DATA_HOME/<tool>/<name>`` (``~/.local/share`` when unset or relative)."""
        from pathlib import Path

        base = os.environ.get("XDG_DATA_HOME", "")
        root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
        return cls(root / tool / name)

    def read(self, default: Callable[[], Any]) -> Any:
        """The document, or ``default()`` when there is none yet."""
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return default()
        except OSError as e:
            raise _failed(self.path, e.strerror or str(e)) from None
        try:
            return json.loads(text)
        except ValueError as e:
            raise _failed(self.path, f"not JSON ({e})",
                          hint="the file is not what this tool wrote: restore it or move it aside") from None

    @contextlib.contextmanager
    def update(self, default: Callable[[], Any]) -> Iterator[Any]:
        """The document (``default()`` when there is none yet) to change in place: written back
        when the ``with`` block ends without an exception, all under the document's lock."""
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            lock = open(f"{self.path}.lock", "a")  # noqa: SIM115 - held by the `with` below
        except OSError as e:
            raise _failed(self.path, e.strerror or str(e)) from None
        with lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            document = self.read(default)
            yield document
            data = json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"
            try:
                write_atomically(self.path, data)
            except OSError as e:
                raise _failed(self.path, e.strerror or str(e)) from None
