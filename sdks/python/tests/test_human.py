"""Human mode's renderer (machinemode.human), held to the same outputs as the Rust SDK's
HumanRenderer (crates/aoi/src/surface/human.rs tests): the same stream shows the same text."""

from __future__ import annotations

import io
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import pytest

from machinemode.human import HumanStream, printable_line, shell_word

META = '{"type":"aoi:meta","aoi":{"seq":0,"run":"R"},"tool":"notes"}'


def render(lines: Sequence[str], argv: Sequence[str], hook: Any = None,
           capsys: Optional[pytest.CaptureFixture[str]] = None) -> Tuple[str, str]:
    out = io.BytesIO()
    stream = HumanStream(out, "notes", hook=hook, argv=list(argv))
    for line in lines:
        data = (line + "\n").encode()
        stream.write(data[: len(data) // 2])  # a line may come in pieces
        stream.write(data[len(data) // 2:])
        stream.flush()
    err = capsys.readouterr().err if capsys is not None else ""
    return out.getvalue().decode(), err


def test_a_page_of_one_flat_type_is_a_table_and_a_cut_page_names_the_next_command() -> None:
    out, _ = render([
        META,
        '{"type":"note","aoi":{"seq":1,"run":"R"},"id":"n1","text":"Buy milk","done":false}',
        '{"type":"note","aoi":{"seq":2,"run":"R"},"id":"n22","text":"Call\\u001b[31m Bob","done":true}',
        '{"type":"aoi:summary","aoi":{"seq":3,"run":"R"},"ok":true,"count":2,"truncated":true,'
        '"next_cursor":"c:2 x"}',
    ], ["/usr/bin/notes", "list", "--limit", "2", "--cursor", "c:0"])
    assert out == (
        "ID   TEXT                DONE\n"
        "n1   Buy milk            false\n"
        "n22  Call\\u{1b}[31m Bob  true\n"
        "more: notes list --limit 2 --cursor 'c:2 x'\n"
    )


def test_one_event_or_nested_fields_are_key_value_blocks() -> None:
    out, _ = render([
        META,
        '{"type":"note","aoi":{"seq":1,"run":"R"},"id":"n1","tags":["home"]}',
        '{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1}',
    ], ["notes", "show", "n1"])
    assert out == 'id:   n1\ntags: ["home"]\n'


def test_plans_replays_refusals_and_empty_reads_say_what_happened(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = render([
        META,
        '{"type":"aoi:plan","aoi":{"seq":1,"run":"R"},"action":"create","target":"note"}',
        '{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":0}',
    ], ["notes", "add", "x", "--dry-run"])
    assert out == "would create note\ndry run: nothing was changed\n"
    out, _ = render([
        META,
        '{"type":"created","aoi":{"seq":1,"run":"R"},"id":"n1"}',
        '{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1,'
        '"properties":{"idempotent_replay":true}}',
    ], ["notes", "add", "x"])
    assert out.startswith("id: n1\nreplayed: "), out
    out, err = render([
        META,
        '{"type":"aoi:error","aoi":{"seq":1,"run":"R"},"category":"precondition_failed",'
        '"code":"CONFIRM_REQUIRED","message":"rm deletes 2 notes","retryable":false,"hint":"add --confirm"}',
        '{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":false,"reason":"denied","count":0}',
    ], ["notes", "rm", "n1", "n2"], capsys=capsys)
    assert out == ""
    assert err == "notes: error: rm deletes 2 notes\nhint: add --confirm\n"
    out, _ = render([META, '{"type":"aoi:summary","aoi":{"seq":1,"run":"R"},"ok":true,"count":0}'],
                    ["notes", "list"])
    assert out == "(none)\n"


def test_a_hook_replaces_the_default_and_its_text_is_escaped_too() -> None:
    def hook(etype: str, fields: Mapping[str, Any]) -> Optional[str]:
        return f"- {fields['text']}" if etype == "note" else None

    out, _ = render([
        META,
        '{"type":"note","aoi":{"seq":1,"run":"R"},"text":"a\\u202eb"}',
        '{"type":"note","aoi":{"seq":2,"run":"R"},"text":"c"}',
        '{"type":"aoi:summary","aoi":{"seq":3,"run":"R"},"ok":true,"count":2}',
    ], ["notes"], hook=hook)
    assert out == "- a\\u{202e}b\n- c\n"


def test_a_stream_that_goes_on_shows_what_waited_at_each_heartbeat() -> None:
    lines: List[str] = [META, '{"type":"change","aoi":{"seq":1,"run":"R"},"path":"a"}',
                        '{"type":"aoi:heartbeat","aoi":{"seq":2,"run":"R"}}']
    out, _ = render(lines, ["notes", "watch"])
    assert out == "path: a\n"


def test_the_escaper_and_the_shell_words_are_the_rust_sdks() -> None:
    assert printable_line("tab\there\nnew\x1b[0m\u202e\u200f") == "tab\\there\\nnew\\u{1b}[0m\\u{202e}\\u{200f}"
    assert printable_line("plain é 文") == "plain é 文"
    assert shell_word("a-b_c./=:,+@%9") == "a-b_c./=:,+@%9"
    assert shell_word("it's here") == "'it'\\''s here'"
    assert shell_word("") == "''"
