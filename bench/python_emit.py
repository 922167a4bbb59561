#!/usr/bin/env python3
"""The Python SDK's Emitter against bare ``json.dumps`` + a buffered write, same events.

Both write N "hit" events (the shape of bench/gen_stream.py: non-ASCII titles and snippets,
escapes) to /dev/null through an ``io.BufferedWriter``. The bare loop builds the same dict
(``type``, the ``aoi`` envelope with ``seq``, ``run`` and ``t``, the fields) and writes compact
UTF-8 JSON lines; the Emitter also checks the type, the reserved names and C1 controls, keeps
the counters and ends with the summary. Runs alternate, the median of each is reported, and
the ratio (bare time / Emitter time) is the Emitter's share of the bare throughput.
Target: at least 0.8.

    python3 bench/python_emit.py [N] [RUNS]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdks" / "python" / "src"))

from machinemode import Emitter, Identity

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
RUN = "01JD0000000000000000000000"
TITLES = ["Überprüfung der Qualität", "Ελληνικά κείμενα", "日本語のテキスト検索",
          "“quoted” \"escaped\" \\ back", "café crème 🚀 launch"]


def events() -> List[Dict[str, Any]]:
    return [{"rank": i, "id": f"doc_{i}", "title": TITLES[i % 5],
             "snippet": TITLES[(i + 2) % 5] + " … " + TITLES[(i + 3) % 5], "score": 0.83}
            for i in range(N)]


def bare(data: List[Dict[str, Any]]) -> None:
    with open("/dev/null", "wb") as out:
        dumps, t0, clock = json.dumps, time.monotonic(), time.monotonic
        for seq, fields in enumerate(data, 1):
            line = dumps({"type": "hit", "aoi": {"seq": seq, "run": RUN,
                                                 "t": int((clock() - t0) * 1000)}, **fields},
                         ensure_ascii=False, separators=(",", ":"))
            out.write(line.encode() + b"\n")


def sdk(data: List[Dict[str, Any]]) -> None:
    with open("/dev/null", "wb") as out:
        em = Emitter(out, Identity("bench", "1.0.0", "io.example.bench.events", "1.0.0"),
                     command="search", event_types=["hit"], run=RUN)
        for fields in data:
            em.emit("hit", fields)
        em.summary(True)


def timed(fn: Callable[[List[Dict[str, Any]]], None], data: List[Dict[str, Any]]) -> float:
    start = time.perf_counter()
    fn(data)
    return time.perf_counter() - start


def main() -> None:
    data = events()
    times: Dict[str, List[float]] = {"bare": [], "emitter": []}
    timed(bare, data), timed(sdk, data)  # warm-up
    for _ in range(RUNS):
        times["bare"].append(timed(bare, data))
        times["emitter"].append(timed(sdk, data))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{N} events, {RUNS} alternating runs each, Python {sys.version.split()[0]}")
    for k, v in med.items():
        print(f"{k:8} median {v * 1000:8.1f} ms  {N / v / 1000:8.1f} k events/s")
    ratio = med["bare"] / med["emitter"]
    print(f"emitter / bare throughput: {ratio:.2f} (target >= 0.8): {'met' if ratio >= 0.8 else 'NOT met'}")


if __name__ == "__main__":
    main()
