"""A click application on machinemode.click for the tests: each kind of parameter discovery
describes, each flag group, and each way a run can fail."""

from __future__ import annotations

import dataclasses
import time
from typing import Optional, Tuple

import click

from machinemode import errors, event
from machinemode.cli import CONFIRM, DRY_RUN, IDEMPOTENCY, INPUT_JSONL, PAGING, TIMEOUT
from machinemode.click import ClickTool, context, declare
from machinemode.harness import Outcome


@event("item")
@dataclasses.dataclass
class Item:
    id: str
    name: str


@event("removed")
@dataclasses.dataclass
class Removed:
    id: str


@dataclasses.dataclass
class Record:
    name: str


@click.group()
def cli() -> None:
    """Items, for the tests."""


@declare(read_only=True, groups=[PAGING], events=[Item], examples=[["find", "a", "--owner", "me"]],
         schema={"query": {"minLength": 1}})
@cli.command()
@click.argument("query")
@click.option("--kind", type=click.Choice(["file", "dir"]), default="file", help="What to find")
@click.option("--depth", type=click.IntRange(1, 5), default=2, help="How deep")
@click.option("--ratio", type=float, help="A ratio")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for several)")
@click.option("--owner", required=True, help="Whose items")
@click.option("--icons/--no-icons", default=True, help="Show icons")
@click.option("--exact", is_flag=True, help="Match exactly")
@click.option("--token", hide_input=True, help="An API token")
@click.option("--root", type=click.Path(), help="Where to look")
def find(query: str, kind: str, depth: int, ratio: Optional[float], tags: Tuple[str, ...], owner: str,
         icons: bool, exact: bool, token: Optional[str], root: Optional[str]) -> Outcome:
    """Find items (bounded)."""
    ctx = context()
    total = 3
    shown = min(ctx.limit, total)
    for i in range(shown):
        ctx.out.emit(Item(f"i{i}", f"{query}:{kind}:{depth}:{','.join(tags)}:{icons}:{exact}"))
    return Outcome.success(truncated=shown < total, next_cursor="c" if shown < total else None)


@declare(read_only=True, events=[Item], examples=[["crash"]])
@cli.command()
def crash() -> None:
    """Fail with an unexpected exception."""
    raise RuntimeError("secret-value-never-shown")


@declare(read_only=True, events=[Item], examples=[["chatty"]])
@cli.command()
def chatty() -> None:
    """Print with click.echo, then emit."""
    click.echo("noise from click.echo")
    print("noise from print")
    context().out.emit(Item("i1", "quiet"))


@declare(read_only=True, events=[Item], examples=[["refuse", "x"]])
@cli.command()
@click.argument("value")
def refuse(value: str) -> None:
    """Refuse the value the way click commands do."""
    raise click.BadParameter(f"{value} is not acceptable", param_hint="value")


@declare(read_only=False, destructive=True, groups=[DRY_RUN, CONFIRM, IDEMPOTENCY], events=[Removed],
         examples=[["remove", "i1", "--confirm"]])
@cli.command()
@click.argument("ids", nargs=-1, required=True)
def remove(ids: Tuple[str, ...]) -> None:
    """Remove items (destructive)."""
    ctx = context()
    if ctx.args.dry_run:
        for i in ids:
            ctx.out.plan("delete", i)
        return
    ctx.require_confirm(count=len(ids), count_required=True)
    for i in ids:
        ctx.out.emit(Removed(i))


@declare(read_only=False, additive=True, groups=[INPUT_JSONL], events=[Item], record=Record,
         examples=[["load", "--input-jsonl", "-"]], stdin='{"name": "a"}\n')
@cli.command()
def load() -> Outcome:
    """Add items from JSONL records."""
    ctx = context()
    batch = ctx.read_records(Record)
    for n, (_line, rec) in enumerate(batch.records):
        ctx.out.emit(Item(f"i{n}", rec.name))
    return ctx.done()


@declare(read_only=True, unbounded=True, events=[Item], examples=[["watch"]])
@cli.command()
def watch() -> None:
    """Stream items until interrupted (unbounded)."""
    ctx = context()
    ctx.out.meta()
    ctx.out.flush()
    while True:
        ctx.out.heartbeat(50)
        time.sleep(0.05)


@declare(read_only=True, groups=[TIMEOUT], events=[Item], examples=[["slow"]])
@cli.command()
def slow() -> None:
    """Wait longer than any --timeout the tests give."""
    time.sleep(30)


@declare(read_only=True, events=[Item], examples=[["ask", "--name", "x"]])
@cli.command()
@click.option("--name", prompt="Your name", help="Who asks")
def ask(name: str) -> None:
    """Ask for a name unless given."""
    context().out.emit(Item("i1", name))


@cli.group()
def admin() -> None:
    """Administration."""


@declare(read_only=False, groups=[DRY_RUN], events=[Removed], examples=[["admin", "reset", "--dry-run"]])
@admin.command()
@click.option("--hard", is_flag=True, help="Reset everything")
def reset(hard: bool) -> None:
    """Reset the store."""
    ctx = context()
    if not ctx.args.dry_run:
        raise errors.unsupported("NOT_HERE", "This test tool resets nothing.")
    ctx.out.plan("reset", "store", "hard" if hard else "soft")


tool = ClickTool(cli, name="items", version="1.2.3", schema_name="io.example.items.events",
                 schema_versions=["1.0.0", "1.1.0"],
                 schema_id="https://schemas.example.com/items/{version}.json")

if __name__ == "__main__":
    tool.main()
