"""Property: whatever a tool makes the Emitter write, ``aoi verify`` accepts (CONVENTIONS.md).

Seeded random call sequences drive :class:`machinemode.Emitter` the way tools do: domain
events with hostile strings (C0 and C1 controls, lone surrogates, quotes, escapes, emoji),
large and negative integers, floats, nesting, empty containers; warnings, item errors,
forwarded upstream errors, plans, progress, heartbeats, checks; misuse the emitter must refuse
(reserved names §8.1, an ``aoi:`` type §8.2, NaN, a second summary §13.1); and every way a
run ends (success, skipped, truncated with a cursor, partial, each failure reason, a
process-scope error, cancellation). Every stream must verify with no violation, and
``aoi verify`` must say the run succeeded exactly when its summary says ``ok:true``.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Tuple

import pytest
from conftest import aoi_bin

from machinemode import Emitter, Identity, errors

SEEDS = int(os.environ.get("MM_EMITTER_SEEDS", "400"))
TYPES = ["hit", "item", "created"]
NASTY = ["", "plain", "é", "日本語", "🚀", "\u0000", "\u001b[31m", "\u009b2J", "\u0085", "\ud800",
         "a\nb", "\r", "\"", "\\", "\u2028", "x" * 300, "\ufeff", "\u202e"]


def text(rng: random.Random) -> str:
    return "".join(rng.choice(NASTY) for _ in range(rng.randint(0, 4)))


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randint(0, 9 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**53, -(2**63), 2**70, rng.randint(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.0, -0.5, 1e-300, 1.7976931348623157e308, rng.uniform(-1e6, 1e6)])
    if kind in (4, 5):
        return text(rng)
    if kind in (6, 7):
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {text(rng) or "k": value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def fields(rng: random.Random) -> Dict[str, Any]:
    return {f"f{i}_{rng.choice(['a', 'é', 'x'])}": value(rng) for i in range(rng.randint(0, 4))}


def category(rng: random.Random) -> str:
    return rng.choice(list(errors.CATEGORIES))


def run_once(seed: int) -> Tuple[bytes, bool]:
    """One random run; its stream and whether its summary said ok:true."""
    rng = random.Random(seed)
    buf = io.BytesIO()
    out = Emitter(buf, Identity("prop", "1.0.0", "io.example.prop.events", "1.0.0"),
                  command="run", event_types=TYPES if rng.random() < 0.5 else None)
    if rng.random() < 0.3:
        out.meta(properties=fields(rng) or None)
    process_error = False
    for _ in range(rng.randint(0, 25)):
        op = rng.randint(0, 11)
        if op <= 3:
            out.emit(rng.choice(TYPES), fields(rng))
        elif op == 4:
            out.warning("SOME_WARNING", text(rng), **({"category": category(rng)} if rng.random() < .5 else {}))
        elif op == 5:
            out.error(errors.AoiError(category(rng), "ITEM_FAILED", text(rng), target=text(rng) or None),
                      scope="item")
        elif op == 6:
            out.forward(rng.choice(["aoi:error", "aoi:warning"]),
                        {"scope": "item", "category": category(rng), "code": "UP_X", "message": text(rng),
                         "retryable": False}, origin="up")
        elif op == 7:
            out.plan(rng.choice(["create", "delete", "none"]), text(rng) or "t", text(rng) or None)
        elif op == 8:
            out.progress(rng.randint(0, 100), rng.choice([None, 100]), rng.choice([None, "items"]))
        elif op == 9:
            out.heartbeat(rng.choice([None, 1000]))
        elif op == 10:
            out.check(text(rng) or "c", rng.random() < 0.5, rng.choice(["info", "warning", "error"]),
                      text(rng) or None)
        else:  # misuse: refused, and the stream stays whole
            bad = rng.choice([("aoi:summary", {}), ("hit", {"type": 1}), ("hit", {"aoi": {}}),
                              ("hit", {"x": float("nan")}), ("two words", {})])
            with pytest.raises(ValueError):
                out.emit(*bad)
    end = rng.randint(0, 7)
    if end == 0:
        out.summary(True)
    elif end == 1:
        out.summary(True, reason="skipped")
    elif end == 2:
        out.summary(True, truncated=True, next_cursor="c" + str(seed))
    elif end == 3:
        out.summary(False, partial=out.count > 0)
    elif end == 4:
        out.summary(False, reason=rng.choice(["failed", "cancelled", "timeout", "denied"]))
    elif end == 5:
        err = errors.AoiError(category(rng), "RUN_FAILED", text(rng))
        out.error(err, scope="process")
        process_error = True
        out.summary(False, reason=err.reason, caused_by=err.caused_by() if rng.random() < .5 else None)
    elif end == 6:
        out.summary(False, reason="cancelled", properties={"signal": "SIGINT"})
    else:
        out.summary(False, reason="failed", caused_by={"category": category(rng), "code": "UPSTREAM",
                                                        "retryable": False}, upstream={"tool": "up"})
    with pytest.raises(RuntimeError):  # nothing follows the summary (§13.1)
        out.emit("hit", {})
    summary = json.loads(buf.getvalue().splitlines()[-1])
    assert not (process_error and summary["ok"])
    return buf.getvalue(), summary["ok"]


def verify(stream: bytes) -> int:
    return subprocess.run([aoi_bin(), "verify", "--quiet", "-"], input=stream,
                          capture_output=True, timeout=60, check=False).returncode


def test_every_stream_the_emitter_writes_verifies() -> None:
    runs = [run_once(seed) for seed in range(SEEDS)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        codes: List[int] = list(pool.map(verify, [stream for stream, _ in runs]))
    wrong = [(seed, code, ok) for seed, ((_, ok), code) in enumerate(zip(runs, codes))
             if code != (0 if ok else 1)]
    assert not wrong, f"seed, aoi verify's exit, summary ok: {wrong[:10]}"
    # The generator reaches what it claims to: failures, successes, hostile bytes.
    assert {ok for _, ok in runs} == {True, False}
    everything = b"".join(stream for stream, _ in runs)
    assert b"\\u009b" in everything and b"\x1b" not in everything and b"\\ud800" not in everything
