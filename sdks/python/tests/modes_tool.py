#!/usr/bin/env python3
"""A tool whose `fail` command fails at once with the category it is given (`--deny` makes it a
refusal, reason "denied"): test_modes.py runs it in both output modes."""

import dataclasses
import sys

from machinemode import PAGING, Context, Outcome, Tool, errors, event

tool = Tool("modes", "1.0.0", description="Fails on request", schema_name="io.example.modes.events",
            schema_versions=["1.0.0"], schema_id="https://schemas.example.com/modes/{version}.json")

fail = tool.command("fail", summary="Fail with a category", read_only=True, examples=[["fail", "io"]])
fail.argument("category", help="A category of §9.2")
fail.argument("--deny", action="store_true", help="Refuse (reason denied)")


@fail.handler
def run_fail(ctx: Context) -> Outcome:
    reason = "denied" if ctx.args.deny else None
    raise errors.AoiError(ctx.args.category, "ASKED_TO_FAIL", "asked to fail", reason=reason)


chatty = tool.command("chatty", summary="Prints a stray line, then succeeds", read_only=True,
                      examples=[["chatty"]])


@chatty.handler
def run_chatty(ctx: Context) -> Outcome:
    print("a stray line from the handler")
    return Outcome.success()


@event("number")
@dataclasses.dataclass
class Number:
    n: int


count = tool.command("count", summary="Counts to --to, a page at a time", read_only=True,
                     groups=[PAGING], events=[Number], examples=[["count", "--to", "7"]])
count.argument("--to", type=int, default=7, help="The last number")


@count.handler
def run_count(ctx: Context) -> Outcome:
    after = ctx.after() or 0
    return ctx.page((Number(n) for n in range(after + 1, ctx.args.to + 1)), position=lambda e: e.n)


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    tool.main()
