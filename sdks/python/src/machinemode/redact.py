"""Redaction of secrets from echoed arguments, free text and events (AOI-CLI §11, §18.2 check 9).

§11: a tool that includes arguments MUST redact sensitive values: flags whose
names contain ``token``, ``secret``, ``password``, ``passwd``, ``key``,
``credential``, ``cookie``, ``authorization``, ``auth``, ``bearer``,
``private``, ``client-secret``; URLs with credentials, tokens, signatures,
SAS parameters, or query keys such as ``sig``, ``token``, ``access_token``,
``code``, ``key``; custom headers; environment variable values.

The argv and free-text rules (:func:`redact_args`, :func:`scrub`,
:func:`is_sensitive_name`, the fingerprints) are a port of the Rust SDK's
``aoi::surface::redact`` with no declared flags and no secret values, and the
shared table ``tests/redaction/cases.json`` holds both to the same output.
Only values are replaced; flag names, header names, variable names, URL hosts
and paths survive, so an echo still says what was asked. The marker is
``[REDACTED]``, written raw, inside URLs too.

:func:`redact_event` and :func:`redact_value` are Python-only: they redact whole
event objects by field name, and their strings go through :func:`scrub`. Example::

    >>> redact_event({"type": "hit", "api_token": "s3cr3t",
    ...               "url": "https://u:p@h/x?sig=abc&page=2"})
    {'type': 'hit', 'api_token': '[REDACTED]', 'url': 'https://u:[REDACTED]@h/x?sig=[REDACTED]&page=2'}
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = ["REDACTED", "SENSITIVE_WORDS", "SENSITIVE_QUERY_KEYS", "is_sensitive_name", "scrub", "redact_args",
           "redact_argv", "args_fingerprint", "input_fingerprint", "redact_url", "redact_value", "redact_event"]

REDACTED = "[REDACTED]"

#: §11's substrings that make a flag, variable or query-key name sensitive. Lowercase, with ``-``
#: standing for both ``-`` and ``_``; ``client-secret`` is implied by ``secret`` and kept so the
#: list reads like the spec's. The Rust SDK's ``SENSITIVE_NAME_PARTS``, in its order.
SENSITIVE_WORDS = ("token", "secret", "password", "passwd", "key", "credential", "cookie", "authorization",
                   "auth", "bearer", "private", "client-secret")

#: URL query (and fragment) keys whose value is a secret though the name rule misses them (§11:
#: signatures, SAS ``sig``, OAuth ``code``); compared ASCII case-insensitively. Azure SAS ``sv``,
#: ``se``, ``sp`` are absent: they say what a link grants without granting it. The Rust SDK's
#: ``SECRET_QUERY_KEYS``.
SENSITIVE_QUERY_KEYS = frozenset({"sig", "signature", "token", "access_token", "id_token", "refresh_token", "code",
                                  "key", "api_key", "apikey", "password", "secret", "client_secret",
                                  "x-amz-signature", "x-amz-credential", "x-amz-security-token",
                                  "x-goog-signature"})

#: Header names whose value :func:`scrub` hides in ``Name: value`` lines; a match may be the tail of
#: a longer name (``Set-Cookie``, ``Proxy-Authorization``).
_SECRET_HEADER_NAMES = (b"authorization", b"cookie", b"api-key", b"auth-token")

_PARTS = tuple(part.encode() for part in SENSITIVE_WORDS)
_QUERY_KEYS = frozenset(key.encode() for key in SENSITIVE_QUERY_KEYS)
_MARKER = REDACTED.encode()

#: Event field names that are not secret though the name rule would say so (docs/discovery.md,
#: ``x-aoi.secret``). This exemption is for event fields only: in argv, as in the Rust SDK, the
#: value of ``--idempotency-key`` is hidden.
_NOT_SECRET_FIELDS = frozenset({"idempotency_key", "idempotency-key", "cursor", "next_cursor", "type", "aoi",
                                "code", "category", "key_count", "keys"})
_SECRET_MAPS = ("headers", "header", "env", "environment")
_FRAMEWORK_FIELDS = frozenset({"type", "aoi", "category", "code", "retryable", "retry_after_ms", "scope",
                               "ok", "reason", "event_count", "count", "seq", "run"})

# What the previous argument says about the next one (the Rust SDK's `Pending`).
_NONE, _SECRET, _HEADER_STRICT, _HEADER_LAX, _ENV = range(5)
# How a flag's value is treated (the Rust SDK's `FlagKind`).
_KIND_SECRET, _KIND_HEADER, _KIND_ENV, _KIND_PLAIN = range(4)
_PENDING_OF_LONG = {_KIND_SECRET: _SECRET, _KIND_HEADER: _HEADER_STRICT, _KIND_ENV: _ENV, _KIND_PLAIN: _NONE}
_PENDING_OF_SHORT = {_KIND_SECRET: _SECRET, _KIND_HEADER: _HEADER_LAX, _KIND_ENV: _ENV, _KIND_PLAIN: _NONE}

_Range = Tuple[int, int]
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_URL_ENDS = frozenset(b"\"'<>`\\")
_BEARER_ENDS = frozenset(b",;()[]{}")
_PLAIN_USER = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789._-")
_ENV_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _encode(text: str) -> bytes:
    # Offsets are UTF-8 byte offsets, as in the Rust SDK; `surrogatepass` keeps a surrogate-escaped
    # argv (which Rust's `&str` cannot hold) from raising.
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _normalize(name: bytes) -> bytes:
    """ASCII-lowercased, ``_`` as ``-``: the form names are compared in (non-ASCII left as is)."""
    return name.lower().replace(b"_", b"-")


def _has_sensitive_part(name: bytes) -> bool:
    normalized = _normalize(name)
    return any(part in normalized for part in _PARTS)


def is_sensitive_name(name: str) -> bool:
    """Whether a flag (or variable, or field) name is sensitive by the §11 heuristics.

    Leading dashes are ignored; matching is ASCII case-insensitive with ``_`` and ``-`` alike, on
    substrings: ``--api-key``, ``CLIENT_SECRET`` and ``--idempotency-key`` are sensitive,
    ``--limit`` is not. The Rust SDK's ``is_sensitive_flag``.
    """
    return _has_sensitive_part(_encode(name.lstrip("-")))


def _ends_url(b: int) -> bool:
    """Whether a byte ends a URL or a token in free text (ASCII whitespace, controls, quotes...)."""
    return b <= 0x20 or b == 0x7F or b in _URL_ENDS


def _is_flag_name(name: bytes) -> bool:
    return bool(name) and all(b in _NAME_BYTES for b in name)


def _is_env_style_name(name: bytes) -> bool:
    """``[A-Z_][A-Z0-9_]*`` with at least one letter, like ``DATABASE_URL``."""
    return (bool(name) and not (0x30 <= name[0] <= 0x39) and all(b in _ENV_NAME for b in name)
            and any(b in _UPPER for b in name))


def _flag_kind(name: bytes) -> int:
    body = name.lstrip(b"-")
    if _has_sensitive_part(body):
        return _KIND_SECRET
    normalized = _normalize(body)
    if normalized in (b"header", b"headers") or normalized.endswith((b"-header", b"-headers")):
        return _KIND_HEADER
    if normalized in (b"env", b"environment") or normalized.endswith(b"-env"):
        return _KIND_ENV
    return _KIND_PLAIN


def _split_flag(arg: bytes, dashes: int) -> Tuple[bytes, Optional[_Range]]:
    body = arg[dashes:]
    eq = body.find(b"=")
    if eq < 0:
        return body, None
    return body[:eq], (dashes + eq + 1, len(arg))


def _header_value(text: bytes, offset: int) -> Optional[_Range]:
    """The value of a ``Name: value`` header, or None without a colon."""
    colon = text.find(b":")
    if colon < 0:
        return None
    value = text[colon + 1:]
    start = colon + 1 + len(value) - len(value.lstrip(b" \t"))
    return offset + start, offset + len(text)


def _assignment_value(text: bytes, offset: int, any_name: bool) -> Optional[_Range]:
    """The value of ``NAME=value``: after ``--env`` any name counts, else an env-style or sensitive one."""
    eq = text.find(b"=")
    if eq < 0:
        return None
    name = text[:eq]
    counts = bool(name) and (any_name or _is_env_style_name(name) or (_is_flag_name(name) and
                                                                       _has_sensitive_part(name)))
    return (offset + eq + 1, offset + len(text)) if counts else None


def _extend(ranges: List[_Range], found: Optional[_Range]) -> None:
    if found is not None:
        ranges.append(found)


def _named_flag(arg: bytes, name: bytes, value: Optional[_Range], ranges: List[_Range]) -> int:
    kind = _flag_kind(name)
    if value is None:
        return _PENDING_OF_LONG[kind]
    text = arg[value[0]:value[1]]
    if kind == _KIND_SECRET:
        ranges.append(value)
    elif kind == _KIND_HEADER:
        header = _header_value(text, value[0])
        ranges.append(value if header is None else header)
    else:
        _extend(ranges, _assignment_value(text, value[0], kind == _KIND_ENV))
    return _NONE


def _short_value(arg: bytes, at: int, kind: int, ranges: List[_Range]) -> int:
    rest = arg[at:]
    if not rest:
        return _PENDING_OF_SHORT[kind]
    if rest.startswith(b"="):
        at, rest = at + 1, rest[1:]
    if kind == _KIND_SECRET:
        ranges.append((at, len(arg)))
    elif kind == _KIND_HEADER:
        _extend(ranges, _header_value(rest, at))
    elif kind == _KIND_ENV:
        # Attached to `-e`, only a plausible variable name counts: `-exclude=x` is another flag.
        _extend(ranges, _assignment_value(rest, at, False))
    return _NONE


def _arg_ranges(arg: bytes, pending: int, ranges: List[_Range]) -> int:
    """Pushes the ranges of ``arg`` the flag rules hide, and returns what it makes of the next argument."""
    is_long_option = arg.startswith(b"--")
    if not is_long_option:
        if pending == _SECRET:
            ranges.append((0, len(arg)))
            return _NONE
        if pending in (_HEADER_STRICT, _HEADER_LAX):
            header = _header_value(arg, 0)
            if header is not None:
                ranges.append(header)
                return _NONE
            if pending == _HEADER_STRICT:
                ranges.append((0, len(arg)))
                return _NONE
            # A bare `-H` is a switch in many tools (`grep -H`): a colon-less operand is not a header.
        if pending == _ENV:
            _extend(ranges, _assignment_value(arg, 0, True))
            return _NONE

    if is_long_option:
        if len(arg) == 2:
            return _NONE  # `--`: the flag rules still apply after it (forwarded argv is as secret)
        name, value = _split_flag(arg, 2)
        return _named_flag(arg, name, value, ranges)
    if not arg.startswith(b"-"):
        _extend(ranges, _assignment_value(arg, 0, False))
        return _NONE
    if len(arg) == 1:
        return _NONE  # `-`: standard input
    first = arg[1]
    if 0x30 <= first <= 0x39 or first == 0x2E:
        return _NONE  # a negative number
    # A single-dash argument is ambiguous: a Go-style long flag (`-token X`) or `-H`/`-e` with an
    # attached value. Every reading that hides something is applied, so no reading can leak.
    following = _NONE
    name, value = _split_flag(arg, 1)
    if len(name) > 1 and _is_flag_name(name) and _flag_kind(name) != _KIND_PLAIN:
        following = _named_flag(arg, name, value, ranges)
    attached = _NONE
    if first == 0x48:  # H
        attached = _short_value(arg, 2, _KIND_HEADER, ranges)
    elif first == 0x65:  # e
        attached = _short_value(arg, 2, _KIND_ENV, ranges)
    return attached if following == _NONE else following


def _url_userinfo_ranges(data: bytes, ranges: List[_Range]) -> None:
    """The password of ``scheme://user:password@host``, and a user name that looks like a token."""
    sep = data.find(b"://")
    while sep >= 0:
        if sep > 0 and (data[sep - 1] in _ALNUM or data[sep - 1] in b"+-."):
            start = sep + 3
            end = start
            while end < len(data) and not (_ends_url(data[end]) or data[end] in b"/?#"):
                end += 1
            authority = data[start:end]
            at = authority.rfind(b"@")
            if at >= 0:
                userinfo = authority[:at]
                colon = userinfo.find(b":")
                if colon >= 0:
                    if not _is_plain_user_name(userinfo[:colon]):
                        ranges.append((start, start + colon))
                    ranges.append((start + colon + 1, start + at))
                elif not _is_plain_user_name(userinfo):
                    ranges.append((start, start + at))
        sep = data.find(b"://", sep + 3)


def _is_plain_user_name(name: bytes) -> bool:
    """An ordinary account name (``git``, ``deploy``): at most 16 bytes of ``[a-z0-9._-]``, or empty."""
    return len(name) <= 16 and all(b in _PLAIN_USER for b in name)


def _is_secret_query_key(key: bytes) -> bool:
    return key.lower() in _QUERY_KEYS or (_is_flag_name(key) and _has_sensitive_part(key))


def _query_ranges(data: bytes, ranges: List[_Range]) -> None:
    """Values of secret keys in query strings and fragments, in full URLs and bare paths alike."""
    for mark, byte in enumerate(data):
        if byte not in b"?#":
            continue
        at = mark + 1
        while at < len(data) and not _ends_url(data[at]):
            end = at
            while end < len(data) and not (_ends_url(data[end]) or data[end] in b"&?#"):
                end += 1
            param = data[at:end]
            eq = param.find(b"=")
            if eq >= 0 and _is_secret_query_key(param[:eq]):
                ranges.append((at + eq + 1, end))
            if end >= len(data) or data[end] != 0x26:  # `?` and `#` start their own scan
                break
            at = end + 1


def _value_after(data: bytes, at: int) -> _Range:
    """A value from ``at``: inside double quotes to the closing quote, else to whitespace, a quote or ``&``."""
    if at < len(data) and data[at] == 0x22:
        start = end = at + 1
        while end < len(data) and data[end] not in b'"\r\n':
            end += 1
        return start, end
    end = min(at, len(data))
    while end < len(data) and not (_ends_url(data[end]) or data[end] == 0x26):
        end += 1
    return at, end


def _sensitive_assignment_ranges(data: bytes, ranges: List[_Range]) -> None:
    """Values of ``name=value`` pairs whose name is sensitive (``password=hunter2``)."""
    eq = data.find(b"=")
    while eq >= 0:
        name_start = eq
        while name_start > 0 and data[name_start - 1] in _NAME_BYTES:
            name_start -= 1
        name = data[name_start:eq]
        if name and _has_sensitive_part(name):
            ranges.append(_value_after(data, eq + 1))
        eq = data.find(b"=", eq + 1)


def _skip_blanks(data: bytes, at: int) -> int:
    if at >= len(data):
        return len(data)
    while at < len(data) and data[at] in b" \t":
        at += 1
    return at


def _header_line_ranges(data: bytes, lowered: bytes, ranges: List[_Range]) -> None:
    """Values of ``Authorization:``-style lines: to the end of the line, or ``"name": "value"`` to the quote."""
    for name in _SECRET_HEADER_NAMES:
        start = lowered.find(name)
        while start >= 0:
            at = start + len(name)
            if not (start > 0 and data[start - 1] in _ALNUM):
                if at < len(data) and data[at] in b"\"'":
                    at += 1
                at = _skip_blanks(data, at)
                if at < len(data) and data[at] == 0x3A:
                    at = _skip_blanks(data, at + 1)
                    if at < len(data) and data[at] == 0x22:
                        ranges.append(_value_after(data, at))
                    else:
                        end = at
                        while end < len(data) and data[end] not in b"\r\n":
                            end += 1
                        ranges.append((at, end))
            start = lowered.find(name, start + 1)


def _bearer_ranges(data: bytes, lowered: bytes, ranges: List[_Range]) -> None:
    """The token after ``Bearer`` (any case, as a word)."""
    start = lowered.find(b"bearer")
    while start >= 0:
        if not (start > 0 and (data[start - 1] in _ALNUM or data[start - 1] == 0x5F)):
            after = start + len(b"bearer")
            token_start = _skip_blanks(data, after)
            if token_start != after:
                end = token_start
                while end < len(data) and not (_ends_url(data[end]) or data[end] in _BEARER_ENDS):
                    end += 1
                ranges.append((token_start, end))
        start = lowered.find(b"bearer", start + 1)


def _percent_encode(value: bytes) -> bytes:
    return b"".join(bytes([b]) if b in _UNRESERVED else b"%%%02X" % b for b in value)


def _secret_values(secrets: Iterable[str]) -> List[bytes]:
    """Literal secrets and their percent-encoded forms, never empty (the Rust SDK's ``secret_value``)."""
    values: List[bytes] = []
    for secret in secrets:
        value = _encode(secret)
        if not value:
            continue
        for form in (_percent_encode(value), value):
            if form not in values:
                values.append(form)
    return values


def _scrub_ranges(data: bytes, values: Sequence[bytes], ranges: List[_Range]) -> None:
    for value in values:
        at = data.find(value)
        while at >= 0:
            ranges.append((at, at + len(value)))
            at = data.find(value, at + 1)  # overlapping occurrences too
    lowered = data.lower()
    _url_userinfo_ranges(data, ranges)
    _query_ranges(data, ranges)
    _sensitive_assignment_ranges(data, ranges)
    _header_line_ranges(data, lowered, ranges)
    _bearer_ranges(data, lowered, ranges)


def _is_char_boundary(data: bytes, at: int) -> bool:
    return at == 0 or at >= len(data) or (data[at] & 0xC0) != 0x80


def _replace_ranges(data: bytes, ranges: List[_Range]) -> Optional[bytes]:
    """``data`` with the ranges replaced by the marker, or None when nothing changed.

    Ranges are widened to character boundaries and merged; a range that already reads
    ``[REDACTED]`` is left alone, so scrubbing twice changes nothing the second time.
    """
    merged: List[List[int]] = []
    for start, end in sorted(ranges):
        start = min(start, len(data))
        end = max(start, min(end, len(data)))
        while not _is_char_boundary(data, start):
            start -= 1
        while not _is_char_boundary(data, end):
            end += 1
        if start == end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: List[bytes] = []
    copied = 0
    for start, end in merged:
        if data[start:end] == _MARKER:
            continue
        out += (data[copied:start], _MARKER)
        copied = end
    if not out:
        return None
    out.append(data[copied:])
    return b"".join(out)


def _scrub_with(text: str, values: Sequence[bytes]) -> str:
    data = _encode(text)
    ranges: List[_Range] = []
    _scrub_ranges(data, values, ranges)
    out = _replace_ranges(data, ranges)
    return text if out is None else _decode(out)


def scrub(text: str) -> str:
    """``text`` with secrets replaced by ``[REDACTED]``, for error messages and debug logs (§11).

    Hidden: URL passwords (``user:[REDACTED]@``) and token-like user names (``[REDACTED]@``; a short
    lower-case name such as ``git@`` stays); query and fragment values whose key is a known secret
    key (``sig``, ``code``, ``access_token``, ``X-Amz-Signature``...) or sensitive by name;
    ``name=value`` pairs whose name is sensitive; the token after ``Bearer``; the value of
    ``Authorization:``, ``Cookie:``, ``X-Api-Key:``-style header lines. The Rust SDK's
    ``Redactor::new().scrub``.
    """
    return _scrub_with(text, ())


def redact_args(argv: Sequence[str]) -> Tuple[List[str], bool]:
    """``argv`` with every sensitive value replaced, one for one, and whether anything was replaced.

    §11 (``aoi:meta.args``, ``aoi:meta.args_redacted``). Hidden, keeping flag and key names: the
    value of a sensitive flag (``--token X``, ``--token=X``, Go-style ``-token X``; a value is the
    next argument unless that starts with ``--``); header values after ``--header``/``-H``
    (``Authorization: [REDACTED]``; after ``--header`` a value without a colon is hidden whole,
    after ``-H`` it is left); environment values (``--env NAME=X``, ``-e NAME=X``, ``NAME=X``
    operands whose name is upper-case or sensitive); and in every argument what :func:`scrub`
    hides. ``--`` does not switch the rules off: what follows it is often forwarded to another
    program whose flags are just as secret. The Rust SDK's ``Redactor::new().redact_args``.
    """
    out: List[str] = []
    changed = False
    pending = _NONE
    for arg in argv:
        data = _encode(arg)
        ranges: List[_Range] = []
        pending = _arg_ranges(data, pending, ranges)
        _scrub_ranges(data, (), ranges)
        result = _replace_ranges(data, ranges)
        if result is None:
            out.append(arg)
        else:
            out.append(_decode(result))
            changed = True
    return out, changed


def unredacted_args(args: Sequence[str]) -> List[int]:
    """The positions of ``args`` (an ``aoi:meta.args`` as written) that still hold a sensitive value.

    §11: what :func:`redact_args` would still change leaks, unless the producer hid it with a
    marker of its own (text calling itself redacted, asterisks only, or nothing). The Rust SDK's
    ``Redactor::new().unredacted_args``.
    """
    hidden, _ = redact_args(args)
    return [at for at, (given, h) in enumerate(zip(args, hidden)) if given != h and not _hidden_by_a_marker(given, h)]


def _hidden_by_a_marker(given: str, hidden: str) -> bool:
    prefix = 0
    for a, b in zip(given, hidden):
        if a != b:
            break
        prefix += 1
    suffix = 0
    for a, b in zip(reversed(given[prefix:]), reversed(hidden[prefix:])):
        if a != b:
            break
        suffix += 1
    original = given[prefix : len(given) - suffix]
    return original == "" or set(original) == {"*"} or "redacted" in original.lower()


def redact_argv(argv: Sequence[str]) -> List[str]:
    """``argv`` with every sensitive value replaced (§11); see :func:`redact_args`."""
    return redact_args(argv)[0]


def _hex_fingerprint(digest: bytes) -> str:
    return "sha256:" + digest.hex()


def input_fingerprint(data: bytes) -> str:
    """The §11 ``aoi:meta.input_fingerprint`` of some input: ``sha256:`` and 64 lowercase hex digits."""
    return _hex_fingerprint(hashlib.sha256(data).digest())


def args_fingerprint(argv: Sequence[str]) -> str:
    """The SHA-256 fingerprint of an argument vector, in the :func:`input_fingerprint` format.

    Each argument is hashed as its UTF-8 byte length (8 bytes, little-endian) followed by its
    bytes, so ``["ab", "c"]`` and ``["a", "bc"]`` differ. To fingerprint only the shape of a call,
    hash the :func:`redact_argv` output.
    """
    hasher = hashlib.sha256()
    for arg in argv:
        data = _encode(arg)
        hasher.update(struct.pack("<Q", len(data)))
        hasher.update(data)
    return _hex_fingerprint(hasher.digest())


def redact_url(url: str) -> str:
    """The URL with its credentials and secret query values replaced (§11); :func:`scrub` on one URL."""
    return scrub(url)


def redact_value(value: Any, *, secrets: Iterable[str] = ()) -> Any:
    """``value`` with sensitive keys, known ``secrets`` and what :func:`scrub` finds redacted, at any depth."""
    return _walk(value, _secret_values(secrets))


def _walk(value: Any, secrets: Sequence[bytes]) -> Any:
    if isinstance(value, dict):
        out: Dict[str, Any] = {}
        for k, v in value.items():
            if (isinstance(k, str) and k.lower() not in _NOT_SECRET_FIELDS and is_sensitive_name(k)
                    and not isinstance(v, (bool, dict, list)) and v is not None):
                out[k] = REDACTED
            elif isinstance(k, str) and k.lower() in _SECRET_MAPS and isinstance(v, dict):
                # §11: custom headers and environment values are secret by default.
                out[k] = {hk: REDACTED for hk in v}
            else:
                out[k] = _walk(v, secrets)
        return out
    if isinstance(value, list):
        return [_walk(v, secrets) for v in value]
    if isinstance(value, str):
        return _scrub_with(value, secrets)
    return value


def redact_event(event: Mapping[str, Any], *, secrets: Iterable[str] = ()) -> Dict[str, Any]:
    """A copy of ``event`` safe to write: the framework fields kept, everything else redacted (§11).

    ``secrets`` are values known to be secret (a token read from the environment): they, and their
    percent-encoded forms, are replaced wherever they occur. Fields named ``idempotency_key``,
    ``cursor`` or ``next_cursor`` are kept though the name rule would hide them.
    """
    values = _secret_values(secrets)
    out: Dict[str, Any] = {}
    for k, v in event.items():
        out[k] = v if k in _FRAMEWORK_FIELDS else _walk({k: v}, values)[k]
    return out
