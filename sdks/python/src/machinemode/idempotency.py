"""Idempotency keys for retryable writes (AOI-CLI §14.4, §9.3, §18.2 check 7).

§14.4 recommends ``--idempotency-key KEY``; lint check 7 says a replay "returns the
prior result without doubling the effect". The spec says no more, so this module
fixes the rest:

* a record per key holds a hash of the request (command and arguments that decide
  the effect), the domain events the first run emitted and its ``aoi:summary``
  fields; framework envelopes (``aoi``) are not stored, a replay is emitted as a
  new run with its own ``seq`` and ``run``;
* the same key with the same request replays the record: the same domain events, and
  ``"idempotent_replay": true`` in the summary's ``properties`` (as the Rust SDK);
* a key is 1 to 255 bytes, not blank, without control characters (:func:`check_key`);
* the same key with a different request is refused: ``conflict``
  ``IDEMPOTENCY_KEY_REUSED`` (§9.2: not retryable as is);
* a record expires after ``ttl`` seconds (default 24 h) and is then forgotten;
* only a finished run is recorded: a run that failed before its effect, or whose
  effect is unknown, records nothing, so a retry runs again (§9.3 "MUST set
  retryable:false when it cannot determine whether a side effect was applied" is
  the producer's part).

The default store is a directory of JSON files under
``$XDG_STATE_HOME/<tool>/idempotency/`` (``~/.local/state`` when unset), written
atomically (a temp file in the same directory, fsync, rename). Another store fits
the :class:`IdempotencyStore` protocol.

A CLI is one process per run, so two runs with one key may overlap. Hold the key with
:meth:`FileIdempotencyStore.lock` (a context manager) from before :meth:`Idempotency.lookup`
until after :meth:`Idempotency.record`: a second run with the key waits for the first, then
finds its record and replays it (one effect, one replay). A run that dies while holding the
key leaves a marker: the next run with the key is refused, ``conflict``
``IDEMPOTENCY_OUTCOME_UNKNOWN``, not retryable, since its effect may have been applied (§9.3).
The Rust SDK's ``aoi::surface::store::FileStore`` does the same, with the same files.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Protocol, Sequence, Tuple

from .errors import AoiError, sorted_keys, usage

if TYPE_CHECKING:  # imported where used: a tool's discovery never needs pathlib
    from pathlib import Path

__all__ = [
    "IDEMPOTENCY_CONFLICT_CATEGORY",
    "IDEMPOTENCY_CONFLICT_CODE",
    "DEFAULT_TTL_SECONDS",
    "IdempotencyConflict",
    "IDEMPOTENCY_OUTCOME_UNKNOWN_CODE",
    "MAX_KEY_BYTES",
    "REPLAY_PROPERTY",
    "check_key",
    "IdempotencyRecord",
    "IdempotencyStore",
    "FileIdempotencyStore",
    "MemoryIdempotencyStore",
    "Idempotency",
    "request_hash",
    "default_state_dir",
]

IDEMPOTENCY_CONFLICT_CATEGORY = "conflict"
IDEMPOTENCY_CONFLICT_CODE = "IDEMPOTENCY_KEY_REUSED"
#: A run with the key died after taking it: its effect may have been applied.
IDEMPOTENCY_OUTCOME_UNKNOWN_CODE = "IDEMPOTENCY_OUTCOME_UNKNOWN"
DEFAULT_TTL_SECONDS = 24 * 3600.0
#: The longest key accepted, in bytes (the Rust SDK's ``MAX_IDEMPOTENCY_KEY_LEN``).
MAX_KEY_BYTES = 255
#: The summary property that marks a replayed run (docs/discovery.md, "Idempotency keys").
REPLAY_PROPERTY = "idempotent_replay"
_FORMAT = 1


class IdempotencyConflict(AoiError):
    """The key was used for another request: ``conflict`` ``IDEMPOTENCY_KEY_REUSED``, field
    ``idempotency_key``, not retryable (§9.2), an :class:`~machinemode.AoiError`."""

    def __init__(self, key: str) -> None:
        super().__init__(IDEMPOTENCY_CONFLICT_CATEGORY, IDEMPOTENCY_CONFLICT_CODE,
                         "The idempotency key was already used for a different request.",
                         field="idempotency_key",
                         hint="use a new --idempotency-key for a different request")
        self.key = key


def check_key(key: str) -> str:
    """``key`` when it is a usable ``--idempotency-key``: 1 to :data:`MAX_KEY_BYTES` bytes of
    UTF-8, not blank, no control characters; else ``usage`` ``IDEMPOTENCY_KEY_INVALID``
    (docs/discovery.md, "Idempotency keys")."""
    size = len(key.encode("utf-8", "surrogatepass"))
    if not key.strip():
        problem = "The idempotency key is empty."
    elif size > MAX_KEY_BYTES:
        problem = f"The idempotency key is {size} bytes; at most {MAX_KEY_BYTES} are allowed."
    elif any(unicodedata.category(c) == "Cc" for c in key):
        problem = "The idempotency key contains control characters."
    else:
        return key
    raise usage("IDEMPOTENCY_KEY_INVALID", problem, field="idempotency_key",
                hint=f"pass a printable key of 1 to {MAX_KEY_BYTES} bytes, e.g. a UUID")


def request_hash(command: str, arguments: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the command and the arguments that decide its effect, canonical JSON.

    Leave out the key itself and presentation options (``--output``).
    """
    import hashlib  # here, not at import: a tool's discovery never needs it

    body = json.dumps({"command": command, "arguments": dict(arguments)}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class IdempotencyRecord:
    """What a finished run left for its key."""

    key: str
    request_hash: str
    events: Tuple[Dict[str, Any], ...]
    summary: Dict[str, Any]
    created_at: float

    def to_json(self) -> Dict[str, Any]:
        return {"format": _FORMAT, "key": self.key, "request_hash": self.request_hash,
                "events": list(self.events), "summary": self.summary, "created_at": self.created_at}

    @staticmethod
    def from_json(obj: Any) -> Optional[IdempotencyRecord]:
        """The record, or ``None`` when ``obj`` is not one (a damaged file is a missing record)."""
        if not isinstance(obj, dict) or obj.get("format") != _FORMAT:
            return None
        key, rh, events, summary, created = (obj.get(k) for k in
                                             ("key", "request_hash", "events", "summary", "created_at"))
        if not (isinstance(key, str) and isinstance(rh, str) and isinstance(events, list)
                and all(isinstance(e, dict) for e in events) and isinstance(summary, dict)
                and isinstance(created, (int, float)) and not isinstance(created, bool)):
            return None
        return IdempotencyRecord(key, rh, tuple(events), summary, float(created))


class IdempotencyStore(Protocol):
    """Where records live; ``get`` returns ``None`` for an unknown key."""

    def get(self, key: str) -> Optional[IdempotencyRecord]: ...

    def put(self, record: IdempotencyRecord) -> None: ...

    def delete(self, key: str) -> None: ...


def default_state_dir(tool: str) -> Path:
    """``$XDG_STATE_HOME/<tool>/idempotency`` (XDG Base Directory: ``~/.local/state`` when unset or relative)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    from pathlib import Path

    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / tool / "idempotency"


class FileIdempotencyStore:
    """One JSON file per key, named by the key's SHA-256 (a key is caller input: never a path)."""

    def __init__(self, directory: Path, *, ttl: float = DEFAULT_TTL_SECONDS) -> None:
        from pathlib import Path

        self.directory = Path(directory)
        self.ttl = ttl

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key`` for this run: wait while another run holds it; refuse it when a run
        that held it died before it recorded its outcome (see the module docs)."""
        import fcntl
        import hashlib

        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        stem = self.directory / hashlib.sha256(key.encode()).hexdigest()
        pending = stem.with_suffix(".pending")
        with open(stem.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                if pending.exists():
                    if time.time() - pending.stat().st_mtime <= self.ttl:
                        raise AoiError(
                            IDEMPOTENCY_CONFLICT_CATEGORY, IDEMPOTENCY_OUTCOME_UNKNOWN_CODE,
                            "An earlier run with this --idempotency-key stopped before it recorded its "
                            "outcome: its effect may have been applied.",
                            retryable=False,
                            hint="check the state the command changes, then run it with a new --idempotency-key")
                    self.delete(key)
                pending.write_bytes(b"")
                try:
                    yield
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        pending.unlink()
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    @classmethod
    def for_tool(cls, tool: str) -> FileIdempotencyStore:
        return cls(default_state_dir(tool))

    def _path(self, key: str) -> Path:
        import hashlib

        return self.directory / (hashlib.sha256(key.encode()).hexdigest() + ".json")

    def get(self, key: str) -> Optional[IdempotencyRecord]:
        try:
            text = self._path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            record = IdempotencyRecord.from_json(json.loads(text))
        except ValueError:
            return None
        return record if record is not None and record.key == key else None

    def put(self, record: IdempotencyRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = json.dumps(record.to_json(), separators=(",", ":"), ensure_ascii=False).encode()
        from .store import write_atomically

        write_atomically(self._path(record.key), data)

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()


@dataclass
class MemoryIdempotencyStore:
    """A store in memory, for tests and for servers that keep their own state."""

    records: Dict[str, IdempotencyRecord] = field(default_factory=dict)

    def get(self, key: str) -> Optional[IdempotencyRecord]:
        return self.records.get(key)

    def put(self, record: IdempotencyRecord) -> None:
        self.records[record.key] = record

    def delete(self, key: str) -> None:
        self.records.pop(key, None)


def _strip(event: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in event.items() if k != "aoi"}


_SUMMARY_KEPT = ("ok", "reason", "count", "input_count", "warning_count", "error_count", "partial",
                 "truncated", "next_cursor", "caused_by", "upstream", "properties")


class Idempotency:
    """Look up, replay and record runs by key.

    ``lookup`` before the effect: ``None`` means run it; a record means replay it
    (:meth:`replay_events`), and a reused key raises :class:`IdempotencyConflict`.
    ``record`` after a run that finished (its summary was decided).
    """

    def __init__(self, store: IdempotencyStore, *, ttl: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.ttl = ttl
        self._clock = clock

    def lookup(self, key: str, request: str) -> Optional[IdempotencyRecord]:
        """The record to replay for ``key``, ``None`` when there is none (or it expired)."""
        record = self.store.get(key)
        if record is None:
            return None
        if self._clock() - record.created_at >= self.ttl:
            self.store.delete(key)
            return None
        if record.request_hash != request:
            raise IdempotencyConflict(key)
        return record

    def record(self, key: str, request: str, events: Sequence[Mapping[str, Any]],
               summary: Mapping[str, Any]) -> IdempotencyRecord:
        """Keep the domain events and the summary fields of a finished run."""
        kept_events = tuple(_strip(e) for e in events if not str(e.get("type", "")).startswith("aoi:"))
        kept_summary = {k: summary[k] for k in _SUMMARY_KEPT if k in summary}
        rec = IdempotencyRecord(key, request, kept_events, kept_summary, self._clock())
        self.store.put(rec)
        return rec

    @staticmethod
    def replay_events(record: IdempotencyRecord) -> List[Dict[str, Any]]:
        """The recorded domain events, with the values they were first emitted with
        (docs/discovery.md, "Idempotency keys": a replay is a new run, marked in its summary,
        not in its events): ``type`` first, then the fields with the keys of every object
        sorted, as the Rust SDK replays its records (docs/discovery.md, "Serialization")."""
        out = []
        for e in record.events:
            fields = sorted_keys({k: v for k, v in e.items() if k != "type"})
            out.append({"type": e["type"], **fields} if "type" in e else fields)
        return out

    @staticmethod
    def replay_properties(record: IdempotencyRecord) -> Dict[str, Any]:
        """The replay's ``aoi:summary.properties``: the recorded ones and
        ``idempotent_replay: true``."""
        recorded = record.summary.get("properties")
        return {**(recorded if isinstance(recorded, dict) else {}), REPLAY_PROPERTY: True}
