"""A typer application on machinemode.click for the tests (typer builds click commands)."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from machinemode import event
from machinemode.cli import CONFIRM, PAGING
from machinemode.click import ClickTool, context, declare


class Tone(str, enum.Enum):
    warm = "warm"
    dry = "dry"


@event("greeting")
@dataclasses.dataclass
class Greeting:
    id: str
    text: str


@event("forgotten")
@dataclasses.dataclass
class Forgotten:
    id: str


app = typer.Typer()


@app.callback()
def main() -> None:
    """Greet people, for the tests."""


@app.command()
@declare(read_only=True, groups=[PAGING], events=[Greeting], examples=[["hello", "Ada"]])
def hello(name: Annotated[str, typer.Argument(help="Who to greet")],
          times: Annotated[int, typer.Option(min=1, max=3, help="How often")] = 1,
          tone: Annotated[Tone, typer.Option(help="How it sounds")] = Tone.warm,
          shout: Annotated[bool, typer.Option(help="In capitals")] = False,
          notes: Annotated[Optional[List[Path]], typer.Option(help="Files to read")] = None) -> None:
    """Greet someone (bounded)."""
    ctx = context()
    text = f"hello {name} ({tone.value})"
    for i in range(min(times, ctx.limit)):
        ctx.out.emit(Greeting(f"g{i}", text.upper() if shout else text))


@declare(read_only=False, destructive=True, groups=[CONFIRM], events=[Forgotten],
         examples=[["forget", "Ada", "--confirm"]])
@app.command()
def forget(name: str) -> None:
    """Forget someone (destructive)."""
    ctx = context()
    ctx.require_confirm(target=name)
    ctx.out.emit(Forgotten(name))


@declare(read_only=True, events=[Greeting], examples=[["boom"]])
@app.command()
def boom() -> None:
    """Fail with an unexpected exception."""
    raise ValueError("secret-value-never-shown")


tool = ClickTool(app, name="greet", version="2.0.0", schema_name="io.example.greet.events",
                 schema_versions=["1.0.0"], schema_id="https://schemas.example.com/greet/{version}.json")

if __name__ == "__main__":
    tool.main()
