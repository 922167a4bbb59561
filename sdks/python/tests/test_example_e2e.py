"""The bookmarks example end to end: every stream through `aoi verify --schema-from`, and
`aoi lint --tool` with no configuration (AOI-CLI §18.2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import EXAMPLE, aoi_bin, lines


@pytest.fixture()
def env(tmp_path: Path) -> Dict[str, str]:
    return dict(os.environ, XDG_DATA_HOME=str(tmp_path))


def tool(env: Dict[str, str], *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, str(EXAMPLE), *args], env=env, input=stdin,
                          capture_output=True, timeout=60, check=False)


def verified(env: Dict[str, str], *args: str, stdin: bytes = b"") -> int:
    """Run the example in machine mode under `aoi verify --schema-from`; its exit status."""
    proc = subprocess.run([aoi_bin(), "verify", "--schema-from", str(EXAMPLE), "--",
                           str(EXAMPLE), *args, "--output", "jsonl"], env=env, input=stdin,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode in (0, 1), proc.stdout.decode() + proc.stderr.decode()
    return proc.returncode


def test_every_command_streams_verify_against_the_published_schema(env: Dict[str, str]) -> None:
    assert verified(env, "add", "https://example.com/a", "--title", "A", "--tag", "t") == 0
    assert verified(env, "add", "https://example.com/b", "--dry-run") == 0
    assert verified(env, "get", "b1") == 0
    assert verified(env, "get", "b9") == 1
    assert verified(env, "list", "--limit", "1") == 0
    assert verified(env, "search", "example") == 0
    assert verified(env, "update", "b1", "--title", "B") == 0
    assert verified(env, "delete", "b1") == 1  # refused without --confirm
    assert verified(env, "delete", "b1", "--confirm") == 0
    assert verified(env, "import", "--input-jsonl", "-",
                    stdin=b'{"url":"https://example.com/i"}\n') == 0
    assert verified(env, "import", "--input-jsonl", "-", "--continue-on-error",
                    stdin=b'{"url":"https://example.com/j"}\nnot json\n') == 1
    assert verified(env, "list", "--bogus") == 1  # a usage error is a complete stream


def test_list_is_bounded_and_the_cursor_continues(env: Dict[str, str]) -> None:
    for i in range(3):
        tool(env, "add", f"https://example.com/{i}")
    first = lines(tool(env, "list", "--limit", "2", "--output", "jsonl").stdout)
    summary = first[-1]
    assert summary["truncated"] is True and summary["count"] == 2  # §15
    rest = lines(tool(env, "list", "--cursor", summary["next_cursor"], "--output", "jsonl").stdout)
    assert [e["id"] for e in rest if e["type"] == "bookmark"] == ["b3"]
    assert rest[-1]["truncated"] is False


def test_a_record_the_store_refuses_is_an_item_error_with_its_line(env: Dict[str, str]) -> None:
    # §12.2: a bad record is fatal (fail-fast, nothing written) or an item error with its
    # line_number (continue-on-error), whether JSON or the store's own rules refuse it.
    stdin = b'{"url":"https://ok.example/"}\n{"url":"https://u:p@x.example/"}\n'
    fast = tool(env, "import", "--input-jsonl", "-", "--output", "jsonl", stdin=stdin)
    err = next(e for e in lines(fast.stdout) if e["type"] == "aoi:error")
    assert (fast.returncode, err["scope"], err["code"], err["line_number"]) == \
        (65, "process", "URL_HAS_CREDENTIALS", 2)
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 0
    going = tool(env, "import", "--input-jsonl", "-", "--continue-on-error", "--output", "jsonl",
                 stdin=stdin)
    events = lines(going.stdout)
    err = next(e for e in events if e["type"] == "aoi:error")
    assert (err["scope"], err["line_number"], err["field"]) == ("item", 2, "url")
    assert b"u:p@" not in going.stdout
    assert (events[-1]["ok"], events[-1]["partial"], events[-1]["count"], going.returncode) == \
        (False, True, 1, 65)


def test_import_takes_one_json_document_too(env: Dict[str, str], tmp_path: Path) -> None:
    # docs/discovery.md "--input-json": an array of records, bad items by item_index.
    doc = tmp_path / "in.json"
    doc.write_bytes(b'[{"url": "https://a.example/"}, 7, {"url": "https://b.example/", "tags": ["x"]}]')
    assert verified(env, "import", "--input-json", str(doc), "--continue-on-error") == 1
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 2
    fast = tool(env, "import", "--input-json", str(doc), "--output", "jsonl")
    err = next(e for e in lines(fast.stdout) if e["type"] == "aoi:error")
    assert (fast.returncode, err["code"], err["item_index"]) == (65, "INPUT_JSON_ITEM_INVALID", 1)
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 2


def test_a_cursor_is_bound_to_its_database_and_query(env: Dict[str, str], tmp_path: Path) -> None:
    # docs/discovery.md "Cursors": another query's cursor is CURSOR_MISMATCH, another store's
    # (signed with its own key) or an altered one CURSOR_INVALID; both validation, field cursor.
    other = str(tmp_path / "other.db")
    for db in (None, other):
        for i in range(3):
            tool(env, "add", f"https://example.com/{i}", *(("--db", db) if db else ()))
    token = lines(tool(env, "list", "--limit", "1", "--output", "jsonl").stdout)[-1]["next_cursor"]
    cases = [(["list", "--tag", "t", "--cursor", token], "CURSOR_MISMATCH"),
             (["search", "example", "--cursor", token], "CURSOR_MISMATCH"),
             (["list", "--db", other, "--cursor", token], "CURSOR_INVALID"),
             (["list", "--cursor", token[:-2] + ("AA" if token[-2:] != "AA" else "BB")], "CURSOR_INVALID")]
    for args, code in cases:
        proc = tool(env, *args, "--output", "jsonl")
        err = next(e for e in lines(proc.stdout) if e["type"] == "aoi:error")
        assert (err["category"], err["code"], err["field"], proc.returncode) == \
            ("validation", code, "cursor", 65), args


def test_a_replay_is_marked_in_its_summary_and_a_reused_key_is_a_conflict(env: Dict[str, str]) -> None:
    # docs/discovery.md "Idempotency keys", as the Rust SDK.
    first = lines(tool(env, "add", "https://example.com/k", "--idempotency-key", "k-1",
                       "--output", "jsonl").stdout)
    again = lines(tool(env, "add", "https://example.com/k", "--idempotency-key", "k-1",
                       "--output", "jsonl").stdout)
    assert [e for e in first if e["type"] == "created"] == \
        [{**e, "aoi": first[1]["aoi"]} for e in again if e["type"] == "created"]
    assert "properties" not in first[-1] and again[-1]["properties"] == {"idempotent_replay": True}
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 1
    reused = tool(env, "add", "https://example.com/other", "--idempotency-key", "k-1",
                  "--output", "jsonl")
    err = next(e for e in lines(reused.stdout) if e["type"] == "aoi:error")
    assert (err["category"], err["code"], err["field"], reused.returncode) == \
        ("conflict", "IDEMPOTENCY_KEY_REUSED", "idempotency_key", 65)
    bad = tool(env, "add", "https://example.com/z", "--idempotency-key", "x" * 256, "--output", "jsonl")
    assert bad.returncode == 64
    assert next(e for e in lines(bad.stdout) if e["type"] == "aoi:error")["code"] == "IDEMPOTENCY_KEY_INVALID"


def test_fail_fast_import_writes_nothing_and_names_the_line(env: Dict[str, str]) -> None:
    proc = tool(env, "import", "--input-jsonl", "-", "--output", "jsonl",
                stdin=b'{"url":"https://example.com/ok"}\n{"url": 3}\n')
    assert proc.returncode == 65  # §6 EX_DATAERR, §12.2
    err = next(e for e in lines(proc.stdout) if e["type"] == "aoi:error")
    assert err["line_number"] == 2 and err["field"] == "url"
    listed = lines(tool(env, "list", "--output", "jsonl").stdout)
    assert listed[-1]["count"] == 0


def refusal(proc: subprocess.CompletedProcess[bytes]) -> Dict[str, object]:
    """The process-scope error of a refused run, with its summary's reason."""
    events = lines(proc.stdout)
    err = next(e for e in events if e["type"] == "aoi:error")
    assert events[-1]["ok"] is False
    return {**err, "reason": events[-1]["reason"], "exit": proc.returncode}


def test_delete_refusals_follow_the_confirmation_profile(env: Dict[str, str]) -> None:
    # docs/discovery.md "Confirmation": categories, codes, fields, reason and exit codes.
    for i in range(2):
        tool(env, "add", f"https://example.com/q{i}")
    by_id = refusal(tool(env, "delete", "b1", "--output", "jsonl"))
    assert (by_id["category"], by_id["code"], by_id["field"], by_id["reason"], by_id["exit"]) == \
        ("precondition_failed", "CONFIRMATION_REQUIRED", "confirm", "denied", 77)
    no_count = refusal(tool(env, "delete", "--query", "example", "--confirm", "--output", "jsonl"))
    assert (no_count["code"], no_count["field"], no_count["exit"]) == \
        ("CONFIRM_COUNT_REQUIRED", "confirm_count", 77)
    wrong = refusal(tool(env, "delete", "--query", "example", "--confirm", "--confirm-count", "3",
                         "--output", "jsonl"))
    assert (wrong["category"], wrong["code"], wrong["reason"], wrong["exit"]) == \
        ("conflict", "CONFIRM_COUNT_MISMATCH", "denied", 77)
    # The count alone is not confirmation.
    alone = refusal(tool(env, "delete", "--query", "example", "--confirm-count", "2",
                         "--output", "jsonl"))
    assert alone["code"] == "CONFIRMATION_REQUIRED"
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 2
    assert tool(env, "delete", "--query", "example", "--confirm", "--confirm-count",
                "2").returncode == 0
    assert lines(tool(env, "list", "--output", "jsonl").stdout)[-1]["count"] == 0


def test_discovery_agrees_with_the_parser(env: Dict[str, str]) -> None:
    caps = json.loads(tool(env, "capabilities", "--output", "json").stdout)
    names: List[str] = [c["name"] for c in caps["commands"]]
    assert names == ["add", "get", "list", "search", "update", "delete", "import", "watch"]
    delete = next(c for c in caps["commands"] if c["name"] == "delete")
    assert delete["destructive"] and delete["requires_confirm"] and delete["supports_dry_run"]
    schema = json.loads(tool(env, "input-schema", "--command", "import", "--output",
                             "json").stdout)
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["record"]["required"] == ["url"]
    assert schema["properties"]["input_jsonl"]["x-aoi-format"] == "path"
    event_schema = json.loads(tool(env, "schema", "--output", "json").stdout)
    assert event_schema["$id"].startswith("https://")
    assert "bookmark" in event_schema["x-aoi"]["event_types"]
    bad = tool(env, "list", "--schema-version", "2", "--output", "jsonl")
    assert bad.returncode == 69 and lines(bad.stdout)[1]["code"] == "SCHEMA_VERSION_UNSUPPORTED"


def test_aoi_lint_passes_with_no_configuration() -> None:
    proc = subprocess.run([aoi_bin(), "lint", "--tool", str(EXAMPLE), "--format", "jsonl"],
                          capture_output=True, timeout=600, check=False,
                          cwd=str(EXAMPLE.parent))
    events = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    failed = [e for e in events if e["type"] == "aoi:check" and not e.get("ok")
              and e.get("severity") != "info"]
    assert proc.returncode == 0, json.dumps(failed)[:4000]
