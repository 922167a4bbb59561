"""Human mode: the same stream as machine mode, rendered as plain lines (AOI-CLI §1.2).

A command writes the same events in both modes; in human mode the emitter writes into a
:class:`HumanStream`, which prints each domain event as one line of ``key: value`` text on
stdout, plans as ``would ACTION TARGET``, errors and warnings on stderr, and the summary's
cursor and failure. No colour, ever (``--no-color`` is accepted and changes nothing).
"""

from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, Dict, Optional

__all__ = ["HumanStream"]

_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _CONTROL_RE.sub("?", text).replace("\n", " ")


class HumanStream:
    """A binary sink for the emitter's lines that writes human text to ``stdout``."""

    def __init__(self, stdout: Optional[BinaryIO], tool: str) -> None:
        self._out = stdout
        self._tool = tool
        self._pending = bytearray()
        self._text = bytearray()
        self._count = 0

    def write(self, data: Any) -> int:
        self._pending += bytes(data)
        while b"\n" in self._pending:
            line, _, rest = bytes(self._pending).partition(b"\n")
            self._pending = bytearray(rest)
            self._render(json.loads(line.decode("utf-8")))
        return len(data)

    def _render(self, ev: Dict[str, Any]) -> None:
        etype = ev.get("type", "")
        if etype == "aoi:meta" or etype == "aoi:heartbeat":
            return
        if etype in ("aoi:error", "aoi:warning"):
            import sys

            kind = "error" if etype == "aoi:error" else "warning"
            where = f" (input line {ev['line_number']})" if "line_number" in ev else ""
            try:
                if sys.stderr is not None:
                    sys.stderr.write(f"{self._tool}: {kind}{where}: {_clean(ev.get('message'))}\n")
                    if ev.get("hint") and ev.get("category") != "usage":
                        sys.stderr.write(f"hint: {_clean(ev['hint'])}\n")
                    sys.stderr.flush()
            except (OSError, ValueError):
                pass
            return
        if etype == "aoi:plan":
            detail = f": {_clean(ev['detail'])}" if ev.get("detail") else ""
            self._line(f"would {_clean(ev.get('action'))} {_clean(ev.get('target'))}{detail}")
            return
        if etype == "aoi:summary":
            if ev.get("ok") and self._count == 0 and not ev.get("truncated"):
                self._line("(nothing)")
            if ev.get("next_cursor"):
                self._line(f"(more: --cursor {ev['next_cursor']})")
            return
        if etype.startswith("aoi:"):
            return
        self._count += 1
        fields = {k: v for k, v in ev.items() if k not in ("type", "aoi")}
        head = fields.pop("id", None)
        parts = [f"{k}={_clean(v)}" for k, v in fields.items()]
        self._line(" ".join(([_clean(head)] if head is not None else [etype]) + parts))

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
