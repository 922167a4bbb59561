"""Tests of machinemode.redact (AOI-CLI §11, §18.2 check 9)."""

from __future__ import annotations

import pytest

from machinemode.redact import REDACTED, is_sensitive_name, redact_argv, redact_event, redact_url

CANARY = "c4n4ry-s3cr3t"


@pytest.mark.parametrize("name", ["--token", "--api-token", "--secret", "--password", "--passwd", "--api-key",
                                  "--credential", "--cookie", "--authorization", "--auth", "--bearer",
                                  "--private-key", "--client-secret", "DB_PASSWORD", "Authorization"])
def test_every_name_on_the_11_list_is_sensitive(name: str) -> None:
    """§11: flags containing token, secret, password, passwd, key, credential, cookie, ..."""
    assert is_sensitive_name(name)


@pytest.mark.parametrize("name", ["--idempotency-key", "cursor", "next_cursor", "--limit", "query", "type"])
def test_the_standard_non_secret_names_are_kept(name: str) -> None:
    """docs/discovery.md x-aoi.secret: idempotency_key and cursor are not secrets."""
    assert not is_sensitive_name(name)


def test_userinfo_and_secret_query_parameters_are_removed_from_urls() -> None:
    """§11: URLs with credentials, tokens, signatures, SAS parameters, sig/token/access_token/code/key."""
    url = f"https://user:{CANARY}@example.com/p?token={CANARY}&sig={CANARY}&access_token={CANARY}&code={CANARY}" \
          f"&key={CANARY}&page=2"
    out = redact_url(url)
    assert CANARY not in out and "user" not in out
    assert "page=2" in out and out.startswith("https://") and "example.com/p" in out


def test_a_url_without_secrets_is_unchanged_in_meaning() -> None:
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
    assert out["source"]["api_key"] == REDACTED and out["headers"] == {"X-Custom": REDACTED}


def test_known_secret_values_are_removed_wherever_they_appear() -> None:
    """§11 environment variable values: a value read from the environment is replaced."""
    out = redact_event({"type": "aoi:error", "code": "E", "message": f"login as {CANARY} failed"},
                       secrets=[CANARY])
    assert out["message"] == f"login as {REDACTED} failed" and out["code"] == "E"


def test_argv_values_of_sensitive_flags_are_redacted() -> None:
    """§11: aoi:meta.args must be redacted; both --flag VALUE and --flag=VALUE."""
    argv = ["search", "q", "--api-token", CANARY, f"--password={CANARY}", "-H", f"X-Key: {CANARY}",
            f"--url=https://u:{CANARY}@h/", "--limit", "2", "--idempotency-key", "k1"]
    out = redact_argv(argv)
    assert CANARY not in " ".join(out)
    assert out[:4] == ["search", "q", "--api-token", REDACTED]
    assert out[-4:] == ["--limit", "2", "--idempotency-key", "k1"]
