"""The command-line surface on argparse, and discovery derived from it (AOI-CLI §3, §10, §16, §17).

One :class:`Tool` holds one argparse parser per command. ``--help``, the usage errors, the
input schemas (``input-schema --command NAME``), the capability manifest (``capabilities``) and
the event schema (``schema``) are all read from those parsers and from the declared event
classes, so discovery cannot drift from what the tool accepts and emits (docs/discovery.md).
A parser is built the first time it is needed (its command runs, or its ``--help`` or input
schema is asked for): a command whose arguments are declared in an :meth:`Command.arguments`
function costs nothing at start-up, so ``schema`` and ``capabilities`` build no command's parser.

Every command has ``--output``/``--format`` (``jsonl``; ``json`` is read as ``jsonl`` except by
the discovery commands; ``human``, the default), ``--schema-version``, ``--no-color`` and
``--debug``. A command adds the §16.1 groups it needs:

=================  ===========================================================  ==================
group              flags                                                        capability
=================  ===========================================================  ==================
``PAGING``         ``--limit N``, ``--cursor TOKEN``, ``--max-bytes N``         bounded, supports_cursor
``DRY_RUN``        ``--dry-run``                                                supports_dry_run
``CONFIRM``        ``--confirm``, ``--confirm-count N``                         requires_confirm
``IDEMPOTENCY``    ``--idempotency-key KEY``                                    supports_idempotency_key
``INPUT_JSONL``    ``--input-jsonl PATH``, ``--fail-fast``/``--continue-on-error``  input_modes jsonl
``INPUT_JSON``     ``--input-json PATH``, ``--fail-fast``/``--continue-on-error``   input_modes json
``TIMEOUT``        ``--timeout SECONDS``                                        —
=================  ===========================================================  ==================

A usage error (an unknown flag, a missing operand, a bad value) exits 64 (§6); in machine mode
it is a complete stream: ``aoi:meta``, a ``usage`` ``aoi:error``, ``aoi:summary``. Messages
never repeat a value the caller gave (it may be a secret, §11): only flag names.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import os
import re
import sys
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from . import errors, harness
from .cursor import CursorCodec
from .emitter import AOI_VERSION, Emitter, Identity, StreamFailed
from .errors import AoiError
from .harness import Outcome
from .schemas import event_type_of, schema_of

if TYPE_CHECKING:  # the input readers are imported by the commands that read input, not at start-up
    from .idempotency import IdempotencyStore
    from .records import RecordBatch

__all__ = [
    "CONFIRM", "CONFIRMATION_REQUIRED", "CONFIRM_COUNT_MISMATCH", "CONFIRM_COUNT_REQUIRED",
    "DRY_RUN", "IDEMPOTENCY", "INPUT_JSON", "INPUT_JSONL", "PAGING", "TIMEOUT",
    "Command", "Context", "Group", "Tool", "path",
]

T = TypeVar("T")

#: A flag group a command takes (§16.1), as a type: one of the constants below.
Group = Literal["paging", "dry_run", "confirm", "idempotency", "input_jsonl", "input_json", "timeout"]
PAGING: Group = "paging"
DRY_RUN: Group = "dry_run"
CONFIRM: Group = "confirm"
IDEMPOTENCY: Group = "idempotency"
INPUT_JSONL: Group = "input_jsonl"
INPUT_JSON: Group = "input_json"
TIMEOUT: Group = "timeout"
#: The codes of :meth:`Context.require_confirm` (docs/discovery.md, "Confirmation").
CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"
CONFIRM_COUNT_MISMATCH = "CONFIRM_COUNT_MISMATCH"
CONFIRM_COUNT_REQUIRED = "CONFIRM_COUNT_REQUIRED"
_GROUPS = (PAGING, DRY_RUN, CONFIRM, IDEMPOTENCY, INPUT_JSONL, INPUT_JSON, TIMEOUT)
#: The argparse destinations of the SDK's own flags: not part of a query a cursor is bound to.
_SDK_DESTS = frozenset({"output", "format", "schema_version", "no_color", "debug", "limit", "cursor",
                        "max_bytes", "dry_run", "confirm", "confirm_count", "idempotency_key",
                        "input_jsonl", "input_json", "fail_fast", "continue_on_error", "timeout",
                        "command", "help"})

_DISCOVERY = ("schema", "capabilities", "input-schema")
_SENSITIVE = ("token", "secret", "password", "passwd", "key", "credential", "cookie",
              "authorization", "auth", "bearer", "private")
_JSON_SCHEMA = "https://json-schema.org/draft/2020-12/schema"
_CODE_RE = "^[A-Z][A-Z0-9_]*$"
_FLAG_RE = r"^--?[A-Za-z0-9][A-Za-z0-9-]{0,40}$"  # compiled by re on a usage error's first use


def path(value: str) -> str:
    """An argparse ``type`` for an argument the tool opens as a file (``-``: stdin); marked
    ``x-aoi-format: path`` in the input schema (docs/discovery.md)."""
    return value


def _nonnegative(value: str) -> int:
    if not re.match(r"^[0-9]{1,12}$", value):
        raise argparse.ArgumentTypeError("a non-negative integer")
    return int(value)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("a number of seconds") from None
    if not seconds >= 0 or seconds != seconds or seconds == float("inf"):
        raise argparse.ArgumentTypeError("a number of seconds")
    return seconds


class _UsageError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it, without importing
    shutil (and with it bz2 and lzma): argparse asks on every ``add_argument``."""
    env = os.environ.get("COLUMNS", "")
    if env.isascii() and env.isdigit() and int(env) > 0:
        return int(env)
    stdout = sys.__stdout__
    if stdout is None:
        return 80
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, its width found by :func:`_columns`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: Optional[int] = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are raised (as usage errors), never printed with exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise _UsageError(*_describe(message))


def _describe(message: str) -> Tuple[str, str]:
    """An argparse message as (code, message) that names flags but never echoes values."""
    if message.startswith("unrecognized arguments"):
        names = [t.split("=", 1)[0] for t in message.split(":", 1)[1].split()
                 if t.startswith("-")]
        shown = [n for n in names if re.match(_FLAG_RE, n)]
        if shown:
            return "UNKNOWN_OPTION", "Unknown option " + ", ".join(shown[:5]) + "."
        return "UNEXPECTED_OPERAND", "Too many operands."
    if "the following arguments are required" in message:
        return "MISSING_ARGUMENT", "Missing: " + message.split(":", 1)[1].strip() + "."
    m = re.match(r"argument ([^:]+): (.*)", message)
    if m:
        name, rest = m.group(1).split("/")[0].strip(), m.group(2)
        if not re.match(_FLAG_RE, name) and not re.match(r"^[A-Za-z_]{1,40}$", name):
            name = "an argument"
        if rest.startswith("invalid choice"):
            choices = re.search(r"\(choose from (.*)\)", rest)
            return "INVALID_CHOICE", f"Invalid value for {name}" + (
                f"; choose from {choices.group(1)}." if choices else ".")
        if rest.startswith("expected"):
            return "MISSING_VALUE", f"Option {name} needs a value."
        if "not allowed with" in rest:
            return "CONFLICTING_ARGUMENTS", f"{name} {rest.split(':')[0]}."
        if "ignored explicit argument" in rest:
            return "UNEXPECTED_VALUE", f"Option {name} takes no value."
        kind = re.match(r"invalid (.*) value", rest)
        return "INVALID_VALUE", f"Invalid value for {name}" + (
            f": expected {kind.group(1)}." if kind else ".")
    return "USAGE", "Invalid usage."


class _ArgInfo:
    """What the input schema adds to an argparse action (a plain class: a dataclass costs a
    third of a millisecond at every start)."""

    __slots__ = ("path", "schema", "secret")

    def __init__(self, schema: Dict[str, Any], path: bool, secret: Optional[bool]) -> None:
        self.schema = schema
        self.path = path
        self.secret = secret


class _Parsers(Dict[str, Any]):
    """argparse's map from a command's name to its parser (the subparsers action's ``choices``)
    in which a parser not built yet is the function that builds it: a look-up builds the parser
    it finds, and only that one. The names and their order are argparse's as ever."""

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        found = super().__getitem__(name)
        if not isinstance(found, argparse.ArgumentParser):
            found = found()
            super().__setitem__(name, found)
        return found  # type: ignore[no-any-return]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def values(self) -> Any:
        for name in self:
            self[name]
        return super().values()

    def items(self) -> Any:
        for name in self:
            self[name]
        return super().items()


class Command:
    """One command: its parser (add arguments with :meth:`argument`, or in an
    :meth:`arguments` function), its declared events and claims, and its handler."""

    def __init__(self, tool: Tool, name: str,
                 parser: Union[argparse.ArgumentParser, Callable[[], argparse.ArgumentParser]], *,
                 summary: str, read_only: bool, groups: Sequence[Group],
                 events: Sequence[type], destructive: bool, additive: bool, unbounded: bool,
                 examples: Sequence[Sequence[str]], setup: Optional[Sequence[Any]],
                 stdin: Optional[str], record: Optional[type], input_default: str,
                 limit_default: int, limit_max: int) -> None:
        self.tool = tool
        self.name = name
        # A parser, or the function that makes it bare (then :attr:`parser` completes it).
        self._parser = parser if isinstance(parser, argparse.ArgumentParser) else None
        self._new_parser = None if isinstance(parser, argparse.ArgumentParser) else parser
        self._declarations: List[Callable[[Command], None]] = []
        self.summary = summary
        self.read_only = read_only
        self.groups = tuple(groups)
        self.events = tuple(events)
        self.destructive = destructive
        self.additive = additive
        self.unbounded = unbounded
        self.examples = [list(e) for e in examples]
        self.setup = setup
        self.stdin = stdin
        self.record = record
        self.input_default = input_default
        self.limit_default = limit_default
        self.limit_max = limit_max
        self.info: Dict[str, _ArgInfo] = {}
        self.fn: Optional[Callable[[Context], Optional[Outcome]]] = None
        self.human_hook: Optional[Callable[[str, Mapping[str, Any]], Optional[str]]] = None
        for g in self.groups:
            if g not in _GROUPS:
                raise ValueError(f"unknown flag group {g!r}")
        for cls in self.events:
            if event_type_of(cls) is None:
                raise ValueError(f"{cls.__name__} is not marked with @event(...)")

    @property
    def event_types(self) -> List[str]:
        """Every ``type`` this command may emit, framework ones included (§17)."""
        out = ["aoi:meta"] + [t for t in (event_type_of(c) for c in self.events) if t]
        if DRY_RUN in self.groups:
            out.append("aoi:plan")
        if self.unbounded:
            out.append("aoi:heartbeat")
        return [*out, "aoi:warning", "aoi:error", "aoi:summary"]

    @property
    def parser(self) -> argparse.ArgumentParser:
        """This command's argparse parser, built on first use: the common flags, then its
        groups' flags, then its :meth:`arguments` functions in order."""
        if self._parser is None:
            assert self._new_parser is not None
            self._parser = self._new_parser()
            try:
                Tool._add_common(self._parser)
                Tool._add_groups(self)
                for declare in self._declarations:
                    declare(self)
            except BaseException:
                self._parser = None  # half-built: the next use fails the same way
                self.info.clear()
                raise
        return self._parser

    def arguments(self, fn: Callable[[Command], None]) -> Callable[[Command], None]:
        """Decorate a function ``fn(command)`` that declares this command's arguments with
        :meth:`argument`; it runs when the parser is first needed, so a start-up that never
        needs this command's parser (``schema``, ``capabilities``, another command) never
        builds it. A mistake in a declaration is raised then, as argparse raises it."""
        if self._parser is not None:
            fn(self)
        else:
            self._declarations.append(fn)
        return fn

    def argument(self, *flags: str, schema: Optional[Dict[str, Any]] = None,
                 secret: Optional[bool] = None, **kwargs: Any) -> argparse.Action:
        """``parser.add_argument`` plus what the input schema should add (``schema``: e.g.
        ``{"minLength": 1}``; ``secret``: never echoed, §11). ``type=machinemode.cli.path``
        marks a path. Outside an :meth:`arguments` function this builds the parser now."""
        action = self.parser.add_argument(*flags, **kwargs)
        self.info[action.dest] = _ArgInfo(dict(schema or {}), kwargs.get("type") is path,
                                          secret)
        return action

    def handler(self, fn: Callable[[Context], Optional[Outcome]]
                ) -> Callable[[Context], Optional[Outcome]]:
        """Decorate the function that runs this command."""
        self.fn = fn
        return fn

    def human(self, fn: Callable[[str, Mapping[str, Any]], Optional[str]]
              ) -> Callable[[str, Mapping[str, Any]], Optional[str]]:
        """Decorate a function ``fn(event_type, fields)`` that renders this command's domain
        events in human mode: its text replaces the default (a table or ``key: value`` lines,
        :mod:`machinemode.human`) for that event; ``None`` keeps the default. The text is
        escaped for the terminal like every value."""
        self.human_hook = fn
        return fn

    # -- discovery ---------------------------------------------------------------------------

    def input_schema(self) -> Dict[str, Any]:
        """The strict input schema of this command (docs/discovery.md ``input-schema``)."""
        props: Dict[str, Any] = {}
        required: List[str] = []
        positional: List[str] = []
        flags: Dict[str, str] = {}
        secret: List[str] = []
        for action in self.parser._actions:  # argparse's documented-by-use action list
            if isinstance(action, argparse._HelpAction) or action.dest in ("output",):
                continue
            name = action.dest
            prop = _property(action)
            info = self.info.get(name)
            if info is not None:
                if info.path:
                    target = prop["items"] if prop.get("type") == "array" else prop
                    target["x-aoi-format"] = "path"
                prop.update(info.schema)
                if info.secret:
                    prop["writeOnly"] = True
                    secret.append(name)
                elif info.secret is False:
                    prop["writeOnly"] = False
            props[name] = prop
            if not action.option_strings:
                positional.append(name)
                if action.nargs not in ("?", "*"):
                    required.append(name)
            else:
                long = [o for o in action.option_strings if o.startswith("--")]
                flags[name] = (long or action.option_strings)[0]
                if action.required:
                    required.append(name)
        doc: Dict[str, Any] = {
            "$schema": _JSON_SCHEMA,
            "title": f"{self.tool.name} {self.name}",
            "description": self.summary,
            "type": "object",
            "additionalProperties": False,
            "properties": props,
            "required": required,
            "x-aoi": {"command": self.name, "positional": positional, "flags": flags,
                      "secret": secret, "trailing_after_double_dash": False},
        }
        if self.record is not None:
            defs: Dict[str, Any] = {}
            record = schema_of(self.record, strict=True, defs=defs)
            record.setdefault("title", f"{self.tool.name} {self.name} record (one JSONL line)")
            doc["$defs"] = {**defs, "record": record}
        return doc

    def capabilities(self) -> Dict[str, Any]:
        """This command's entry of the capability manifest (§17, docs/discovery.md)."""
        modes = ["args"]
        if INPUT_JSONL in self.groups:
            modes.append("jsonl")
        if INPUT_JSON in self.groups:
            modes.append("json")
        entry: Dict[str, Any] = {
            "name": self.name,
            "summary": self.summary,
            "read_only": self.read_only,
            "destructive": self.destructive,
            "additive": self.additive,
            "requires_confirm": CONFIRM in self.groups,
            "supports_dry_run": DRY_RUN in self.groups,
            "supports_idempotency_key": IDEMPOTENCY in self.groups,
            "bounded": PAGING in self.groups,
            "supports_cursor": PAGING in self.groups,
            "unbounded": self.unbounded,
            "event_types": self.event_types,
            "input_modes": modes,
            "examples": self.examples,
        }
        if len(modes) > 1:
            entry["input_default"] = self.input_default
        if self.setup is not None:
            entry["setup"] = list(self.setup)
        if self.stdin is not None:
            entry["stdin"] = self.stdin
        return entry


def _property(action: argparse.Action) -> Dict[str, Any]:
    """The JSON Schema of one argparse action: its type, choices, default and help."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        prop: Dict[str, Any] = {"type": "boolean", "default": False}
    else:
        kind = action.type
        item: Dict[str, Any]
        if kind is int or kind is _nonnegative:
            item = {"type": "integer"}
            if kind is _nonnegative:
                item["minimum"] = 0
        elif kind is float or kind is _seconds:
            item = {"type": "number", "minimum": 0} if kind is _seconds else {"type": "number"}
        else:
            item = {"type": "string"}
        if action.choices is not None:
            item["enum"] = list(action.choices)
        many = isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+")
        prop = {"type": "array", "items": item} if many else dict(item)
        default = action.default
        if default is not None and default is not argparse.SUPPRESS and not many \
                and isinstance(default, (str, int, float, bool)):
            prop["default"] = default
    if action.help and action.help is not argparse.SUPPRESS:
        prop["description"] = action.help
    return prop


class Context:
    """What a handler gets: the parsed arguments, the stream, and helpers for the groups."""

    def __init__(self, command: Command, args: argparse.Namespace, out: Emitter,
                 machine: bool, schema_version: str) -> None:
        self.command = command
        self.args = args
        self.out = out
        self.machine = machine
        self.schema_version = schema_version
        self.batch: Optional[RecordBatch[Any]] = None

    @property
    def limit(self) -> int:
        """``--limit``, default and bound checked (a value over the bound is a usage error)."""
        value = getattr(self.args, "limit", None)
        if value is None:
            return self.command.limit_default
        if value > self.command.limit_max:
            raise errors.usage("INVALID_VALUE", f"--limit is at most {self.command.limit_max}.",
                               field="limit")
        return int(value)

    def _paging_query(self, query: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
        if query is not None:
            return query
        # Every argument of the command but the SDK's own flags shapes its results.
        return {k: v for k, v in vars(self.args).items() if k not in _SDK_DESTS}

    def after(self, *, query: Optional[Mapping[str, Any]] = None,
              codec: Optional[CursorCodec] = None) -> Any:
        """The position ``--cursor`` resumes after, or ``None`` on the first page; a cursor
        another query or command minted is refused (``validation``, field ``cursor``).
        ``query``: what shapes the results (default: every argument of the command but the
        SDK's flags); ``codec``: a signed :class:`~machinemode.cursor.CursorCodec` (default:
        checksummed, which refuses damage and other queries, not a forger)."""
        token = getattr(self.args, "cursor", None)
        if token is None:
            return None
        return (codec or CursorCodec(None)).decode(token, self.command.name, self._paging_query(query))

    def page(self, items: Iterable[Any], *, position: Callable[[Any], Any],
             event: Optional[Callable[[Any], Any]] = None, query: Optional[Mapping[str, Any]] = None,
             codec: Optional[CursorCodec] = None) -> Outcome:
        """A bounded read done for the handler (§15): ``items`` are those after
        :meth:`after`, in a stable order (at most ``--limit`` + 1 are drawn); each is emitted
        (through ``event`` when given) until ``--limit`` or ``--max-bytes``; the outcome is
        success, ``truncated`` with the ``next_cursor`` after the last item shown
        (``position(item)``) when more exist."""
        limit = self.limit
        drawn = list(itertools.islice(iter(items), limit + 1))
        max_bytes = getattr(self.args, "max_bytes", None)
        start, shown = self.out.bytes_written, 0
        for item in drawn[:limit]:
            if max_bytes is not None and shown and self.out.bytes_written - start >= max_bytes:
                break
            self.out.emit(event(item) if event is not None else item)
            shown += 1
        if shown == len(drawn):
            return Outcome.success()
        next_cursor = (codec or CursorCodec(None)).encode(
            position(drawn[shown - 1]) if shown else self.after(query=query, codec=codec),
            self.command.name, self._paging_query(query))
        return Outcome.success(truncated=True, next_cursor=next_cursor)

    def require_confirm(self, *, count: Optional[int] = None, target: Optional[str] = None,
                        count_required: bool = False) -> None:
        """§14.3: refuse a destructive run that is not confirmed; nothing has been changed.

        The refusals of docs/discovery.md ("Confirmation"), the same as the Rust SDK's, each
        with ``reason:"denied"``, in this order:

        1. ``--confirm-count N`` that differs from ``count`` (the items the run would affect):
           ``conflict`` ``CONFIRM_COUNT_MISMATCH``, field ``confirm_count``;
        2. no ``--confirm``: ``precondition_failed`` ``CONFIRMATION_REQUIRED``, field
           ``confirm`` (``--confirm-count`` alone is not confirmation);
        3. with ``count_required``, more than one item and no ``--confirm-count``:
           ``precondition_failed`` ``CONFIRM_COUNT_REQUIRED``, field ``confirm_count``.

        A refusal exits 77 (``EX_NOPERM``, docs/discovery.md "Exit codes").
        """
        name = self.command.name
        affected = "" if count is None else f" {count} item{'' if count == 1 else 's'}"
        expected = getattr(self.args, "confirm_count", None)
        if count is not None and expected is not None and expected != count:
            raise errors.conflict(
                CONFIRM_COUNT_MISMATCH,
                f"--confirm-count is {expected} but {name} would affect{affected}.",
                reason="denied", field="confirm_count", target=target,
                hint=f"review with --dry-run, then re-run with --confirm --confirm-count {count} "
                     "if that is intended", details={"affected": count, "confirm_count": expected})
        if not getattr(self.args, "confirm", False):
            again = f" --confirm-count {count}" if count is not None and count > 1 else ""
            raise errors.precondition_failed(
                CONFIRMATION_REQUIRED, f"Refusing to {name}{affected} without --confirm.",
                reason="denied", field="confirm", target=target,
                hint=f"re-run with --confirm{again} (or --dry-run to see the plan)",
                details=None if count is None else {"affected": count})
        if count_required and count is not None and count > 1 and expected is None:
            raise errors.precondition_failed(
                CONFIRM_COUNT_REQUIRED, f"Refusing to {name}{affected} without --confirm-count.",
                reason="denied", field="confirm_count", target=target,
                hint=f"re-run with --confirm --confirm-count {count}", details={"affected": count})

    def mutate(self, effect: Callable[[], Iterable[Any]], *, request: Mapping[str, Any],
               action: str, target: str, detail: Optional[str] = None,
               count: Optional[int] = None, store: Optional[IdempotencyStore] = None) -> Outcome:
        """A write done for the handler (§14), in the Rust SDK's ``Mutation`` order:

        1. ``--dry-run``: ``aoi:plan`` (``action``, ``target``, ``detail``) and nothing else (no
           confirmation is needed to look, the key is not used);
        2. a command with the ``CONFIRM`` group: :meth:`require_confirm` with ``count``, the
           items the run would change, before anything is touched (refused: exit 77);
        3. ``--idempotency-key``: the key is held (a second run with it waits) and looked up:
           the same ``request`` (what decides the effect) replays the recorded events
           (``idempotent_replay: true``); another request with it is a ``conflict``; a run that
           died holding it leaves the outcome unknown (``conflict``, ``retryable: false``);
        4. ``effect()``, which makes the change and returns the domain events that say so;
        5. their record under the key, **then** the events on the stream: a retry after a cut
           pipe replays instead of applying the effect again.

        The records are kept in ``store`` (default: :class:`FileIdempotencyStore` under the
        tool's state directory). Returns the outcome to finish with."""
        from .idempotency import FileIdempotencyStore, Idempotency, check_key, request_hash
        from .schemas import to_fields

        if getattr(self.args, "dry_run", False):
            self.out.plan(action, target, detail)
            return Outcome.success()
        if CONFIRM in self.command.groups:
            self.require_confirm(count=count, target=target)
        key = getattr(self.args, "idempotency_key", None)
        if key is None:
            for event in effect():
                self.out.emit(event)
            return self.done()
        key = check_key(key)
        records = store if store is not None else FileIdempotencyStore.for_tool(self.command.tool.name)
        held = records.lock(key) if isinstance(records, FileIdempotencyStore) else contextlib.nullcontext()
        with held:
            keyed = Idempotency(records)
            hashed = request_hash(self.command.name, request)
            prior = keyed.lookup(key, hashed)
            if prior is not None:
                for recorded in Idempotency.replay_events(prior):
                    self.out.emit(recorded.pop("type"), recorded)
                return self.done(properties=Idempotency.replay_properties(prior))
            events = list(effect())
            keyed.record(key, hashed, [{"type": event_type_of(e), **to_fields(e)} for e in events],
                         {"ok": True})
        for event in events:
            self.out.emit(event)
        return self.done()

    def read_records(self, record_type: Type[T]) -> RecordBatch[T]:
        """The records of ``--input-jsonl`` (:func:`machinemode.records.read_records`) or
        ``--input-json`` (:func:`machinemode.records.read_document`); with neither, ``usage``
        ``INPUT_REQUIRED``. In a :class:`RecordBatch` the number beside each record is its
        line (JSONL) or its 0-based item index (JSON)."""
        from .records import read_document, read_records

        jsonl = getattr(self.args, "input_jsonl", None)
        document = getattr(self.args, "input_json", None)
        if jsonl is not None and document is not None:
            raise errors.usage("CONFLICTING_ARGUMENTS",
                               "--input-jsonl and --input-json cannot be given together.",
                               field="input_json")
        if jsonl is not None:
            batch = read_records(self.out, jsonl, record_type,
                                 continue_on_error=self.continue_on_error)
        elif document is not None:
            batch = read_document(self.out, document, record_type,
                                  continue_on_error=self.continue_on_error)
        else:
            flags = " or ".join(f"--{g.replace('_', '-')} PATH" for g in (INPUT_JSONL, INPUT_JSON)
                                if g in self.command.groups)
            raise errors.usage("INPUT_REQUIRED", f"{self.command.name} needs {flags} "
                               "(- for standard input).", field="input_jsonl")
        self.batch = batch
        return batch

    @property
    def continue_on_error(self) -> bool:
        """``--continue-on-error``, else the command's declared default (§12.2)."""
        if getattr(self.args, "continue_on_error", False):
            return True
        if getattr(self.args, "fail_fast", False):
            return False
        return self.command.input_default == "continue_on_error"

    def done(self, **fields: Any) -> Outcome:
        """The outcome of a run: ``ok:true`` unless items failed, with ``input_count`` and
        ``upstream`` of the records read; item errors make it ``ok:false``, ``partial`` when
        something was still done (§8.3), exit 65."""
        if self.batch is not None:
            fields.setdefault("input_count", self.batch.input_count)
            if self.batch.upstream:
                fields.setdefault("upstream", self.batch.upstream)
            if self.batch.item_errors:
                fields.setdefault("partial", self.out.count > 0)
                return Outcome.failure(exit_code=65, **fields)
        return Outcome.success(**fields)


class Tool:
    """A Machine Mode tool: commands on argparse, discovery, and the harness.

    :param name: ``aoi:meta.tool`` and the program name.
    :param schema_versions: every event-schema version served (``--schema-version``, §5.1);
        the first is the default (``1.0.0`` only, unless said otherwise, as the Rust SDK).
    """

    def __init__(self, name: str, version: str, *, description: str, schema_name: str,
                 schema_id: str, schema_versions: Sequence[str] = ("1.0.0",),
                 auth: Optional[str] = None) -> None:
        self.name = name
        self.version = version
        self.description = description
        self.schema_name = schema_name
        self.schema_versions = list(schema_versions)
        self.schema_id = schema_id
        self.auth = auth
        self.commands: Dict[str, Command] = {}
        self.parser = _Parser(prog=name, description=description, allow_abbrev=False)
        self.parser.add_argument("--version", action="version",
                                 version=f"{name} {version} (AOI-CLI {AOI_VERSION})")
        self._add_common(self.parser)
        self._sub = self.parser.add_subparsers(dest="_command", metavar="COMMAND",
                                               parser_class=_Parser)
        self._parsers = _Parsers()
        self._sub._name_parser_map = self._sub.choices = self._parsers
        self._subcommand("schema", "Print the event schema (JSON Schema)", self._discovery_parser)
        self._subcommand("capabilities", "Print the capability manifest", self._discovery_parser)
        self._subcommand("input-schema", "Print one command's input schema",
                         self._discovery_parser)

    def _subcommand(self, name: str, help: str,
                    build: Callable[[str], argparse.ArgumentParser]) -> None:
        """Declare the subcommand ``name`` as ``add_parser(name, help=help)`` declares it (its
        line in ``--help``, its place among the choices); ``build(name)`` makes its parser
        when argparse, or anything else, first looks it up."""
        self._sub._choices_actions.append(self._sub._ChoicesPseudoAction(name, (), help))
        self._parsers[name] = functools.partial(build, name)

    def _bare_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A subcommand's parser as ``add_parser`` makes it, without its arguments."""
        return _Parser(prog=f"{self._sub._prog_prefix} {name}", allow_abbrev=False, **kwargs)

    def _discovery_parser(self, name: str) -> argparse.ArgumentParser:
        p = self._bare_parser(name)
        self._add_common(p)
        if name == "input-schema":
            p.add_argument("--command", dest="for_command", required=True, metavar="NAME",
                           help="The command whose input schema to print")
        return p

    @staticmethod
    def _add_common(p: argparse.ArgumentParser) -> None:
        s = argparse.SUPPRESS
        p.add_argument("--output", "--format", dest="output", default=s,
                       choices=["jsonl", "json", "human"],
                       help="jsonl: Machine Mode, AOI JSONL events on stdout (default: human)")
        p.add_argument("--schema-version", default=s, metavar="VERSION",
                       help="The event schema version to emit")
        p.add_argument("--no-color", action="store_true", default=s,
                       help="Never colour (machine mode never does)")
        p.add_argument("--debug", action="store_true", default=s,
                       help="Say where an internal error happened (redacted; stdout unchanged)")

    def identity(self, schema_version: Optional[str] = None) -> Identity:
        """The §5 identity at a schema version (the default when None)."""
        return Identity(self.name, self.version, self.schema_name,
                        schema_version or self.schema_versions[0])

    def command(self, name: str, *, summary: str, read_only: bool,
                groups: Iterable[Group] = (), events: Sequence[type] = (),
                destructive: bool = False, additive: bool = False, unbounded: bool = False,
                examples: Sequence[Sequence[str]] = (), setup: Optional[Sequence[Any]] = None,
                stdin: Optional[str] = None, record: Optional[type] = None,
                input_default: str = "fail_fast", limit_default: int = 20,
                limit_max: int = 1000, description: Optional[str] = None) -> Command:
        """Declare a command: its claims (§17), its flag groups, its events, its examples."""
        if name in self.commands or name in _DISCOVERY:
            raise ValueError(f"command {name!r} is declared twice")
        groups = list(groups)
        cmd = Command(self, name,
                      functools.partial(self._bare_parser, name,
                                        description=description or summary),
                      summary=summary, read_only=read_only, groups=groups,
                      events=events, destructive=destructive, additive=additive,
                      unbounded=unbounded, examples=examples, setup=setup, stdin=stdin,
                      record=record, input_default=input_default,
                      limit_default=limit_default, limit_max=limit_max)
        self._subcommand(name, summary, lambda _name: cmd.parser)
        self.commands[name] = cmd
        return cmd

    @staticmethod
    def _add_groups(cmd: Command) -> None:
        g = cmd.groups
        if PAGING in g:
            cmd.argument("--limit", type=_nonnegative, metavar="N",
                         help=f"At most N items (default {cmd.limit_default})",
                         schema={"default": cmd.limit_default, "maximum": cmd.limit_max})
            cmd.argument("--cursor", metavar="TOKEN",
                         help="Continue from aoi:summary.next_cursor of the previous page")
            cmd.argument("--max-bytes", type=_nonnegative, metavar="N",
                         help="Stop once N bytes of events are written (truncated)")
        if DRY_RUN in g:
            cmd.argument("--dry-run", action="store_true",
                         help="Emit aoi:plan events and change nothing")
        if CONFIRM in g:
            cmd.argument("--confirm", action="store_true",
                         help="Required: this command destroys data")
            cmd.argument("--confirm-count", type=_nonnegative, metavar="N",
                         help="Refuse unless exactly N items are affected")
        if IDEMPOTENCY in g:
            cmd.argument("--idempotency-key", metavar="KEY", secret=False,
                         schema={"minLength": 1, "maxLength": 200},
                         help="Replay protection: a repeat with the same key returns the "
                              "first result")
        if INPUT_JSONL in g:
            cmd.argument("--input-jsonl", type=path, metavar="PATH",
                         help="Read JSONL records from PATH (- for standard input)")
        if INPUT_JSON in g:
            cmd.argument("--input-json", type=path, metavar="PATH",
                         help="Read one JSON document, a record or an array of records, "
                              "from PATH (- for standard input)")
        if INPUT_JSONL in g or INPUT_JSON in g:
            mode = cmd.parser.add_mutually_exclusive_group()
            for flag, what in (("--fail-fast", "a malformed line aborts before any change"),
                               ("--continue-on-error",
                                "a malformed line is an item error; the rest is done")):
                action = mode.add_argument(flag, action="store_true", help=what)
                cmd.info[action.dest] = _ArgInfo({}, False, None)
        if TIMEOUT in g:
            cmd.argument("--timeout", type=_seconds, metavar="SECONDS",
                         help="Bound waits on external resources",
                         schema={"x-aoi-unit": "seconds"})

    # -- discovery ---------------------------------------------------------------------------

    def event_classes(self) -> List[type]:
        """Every declared event class, once, in declaration order."""
        seen: Dict[str, type] = {}
        for cmd in self.commands.values():
            for cls in cmd.events:
                t = event_type_of(cls)
                assert t is not None
                if t in seen and seen[t] is not cls:
                    raise ValueError(f"event type {t!r} is declared by two classes")
                seen[t] = cls
        return list(seen.values())

    def event_schema(self, schema_version: Optional[str] = None) -> Dict[str, Any]:
        """The event schema (§10; docs/discovery.md ``schema``)."""
        version = schema_version or self.schema_versions[0]
        defs = _framework_defs()
        by_type = dict(_FRAMEWORK_REFS)
        for cls in self.event_classes():
            t = event_type_of(cls)
            assert t is not None
            defs[cls.__name__] = {}
            defs[cls.__name__] = schema_of(cls, defs=defs)
            by_type[t] = cls.__name__
        all_of: List[Dict[str, Any]] = [{
            "type": "object", "required": ["type", "aoi"],
            "properties": {"type": {"type": "string"}, "aoi": {"$ref": "#/$defs/envelope"}}}]
        for t, ref in by_type.items():
            all_of.append({"if": {"properties": {"type": {"const": t}}, "required": ["type"]},
                           "then": {"$ref": f"#/$defs/{ref}"}})
        return {
            "$schema": _JSON_SCHEMA,
            "$id": self.schema_id.replace("{version}", version),
            "title": f"{self.name} events",
            "description": f"Every event {self.name} emits in machine mode (--output jsonl).",
            "type": "object",
            "allOf": all_of,
            "$defs": defs,
            "x-aoi": {"schema_name": self.schema_name, "schema_version": version,
                      "aoi_version": AOI_VERSION, "event_types": list(by_type)},
        }

    def capabilities(self) -> Dict[str, Any]:
        """The capability manifest (§17; docs/discovery.md ``capabilities``)."""
        doc: Dict[str, Any] = {
            "tool": self.name,
            "tool_version": self.version,
            "aoi_versions": [AOI_VERSION],
            "outputs": ["jsonl"],
            "machine_flag": ["--output", "jsonl"],
            "schemas": [{"name": self.schema_name, "versions": self.schema_versions,
                         "default": self.schema_versions[0]}],
            "commands": [c.capabilities() for c in self.commands.values()],
        }
        if self.auth is not None:
            doc["auth"] = self.auth
        return doc

    # -- running -------------------------------------------------------------------------------

    def _negotiate(self, asked: Optional[str]) -> str:
        """§5.1 ``--schema-version`` (docs/discovery.md, "Schema versions"): a served version,
        or a prefix of one ending at a dot (``1``, ``1.0``), with or without a leading ``v``,
        selects the highest served version it names; anything else is ``unsupported``
        ``SCHEMA_VERSION_UNSUPPORTED`` (exit 69)."""
        if asked is None:
            return self.schema_versions[0]
        want = asked.lstrip("v")
        named = [v for v in self.schema_versions if v == want or v.startswith(want + ".")]
        if named:
            return max(named, key=_version_key)
        raise errors.unsupported(
            "SCHEMA_VERSION_UNSUPPORTED",
            f"Schema version {want!r} is not served; this {self.name} serves "
            + ", ".join(self.schema_versions) + ".",
            field="schema_version", hint=f"--schema-version {self.schema_versions[0]}")

    def main(self, argv: Optional[Sequence[str]] = None) -> NoReturn:
        """Parse ``argv`` (default ``sys.argv[1:]``), run the command, exit (see the module)."""
        argv = list(sys.argv[1:] if argv is None else argv)
        output = _prescan_output(argv)
        machine = output in ("jsonl", "json")
        command = next((a for a in argv if a in self.commands), None)
        try:
            args = self.parser.parse_args(argv)
        except _UsageError as e:
            self._usage_failure(e.code, e.message, machine, command)
        except SystemExit as se:  # --help, --version
            harness.run(functools.partial(_raise, se), emitter=None, name=self.name)
        except BrokenPipeError as bp:  # --help into a closed pipe
            harness.run(functools.partial(_raise, bp), emitter=None, name=self.name)
        except OSError as oe:  # --help into a full disk
            harness.run(functools.partial(_raise, StreamFailed(oe.errno)), emitter=None,
                        name=self.name)
        name = getattr(args, "_command", None)
        debug = bool(getattr(args, "debug", False))
        if name is None:
            self._usage_failure("MISSING_COMMAND", "No command given; see --help.", machine, None)
        try:
            version = self._negotiate(getattr(args, "schema_version", None))
        except AoiError as err:
            out = self._emitter(command, machine, None, False)
            harness.run(functools.partial(_raise, err), emitter=out, name=self.name)
        if name in _DISCOVERY:
            harness.run(lambda: self._discover(name, args, version, output), emitter=None,
                        name=self.name, debug=debug)
        cmd = self.commands[name]
        out = self._emitter(name, machine, version, cmd.unbounded)
        ctx = Context(cmd, args, out, machine, version)
        fn = cmd.fn
        if fn is None:
            raise RuntimeError(f"command {name!r} has no handler")
        def body() -> Optional[Outcome]:
            # Machine mode: stdout is the stream's. A stray print() in the handler goes to
            # stderr (the emitter writes to the file underneath, not through sys.stdout).
            quiet = contextlib.redirect_stdout(sys.stderr) if machine and sys.stderr is not None \
                else contextlib.nullcontext()
            with quiet:
                return fn(ctx)

        harness.run(body, emitter=out, name=self.name, debug=debug,
                    timeout=getattr(args, "timeout", None))

    def _emitter(self, command: Optional[str], machine: bool, version: Optional[str],
                 flush_each: bool) -> Emitter:
        cmd = self.commands.get(command or "")
        types = None if cmd is None else [t for t in cmd.event_types if not t.startswith("aoi:")]
        stream = harness.stdout_stream()
        if not machine:
            from .human import HumanStream

            hook = None if cmd is None else cmd.human_hook
            stream = HumanStream(stream, self.name, hook=hook)  # type: ignore[assignment]
            flush_each = True
        return Emitter(stream, self.identity(version), command=command, event_types=types,
                       flush_each=flush_each)

    def _usage_failure(self, code: str, message: str, machine: bool,
                       command: Optional[str]) -> NoReturn:
        err = errors.usage(code, message, hint=f"{self.name} --help")
        if not machine:
            def say() -> Optional[Outcome]:
                sys.stderr.write(f"{self.name}: usage error: {err.message}\n"
                                 f"Try '{self.name} --help'.\n")
                raise SystemExit(64)

            harness.run(say, emitter=None, name=self.name)
        out = self._emitter(command, True, None, False)
        harness.run(lambda: _raise(err), emitter=out, name=self.name)

    def _discover(self, name: str, args: argparse.Namespace, version: str,
                  output: Optional[str]) -> Outcome:
        doc: Dict[str, Any]
        if name == "schema":
            doc = self.event_schema(version)
        elif name == "capabilities":
            doc = self.capabilities()
        else:
            target = self.commands.get(args.for_command)
            if target is None:
                raise errors.usage("UNKNOWN_COMMAND", "input-schema knows: "
                                   + ", ".join(self.commands) + ".", field="command")
            doc = target.input_schema()
        if output == "jsonl":
            text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        else:
            text = json.dumps(doc, ensure_ascii=False, indent=2)
        out = sys.stdout
        if out is None:
            raise StreamFailed(9)
        out.write(text + "\n")
        out.flush()
        return Outcome.success()


def _version_key(version: str) -> List[int]:
    """A version's numeric parts (a part that is not a number counts 0), to order them."""
    return [int(p) if p.isascii() and p.isdigit() else 0 for p in re.split(r"[.-]", version)]


def _prescan_output(argv: Sequence[str]) -> Optional[str]:
    """The ``--output``/``--format`` value, found before parsing so a usage error honours it."""
    value = None
    for i, tok in enumerate(argv):
        if tok == "--":
            break
        if tok in ("--output", "--format") and i + 1 < len(argv):
            value = argv[i + 1]
        for flag in ("--output=", "--format="):
            if tok.startswith(flag):
                value = tok[len(flag):]
    return value


def _raise(err: BaseException) -> Optional[Outcome]:
    raise err


_FRAMEWORK_REFS = {"aoi:meta": "meta", "aoi:summary": "summary", "aoi:error": "error",
                   "aoi:warning": "warning", "aoi:plan": "plan", "aoi:check": "check",
                   "aoi:progress": "progress", "aoi:heartbeat": "heartbeat"}


def _framework_defs() -> Dict[str, Any]:
    """The framework events as §8.3 and §9.1 define them."""
    ident = {k: {"type": "string"} for k in
             ("tool", "tool_version", "aoi_version", "schema_name", "schema_version")}
    diag: Dict[str, Any] = {
        "category": {"type": "string"},
        "code": {"type": "string", "pattern": _CODE_RE},
        "message": {"type": "string", "pattern": "^[^\\n\\r]*$"},
        "retryable": {"type": "boolean"},
        "retry_after_ms": {"type": "integer", "minimum": 0},
        "domain": {"type": "string"}, "origin": {"type": "string"},
        "scope": {"enum": ["process", "item"]}, "target": {"type": "string"},
        "item_index": {"type": "integer", "minimum": 0},
        "line_number": {"type": "integer", "minimum": 0},
        "field": {"type": "string"}, "hint": {"type": "string"}, "docs": {"type": "string"},
        "details": {"type": "object"}, "properties": {"type": "object"},
        "wrapped": {"type": "object", "required": ["protocol"],
                    "properties": {"protocol": {"enum": ["http", "grpc", "exit"]}}},
    }
    # Built anew on every call, so the caller owns it (``diag`` is shared inside, as before).
    return {
        "envelope": {"type": "object", "required": ["seq", "run"], "properties": {
            "seq": {"type": "integer", "minimum": 0}, "run": {"type": "string", "minLength": 1},
            "t": {"type": "number", "minimum": 0}, "trace_id": {"type": "string"}}},
        "meta": {"type": "object", "required": list(ident), "properties": {
            **ident, "command": {"type": "string"}, "args_redacted": {"type": "boolean"},
            "input_fingerprint": {"type": "string"}, "properties": {"type": "object"}}},
        "summary": {
            "type": "object",
            "required": ["ok", "event_count", "count", "warning_count", "error_count",
                         "partial", "truncated", *ident],
            "properties": {
                **ident,
                "ok": {"type": "boolean"},
                "reason": {"enum": ["failed", "cancelled", "timeout", "denied", "skipped"]},
                "event_count": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 0},
                "input_count": {"type": "integer", "minimum": 0},
                "warning_count": {"type": "integer", "minimum": 0},
                "error_count": {"type": "integer", "minimum": 0},
                "partial": {"type": "boolean"}, "truncated": {"type": "boolean"},
                "next_cursor": {"type": ["string", "null"]},
                "elapsed_ms": {"type": "integer", "minimum": 0},
                "caused_by": {"type": "object", "required": ["category", "code", "retryable"],
                              "properties": {k: diag[k] for k in (
                                  "origin", "category", "code", "retryable", "retry_after_ms")}},
                "upstream": {"type": "object", "properties": {k: {"type": "string"} for k in (
                    "tool", "tool_version", "schema_name", "schema_version")}},
                "properties": {"type": "object"},
            },
            "allOf": [
                {"if": {"properties": {"ok": {"const": False}}, "required": ["ok"]},
                 "then": {"required": ["reason"], "properties": {
                     "reason": {"enum": ["failed", "cancelled", "timeout", "denied"]}}}},
                {"if": {"properties": {"ok": {"const": True}}, "required": ["ok"]},
                 "then": {"properties": {"reason": {"const": "skipped"}}}},
            ],
        },
        "error": {
            "type": "object", "required": ["category", "code", "message", "retryable"],
            "properties": diag,
            "allOf": [
                {"if": {"not": {"required": ["origin"]}},
                 "then": {"properties": {"category": {"enum": list(errors.CATEGORIES)}}}},
                {"if": {"properties": {"retryable": {"const": False}}, "required": ["retryable"]},
                 "then": {"not": {"required": ["retry_after_ms"]}}},
            ],
        },
        "warning": {"type": "object", "properties": diag},
        "plan": {"type": "object", "required": ["action", "target"], "properties": {
            "action": {"type": "string"}, "target": {"type": "string"},
            "detail": {"type": "string"}}},
        "check": {"type": "object", "required": ["name", "ok"], "properties": {
            "name": {"type": "string"}, "ok": {"type": "boolean"},
            "severity": {"type": "string"}, "detail": {"type": "string"},
            "hint": {"type": "string"}}},
        "progress": {"type": "object", "properties": {
            "completed": {"type": "number", "minimum": 0}, "total": {"type": "number"},
            "unit": {"type": "string"}, "message": {"type": "string"}}},
        "heartbeat": {"type": "object", "properties": {
            "interval_ms": {"type": "integer", "minimum": 0}}},
    }
