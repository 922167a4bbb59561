"""machinemode.click: click and typer applications with the argparse surface's guarantees.

The tools are real processes (tests/data/click_tool.py, tests/data/typer_tool.py and
examples/click_todo.py); their streams go through `aoi verify`, the example through `aoi lint`.
`argparse_twin()` is the click tool's find, remove and admin reset written for machinemode.cli:
the click tool's discovery documents and usage errors must be the twin's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Sequence, Union

import pytest
from conftest import ROOT, aoi_bin, lines, verdict

click = pytest.importorskip("click")
pytest.importorskip("typer")

from machinemode.cli import CONFIRM, DRY_RUN, IDEMPOTENCY, PAGING, Tool, path  # noqa: E402
from machinemode.click import ClickTool, declare  # noqa: E402

DATA = Path(__file__).parent / "data"
CLICK_TOOL = DATA / "click_tool.py"
TYPER_TOOL = DATA / "typer_tool.py"
TODO = ROOT / "examples" / "click_todo.py"
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(Path(__file__).parent)]))
TWIN = [sys.executable, "-c", "import test_click; test_click.argparse_twin().main()"]
IDENTITY: Dict[str, Any] = {"version": "1.0.0", "schema_name": "io.example.t.events",
                            "schema_versions": ["1.0.0"], "schema_id": "https://example.com/{version}.json"}


def load(file: Path) -> ModuleType:
    """A test tool imported in this process (its ClickTool built once)."""
    name = file.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def run(tool: Union[Sequence[str], Path], *args: str, stdin: bytes = b"",
        env: Dict[str, str] = ENV) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, str(tool)] if isinstance(tool, Path) else list(tool)
    return subprocess.run([*argv, *args], env=env, input=stdin, capture_output=True, timeout=60,
                          check=False)


def error_of(proc: subprocess.CompletedProcess[bytes]) -> Dict[str, Any]:
    return next(e for e in lines(proc.stdout) if e["type"] == "aoi:error")


def argparse_twin() -> Tool:
    """The click tool's find, remove and admin reset on the argparse surface."""
    items = load(CLICK_TOOL)
    t = Tool("items", "1.2.3", description="Items, for the tests.", schema_name="io.example.items.events",
             schema_versions=["1.0.0", "1.1.0"], schema_id="https://schemas.example.com/items/{version}.json")
    reset = t.command("admin reset", summary="Reset the store.", read_only=False, groups=[DRY_RUN],
                      events=[items.Removed], examples=[["admin", "reset", "--dry-run"]])
    reset.argument("--hard", action="store_true", help="Reset everything")
    find = t.command("find", summary="Find items (bounded).", read_only=True, groups=[PAGING],
                     events=[items.Item], examples=[["find", "a", "--owner", "me"]])
    find.argument("query", schema={"minLength": 1})
    find.argument("--kind", choices=["file", "dir"], default="file", help="What to find")
    find.argument("--depth", type=int, default=2, help="How deep", schema={"minimum": 1, "maximum": 5})
    find.argument("--ratio", type=float, help="A ratio")
    find.argument("--tag", dest="tags", action="append", help="A tag (repeat for several)")
    find.argument("--owner", required=True, help="Whose items")
    find.argument("--no-icons", action="store_true", help="Turns off --icons: Show icons")
    find.argument("--exact", action="store_true", help="Match exactly")
    find.argument("--token", secret=True, help="An API token")
    find.argument("--root", type=path, help="Where to look")
    remove = t.command("remove", summary="Remove items (destructive).", read_only=False, destructive=True,
                       groups=[DRY_RUN, CONFIRM, IDEMPOTENCY], events=[items.Removed],
                       examples=[["remove", "i1", "--confirm"]])
    remove.argument("ids", nargs="+", schema={"minItems": 1})
    return t


# -- the core stays dependency-free ---------------------------------------------------------


def test_importing_machinemode_imports_no_click() -> None:
    proc = run([sys.executable, "-c", "import sys, machinemode, machinemode.cli, machinemode.harness; "
                "print(sorted(m for m in ('click', 'typer') if m in sys.modules))"])
    assert proc.stdout.strip() == b"[]", proc.stderr


# -- discovery is the argparse surface's --------------------------------------------------


@pytest.mark.parametrize("command", ["find", "remove", "admin reset"])
def test_the_input_schema_is_the_argparse_twins(command: str) -> None:
    mine = json.loads(run(CLICK_TOOL, "input-schema", "--command", command, "--output", "json").stdout)
    twin = json.loads(run(TWIN, "input-schema", "--command", command, "--output", "json").stdout)
    assert mine == twin
    assert list(mine["properties"]) == list(twin["properties"])  # the flags' order too


def test_the_event_schema_and_the_manifest_entries_are_the_argparse_twins() -> None:
    for version in ("1.0.0", "1.1.0"):
        mine = run(CLICK_TOOL, "schema", "--schema-version", version, "--output", "json")
        twin = run(TWIN, "schema", "--schema-version", version, "--output", "json")
        assert json.loads(mine.stdout) == json.loads(twin.stdout), version
    mine_caps = json.loads(run(CLICK_TOOL, "capabilities", "--output", "json").stdout)
    twin_caps = json.loads(run(TWIN, "capabilities", "--output", "json").stdout)
    by_name = {c["name"]: c for c in mine_caps.pop("commands")}
    twin_commands = twin_caps.pop("commands")
    assert mine_caps == twin_caps
    for entry in twin_commands:
        assert by_name[entry["name"]] == entry


def test_the_input_schema_reads_the_click_parameters() -> None:
    doc = load(CLICK_TOOL).tool.tool.commands["find"].input_schema()
    props = doc["properties"]
    assert props["kind"] == {"type": "string", "enum": ["file", "dir"], "default": "file",
                             "description": "What to find"}
    assert (props["depth"]["type"], props["depth"]["minimum"], props["depth"]["maximum"],
            props["depth"]["default"]) == ("integer", 1, 5, 2)
    assert props["ratio"]["type"] == "number"
    assert props["tags"]["type"] == "array" and doc["x-aoi"]["flags"]["tags"] == "--tag"
    assert props["root"]["x-aoi-format"] == "path"
    assert props["token"]["writeOnly"] is True and doc["x-aoi"]["secret"] == ["token"]
    assert props["no_icons"]["type"] == "boolean" and "icons" not in props  # the switch that changes something
    assert doc["required"] == ["query", "owner"] and doc["x-aoi"]["positional"] == ["query"]
    assert props["query"]["minLength"] == 1  # declare(schema=...)
    # machinemode's own flags, of the PAGING group, with the argparse surface's bounds
    assert props["limit"] == {"type": "integer", "minimum": 0, "default": 20, "maximum": 1000,
                              "description": "At most N items (default 20)"}
    ask = load(CLICK_TOOL).tool.tool.commands["ask"].input_schema()
    assert ask["required"] == ["name"]  # prompted without a default: required in machine mode


def test_a_typer_apps_parameters_are_described() -> None:
    doc = load(TYPER_TOOL).tool.tool.commands["hello"].input_schema()
    props = doc["properties"]
    assert props["name"] == {"type": "string", "description": "Who to greet"}
    assert props["tone"]["enum"] == ["warm", "dry"] and props["tone"]["default"] == "warm"
    assert (props["times"]["minimum"], props["times"]["maximum"], props["times"]["default"]) == (1, 3, 1)
    assert props["shout"] == {"type": "boolean", "default": False, "description": "In capitals"}
    assert props["notes"]["items"] == {"type": "string", "x-aoi-format": "path"}
    assert doc["required"] == ["name"]
    caps = load(TYPER_TOOL).tool.tool.capabilities()
    assert [c["name"] for c in caps["commands"]] == ["hello", "forget", "boom"]


def test_the_declared_groups_become_claims_and_flags() -> None:
    items = load(CLICK_TOOL)
    caps = {c["name"]: c for c in items.tool.tool.capabilities()["commands"]}
    assert (caps["find"]["bounded"], caps["find"]["supports_cursor"], caps["find"]["read_only"]) == (True, True, True)
    remove = caps["remove"]
    assert remove["destructive"] and remove["requires_confirm"] and remove["supports_dry_run"]
    assert remove["supports_idempotency_key"] and "aoi:plan" in remove["event_types"]
    assert caps["watch"]["unbounded"] and "aoi:heartbeat" in caps["watch"]["event_types"]
    assert caps["load"]["input_modes"] == ["args", "jsonl"] and caps["load"]["input_default"] == "fail_fast"
    assert caps["admin reset"]["supports_dry_run"] is True
    assert not caps["crash"]["bounded"] and not caps["crash"]["requires_confirm"]

    def flags(*names: str) -> List[str]:
        ctx = click.Context(items.cli)
        cmd = items.cli
        for n in names:
            cmd = cmd.get_command(ctx, n)
        return [o for p in cmd.params for o in p.opts]

    assert {"--limit", "--cursor", "--max-bytes", "--output", "--format"} <= set(flags("find"))
    assert {"--dry-run", "--confirm", "--confirm-count", "--idempotency-key"} <= set(flags("remove"))
    assert not {"--limit", "--confirm", "--dry-run"} & set(flags("crash"))
    assert "--dry-run" in flags("admin", "reset")


def test_the_documents_derive_from_the_click_tree_as_it_is() -> None:
    @click.group()
    def app() -> None:
        """A tool."""

    @declare(read_only=True, examples=[["show", "x"]], summary="Show one thing")
    @app.command()
    @click.argument("what")
    @click.option("--level", type=click.IntRange(0, 9, max_open=True), help="Detail")
    @click.option("--id", "ident", type=click.UUID)
    @click.argument("more", nargs=-1)
    def show(what: str, level: int, ident: Any, more: Any) -> None:
        """Ignored: the declared summary wins."""

    doc = ClickTool(app, name="t", **IDENTITY).tool.commands["show"].input_schema()
    props = doc["properties"]
    assert doc["description"] == "Show one thing"
    assert props["level"] == {"type": "integer", "minimum": 0, "exclusiveMaximum": 9, "description": "Detail"}
    assert props["ident"] == {"type": "string", "format": "uuid"} and doc["x-aoi"]["flags"]["ident"] == "--id"
    assert props["more"] == {"type": "array", "items": {"type": "string"}}
    assert doc["required"] == ["what"] and doc["x-aoi"]["positional"] == ["what", "more"]


def refused(build: Any) -> str:
    with pytest.raises((ValueError, TypeError)) as e:
        build()
    return str(e.value)


def test_start_up_refuses_what_discovery_cannot_describe_or_machinemode_owns() -> None:
    def tool_with(*params: Any, groups: Sequence[str] = (), name: str = "go", **group_kw: Any) -> Any:
        def build() -> ClickTool:
            app = click.Group("t", **group_kw)
            cmd = click.Command(name, params=list(params), callback=lambda **kw: None, help="Go.")
            app.add_command(declare(read_only=True, groups=list(groups))(cmd))
            return ClickTool(app, **IDENTITY)
        return build

    assert "count" in refused(tool_with(click.Option(["-v"], count=True)))
    assert "several values" in refused(tool_with(click.Option(["--pair"], nargs=2)))
    assert "cannot be turned off" in refused(tool_with(click.Option(["--on"], is_flag=True, default=True)))
    assert "boolean" in refused(tool_with(click.Option(["--yes"], type=bool)))
    assert "of 2 values" in refused(tool_with(click.Argument(["pair"], nargs=2)))
    assert "machinemode's" in refused(tool_with(click.Option(["--max", "limit"]), groups=[PAGING]))
    assert "machinemode's" in refused(tool_with(click.Option(["--debug"], is_flag=True)))
    assert "--dry-run" in refused(tool_with(click.Option(["--dry-run", "rehearse"], is_flag=True), groups=[DRY_RUN]))
    assert "--format" in refused(tool_with(click.Option(["--format", "style"])))
    assert "'schema'" in refused(tool_with(name="schema"))  # a discovery command's name
    assert "chained" in refused(tool_with(chain=True))
    assert "a group" in refused(tool_with(params=[click.Option(["--db"])]))

    def undeclared() -> ClickTool:
        app = click.Group("t", commands=[click.Command("go", callback=lambda: None, help="Go.")])
        return ClickTool(app, **IDENTITY)

    assert "not declared" in refused(undeclared)

    def declared(help_text: Any = None, **claims: Any) -> Any:
        def build() -> ClickTool:
            app = click.Group("t")
            app.add_command(declare(read_only=True, **claims)(click.Command("go", callback=lambda: None,
                                                                            help=help_text)))
            return ClickTool(app, **IDENTITY)
        return build

    assert "'nope'" in refused(declared("Go.", schema={"nope": {}}))
    assert "no summary" in refused(declared())
    assert "unknown flag group" in refused(declared("Go.", groups=["paging", "bogus"]))
    assert "click.Group" in refused(lambda: ClickTool(click.Command("t", callback=lambda: None), **IDENTITY))


# -- usage errors: the argparse surface's codes, a complete stream, exit 64 ----------------

MISTAKES = [
    ["find", "a", "--owner", "me", "--bogus"],
    ["find", "a", "--owner", "me", "--api-token=s3cr3t-value"],
    ["find", "--owner", "me"],
    ["find", "a"],
    ["find", "a", "--owner", "me", "--kind", "bogus"],
    ["find", "a", "--owner", "me", "--ratio", "many"],
    ["find", "a", "--owner", "me", "--limit", "-1"],
    ["find", "a", "--owner", "me", "--exact=yes"],
    ["find", "a", "b", "--owner", "me"],
    ["find", "a", "--owner"],
    ["remove"],
    ["remove", "a", "--confirm-count", "x"],
]


@pytest.mark.parametrize("argv", MISTAKES, ids=[" ".join(a) for a in MISTAKES])
def test_a_usage_error_is_the_argparse_twins(argv: List[str]) -> None:
    # The machine flag first: click reads the token after an option as its value even when it
    # starts with "--" (argv mappings never do that: they write --flag=-x).
    mine = run(CLICK_TOOL, "--output", "jsonl", *argv)
    twin = run(TWIN, "--output", "jsonl", *argv)
    assert (mine.returncode, twin.returncode) == (64, 64), mine.stderr
    assert verdict(mine.stdout) == 1  # a complete, honest failure
    events = lines(mine.stdout)
    assert [e["type"] for e in events] == ["aoi:meta", "aoi:error", "aoi:summary"]
    err, theirs = events[1], error_of(twin)
    assert (err["category"], err["code"], err["message"]) == ("usage", theirs["code"], theirs["message"])
    assert events[0].get("command") == lines(twin.stdout)[0].get("command")
    assert b"s3cr3t-value" not in mine.stdout + mine.stderr


def test_a_usage_error_outside_a_command_is_a_stream_too() -> None:
    for argv, code in ((["bogus"], "INVALID_CHOICE"), ([], "MISSING_COMMAND"), (["admin"], "MISSING_COMMAND")):
        proc = run(CLICK_TOOL, *argv, "--output", "jsonl")
        assert proc.returncode == 64 and verdict(proc.stdout) == 1, argv
        assert error_of(proc)["code"] == code
        assert "command" not in lines(proc.stdout)[0]


def test_a_usage_error_in_human_mode_is_one_line_on_stderr() -> None:
    proc = run(CLICK_TOOL, "find", "a", "--owner", "me", "--kind", "bogus")
    assert (proc.returncode, proc.stdout) == (64, b"")
    assert proc.stderr.decode() == ("items: usage error: Invalid value for --kind; choose from 'file', 'dir'.\n"
                                    "Try 'items --help'.\n")


def test_a_click_usage_error_raised_by_a_command_is_a_usage_error() -> None:
    proc = run(CLICK_TOOL, "refuse", "x", "--output", "jsonl")
    assert proc.returncode == 64 and verdict(proc.stdout) == 1
    err = error_of(proc)
    assert (err["category"], err["code"], err["message"]) == ("usage", "INVALID_VALUE", "Invalid value for value.")
    assert b"not acceptable" not in proc.stdout + proc.stderr  # click's message, which repeats the value


def test_conflicting_input_flags_are_refused_as_argparse_refuses_them() -> None:
    proc = run(CLICK_TOOL, "load", "--input-jsonl", "-", "--fail-fast", "--continue-on-error", "--output", "jsonl")
    assert proc.returncode == 64
    assert error_of(proc)["code"] == "CONFLICTING_ARGUMENTS"


# -- the harness: exceptions, signals, pipes, timeouts -------------------------------------


@pytest.mark.parametrize("tool,command", [(CLICK_TOOL, "crash"), (TYPER_TOOL, "boom")])
def test_an_exception_is_an_internal_error_exit_70_without_traceback(tool: Path, command: str) -> None:
    proc = run(tool, command, "--output", "jsonl")
    assert proc.returncode == 70
    assert b"Traceback" not in proc.stdout + proc.stderr
    assert b"secret-value-never-shown" not in proc.stdout + proc.stderr
    err = error_of(proc)
    assert (err["category"], err["code"], err["scope"]) == ("internal", "INTERNAL_ERROR", "process")
    assert verdict(proc.stdout) == 1
    human = run(tool, command)
    assert human.returncode == 70 and b"Traceback" not in human.stdout + human.stderr


def test_what_a_command_prints_goes_to_stderr_in_machine_mode() -> None:
    proc = run(CLICK_TOOL, "chatty", "--output", "jsonl")
    assert proc.returncode == 0 and verdict(proc.stdout) == 0
    assert [e["type"] for e in lines(proc.stdout)] == ["aoi:meta", "item", "aoi:summary"]
    assert proc.stderr == b"noise from click.echo\nnoise from print\n"
    human = run(CLICK_TOOL, "chatty")
    assert b"noise from click.echo" in human.stdout


@pytest.mark.parametrize("sig,code,name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_ends_an_unbounded_command_with_a_cancelled_summary(sig: int, code: int, name: str) -> None:
    proc = subprocess.Popen([sys.executable, str(CLICK_TOOL), "watch", "--output", "jsonl"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # aoi:meta: the harness is running
    proc.send_signal(sig)
    # The rest through the same buffered reader: communicate() would lose what readline() buffered.
    stream = first + proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(timeout=30)
    assert proc.returncode == code and b"Traceback" not in err
    summary = lines(stream)[-1]
    assert (summary["ok"], summary["reason"], summary["properties"]) == (False, "cancelled", {"signal": name})
    assert verdict(stream) == 1


def test_a_closed_pipe_exits_141_without_noise() -> None:
    proc = subprocess.Popen([sys.executable, str(CLICK_TOOL), "watch", "--output", "jsonl"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=30) == 141
    assert proc.stderr.read() == b""


def test_a_passed_timeout_is_a_timeout_error_and_exit_124() -> None:
    proc = run(CLICK_TOOL, "slow", "--timeout", "0.2", "--output", "jsonl")
    assert proc.returncode == 124
    assert error_of(proc)["code"] == "TIMEOUT" and lines(proc.stdout)[-1]["reason"] == "timeout"


def test_machine_mode_never_prompts_and_human_mode_still_does() -> None:
    proc = run(CLICK_TOOL, "ask", "--output", "jsonl", stdin=b"Bob\n")
    assert proc.returncode == 64 and error_of(proc)["code"] == "MISSING_ARGUMENT"
    human = run(CLICK_TOOL, "ask", stdin=b"Bob\n")
    assert human.returncode == 0 and b"name: Bob" in human.stdout


# -- the flag groups and the common flags --------------------------------------------------


def test_confirmation_follows_the_profile() -> None:
    def refusal(*argv: str) -> Any:
        proc = run(CLICK_TOOL, "remove", *argv, "--output", "jsonl")
        err = error_of(proc)
        return err["category"], err["code"], err["field"], lines(proc.stdout)[-1]["reason"], proc.returncode

    assert refusal("a", "b") == ("precondition_failed", "CONFIRMATION_REQUIRED", "confirm", "denied", 77)
    assert refusal("a", "b", "--confirm") == ("precondition_failed", "CONFIRM_COUNT_REQUIRED", "confirm_count",
                                              "denied", 77)
    assert refusal("a", "b", "--confirm", "--confirm-count", "3")[:2] == ("conflict", "CONFIRM_COUNT_MISMATCH")
    done = run(CLICK_TOOL, "remove", "a", "b", "--confirm", "--confirm-count", "2", "--output", "jsonl")
    assert done.returncode == 0 and [e["id"] for e in lines(done.stdout) if e["type"] == "removed"] == ["a", "b"]
    plan = run(CLICK_TOOL, "remove", "a", "--dry-run", "--output", "jsonl")
    assert [e["type"] for e in lines(plan.stdout)] == ["aoi:meta", "aoi:plan", "aoi:summary"]


def test_paging_and_the_common_flags_before_or_after_the_command() -> None:
    page = run(CLICK_TOOL, "find", "a", "--owner", "me", "--limit", "2", "--output", "jsonl")
    events = lines(page.stdout)
    assert [e["type"] for e in events].count("item") == 2 and events[-1]["truncated"] is True
    over = run(CLICK_TOOL, "find", "a", "--owner", "me", "--limit", "5000", "--output", "jsonl")
    assert over.returncode == 64 and error_of(over)["field"] == "limit"
    early = run(CLICK_TOOL, "--output", "jsonl", "--schema-version", "1.1", "find", "a", "--owner", "me")
    assert early.returncode == 0 and lines(early.stdout)[0]["schema_version"] == "1.1.0"
    unserved = run(CLICK_TOOL, "find", "a", "--owner", "me", "--schema-version", "2", "--output", "jsonl")
    assert unserved.returncode == 69 and error_of(unserved)["code"] == "SCHEMA_VERSION_UNSUPPORTED"
    human = run(CLICK_TOOL, "find", "a", "--owner", "me", "--kind", "dir", "--tag", "x", "--tag", "y", "--no-icons")
    assert human.returncode == 0 and b"i0  a:dir:2:x,y:False:False" in human.stdout


def test_records_and_nested_commands() -> None:
    proc = run(CLICK_TOOL, "load", "--input-jsonl", "-", "--continue-on-error", "--output", "jsonl",
               stdin=b'{"name": "a"}\nnot json\n{"name": "b"}\n')
    assert proc.returncode == 65 and verdict(proc.stdout) == 1
    summary = lines(proc.stdout)[-1]
    assert (summary["count"], summary["partial"]) == (2, True)
    assert [e["line_number"] for e in lines(proc.stdout) if e["type"] == "aoi:error"] == [2]
    nested = run(CLICK_TOOL, "admin", "reset", "--hard", "--dry-run", "--output", "jsonl")
    events = lines(nested.stdout)
    assert nested.returncode == 0 and events[0]["command"] == "admin reset"
    assert events[1]["type"] == "aoi:plan" and events[1]["detail"] == "hard"


def test_help_and_version() -> None:
    for argv in (["--help"], ["-h"], ["find", "--help"], ["find", "-h"], ["admin", "reset", "-h"],
                 ["input-schema", "--help"]):
        proc = run(CLICK_TOOL, *argv)
        assert proc.returncode == 0 and b"Usage:" in proc.stdout, argv
    assert b"--limit" in run(CLICK_TOOL, "find", "--help").stdout
    assert run(CLICK_TOOL, "--version").stdout == b"items 1.2.3 (AOI-CLI 1.0-alpha)\n"
    assert run(TYPER_TOOL, "hello", "--help").returncode == 0


# -- end to end through aoi verify ----------------------------------------------------------


@pytest.mark.parametrize("tool", [CLICK_TOOL, TYPER_TOOL], ids=["click", "typer"])
def test_every_example_streams_verify_against_the_published_schema(tool: Path, tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_bytes(run(tool, "schema", "--output", "json").stdout)
    caps = json.loads(run(tool, "capabilities", "--output", "json").stdout)
    ran = 0
    for command in caps["commands"]:
        if command["unbounded"] or command["name"] == "slow":
            continue
        for example in command["examples"]:
            proc = subprocess.run([aoi_bin(), "verify", "--output", "jsonl", "--schema", str(schema), "--",
                                   sys.executable, str(tool), *example, "--output", "jsonl"],
                                  env=ENV, input=command.get("stdin", "").encode(), capture_output=True,
                                  timeout=60, check=False)
            assert proc.returncode in (0, 1), (example, proc.stdout.decode()[-2000:])
            ran += 1
    assert ran >= 3


def test_a_typer_app_runs_in_machine_mode() -> None:
    proc = run(TYPER_TOOL, "hello", "Ada", "--times", "2", "--tone", "dry", "--shout", "--output", "jsonl")
    assert proc.returncode == 0 and verdict(proc.stdout) == 0
    assert [e["text"] for e in lines(proc.stdout) if e["type"] == "greeting"] == ["HELLO ADA (DRY)"] * 2
    bad = run(TYPER_TOOL, "hello", "Ada", "--times", "9", "--output", "jsonl")
    assert bad.returncode == 64 and error_of(bad)["code"] == "INVALID_VALUE" and verdict(bad.stdout) == 1
    refused_run = run(TYPER_TOOL, "forget", "Ada", "--output", "jsonl")
    assert refused_run.returncode == 77 and error_of(refused_run)["code"] == "CONFIRMATION_REQUIRED"
    assert run(TYPER_TOOL, "forget", "Ada", "--confirm", "--output", "jsonl").returncode == 0


# -- the example: click_todo.py -------------------------------------------------------------


@pytest.fixture()
def todo_env(tmp_path: Path) -> Dict[str, str]:
    return dict(ENV, CLICK_TODO_FILE=str(tmp_path / "todos.json"))


def todo(env: Dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return run(TODO, *args, env=env)


def test_the_todo_list_pages_confirms_and_completes(todo_env: Dict[str, str]) -> None:
    for text in ("one", "two", "three"):
        assert todo(todo_env, "add", text).returncode == 0
    first = lines(todo(todo_env, "list", "--limit", "2", "--output", "jsonl").stdout)
    assert [e["id"] for e in first if e["type"] == "todo"] == ["t1", "t2"] and first[-1]["truncated"] is True
    rest = lines(todo(todo_env, "list", "--cursor", first[-1]["next_cursor"], "--output", "jsonl").stdout)
    assert [e["id"] for e in rest if e["type"] == "todo"] == ["t3"] and rest[-1]["truncated"] is False
    other = todo(todo_env, "list", "--status", "done", "--cursor", first[-1]["next_cursor"], "--output", "jsonl")
    assert other.returncode == 65 and error_of(other)["code"] == "CURSOR_MISMATCH"
    assert todo(todo_env, "done", "t2", "--output", "jsonl").returncode == 0
    done = lines(todo(todo_env, "list", "--status", "done", "--output", "jsonl").stdout)
    assert [e["id"] for e in done if e["type"] == "todo"] == ["t2"]
    refusal = todo(todo_env, "delete", "t1", "--output", "jsonl")
    assert refusal.returncode == 77 and error_of(refusal)["code"] == "CONFIRMATION_REQUIRED"
    assert todo(todo_env, "delete", "t1", "--confirm", "--output", "jsonl").returncode == 0
    gone = todo(todo_env, "delete", "t1", "--confirm", "--output", "jsonl")
    assert gone.returncode == 66 and error_of(gone)["code"] == "TODO_NOT_FOUND"
    assert lines(todo(todo_env, "list", "--output", "jsonl").stdout)[-1]["count"] == 2


def test_the_todo_example_passes_aoi_lint_with_no_configuration() -> None:
    # The example runs as a script (#!/usr/bin/env python3): this interpreter, which has click.
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    proc = subprocess.run([aoi_bin(), "lint", "--tool", str(TODO), "--format", "jsonl"], env=env,
                          capture_output=True, timeout=600, check=False, cwd=str(TODO.parent))
    events = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    failed = [e for e in events if e["type"] == "aoi:check" and not e.get("ok")]
    results = events[-1]["properties"]["results"]
    assert proc.returncode == 0, json.dumps(failed)[:4000]
    assert (results["fail"], results["could_not_run"]) == (0, 0), results
    assert results["pass"] >= 40
