"""Same bytes as Rust: every scenario of ``tests/scenarios/`` (repository root) played by
``crates/aoi/examples/scenario.rs`` (the Rust SDK) and ``scenario_tool.py`` (this SDK), as real
processes, gives the same stream byte for byte once ``aoi.run``, ``aoi.t`` and the summary's
``elapsed_ms`` are set aside, and the same exit status; both streams pass ``aoi verify``.

The rules the two SDKs share where the spec says nothing are in docs/discovery.md,
"Serialization"; the scenario format is in tests/scenarios/README.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import verdict

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = sorted((REPO / "tests" / "scenarios").glob("*.json"))
TOOL = Path(__file__).with_name("scenario_tool.py")
CALLS = ("emit", "warning", "error", "forward", "plan", "progress", "heartbeat", "check", "consumed", "input", "flush",
         "signal", "sleep_ms")

# The envelope as both SDKs open every line: type, then aoi with seq, run and maybe t.
_ENVELOPE = re.compile(rb'^\{"type":"(?:[^"\\]|\\.)*","aoi":\{"seq":\d+,"run":"([^"\\]*)"(?:,"t":(\d+))?')
_ELAPSED = re.compile(rb'"elapsed_ms":(\d+)')
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def _sources_newer_than(exe: Path) -> bool:
    built = exe.stat().st_mtime
    roots = [REPO / "crates" / "aoi" / "src", REPO / "crates" / "aoi" / "examples" / "scenario.rs",
             REPO / "crates" / "aoi" / "Cargo.toml", REPO / "Cargo.lock"]
    for root in roots:
        files = [root] if root.is_file() else list(root.rglob("*.rs"))
        if any(f.stat().st_mtime > built for f in files):
            return True
    return False


@pytest.fixture(scope="module")
def rust_tool() -> Path:
    """target/debug/examples/scenario (CARGO_TARGET_DIR when set), built when missing or older
    than the SDK's sources."""
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    exe = target / "debug" / "examples" / "scenario"
    if not exe.exists() or _sources_newer_than(exe):
        subprocess.run(["cargo", "build", "-q", "--locked", "-p", "aoi", "--example", "scenario"],
                       cwd=REPO, check=True, timeout=1800)
    assert exe.exists(), exe
    return exe


def play(tool: List[str], scenario: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "sdks" / "python" / "src"))
    return subprocess.run([*tool, str(scenario)], capture_output=True, timeout=120, check=False, env=env,
                          stdin=subprocess.DEVNULL)


def python_tool() -> List[str]:
    return [sys.executable, str(TOOL)]


def _pairs(pairs: List[Tuple[str, Any]]) -> List[Tuple[str, Any]]:
    return pairs  # an object as its key-value pairs, in the order written


def parsed(line: bytes) -> List[Tuple[str, Any]]:
    """One line as ordered pairs, with aoi.run, aoi.t and the summary's elapsed_ms replaced."""
    event: List[Tuple[str, Any]] = json.loads(line, object_pairs_hook=_pairs)
    out = []
    is_summary = ("type", "aoi:summary") in event
    for key, value in event:
        if key == "aoi":
            value = [(k, "RUN" if k == "run" else 0 if k == "t" else v) for k, v in value]
        elif key == "elapsed_ms" and is_summary:
            value = 0
        out.append((key, value))
    return out


def masked(line: bytes) -> bytes:
    """The line's bytes with the values of aoi.run, aoi.t and the summary's elapsed_ms cut out,
    every other byte as written."""
    m = _ENVELOPE.match(line)
    assert m is not None, line
    spans = [m.span(1)] + ([m.span(2)] if m.group(2) is not None else [])
    if line.startswith(b'{"type":"aoi:summary"'):
        found = list(_ELAPSED.finditer(line))
        assert len(found) == 1, line
        spans.append(found[0].span(1))
    for start, end in sorted(spans, reverse=True):
        line = line[:start] + b"_" + line[end:]
    return line


def lines_of(stream: bytes) -> List[bytes]:
    assert stream.endswith(b"\n"), stream[-200:]
    return stream[:-1].split(b"\n")


def check_varying(lines: List[bytes]) -> None:
    """The values set aside are what they must be: one ULID run, t counting up, elapsed_ms."""
    events = [json.loads(x) for x in lines]
    runs = {e["aoi"]["run"] for e in events}
    assert len(runs) == 1 and _ULID.match(runs.pop())
    ts = [e["aoi"]["t"] for e in events if "t" in e["aoi"]]
    assert all(isinstance(t, int) and t >= 0 for t in ts) and ts == sorted(ts)
    assert isinstance(events[-1].get("elapsed_ms"), int) and events[-1]["elapsed_ms"] >= 0


def load(scenario: Path) -> Dict[str, Any]:
    with scenario.open(encoding="utf-8") as f:
        return dict(json.load(f))


def test_the_corpus_covers_every_call_and_every_ending() -> None:
    assert 15 <= len(SCENARIOS) <= 40
    scenarios = [load(s) for s in SCENARIOS]
    used = {name for s in scenarios for call in s.get("calls", []) for name in call}
    assert used == set(CALLS)
    ends = {k for s in scenarios for k in s["end"]}
    assert {"ok", "fail", "replay", "denied", "reason", "partial", "truncated", "next_cursor", "caused_by",
            "upstream", "properties", "exit_code"} <= ends
    categories = {s["end"]["fail"]["category"] for s in scenarios if "fail" in s["end"]}
    exits = {s["expect"]["exit_code"] for s in scenarios}
    # One process-scope failure per exit family of §6.
    assert {"usage", "validation", "not_found", "unavailable", "internal", "io", "rate_limited", "authn",
            "authz", "config"} <= categories
    assert {0, 1, 64, 65, 66, 69, 70, 74, 75, 77, 78, 124, 130, 143} <= exits


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_rust_and_python_write_the_same_bytes(scenario: Path, rust_tool: Path) -> None:
    expect = load(scenario)["expect"]
    rust = play([str(rust_tool)], scenario)
    py = play(python_tool(), scenario)
    assert (rust.stderr, py.stderr) == (b"", b"")
    r, p = lines_of(rust.stdout), lines_of(py.stdout)
    for i, (a, b) in enumerate(zip(r, p)):
        assert parsed(a) == parsed(b), f"line {i}, parsed:\n rust   {a.decode()}\n python {b.decode()}"
        assert masked(a) == masked(b), f"line {i}, bytes:\n rust   {a!r}\n python {b!r}"
    assert len(r) == len(p)
    for lines in (r, p):
        check_varying(lines)
    assert rust.returncode == py.returncode == expect["exit_code"]
    summary = json.loads(r[-1])
    assert summary["type"] == "aoi:summary" and summary["ok"] is expect["ok"]
    for stream in (rust.stdout, py.stdout):
        assert verdict(stream) == (0 if expect["ok"] else 1)


@pytest.mark.parametrize("broken", [
    {"calls": [{"emit": {"type": "x"}, "warning": {}}]},
    {"calls": [{"frobnicate": {}}]},
    {"calls": [{"warning": {"code": "W", "message": "m", "colour": "red"}}]},
    {"end": {"ok": True, "next_cursor": "c"}},
    {"end": {"fail": {"category": "not_found", "code": "X", "message": "m", "colour": "red"}}},
])
def test_both_tools_refuse_a_scenario_outside_the_format(broken: Dict[str, Any], tmp_path: Path,
                                                           rust_tool: Path) -> None:
    scenario = {"identity": {"tool": "t", "tool_version": "1", "schema_name": "s", "schema_version": "1.0.0"},
                "command": "c", "calls": [], "end": {"ok": True}, **broken}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    for proc in (play([str(rust_tool)], path), play(python_tool(), path)):
        assert (proc.returncode, proc.stdout) == (2, b""), proc
        assert proc.stderr.startswith(b"scenario: ") and proc.stderr.count(b"\n") == 1, proc.stderr
