"""The bytes the Rust SDK writes, rule by rule (docs/discovery.md, "Serialization").

Each expected line here is what ``aoi``'s emitter writes for the same calls (checked end to end
by ``test_scenarios.py``, which runs both SDKs on ``tests/scenarios/``); these unit tests say
which rule a difference would break.
"""

from __future__ import annotations

import io
import signal
from typing import Tuple

import pytest
from conftest import verdict

from machinemode import AoiError, Emitter, Identity, errors
from machinemode.emitter import encode_line
from machinemode.harness import TIMEOUT_ERROR, Outcome, run
from machinemode.idempotency import Idempotency, IdempotencyRecord

IDENT = Identity("demo", "1.2.3", "io.example.demo.events", "1.0.0")
RUN = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1"
ENV = '"aoi":{"seq":%d,"run":"' + RUN + '"}'
IDENTITY = '"tool":"demo","tool_version":"1.2.3","aoi_version":"1.0-alpha",' \
           '"schema_name":"io.example.demo.events","schema_version":"1.0.0"'


def make() -> Tuple[Emitter, io.BytesIO]:
    """An emitter without aoi.t and with a clock that stands still (elapsed_ms 0)."""
    buf = io.BytesIO()
    return Emitter(buf, IDENT, command="sync", run=RUN, clock=lambda: 0.0, timestamps=False), buf


def text(buf: io.BytesIO) -> list:
    return buf.getvalue().decode("utf-8").splitlines()


def test_the_summary_has_the_rust_sdks_keys_in_its_order() -> None:
    out, buf = make()
    out.summary(False, input_count=3, truncated=True, next_cursor="c1",
                caused_by={"retry_after_ms": 7200, "code": "UPSTREAM_RATE_LIMIT", "category": "rate_limited",
                           "retryable": True, "origin": "outline"},
                upstream={"schema_version": "1.0.0", "tool": "outline", "tool_version": "1.8.2",
                          "schema_name": "com.example.outline.events"},
                properties={"b": 1, "a": {"y": 2, "x": 1}})
    assert text(buf)[1] == (
        '{"type":"aoi:summary",' + ENV % 1 + ',"ok":false,"reason":"failed","event_count":2,"count":0,'
        '"input_count":3,"warning_count":0,"error_count":0,"partial":false,"truncated":true,'
        '"next_cursor":"c1","elapsed_ms":0,"caused_by":{"origin":"outline","category":"rate_limited",'
        '"code":"UPSTREAM_RATE_LIMIT","retryable":true,"retry_after_ms":7200},"upstream":{"tool":"outline",'
        '"tool_version":"1.8.2","schema_name":"com.example.outline.events","schema_version":"1.0.0"},'
        + IDENTITY + ',"properties":{"a":{"x":1,"y":2},"b":1}}')
    assert verdict(buf.getvalue()) == 1


def test_next_cursor_only_with_truncated_and_caused_by_only_on_a_failure() -> None:
    out, buf = make()
    out.summary(True, next_cursor="c1", caused_by={"category": "validation", "code": "BAD", "retryable": False})
    summary = text(buf)[1]
    assert '"partial":false,"truncated":false,"elapsed_ms":0,"tool"' in summary
    assert "next_cursor" not in summary and "caused_by" not in summary
    assert verdict(buf.getvalue()) == 0


def test_error_and_warning_fields_are_in_the_rust_sdks_order() -> None:
    out, buf = make()
    out.error(errors.rate_limited("UPSTREAM_RATE_LIMIT", "Rate limit\nexceeded.",
                                  details={"z": 1, "a": {"d": 2, "c": 1}}, hint="wait",
                                  docs="https://example.com/rl", wrapped={"status": 429, "protocol": "http"},
                                  field="q", line_number=4, item_index=3, target="/d/1", origin="outline",
                                  domain="outline", retry_after_ms=4500))
    out.warning("STALE", "index is old", details={"b": [], "a": None}, line_number=2, target="notes", origin="feed")
    out.summary(True)
    lines = text(buf)
    assert lines[1] == (
        '{"type":"aoi:error",' + ENV % 1 + ',"scope":"item","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT",'
        '"domain":"outline","origin":"outline","message":"Rate limit exceeded.","retryable":true,"retry_after_ms":4500,'
        '"target":"/d/1","item_index":3,"line_number":4,"field":"q","wrapped":{"protocol":"http","status":429},'
        '"hint":"wait","docs":"https://example.com/rl","details":{"a":{"c":1,"d":2},"z":1}}')
    assert lines[2] == (
        '{"type":"aoi:warning",' + ENV % 2 + ',"code":"STALE","message":"index is old","origin":"feed",'
        '"target":"notes","line_number":2,"details":{"a":null,"b":[]}}')
    assert verdict(buf.getvalue()) == 0


def test_errors_and_warnings_carry_sorted_properties_last_and_drop_an_empty_map() -> None:
    """§8.1: tool-specific data on a framework event goes in ``properties``."""
    out, buf = make()
    out.error(errors.conflict("VERSION_CONFLICT", "3 is not 4", details={"want": 4},
                              properties={"z": 1, "a": {"y": 2, "b": 1}}))
    out.warning("QUOTA_LOW", "low", details={"left": 9}, properties={"region": "eu", "limits": {"soft": 1}})
    out.warning("PLAIN", "nothing extra", properties={})
    out.summary(True)
    lines = text(buf)
    assert lines[1].endswith(',"details":{"want":4},"properties":{"a":{"b":1,"y":2},"z":1}}')
    assert lines[2].endswith(',"details":{"left":9},"properties":{"limits":{"soft":1},"region":"eu"}}')
    assert "properties" not in lines[3]
    assert verdict(buf.getvalue()) == 0


def test_a_forwarded_event_has_its_maps_sorted_and_only_the_wrapped_fields_of_9_1() -> None:
    out, buf = make()
    out.forward("aoi:error", {"category": "not_found", "code": "GONE", "message": "gone", "retryable": False,
                              "wrapped": {"code": "NF", "extra": 1, "status": 404, "protocol": "http"},
                              "details": {"b": 1, "a": 2}, "properties": {"y": {"d": 1, "c": 2}}}, "outline")
    out.summary(False, reason="failed")
    line = text(buf)[1]
    assert '"wrapped":{"protocol":"http","status":404,"code":"NF"}' in line
    assert line.endswith('"details":{"a":2,"b":1},"properties":{"y":{"c":2,"d":1}}}')


def test_meta_says_args_redacted_before_input_fingerprint_and_sorts_its_properties() -> None:
    out, buf = make()
    out.meta(properties={"zeta": 1, "alpha": {"b": 2, "a": 1}}, args_redacted=True, input_fingerprint="sha256:9f")
    out.summary(True)
    assert text(buf)[0] == (
        '{"type":"aoi:meta",' + ENV % 0 + ',' + IDENTITY + ',"command":"sync","args_redacted":true,'
        '"input_fingerprint":"sha256:9f","properties":{"alpha":{"a":1,"b":2},"zeta":1}}')


def test_aoi_t_is_optional_and_on_by_default() -> None:
    out, buf = make()
    out.summary(True)
    assert all('"t":' not in line for line in text(buf))
    buf = io.BytesIO()
    out = Emitter(buf, IDENT, run=RUN)
    out.summary(True)
    assert all(f'"run":"{RUN}","t":' in line for line in text(buf))


def test_floats_and_c1_controls_are_written_as_serde_json_and_the_rust_emitter_write_them() -> None:
    line = encode_line({"a": 1e-7, "b": 1.5e-5, "c": 1e-5, "d": 0.0001, "e": 1e16, "f": 1e15, "g": -0.0,
                        "h": 5e-324, "i": 18446744073709551615, "s": "\x85\x9b\x9d\x7f\u2028é"})
    assert line == (b'{"a":1e-7,"b":0.000015,"c":0.00001,"d":0.0001,"e":1e+16,"f":1000000000000000.0,'
                    b'"g":-0.0,"h":5e-324,"i":18446744073709551615,'
                    b'"s":"\xc2\x85\\u009b\xc2\x9d\x7f\xe2\x80\xa8\xc3\xa9"}\n')


def test_partial_is_item_errors_beside_domain_events_unless_the_tool_says() -> None:
    for events, override, partial in ((1, None, True), (0, None, False), (1, False, False)):
        out, buf = make()
        for _ in range(events):
            out.emit("entry", {"id": "e1"})
        out.error(errors.not_found("GONE", "gone"), scope="item")
        out.summary(False, partial=override)
        assert f'"partial":{str(partial).lower()}' in text(buf)[-1]


def test_a_process_scope_error_makes_a_success_a_failure_with_its_exit_status() -> None:
    out, buf = make()
    err = errors.conflict("VERSION_MISMATCH", "changed")
    out.error(err, scope="process")
    out.summary(True)
    assert '"ok":false,"reason":"failed"' in text(buf)[-1]
    assert out.first_process_error is err
    assert Outcome.success().exit_status(err) == 65
    assert verdict(buf.getvalue()) == 1


def test_the_exit_status_is_decided_in_the_rust_sdks_order() -> None:
    internal = errors.internal("BUG", "bug")
    assert Outcome.success(exit_code=3).exit_status() == 0  # a success is 0
    assert Outcome.failure("denied", exit_code=3).exit_status(internal) == 77  # a refusal first
    assert Outcome.failure(exit_code=3).exit_status(internal) == 70  # then the process error
    assert Outcome.failure(exit_code=3).exit_status() == 3  # then the tool's own status
    assert Outcome.failure(exit_code=0).exit_status() == 1  # 0 is no status for a failure
    assert [Outcome.failure(r).exit_status() for r in ("failed", "cancelled", "timeout")] == [1, 130, 124]


def test_messages_the_rust_sdk_keeps_or_empties() -> None:
    assert AoiError("internal", "X", "\x1b[0m\n").message == ""
    assert AoiError("internal", "X", "kept   ").message == "kept   "
    assert TIMEOUT_ERROR.message == "the command did not finish within --timeout"


def test_a_replay_writes_each_events_fields_with_sorted_keys() -> None:
    record = IdempotencyRecord("k", "h", ({"type": "created", "title": "t", "id": "n1", "meta": {"z": 1, "a": 2}},),
                               {"ok": True}, 0.0)
    (event,) = Idempotency.replay_events(record)
    assert list(event) == ["type", "id", "meta", "title"] and list(event["meta"]) == ["a", "z"]


def test_under_the_harness_the_first_process_error_decides_the_exit_status() -> None:
    out, buf = make()

    def body() -> Outcome:
        out.error(errors.not_found("GONE", "gone"), scope="process")
        raise errors.validation("BAD", "bad")

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(SystemExit) as exited:
            run(body, emitter=out, name="demo")
    finally:  # the harness installs its own handlers: give pytest its own back
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert exited.value.code == 66  # not_found's, as Rust's emitter decides from the first
    assert verdict(buf.getvalue()) == 1
