#!/usr/bin/env python3
"""notes: the SDK's short path. A bounded, filtered list, a get, an idempotent add with a dry run
and a confirmed delete, in both output modes, with no paging, idempotency, confirmation or
human-output code of its own (tests/test_short_path.py holds it to that and lints it)."""

import dataclasses
from typing import Optional

from machinemode import CONFIRM, DRY_RUN, IDEMPOTENCY, PAGING, Context, JsonFile, Outcome, Tool, errors, event


@event("note")
@dataclasses.dataclass
class Note:
    n: int
    text: str
    tag: Optional[str] = None


@event("deleted")
@dataclasses.dataclass
class Deleted:
    n: int


tool = Tool("notes", "1.0.0", description="Short notes, kept in $XDG_DATA_HOME/notes/notes.json",
            schema_name="io.example.notes", schema_id="https://schemas.example.com/notes/{version}.json")
seed = [["add", "first note", "--tag", "home"], ["add", "second note", "--tag", "home"]]
store = JsonFile.for_tool("notes", "notes.json")

list_ = tool.command("list", summary="List notes, a page at a time", read_only=True, groups=[PAGING],
                     events=[Note], setup=seed, examples=[["list", "--tag", "home"]])
list_.argument("--tag", help="Only notes with this tag")
get = tool.command("get", summary="Show one note", read_only=True, events=[Note], setup=seed,
                   examples=[["get", "1"]])
get.argument("n", type=int, help="The note's number")
add = tool.command("add", summary="Add a note", read_only=False, groups=[DRY_RUN, IDEMPOTENCY],
                   events=[Note], examples=[["add", "buy milk", "--tag", "home"]])
add.argument("text", help="What the note says")
add.argument("--tag", help="A tag to find it by")
rm = tool.command("rm", summary="Delete notes", read_only=False, destructive=True, setup=seed,
                  groups=[DRY_RUN, IDEMPOTENCY, CONFIRM], events=[Deleted], examples=[["rm", "1", "--confirm"]])
rm.argument("ns", type=int, nargs="+", help="The notes' numbers")


@list_.handler
def run_list(ctx: Context) -> Outcome:
    after, tag = ctx.after() or 0, ctx.args.tag
    notes = (Note(**n) for n in store.read(list) if n["n"] > after and tag in (None, n["tag"]))
    return ctx.page(notes, position=lambda note: note.n)


@get.handler
def run_get(ctx: Context) -> Outcome:
    for n in store.read(list):
        if n["n"] == ctx.args.n:
            ctx.out.emit(Note(**n))
            return Outcome.success()
    raise errors.not_found("NOTE_NOT_FOUND", f"No note {ctx.args.n}.", target=str(ctx.args.n))


@add.handler
def run_add(ctx: Context) -> Outcome:
    def effect() -> list:
        with store.update(list) as notes:
            notes.append(dataclasses.asdict(Note(max((n["n"] for n in notes), default=0) + 1,
                                                 ctx.args.text, ctx.args.tag)))
            return [Note(**notes[-1])]
    request = {"text": ctx.args.text, "tag": ctx.args.tag}
    return ctx.mutate(effect, request=request, action="add", target="a note")


@rm.handler
def run_rm(ctx: Context) -> Outcome:
    def effect() -> list:  # looks the notes up: they may have gone since the plan
        with store.update(list) as notes:
            missing = [n for n in ctx.args.ns if n not in {note["n"] for note in notes}]
            if missing:
                raise errors.not_found("NOTE_NOT_FOUND", f"No note {missing[0]}.", target=str(missing[0]))
            notes[:] = [note for note in notes if note["n"] not in ctx.args.ns]
        return [Deleted(n) for n in ctx.args.ns]
    return ctx.mutate(effect, request={"ns": ctx.args.ns}, action="delete", target=" ".join(map(str, ctx.args.ns)),
                      count=len(ctx.args.ns))


if __name__ == "__main__":
    tool.main()
