"""The Rust verifier's held-out spec corpus (``crates/aoi/tests/data/spec-corpus``), read by this
package's consumer: every case's verdict, written from the sentence the case quotes, must be the
Python consumer's too, so that a rule holds on every consumer of the standard and not only on
``aoi verify``. Each case gives the exact stdout (``lines`` or ``raw_hex``), how the producer
ended (``exit``: a code or ``{"signal": N}``), whether the command is unbounded, and the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from machinemode.consumer import FAILED, KILLED, read_stream

CORPUS = Path(__file__).resolve().parents[3] / "crates" / "aoi" / "tests" / "data" / "spec-corpus"


def _cases() -> List[Tuple[str, Dict[str, Any]]]:
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            cases.append((f"{path.stem}:{case['name']}", case))
    return cases


def _bytes(case: Dict[str, Any]) -> bytes:
    if "raw_hex" in case:
        return bytes.fromhex(case["raw_hex"])
    return b"".join(line.encode("utf-8") + b"\n" for line in case["lines"])


def _end(case: Dict[str, Any]) -> Tuple[Optional[int], Optional[int]]:
    end = case.get("exit")
    if isinstance(end, dict):
        return None, int(end["signal"])
    return (int(end) if end is not None else None), None


CASES = _cases()


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 300, f"{len(CASES)} cases in {CORPUS}"


@pytest.mark.parametrize("name,case", CASES, ids=[n for n, _ in CASES])
def test_the_python_consumer_gives_the_verdict_the_sentence_settles(name: str, case: Dict[str, Any]) -> None:
    exit_code, signal = _end(case)
    reading = read_stream(_bytes(case), exit_code=exit_code, signal=signal, unbounded=bool(case.get("unbounded")))
    conclusion = reading.conclusion
    # `killed` is this consumer's name for a failed run a signal ended; the Rust verifier says
    # `failed` for it.
    verdict = FAILED if conclusion.verdict == KILLED else conclusion.verdict
    assert verdict == case["expect"], f"{name}: {case['spec']}\n{conclusion}"


@pytest.mark.parametrize(
    "name,case",
    [(n, c) for n, c in CASES if c.get("notices") or c.get("not_reported")],
    ids=[n for n, c in CASES if c.get("notices") or c.get("not_reported")],
)
def test_the_python_consumer_raises_the_notices_a_case_names_and_not_what_it_rules_out(
    name: str, case: Dict[str, Any]
) -> None:
    # A SHOULD is testable only through its notice: the case names those it must raise
    # (`notices`) and the codes it must not report at any level (`not_reported`).
    exit_code, signal = _end(case)
    reading = read_stream(_bytes(case), exit_code=exit_code, signal=signal, unbounded=bool(case.get("unbounded")))
    findings = reading.conclusion.findings
    raised = {f.code for f in findings if f.level == "notice"}
    for code in case.get("notices", []):
        assert code in raised, f"{name}: {case['spec']}\nno notice {code} in {findings}"
    reported = {f.code for f in findings}
    for code in case.get("not_reported", []):
        assert code not in reported, f"{name}: {case['spec']}\n{code} reported: {findings}"
