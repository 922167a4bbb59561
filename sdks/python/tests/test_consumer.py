"""Tests of machinemode.consumer: one per rule, each citing its AOI-CLI section."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

from machinemode.consumer import (
    FAILED,
    KILLED,
    SUCCEEDED,
    UNTERMINATED,
    VIOLATION,
    CheckEvent,
    DomainEvent,
    ErrorEvent,
    FrameworkEvent,
    Meta,
    ProgressEvent,
    Summary,
    WarningEvent,
    read_stream,
    spawn,
    split_lines,
)

AOI_BIN = os.environ.get("AOI_BIN", "/work/main/target/debug/aoi")
RUN = "01JZQ7X4TQ9"
META: Dict[str, Any] = {"type": "aoi:meta", "tool": "t", "tool_version": "1", "aoi_version": "1.0-alpha",
                        "schema_name": "com.example.t", "schema_version": "1.0.0"}


def stream(*events: Dict[str, Any], summary: Optional[Dict[str, Any]] = None, meta: bool = True) -> bytes:
    evs: List[Dict[str, Any]] = ([dict(META)] if meta else []) + [dict(e) for e in events]
    s: Dict[str, Any] = {"type": "aoi:summary", "ok": True}
    s.update(summary or {})
    evs.append(s)
    domain = sum(1 for e in evs if not e["type"].startswith("aoi:"))
    s.setdefault("count", domain)
    s.setdefault("event_count", len(evs))
    for i, e in enumerate(evs):
        e.setdefault("aoi", {"seq": i, "run": RUN})
    return b"".join(json.dumps(e).encode() + b"\n" for e in evs)


def codes(data: bytes, **kw: Any) -> List[str]:
    return [f.code for f in read_stream(data, **kw).conclusion.violations]


def verdict(data: bytes, **kw: Any) -> str:
    return read_stream(data, **kw).conclusion.verdict


def oracle(data: bytes) -> Optional[int]:
    if not os.access(AOI_BIN, os.X_OK):
        return None
    return subprocess.run([AOI_BIN, "verify", "-q"], input=data, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


# -- typed events


def test_events_are_typed_and_unknown_domain_types_are_kept_raw() -> None:
    """§8.2, §8.3: framework events get dataclasses; a domain event keeps its fields raw."""
    data = stream({"type": "hit", "id": "d1"}, {"type": "aoi:warning", "code": "SLOW", "message": "slow"},
                  {"type": "aoi:progress", "completed": 1, "total": 2}, {"type": "aoi:check", "name": "c", "ok": True},
                  {"type": "aoi:error", "scope": "item", "category": "rate_limited", "code": "RL", "message": "m",
                   "retryable": True, "retry_after_ms": 10},
                  {"type": "aoi:heartbeat"}, summary={"error_count": 1, "warning_count": 1, "ok": False,
                                                      "reason": "failed"})
    r = read_stream(data)
    kinds = [type(e) for e in r.events]
    assert kinds == [Meta, DomainEvent, WarningEvent, ProgressEvent, CheckEvent, ErrorEvent, FrameworkEvent, Summary]
    hit = r.events[1]
    assert isinstance(hit, DomainEvent) and hit.raw["id"] == "d1" and hit.envelope.seq == 1
    err = r.events[5]
    assert isinstance(err, ErrorEvent) and err.retry_after_ms == 10 and err.scope == "item"
    summary = r.conclusion.summary
    assert r.conclusion.verdict == FAILED and summary is not None and summary.reason == "failed"


def test_a_conforming_success_succeeds_and_agrees_with_aoi_verify() -> None:
    """§4.1: ok:true and a terminal summary is success."""
    data = stream({"type": "hit"})
    assert verdict(data) == SUCCEEDED
    rc = oracle(data)
    assert rc in (None, 0)


def test_honest_failure_carries_reason_and_caused_by() -> None:
    """§8.3, §13.1: ok:false with a caused_by is failed, with the cause on the outcome."""
    cb = {"origin": "up", "category": "rate_limited", "code": "RL", "retryable": True, "retry_after_ms": 7200}
    out = read_stream(stream(summary={"ok": False, "reason": "failed", "caused_by": cb})).conclusion
    assert out.verdict == FAILED and out.caused_by is not None
    assert (out.caused_by.category, out.caused_by.retry_after_ms, out.caused_by.origin) == ("rate_limited", 7200, "up")


def test_a_process_error_is_the_cause_when_the_summary_has_none() -> None:
    """§9.1: a process-scope error ends the run; its retry fields explain the failure."""
    e = {"type": "aoi:error", "category": "unavailable", "code": "DOWN", "message": "m", "retryable": True}
    out = read_stream(stream(e, summary={"ok": False, "reason": "failed", "error_count": 1})).conclusion
    assert out.verdict == FAILED and out.caused_by is not None and out.caused_by.code == "DOWN"


# -- framing §2


def test_a_last_line_without_newline_is_discarded_and_a_violation() -> None:
    """§2: a final line lacking its terminator is never an event; the stream is truncated."""
    data = stream()[:-1]
    r = read_stream(data)
    assert "TRUNCATED_LINE" in codes(data) and "SUMMARY_MISSING" in codes(data)
    assert not any(isinstance(e, Summary) for e in r.events)


def test_a_cut_line_of_a_process_that_died_is_a_failure_not_a_violation() -> None:
    """§4: a crash cannot guarantee a sentinel (docs/verifier.md, TRUNCATED_LINE N)."""
    data = stream()[:-10]
    assert verdict(data, exit_code=1) == FAILED
    assert verdict(data, signal=9) == KILLED


@pytest.mark.parametrize("line,code", [
    (b"Loading...", "INVALID_JSON"), (b"", "EMPTY_LINE"), (b"[1]", "NOT_AN_OBJECT"), (b'{"a":1}', "TYPE_MISSING"),
    (b'{"type":1}', "TYPE_NOT_STRING"), (b"\xff", "INVALID_UTF8"), (b'{"type":"hit","n":1e400}', "NUMBER_OUT_OF_RANGE"),
    (b'{"type":"hit","s":"\\ud800"}', "LONE_SURROGATE"), (b'{"type":"hit","x":NaN}', "INVALID_JSON"),
    (b"[" * 200 + b"]" * 200, "NESTING_TOO_DEEP"), (b'{"type":"hit","c":"\x1b[31m"}', "ANSI_ESCAPE"),
])
def test_every_line_must_be_one_clean_json_object(line: bytes, code: str) -> None:
    """§2: one complete JSON object per line, UTF-8, no ANSI; §8.1: a string type."""
    lines = stream().split(b"\n")
    data = lines[0] + b"\n" + line + b"\n" + b"\n".join(lines[1:])
    assert code in codes(data)
    assert oracle(data) in (None, 65)


def test_a_line_over_the_limit_is_skipped_without_being_held() -> None:
    """§2 / docs/verifier.md LINE_TOO_LONG: a bounded reader."""
    assert list(split_lines([b"a" * 10, b"b" * 10 + b"\nok\n"], max_line=15)) == [(None, True), (b"ok", True)]
    data = stream({"type": "hit", "pad": "x" * 100})
    assert "LINE_TOO_LONG" in codes(data, max_line=50)


def test_crlf_and_unicode_separators_are_not_violations() -> None:
    """§2: only \\n ends a line; \\r before it is JSON whitespace (a notice)."""
    data = stream({"type": "hit", "t": "a\u2028b"}).replace(b"\n", b"\r\n")
    assert verdict(data) == SUCCEEDED
    assert "CRLF_LINE_ENDING" in [f.code for f in read_stream(data).conclusion.findings]


def test_a_repeated_key_on_a_framework_event_is_a_violation() -> None:
    """§8.1: readers disagree on duplicate keys; a gate must not pass an ambiguous summary."""
    data = stream().replace(b'"ok": true', b'"ok": false, "ok": true')
    assert "DUPLICATE_KEY" in codes(data)
    assert verdict(stream({"type": "hit", "x": 1}).replace(b'"x": 1', b'"x": 1, "x": 2')) == SUCCEEDED


# -- meta and summary cardinality §13.1, §4


def test_meta_must_be_first_and_only_once() -> None:
    """§13.1: at most one aoi:meta, which when present is first."""
    assert "META_NOT_FIRST" in codes(stream({"type": "hit"}, dict(META), meta=False))
    assert "META_REPEATED" in codes(stream(dict(META)))


def test_events_after_the_summary_and_a_second_summary_are_violations() -> None:
    """§13.1: at most one aoi:summary, which when present is last."""
    data = stream() + b'{"type":"hit","aoi":{"seq":2,"run":"' + RUN.encode() + b'"}}\n'
    assert "SUMMARY_NOT_LAST" in codes(data)
    data = stream() + b'{"type":"aoi:summary","ok":true,"aoi":{"seq":2,"run":"' + RUN.encode() + b'"}}\n'
    assert "SUMMARY_REPEATED" in codes(data)


def test_eof_without_summary_is_a_violation_unless_the_process_failed_or_the_stream_is_unbounded() -> None:
    """§4, §4.1, §4.2."""
    data = b"\n".join(stream({"type": "hit"}).split(b"\n")[:2]) + b"\n"
    assert codes(data) == ["SUMMARY_MISSING"]
    assert "SUMMARY_MISSING" in codes(data, exit_code=0)  # §4.1 exit 0 without summary
    assert verdict(data, exit_code=2) == FAILED
    assert verdict(data, unbounded=True) == UNTERMINATED
    assert verdict(b"", exit_code=64) == FAILED  # §2: usage error before the stream started


def test_ok_true_with_a_nonzero_exit_is_a_violation() -> None:
    """§4.1: success is exit 0 and ok:true."""
    assert "EXIT_STATUS_MISMATCH" in codes(stream(), exit_code=1)
    assert verdict(stream(summary={"ok": False, "reason": "failed"}), exit_code=0) == FAILED


@pytest.mark.parametrize("summary,code", [
    ({"ok": None}, "OK_NOT_BOOLEAN"), ({"ok": False}, "REASON_MISSING"),
    ({"ok": False, "reason": "oops"}, "REASON_INVALID"),
    ({"reason": "failed"}, "REASON_INVALID"), ({"count": -1}, "SUMMARY_FIELD_INVALID"),
    ({"vendor": 1}, "FRAMEWORK_EXTRA_FIELD"), ({"upstream": None}, "UPSTREAM_INVALID"),
    ({"upstream": {"protocol": "http", "status": 503}}, "V02_UPSTREAM_SHAPE"),
    ({"ok": False, "reason": "failed", "caused_by": {"category": "io"}}, "CAUSED_BY_INVALID"),
    ({"tool": "other"}, "IDENTITY_MISMATCH"),
])
def test_summary_fields_follow_8_3(summary: Dict[str, Any], code: str) -> None:
    """§4, §8.3, §13.1, §5: ok explicit, reason closed, counters typed, upstream never null."""
    data = stream(summary=summary)
    assert code in codes(data)
    assert oracle(data) in (None, 65)


def test_ok_missing_is_a_violation() -> None:
    """§4: ok has no default."""
    data = stream().replace(b'"ok": true, ', b"")
    assert "OK_MISSING" in codes(data)


# -- seq, run, event_count §8.1, §8.3


def test_a_lost_middle_line_is_caught_by_seq_and_event_count() -> None:
    """§8.1: seq contiguous from 0; §8.3: lines received == event_count."""
    lines = stream({"type": "hit"}, {"type": "hit"}).split(b"\n")
    del lines[1]
    c = codes(b"\n".join(lines))
    assert "SEQ_GAP" in c and "EVENT_COUNT_MISMATCH" in c and "COUNT_MISMATCH" in c


def test_a_repeated_seq_a_changed_run_and_a_missing_seq_are_violations() -> None:
    """§8.1: one seq per line; run stable for the invocation; seq on every line once used."""
    lines = stream({"type": "hit"}).split(b"\n")
    assert "SEQ_GAP" in codes(lines[0] + b"\n" + lines[0].replace(b"aoi:meta", b"hit") + b"\n" + b"\n".join(lines[1:]))
    assert "RUN_CHANGED" in codes(stream({"type": "hit", "aoi": {"seq": 1, "run": "OTHER"}}))
    assert "SEQ_MISSING" in codes(stream({"type": "hit", "aoi": {"run": RUN}}))
    assert "RUN_MISSING" in codes(stream({"type": "hit", "aoi": {"seq": 1}}))
    assert "SEQ_NOT_ZERO_BASED" in codes(stream(meta=False, summary={"aoi": {"seq": 5, "run": RUN}}))


def test_no_envelope_at_all_is_only_a_notice() -> None:
    """§8.1: seq and run are SHOULD; without them Verifiable is not claimed."""
    data = b'{"type":"aoi:summary","ok":true,"count":0}\n'
    assert verdict(data) == SUCCEEDED
    assert "SEQ_ABSENT" in [f.code for f in read_stream(data).conclusion.findings]


def test_counters_reconcile() -> None:
    """§8.3: count exact; error and warning counts at least what the stream carries."""
    w = {"type": "aoi:warning", "message": "w"}
    assert "WARNING_COUNT_MISMATCH" in codes(stream(w, summary={"warning_count": 0}))
    assert verdict(stream(w, summary={"warning_count": 3})) == SUCCEEDED  # consumed upstream, not forwarded
    assert "COUNT_MISMATCH" in codes(stream({"type": "hit"}, summary={"count": 0}))


# -- errors §9


@pytest.mark.parametrize("change,code", [
    ({"category": None}, "ERROR_CATEGORY_MISSING"), ({"category": "bogus"}, "ERROR_CATEGORY_INVALID"),
    ({"category": "temporary"}, "V02_CATEGORY_TEMPORARY"), ({"category": "partial"}, "V02_CATEGORY_PARTIAL"),
    ({"code": "lower"}, "ERROR_CODE_INVALID"), ({"message": "a\nb"}, "ERROR_MESSAGE_INVALID"),
    ({"retryable": None}, "ERROR_RETRYABLE_MISSING"), ({"retry_after_ms": 5}, "RETRY_AFTER_NOT_RETRYABLE"),
    ({"retryable": True, "retry_after_ms": -1}, "RETRY_AFTER_INVALID"), ({"scope": "run"}, "ERROR_FIELD_INVALID"),
    ({"upstream": {"protocol": "http"}}, "V02_ERROR_UPSTREAM"), ({"seq": 1, "run": "x"}, "V02_FLAT_ENVELOPE"),
])
def test_error_fields_follow_9_1(change: Dict[str, Any], code: str) -> None:
    """§9.1, §9.2, §9.3, §5.2."""
    e: Dict[str, Any] = {"type": "aoi:error", "scope": "item", "category": "io", "code": "X", "message": "m",
                         "retryable": False}
    e.update(change)
    e = {k: v for k, v in e.items() if v is not None}
    data = stream(e, summary={"error_count": 1})
    assert code in codes(data)
    assert oracle(data) in (None, 65)


def test_an_unknown_category_forwarded_with_origin_is_routed_as_internal() -> None:
    """§9.4: MUST NOT fail on an unknown category; route it as internal."""
    e = {"type": "aoi:error", "origin": "up", "scope": "item", "category": "novel", "code": "X", "message": "m",
         "retryable": False}
    r = read_stream(stream(e, summary={"error_count": 1}))
    assert r.conclusion.verdict == SUCCEEDED
    assert isinstance(r.events[1], ErrorEvent) and r.events[1].route == "internal"


def test_ok_true_after_a_local_process_error_is_a_violation() -> None:
    """§9.1: scope process means the run is over."""
    e = {"type": "aoi:error", "category": "io", "code": "X", "message": "m", "retryable": False}
    assert "OK_AFTER_PROCESS_ERROR" in codes(stream(e, summary={"error_count": 1}))
    assert verdict(stream(dict(e, origin="up"), summary={"error_count": 1})) == SUCCEEDED  # --continue-on-error


def test_unknown_framework_types_are_violations_in_1_0_alpha_and_no_success_in_1_x() -> None:
    """§8.2 closed namespace; §13 MUST NOT report success on an uninterpreted aoi: event."""
    assert "UNKNOWN_FRAMEWORK_EVENT" in codes(stream({"type": "aoi:novel"}))
    newer = stream({"type": "aoi:novel"}).replace(b'"1.0-alpha"', b'"1.1"')
    assert verdict(newer) == FAILED
    assert "AOI_VERSION_UNKNOWN" in codes(stream().replace(b'"1.0-alpha"', b'"2.0"'))


# -- running a process


def _script(body: str) -> List[str]:
    return [sys.executable, "-c", body]


def test_run_yields_events_as_they_arrive_and_ends_with_the_outcome() -> None:
    """§4.1: exit 0 with ok:true is success; events arrive before the process ends."""
    data = stream({"type": "hit", "id": "a"}).decode()
    r = spawn(_script(f"import sys; sys.stdout.write({data!r})"))
    types = [e.type for e in r]
    assert types == ["aoi:meta", "hit", "aoi:summary"]
    assert r.conclusion.verdict == SUCCEEDED and r.conclusion.exit_code == 0


def test_run_reports_exit_zero_without_summary_and_a_kill() -> None:
    """§4.1: exit 0 without a summary is a protocol failure; §7: a kill is not success."""
    head = stream({"type": "hit"}).decode().split("\n")[0] + "\n"
    out = spawn(_script(f"import sys; sys.stdout.write({head!r})")).wait()
    assert out.verdict == VIOLATION and out.rule == "SUMMARY_MISSING"
    out = spawn(_script(f"import os,sys,signal; sys.stdout.write({head!r}); sys.stdout.flush(); "
                      "os.kill(os.getpid(), signal.SIGKILL)")).wait()
    assert out.verdict == KILLED and out.signal == 9


def test_run_with_ok_false_and_exit_one_is_an_honest_failure() -> None:
    """§4.1, §6."""
    data = stream(summary={"ok": False, "reason": "denied"}).decode()
    out = spawn(_script(f"import sys; sys.stdout.write({data!r}); sys.exit(77)")).wait()
    assert out.verdict == FAILED and out.exit_code == 77 and out.summary is not None
    assert out.summary.reason == "denied"
