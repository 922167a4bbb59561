"""The exit status says how a run ended, whatever the output format (§6): for every category
of §9.2, and for a refusal, human mode exits as machine mode does."""

from __future__ import annotations

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
