"""Shared test support: the aoi binary (AOI_BIN) and a verifier helper."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

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
