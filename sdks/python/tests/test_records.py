"""``--input-json`` (docs/discovery.md "--input-json", the Rust SDK's ``Input::json``; §12)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from machinemode import AoiError, Emitter, Identity
from machinemode.records import read_document


@dataclasses.dataclass
class Rec:
    url: str
    title: Optional[str] = None


def read(tmp_path: Path, doc: bytes, *, keep_going: bool = False) -> "tuple[Any, List[Dict[str, Any]]]":
    src = tmp_path / "in.json"
    src.write_bytes(doc)
    buf = io.BytesIO()
    out = Emitter(buf, Identity("t", "1", "io.example.t.events", "1.0.0"))
    batch = read_document(out, str(src), Rec, continue_on_error=keep_going)
    out.summary(True)
    return batch, [json.loads(line) for line in buf.getvalue().splitlines()]


def test_an_object_is_one_record_and_an_array_many(tmp_path: Path) -> None:
    one, _ = read(tmp_path, b'{"url": "u1"}')
    assert [(i, r.url) for i, r in one.records] == [(0, "u1")] and one.input_count == 1
    many, _ = read(tmp_path, b'[{"url": "u1"}, {"url": "u2", "title": "T"}]')
    assert [(i, r.url, r.title) for i, r in many.records] == [(0, "u1", None), (1, "u2", "T")]
    empty, _ = read(tmp_path, b"[]")
    assert empty.records == [] and empty.input_count == 0


@pytest.mark.parametrize("doc,line", [(b'{"url": ', 1), (b'[{"url": "a"},\n{"url": }]', 2),
                                      (b'{"url": "a", "url": "b"}', None), (b'{"url": NaN}', None),
                                      (b"\xff", None), (b"", 1)])
def test_a_document_that_does_not_parse_is_refused_whole(tmp_path: Path, doc: bytes,
                                                         line: Optional[int]) -> None:
    with pytest.raises(AoiError) as e:
        read(tmp_path, doc, keep_going=True)  # even with continue-on-error: there are no items
    assert (e.value.category, e.value.code, e.value.line_number) == \
        ("validation", "INPUT_JSON_PARSE_ERROR", line)


def test_fail_fast_refuses_the_first_bad_item_with_its_index(tmp_path: Path) -> None:
    with pytest.raises(AoiError) as e:
        read(tmp_path, b'[{"url": "a"}, 3, {"urls": "b"}]')
    assert (e.value.code, e.value.item_index, e.value.exit_code) == ("INPUT_JSON_ITEM_INVALID", 1, 65)
    assert "a number, not an object" in e.value.message


def test_continue_on_error_reports_each_bad_item_and_keeps_the_rest(tmp_path: Path) -> None:
    batch, events = read(tmp_path, b'[{"url": "a"}, "x", {"urls": "b"}, {"url": "c"}]', keep_going=True)
    assert [r.url for _, r in batch.records] == ["a", "c"]
    assert (batch.input_count, batch.item_errors) == (4, 2)
    errs = [e for e in events if e["type"] == "aoi:error"]
    assert [(e["scope"], e["code"], e["item_index"]) for e in errs] == [
        ("item", "INPUT_JSON_ITEM_INVALID", 1), ("item", "INPUT_RECORD_INVALID", 2)]
    assert all("line_number" not in e for e in errs)
