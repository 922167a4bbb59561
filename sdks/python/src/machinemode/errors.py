"""The error taxonomy of AOI-CLI §9 and the exit statuses of §6, in one place.

A tool raises :class:`AoiError` (usually through one builder per category, e.g.
:func:`not_found`) and the harness turns it into one ``aoi:error`` and the terminal
``aoi:summary``; an item-scope error is written with :meth:`machinemode.Emitter.error` and the
stream continues (§9.1 ``scope``).

Rules enforced here, so a tool cannot get them wrong:

* ``category`` is one of the closed enum of §9.2 (``partial`` and ``temporary`` are gone, §5.2);
* ``code`` matches ``[A-Z][A-Z0-9_]*`` (§9.1);
* ``retryable`` is always present, defaulting to the category's default of §9.2, and
  ``retry_after_ms`` never appears with ``retryable`` false (§9.1, §9.3);
* ``message`` is one line without control characters (§9.1 "string, single line", "No ANSI").
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Tuple, get_args

__all__ = [
    "CATEGORIES",
    "Category",
    "Reason",
    "DEFAULT_RETRYABLE",
    "ERROR_FIELDS",
    "WRAPPED_FIELDS",
    "EXIT_BROKEN_PIPE",
    "EXIT_FOR_CATEGORY",
    "EXIT_IOERR",
    "EXIT_NOPERM",
    "REASONS",
    "AoiError",
    "authn",
    "authz",
    "category_for_wrapped",
    "cancelled",
    "clean_message",
    "config",
    "conflict",
    "exit_code_for",
    "internal",
    "io",
    "not_found",
    "precondition_failed",
    "rate_limited",
    "timeout",
    "unavailable",
    "unsupported",
    "usage",
    "validation",
]

#: The closed category enum of §9.2, as a type: a checker refuses any other string.
Category = Literal[
    "usage",
    "validation",
    "config",
    "authn",
    "authz",
    "not_found",
    "conflict",
    "precondition_failed",
    "unsupported",
    "rate_limited",
    "unavailable",
    "timeout",
    "cancelled",
    "io",
    "internal",
]
#: The same enum at run time, in the spec's order.
CATEGORIES: Tuple[Category, ...] = get_args(Category)

#: §9.2 "Default retryable": true for these three, false for every other category.
DEFAULT_RETRYABLE: Mapping[str, bool] = {c: c in ("rate_limited", "unavailable", "timeout")
                                         for c in CATEGORIES}

#: §6's sysexits mapping by category, completed where §6 names no code (docs/discovery.md,
#: "Exit codes"; the same table as the Rust SDK's ``Category::exit_code``): ``not_found`` is
#: ``EX_NOINPUT`` (66), ``conflict`` and ``precondition_failed`` are data errors (65),
#: ``unsupported`` is ``EX_UNAVAILABLE`` (69).
EXIT_FOR_CATEGORY: Mapping[str, int] = {
    "usage": 64,
    "validation": 65,
    "conflict": 65,
    "precondition_failed": 65,
    "not_found": 66,
    "unsupported": 69,
    "unavailable": 69,
    "internal": 70,
    "io": 74,
    "rate_limited": 75,
    "authn": 77,
    "authz": 77,
    "config": 78,
    "timeout": 124,
    "cancelled": 130,
}

#: The summary's ``reason`` when a process-scope error of the category ends a run and the
#: tool says nothing else (docs/discovery.md, "Exit codes"): ``failed`` for the rest.
_REASON_FOR_CATEGORY: Mapping[str, Reason] = {"authz": "denied", "cancelled": "cancelled",
                                           "timeout": "timeout"}

#: §6 ``EX_NOPERM``: a permission failure, and any refusal (``reason:"denied"``).
EXIT_NOPERM = 77
#: §6: SIGPIPE / downstream closed pipe.
EXIT_BROKEN_PIPE = 141
#: §6 ``EX_IOERR``: stdout could not be written (ENOSPC, EIO, closed).
EXIT_IOERR = 74

#: §8.3 ``reason`` when ``ok`` is false (a closed enum), as a type; ``skipped`` goes with
#: ``ok`` true.
Reason = Literal["failed", "cancelled", "timeout", "denied"]
#: The same enum at run time.
REASONS: Tuple[Reason, ...] = get_args(Reason)

_CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")

#: The optional §9.1 fields an error may carry after ``retry_after_ms``, in the order the Rust
#: SDK writes them (``domain`` and ``origin`` come before ``message``: see :meth:`AoiError.fields`).
_OPTIONAL_FIELDS = ("target", "item_index", "line_number", "field", "wrapped", "hint", "docs",
                    "details")
#: Every field of an ``aoi:error`` after ``type`` and ``aoi``, in the order the Rust SDK writes
#: them (its ``ErrorEvent``): what :meth:`AoiError.fields` writes and a forwarded error keeps.
ERROR_FIELDS = ("scope", "category", "code", "domain", "origin", "message", "retryable",
                "retry_after_ms", *_OPTIONAL_FIELDS)
#: ``wrapped``'s keys in the Rust SDK's order (§9.1 ``{protocol, status?, code?}``).
WRAPPED_FIELDS = ("protocol", "status", "code")


def exit_code_for(category: str) -> int:
    """The exit status for a category (§6 and docs/discovery.md, "Exit codes")."""
    return EXIT_FOR_CATEGORY.get(category, 1)


def in_order(fields: Mapping[str, Any], order: Tuple[str, ...]) -> Dict[str, Any]:
    """``fields`` with the keys of ``order`` first, in that order, then the rest as given: the
    key order of a fixed-shape object as the Rust SDK's struct writes it."""
    out = {k: fields[k] for k in order if k in fields}
    out.update((k, v) for k, v in fields.items() if k not in out)
    return out


def sorted_keys(value: Any) -> Any:
    """``value`` with the keys of every object in it sorted: how the Rust SDK writes the maps it
    keeps (``properties``, ``details``), whose keys come in no order a caller chose."""
    if isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [sorted_keys(v) for v in value]
    return value


def clean_message(message: str) -> str:
    """One line, no ANSI, no control characters, no lone surrogates (§9.1 ``message``).

    The Rust SDK's ``wire::text::single_line``, character for character: a line break
    (``\\n``, ``\\r``, U+2028, U+2029, U+0085) or a tab becomes one space (none after a space),
    an ANSI sequence (ESC ``[`` … a final byte, ESC ``]`` … BEL or ESC ``\\``, ESC and one
    character, the C1 CSI U+009B …) is removed whole, every other control is dropped, and the
    end is trimmed. Text with nothing to clean is returned as it is (its trailing spaces kept,
    as ``single_line`` keeps them), and a message may end up empty, as in the Rust SDK. A lone
    surrogate becomes ``?``.
    """
    text = message.encode("utf-8", "replace").decode("utf-8")
    # Every character the pattern names is unprintable, so printable text needs no look at it.
    if text.isprintable() or not re.search(_NEEDS_CLEANING, text):
        return text
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c == "\x1b":
            if i < n and text[i] == "[":
                i = _skip_csi(text, i + 1)
            elif i < n and text[i] == "]":  # OSC: up to BEL or ESC \
                i += 1
                while i < n:
                    d = text[i]
                    i += 1
                    if d == "\x07":
                        break
                    if d == "\x1b":
                        if i < n and text[i] == "\\":
                            i += 1
                        break
            elif i < n:
                i += 1
        elif c == "\x9b":
            i = _skip_csi(text, i)
        elif c in _BREAKS:
            if not out or out[-1] != " ":
                out.append(" ")
        elif not _is_control(c):
            out.append(c)
    return "".join(out).rstrip()


_BREAKS = frozenset("\n\r\t\u2028\u2029\x85")
# A pattern string: compiled (0.3 ms, and cached by re) only for text that is not printable.
_NEEDS_CLEANING = "[\x00-\x1f\x7f-\x9f\u2028\u2029]"


def _is_control(c: str) -> bool:
    return c <= "\x1f" or "\x7f" <= c <= "\x9f"


def _skip_csi(text: str, i: int) -> int:
    """The index after a CSI sequence's final byte (U+0040-U+007E), or the end."""
    while i < len(text):
        c = text[i]
        i += 1
        if "\x40" <= c <= "\x7e":
            break
    return i


class AoiError(Exception):
    """A failure that becomes one ``aoi:error`` event (§9.1).

    Raised out of a command handler it ends the run: the harness writes it with
    ``scope:"process"``, then ``aoi:summary`` with ``ok:false`` and :attr:`reason`, and exits
    with :attr:`exit_code` (§6, from the category unless given).

    :raises ValueError: on a category outside §9.2, a code that breaks the pattern, a
        non-boolean ``retryable``, or ``retry_after_ms`` with ``retryable`` false. These are
        bugs in the tool, not conditions of a run.
    """

    def __init__(
        self,
        category: str,
        code: str,
        message: str,
        *,
        retryable: Optional[bool] = None,
        retry_after_ms: Optional[int] = None,
        reason: Optional[Reason] = None,
        exit_code: Optional[int] = None,
        target: Optional[str] = None,
        field: Optional[str] = None,
        hint: Optional[str] = None,
        line_number: Optional[int] = None,
        item_index: Optional[int] = None,
        domain: Optional[str] = None,
        origin: Optional[str] = None,
        docs: Optional[str] = None,
        wrapped: Optional[Mapping[str, Any]] = None,
        details: Optional[Mapping[str, Any]] = None,
        properties: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if category not in CATEGORIES:
            raise ValueError(f"category {category!r} is not one of AOI-CLI §9.2")
        if not isinstance(code, str) or not _CODE_RE.match(code):
            raise ValueError(f"code {code!r} does not match [A-Z][A-Z0-9_]* (§9.1)")
        if retryable is None:
            retryable = DEFAULT_RETRYABLE[category]
        if not isinstance(retryable, bool):
            raise ValueError("retryable must be a bool (§9.3)")
        if retry_after_ms is not None:
            if not retryable:
                raise ValueError("retry_after_ms must not appear with retryable false (§9.1)")
            if isinstance(retry_after_ms, bool) or not isinstance(retry_after_ms, int) \
                    or retry_after_ms < 0:
                raise ValueError("retry_after_ms is an integer >= 0 (§9.1)")
        if reason is None:  # the summary's reason for a run this error ends, as the Rust SDK
            reason = _REASON_FOR_CATEGORY.get(category, "failed")
        if reason not in REASONS:
            raise ValueError(f"reason {reason!r} is not one of {REASONS} (§8.3)")
        self.category = category
        self.code = code
        self.message = clean_message(message)
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.reason: Reason = reason
        # A refusal (``reason:"denied"``) exits EX_NOPERM whatever its category, as an authz
        # failure does (docs/discovery.md, "Exit codes").
        self.exit_code = exit_code if exit_code is not None else \
            EXIT_NOPERM if reason == "denied" else exit_code_for(category)
        self.target = target
        self.field = field
        self.hint = None if hint is None else clean_message(hint)
        self.line_number = line_number
        self.item_index = item_index
        self.domain = domain
        self.origin = origin
        self.docs = docs
        self.wrapped = in_order(wrapped, WRAPPED_FIELDS) if wrapped is not None else None
        # Sorted, as the Rust SDK writes its maps (docs/discovery.md, "Serialization").
        self.details = sorted_keys(details) if details is not None else None
        # §8.1: tool-specific data on a framework event; an empty map is not written.
        self.properties = sorted_keys(properties) if properties else None
        super().__init__(self.message)

    def fields(self, scope: str = "process") -> Dict[str, Any]:
        """The event's fields after ``type`` and ``aoi``, in the Rust SDK's order (§9's example:
        ``scope``, ``category``, ``code``, ``domain``, ``origin``, ``message``, ``retryable``,
        ``retry_after_ms``, then the rest; docs/discovery.md, "Serialization")."""
        if scope not in ("process", "item"):
            raise ValueError("scope is process or item (§9.1)")
        values = {"scope": scope, **{name: getattr(self, name) for name in ERROR_FIELDS[1:]}}
        out = {name: values[name] for name in ERROR_FIELDS if values[name] is not None}
        if self.properties is not None:
            out["properties"] = self.properties
        return out

    def caused_by(self) -> Dict[str, Any]:
        """The retry-critical fields §13.1 reproduces in ``aoi:summary.caused_by``."""
        out: Dict[str, Any] = {"category": self.category, "code": self.code,
                               "retryable": self.retryable}
        if self.origin is not None:
            out = {"origin": self.origin, **out}
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        return out

    def __repr__(self) -> str:
        return f"AoiError({self.category!r}, {self.code!r}, {self.message!r})"


def _builder(category: str) -> Callable[..., AoiError]:
    def build(code: str, message: str, **fields: Any) -> AoiError:
        return AoiError(category, code, message, **fields)

    build.__name__ = category
    build.__qualname__ = category
    build.__doc__ = (f"An :class:`AoiError` of category ``{category}`` (§9.2; default "
                     f"``retryable: {str(DEFAULT_RETRYABLE[category]).lower()}``, exit "
                     f"{exit_code_for(category)}).")
    return build


# One builder per §9.2 category; each takes (code, message, **AoiError keyword fields).
usage = _builder("usage")
validation = _builder("validation")
config = _builder("config")
authn = _builder("authn")
authz = _builder("authz")
not_found = _builder("not_found")
conflict = _builder("conflict")
precondition_failed = _builder("precondition_failed")
unsupported = _builder("unsupported")
rate_limited = _builder("rate_limited")
unavailable = _builder("unavailable")
timeout = _builder("timeout")
cancelled = _builder("cancelled")
io = _builder("io")
internal = _builder("internal")


# §9.5: the category a wrapped HTTP status or gRPC code maps to.
_HTTP_CATEGORY: Dict[int, str] = {
    400: "validation", 422: "validation", 401: "authn", 403: "authz", 404: "not_found", 410: "not_found",
    405: "unsupported", 501: "unsupported", 408: "timeout", 504: "timeout", 409: "conflict",
    412: "precondition_failed", 428: "precondition_failed", 429: "rate_limited", 502: "unavailable",
    503: "unavailable", 500: "internal", 499: "cancelled",
}
_GRPC_CATEGORY: Dict[str, str] = {
    "INVALID_ARGUMENT": "validation", "OUT_OF_RANGE": "validation", "UNAUTHENTICATED": "authn",
    "PERMISSION_DENIED": "authz", "NOT_FOUND": "not_found", "UNIMPLEMENTED": "unsupported",
    "DEADLINE_EXCEEDED": "timeout", "ABORTED": "conflict", "ALREADY_EXISTS": "conflict",
    "FAILED_PRECONDITION": "precondition_failed", "RESOURCE_EXHAUSTED": "rate_limited",
    "UNAVAILABLE": "unavailable", "INTERNAL": "internal", "UNKNOWN": "internal", "DATA_LOSS": "internal",
    "CANCELLED": "cancelled",
}
_GRPC_NAMES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
               "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
               "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")


def category_for_wrapped(wrapped: Mapping[str, Any]) -> Optional[Tuple[str, str]]:
    """The category §9.5 maps a ``wrapped`` failure to, with the status as a message names it
    (``("HTTP 404", "not_found")``): an HTTP error status (400-599; unlisted 4xx are
    ``validation``, unlisted 5xx ``unavailable``), or a gRPC code by number or name in ``status``
    or ``code``. ``None`` for an exit status, a success, or what the table cannot read."""
    status = wrapped.get("status")
    if wrapped.get("protocol") == "http":
        if isinstance(status, bool) or not isinstance(status, (int, str)):
            return None
        try:
            n = int(status)
        except ValueError:
            return None
        if not 400 <= n < 600:
            return None
        return f"HTTP {n}", _HTTP_CATEGORY.get(n, "validation" if n < 500 else "unavailable")
    if wrapped.get("protocol") == "grpc":
        for v in (status, wrapped.get("code")):
            name = None
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(_GRPC_NAMES):
                name = _GRPC_NAMES[v]
            elif isinstance(v, str) and v.strip() in _GRPC_NAMES:
                name = v.strip()
            if name is not None:
                return (f"gRPC {name}", _GRPC_CATEGORY[name]) if name != "OK" else None
    return None
