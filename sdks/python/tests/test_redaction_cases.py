"""The shared redaction case table (``tests/redaction/cases.json``, AOI-CLI §11) against machinemode.redact.

The Rust SDK's ``aoi::surface::redact`` is checked against the same table, so both SDKs redact alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from machinemode.redact import args_fingerprint, redact_args, redact_argv, scrub

TABLE = Path(__file__).resolve().parents[3] / "tests" / "redaction" / "cases.json"


def _load() -> Dict[str, List[Dict[str, Any]]]:
    with TABLE.open(encoding="utf-8") as f:
        table: Dict[str, List[Dict[str, Any]]] = json.load(f)
    return table


CASES = _load()


def test_the_table_is_whole() -> None:
    assert set(CASES) == {"argv", "text"}
    assert len(CASES["argv"]) >= 40 and len(CASES["text"]) >= 20
    for case in CASES["argv"]:
        assert set(case) == {"argv", "redacted", "changed", "fingerprint"}, case
        assert case["changed"] == (case["argv"] != case["redacted"]), case
    for case in CASES["text"]:
        assert set(case) == {"text", "scrubbed"}, case


@pytest.mark.parametrize("case", CASES["argv"], ids=[f"argv{i}" for i in range(len(CASES["argv"]))])
def test_argv_is_redacted_as_the_table_says(case: Dict[str, Any]) -> None:
    args, changed = redact_args(case["argv"])
    assert (args, changed) == (case["redacted"], case["changed"]), case["argv"]
    assert redact_argv(case["argv"]) == case["redacted"], case["argv"]
    assert args_fingerprint(case["redacted"]) == case["fingerprint"], case["argv"]


@pytest.mark.parametrize("case", CASES["text"], ids=[f"text{i}" for i in range(len(CASES["text"]))])
def test_text_is_scrubbed_as_the_table_says(case: Dict[str, str]) -> None:
    assert scrub(case["text"]) == case["scrubbed"], case["text"]
    assert scrub(case["scrubbed"]) == case["scrubbed"], case["text"]
