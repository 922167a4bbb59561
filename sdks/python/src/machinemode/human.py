"""Human mode: the same stream as machine mode, shown to a person (AOI-CLI §1.2).

A command writes the same events in both modes; in human mode the emitter writes into a
:class:`HumanStream`, which reads each line back and shows it as the Rust SDK's
``HumanRenderer`` does:

* a run of two or more domain events of one type whose fields are all scalars: a table, one
  column per field in the order the events have them, cells cut to 60 columns;
* any other domain event: ``field: value`` lines, a blank line between events (nested values
  as compact JSON);
* ``aoi:plan``: ``would ACTION TARGET``, and after the summary ``dry run: nothing was
  changed``;
* ``aoi:check``: ``✓ name`` or ``✗ name: detail``;
* errors and warnings on stderr, one line each (``TOOL: error: …``, its hint under it);
* the summary: ``more: COMMAND LINE --cursor NEXT`` (the whole line to paste) when the page
  was cut, ``replayed: …`` for an idempotent replay, ``(none)`` for a read that found nothing.

Every value goes through :func:`printable_line`, the terminal escaper (control characters and
bidirectional controls shown escaped, never obeyed). A command shapes its own events with
``@command.human``: a function ``(event_type, fields) -> Optional[str]`` whose text replaces
the default for that event. No colour, ever (``--no-color`` is accepted and changes nothing).
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["HumanHook", "HumanStream", "printable_line", "shell_word"]

#: A command's own rendering of one domain event: text replaces the default, ``None`` keeps it.
HumanHook = Callable[[str, Mapping[str, Any]], Optional[str]]

#: Rows of one table shown at once.
_TABLE_ROWS = 500
#: The widest a table cell is shown before it is cut with ``…``.
_CELL_COLUMNS = 60
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9\-_./=:,+@%]+\Z")


def _hostile(c: str) -> bool:
    return unicodedata.category(c) == "Cc" or c in _BIDI


def printable_line(text: str) -> str:
    """``text`` on one line with every control character and bidirectional control shown
    escaped (``\\n``, ``\\t``, ``\\r``, else ``\\u{1b}``), as the Rust SDK's
    ``aoi::surface::term::printable_line`` writes it: data is never an instruction to the
    terminal."""
    if not any(_hostile(c) for c in text):
        return text
    out = []
    for c in text:
        if not _hostile(c):
            out.append(c)
        elif c in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[c])
        else:
            out.append(f"\\u{{{ord(c):x}}}")
    return "".join(out)


def shell_word(text: str) -> str:
    """``text`` as one POSIX shell word, as the Rust SDK's ``shell_word``: as it is when every
    character is one no shell treats specially, else single-quoted."""
    if _PLAIN_WORD.match(text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 0 if unicodedata.combining(c)
               else 1 for c in text)


def _cut(text: str, columns: int) -> str:
    if _width(text) <= columns:
        return text
    out, used = [], 0
    for c in text:
        w = _width(c)
        if used + w > columns - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def _pad(text: str, columns: int) -> str:
    return text + " " * max(0, columns - _width(text))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def more_line(argv: Sequence[str], next_cursor: str) -> str:
    """The command line that shows the next page: the one typed, its ``--cursor`` replaced."""
    words: List[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--cursor":
            skip = True
            continue
        if arg.startswith("--cursor="):
            continue
        words.append(shell_word(arg.rsplit("/", 1)[-1] if i == 0 else arg))
    return " ".join([*words, "--cursor", shell_word(next_cursor)])


class HumanStream:
    """A binary sink for the emitter's lines that shows them to a person on ``stdout``."""

    def __init__(self, stdout: Optional[BinaryIO], tool: str, *, hook: Optional[HumanHook] = None,
                 argv: Optional[Sequence[str]] = None) -> None:
        self._out = stdout
        self._tool = tool
        self._hook = hook
        self._argv = list(sys.argv if argv is None else argv)
        if self._argv and self._argv[0].endswith(".py"):
            self._argv[0] = tool  # a script run through python: name the tool
        self._partial = bytearray()
        self._text = bytearray()
        self._waiting: List[Tuple[str, Dict[str, Any]]] = []
        self._plans = 0
        self._replayed = False

    def write(self, data: Any) -> int:
        self._partial += bytes(data)
        while b"\n" in self._partial:
            line, _, rest = bytes(self._partial).partition(b"\n")
            self._partial = bytearray(rest)
            self._render(json.loads(line.decode("utf-8")))
        return len(data)

    def _render(self, ev: Dict[str, Any]) -> None:
        etype = ev.get("type", "")
        fields = {k: v for k, v in ev.items() if k not in ("type", "aoi")}
        if etype == "aoi:meta":
            return
        if etype in ("aoi:heartbeat", "aoi:progress"):
            # A stream that goes on (a watch): what waited is shown now, not at its end.
            self._show_waiting()
            return
        if not etype.startswith("aoi:"):
            if fields.pop("replayed", None) is True:
                self._replayed = True
            if self._waiting and (self._waiting[0][0] != etype or len(self._waiting) >= _TABLE_ROWS):
                self._show_waiting()
            self._waiting.append((etype, fields))
            return
        self._show_waiting()
        if etype in ("aoi:error", "aoi:warning"):
            self._diagnostic(etype, fields)
        elif etype == "aoi:plan":
            self._plans += 1
            target = f" {printable_line(_cell(fields['target']))}" if fields.get("target") else ""
            detail = f"  ({printable_line(_cell(fields['detail']))})" if fields.get("detail") else ""
            self._line(f"would {printable_line(_cell(fields.get('action', 'change')))}{target}{detail}")
        elif etype == "aoi:check":
            mark = "✓" if fields.get("ok") is True else "✗"
            detail = f": {printable_line(_cell(fields['detail']))}" if fields.get("detail") else ""
            self._line(f"{mark} {printable_line(_cell(fields.get('name')))}{detail}")
        elif etype == "aoi:summary":
            self._summary(fields)

    def _diagnostic(self, etype: str, ev: Mapping[str, Any]) -> None:
        kind = "error" if etype == "aoi:error" else "warning"
        where = f" (input line {ev['line_number']})" if "line_number" in ev else ""
        target = f"{printable_line(_cell(ev['target']))}: " if ev.get("target") else ""
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"{self._tool}: {kind}{where}: {target}"
                                 f"{printable_line(_cell(ev.get('message')))}\n")
                if ev.get("hint") and ev.get("category") != "usage":
                    sys.stderr.write(f"hint: {printable_line(_cell(ev['hint']))}\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def _summary(self, s: Mapping[str, Any]) -> None:
        if self._plans:
            self._line("dry run: nothing was changed")
        props = s.get("properties")
        if self._replayed or (isinstance(props, dict) and props.get("idempotent_replay") is True):
            self._line("replayed: an earlier run with this --idempotency-key did this; "
                       "nothing was done again")
        if s.get("ok") is True and s.get("reason") != "skipped" and not self._plans and s.get("count") == 0:
            self._line("(none)")
        if s.get("truncated") is True and isinstance(s.get("next_cursor"), str):
            self._line(f"more: {more_line(self._argv, s['next_cursor'])}")

    def _show_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        rest: List[Dict[str, Any]] = []
        for etype, fields in waiting:
            text = self._hook(etype, fields) if self._hook is not None else None
            if text is None:
                rest.append(fields)
            else:
                for line in text.splitlines():
                    self._line(printable_line(line))
        if len(rest) >= 2 and all(not isinstance(v, (dict, list)) for f in rest for v in f.values()):
            self._table(rest)
            return
        for i, fields in enumerate(rest):
            if i:
                self._line("")
            width = max((_width(k) for k in fields), default=0)
            for key, value in fields.items():
                self._line(f"{_pad(printable_line(key) + ':', width + 1)} {printable_line(_cell(value))}")

    def _table(self, rows: List[Dict[str, Any]]) -> None:
        columns: List[str] = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        cells = [[_cut(printable_line(_cell(row.get(c))), _CELL_COLUMNS) for c in columns]
                 for row in rows]
        widths = [max([_width(printable_line(c))] + [_width(r[i]) for r in cells])
                  for i, c in enumerate(columns)]
        self._line("  ".join(_pad(printable_line(c).upper(), w) for c, w in zip(columns, widths)).rstrip())
        for r in cells:
            self._line("  ".join(_pad(c, w) for c, w in zip(r, widths)).rstrip())

    def _line(self, text: str) -> None:
        self._text += (text + "\n").encode("utf-8", "replace")

    def flush(self) -> None:
        if self._out is None:
            raise OSError(9, "stdout is closed")
        data, self._text = bytes(self._text), bytearray()
        view = memoryview(data)
        while view:
            n = self._out.write(view)
            view = view[n or 0:]
        self._out.flush()
