"""A sink's input: ``--input-json`` and ``--input-jsonl`` (AOI-CLI §12, §13.1), read as the Rust
SDK's ``aoi::Input`` reads them (crates/aoi/src/surface/input.rs, crates/aoi/src/read/upstream.rs;
docs/discovery.md "--input-json"). Every stream written here goes through ``aoi verify``."""

from __future__ import annotations

import dataclasses
import errno
import json
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from conftest import verdict
from test_upstream import RL, upstream

from machinemode import AoiError, Emitter, Identity, records
from machinemode.cli import INPUT_JSON, INPUT_JSONL, Context, Tool
from machinemode.harness import Stop
from machinemode.records import RecordBatch, read_document, read_records

Events = List[Dict[str, Any]]


@dataclasses.dataclass
class Rec:
    url: str
    title: Optional[str] = None


def run(read: Callable[[Emitter], RecordBatch[Rec]]) -> Tuple[int, Events, Optional[RecordBatch[Rec]]]:
    """One sink run as the harness ends it; its exit status, its events, the batch it read.
    The stream must conform (``aoi verify`` finds no violation)."""
    buf = BytesIO()
    out = Emitter(buf, Identity("sink", "1.0.0", "io.example.sink.events", "1.0.0"), command="import")
    out.meta()
    batch: Optional[RecordBatch[Rec]] = None
    try:
        batch = read(out)
        ok = batch.item_errors == 0  # as Context.done: an item error fails the run (§19.4)
        out.summary(ok, input_count=batch.input_count, upstream=batch.upstream,
                    partial=not ok and out.count > 0)
        status = 0 if ok else 65
    except Stop as stop:
        stop.outcome.summarize(out)
        status = stop.outcome.exit_status()
    except AoiError as err:
        out.error(err, scope="process")
        out.summary(False, reason=err.reason)
        status = err.exit_code
    stream = buf.getvalue()
    assert verdict(stream) in (0, 1), stream.decode()
    return status, [json.loads(x) for x in stream.splitlines()], batch


def jsonl(tmp_path: Path, data: bytes, *, keep_going: bool = False) -> Tuple[int, Events, Optional[RecordBatch[Rec]]]:
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    return run(lambda out: read_records(out, str(src), Rec, continue_on_error=keep_going))


def document(tmp_path: Path, data: bytes, *,
             keep_going: bool = False) -> Tuple[int, Events, Optional[RecordBatch[Rec]]]:
    src = tmp_path / "in.json"
    src.write_bytes(data)
    return run(lambda out: read_document(out, str(src), Rec, continue_on_error=keep_going))


def errors_of(events: Events) -> List[Dict[str, Any]]:
    return [e for e in events if e["type"] == "aoi:error"]


def refusal(events: Events) -> Dict[str, Any]:
    """The one process-scope error of a refused run (nothing else was written but the meta)."""
    (err,) = errors_of(events)
    assert err["scope"] == "process" and events[-1]["ok"] is False
    return err


# --------------------------------------------------------------------------- --input-json


def test_an_object_is_one_record_and_an_array_many(tmp_path: Path) -> None:
    """Rust ``Input::json``: one document, an object (one record) or an array of objects."""
    _, _, one = document(tmp_path, b'{"url": "u1"}')
    assert one is not None and [(i, r.url) for i, r in one.records] == [(0, "u1")] and one.input_count == 1
    _, _, many = document(tmp_path, b'[{"url": "u1"}, {"url": "u2", "title": "T"}]')
    assert many is not None
    assert [(i, r.url, r.title) for i, r in many.records] == [(0, "u1", None), (1, "u2", "T")]
    _, _, empty = document(tmp_path, b"[]")
    assert empty is not None and empty.records == [] and empty.input_count == 0


@pytest.mark.parametrize("doc,line", [
    (b'{"url": ', 1), (b'[{"url": "a"},\n{"url": }]', 2), (b"", 1), (b"\xff", None),
    (b'{"url": NaN}', None),               # serde_json: NaN is not JSON
    (b'[{"url": 1e400}]', None),           # serde_json: a number beyond a double
    (b'[{"url": "\\ud800"}]', None),       # serde_json: a lone surrogate escape
    (b"[" * 200 + b"]" * 200, None),       # serde_json: at most 127 levels
    (b'{"url": "a", "url": "b"}', None),   # a repeated key (this SDK's rule for records)
])
def test_a_document_that_does_not_parse_is_refused_whole(tmp_path: Path, doc: bytes,
                                                         line: Optional[int]) -> None:
    """Rust ``Input::json``: ``validation`` ``INPUT_JSON_PARSE_ERROR`` with serde's line, in either
    mode: there are no items to go on with."""
    status, events, _ = document(tmp_path, doc, keep_going=True)
    err = refusal(events)
    assert (status, err["category"], err["code"], err.get("line_number")) == \
        (65, "validation", "INPUT_JSON_PARSE_ERROR", line)


def test_fail_fast_refuses_the_first_bad_item_with_its_index_and_writes_nothing(tmp_path: Path) -> None:
    """§12.2 whole-input fail-fast; Rust ``Input::bad``: ``item_index``, no ``line_number``, the hint."""
    status, events, batch = document(tmp_path, b'[{"url": "a"}, 3, {"urls": "b"}]')
    err = refusal(events)
    assert batch is None and [e["type"] for e in events] == ["aoi:meta", "aoi:error", "aoi:summary"]
    assert (status, err["code"], err["item_index"], "line_number" in err) == \
        (65, "INPUT_JSON_ITEM_INVALID", 1, False)
    assert "a number, not an object" in err["message"] and "--continue-on-error" in err["hint"]


def test_continue_on_error_reports_each_bad_item_and_keeps_the_rest(tmp_path: Path) -> None:
    """Rust ``Input::next``: each bad item an item error in input order; ``input_count`` counts the
    records read (``note_input`` per object), not an item that is no object (§8.3)."""
    status, events, batch = document(tmp_path, b'[{"url": "a"}, "x", {"urls": "b"}, {"url": "c"}]',
                                     keep_going=True)
    assert batch is not None and [r.url for _, r in batch.records] == ["a", "c"]
    assert (batch.input_count, batch.item_errors, status) == (3, 2, 65)
    errs = errors_of(events)
    assert [(e["scope"], e["code"], e["item_index"]) for e in errs] == [
        ("item", "INPUT_JSON_ITEM_INVALID", 1), ("item", "INPUT_RECORD_INVALID", 2)]
    assert all("line_number" not in e and "hint" not in e for e in errs)
    assert errs[1]["field"] == "urls"


def test_a_document_that_is_not_an_object_or_array_is_one_bad_item(tmp_path: Path) -> None:
    """Rust ``Input::json``: any other value is the one item (``vec![other]``), not a parse error."""
    status, events, _ = document(tmp_path, b'"https://a.example/"')
    assert (status, refusal(events)["code"], refusal(events)["item_index"]) == (65, "INPUT_JSON_ITEM_INVALID", 0)


def test_json_items_are_records_never_upstream_events(tmp_path: Path) -> None:
    """Rust: a document's items never go through the upstream accounting (``Source::Document``),
    so an object shaped like an ``aoi:error`` is a record that breaks the record type."""
    item = json.dumps(dict(RL, type="aoi:error")).encode()
    status, events, _ = document(tmp_path, b"[" + item + b"]")
    err = refusal(events)
    assert (status, err["code"], err["item_index"], err["field"]) == (65, "INPUT_RECORD_INVALID", 0, "type")


# --------------------------------------------------------------------------- --input-jsonl


def test_plain_jsonl_records_keep_their_lines_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    """§12.1 plain JSONL; Rust ``Input::next`` skips whitespace-only lines, which keep their number."""
    status, events, batch = jsonl(tmp_path, b'{"url": "a"}\n\n  \t\n{"url": "b", "title": "B"}\n')
    assert status == 0 and batch is not None
    assert [(ln, r.url) for ln, r in batch.records] == [(1, "a"), (4, "b")]
    assert (batch.input_count, batch.upstream, events[-1]["ok"]) == (2, None, True)


INPUT = b'{"url": "a"}\n{"url": "b", "tilte": "typo"}\n{not json\n{"url": "d"}\n'


def test_fail_fast_stops_at_the_first_bad_line_and_writes_nothing(tmp_path: Path) -> None:
    """§12.2; the Rust test ``fail_fast_stops_at_the_first_bad_record_and_names_its_line_and_field``."""
    status, events, batch = jsonl(tmp_path, INPUT)
    err = refusal(events)
    assert batch is None and [e["type"] for e in events] == ["aoi:meta", "aoi:error", "aoi:summary"]
    assert (status, err["category"], err["code"], err["line_number"], err["item_index"], err["field"]) == \
        (65, "validation", "INPUT_RECORD_INVALID", 2, 1, "tilte")
    assert err["hint"] == "fix the input, or pass --continue-on-error to skip bad records"


def test_a_fail_fast_summary_counts_the_records_read_up_to_the_first_bad_one(tmp_path: Path) -> None:
    """§8.3 ``input_count`` on a failure too: a streaming reader (the Rust SDK's ``Input``) has
    consumed the records before the bad item, and the bad record itself, when fail-fast stops it;
    a line that is no record is not counted."""
    good = b'{"url":"https://a.example"}\n'
    _, events, _ = jsonl(tmp_path, good * 2 + b'{"url": 5}\n' + good * 3)
    assert events[-1]["ok"] is False and events[-1]["input_count"] == 3
    _, events, _ = jsonl(tmp_path, good * 2 + b'{not json\n' + good * 3)
    assert events[-1]["ok"] is False and events[-1]["input_count"] == 2


def test_continue_on_error_makes_each_bad_line_an_item_error(tmp_path: Path) -> None:
    """§19.4; the Rust test ``continue_on_error_reports_each_bad_line_as_an_item_error_and_goes_on``:
    errors in input order with ``line_number`` and ``item_index``, three objects read."""
    status, events, batch = jsonl(tmp_path, INPUT, keep_going=True)
    assert batch is not None and [(ln, r.url) for ln, r in batch.records] == [(1, "a"), (4, "d")]
    assert (status, batch.input_count, batch.item_errors) == (65, 3, 2)
    assert [(e["scope"], e["code"], e["line_number"], e["item_index"]) for e in errors_of(events)] == [
        ("item", "INPUT_RECORD_INVALID", 2, 1), ("item", "INPUT_JSONL_PARSE_ERROR", 3, 2)]


@pytest.mark.parametrize("line", [
    b"[1, 2]", b'"a string"', b"{oops",
    b'{"url": NaN}', b'{"url": 1e400}', b'{"url": "\\ud800"}',   # serde_json refuses these
    b'{"url": "a", "url": "b"}',                                    # a repeated key in a record
    b'{"type": "bookmark", "url": "a", "url": "b"}',               # in a domain event's fields too
])
def test_a_line_that_is_no_readable_object_is_a_parse_error(tmp_path: Path, line: bytes) -> None:
    """§12.2 malformed JSONL: ``validation`` ``INPUT_JSONL_PARSE_ERROR`` (Rust ``Observed::Malformed``).
    The Rust SDK keeps the last of a repeated record key (serde); this SDK refuses the record."""
    status, events, _ = jsonl(tmp_path, b'{"url": "ok"}\n' + line + b"\n")
    err = refusal(events)
    assert (status, err["code"], err["line_number"], err["item_index"]) == (65, "INPUT_JSONL_PARSE_ERROR", 2, 1)
    assert err["message"].startswith("invalid JSON on input line 2: ")


def test_a_line_whose_type_is_not_a_string_is_a_plain_record(tmp_path: Path) -> None:
    """Rust ``UpstreamState::observe``: no string ``type`` is a plain object, checked whole."""
    _, events, _ = jsonl(tmp_path, b'{"type": 3, "url": "a"}\n')
    assert (refusal(events)["code"], refusal(events)["field"]) == ("INPUT_RECORD_INVALID", "type")


@pytest.mark.parametrize("keep_going", [False, True])
def test_a_last_line_without_its_newline_is_a_cut_input(tmp_path: Path, keep_going: bool) -> None:
    """§2: a line without its ``\\n`` was cut, never a record, plain JSONL too (Rust
    ``Frame::Truncated``; the ``plain JSONL cut mid-line`` case of read/upstream.rs)."""
    status, events, batch = jsonl(tmp_path, b'{"url": "a"}\n{"url": "b"}', keep_going=keep_going)
    err = refusal(events)
    assert batch is None and (status, err["category"], err["code"], err["retryable"]) == \
        (74, "io", "UPSTREAM_TRUNCATED", False)


# --------------------------------------------------------------------------- an upstream stream


def test_an_upstream_stream_is_read_as_records_and_accounted(tmp_path: Path) -> None:
    """§13.1: no upstream meta or summary forwarded, a warning forwarded with ``origin`` and
    counted, the meta's identity as ``upstream``; §13 "domain events are data" (Rust
    ``Observed::Record`` keeps a domain event as a record)."""
    data = upstream({"type": "bookmark", "url": "a"}, {"type": "aoi:warning", "message": "stale"},
                    {"type": "bookmark", "url": "b"})
    status, events, batch = jsonl(tmp_path, data)
    assert status == 0 and batch is not None
    assert [(ln, r.url) for ln, r in batch.records] == [(2, "a"), (4, "b")]
    assert [e["type"] for e in events] == ["aoi:meta", "aoi:warning", "aoi:summary"]
    assert events[1]["origin"] == "outline" and events[-1]["warning_count"] == 1
    assert events[-1]["upstream"] == {"tool": "outline", "tool_version": "1.8.2",
                                      "schema_name": "com.example.outline.events", "schema_version": "1.0.0"}
    assert events[-1]["input_count"] == 2


def test_an_upstream_error_ends_the_run_before_anything_is_done(tmp_path: Path) -> None:
    """§13.1: forwarded with ``origin``, ``ok:false`` with ``caused_by`` (the retry fields) and
    ``upstream``; exit 1, a failure recorded in ``caused_by`` (docs/discovery.md "Exit codes")."""
    data = upstream({"type": "bookmark", "url": "a"}, RL, summary={"ok": False, "reason": "failed"})
    status, events, batch = jsonl(tmp_path, data)
    assert batch is None and status == 1
    (forwarded,) = errors_of(events)
    assert (forwarded["origin"], forwarded["code"], forwarded["retry_after_ms"]) == \
        ("outline", "UPSTREAM_RATE_LIMIT", 7200)
    summary = events[-1]
    assert (summary["ok"], summary["reason"], summary["error_count"], summary["input_count"]) == (False, "failed", 1, 1)
    assert summary["caused_by"] == {"origin": "outline", "category": "rate_limited", "code": "UPSTREAM_RATE_LIMIT",
                                    "retryable": True, "retry_after_ms": 7200}
    assert summary["upstream"]["tool"] == "outline"


def test_continue_on_error_takes_an_upstream_error_as_data(tmp_path: Path) -> None:
    """§13.1 "unless --continue-on-error is set": forwarded, counted, and the records are read."""
    data = upstream({"type": "bookmark", "url": "a"}, RL, summary={"partial": True})
    status, events, batch = jsonl(tmp_path, data, keep_going=True)
    assert status == 0 and batch is not None and [r.url for _, r in batch.records] == ["a"]
    assert [e["code"] for e in batch.upstream_errors] == ["UPSTREAM_RATE_LIMIT"]
    assert errors_of(events)[0]["origin"] == "outline" and events[-1]["error_count"] == 1


def test_an_upstream_ok_false_without_an_error_fails_unless_continue_on_error(tmp_path: Path) -> None:
    """§13.1 upstream outcome; Rust ``UpstreamState``: no error and no ``caused_by`` upstream, so
    none here (the spec asks for one only "because of an upstream error")."""
    data = upstream({"type": "bookmark", "url": "a"}, summary={"ok": False, "reason": "cancelled"})
    status, events, batch = jsonl(tmp_path, data)
    assert (status, batch, events[-1]["ok"], "caused_by" in events[-1]) == (1, None, False, False)
    status, _, batch = jsonl(tmp_path, data, keep_going=True)
    assert status == 0 and batch is not None and len(batch.records) == 1


@pytest.mark.parametrize("keep_going", [False, True])
def test_an_upstream_cut_before_its_summary_is_an_io_error_in_either_mode(tmp_path: Path,
                                                                          keep_going: bool) -> None:
    """§13.1: EOF without the upstream summary is ``ok:false`` after an ``io`` error: Rust's
    ``UPSTREAM_TRUNCATED``, exit 74; what came before it is still forwarded, nothing is done."""
    data = upstream({"type": "aoi:warning", "message": "w"}, {"type": "bookmark", "url": "a"}, cut=True)
    status, events, batch = jsonl(tmp_path, data, keep_going=keep_going)
    assert batch is None and status == 74
    assert [e["type"] for e in events] == ["aoi:meta", "aoi:warning", "aoi:error", "aoi:summary"]
    err = events[2]
    assert (err["scope"], err["category"], err["code"], "origin" in err) == \
        ("process", "io", "UPSTREAM_TRUNCATED", False)
    assert "from outline" in err["message"] and events[-1]["upstream"]["tool"] == "outline"


def test_an_unknown_framework_event_forbids_success_in_either_mode(tmp_path: Path) -> None:
    """§13: no success over an ``aoi:`` event not interpreted; Rust's ``unsupported``
    ``UPSTREAM_UNKNOWN_FRAMEWORK_EVENT`` (exit 69), even with ``--continue-on-error``."""
    data = upstream({"type": "aoi:novel"}).replace(b'"1.0-alpha"', b'"1.1"')
    status, events, batch = jsonl(tmp_path, data, keep_going=True)
    err = refusal(events)
    assert batch is None
    assert (status, err["category"], err["code"]) == (69, "unsupported", "UPSTREAM_UNKNOWN_FRAMEWORK_EVENT")


def test_an_upstream_that_breaks_part_one_is_a_protocol_violation(tmp_path: Path) -> None:
    """§8.1 a lost line (a ``seq`` gap), found by the verifier: Rust's ``validation``
    ``UPSTREAM_PROTOCOL_VIOLATION``."""
    lines = upstream({"type": "bookmark", "url": "a"}, {"type": "bookmark", "url": "b"}).split(b"\n")
    del lines[1]
    status, events, _ = jsonl(tmp_path, b"\n".join(lines), keep_going=True)
    err = refusal(events)
    assert (status, err["category"], err["code"]) == (65, "validation", "UPSTREAM_PROTOCOL_VIOLATION")
    assert "SEQ_GAP" in err["message"]


def test_fail_fast_forwards_nothing_but_counts_the_upstream(tmp_path: Path) -> None:
    """§12.2 writes nothing on a bad line; §13.1 upstream warnings MUST still be counted."""
    data = upstream({"type": "aoi:warning", "message": "w"}, {"type": "bookmark", "urls": "x"})
    status, events, _ = jsonl(tmp_path, data)
    assert (status, refusal(events)["code"], refusal(events)["line_number"]) == (65, "INPUT_RECORD_INVALID", 3)
    assert events[-1]["warning_count"] == 1


def test_an_unknown_category_is_forwarded_as_written_and_decided_as_internal(tmp_path: Path) -> None:
    """§9.4, the Rust test ``an_unknown_category_from_a_newer_minor_is_forwarded_unchanged_and_decided_as_internal``:
    a newer minor's category is forwarded unchanged; the run decides on it as ``internal`` with its
    own retry fields."""
    quota = {"type": "aoi:error", "category": "quota_exhausted", "code": "QUOTA_GONE", "message": "m",
             "retryable": True, "retry_after_ms": 60000, "details": {"plan": "free"}}
    data = upstream({"type": "bookmark", "url": "a"}, quota,
                    summary={"ok": False, "reason": "failed"}).replace(b'"1.0-alpha"', b'"1.1"')
    status, events, batch = jsonl(tmp_path, data, keep_going=True)
    assert status == 0 and batch is not None
    (forwarded,) = errors_of(events)
    assert (forwarded["category"], forwarded["details"], forwarded["origin"]) == \
        ("quota_exhausted", {"plan": "free"}, "outline")
    status, events, _ = jsonl(tmp_path, data)
    assert status == 1
    assert events[-1]["caused_by"] == {"origin": "outline", "category": "internal", "code": "QUOTA_GONE",
                                       "retryable": True, "retry_after_ms": 60000}


# --------------------------------------------------------------------------- where the input is


READERS = [read_records, read_document]


@pytest.mark.parametrize("reader", READERS)
def test_a_file_that_cannot_be_opened_is_categorized_as_rust_cannot_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: Any) -> None:
    """Rust ``ErrorEvent::cannot_open``: not found ``not_found`` ``FILE_NOT_FOUND`` (66), permission
    ``authz`` ``FILE_NOT_READABLE`` (77), anything else ``io`` ``FILE_OPEN_FAILED`` (74), with the
    path as ``target``; a directory opens in Rust and fails to read: ``io`` ``INPUT_READ_FAILED``."""
    missing = str(tmp_path / "missing")
    status, events, _ = run(lambda out: reader(out, missing, Rec, continue_on_error=False))
    assert (status, refusal(events)["category"], refusal(events)["code"], refusal(events)["target"]) == \
        (66, "not_found", "FILE_NOT_FOUND", missing)
    status, events, _ = run(lambda out: reader(out, str(tmp_path), Rec, continue_on_error=False))
    assert (status, refusal(events)["code"]) == (74, "INPUT_READ_FAILED")
    for exc, expected in ((PermissionError(errno.EACCES, "Permission denied"), (77, "authz", "FILE_NOT_READABLE")),
                          (OSError(errno.ELOOP, "Too many levels of symbolic links"), (74, "io", "FILE_OPEN_FAILED"))):
        def refuse(*_a: Any, _e: OSError = exc, **_k: Any) -> Any:
            raise _e
        monkeypatch.setattr(records, "open", refuse, raising=False)
        status, events, _ = run(lambda out: reader(out, "in.x", Rec, continue_on_error=False))
        assert (status, refusal(events)["category"], refusal(events)["code"]) == expected
        assert refusal(events)["message"].startswith("cannot open in.x: ")
    monkeypatch.undo()


class FakeStdin:
    def __init__(self, data: bytes, tty: bool = False, fail: bool = False) -> None:
        self.buffer = self
        self._data, self._tty, self._fail = BytesIO(data), tty, fail

    def isatty(self) -> bool:
        return self._tty

    def read(self, n: int = -1) -> bytes:
        if self._fail:
            raise OSError(errno.EIO, "Input/output error")
        return self._data.read(n)


def test_dash_is_standard_input_for_both_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """§12.1 ``--input-json -`` and ``--input-jsonl -``."""
    monkeypatch.setattr("sys.stdin", FakeStdin(b'{"url": "a"}\n'))
    _, _, batch = run(lambda out: read_records(out, "-", Rec, continue_on_error=False))
    assert batch is not None and [r.url for _, r in batch.records] == ["a"]
    monkeypatch.setattr("sys.stdin", FakeStdin(b'[{"url": "a"}, {"url": "b"}]'))
    _, _, batch = run(lambda out: read_document(out, "-", Rec, continue_on_error=False))
    assert batch is not None and [r.url for _, r in batch.records] == ["a", "b"]


def test_standard_input_that_is_closed_a_terminal_or_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed stdin is an empty input (as Rust's stdin); a terminal is refused rather than waited
    on (this SDK); a read that fails is Rust's ``io`` ``INPUT_READ_FAILED``."""
    monkeypatch.setattr("sys.stdin", None)
    _, _, batch = run(lambda out: read_records(out, "-", Rec, continue_on_error=False))
    assert batch is not None and batch.records == [] and batch.input_count == 0
    _, events, _ = run(lambda out: read_document(out, "-", Rec, continue_on_error=False))
    assert refusal(events)["code"] == "INPUT_JSON_PARSE_ERROR"  # an empty document
    monkeypatch.setattr("sys.stdin", FakeStdin(b"", tty=True))
    status, events, _ = run(lambda out: read_document(out, "-", Rec, continue_on_error=False))
    assert (status, refusal(events)["code"], refusal(events)["field"]) == (64, "STDIN_IS_TERMINAL", "input_json")
    monkeypatch.setattr("sys.stdin", FakeStdin(b"", fail=True))
    for reader in READERS:
        status, events, _ = run(lambda out, read=reader: read(out, "-", Rec, continue_on_error=True))
        assert (status, refusal(events)["category"], refusal(events)["code"]) == (74, "io", "INPUT_READ_FAILED")


# --------------------------------------------------------------------------- Context.read_records


def context(*argv: str) -> Context:
    tool = Tool("t", "1.0.0", description="d", schema_name="io.example.t.events",
                schema_versions=["1.0.0"], schema_id="https://example.com/t/{version}.json")
    cmd = tool.command("import", summary="s", read_only=False, groups=[INPUT_JSONL, INPUT_JSON], record=Rec)
    args = tool.parser.parse_args(["import", *argv])
    return Context(cmd, args, Emitter(BytesIO(), tool.identity()), True, "1.0.0")


def test_context_reads_the_flag_given_and_wants_exactly_one(tmp_path: Path) -> None:
    """Rust ``Input::open``: neither flag is ``usage`` ``INPUT_REQUIRED``, field ``input_jsonl``;
    both is a usage error too (Rust: clap's ``conflicts_with``)."""
    src = tmp_path / "in.json"
    src.write_bytes(b'{"url": "a"}')
    assert [r.url for _, r in context("--input-json", str(src)).read_records(Rec).records] == ["a"]
    with pytest.raises(AoiError) as e:
        context().read_records(Rec)
    assert (e.value.category, e.value.code, e.value.field, e.value.exit_code) == \
        ("usage", "INPUT_REQUIRED", "input_jsonl", 64)
    with pytest.raises(AoiError) as e:
        context("--input-json", str(src), "--input-jsonl", str(src)).read_records(Rec)
    assert (e.value.category, e.value.code) == ("usage", "CONFLICTING_ARGUMENTS")
