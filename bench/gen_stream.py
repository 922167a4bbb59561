#!/usr/bin/env python3
"""Writes a deterministic, conforming AOI-CLI v1.0-alpha stream of about SIZE bytes.

    python3 bench/gen_stream.py [--size-mb 100] [--out bench/data/stream.jsonl]

Shape (the same as the criterion generator in crates/aoi/benches/throughput.rs):
  line 1        aoi:meta with the full identity
  then          "hit" domain events (rank, id, title, snippet with non-ASCII text and an
                escaped quote, score), an aoi:progress every 5,000 lines and an aoi:warning
                every 20,000 lines
  last line     aoi:summary, ok:true, with event_count / count / warning_count that match

Every line carries aoi.seq (0-based, consecutive) and one aoi.run, so `aoi verify` exits 0.
Standard library only; the output depends on nothing but --size-mb.
"""

import argparse
import json
import os
import sys

RUN = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1"  # a fixed 26-character ULID: the output is deterministic
IDENTITY = {
    "tool": "outline",
    "tool_version": "1.8.2",
    "aoi_version": "1.0-alpha",
    "schema_name": "com.example.outline.events",
    "schema_version": "1.0.0",
}

TITLES = [
    "Agent-Operable Tools",
    "Réseaux de neurones et « apprentissage » profond",
    "Über die Zuverlässigkeit von Befehlszeilenwerkzeugen",
    "JSON Lines: one object per line",
    "日本語のテキスト処理について",
    "Streaming parsers, back-pressure and SIGPIPE",
    "Why exit codes still matter",
    "Ελληνικά: μια σύντομη εισαγωγή",
]

SENTENCES = [
    'The index was rebuilt overnight and now covers 1.2 million documents.',
    'She said "machine mode" is the only output an agent should parse.',
    'Naïve tokenisers split “smart quotes” and em dashes — badly.',
    'Paths such as C:\\Users\\docs\\report.txt need their backslashes escaped.',
    'Résumé, façade, coöperate: diacritics survive a round trip in UTF-8.',
    'Latency p99 fell from 84 ms to 31 ms after the cache warmed up 🚀.',
    'Der Verifier prüft jede Zeile, bevor er dem Ergebnis vertraut.',
    'A truncated last line is a cut stream, never a result.',
    '東京の天気は晴れ、気温は二十三度です。',
    'Errors carry a category, a stable code and an explicit "retryable" flag.',
    'Sequence numbers start at 0 and never skip, so loss is detectable.',
    'Every summary states ok explicitly; there is no default.',
]


def dump(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def hit(seq, n):
    title = TITLES[n % len(TITLES)]
    a = SENTENCES[(n * 7) % len(SENTENCES)]
    b = SENTENCES[(n * 7 + 5) % len(SENTENCES)]
    return {
        "type": "hit",
        "aoi": {"seq": seq, "run": RUN},
        "rank": n,
        "id": f"doc_{n}",
        "title": f"{title} (part {n % 97})",
        "snippet": f"{a} {b}",
        "score": ((n * 7919) % 1000) / 1000.0,
    }


def generate(out, target_bytes):
    written = 0
    seq = 0
    domain = 0
    warnings = 0

    def put(obj):
        nonlocal written, seq
        data = (dump(obj) + "\n").encode("utf-8")
        out.write(data)
        written += len(data)
        seq += 1

    put({"type": "aoi:meta", "aoi": {"seq": 0, "run": RUN}, **IDENTITY, "command": "search"})
    while written < target_bytes:
        if seq % 20000 == 0:
            put({
                "type": "aoi:warning",
                "aoi": {"seq": seq, "run": RUN},
                "code": "INDEX_STALE",
                "message": f"shard {seq // 20000} of the index is 2 days old",
            })
            warnings += 1
        elif seq % 5000 == 0:
            put({
                "type": "aoi:progress",
                "aoi": {"seq": seq, "run": RUN},
                "completed": domain,
                "unit": "documents",
            })
        else:
            domain += 1
            put(hit(seq, domain))
    put({
        "type": "aoi:summary",
        "aoi": {"seq": seq, "run": RUN},
        "ok": True,
        "event_count": seq + 1,
        "count": domain,
        "warning_count": warnings,
        "error_count": 0,
        "partial": False,
        "truncated": False,
        "elapsed_ms": 1234,
        **IDENTITY,
    })
    return written, seq, domain


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-mb", type=float, default=100.0, help="approximate size in MB (10^6 bytes)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "stream.jsonl"))
    args = p.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "wb", buffering=1 << 20) as f:
        written, lines, domain = generate(f, int(args.size_mb * 1_000_000))
    os.replace(tmp, args.out)
    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {size} bytes, {lines} lines, {domain} domain events", file=sys.stderr)


if __name__ == "__main__":
    main()
