"""Tests of machinemode.idempotency (AOI-CLI §14.4, §9.2, §9.3, §18.2 check 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from machinemode import AoiError
from machinemode.idempotency import (
    FileIdempotencyStore,
    Idempotency,
    IdempotencyConflict,
    IdempotencyRecord,
    MemoryIdempotencyStore,
    check_key,
    default_state_dir,
    request_hash,
)

EVENTS: List[Dict[str, Any]] = [{"type": "aoi:meta", "aoi": {"seq": 0, "run": "r"}, "tool": "t"},
          {"type": "created", "aoi": {"seq": 1, "run": "r"}, "id": "n1"},
          {"type": "aoi:summary", "aoi": {"seq": 2, "run": "r"}, "ok": True, "count": 1, "event_count": 3}]
SUMMARY = EVENTS[-1]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_default_directory_is_under_xdg_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """$XDG_STATE_HOME/<tool>/idempotency/, ~/.local/state when unset or relative (XDG Base Directory)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_dir("notes") == tmp_path / "notes" / "idempotency"
    monkeypatch.setenv("XDG_STATE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_dir("notes") == tmp_path / ".local" / "state" / "notes" / "idempotency"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_state_dir("notes") == tmp_path / ".local" / "state" / "notes" / "idempotency"


def test_the_request_hash_is_canonical() -> None:
    assert request_hash("create", {"a": 1, "b": [1, 2]}) == request_hash("create", {"b": [1, 2], "a": 1})
    assert request_hash("create", {"a": 1}) != request_hash("create", {"a": 2})
    assert request_hash("create", {"a": 1}) != request_hash("update", {"a": 1})


def test_a_replay_returns_the_recorded_result_without_running_again(tmp_path: Path) -> None:
    """§18.2 check 7: replay returns the prior result without doubling the effect."""
    idem = Idempotency(FileIdempotencyStore(tmp_path))
    req = request_hash("create", {"text": "hi"})
    effects: List[str] = []

    def create() -> IdempotencyRecord:
        found = idem.lookup("k1", req)
        if found is not None:
            return found
        effects.append("created")
        return idem.record("k1", req, EVENTS, SUMMARY)

    first, second = create(), create()
    assert effects == ["created"]
    assert second.events == first.events == ({"type": "created", "id": "n1"},)  # no envelope, no framework events
    assert second.summary == {"ok": True, "count": 1}
    assert Idempotency.replay_events(second) == [{"type": "created", "id": "n1"}]
    assert Idempotency.replay_properties(second) == {"idempotent_replay": True}


def test_the_same_key_with_another_request_is_a_conflict(tmp_path: Path) -> None:
    """§9.2 conflict: the identical invocation is not retryable."""
    idem = Idempotency(FileIdempotencyStore(tmp_path))
    idem.record("k1", request_hash("create", {"text": "a"}), EVENTS, SUMMARY)
    with pytest.raises(IdempotencyConflict) as e:
        idem.lookup("k1", request_hash("create", {"text": "b"}))
    assert (e.value.category, e.value.code, e.value.retryable) == ("conflict", "IDEMPOTENCY_KEY_REUSED", False)


def test_a_record_expires() -> None:
    clock = Clock()
    store = MemoryIdempotencyStore()
    idem = Idempotency(store, ttl=60, clock=clock)
    idem.record("k", "h", EVENTS, SUMMARY)
    clock.now += 59
    assert idem.lookup("k", "h") is not None
    clock.now += 1
    assert idem.lookup("k", "h") is None and "k" not in store.records
    # An expired key may be used for a different request.
    idem.record("k", "other", EVENTS, SUMMARY)
    assert idem.lookup("k", "other") is not None


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path: Path) -> None:
    store = FileIdempotencyStore(tmp_path / "deep" / "dir")
    idem = Idempotency(store)
    for i in range(5):
        idem.record(f"k{i}", "h", EVENTS, SUMMARY)
    names = sorted(os.listdir(tmp_path / "deep" / "dir"))
    assert len(names) == 5 and all(n.endswith(".json") and not n.startswith(".tmp-") for n in names)
    for n in names:
        json.loads((tmp_path / "deep" / "dir" / n).read_text())


def test_a_key_is_never_a_path(tmp_path: Path) -> None:
    """The key is caller input: ../ in it must not escape the store."""
    store = FileIdempotencyStore(tmp_path / "s")
    Idempotency(store).record("../../escape", "h", EVENTS, SUMMARY)
    assert os.listdir(tmp_path) == ["s"]
    assert store.get("../../escape") is not None


def test_a_damaged_record_is_treated_as_absent(tmp_path: Path) -> None:
    """A half-written or foreign file must not crash the tool nor replay garbage."""
    store = FileIdempotencyStore(tmp_path)
    Idempotency(store).record("k", "h", EVENTS, SUMMARY)
    (path,) = tmp_path.iterdir()
    for junk in ["{", "[]", '{"format": 1}', json.dumps({"format": 99})]:
        path.write_text(junk)
        assert store.get("k") is None
    store.delete("k")
    store.delete("k")  # idempotent


def test_any_store_fitting_the_protocol_works() -> None:
    store = MemoryIdempotencyStore()
    idem = Idempotency(store)
    idem.record("k", "h", EVENTS, SUMMARY)
    assert idem.lookup("k", "h") == store.records["k"]


@pytest.mark.parametrize("key", ["", "   ", "a" * 256, "é" * 128, "tab\there", "nl\n", "\x7f"])
def test_an_unusable_key_is_a_usage_error(key: str) -> None:
    with pytest.raises(AoiError) as e:
        check_key(key)
    assert (e.value.category, e.value.code, e.value.field, e.value.exit_code) == \
        ("usage", "IDEMPOTENCY_KEY_INVALID", "idempotency_key", 64)


@pytest.mark.parametrize("key", ["k", "a" * 255, "é" * 127, "order-42 retry", "日本"])
def test_a_printable_key_of_at_most_255_bytes_is_kept(key: str) -> None:
    assert check_key(key) == key


def test_a_conflict_is_an_aoi_error_the_harness_reports() -> None:
    err = IdempotencyConflict("k")
    assert isinstance(err, AoiError) and err.exit_code == 65 and err.field == "idempotency_key"


_RUN = """
import os, sys, time
from pathlib import Path
from machinemode.idempotency import FileIdempotencyStore, Idempotency, request_hash
store = FileIdempotencyStore(Path(sys.argv[1]))
effects = Path(sys.argv[2])
idem = Idempotency(store)
req = request_hash("create", {"text": "hi"})
with store.lock("k1"):
    if idem.lookup("k1", req) is not None:
        print("replay")
        sys.exit(0)
    with open(effects, "a") as f:
        f.write("effect\\n")
    if sys.argv[3] == "die":
        os._exit(9)
    time.sleep(float(sys.argv[3]))
    idem.record("k1", req, [{"type": "created", "id": "n1"}], {"ok": True, "count": 1})
    print("ran")
"""


def _start(store: Path, effects: Path, how: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _RUN, str(store), str(effects), how],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_with_one_key_apply_the_effect_once_and_the_second_replays(tmp_path: Path) -> None:
    """A CLI is one process per run: the key's lock makes the second wait, then replay."""
    import time

    effects = tmp_path / "effects"
    first = _start(tmp_path / "store", effects, "0.7")
    time.sleep(0.2)
    second = _start(tmp_path / "store", effects, "0")
    outs = [p.communicate(timeout=30)[0].strip() for p in (first, second)]
    assert outs == ["ran", "replay"]
    assert effects.read_text() == "effect\n"


def test_a_key_whose_run_died_after_its_effect_is_refused_as_outcome_unknown(tmp_path: Path) -> None:
    """§9.3: the producer cannot tell whether the effect was applied, so not retryable."""
    effects = tmp_path / "effects"
    died = _start(tmp_path / "store", effects, "die")
    died.communicate(timeout=30)
    assert died.returncode == 9
    store = FileIdempotencyStore(tmp_path / "store")
    with pytest.raises(AoiError) as refused, store.lock("k1"):
        pass
    assert (refused.value.category, refused.value.code, refused.value.retryable) == (
        "conflict", "IDEMPOTENCY_OUTCOME_UNKNOWN", False)
    assert effects.read_text() == "effect\n"
    # Once the marker is older than the time to live, the key may be used afresh.
    with FileIdempotencyStore(tmp_path / "store", ttl=-1).lock("k1"):
        pass
