#!/usr/bin/env python3
"""click_todo: a todo list in one JSON file, a click application with a Machine Mode interface.

The click commands are ordinary click; ``machinemode.click`` adds the §16.1 flags they declare,
usage errors as streams, the harness, and discovery derived from the click parameters. The list
lives in ``$CLICK_TODO_FILE``, else ``$XDG_DATA_HOME/click_todo/todos.json``, else
``~/.local/share/click_todo/todos.json``, a :class:`machinemode.JsonFile`: every change
rewrites it whole (a temporary file renamed over it) under its lock, so a reader never sees
half a list. Paging (``ctx.page``), dry runs, confirmation (``ctx.mutate``) are the SDK's.

Compatibility rules: the machine output is governed by the event schema
``io.machinemode.examples.click_todo.events`` (``click_todo.py schema``); an added event type or
optional field is a minor version, a renamed or removed one a major one; error codes never
change once published.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from typing import Annotated, Any, Dict, List

try:
    import machinemode  # noqa: F401 - found, or found beside this example below
except ImportError:  # run from a checkout: the SDK beside this example
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "src"))

import click

from machinemode import CONFIRM, DRY_RUN, PAGING, CursorCodec, JsonFile, Outcome, errors, event
from machinemode.click import ClickTool, context, declare

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


def store() -> JsonFile:
    """``$CLICK_TODO_FILE``, else ``$XDG_DATA_HOME/click_todo/todos.json``."""
    chosen = os.environ.get("CLICK_TODO_FILE")
    return JsonFile(chosen) if chosen else JsonFile.for_tool("click_todo", "todos.json")


def empty() -> Dict[str, Any]:
    """The list before the first todo: ``next`` is the next id's number, ``key`` signs cursors."""
    return {"next": 1, "key": os.urandom(32).hex(), "todos": []}


def load() -> Dict[str, Any]:
    data = store().read(empty)
    if not isinstance(data, dict) or not isinstance(data.get("todos"), list):
        raise errors.io("TODO_FILE_UNREADABLE", "The todo file is not a todo list.",
                        hint="set CLICK_TODO_FILE to another file")
    return data


def find(data: Dict[str, Any], todo_id: str) -> Dict[str, Any]:
    if not re.match(ID_PATTERN, todo_id):
        raise errors.validation("INVALID_ID", "A todo id is t followed by a number, e.g. t1.", field="id")
    for item in data["todos"]:
        if f"t{item['n']}" == todo_id:
            return dict(item)
    raise errors.not_found("TODO_NOT_FOUND", "No todo has this id.", target=todo_id)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
    clean = errors.clean_message(text) if text.strip() else ""
    if not clean or len(clean) > 500:
        raise errors.validation("INVALID_TEXT", "A todo's text is 1 to 500 characters.", field="text")

    def effect() -> List[Added]:
        with store().update(empty) as data:
            n, stamp = int(data["next"]), now()
            data["next"] = n + 1
            data["todos"].append({"n": n, "text": clean, "done": None, "created_at": stamp})
        return [Added(f"t{n}", clean, stamp)]

    return context().mutate(effect, request={"text": clean}, action="create", target=f"t{load()['next']}",
                            detail="add a todo")


@declare(read_only=True, groups=[PAGING], events=[Todo], setup=SEED,
         examples=[["list"], ["list", "--limit", "2"], ["list", "--status", "open"]])
@app.command("list")
@click.option("--status", type=click.Choice(["all", "open", "done"]), default="all",
              show_default=True, help="Which todos to show")
def list_todos(status: str) -> Outcome:
    """List todos, oldest first (bounded)."""
    ctx, data = context(), load()
    codec = CursorCodec(bytes.fromhex(data["key"]))  # signed: a cursor is this list's own
    after = ctx.after(codec=codec) or 0
    found = (Todo(f"t{t['n']}", t["text"], bool(t["done"]), t["created_at"]) for t in data["todos"]
             if t["n"] > after and (status == "all" or (status == "done") == bool(t["done"])))
    return ctx.page(found, position=lambda todo: int(todo.id[1:]), codec=codec)


@declare(read_only=False, groups=[DRY_RUN], events=[Completed], setup=SEED[:1],
         schema={"todo_id": {"pattern": ID_PATTERN}},
         examples=[["done", "t1"], ["done", "t1", "--dry-run"]])
@app.command()
@click.argument("todo_id", metavar="ID")
def done(todo_id: str) -> Outcome:
    """Mark a todo done."""
    item = find(load(), todo_id)

    def effect() -> List[Completed]:
        with store().update(empty) as data:
            for stored in data["todos"]:
                if stored["n"] == item["n"] and not stored["done"]:
                    stored["done"] = now()
                if stored["n"] == item["n"]:
                    return [Completed(todo_id, stored["text"], stored["done"])]
        raise errors.not_found("TODO_NOT_FOUND", "No todo has this id.", target=todo_id)

    return context().mutate(effect, request={"id": todo_id}, action="none" if item["done"] else "update",
                            target=todo_id, detail="mark the todo done")


@declare(read_only=False, destructive=True, groups=[DRY_RUN, CONFIRM], events=[Deleted],
         setup=SEED[:1], schema={"todo_id": {"pattern": ID_PATTERN}},
         examples=[["delete", "t1", "--confirm"], ["delete", "t1", "--dry-run"]])
@app.command()
@click.argument("todo_id", metavar="ID")
def delete(todo_id: str) -> Outcome:
    """Delete a todo (destructive: needs --confirm)."""
    item = find(load(), todo_id)

    def effect() -> List[Deleted]:
        with store().update(empty) as data:
            gone = find(data, todo_id)
            data["todos"] = [t for t in data["todos"] if t["n"] != gone["n"]]
        return [Deleted(todo_id, gone["text"])]

    return context().mutate(effect, request={"id": todo_id}, action="delete", target=todo_id,
                            detail=f"delete the todo {item['text']!r}")


tool = ClickTool(app, name="click_todo", version="0.1.0",
                 schema_name="io.machinemode.examples.click_todo.events", schema_versions=["1.0.0"],
                 schema_id="https://schemas.machinemode.io/examples/click_todo/{version}/schema.json",
                 auth="none: a local JSON file ($CLICK_TODO_FILE, else $XDG_DATA_HOME/click_todo/todos.json)")

if __name__ == "__main__":
    tool.main()
