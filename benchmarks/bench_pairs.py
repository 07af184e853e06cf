"""Matched-pair validation at scale (issue 12 section 3: 200,000 rows took 103 s before).

Writes ``--pairs`` pairs × 2 variants as CSV and as JSONL (with request/reply
text columns), then times :func:`cfbench.io.pairs.load_pairs` on each (best of
``--repeats``) and prints the ratio to the target (< 3 s for 200,000 rows;
a ratio below 1 meets it). The loaded frame is checked against the generator
(row count, score sum) so a fast wrong loader cannot pass.

Usage: ``python benchmarks/bench_pairs.py [--pairs 100000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import header

from cfbench.io.pairs import load_pairs

TARGET_S = 3.0
TARGET_ROWS = 200_000


def write_files(n_pairs: int, folder: Path, seed: int = 0) -> tuple[Path, Path, float]:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random((n_pairs, 2)), 4)
    ready = rng.random(n_pairs) < 0.6
    channel = np.where(rng.random(n_pairs) < 0.5, "chat", "email")
    csv_lines = ["pair_id,variant,expected_ready,channel,evidence_passed,score,request,reply"]
    json_lines = []
    for i in range(n_pairs):
        for j, v in enumerate(("formal", "conversational")):
            req = f"Order {10000 + i}: the item arrived broken, please replace it ({v})."
            rep = "A replacement ships within two business days; a prepaid return label is attached."
            csv_lines.append(f"p{i},{v},{str(bool(ready[i])).lower()},{channel[i]},true,{scores[i, j]},"
                             f"\"{req}\",\"{rep}\"")
            json_lines.append(json.dumps({"pair_id": f"p{i}", "variant": v, "expected_ready": bool(ready[i]),
                                          "channel": str(channel[i]), "evidence_passed": True,
                                          "score": float(scores[i, j]), "request": req, "reply": rep}))
    csv_path, json_path = folder / "pairs.csv", folder / "pairs.jsonl"
    csv_path.write_text("\n".join(csv_lines) + "\n", encoding="utf-8")
    json_path.write_text("\n".join(json_lines) + "\n", encoding="utf-8")
    return csv_path, json_path, float(scores.sum())


def best_of(path: Path, repeats: int) -> tuple[float, int, float]:
    best, frame = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        frame = load_pairs(path)
        best = min(best, time.perf_counter() - t0)
    return best, len(frame), float(frame["score"].sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=TARGET_ROWS // 2, help="pairs (rows = 2 x pairs)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    header("bench_pairs")
    with tempfile.TemporaryDirectory() as tmp:
        csv_path, json_path, expected_sum = write_files(args.pairs, Path(tmp))
        rows = 2 * args.pairs
        target = TARGET_S * rows / TARGET_ROWS
        for name, path in (("csv", csv_path), ("jsonl", json_path)):
            secs, n, total = best_of(path, args.repeats)
            ok = n == rows and abs(total - expected_sum) < 1e-6 * max(1.0, expected_sum)
            print(f"{name:5} {rows:>8} rows: {secs:6.2f} s  target {target:.2f} s  ratio to target "
                  f"{secs / target:.2f}  ({rows / secs:,.0f} rows/s)  frame matches generator: {ok}")


if __name__ == "__main__":
    main()
