"""Redaction of secrets before an event is written (AOI-CLI §11, §18.2 check 9).

§11: a tool that includes arguments MUST redact sensitive values: flags whose
names contain ``token``, ``secret``, ``password``, ``passwd``, ``key``,
``credential``, ``cookie``, ``authorization``, ``auth``, ``bearer``,
``private``, ``client-secret``; URLs with credentials, tokens, signatures,
SAS parameters, or query keys such as ``sig``, ``token``, ``access_token``,
``code``, ``key``; custom headers; environment variable values. This module
applies those rules to whole events (any depth) and to argv.

The marker is ``[REDACTED]``. ``idempotency_key`` and ``cursor`` are not secret
(docs/discovery.md, ``x-aoi.secret``), nor are the framework's own fields
(``type``, ``aoi``, an error's ``code``...). Example::

    >>> redact_event({"type": "hit", "api_token": "s3cr3t",
    ...               "url": "https://u:p@h/x?sig=abc&page=2"})
    {'type': 'hit', 'api_token': '[REDACTED]', 'url': 'https://%5BREDACTED%5D@h/x?sig=%5BREDACTED%5D&page=2'}
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Sequence
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["REDACTED", "SENSITIVE_WORDS", "SENSITIVE_QUERY_KEYS", "is_sensitive_name", "redact_url",
           "redact_value", "redact_event", "redact_argv"]

REDACTED = "[REDACTED]"

#: §11's list of sensitive words in a flag or field name.
SENSITIVE_WORDS = ("token", "secret", "password", "passwd", "key", "credential", "cookie", "authorization",
                   "auth", "bearer", "private", "client-secret", "client_secret", "signature", "session")

#: §11's query keys, plus the SAS signature parameters (``sig``, ``se``... only ``sig`` is secret).
SENSITIVE_QUERY_KEYS = frozenset({"sig", "signature", "token", "access_token", "refresh_token", "id_token",
                                  "code", "key", "api_key", "apikey", "password", "secret", "client_secret",
                                  "x-amz-signature", "x-amz-security-token", "x-goog-signature", "auth"})

_NOT_SECRET = frozenset({"idempotency_key", "idempotency-key", "cursor", "next_cursor", "type", "aoi",
                         "code", "category", "key_count", "keys"})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_BEARER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
_FRAMEWORK_FIELDS = frozenset({"type", "aoi", "category", "code", "retryable", "retry_after_ms", "scope",
                               "ok", "reason", "event_count", "count", "seq", "run"})


def is_sensitive_name(name: str) -> bool:
    """True when a flag or field name is sensitive by §11 (``--api-token``, ``Authorization``, ``db_password``)."""
    n = name.lower().lstrip("-")
    if n in _NOT_SECRET:
        return False
    return any(w in n for w in SENSITIVE_WORDS)


def redact_url(url: str) -> str:
    """The URL without its userinfo and with sensitive query values replaced (§11)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = quote(REDACTED) + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        out = []
        for k, v in pairs:
            secret = k.lower() in SENSITIVE_QUERY_KEYS or is_sensitive_name(k)
            out.append(f"{quote(k, safe='')}={quote(REDACTED) if secret else quote(v, safe='')}")
        query = "&".join(out)
    fragment = parts.fragment
    if fragment and any(f"{k}=" in fragment.lower() for k in ("access_token", "id_token", "token", "code")):
        fragment = quote(REDACTED)
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_text(text: str) -> str:
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact_value(value: Any, *, secrets: Iterable[str] = ()) -> Any:
    """``value`` with URLs, bearer tokens, known ``secrets`` and sensitive keys redacted, at any depth."""
    known = [s for s in secrets if s]
    return _walk(value, known, None)


def _walk(value: Any, secrets: Sequence[str], key: Any) -> Any:
    if isinstance(value, dict):
        out: Dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and is_sensitive_name(k) and not isinstance(v, (bool, dict, list)) and v is not None:
                out[k] = REDACTED
            elif isinstance(k, str) and k.lower() in ("headers", "header", "env", "environment") and isinstance(v, dict):
                # §11: custom headers and environment values are secret by default.
                out[k] = {hk: REDACTED for hk in v}
            else:
                out[k] = _walk(v, secrets, k)
        return out
    if isinstance(value, list):
        return [_walk(v, secrets, key) for v in value]
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, REDACTED)
        return _redact_text(value)
    return value


def redact_event(event: Mapping[str, Any], *, secrets: Iterable[str] = ()) -> Dict[str, Any]:
    """A copy of ``event`` safe to write: the framework fields kept, everything else redacted.

    ``secrets`` are values known to be secret (a token read from the environment): they are
    replaced wherever they occur.
    """
    known = [s for s in secrets if s]
    out: Dict[str, Any] = {}
    for k, v in event.items():
        out[k] = v if k in _FRAMEWORK_FIELDS else _walk({k: v}, known, None)[k]
    return out


def redact_argv(argv: Sequence[str]) -> List[str]:
    """argv with the values of sensitive flags and the secrets in URLs replaced (§11 ``aoi:meta.args``).

    Handles ``--flag VALUE``, ``--flag=VALUE`` and ``-H 'Authorization: ...'`` headers.
    """
    out: List[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if arg.startswith("-") and arg != "-" and arg != "--":
            name, eq, val = arg.partition("=")
            if name in ("-H", "--header") or is_sensitive_name(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
            out.append(name + eq + _redact_text(val) if eq else arg)
            continue
        out.append(_redact_text(arg))
    return out
