"""The process harness on real processes: every exit has a summary, no traceback ever
(AOI-CLI §4, §6, §7, §9.2 internal, §18.2 check 10)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lines, verdict

TOOL = Path(__file__).parent / "data" / "harness_tool.py"
ENV = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))


def start(*args: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(TOOL), *args], env=ENV,  # type: ignore[call-overload]
                            stdout=kw.pop("stdout", subprocess.PIPE), stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, **kw)


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, str(TOOL), *args], env=ENV, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def test_success_exits_0_with_ok_true() -> None:
    proc = run("ok")
    assert proc.returncode == 0 and proc.stderr == b""
    assert lines(proc.stdout)[-1]["ok"] is True
    assert verdict(proc.stdout) == 0


def test_an_exception_is_an_internal_error_never_a_traceback() -> None:
    proc = run("raise")
    assert proc.returncode == 70  # §6 EX_SOFTWARE
    assert b"Traceback" not in proc.stdout + proc.stderr
    assert b"secret-value-never-shown" not in proc.stdout + proc.stderr
    events = lines(proc.stdout)
    err = events[-2]
    assert (err["type"], err["category"], err["scope"], err["retryable"]) == (
        "aoi:error", "internal", "process", False)
    assert events[-1]["ok"] is False and events[-1]["reason"] == "failed"
    assert verdict(proc.stdout) == 1


def test_an_aoi_error_exits_with_its_categorys_code() -> None:
    proc = run("notfound")
    assert proc.returncode == 66  # EX_NOINPUT (docs/discovery.md "Exit codes")
    events = lines(proc.stdout)
    assert events[1]["category"] == "not_found" and events[1]["target"] == "i9"
    assert verdict(proc.stdout) == 1


def test_sys_exit_still_ends_with_a_summary() -> None:
    proc = run("exit3")
    assert proc.returncode == 3
    assert lines(proc.stdout)[-1]["ok"] is False


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_gives_a_cancelled_summary(sig: int, code: int) -> None:
    proc = start("sleep")
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the meta: the tool is running
    assert b"aoi:meta" in first
    proc.send_signal(sig)
    # Read through the same buffered reader as the first line: communicate() reads the fd
    # itself and would lose a line readline() had already buffered.
    rest = proc.stdout.read()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout=10)
    assert proc.returncode == code  # §6 / §7
    assert err == b""
    events = lines(first + rest)
    assert events[-1]["ok"] is False and events[-1]["reason"] == "cancelled"
    # As the Rust SDK: no aoi:error, the signal named (docs/discovery.md "Exit codes").
    assert events[-1]["properties"] == {"signal": signal.Signals(sig).name}
    assert not [e for e in events if e["type"] == "aoi:error"]
    assert verdict(first + rest) == 1


def test_a_passed_timeout_is_a_timeout_error_and_exit_124() -> None:
    # §16.1 --timeout, §6 124: the run that outlives its deadline ends as the Rust SDK's does.
    proc = run("deadline")
    assert proc.returncode == 124 and proc.stderr == b""
    events = lines(proc.stdout)
    err, summary = events[-2], events[-1]
    assert (err["type"], err["category"], err["code"], err["scope"], err["retryable"]) == (
        "aoi:error", "timeout", "TIMEOUT", "process", True)
    assert summary["ok"] is False and summary["reason"] == "timeout"
    assert verdict(proc.stdout) == 1


def test_a_closed_pipe_ends_quietly_with_141_even_at_shutdown() -> None:
    for mode in ("many", "flood"):
        proc = start(mode)
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away (head -1)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 141, (mode, err)
        assert err == b"", err  # no "Exception ignored ... BrokenPipeError"


def test_a_full_stdout_is_exit_74_never_success() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    for mode in ("ok", "many", "raise"):
        with open("/dev/full", "wb") as full:
            proc = start(mode, stdout=full)
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 74, (mode, err)
        assert err.count(b"\n") == 1 and b"Traceback" not in err and b"Exception" not in err


def test_a_closed_stdout_is_exit_74() -> None:
    proc = subprocess.run(f"exec {sys.executable} {TOOL} ok >&-", shell=True, env=ENV,
                          capture_output=False, stderr=subprocess.PIPE, timeout=30, check=False)
    assert proc.returncode == 74
    assert b"Traceback" not in proc.stderr


