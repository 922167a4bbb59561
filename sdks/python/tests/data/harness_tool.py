"""A machine-only tool on machinemode.main, whose behaviour the first argument picks."""

from __future__ import annotations

import sys
import time
from typing import Optional

from machinemode import Emitter, Identity, errors
from machinemode.harness import Outcome, main

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"


@main(identity=Identity("htool", "0.0.1", "io.example.htool.events", "1.0.0"), command=MODE,
      flush_each=MODE in ("sleep", "flood", "deadline"), timeout=0.3 if MODE == "deadline" else None)
def tool(out: Emitter) -> Optional[Outcome]:
    if MODE == "ok":
        out.emit("item", {"id": "i1"})
        return Outcome.success()
    if MODE == "raise":
        out.emit("item", {"id": "i1"})
        raise KeyError("secret-value-never-shown")
    if MODE == "notfound":
        raise errors.not_found("ITEM_NOT_FOUND", "No item i9.", target="i9")
    if MODE == "many":
        for i in range(200_000):
            out.emit("item", {"id": f"i{i}", "pad": "x" * 100})
        return Outcome.success()
    if MODE in ("sleep", "flood", "deadline"):
        out.emit("item", {"id": "i1"})
        while True:
            time.sleep(0.05)
            if MODE == "flood":
                out.emit("item", {"id": "i2"})
    if MODE == "exit3":
        sys.exit(3)
    if MODE == "print-human":
        return None
    raise errors.usage("UNKNOWN_MODE", "unknown mode")


if __name__ == "__main__":
    tool()
