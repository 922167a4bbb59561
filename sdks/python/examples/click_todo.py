#!/usr/bin/env python3
"""click_todo: a todo list in one JSON file, a click application with a Machine Mode interface.

The click commands are ordinary click; ``machinemode.click`` adds the §16.1 flags they declare,
usage errors as streams, the harness, and discovery derived from the click parameters. The list
lives in ``$CLICK_TODO_FILE``, else ``$XDG_DATA_HOME/click_todo/todos.json``, else
``~/.local/share/click_todo/todos.json``; every change rewrites it whole (a temporary file
renamed over it) under an advisory lock, so a reader never sees half a list.

Compatibility rules: the machine output is governed by the event schema
``io.machinemode.examples.click_todo.events`` (``click_todo.py schema``); an added event type or
optional field is a minor version, a renamed or removed one a major one; error codes never
change once published.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import sys
import tempfile
import time
from typing import Annotated, Any, Callable, Dict, Iterator, Optional, Tuple

try:
    import machinemode
except ImportError:  # run from a checkout: the SDK beside this example
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "src"))
    import machinemode

import click

from machinemode import errors, event
from machinemode.cli import CONFIRM, DRY_RUN, PAGING
from machinemode.click import ClickTool, context, declare
from machinemode.cursor import CursorCodec
from machinemode.harness import Outcome

ID_PATTERN = "^t[1-9][0-9]{0,17}$"
TodoId = Annotated[str, {"pattern": ID_PATTERN, "description": "The todo's stable identifier"}]
SEED = [["add", "Buy milk"], ["add", "Write the report"], ["add", "Call the plumber"]]


@event("todo")
@dataclasses.dataclass
class Todo:
    """One todo (list)."""

    id: TodoId
    text: str
    done: bool
    created_at: str


@event("added")
@dataclasses.dataclass
class Added:
    """A todo was added."""

    id: TodoId
    text: str
    created_at: str


@event("completed")
@dataclasses.dataclass
class Completed:
    """A todo is done (marking a done todo again changes nothing and says so again)."""

    id: TodoId
    text: str
    completed_at: str


@event("deleted")
@dataclasses.dataclass
class Deleted:
    """A todo was removed."""

    id: TodoId
    text: str


# -- the store ------------------------------------------------------------------------------


def store_path() -> str:
    chosen = os.environ.get("CLICK_TODO_FILE")
    if chosen:
        return chosen
    xdg = os.environ.get("XDG_DATA_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "click_todo", "todos.json")


def load() -> Dict[str, Any]:
    """The list (``next``: the next id's number, ``key``: the cursor key, ``todos``); a file
    that does not exist yet is an empty list, and reading it creates nothing."""
    try:
        with open(store_path(), encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {"next": 1, "key": None, "todos": []}
    except (OSError, ValueError):
        raise errors.io("TODO_FILE_UNREADABLE", "The todo file cannot be read as a todo list.",
                        hint="set CLICK_TODO_FILE to another file") from None
    if not isinstance(data, dict) or not isinstance(data.get("todos"), list):
        raise errors.io("TODO_FILE_UNREADABLE", "The todo file is not a todo list.")
    return data


@contextlib.contextmanager
def changing() -> Iterator[Dict[str, Any]]:
    """The list to change, locked; it is written back (atomically) when the block ends."""
    target = store_path()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        lock = open(target + ".lock", "a")  # noqa: SIM115 - held for the whole block
    except OSError:
        raise errors.io("TODO_FILE_UNWRITABLE", "The todo file's directory cannot be written.") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = load()
        if not data.get("key"):
            data["key"] = os.urandom(32).hex()  # signs this list's cursors
        yield data
        with machinemode.critical():
            fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(target)), prefix=".todos.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f)
                os.replace(temp, target)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise errors.io("TODO_FILE_UNWRITABLE", "The todo file cannot be written.") from None


def find(data: Dict[str, Any], todo_id: str) -> Dict[str, Any]:
    for item in data["todos"]:
        if f"t{item['n']}" == todo_id:
            return dict(item)
    raise errors.not_found("TODO_NOT_FOUND", "No todo has this id.", target=todo_id)


def check_id(todo_id: str) -> str:
    import re

    if not re.match(ID_PATTERN, todo_id):
        raise errors.validation("INVALID_ID", "A todo id is t followed by a number, e.g. t1.", field="id")
    return todo_id


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def planned(todo_id: str, plan: Callable[[Dict[str, Any]], Tuple[str, str]]) -> Optional[Outcome]:
    """With --dry-run, the plan (action, detail) for one existing todo and nothing changed;
    else None: the command goes on."""
    ctx = context()
    check_id(todo_id)
    if not ctx.args.dry_run:
        return None
    action, detail = plan(find(load(), todo_id))
    ctx.out.plan(action, todo_id, detail)
    return Outcome.success(properties={"dry_run": True})


# -- commands -------------------------------------------------------------------------------


@click.group()
def app() -> None:
    """A todo list in a JSON file."""


@declare(read_only=False, additive=True, groups=[DRY_RUN], events=[Added],
         schema={"text": {"minLength": 1, "maxLength": 500}},
         examples=[["add", "Buy milk"], ["add", "Plan the week", "--dry-run"]])
@app.command()
@click.argument("text")
def add(text: str) -> Outcome:
    """Add a todo; reports its stable id."""
    ctx = context()
    clean = errors.clean_message(text) if text.strip() else ""
    if not clean or len(clean) > 500:
        raise errors.validation("INVALID_TEXT", "A todo's text is 1 to 500 characters.", field="text")
    if ctx.args.dry_run:
        ctx.out.plan("create", f"t{load()['next']}", "add a todo")
        return Outcome.success(properties={"dry_run": True})
    with changing() as data:
        n, stamp = int(data["next"]), now()
        data["next"] = n + 1
        data["todos"].append({"n": n, "text": clean, "done": None, "created_at": stamp})
    ctx.out.emit(Added(f"t{n}", clean, stamp))
    return Outcome.success()


@declare(read_only=True, groups=[PAGING], events=[Todo], setup=SEED,
         examples=[["list"], ["list", "--limit", "2"], ["list", "--status", "open"]])
@app.command("list")
@click.option("--status", type=click.Choice(["all", "open", "done"]), default="all",
              show_default=True, help="Which todos to show")
def list_todos(status: str) -> Outcome:
    """List todos, oldest first (bounded)."""
    ctx = context()
    data = load()
    query = {"status": status}
    codec = CursorCodec(bytes.fromhex(data["key"]) if data.get("key") else os.urandom(32))
    after = codec.decode(ctx.args.cursor, "list", query) if ctx.args.cursor is not None else 0
    if not isinstance(after, int) or isinstance(after, bool):
        raise errors.validation("CURSOR_INVALID", "The cursor is not one this tool issued.", field="cursor")
    found = [t for t in data["todos"] if t["n"] > after
             and (status == "all" or (status == "done") == bool(t["done"]))]
    page = found[:ctx.limit]
    max_bytes, start, shown = ctx.args.max_bytes, ctx.out.bytes_written, 0
    for t in page:
        if max_bytes is not None and shown and ctx.out.bytes_written - start >= max_bytes:
            break
        ctx.out.emit(Todo(f"t{t['n']}", t["text"], bool(t["done"]), t["created_at"]))
        shown += 1
    truncated = shown < len(found)
    cursor = codec.encode(page[shown - 1]["n"] if shown else after, "list", query) if truncated else None
    return Outcome.success(truncated=truncated, next_cursor=cursor)


@declare(read_only=False, groups=[DRY_RUN], events=[Completed], setup=SEED[:1],
         schema={"todo_id": {"pattern": ID_PATTERN}},
         examples=[["done", "t1"], ["done", "t1", "--dry-run"]])
@app.command()
@click.argument("todo_id", metavar="ID")
def done(todo_id: str) -> Outcome:
    """Mark a todo done."""
    dry = planned(todo_id, lambda item: ("none" if item["done"] else "update", "mark the todo done"))
    if dry is not None:
        return dry
    with changing() as data:
        item = find(data, todo_id)
        for stored in data["todos"]:
            if stored["n"] == item["n"] and not stored["done"]:
                stored["done"] = item["done"] = now()
    context().out.emit(Completed(todo_id, item["text"], item["done"]))
    return Outcome.success()


@declare(read_only=False, destructive=True, groups=[DRY_RUN, CONFIRM], events=[Deleted],
         setup=SEED[:1], schema={"todo_id": {"pattern": ID_PATTERN}},
         examples=[["delete", "t1", "--confirm"], ["delete", "t1", "--dry-run"]])
@app.command()
@click.argument("todo_id", metavar="ID")
def delete(todo_id: str) -> Outcome:
    """Delete a todo (destructive: needs --confirm)."""
    dry = planned(todo_id, lambda item: ("delete", f"delete the todo {item['text']!r}"))
    if dry is not None:
        return dry
    context().require_confirm(target=todo_id)
    with changing() as data:
        item = find(data, todo_id)
        data["todos"] = [t for t in data["todos"] if t["n"] != item["n"]]
    context().out.emit(Deleted(todo_id, item["text"]))
    return Outcome.success()


tool = ClickTool(app, name="click_todo", version="0.1.0",
                 schema_name="io.machinemode.examples.click_todo.events", schema_versions=["1.0.0"],
                 schema_id="https://schemas.machinemode.io/examples/click_todo/{version}/schema.json",
                 auth="none: a local JSON file ($CLICK_TODO_FILE, else $XDG_DATA_HOME/click_todo/todos.json)")

if __name__ == "__main__":
    tool.main()
