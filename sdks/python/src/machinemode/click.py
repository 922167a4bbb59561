"""Machine Mode for click and typer applications (the ``click`` extra: ``pip install machinemode[click]``).

:class:`ClickTool` takes a click :class:`click.Group` (or a ``typer.Typer``, which is built on
click) and gives it the guarantees of the argparse surface of :mod:`machinemode.cli`, whose code
it uses: behind the click tree stands a :class:`machinemode.cli.Tool` with one command per click
command, so the discovery documents (``schema``, ``capabilities``, ``input-schema --command
NAME``) are the argparse surface's, derived here from the click parameters (types, choices,
``required``, defaults, help) and the declared ``@event`` classes. The §16.1 flags of each
command's groups (:data:`~machinemode.cli.PAGING`, ...) and the common flags (``--output`` /
``--format``, ``--schema-version``, ``--no-color``, ``--debug``) are click options made from that
Tool's argparse actions, so both surfaces take and refuse the same values::

    import click
    from machinemode.cli import PAGING
    from machinemode.click import ClickTool, context, declare

    # Greeting: an @event("greeting") dataclass, as for machinemode.cli

    @click.group()
    def app() -> None:
        "Greet people."

    @declare(read_only=True, groups=[PAGING], events=[Greeting], examples=[["hello", "Ada"]])
    @app.command()
    @click.argument("name")
    def hello(name: str) -> None:
        "Greet someone (bounded)."
        ctx = context()                    # a machinemode.cli.Context
        ctx.out.emit(Greeting(id="g1", text=f"hello {name}"))

    tool = ClickTool(app, name="greet", version="1.0.0", schema_name="io.example.greet.events",
                     schema_versions=["1.0.0"], schema_id="https://example.com/{version}.json")
    if __name__ == "__main__":
        tool.main()

What changes for a click application:

* every command is declared (:func:`declare`): its claims of §17, its flag groups, its events
  and its examples, the keyword arguments of :meth:`machinemode.cli.Tool.command`; an
  undeclared command is an error at start-up, as is a parameter discovery cannot describe (a
  ``count`` option, ``nargs`` above 1, a flag that cannot be turned off, a boolean taking a
  value) or one whose name or flag is a machinemode flag's;
* a command reads the group flags from :func:`context` (``ctx.limit``, ``ctx.args.cursor``,
  ``ctx.require_confirm(...)``), never as function parameters, and writes through ``ctx.out``;
  it may return an :class:`~machinemode.harness.Outcome` (anything else is success);
* a usage error exits 64 (click's is 2), in machine mode as a complete stream, with the codes
  and messages of the argparse surface, never a value the caller gave;
* ``-h`` is ``--help`` (§16.1) unless a command uses ``-h`` itself; the root group has
  ``--version``; a group without a command is ``MISSING_COMMAND``;
* in machine mode nothing prompts (a prompted option without a default is required), and what a
  command prints with ``click.echo`` or ``print`` goes to stderr: stdout is the stream's;
* group-level parameters are refused unless they only act (``expose_value=False``: help,
  version, typer's completion options): a consumer passes every argument after the command.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import functools
import inspect
import sys
from typing import Any, Callable, Dict, Iterator, List, Mapping, NoReturn, Optional, Sequence, Tuple, TypeVar

import click

from . import errors, harness
from .cli import (
    _DISCOVERY,
    CONFIRM,
    DRY_RUN,
    IDEMPOTENCY,
    INPUT_JSON,
    INPUT_JSONL,
    PAGING,
    TIMEOUT,
    Command,
    Context,
    Tool,
    _describe,
    _prescan_output,
    _raise,
    path,
)
from .errors import AoiError
from .harness import Outcome

__all__ = [
    "CONFIRM", "DRY_RUN", "IDEMPOTENCY", "INPUT_JSON", "INPUT_JSONL", "PAGING", "TIMEOUT",
    "ClickTool", "context", "declare",
]

F = TypeVar("F")

_DECLARATION = "__machinemode__"
_CONTEXT = "machinemode.context"
_COMMON = ("output", "schema_version", "no_color", "debug")
_NO_SUCH_COMMAND: Any = getattr(click.exceptions, "NoSuchCommand", ())  # click >= 8.2
_MISSING_COMMAND = ("MISSING_COMMAND", "No command given; see --help.")
#: argparse's names of the number types, in its "invalid int value" messages.
_NUMBERS: Mapping[type, str] = {click.types.IntParamType: "int", click.types.FloatParamType: "float"}


@dataclasses.dataclass(frozen=True)
class _Declaration:
    read_only: bool
    summary: Optional[str]
    schema: Mapping[str, Mapping[str, Any]]
    secret: Mapping[str, bool]
    claims: Mapping[str, Any]


def declare(*, read_only: bool, summary: Optional[str] = None,
            schema: Optional[Mapping[str, Mapping[str, Any]]] = None,
            secret: Optional[Mapping[str, bool]] = None, **claims: Any) -> Callable[[F], F]:
    """Declare what a click command is to Machine Mode; put it above or below ``@group.command()``.

    :param read_only: the command changes nothing (§14.1).
    :param summary: one line for ``capabilities``; default: the command's short help.
    :param schema: per click parameter name, what its input-schema property adds
        (``{"id": {"pattern": "^t[0-9]+$"}}``), as ``schema=`` of
        :meth:`machinemode.cli.Command.argument`.
    :param secret: per parameter name, whether its value is a secret (§11); an option with
        ``hide_input=True`` is one.
    :param claims: the other keyword arguments of :meth:`machinemode.cli.Tool.command`:
        ``groups``, ``events``, ``destructive``, ``additive``, ``unbounded``, ``examples``,
        ``setup``, ``stdin``, ``record``, ``input_default``, ``limit_default``, ``limit_max``.
    """
    found = _Declaration(read_only, summary, dict(schema or {}), dict(secret or {}), dict(claims))

    def mark(target: F) -> F:
        setattr(target, _DECLARATION, found)
        return target

    return mark


def context() -> Context:
    """The :class:`machinemode.cli.Context` of the command running now (its stream ``out``,
    ``args`` with every parameter and group flag, ``limit``, ``require_confirm``, ...)."""
    found = click.get_current_context().meta.get(_CONTEXT)
    if not isinstance(found, Context):
        raise RuntimeError("machinemode.click.context() is only available inside a command "
                           "run by ClickTool.main()")
    return found


class _ArgparseValue(click.ParamType):
    """An argparse ``type`` function of :mod:`machinemode.cli` as a click type, so a §16.1 flag
    takes and refuses the same values on both surfaces."""

    def __init__(self, convert: Callable[[str], Any]) -> None:
        self.name = getattr(convert, "__name__", "value").strip("_")
        self._convert = convert

    def convert(self, value: Any, param: Optional[click.Parameter],
                ctx: Optional[click.Context]) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self._convert(value)
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            self.fail("invalid value", param, ctx)


def _click_option(action: argparse.Action) -> click.Option:
    """The click option of one argparse action of :class:`machinemode.cli.Tool`."""
    help_text = None if action.help is argparse.SUPPRESS else action.help
    if isinstance(action, argparse._VersionAction):
        text = str(action.version)

        def show(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
            if value and not ctx.resilient_parsing:
                click.echo(text)
                ctx.exit()

        return click.Option(action.option_strings, is_flag=True, expose_value=False,
                            is_eager=True, callback=show, help=help_text)
    decls = [*action.option_strings, action.dest]
    if isinstance(action, argparse._StoreTrueAction):
        return click.Option(decls, is_flag=True, default=False, help=help_text)
    if type(action) is not argparse._StoreAction:
        raise TypeError(f"no click option for {type(action).__name__} {action.dest}")
    kind: click.ParamType = click.STRING
    if action.choices is not None:
        kind = click.Choice([str(c) for c in action.choices])
    elif callable(action.type):
        kind = _ArgparseValue(action.type)
    return click.Option(decls, type=kind, metavar=action.metavar, required=action.required,
                        default=None, help=help_text)


def _label(param: Optional[click.Parameter], hint: Any = None) -> str:
    """A parameter as argparse names it in messages: the long flag, or the operand's name
    (else the ``param_hint`` a command gave click; :func:`_describe` checks it is a name)."""
    if param is None:
        return hint if isinstance(hint, str) else "an argument"
    if isinstance(param, click.Option):
        long = [o for o in param.opts if o.startswith("--")]
        return (long or param.opts)[0]
    return param.name or "an argument"


def _usage_of(err: click.UsageError, argv: Sequence[str] = ()) -> Tuple[str, str]:
    """A click usage error as the argparse surface reports it: (code, message).

    The error is phrased as argparse would phrase it and read by the argparse surface's own
    reader (:func:`machinemode.cli._describe`), so both surfaces give the same code and message
    for the same mistake, and no value the caller gave is repeated (click's messages do).
    """
    if isinstance(err, click.NoSuchOption):
        return _describe(f"unrecognized arguments: {err.option_name}")
    if isinstance(err, click.BadOptionUsage):  # click gives it no context: argv tells which
        if any(a.startswith(f"{err.option_name}=") for a in argv):
            return _describe(f"argument {err.option_name}: ignored explicit argument ''")
        return _describe(f"argument {err.option_name}: expected one argument")
    if isinstance(err, click.MissingParameter):
        return _describe(f"the following arguments are required: {_label(err.param)}")
    if isinstance(err, click.BadParameter):
        label = _label(err.param, err.param_hint)
        kind = err.param.type if err.param is not None else None
        if isinstance(kind, click.Choice):
            return _describe(_refused_choice(label, [_choice(c) for c in kind.choices]))
        number = _NUMBERS.get(type(kind))
        if number is not None:
            return _describe(f"argument {label}: invalid {number} value")
        return _describe(f"argument {label}: refused")
    if isinstance(err, _NO_SUCH_COMMAND) or err.message.startswith("No such command"):
        group = err.ctx.command if err.ctx is not None else None
        names = group.list_commands(err.ctx) if isinstance(group, click.Group) and err.ctx else []
        return _describe(_refused_choice("COMMAND", names))
    if err.message.startswith("Missing command"):
        return _MISSING_COMMAND
    if err.message.startswith("Got unexpected extra argument"):
        return _describe("unrecognized arguments: ")
    return _describe("")


def _refused_choice(label: str, choices: Sequence[Any]) -> str:
    """argparse's own message for a value outside ``choices`` (its wording changes between
    Python versions): the one the argparse surface would read."""
    flag = label.startswith("-")
    probe = argparse.Action([label] if flag else [], "value" if flag else label, choices=choices)
    try:
        argparse.ArgumentParser(add_help=False)._check_value(probe, "\0")
    except argparse.ArgumentError as e:
        return str(e)
    return f"argument {label}: refused"


def _choice(value: Any) -> Any:
    """A click choice as the command line spells it (click >= 8.2 takes enum members by name)."""
    return value.name if isinstance(value, enum.Enum) else value


def _default(param: click.Parameter) -> Any:
    """A parameter's default as JSON Schema can state it, else None (callable, unset, a list)."""
    value = param.to_info_dict().get("default")
    if isinstance(value, enum.Enum):
        value = value.value
    return value if isinstance(value, (str, int, float, bool)) else None


def _value_type(where: str, kind: click.ParamType) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """What argparse (``type``, ``choices``) and the input schema say of a click type."""
    if isinstance(kind, click.Choice):
        return {"choices": [str(_choice(c)) for c in kind.choices]}, {}
    if isinstance(kind, (click.types.BoolParamType, click.Tuple)):
        raise ValueError(f"{where}: a {kind.name} value cannot be described; use a flag "
                         "or separate options")
    bounds: Dict[str, Any] = {}
    if isinstance(kind, (click.IntRange, click.FloatRange)) and not kind.clamp:
        if kind.min is not None:
            bounds["exclusiveMinimum" if kind.min_open else "minimum"] = kind.min
        if kind.max is not None:
            bounds["exclusiveMaximum" if kind.max_open else "maximum"] = kind.max
    if isinstance(kind, click.types.IntParamType):
        return {"type": int}, bounds
    if isinstance(kind, click.types.FloatParamType):
        return {"type": float}, bounds
    if isinstance(kind, (click.Path, click.File)):
        return {"type": path}, {}
    if isinstance(kind, click.types.UUIDParameterType):
        return {}, {"format": "uuid"}
    return {}, {}


def _mirror(where: str, param: click.Parameter) -> Tuple[List[str], Dict[str, Any], Dict[str, Any]]:
    """One click parameter as an argument of the argparse command that stands for it:
    (flags, ``add_argument`` keywords, what the input schema adds)."""
    kwargs: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    default = _default(param)
    text = getattr(param, "help", None)  # a click Argument has none; typer's has
    if text:
        kwargs["help"] = inspect.cleandoc(text)
    if isinstance(param, click.Argument):
        if param.nargs == -1:
            kwargs["nargs"] = "+" if param.required else "*"
            extra = {"minItems": 1} if param.required else {}
        elif param.nargs != 1:
            raise ValueError(f"{where}: an operand of {param.nargs} values cannot be described")
        elif not param.required:
            kwargs["nargs"] = "?"
        more, bounds = _value_type(where, param.type)
        kwargs.update(more)
        if default is not None and param.nargs == 1:
            kwargs["default"] = default
        return [str(param.name)], kwargs, {**bounds, **extra}
    if not isinstance(param, click.Option):
        raise ValueError(f"{where}: a {type(param).__name__} cannot be described")
    if param.count or param.nargs != 1:
        raise ValueError(f"{where}: a counted option or one of several values cannot be described")
    kwargs["dest"] = param.name
    flags = list(param.opts)
    if param.is_flag:
        if not param.is_bool_flag:
            raise ValueError(f"{where}: a flag with a value of its own cannot be described")
        if default is True:
            if not param.secondary_opts:
                raise ValueError(f"{where}: a flag that is on by default and cannot be turned off")
            # The switch an agent uses is the one that changes something: --no-x.
            flags = list(param.secondary_opts)
            long = [f for f in flags if f.startswith("--")]
            kwargs["dest"] = (long or flags)[0].lstrip("-").replace("-", "_")
            kwargs["help"] = f"Turns off {_label(param)}" + (f": {kwargs['help']}" if text else "")
        kwargs["action"] = "store_true"
        return flags, kwargs, {}
    more, bounds = _value_type(where, param.type)
    kwargs.update(more)
    prompted = bool(param.prompt) and default is None
    if param.multiple:
        kwargs["action"] = "append"
        if param.required:
            extra["minItems"] = 1
    elif default is not None:
        kwargs["default"] = default
    if (param.required and default is None) or prompted:
        kwargs["required"] = True
    return flags, kwargs, {**bounds, **extra}


def _commands(group: click.Group, prefix: Tuple[str, ...] = ()
              ) -> Iterator[Tuple[Tuple[str, ...], click.Command]]:
    """Every group (before its commands) and every command below ``group``, with its path."""
    ctx = click.Context(group, info_name=" ".join(prefix) or None)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if group.get_command(ctx, name) is not cmd:  # what main() runs is what was adapted
            raise ValueError(f"group {group.name!r} makes a new command {name!r} on every lookup")
        if isinstance(cmd, click.Group):
            yield (*prefix, name), cmd
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def _without(fn: Callable[..., Any], names: Sequence[str]) -> Callable[..., Any]:
    """A group callback that does not see the machinemode options added to its group."""

    @functools.wraps(fn)
    def call(**values: Any) -> Any:
        return fn(**{k: v for k, v in values.items() if k not in names})

    return call


class ClickTool:
    """A click (or typer) application speaking Machine Mode (see the module).

    :param app: a :class:`click.Group` or a ``typer.Typer`` with more than one command or a
        callback (typer makes a single-command app a plain command, which has no room for the
        discovery commands).
    :param name: ``aoi:meta.tool`` and the program name (default: the group's name).
    :param description: for ``--help`` (default: the group's help).

    The other parameters are :class:`machinemode.cli.Tool`'s. :attr:`tool` is that Tool, holding
    the commands' argparse doubles and producing the discovery documents.
    """

    def __init__(self, app: Any, *, version: str, schema_name: str,
                 schema_versions: Sequence[str], schema_id: str, name: Optional[str] = None,
                 description: Optional[str] = None, auth: Optional[str] = None) -> None:
        if not isinstance(app, click.Command):
            from typer.main import get_command

            app = get_command(app)
        if not isinstance(app, click.Group):
            raise TypeError("ClickTool needs a click.Group (a typer app with a callback or "
                            "more than one command)")
        tool_name = name or app.name
        if not tool_name:
            raise ValueError("ClickTool needs a name (the group has none)")
        self.name: str = tool_name
        self.group: click.Group = app
        self.tool = Tool(tool_name, version, description=description or inspect.cleandoc(
            app.help or tool_name), schema_name=schema_name, schema_versions=schema_versions,
            schema_id=schema_id, auth=auth)
        self._prompted: List[click.Option] = []
        self._adopt(app, root=True)
        for path_, cmd in list(_commands(app)):
            if isinstance(cmd, click.Group):
                self._adopt(cmd, root=False)
            else:
                self._adopt_command(" ".join(path_), cmd)
        self._add_discovery()

    # -- start-up: the click tree and its argparse doubles ---------------------------------

    def _adopt(self, group: click.Group, *, root: bool) -> None:
        """Give a group the common flags (and the root ``--version`` and ``-h``)."""
        where = f"group {group.name or self.name!r}"
        if group.chain:
            raise ValueError(f"{where}: a chained group runs several commands in one process")
        for param in group.params:
            if param.expose_value:
                raise ValueError(f"{where}: parameter {param.name!r} of a group cannot be "
                                 "given through discovery; declare it on its commands")
        taken = {o for p in group.params for o in (*p.opts, *p.secondary_opts)}
        actions = [a for a in self.tool.parser._actions
                   if a.option_strings and not isinstance(a, argparse._HelpAction)
                   and (root or not isinstance(a, argparse._VersionAction))
                   and not (isinstance(a, argparse._VersionAction) and "--version" in taken)]
        group.params.extend(_click_option(a) for a in actions)
        if group.callback is not None:
            group.callback = _without(group.callback, _COMMON)
        group.no_args_is_help = False
        if root:
            group.context_settings.setdefault("help_option_names", ["-h", "--help"])

    def _adopt_command(self, name: str, cmd: click.Command) -> None:
        """Declare ``cmd`` on :attr:`tool`, mirror its parameters there, give it the flags of
        its groups and wrap its callback."""
        where = f"command {name!r}"
        found = getattr(cmd, _DECLARATION, None) or getattr(cmd.callback, _DECLARATION, None)
        if not isinstance(found, _Declaration):
            raise ValueError(f"{where} is not declared: add @machinemode.click.declare(...)")
        if cmd.callback is None:
            raise ValueError(f"{where} has no callback")
        summary = found.summary or cmd.get_short_help_str(limit=300)
        if not summary:
            raise ValueError(f"{where} has no summary: give it help text or declare summary=")
        double = self.tool.command(name, summary=summary, read_only=found.read_only,
                                   description=inspect.cleandoc(cmd.help) if cmd.help else None,
                                   **found.claims)
        ours = [a for a in double.parser._actions if not isinstance(a, argparse._HelpAction)]
        mine = {a.dest for a in ours}
        named = {str(p.name) for p in cmd.params}
        for key in (*found.schema, *found.secret):
            if key not in named:
                raise ValueError(f"{where}: declare() names {key!r}, which is not a parameter")
        for param in cmd.params:
            at = f"{where}, parameter {param.name!r}"
            flags, kwargs, extra = _mirror(at, param)
            dest = kwargs.get("dest", flags[0])
            if dest in mine or param.name in mine:
                raise ValueError(f"{at}: the name is machinemode's (a common or group flag)")
            mine.add(dest)
            try:
                double.argument(*flags, schema={**extra, **found.schema.get(str(param.name), {})},
                                secret=found.secret.get(str(param.name),
                                                        True if getattr(param, "hide_input", False) else None),
                                **kwargs)
            except argparse.ArgumentError as e:
                raise ValueError(f"{at}: {e.message}") from None
            if isinstance(param, click.Option) and param.prompt:
                self._prompted.append(param)
            if "-h" in getattr(param, "opts", ()):
                cmd.context_settings["help_option_names"] = ["--help"]
        cmd.params.extend(_click_option(a) for a in ours)
        cmd.callback = self._leaf(double, cmd.callback, [a.dest for a in ours])

    def _add_discovery(self) -> None:
        """``schema``, ``capabilities`` and ``input-schema`` as click commands of the root group,
        with the argparse surface's flags and help."""
        helps = {a.dest: a.help for a in self.tool._sub._choices_actions}
        for name in _DISCOVERY:
            if name in self.group.commands:
                raise ValueError(f"command {name!r} is machinemode's discovery command")
            parser = self.tool._sub.choices[name]
            params: List[click.Parameter] = [_click_option(a) for a in parser._actions
                                             if not isinstance(a, argparse._HelpAction)]
            self.group.add_command(click.Command(name, params=params, help=helps.get(name),
                                                 callback=self._discovery(name)))

    # -- running ---------------------------------------------------------------------------

    def main(self, argv: Optional[Sequence[str]] = None) -> NoReturn:
        """Parse ``argv`` (default ``sys.argv[1:]``) with click, run the command under the
        harness, exit (see the module)."""
        args = list(sys.argv[1:] if argv is None else argv)
        machine = _prescan_output(args) in ("jsonl", "json")
        if machine:  # nothing prompts: a prompted option without a default is required
            for option in self._prompted:
                option.prompt = None
                option.required = option.required or _default(option) is None
        try:
            with self.group.make_context(self.name, args) as ctx:
                self.group.invoke(ctx)
        except click.UsageError as e:
            code, message = _usage_of(e, args)
            self.tool._usage_failure(code, message, machine, self._command_of(e.ctx, args))
        except click.exceptions.Exit as e:  # --help, --version
            harness.run(functools.partial(_raise, SystemExit(e.exit_code)), emitter=None,
                        name=self.name)
        except BrokenPipeError as e:  # --help into a closed pipe
            harness.run(functools.partial(_raise, e), emitter=None, name=self.name)
        except Exception as e:  # a parameter or group callback failed, or a file did not open
            self._fail(_failure_of(e), machine)
        if machine:  # a group invoked without a command ran only its own callback
            self.tool._usage_failure(*_MISSING_COMMAND, True, None)
        harness.run(lambda: None, emitter=None, name=self.name)

    def _fail(self, err: BaseException, machine: bool, command: Optional[str] = None) -> NoReturn:
        out = self.tool._emitter(command, True, None, False) if machine else None
        harness.run(functools.partial(_raise, err), emitter=out, name=self.name)

    def _command_of(self, ctx: Optional[click.Context], argv: Sequence[str]) -> Optional[str]:
        """The declared command of a failed parse (for ``aoi:meta.command``): the one its click
        context is of, else (click left it out) the first that argv names, as cli.py finds it."""
        names: List[str] = []
        while ctx is not None and ctx.parent is not None:
            names.append(ctx.info_name or "")
            ctx = ctx.parent
        if names:
            found = " ".join(reversed(names))
            return found if found in self.tool.commands else None
        for start in range(len(argv)):
            for end in range(len(argv), start, -1):
                if " ".join(argv[start:end]) in self.tool.commands:
                    return " ".join(argv[start:end])
        return None

    @staticmethod
    def _common(ctx: click.Context, given: Mapping[str, Any]) -> Dict[str, Any]:
        """The common flags: the command's own, else the nearest group's."""
        found = {k: given.get(k) for k in _COMMON}
        parent = ctx.parent
        while parent is not None:
            for k in _COMMON:
                if not found[k]:
                    found[k] = parent.params.get(k)
            parent = parent.parent
        return found

    def _version(self, asked: Optional[str], machine: bool, command: Optional[str]) -> str:
        """The negotiated schema version, or the ``unsupported`` stream and exit."""
        try:
            return self.tool._negotiate(asked)
        except AoiError as err:
            self._fail(err, machine, command)

    def _leaf(self, double: Command, callback: Callable[..., Any],
              ours: Sequence[str]) -> Callable[..., Any]:
        def run(**values: Any) -> NoReturn:
            ctx = click.get_current_context()
            given = {k: values.pop(k) for k in ours}
            given.update(self._common(ctx, given))
            args = argparse.Namespace(**values, **given)
            machine = given["output"] in ("jsonl", "json")
            self._refuse_conflicts(double, args, machine)
            version = self._version(given["schema_version"], machine, double.name)
            out = self.tool._emitter(double.name, machine, version, double.unbounded)
            ctx.meta[_CONTEXT] = Context(double, args, out, machine, version)
            harness.run(functools.partial(_body, callback, values, machine, self.name),
                        emitter=out, name=self.name, debug=bool(given["debug"]),
                        timeout=given.get("timeout"))

        return run

    def _refuse_conflicts(self, double: Command, args: argparse.Namespace, machine: bool) -> None:
        """The argparse surface's mutually exclusive flags (``--fail-fast``,
        ``--continue-on-error``), refused as argparse refuses them."""
        for group in double.parser._mutually_exclusive_groups:
            given = [a for a in group._group_actions if getattr(args, a.dest, None)]
            if len(given) > 1:
                code, message = _describe(f"argument {given[1].option_strings[0]}: not allowed "
                                          f"with argument {given[0].option_strings[0]}")
                self.tool._usage_failure(code, message, machine, double.name)

    def _discovery(self, name: str) -> Callable[..., Any]:
        def run(**values: Any) -> NoReturn:
            common = self._common(click.get_current_context(), values)
            machine = common["output"] in ("jsonl", "json")
            version = self._version(common["schema_version"], machine, None)
            args = argparse.Namespace(**values)
            harness.run(lambda: self.tool._discover(name, args, version, common["output"]),
                        emitter=None, name=self.name, debug=bool(common["debug"]))

        return run


def _failure_of(exc: Exception) -> BaseException:
    """What a click exception outside a usage error is to the harness."""
    if isinstance(exc, click.FileError):
        return errors.io("FILE_UNAVAILABLE", "A file given on the command line cannot be opened.")
    if isinstance(exc, click.Abort):
        return errors.cancelled("ABORTED", "The command was aborted.")
    if isinstance(exc, click.exceptions.Exit):
        return SystemExit(exc.exit_code)
    return exc


def _body(callback: Callable[..., Any], values: Mapping[str, Any], machine: bool,
          name: str) -> Optional[Outcome]:
    """Run a command's own callback; in machine mode what it prints goes to stderr."""
    quiet = contextlib.redirect_stdout(sys.stderr) if machine and sys.stderr is not None \
        else contextlib.nullcontext()
    try:
        with quiet:
            result = callback(**values)
    except click.UsageError as e:
        code, message = _usage_of(e)
        raise errors.usage(code, message, hint=f"{name} --help") from None
    except (click.FileError, click.Abort, click.exceptions.Exit) as e:
        raise _failure_of(e) from None
    return result if isinstance(result, Outcome) else None
