"""Tests of machinemode.cursor: opaque cursors bound to their query (AOI-CLI §15, §16.1, §9.2)."""

from __future__ import annotations

import base64

import pytest

from machinemode.cursor import CURSOR_CATEGORY, CursorCodec, CursorError, query_binding

Q = {"query": "agent", "limit": 2}


@pytest.fixture
def codec() -> CursorCodec:
    return CursorCodec(b"s" * 32)


def test_a_cursor_round_trips_its_position(codec: CursorCodec) -> None:
    """§15: next_cursor continues where the truncated page ended."""
    token = codec.encode({"offset": 40, "after": "doc_9"}, "search", Q)
    assert codec.decode(token, "search", dict(Q)) == {"offset": 40, "after": "doc_9"}


def test_the_token_is_urlsafe_base64_without_padding(codec: CursorCodec) -> None:
    """Opaque and safe as one argv word (§16.1 --cursor TOKEN)."""
    for i in range(20):
        token = codec.encode(i, "search", {"q": "x" * i})
        assert "=" not in token and "+" not in token and "/" not in token
        base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def test_query_argument_order_does_not_matter(codec: CursorCodec) -> None:
    assert query_binding("search", {"a": 1, "b": 2}) == query_binding("search", {"b": 2, "a": 1})
    token = codec.encode(1, "search", {"a": 1, "b": 2})
    assert codec.decode(token, "search", {"b": 2, "a": 1}) == 1


@pytest.mark.parametrize("command,query", [("search", {"query": "other", "limit": 2}),
                                           ("search", {"query": "agent", "limit": 3}),
                                           ("list", Q)])
def test_a_cursor_for_another_query_or_command_is_refused(codec: CursorCodec, command: str,
                                                          query: dict) -> None:  # type: ignore[type-arg]
    """A cursor is bound to the query that produced it: reusing it elsewhere is a validation error (§9.2)."""
    token = codec.encode(1, "search", Q)
    with pytest.raises(CursorError) as e:
        codec.decode(token, command, query)
    assert (e.value.category, e.value.code, e.value.retryable) == ("validation", "CURSOR_MISMATCH", False)


def test_a_tampered_cursor_is_refused(codec: CursorCodec) -> None:
    token = codec.encode({"offset": 20}, "search", Q)
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[-3] ^= 0x01
    forged = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(CursorError) as e:
        codec.decode(forged, "search", Q)
    assert e.value.category == CURSOR_CATEGORY and e.value.code == "CURSOR_INVALID"


@pytest.mark.parametrize("cut", [1, 5, 17, 30])
def test_a_truncated_cursor_is_refused(codec: CursorCodec, cut: int) -> None:
    token = codec.encode({"offset": 20}, "search", Q)
    with pytest.raises(CursorError):
        codec.decode(token[:cut], "search", Q)


@pytest.mark.parametrize("junk", ["", "not a cursor", "abc=", "a/b+c", "////", "AQ", "%%%"])
def test_garbage_is_refused_never_crashes(codec: CursorCodec, junk: str) -> None:
    """A cursor is caller input: bad input gets a typed error (CONVENTIONS: no panic on input)."""
    with pytest.raises(CursorError):
        codec.decode(junk, "search", Q)


def test_a_cursor_signed_with_another_secret_is_refused(codec: CursorCodec) -> None:
    """A foreign cursor (another install, another tool) is refused."""
    token = CursorCodec(b"other").encode(1, "search", Q)
    with pytest.raises(CursorError):
        codec.decode(token, "search", Q)


def test_without_a_secret_damage_is_still_detected() -> None:
    plain = CursorCodec(None)
    token = plain.encode(3, "search", Q)
    assert plain.decode(token, "search", Q) == 3
    with pytest.raises(CursorError):
        plain.decode(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1], "search", Q)
