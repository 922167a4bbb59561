#!/usr/bin/env python3
"""A tool whose `fail` command fails at once with the category it is given (`--deny` makes it a
refusal, reason "denied"): test_modes.py runs it in both output modes."""

import sys

from machinemode import Context, Outcome, Tool, errors

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


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    tool.main()
