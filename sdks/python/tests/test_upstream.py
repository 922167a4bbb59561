"""Tests of machinemode.upstream: the §12 input contract and §13.1 upstream accounting."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from machinemode.consumer import DomainEvent, ErrorEvent, WarningEvent
from machinemode.upstream import UpstreamReader

META = {"type": "aoi:meta", "tool": "outline", "tool_version": "1.8.2", "aoi_version": "1.0-alpha",
        "schema_name": "com.example.outline.events", "schema_version": "1.0.0"}
RL = {"type": "aoi:error", "scope": "item", "category": "rate_limited", "code": "UPSTREAM_RATE_LIMIT",
      "message": "slow down", "retryable": True, "retry_after_ms": 7200}


def upstream(*events: Dict[str, Any], summary: Optional[Dict[str, Any]] = None, cut: bool = False) -> bytes:
    evs: List[Dict[str, Any]] = [dict(META), *[dict(e) for e in events]]
    if not cut:
        s = {"type": "aoi:summary", "ok": True, **(summary or {})}
        s.setdefault("count", sum(1 for e in evs if not e["type"].startswith("aoi:")))
        s.setdefault("error_count", sum(1 for e in evs if e["type"] == "aoi:error"))
        s.setdefault("warning_count", sum(1 for e in evs if e["type"] == "aoi:warning"))
        evs.append(s)
        s["event_count"] = len(evs)
    for i, e in enumerate(evs):
        e["aoi"] = {"seq": i, "run": "UP"}
    return b"".join(json.dumps(e).encode() + b"\n" for e in evs)


def test_meta_and_summary_are_never_forwarded() -> None:
    """§13.1: an AOI producer MUST NOT forward upstream aoi:meta or aoi:summary."""
    reader = UpstreamReader([upstream({"type": "hit", "id": "a"}, {"type": "hit", "id": "b"})])
    items = list(reader)
    assert [i.type for i in items] == ["hit", "hit"]
    acc = reader.accounting()
    assert acc.ok and acc.input_count == 2 and acc.caused_by is None
    assert acc.upstream == {"tool": "outline", "tool_version": "1.8.2", "schema_name": "com.example.outline.events",
                            "schema_version": "1.0.0"}


def test_forwarded_errors_and_warnings_carry_origin() -> None:
    """§13.1: forwarded aoi:error/aoi:warning MUST be tagged with origin; the envelope is the upstream's."""
    reader = UpstreamReader([upstream(RL, {"type": "aoi:warning", "message": "w"}, summary={"partial": True})])
    forwarded = [reader.forward(i) for i in reader if isinstance(i, (ErrorEvent, WarningEvent))]
    assert all(f["origin"] == "outline" and "aoi" not in f for f in forwarded)
    assert forwarded[0]["retry_after_ms"] == 7200


def test_an_already_forwarded_error_keeps_its_origin() -> None:
    """§13.1: origin names the tool that raised it, across a three-stage pipeline."""
    reader = UpstreamReader([upstream(dict(RL, origin="source"))])
    (err,) = [i for i in reader if isinstance(i, ErrorEvent)]
    assert reader.forward(err)["origin"] == "source"


def test_an_upstream_error_fails_the_run_with_caused_by() -> None:
    """§13.1: upstream aoi:error sets ok=false; caused_by reproduces the retry-critical fields."""
    reader = UpstreamReader([upstream({"type": "hit"}, RL, summary={"ok": False, "reason": "failed"})])
    acc = reader.accounting()
    fields = acc.summary_fields(count=1)
    assert fields["ok"] is False and fields["reason"] == "failed" and fields["error_count"] == 1
    assert fields["caused_by"] == {"origin": "outline", "category": "rate_limited", "code": "UPSTREAM_RATE_LIMIT",
                                   "retryable": True, "retry_after_ms": 7200}
    assert fields["upstream"]["tool"] == "outline" and fields["input_count"] == 1


def test_continue_on_error_keeps_ok_but_still_counts_errors() -> None:
    """§13.1 'unless --continue-on-error is set'; §8.3 error_count includes consumed errors."""
    stream = upstream({"type": "hit"}, RL, summary={"partial": True})
    acc = UpstreamReader([stream], continue_on_error=True).accounting()
    assert acc.ok and acc.summary_fields(count=1)["error_count"] == 1


def test_the_most_severe_error_is_the_cause() -> None:
    """§13.1 'the most severe upstream error': a process-scope error over an item error."""
    fatal = {"type": "aoi:error", "category": "authn", "code": "EXPIRED", "message": "m", "retryable": False}
    acc = UpstreamReader([upstream(RL, fatal, summary={"ok": False, "reason": "failed"})]).accounting()
    assert acc.caused_by is not None and acc.caused_by.code == "EXPIRED"


def test_warnings_are_counted() -> None:
    """§13.1: upstream aoi:warning events MUST be counted into warning_count."""
    w = {"type": "aoi:warning", "message": "w"}
    acc = UpstreamReader([upstream(w, w)]).accounting()
    assert acc.ok and acc.summary_fields(count=0, warnings=1)["warning_count"] == 3


def test_an_upstream_cut_before_its_summary_is_an_io_failure() -> None:
    """§13.1: upstream EOF without a terminal summary sets ok=false and SHOULD emit an io aoi:error first.

    As the Rust SDK (UpstreamState::verdict): io UPSTREAM_TRUNCATED, this run's own error, so no
    caused_by (that is for an upstream error, §13.1)."""
    for data in (upstream({"type": "hit"}, cut=True), upstream({"type": "hit"})[:-7]):
        acc = UpstreamReader([data]).accounting()
        assert not acc.ok and acc.io_error is not None
        assert (acc.io_error["category"], acc.io_error["code"], acc.io_error["retryable"]) == \
            ("io", "UPSTREAM_TRUNCATED", False)
        assert acc.caused_by is None and "caused_by" not in acc.summary_fields(count=0)
        assert acc.summary_fields(count=0)["error_count"] == 1


def test_lost_upstream_lines_fail_the_run() -> None:
    """§8.1: a seq gap means records were lost; the transformer must not report success."""
    lines = upstream({"type": "hit"}, {"type": "hit"}).split(b"\n")
    del lines[1]
    acc = UpstreamReader([b"\n".join(lines)]).accounting()
    # The Rust SDK's code and category for an upstream that breaks Part I.
    assert not acc.ok and acc.io_error is not None
    assert (acc.io_error["category"], acc.io_error["code"]) == ("validation", "UPSTREAM_PROTOCOL_VIOLATION")


def test_a_failed_upstream_fails_the_run_with_its_own_cause_if_it_gives_one() -> None:
    """§13.1: an upstream ok:false fails this run; caused_by is the upstream summary's own, else
    none (no upstream error to reproduce), as the Rust SDK's UpstreamState::caused_by."""
    acc = UpstreamReader([upstream(summary={"ok": False, "reason": "cancelled"})]).accounting()
    assert not acc.ok and acc.caused_by is None and acc.io_error is None
    cb = {"origin": "source", "category": "timeout", "code": "SLOW", "retryable": True, "retry_after_ms": 5}
    acc = UpstreamReader([upstream(summary={"ok": False, "reason": "failed", "caused_by": cb})]).accounting()
    assert acc.caused_by is not None and acc.caused_by.to_json() == cb
    assert UpstreamReader([upstream(summary={"ok": False, "reason": "cancelled"})],
                          continue_on_error=True).accounting().ok


def test_upstream_identity_is_omitted_when_unknown() -> None:
    """§13.1: MUST omit the upstream key rather than emit nulls when identity is unavailable."""
    data = b'{"type":"hit"}\n{"type":"aoi:summary","ok":true,"count":1}\n'
    acc = UpstreamReader([data]).accounting()
    assert acc.ok and acc.upstream is None and "upstream" not in acc.summary_fields(count=1)


def test_unknown_domain_types_are_data_and_unknown_framework_types_forbid_success() -> None:
    """§13: unknown unprefixed types are safe to ignore; an uninterpreted aoi: event forbids success."""
    reader = UpstreamReader([upstream({"type": "novel_thing"})])
    assert [i.type for i in reader] == ["novel_thing"] and reader.accounting().ok
    newer = upstream({"type": "aoi:novel"}).replace(b'"1.0-alpha"', b'"1.1"')
    assert not UpstreamReader([newer]).accounting().ok


def test_malformed_input_lines_fail_fast_or_become_item_errors() -> None:
    """§12.2: whole-input fail-fast, or per-line tolerant with the line number."""
    good = b'{"type":"hit","id":1}\n'
    data = good + b"{not json\n" + good
    fast = UpstreamReader([data])
    assert len([i for i in fast if isinstance(i, DomainEvent)]) == 1
    acc = fast.accounting()
    assert not acc.ok and acc.io_error is not None and acc.io_error["line_number"] == 2
    tolerant = UpstreamReader([data], fail_fast=False, continue_on_error=True)
    assert len([i for i in tolerant if isinstance(i, DomainEvent)]) == 2
    acc = tolerant.accounting()
    assert [e.to_error()["line_number"] for e in acc.input_errors] == [2]
    assert acc.input_errors[0].to_error()["scope"] == "item"
