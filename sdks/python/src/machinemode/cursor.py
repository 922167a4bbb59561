"""Opaque pagination cursors bound to the query they continue (AOI-CLI §15, §16.1).

§15 says a truncated run sets ``aoi:summary.truncated`` and SHOULD set
``next_cursor``; §16.1 names ``--cursor TOKEN``. The spec calls the token
opaque and says nothing more, so this module fixes what a safe one is: it
carries a position and a binding (a hash of the command and of the query and
filter arguments that shaped the result), and is signed with HMAC-SHA256.
A cursor that was tampered with, cut short, made for another query or another
command, or signed with another secret is refused with a ``validation``
error (§9.2: input that parsed but failed validation; not retryable).

Wire form: urlsafe base64 without padding of ``version(1) | tag(16) | payload``
where payload is compact JSON ``{"b": binding, "p": position}``. Example::

    >>> codec = CursorCodec(b"k" * 32)
    >>> token = codec.encode({"offset": 20}, "search", {"query": "agent", "limit": 2})
    >>> codec.decode(token, "search", {"query": "agent", "limit": 2})
    {'offset': 20}
    >>> codec.decode(token, "search", {"query": "other", "limit": 2})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    machinemode.cursor.CursorError: the cursor belongs to another query or command
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Mapping, Optional

from .errors import AoiError

__all__ = ["CURSOR_CATEGORY", "CursorError", "CursorCodec", "query_binding"]

#: §9.2: the category of every refusal.
CURSOR_CATEGORY = "validation"
_VERSION = 1
_TAG = 16


class CursorError(AoiError):
    """A cursor this tool refuses: an :class:`~machinemode.AoiError` of category
    ``validation``, field ``cursor`` (§9.1), so raising it out of a handler reports it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(CURSOR_CATEGORY, code, message, field="cursor",
                         hint="pass a next_cursor from an earlier aoi:summary unchanged, or drop "
                              "--cursor to start from the beginning")


def _same(a: bytes, b: bytes) -> bool:
    """Constant-time equality (``hmac.compare_digest``, imported when first needed)."""
    import hmac

    return hmac.compare_digest(a, b)


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def query_binding(command: str, query: Mapping[str, Any]) -> str:
    """A stable hash of the command and the arguments that shape its results.

    Pass only what decides *which* results come (query, filters, sort, limit), never the
    cursor itself nor options like ``--output``.
    """
    import hashlib  # here, not at import: a tool's discovery never needs it

    digest = hashlib.sha256(_canonical({"command": command, "query": dict(query)})).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


class CursorCodec:
    """Encodes and checks cursors with one secret.

    The secret must stay the same across invocations (a tool keeps it in its state
    directory, or derives it from install metadata); with ``secret=None`` the tag is a plain
    SHA-256, which detects damage and foreign queries but not a forger.
    """

    def __init__(self, secret: Optional[bytes]) -> None:
        self._secret = secret

    def _tag(self, payload: bytes) -> bytes:
        import hashlib
        import hmac

        if self._secret is None:
            return hashlib.sha256(bytes([_VERSION]) + payload).digest()[:_TAG]
        return hmac.new(self._secret, bytes([_VERSION]) + payload, hashlib.sha256).digest()[:_TAG]

    def encode(self, position: Any, command: str, query: Mapping[str, Any]) -> str:
        """The token for ``position`` (any JSON value) in the results of ``command`` + ``query``."""
        payload = _canonical({"b": query_binding(command, query), "p": position})
        raw = bytes([_VERSION]) + self._tag(payload) + payload
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def decode(self, token: str, command: str, query: Mapping[str, Any]) -> Any:
        """The position ``token`` holds, or :class:`CursorError` when it is not one of ours for this query."""
        if not token or any(c in token for c in "=+/ \n"):
            raise CursorError("CURSOR_INVALID", "the cursor is not a token this tool issued")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise CursorError("CURSOR_INVALID", "the cursor is not a token this tool issued") from None
        if len(raw) <= 1 + _TAG or raw[0] != _VERSION:
            raise CursorError("CURSOR_INVALID", "the cursor is truncated or from another version")
        tag, payload = raw[1 : 1 + _TAG], raw[1 + _TAG :]
        if not _same(tag, self._tag(payload)):
            raise CursorError("CURSOR_INVALID", "the cursor was altered or issued by another tool")
        try:
            body = json.loads(payload)
        except ValueError:
            raise CursorError("CURSOR_INVALID", "the cursor is not a token this tool issued") from None
        if not isinstance(body, dict) or "p" not in body or "b" not in body:
            raise CursorError("CURSOR_INVALID", "the cursor is not a token this tool issued")
        if not _same(str(body["b"]).encode(), query_binding(command, query).encode()):
            raise CursorError("CURSOR_MISMATCH", "the cursor belongs to another query or command")
        return body["p"]
