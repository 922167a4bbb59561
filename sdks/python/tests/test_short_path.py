"""The SDK's short path, held to what it promises a tool author (the Python half of the Rust
SDK's tests/it/short_path.rs): ``examples/notes.py`` (a bounded, filtered list, a get, an
idempotent add with a dry run, a confirmed delete, human and machine mode) has no paging,
idempotency, confirmation or human-output code of its own, fits in 80 lines of code, and
``aoi lint`` passes it with no configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import ROOT, aoi_bin

from machinemode import AoiError, JsonFile

NOTES = ROOT / "examples" / "notes.py"


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), XDG_STATE_HOME=str(tmp / "state"), NO_COLOR="1")
    return subprocess.run([sys.executable, str(NOTES), *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, check=False)


def events(done: subprocess.CompletedProcess[str]) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_notes_example_leaves_paging_writes_and_human_output_to_the_sdk() -> None:
    source = NOTES.read_text(encoding="utf-8")
    for name in ("CursorCodec", "Idempotency", "IdempotencyStore", "require_confirm", "next_cursor",
                 "truncated", "print(", "sys.stdout", "replay", "flock", "os.replace", ".plan("):
        assert name not in source, f"examples/notes.py does by hand what the SDK owns: {name}"
    code = [line for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(code) <= 80, f"examples/notes.py has {len(code)} lines of code"


def test_aoi_lint_passes_the_notes_example_with_no_configuration(tmp_path: Path) -> None:
    # The example's `#!/usr/bin/env python3` is this interpreter, which has the package.
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    done = subprocess.run([aoi_bin(), "lint", "--format", "jsonl", "--tool", str(NOTES)], cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600, check=False)
    summary = json.loads(done.stdout.splitlines()[-1])
    results = summary["properties"]["results"]
    assert (done.returncode, results["fail"], results["could_not_run"]) == (0, 0, 0), done.stdout[-4000:]
    assert results["pass"] >= 40, results


def test_notes_pages_replays_and_refuses_alike_in_both_modes(tmp_path: Path) -> None:
    for text in ("a", "b", "c"):
        assert run(tmp_path, "add", text).returncode == 0
    assert run(tmp_path, "rm", "1", "--confirm").returncode == 0
    seen: List[int] = []
    cursor: List[str] = []
    while True:
        got = events(run(tmp_path, "list", "--limit", "1", "--output", "jsonl", *cursor))
        seen += [e["n"] for e in got if e["type"] == "note"]
        if not got[-1].get("next_cursor"):
            break
        cursor = ["--cursor", got[-1]["next_cursor"]]
    assert seen == [2, 3]
    human = run(tmp_path, "list", "--limit", "1")
    assert "more: " in human.stdout and "--cursor " in human.stdout, human.stdout
    # A dry run plans and changes nothing; a key replays.
    dry = events(run(tmp_path, "add", "d", "--dry-run", "--output", "jsonl"))
    assert [e["type"] for e in dry] == ["aoi:meta", "aoi:plan", "aoi:summary"]
    first = events(run(tmp_path, "add", "e", "--idempotency-key", "k1", "--output", "jsonl"))
    again = events(run(tmp_path, "add", "e", "--idempotency-key", "k1", "--output", "jsonl"))
    assert [e["n"] for e in first if e["type"] == "note"] == [e["n"] for e in again if e["type"] == "note"] == [4]
    assert again[-1]["properties"] == {"idempotent_replay": True}
    assert len(JsonFile(tmp_path / "data" / "notes" / "notes.json").read(list)) == 3
    # A refusal and a missing note exit alike in both modes.
    for args in (["rm", "2"], ["get", "9"], ["rm", "9", "--confirm"]):
        human_status = run(tmp_path, *args).returncode
        machine = run(tmp_path, *args, "--output", "jsonl")
        assert human_status == machine.returncode != 0, args
        assert events(machine)[-1]["type"] == "aoi:summary"
    assert run(tmp_path, "rm", "2").returncode == 77


def test_two_concurrent_adds_with_one_key_apply_once_and_replay(tmp_path: Path) -> None:
    results: List[List[Dict[str, Any]]] = []
    threads = [threading.Thread(target=lambda: results.append(
        events(run(tmp_path, "add", "same", "--idempotency-key", "k2", "--output", "jsonl"))))
        for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    replays = [r[-1].get("properties", {}).get("idempotent_replay", False) for r in results]
    assert sorted(replays) == [False, True], results
    assert len(JsonFile(tmp_path / "data" / "notes" / "notes.json").read(list)) == 1


def test_a_json_file_keeps_every_concurrent_update_and_refuses_what_it_did_not_write(tmp_path: Path) -> None:
    store = JsonFile(tmp_path / "sub" / "doc.json")

    def bump() -> None:
        for _ in range(25):
            with store.update(list) as doc:
                doc.append(1)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.read(list)) == 100
    store.path.write_text("{not json", encoding="utf-8")
    with pytest.raises(AoiError) as refused:
        store.read(list)
    assert (refused.value.category, refused.value.code) == ("io", "DATA_FILE_FAILED")
    assert store.path.read_text(encoding="utf-8") == "{not json"
