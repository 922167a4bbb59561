"""This package's README, run: its first ```python block saved as greet.py, then every line of
its "Lint it in CI" ```sh block, each expected to exit as its comment says (0 unless
`# exit N`); its second (the click tool) run and its stream verified. What a newcomer copies
must do what the README says it does."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import aoi_bin, verdict

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_tool_lints_clean_and_its_stream_verifies(tmp_path: Path) -> None:
    aoi = aoi_bin()
    greet = tmp_path / "greet.py"
    greet.write_text(_blocks("python")[0], encoding="utf-8")
    greet.chmod(0o755)
    lint_block = next(b for b in _blocks("sh") if "aoi lint --tool ./greet.py" in b)
    # `pip install ./sdks/python` is the README's first step: this interpreter has the package.
    path = os.pathsep.join([str(Path(aoi).parent), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = dict(os.environ, PATH=path,
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    ran = 0
    for line in lint_block.splitlines():
        command, _, comment = line.partition("#")
        if not command.strip():
            continue
        expected = re.search(r"exit (\d+)", comment)
        done = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == (int(expected.group(1)) if expected else 0), (
            f"{command.strip()} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        ran += 1
    assert ran == 2


def test_the_readme_click_tool_runs_and_its_stream_verifies(tmp_path: Path) -> None:
    pytest.importorskip("click")
    tool = tmp_path / "greet_click.py"
    tool.write_text(_blocks("python")[1], encoding="utf-8")
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, str(tool), "hello", "Ada", "--output", "jsonl"], cwd=tmp_path,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert verdict(done.stdout) == 0
    assert b'"type":"greeting"' in done.stdout
    # Its discovery is derived from the click parameters.
    caps = subprocess.run([sys.executable, str(tool), "capabilities", "--output", "json"], cwd=tmp_path,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=True)
    assert any(c["name"] == "hello" for c in json.loads(caps.stdout)["commands"])
