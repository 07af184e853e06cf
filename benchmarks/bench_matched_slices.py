"""Matched slices (``metrics.groups.paired_rate_diff_interval``): Tango's matched-pairs interval against the
capped MOVER it replaced, on the audits of ``bench_coverage.py``'s matched-slices rows.

Each unit is one case under two variants, a and b. The two outcomes share a latent draw half of the time,
so they are correlated (``bench_coverage.matched_rate_diff_coverage``). Each cell gives coverage %, the
misses of the lower and upper bound %, and the mean width over the sampling spread (the 2.5-97.5 % range
of the estimate over the audits).

Usage: ``python benchmarks/bench_matched_slices.py [--audits 1000] [--write-docs]``.
"""

from __future__ import annotations

import time

import numpy as np
from _common import audits_main, coverage_cell, machine

from cfbench.stats.coverage import _summary
from cfbench.stats.intervals import paired_difference

START, END = "<!-- bench_matched_slices:start -->", "<!-- bench_matched_slices:end -->"
NS = (8, 20, 60)
CASES = ((0.1, 0.1), (0.3, 0.1), (0.5, 0.5))
METHODS = {"Tango (pairing=\"items\")": "items", "capped MOVER (before)": "capped"}


def cell(n: int, pa: float, pb: float, audits: int, pairing: str) -> dict[str, float]:
    rng = np.random.default_rng(n)  # the draws of bench_coverage.matched_rate_diff_coverage
    lo, hi, est = np.empty(audits), np.empty(audits), np.empty(audits)
    one = np.ones(n)
    for i in range(audits):
        u = rng.random(n)
        a = (u < pa).astype(float)
        b = np.where(rng.random(n) < 0.5, u < pb, rng.random(n) < pb).astype(float)
        d = paired_difference(a, one, b, one, kind="rate", pairing=pairing)
        lo[i], hi[i], est[i] = d["ci_low"], d["ci_high"], d["estimate"]
    return _summary(lo, hi, pa - pb, est)


def run(audits: int) -> list[str]:
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_matched_slices.py --audits {audits}` on {machine()}: "
             f"{audits} audits per cell (seed n, the draws of `bench_coverage.py`). Each cell: coverage % (miss of "
             "lower / upper bound %) x mean width / sampling spread.", "",
             "| rates a, b | method | " + " | ".join(f"n={n}" for n in NS) + " |", "|---|---|" + "---|" * len(NS)]
    for pa, pb in CASES:
        for label, pairing in METHODS.items():
            cells = [cell(n, pa, pb, audits, pairing) for n in NS]
            lines.append(f"| {pa:g}, {pb:g} | {label} | " + " | ".join(coverage_cell(c) for c in cells) + " |")
            print(lines[-1], flush=True)
    return lines + ["", f"Run time: {time.time() - t0:.0f} s."]


if __name__ == "__main__":
    audits_main(__doc__, run, START, END, audits=1000)
