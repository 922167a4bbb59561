"""Tests of machinemode.redact (AOI-CLI §11, §18.2 check 9)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

from machinemode.redact import (
    REDACTED,
    SENSITIVE_QUERY_KEYS,
    SENSITIVE_WORDS,
    args_fingerprint,
    input_fingerprint,
    is_sensitive_name,
    redact_args,
    redact_argv,
    redact_event,
    redact_url,
    scrub,
)

CANARY = "c4n4ry-s3cr3t"
RUST_REDACT = Path(__file__).resolve().parents[3] / "crates" / "aoi" / "src" / "surface" / "redact.rs"


def _rust_array(name: str) -> List[str]:
    source = RUST_REDACT.read_text(encoding="utf-8")
    match = re.search(rf"const {name}: \[&str; \d+\] = \[(.*?)\];", source, re.DOTALL)
    assert match, f"{name} not found in {RUST_REDACT}"
    return re.findall(r'"([^"]*)"', match.group(1))


def test_the_name_parts_and_query_keys_are_the_rust_sdks() -> None:
    """One list of §11 names for both SDKs: a change to the Rust list fails here until Python follows."""
    assert list(SENSITIVE_WORDS) == _rust_array("SENSITIVE_NAME_PARTS")
    keys = _rust_array("SECRET_QUERY_KEYS")
    assert len(keys) == len(SENSITIVE_QUERY_KEYS) and frozenset(keys) == SENSITIVE_QUERY_KEYS


@pytest.mark.parametrize("name", ["--token", "--api-token", "--secret", "--password", "--passwd", "--api-key",
                                  "--credential", "--cookie", "--authorization", "--auth", "--bearer",
                                  "--private-key", "--client-secret", "DB_PASSWORD", "Authorization",
                                  "-token", "--Client_Secret", "--idempotency-key", "--sort-key"])
def test_every_name_on_the_11_list_is_sensitive(name: str) -> None:
    """§11: flags containing token, secret, password, passwd, key, credential, cookie, ...; substrings,
    case-insensitive, ``_`` and ``-`` alike, so ``--idempotency-key`` is hidden in argv too."""
    assert is_sensitive_name(name)


@pytest.mark.parametrize("name", ["cursor", "next_cursor", "--limit", "query", "type", "--tokn", "", "--"])
def test_ordinary_names_are_not_sensitive(name: str) -> None:
    assert not is_sensitive_name(name)


def test_url_passwords_token_users_and_secret_query_values_are_replaced_raw() -> None:
    """§11: URLs with credentials, tokens, signatures, SAS parameters, sig/token/access_token/code/key.

    The marker is written raw (not percent-encoded); a plain user name stays so the echo still says who.
    """
    url = f"https://user:{CANARY}@example.com/p?token={CANARY}&sig={CANARY}&access_token={CANARY}&code={CANARY}" \
          f"&key={CANARY}&page=2"
    assert redact_url(url) == f"https://user:{REDACTED}@example.com/p?token={REDACTED}&sig={REDACTED}" \
                              f"&access_token={REDACTED}&code={REDACTED}&key={REDACTED}&page=2"
    assert redact_url(f"https://ghp_{CANARY}@github.com/o/r") == f"https://{REDACTED}@github.com/o/r"
    assert redact_url("ssh://git@github.com/o/r.git") == "ssh://git@github.com/o/r.git"


def test_a_url_without_secrets_is_unchanged() -> None:
    assert redact_url("https://example.com/a?page=2&q=x") == "https://example.com/a?page=2&q=x"


def test_events_are_redacted_at_any_depth_and_framework_fields_kept() -> None:
    """§11 applied before the event is written; §8.1 the framework fields are not the tool's data."""
    event = {"type": "hit", "aoi": {"seq": 1, "run": "r"}, "id": "doc",
             "source": {"url": f"https://h/x?token={CANARY}", "api_key": CANARY},
             "list": [f"see https://u:{CANARY}@h/"], "headers": {"X-Custom": CANARY},
             "note": f"Authorization: Bearer {CANARY}"}
    out = redact_event(event)
    assert CANARY not in repr(out)
    assert out["type"] == "hit" and out["aoi"] == {"seq": 1, "run": "r"} and out["id"] == "doc"
    assert out["source"] == {"url": f"https://h/x?token={REDACTED}", "api_key": REDACTED}
    assert out["list"] == [f"see https://u:{REDACTED}@h/"] and out["headers"] == {"X-Custom": REDACTED}
    assert out["note"] == f"Authorization: {REDACTED}"


def test_event_fields_named_idempotency_key_or_cursor_are_kept() -> None:
    """docs/discovery.md x-aoi.secret: an event's idempotency_key and cursors are not secrets."""
    event = {"type": "item", "idempotency_key": "k1", "next_cursor": "c2", "cursor": "c1", "sort_key": "date"}
    assert redact_event(event) == {**event, "sort_key": REDACTED}


def test_known_secret_values_are_removed_wherever_they_appear() -> None:
    """§11 environment variable values: a value read from the environment is replaced, encoded too."""
    out = redact_event({"type": "aoi:error", "code": "E", "message": f"login as {CANARY} failed",
                        "url": "https://h/v1/tok%2Fen/x"}, secrets=[CANARY, "tok/en", ""])
    assert out["message"] == f"login as {REDACTED} failed" and out["code"] == "E"
    assert out["url"] == f"https://h/v1/{REDACTED}/x"


def test_argv_values_of_sensitive_flags_are_redacted() -> None:
    """§11: aoi:meta.args must be redacted: --flag VALUE, --flag=VALUE, headers keep their name."""
    argv = ["search", "q", "--api-token", CANARY, f"--password={CANARY}", "-H", f"X-Key: {CANARY}",
            f"--url=https://u:{CANARY}@h/", "--limit", "2", "--idempotency-key", "k1"]
    out, changed = redact_args(argv)
    assert changed and CANARY not in " ".join(out)
    assert out == ["search", "q", "--api-token", REDACTED, f"--password={REDACTED}", "-H", f"X-Key: {REDACTED}",
                   f"--url=https://u:{REDACTED}@h/", "--limit", "2", "--idempotency-key", REDACTED]
    assert redact_argv(argv) == out


def test_argv_without_secrets_is_unchanged() -> None:
    argv = ["search", "agent operable", "--limit", "2", "-", "-5", "--", "--not-a-flag", "naïve café 日本語"]
    assert redact_args(argv) == (argv, False)


def test_scrub_is_idempotent() -> None:
    once = scrub(f"GET https://u:{CANARY}@h/?sig={CANARY} Bearer {CANARY} password={CANARY}")
    assert CANARY not in once and scrub(once) == once


def test_fingerprints_are_sha256_hex_and_unambiguous() -> None:
    """§11's preferred pattern: a digest in aoi:meta.input_fingerprint instead of an echo."""
    assert input_fingerprint(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", args_fingerprint(["search", "agent"]))
    assert args_fingerprint(["ab", "c"]) != args_fingerprint(["a", "bc"]) != args_fingerprint(["abc"])
    assert args_fingerprint([]) != args_fingerprint([""])
    assert args_fingerprint(["abc"]) != input_fingerprint(b"abc")
