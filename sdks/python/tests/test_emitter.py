"""The emitter's wire rules, each read back through `aoi verify` (AOI-CLI §2, §5, §8, §9)."""

from __future__ import annotations

import dataclasses
import io
import re
from typing import List, Optional

import pytest
from conftest import lines, verdict

from machinemode import AoiError, Emitter, Identity, StreamClosed, StreamFailed, errors, event
from machinemode.emitter import encode_line
from machinemode.ulid import ULID_RE, new_ulid

IDENT = Identity("demo", "1.2.3", "io.example.demo.events", "1.0.0")


@event("hit")
@dataclasses.dataclass
class Hit:
    id: str
    rank: int
    tags: List[str] = dataclasses.field(default_factory=list)
    note: Optional[str] = None


def make(**kw: object) -> tuple[Emitter, io.BytesIO]:
    buf = io.BytesIO()
    return Emitter(buf, IDENT, command="search", **kw), buf  # type: ignore[arg-type]


def test_a_finite_stream_has_meta_first_and_a_summary_with_every_field_of_8_3() -> None:
    out, buf = make()
    out.emit(Hit("d1", 1))
    out.emit("hit", {"id": "d2", "rank": 2})
    out.summary(True)
    events = lines(buf.getvalue())
    assert [e["type"] for e in events] == ["aoi:meta", "hit", "hit", "aoi:summary"]
    meta, summary = events[0], events[-1]
    for key in ("tool", "tool_version", "aoi_version", "schema_name", "schema_version"):
        assert meta[key] == summary[key]  # §5: the identity at both ends
    assert meta["command"] == "search"
    for key in ("ok", "event_count", "count", "warning_count", "error_count", "partial",
                "truncated", "elapsed_ms"):
        assert key in summary, key
    assert "next_cursor" not in summary  # omitted, never null, as the Rust SDK writes it
    assert summary["count"] == 2 and summary["event_count"] == 4
    assert verdict(buf.getvalue()) == 0


def test_seq_is_contiguous_from_zero_under_one_ulid_run_and_t_is_milliseconds() -> None:
    ticks = iter([10.0, 10.0, 10.5, 11.0, 11.0, 11.0])
    out, buf = make(clock=lambda: next(ticks))
    out.emit(Hit("d1", 1))
    out.emit(Hit("d2", 2))
    out.summary(True)
    events = lines(buf.getvalue())
    assert [e["aoi"]["seq"] for e in events] == [0, 1, 2, 3]  # §8.1
    assert len({e["aoi"]["run"] for e in events}) == 1
    assert ULID_RE.match(events[0]["aoi"]["run"])
    assert [e["aoi"]["t"] for e in events] == [0, 500, 1000, 1000]


def test_counters_count_domain_events_warnings_and_errors_apart() -> None:
    out, buf = make()
    out.emit(Hit("d1", 1))
    out.warning("SLOW_INDEX", "The index is old.")
    out.error(errors.validation("BAD_ROW", "Row 3 is bad.", line_number=3))
    out.plan("create", "d9")
    out.consumed(warnings=2)
    out.summary(False, partial=True)
    s = lines(buf.getvalue())[-1]
    assert (s["count"], s["warning_count"], s["error_count"]) == (1, 3, 1)  # §8.3
    assert s["reason"] == "failed"
    assert verdict(buf.getvalue()) == 1  # conforming, an honest failure


def test_reserved_names_are_refused() -> None:
    out, _ = make()
    with pytest.raises(ValueError):
        out.emit("aoi:summary", {"ok": True})  # §8.2 the aoi: namespace is closed
    with pytest.raises(ValueError):
        out.emit("hit", {"aoi": {}})  # §8.1 `aoi` reserved
    with pytest.raises(ValueError):
        out.emit("hit", {"type": "x"})
    with pytest.raises(ValueError):
        @event("aoi:thing")
        @dataclasses.dataclass
        class Bad:
            x: int


def test_an_undeclared_domain_type_is_refused() -> None:
    out, _ = make(event_types=["hit"])
    out.emit("hit", {"id": "x"})
    with pytest.raises(ValueError):
        out.emit("entry", {"id": "x"})


def test_nothing_follows_the_summary_and_a_second_summary_is_refused() -> None:
    out, _ = make()
    out.summary(True)
    with pytest.raises(RuntimeError):
        out.summary(True)
    with pytest.raises(RuntimeError):
        out.emit("hit", {})


def test_ok_has_no_default_and_reason_follows_ok() -> None:
    out, _ = make()
    with pytest.raises(TypeError):
        out.summary(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        out.summary(True, reason="failed")
    with pytest.raises(ValueError):
        out.summary(False, reason="oops")


def test_every_line_ends_in_a_newline_even_the_summary() -> None:
    out, buf = make()
    out.summary(True)
    assert buf.getvalue().endswith(b"\n") and buf.getvalue().count(b"\n") == 2  # §2


def test_messages_are_single_line_and_controls_never_reach_the_stream_raw() -> None:
    out, buf = make()
    out.error(errors.validation("BAD", "line one\nline two\x1b[31m red \x9b"))
    out.emit("hit", {"id": "a\x9bb\x1bc"})
    out.summary(False)
    data = buf.getvalue()
    assert b"\x1b" not in data and b"\xc2\x9b" not in data  # §2: no ANSI
    err = lines(data)[1]
    assert "\n" not in err["message"] and "\x1b" not in err["message"]  # §9.1
    assert verdict(data) == 1


def test_a_lone_surrogate_never_reaches_the_stream() -> None:
    line = encode_line({"type": "hit", "text": "bad\udc80"})
    assert line.decode("utf-8")  # valid UTF-8
    assert b"\\udc80" not in line


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError):
        encode_line({"type": "hit", "score": float("nan")})


def test_writes_are_buffered_until_the_summary() -> None:
    out, buf = make()
    out.emit(Hit("d1", 1))
    assert buf.getvalue() == b""
    out.summary(True)
    assert buf.getvalue().count(b"\n") == 3


def test_flush_each_writes_every_line_at_once() -> None:
    out, buf = make(flush_each=True)
    out.emit(Hit("d1", 1))
    assert buf.getvalue().count(b"\n") == 2


class _Failing(io.RawIOBase):
    def __init__(self, exc: OSError) -> None:
        self.exc = exc

    def writable(self) -> bool:
        return True

    def write(self, _b: object) -> int:
        raise self.exc


def test_a_closed_pipe_is_stream_closed_and_a_full_disk_is_stream_failed() -> None:
    out = Emitter(_Failing(BrokenPipeError(32, "EPIPE")), IDENT)  # type: ignore[arg-type]
    with pytest.raises(StreamClosed):
        out.summary(True)
    out = Emitter(_Failing(OSError(28, "ENOSPC")), IDENT)  # type: ignore[arg-type]
    with pytest.raises(StreamFailed) as caught:
        out.summary(True)
    assert caught.value.errno == 28
    out = Emitter(None, IDENT)
    with pytest.raises(StreamFailed):
        out.summary(True)


def test_forwarded_upstream_errors_carry_origin_and_count() -> None:
    out, buf = make()
    out.forward("aoi:error", {"type": "aoi:error", "aoi": {"seq": 4}, "category": "unavailable",
                              "code": "DOWN", "message": "down", "retryable": True}, "up")
    out.summary(False, caused_by={"origin": "up", "category": "unavailable", "code": "DOWN",
                                  "retryable": True}, upstream={"tool": "up"})
    events = lines(buf.getvalue())
    assert events[1]["origin"] == "up" and events[1]["aoi"]["seq"] == 1  # §13.1
    assert events[-1]["error_count"] == 1 and events[-1]["upstream"] == {"tool": "up"}
    assert verdict(buf.getvalue()) == 1


def test_a_forwarded_event_is_written_as_the_rust_sdk_writes_it() -> None:
    # §9.1: no retry_after_ms beside retryable false; scope as Rust defaults it; Rust's field
    # order; a field §9.1 does not define dropped (§8.1); the message made one line.
    out, buf = make()
    out.forward("aoi:error", {"extra": 1, "message": "a\nb", "retry_after_ms": 5, "retryable": False,
                              "code": "X", "category": "io"}, "up")
    out.forward("aoi:warning", {"target": "t", "message": "w", "code": "W"}, "up")
    out.summary(False)
    error, warning = lines(buf.getvalue())[1:3]
    assert list(error) == ["type", "aoi", "scope", "category", "code", "origin", "message",
                           "retryable"]
    assert error["scope"] == "process" and error["message"] == "a b"
    assert list(warning) == ["type", "aoi", "code", "message", "origin", "target"]
    assert verdict(buf.getvalue()) == 1


def test_ulid_is_26_crockford_characters_ordered_by_time() -> None:
    a = new_ulid(1000, bytes(10))
    b = new_ulid(1001, bytes(10))
    assert ULID_RE.match(a) and a < b
    assert new_ulid(0, bytes(10)) == "0" * 26
    assert re.match(r"^[0-9A-Z]{26}$", new_ulid())


class TestErrorTaxonomy:
    """§9.1-§9.3."""

    def test_every_category_has_its_default_retryable_and_exit_code(self) -> None:
        assert set(errors.CATEGORIES) == {
            "usage", "validation", "config", "authn", "authz", "not_found", "conflict",
            "precondition_failed", "unsupported", "rate_limited", "unavailable", "timeout",
            "cancelled", "io", "internal"}
        for cat in errors.CATEGORIES:
            err = getattr(errors, cat)("SOME_CODE", "m")
            assert err.category == cat
            assert err.retryable is (cat in ("rate_limited", "unavailable", "timeout"))
        # §6's table, and where §6 names no code docs/discovery.md "Exit codes" (the Rust SDK's).
        expected = {"usage": 64, "validation": 65, "conflict": 65, "precondition_failed": 65,
                    "not_found": 66, "unsupported": 69, "unavailable": 69, "internal": 70,
                    "io": 74, "rate_limited": 75, "authn": 77, "authz": 77, "config": 78,
                    "timeout": 124, "cancelled": 130}
        assert {c: getattr(errors, c)("X", "m").exit_code for c in errors.CATEGORIES} == expected
        assert set(errors.EXIT_FOR_CATEGORY) == set(errors.CATEGORIES)
        # A refusal exits EX_NOPERM whatever its category; an explicit code wins.
        assert errors.conflict("X", "m", reason="denied").exit_code == 77
        assert errors.conflict("X", "m", reason="denied", exit_code=3).exit_code == 3
        # The summary's reason follows the category unless the tool says otherwise.
        assert [getattr(errors, c)("X", "m").reason for c in ("authz", "cancelled", "timeout", "io")] \
            == ["denied", "cancelled", "timeout", "failed"]

    def test_removed_categories_and_bad_codes_are_refused(self) -> None:
        for cat in ("partial", "temporary"):  # §5.2
            with pytest.raises(ValueError):
                AoiError(cat, "X", "m")
        for code in ("lower", "1ABC", "A-B", ""):
            with pytest.raises(ValueError):
                errors.usage(code, "m")

    def test_retry_after_never_goes_with_retryable_false(self) -> None:
        with pytest.raises(ValueError):
            errors.validation("X", "m", retry_after_ms=10)
        err = errors.rate_limited("X", "m", retry_after_ms=4500)
        assert err.fields()["retry_after_ms"] == 4500
        err = errors.rate_limited("X", "m", retryable=False)  # §9.3: authoritative
        assert err.fields()["retryable"] is False

    def test_item_and_process_scope(self) -> None:
        err = errors.validation("BAD", "m", line_number=3)
        assert err.fields("item")["scope"] == "item"
        assert err.fields()["scope"] == "process"
        with pytest.raises(ValueError):
            err.fields("run")


@pytest.mark.parametrize("raw,clean", [
    # The Rust SDK's `single_line_strips_breaks_and_ansi`, case for case (docs: same bytes).
    ("plain", "plain"), ("a\nb\r\nc", "a b c"), ("\x1b[31mred\x1b[0m text", "red text"),
    ("osc \x1b]0;title\x07done", "osc done"), ("bell\x07 sep\u2028x", "bell sep x"),
    ("trailing\n", "trailing"), ("csi \x9b1mX", "csi X"),
    # Found by test_emitter_property: U+2028 and U+2029 are line breaks to the verifier.
    ("a\u2029b\x85c", "a b c"), (" lead", " lead"), ("\ud800", "?"),
    # Nothing to clean: as written, trailing spaces kept; cleaned to nothing: empty, as in Rust.
    ("done.  ", "done.  "), ("\n\t", ""), ("\x1b[0m", ""),
])
def test_a_message_is_cleaned_as_the_rust_sdk_cleans_it(raw: str, clean: str) -> None:
    assert errors.clean_message(raw) == clean
