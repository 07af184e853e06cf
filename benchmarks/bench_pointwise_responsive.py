"""Error rates of the judge-bias pointwise responsiveness check (seeded simulation; docs/statistics.md, Verdicts).

The check (``judge_bias.metrics.pointwise_responsiveness``): each control item's real reply and its known-worse
reply are scored once each at baseline (1-10); the share of untied items whose real reply scored higher must have
a Clopper-Pearson lower bound above 0.5 (``metrics.discrimination_lower_bound``, the function the table uses).

Judges simulated, per item independently:

* constant: every reply scores 7;
* blind, uniform: both scores drawn from 1..10 alike, ignoring the reply;
* blind, skewed: both drawn alike from a pile-up near the top (7, 8, 9 with 0.3, 0.5, 0.2), many ties;
* responsive, gap g: the real reply scores round(7 + e1), the known-worse one round(7 - g + e2), clipped to
  1..10, e ~ N(0, 1.5^2) - a judge that tells them apart by g points on average, with noise.

Reported per number of control items: % of audits that call the judge responsive (for a blind judge that is the
false-responsive rate, nominal 2.5 % at most; for a responsive one the power, 100 minus the false-unresponsive
rate).

    python benchmarks/bench_pointwise_responsive.py [reps]
"""

from __future__ import annotations

import sys

import numpy as np

from cfbench.studies.judge_bias.metrics import discrimination_lower_bound

SIZES = (6, 9, 18, 36, 60)
SKEWED = (np.array([7, 8, 9]), np.array([0.3, 0.5, 0.2]))


def scores(judge: str, n: int, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(real, alt)`` scores, shape (reps, n), of one simulated judge (see the module note)."""
    if judge == "constant":
        return np.full((reps, n), 7.0), np.full((reps, n), 7.0)
    if judge == "blind-uniform":
        return rng.integers(1, 11, (reps, n)).astype(float), rng.integers(1, 11, (reps, n)).astype(float)
    if judge == "blind-skewed":
        v, p = SKEWED
        return rng.choice(v, (reps, n), p=p).astype(float), rng.choice(v, (reps, n), p=p).astype(float)
    gap = float(judge.split(":")[1])
    real = np.clip(np.rint(7 + rng.normal(0, 1.5, (reps, n))), 1, 10)
    alt = np.clip(np.rint(7 - gap + rng.normal(0, 1.5, (reps, n))), 1, 10)
    return real, alt


def responsive_rate(judge: str, n: int, reps: int, seed: int) -> float:
    """Share of ``reps`` simulated audits of ``n`` control items in which the check calls ``judge`` responsive."""
    real, alt = scores(judge, n, reps, np.random.default_rng(seed))
    lo = discrimination_lower_bound((real > alt).sum(axis=1), (real < alt).sum(axis=1))
    return float(np.mean(np.nan_to_num(lo, nan=0.0) > 0.5))


JUDGES = ("constant", "blind-uniform", "blind-skewed", "gap:0.5", "gap:1", "gap:2")


def main(reps: int = 20000) -> None:
    print(f"Pointwise responsiveness: control discrimination lower bound > 0.5 ({reps} seeded audits per cell; "
          "% called responsive)\n")
    print("| control items | constant | blind, uniform 1-10 | blind, skewed 7-9 | gap 0.5 point | gap 1 point "
          "| gap 2 points |")
    print("|---|---|---|---|---|---|---|")
    for n in SIZES:
        cells = [responsive_rate(j, n, reps, seed=100 * n + i) for i, j in enumerate(JUDGES)]
        print(f"| {n} | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
