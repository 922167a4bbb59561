"""The exit status says how a run ended, whatever the output format (§6): for every category
of §9.2, and for a refusal, human mode exits as machine mode does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from machinemode.errors import CATEGORIES, EXIT_FOR_CATEGORY, EXIT_NOPERM

TOOL = Path(__file__).with_name("modes_tool.py")


def _exit(*args: str) -> int:
    return subprocess.run([sys.executable, str(TOOL), *args], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60).returncode


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_a_failure_exits_the_same_in_human_and_machine_mode(category: str) -> None:
    machine = _exit("fail", category, "--output", "jsonl")
    human = _exit("fail", category)
    assert (machine, human) == (EXIT_FOR_CATEGORY[category], EXIT_FOR_CATEGORY[category])


@pytest.mark.parametrize("category", ["usage", "validation", "conflict"])
def test_a_refusal_exits_77_in_both_modes(category: str) -> None:
    assert _exit("fail", category, "--deny", "--output", "jsonl") == EXIT_NOPERM
    assert _exit("fail", category, "--deny") == EXIT_NOPERM


def test_a_stray_print_in_machine_mode_goes_to_stderr_and_the_stream_stays_whole() -> None:
    """§2: machine-mode stdout carries the stream only; the argparse surface guards it."""
    done = subprocess.run([sys.executable, str(TOOL), "chatty", "--output", "jsonl"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60, text=True)
    assert done.returncode == 0
    assert "a stray line" in done.stderr
    types = [json.loads(line)["type"] for line in done.stdout.splitlines()]
    assert types == ["aoi:meta", "aoi:summary"]
    human = subprocess.run([sys.executable, str(TOOL), "chatty"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60, text=True)
    assert "a stray line" in human.stdout


def _count(*args: str) -> list[dict[str, object]]:
    done = subprocess.run([sys.executable, str(TOOL), "count", *args, "--output", "jsonl"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60, text=True)
    assert done.returncode in (0, 65), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_ctx_page_walks_every_item_once_by_its_cursors_and_refuses_another_querys() -> None:
    """§15: the SDK cuts the page, mints next_cursor bound to the query, and resumes after it."""
    seen: list[object] = []
    cursor: list[str] = []
    while True:
        events = _count("--limit", "3", *cursor)
        seen += [e["n"] for e in events if e["type"] == "number"]
        summary = events[-1]
        if not summary.get("truncated"):
            break
        cursor = ["--cursor", str(summary["next_cursor"])]
    assert seen == [1, 2, 3, 4, 5, 6, 7]
    first = _count("--limit", "3")[-1]
    other = _count("--limit", "3", "--to", "9", "--cursor", str(first["next_cursor"]))
    assert other[-1]["ok"] is False and any(e.get("code") == "CURSOR_MISMATCH" for e in other)
    cut = _count("--limit", "7", "--max-bytes", "1")
    numbers = [e["n"] for e in cut if e["type"] == "number"]
    assert numbers == [1] and cut[-1]["truncated"] is True
    resumed = _count("--cursor", str(cut[-1]["next_cursor"]))
    assert next(e["n"] for e in resumed if e["type"] == "number") == 2
