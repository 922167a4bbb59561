"""Property: ``consumer.read_stream`` and ``aoi verify`` agree on every generated stream.

Streams are generated with a seeded :mod:`random`: conforming runs (domain events, item
errors, warnings, forwarded errors, process failures, cancellation, truncation with a
cursor) and the same runs damaged (a lost line §8.1, a cut last line §2, no summary §4,
lines after the summary §13.1, a changed run, counters that do not reconcile §8.3, broken
error fields §9.1, v0.2 shapes §5.2, ...). Some are replayed by a process that exits
non-zero or is killed (§4.1, §6), through ``aoi verify -- sh -c ...``. For every stream
both readers must say the same thing: a violation, or not; and, when not, whether it
succeeded.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from machinemode.consumer import SUCCEEDED, VIOLATION, read_stream

AOI_BIN = os.environ.get("AOI_BIN", "/work/main/target/debug/aoi")
SEEDS = int(os.environ.get("MM_PROPERTY_SEEDS", "1500"))

pytestmark = pytest.mark.skipif(
    not (os.path.isfile(AOI_BIN) and os.access(AOI_BIN, os.X_OK)),
    reason=f"aoi verify is the oracle and {AOI_BIN} is missing (set AOI_BIN)",
)

Ev = Dict[str, Any]
IDENTITY = {
    "tool": "gen",
    "tool_version": "0.1.0",
    "aoi_version": "1.0-alpha",
    "schema_name": "com.example.gen.events",
    "schema_version": "1.0.0",
}
CATEGORIES = ["validation", "not_found", "rate_limited", "unavailable", "timeout", "io", "internal", "conflict"]
RETRYABLE = {"rate_limited", "unavailable", "timeout"}


def _error(rng: random.Random, scope: str, origin: Optional[str] = None) -> Ev:
    category = rng.choice(CATEGORIES)
    retryable = category in RETRYABLE
    e: Ev = {"type": "aoi:error", "scope": scope, "category": category, "code": "E_" + category.upper(),
             "message": f"{category} happened", "retryable": retryable}
    if retryable and rng.random() < 0.5:
        e["retry_after_ms"] = rng.randint(0, 9000)
    if scope == "item":
        e["item_index"] = rng.randint(0, 50)
    if origin:
        e["origin"] = origin
    return e


def conforming(rng: random.Random) -> Tuple[List[Ev], str]:
    """A conforming run, as events without envelopes, and the kind of run it is."""
    kind = rng.choice(["ok", "ok", "items", "process", "cancelled", "truncated", "upstream", "empty"])
    body: List[Ev] = []
    errors = warnings = 0
    for i in range(0 if kind == "empty" else rng.randint(0, 12)):
        r = rng.random()
        if r < 0.6:
            body.append({"type": "hit", "rank": i, "id": f"doc_{i}", "title": "caf\u00e9 \u2028 \"q\""})
        elif r < 0.7:
            body.append({"type": "aoi:warning", "code": "SLOW", "message": "slow"})
            warnings += 1
        elif r < 0.8:
            body.append({"type": "aoi:progress", "completed": i, "total": 12})
        elif r < 0.85:
            body.append({"type": "aoi:check", "name": f"c{i}", "ok": True, "severity": "info"})
        elif kind in ("items", "upstream"):
            body.append(_error(rng, "item", "up" if kind == "upstream" else None))
            errors += 1
    summary: Ev = {"type": "aoi:summary", "ok": True, **IDENTITY}
    if kind == "items" and errors:
        summary.update(ok=True, partial=True)
    elif kind == "process":
        e = _error(rng, "process")
        body.append(e)
        errors += 1
        summary.update(ok=False, reason="failed")
    elif kind == "cancelled":
        summary.update(ok=False, reason="cancelled")
    elif kind == "truncated":
        summary.update(truncated=True, next_cursor="b3BhcXVl")
    elif kind == "upstream" and rng.random() < 0.6:
        e = _error(rng, "process", "up")
        body.append(e)
        errors += 1
        cb = {k: e[k] for k in ("origin", "category", "code", "retryable", "retry_after_ms") if k in e}
        summary.update(ok=False, reason="failed", caused_by=cb, upstream={"tool": "up", "tool_version": "1"})
    summary.update(
        count=sum(1 for e in body if not e["type"].startswith("aoi:")),
        error_count=errors + (rng.randint(0, 2) if kind == "upstream" else 0),
        warning_count=warnings,
    )
    return [{"type": "aoi:meta", **IDENTITY, "command": "search"}, *body, summary], kind


def envelope(events: List[Ev], run: str = "01JZQ7X4TQ9") -> List[Ev]:
    out = []
    for seq, e in enumerate(events):
        e = dict(e)
        e["aoi"] = {"seq": seq, "run": run}
        if e["type"] == "aoi:summary":
            e["event_count"] = len(events)
        out.append(e)
    return out


def lines_of(events: List[Ev]) -> List[bytes]:
    return [json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for e in events]


Mutation = Callable[[random.Random, List[Ev]], List[bytes]]


def _middle(rng: random.Random, events: List[Ev]) -> int:
    return rng.randint(1, max(1, len(events) - 2)) if len(events) > 2 else 0


def _summary(events: List[Ev]) -> Ev:
    return events[-1]


def m_lose_line(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    del ev[_middle(rng, ev)]
    return lines_of(ev)


def m_cut_last_line(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    lines = lines_of(ev)
    last = lines[-1]
    lines[-1] = last[: rng.randint(1, len(last) - 1)]
    return lines


def m_no_summary(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    return lines_of(ev[:-1])


def m_after_summary(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    ev.append({"type": "hit", "aoi": {"seq": len(ev), "run": ev[0]["aoi"]["run"]}, "id": "late"})
    return lines_of(ev)


def m_repeat_line(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    i = _middle(rng, ev)
    ev.insert(i, copy.deepcopy(ev[i]))
    return lines_of(ev)


def m_run_changes(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    ev[rng.randrange(len(ev))]["aoi"]["run"] = "OTHER"
    return lines_of(ev)


def m_seq_removed(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    del ev[rng.randrange(len(ev))]["aoi"]["seq"]
    return lines_of(ev)


def m_seq_shift(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    for e in ev:
        e["aoi"]["seq"] += 1
    return lines_of(ev)


def m_event_count(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    _summary(ev)["event_count"] += rng.choice([-1, 1, 5])
    return lines_of(ev)


def m_count(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    _summary(ev)["count"] += 1
    return lines_of(ev)


def m_error_count_low(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    s = _summary(ev)
    if s["error_count"]:
        s["error_count"] = 0
    else:
        s["warning_count"] = -1
    return lines_of(ev)


def m_meta_not_first(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    if len(ev) > 2:
        ev[0]["aoi"], ev[1]["aoi"] = ev[1]["aoi"], ev[0]["aoi"]
        ev[0], ev[1] = ev[1], ev[0]
    else:
        ev.insert(1, dict(ev[0]))
    return lines_of(ev)


def m_garbage(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    lines = lines_of(ev)
    junk = rng.choice([b"\n", b"   \n", b"Loading...\n", b"[1,2]\n", b'{"no":"type"}\n', b'{"type":3}\n',
                       b"\x1b[31mred\x1b[0m\n", b'{"type":"hit","x":NaN}\n', b"\xff\xfe\n"])
    lines.insert(rng.randint(1, len(lines) - 1), junk)
    return lines


def m_break_error(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    errs = [e for e in ev if e["type"] == "aoi:error"]
    if not errs:
        e = _error(rng, "item")
        e["aoi"] = {"seq": 0, "run": ev[0]["aoi"]["run"]}
        ev.insert(1, e)
        ev = envelope([{k: v for k, v in x.items() if k not in ("aoi", "event_count")} for x in ev])
        _summary(ev)["error_count"] = _summary(ev).get("error_count", 0) + 1
        errs = [x for x in ev if x["type"] == "aoi:error"]
    e = rng.choice(errs)
    how = rng.randrange(6)
    if how == 0:
        del e["retryable"]
    elif how == 1:
        e["retryable"], e["retry_after_ms"] = False, 100
    elif how == 2:
        e["category"] = rng.choice(["temporary", "partial", "bogus"])
    elif how == 3:
        e["code"] = "lower_case"
    elif how == 4:
        e["message"] = "two\nlines"
    else:
        e["upstream"] = {"protocol": "http", "status": 503}
    return lines_of(ev)


def m_break_summary(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    s = _summary(ev)
    how = rng.randrange(7)
    if how == 0:
        del s["ok"]
    elif how == 1:
        s.update(ok=False)
        s.pop("reason", None)
    elif how == 2:
        s["ok"] = "true"
    elif how == 3:
        s["vendor_field"] = 1
    elif how == 4:
        s["reason"] = "skipped" if s["ok"] is False else "failed"
    elif how == 5:
        s["upstream"] = None
    else:
        s["tool_version"] = "9.9.9"
    return lines_of(ev)


def m_second_summary(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    extra = copy.deepcopy(ev[-1])
    extra["aoi"]["seq"] += 1
    ev.append(extra)
    return lines_of(ev)


def m_flat_envelope(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    e = rng.choice(ev)
    e.update(e.pop("aoi"))
    return lines_of(ev)


def m_unknown_framework(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    ev.insert(1, {"type": "aoi:novel", "aoi": {}})
    ev = envelope([{k: v for k, v in x.items() if k not in ("aoi", "event_count")} for x in ev])
    return lines_of(ev)


def m_newer_minor(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    # §5 / docs/verifier.md: a 1.x stream may carry what 1.0-alpha does not define; no success with it.
    for e in ev:
        if e["type"] in ("aoi:meta", "aoi:summary"):
            e["aoi_version"] = "1.1"
    ev.insert(1, {"type": "aoi:novel"})
    ev = envelope([{k: v for k, v in x.items() if k not in ("aoi", "event_count")} for x in ev])
    _summary(ev)["later_field"] = True
    return lines_of(ev)


def m_crlf(rng: random.Random, ev: List[Ev]) -> List[bytes]:
    return [line[:-1] + b"\r\n" for line in lines_of(ev)]


MUTATIONS: List[Optional[Mutation]] = [
    None, None, None, None, m_lose_line, m_cut_last_line, m_no_summary, m_after_summary, m_repeat_line,
    m_run_changes, m_seq_removed, m_seq_shift, m_event_count, m_count, m_error_count_low, m_meta_not_first,
    m_garbage, m_break_error, m_break_summary, m_second_summary, m_flat_envelope, m_unknown_framework,
    m_newer_minor, m_crlf,
]


@dataclass
class Case:
    seed: int
    label: str
    data: bytes
    exit: Optional[int]  # None: read from a file; 0..n: the exit status; -9: killed


def generate(seed: int) -> Case:
    rng = random.Random(seed)
    events, kind = conforming(rng)
    events = envelope(events)
    mutation = rng.choice(MUTATIONS)
    lines = mutation(rng, events) if mutation is not None else lines_of(events)
    exit_: Optional[int] = None
    r = rng.random()
    if r < 0.1:
        exit_ = 0
    elif r < 0.2:
        exit_ = rng.choice([1, 65, 74, 130])
    elif r < 0.25:
        exit_ = -9
    label = f"{kind}/{mutation.__name__ if mutation else 'conforming'}/exit={exit_}"
    return Case(seed, label, b"".join(lines), exit_)


def oracle(case: Case, tmp: Path) -> int:
    path = tmp / f"s{case.seed}.jsonl"
    path.write_bytes(case.data)
    if case.exit is None:
        argv = [AOI_BIN, "verify", "-q", str(path)]
    elif case.exit == -9:
        argv = [AOI_BIN, "verify", "-q", "--", "sh", "-c", f'cat "{path}"; kill -9 $$']
    else:
        argv = [AOI_BIN, "verify", "-q", "--", "sh", "-c", f'cat "{path}"; exit {case.exit}']
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=30).returncode


def ours(case: Case) -> str:
    if case.exit == -9:
        return read_stream(case.data, signal=9).conclusion.verdict
    return read_stream(case.data, exit_code=case.exit).conclusion.verdict


def test_read_stream_and_aoi_verify_agree_on_every_generated_stream() -> None:
    cases = [generate(seed) for seed in range(SEEDS)]
    tmp = Path(tempfile.mkdtemp(prefix="mm-prop-"))
    try:
        with ThreadPoolExecutor(max_workers=max(2, (os.cpu_count() or 2) * 2)) as pool:
            codes = list(pool.map(lambda c: oracle(c, tmp), cases))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    disagreements = []
    verdicts: Dict[str, int] = {}
    for case, rc in zip(cases, codes):
        verdict = ours(case)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        theirs = {0: "ok", 1: "not ok", 65: VIOLATION}.get(rc, f"rc {rc}")
        mine = VIOLATION if verdict == VIOLATION else ("ok" if verdict in (SUCCEEDED, "unterminated") else "not ok")
        if mine != theirs:
            disagreements.append(f"seed {case.seed} {case.label}: read_stream {verdict}, aoi verify {theirs}")
    assert not disagreements, "\n".join(disagreements[:30]) + f"\n({len(disagreements)} of {len(cases)})"
    # The generator must exercise both sides, or agreement proves nothing.
    assert verdicts.get(VIOLATION, 0) > SEEDS // 4, verdicts
    assert verdicts.get(SUCCEEDED, 0) > SEEDS // 20, verdicts
    assert verdicts.get("failed", 0) + verdicts.get("killed", 0) > SEEDS // 20, verdicts


def test_every_conforming_run_is_read_as_conforming() -> None:
    """§4, §8.3: what the generator calls conforming is no violation, and its verdict follows ok."""
    for seed in range(SEEDS):
        rng = random.Random(seed)
        events, kind = conforming(rng)
        reading = read_stream(b"".join(lines_of(envelope(events))), exit_code=0 if events[-1]["ok"] else 1)
        assert reading.conclusion.verdict == (SUCCEEDED if events[-1]["ok"] else "failed"), (seed, kind,
                                                                                            reading.conclusion.findings)
