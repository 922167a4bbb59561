"""Shared test support: the aoi binary (AOI_BIN), a verifier helper, and the CI rule for skips.

A test skips, saying why, when this machine lacks what it needs (the aoi binary, /dev/full,
click). Under CI (`CI=true`, or `AOI_TEST_REQUIRE_ALL=1`) every skip is a failure instead:
`.ci/run` installs every prerequisite, and a green run must mean that every test ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Generator, List

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bookmarks.py"
AOI_BIN = os.environ.get("AOI_BIN", "/work/main/target/debug/aoi")


def aoi_bin() -> str:
    """The aoi binary, or skip the test with the reason."""
    if not (os.path.isfile(AOI_BIN) and os.access(AOI_BIN, os.X_OK)) and not shutil.which(AOI_BIN):
        pytest.skip(f"aoi binary not found at {AOI_BIN} (set AOI_BIN; cargo build -p aoi-cli)")
    return AOI_BIN


def verify(stream: bytes, *extra: str) -> subprocess.CompletedProcess[bytes]:
    """Run `aoi verify --output jsonl` on a stream; returns the process."""
    return subprocess.run([aoi_bin(), "verify", "--output", "jsonl", *extra, "-"],
                          input=stream, capture_output=True, timeout=60, check=False)


def verdict(stream: bytes, *extra: str) -> int:
    """`aoi verify`'s exit status: 0 succeeded, 1 failed honestly, 65 violation."""
    proc = verify(stream, *extra)
    if proc.returncode == 65:
        sys.stderr.write(proc.stdout.decode("utf-8", "replace"))
    return proc.returncode


def lines(stream: bytes) -> List[Dict[str, Any]]:
    """Every line of a stream, decoded (each must end in a newline)."""
    assert stream.endswith(b"\n"), stream[-200:]
    return [json.loads(x) for x in stream.decode("utf-8").splitlines()]


def _skips_fail() -> bool:
    """True under CI (`CI=true`) or with `AOI_TEST_REQUIRE_ALL=1`."""
    def on(name: str) -> bool:
        return os.environ.get(name, "").lower() in ("1", "true")
    return on("CI") or on("AOI_TEST_REQUIRE_ALL")


def _as_failure(report: Any) -> None:
    """Turn a skip report into a failure that names the missing prerequisite."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI, where every prerequisite is installed: {reason} "
                       "(unset CI and AOI_TEST_REQUIRE_ALL to skip it locally)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _skips_fail() and not hasattr(report, "wasxfail"):
        _as_failure(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _skips_fail():
        _as_failure(report)
