"""The defect the correlation cap fixes, measured: MOVER with the *estimated* item correlation.

Runs the matched-sides simulation of :func:`cfbench.stats.coverage.matched_net_cfr` (same
draws, same seeds as ``tests/test_coverage_paired_difference.py`` and ``bench_coverage.py``)
through the previous net-CFR interval - MOVER of the two cluster-adjusted Clopper-Pearson
intervals with the estimated correlation, uncapped - and through the current
:func:`cfbench.stats.intervals.paired_difference`, and prints, per n, the gate's false-pass
rate at a true net CFR of 0.10 (gate maximum 0.10) and the share of zero-width intervals when
the two sides are identical.

Usage: ``python benchmarks/bench_mover_uncapped.py [--reps 1000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import header

from cfbench.stats.coverage import _matched_draws
from cfbench.stats.intervals import (_contrib, clustered_rate_intervals, item_correlation, mover_difference,
                                     paired_difference)

NS = (5, 8, 12, 20, 60)


def _uncapped(x1, d1, x2, d2):
    e1, z1 = _contrib(x1, d1)
    e2, z2 = _contrib(x2, d2)
    g = np.zeros(len(x1), np.int64)
    _, l1, u1, _ = clustered_rate_intervals(x1, d1, g, n_groups=1)
    _, l2, u2, _ = clustered_rate_intervals(x2, d2, g, n_groups=1)
    lo, hi = mover_difference(e1, float(l1[0]), float(u1[0]), e2, float(l2[0]), float(u2[0]),
                              item_correlation(z1, z2))
    return max(lo, -1.0), min(hi, 1.0)


def _run(n, m, p_rep, identical, reps, seed):
    rng = np.random.default_rng(seed)
    x1, x2, _ = _matched_draws(rng, reps, n, m, p_rep, 0.10, identical)
    den = np.full(x1.shape, float(m))
    old = np.array([_uncapped(x1[i], den[i], x2[i], den[i]) for i in range(reps)])
    new = np.array([[paired_difference(x1[i], den[i], x2[i], den[i], kind="rate")[k] for k in ("ci_low", "ci_high")]
                    for i in range(reps)])
    if identical:
        return [float(np.mean(r[:, 1] - r[:, 0] <= 0)) for r in (old, new)]
    return [float(np.mean(r[:, 1] < 0.10)) for r in (old, new)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1000)
    a = ap.parse_args()
    header("bench_mover_uncapped")
    t0 = time.time()
    print("| case | " + " | ".join(f"n={n}" for n in NS) + " |\n|---|" + "---|" * len(NS))
    for m in (1, 3):
        for p_rep in (0.1, 0.3):
            cells = [_run(n, m, p_rep, False, a.reps, 100 * m + n) for n in NS]
            print(f"| gate false pass at net 0.10, repeat flips {p_rep:g}, {m} pair(s)/item: uncapped -> capped | "
                  + " | ".join(f"{100 * o:.1f} -> {100 * c:.1f}" for o, c in cells) + " |", flush=True)
        cells = [_run(n, m, 0.3, True, a.reps, 7 * n + m) for n in NS]
        print(f"| zero-width intervals, identical sides, repeat flips 0.3, {m} pair(s)/item: uncapped -> capped | "
              + " | ".join(f"{100 * o:.1f} -> {100 * c:.1f}" for o, c in cells) + " |", flush=True)
    print(f"ratio: none (a coverage check). Run time: {time.time() - t0:.0f} s.")


if __name__ == "__main__":
    main()
