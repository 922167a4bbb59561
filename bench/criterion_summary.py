#!/usr/bin/env python3
"""Medians of the last `cargo bench -p aoi --bench throughput` run, as MB/s and target ratios.

    python3 bench/criterion_summary.py [TARGET_DIR]     # default: target

Criterion prints the slope estimate; the project quotes medians (CONVENTIONS.md), so this
reads target/criterion/<group>/<bench>/new/estimates.json (median time per iteration) and
benchmark.json (bytes per iteration). MB is 10^6 bytes.
"""

import json
import os
import sys

TARGETS = [
    # (group, candidate, baseline, minimum ratio)
    ("verify", "aoi_verifier", "serde_json_ignored_any", 0.70),
    ("verify", "aoi_verifier_schema", "aoi_verifier", 0.50),
    ("emit", "aoi_emitter", "serde_json_bufwriter", 0.85),
]


def load(root, group, name):
    d = os.path.join(root, "criterion", group, name, "new")
    with open(os.path.join(d, "estimates.json")) as f:
        median_ns = json.load(f)["median"]["point_estimate"]
    with open(os.path.join(d, "benchmark.json")) as f:
        nbytes = json.load(f)["throughput"]["Bytes"]
    return median_ns, nbytes


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "target"
    base = os.path.join(root, "criterion")
    if not os.path.isdir(base):
        sys.exit(f"no criterion results under {base}: run `cargo bench -p aoi --bench throughput`")
    mbps = {}
    print(f"{'benchmark':<48} {'median ms':>10} {'MB/s':>8}")
    for group in sorted(os.listdir(base)):
        gdir = os.path.join(base, group)
        if not os.path.isdir(gdir) or group == "report":
            continue
        for name in sorted(os.listdir(gdir)):
            if not os.path.isfile(os.path.join(gdir, name, "new", "estimates.json")):
                continue
            ns, nbytes = load(root, group, name)
            mbps[(group, name)] = nbytes / 1e6 / (ns / 1e9)
            print(f"{group + '/' + name:<48} {ns / 1e6:>10.2f} {mbps[(group, name)]:>8.1f}")
    for group, cand, baseline, minimum in TARGETS:
        if (group, cand) in mbps and (group, baseline) in mbps:
            r = mbps[(group, cand)] / mbps[(group, baseline)]
            verdict = "met" if r >= minimum else "NOT met"
            print(f"{group}: {cand} / {baseline} = {r:.2f} (target >= {minimum:.2f}: {verdict})")


if __name__ == "__main__":
    main()
