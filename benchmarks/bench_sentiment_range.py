"""Sentiment differences between identities: what the known range [-2, 2] buys, and what it cannot.

The identity study's paired differences of a VADER compound (each reply's score in [-1, 1]) rest on 8-10
prompts in the committed default. A committed row had a bootstrap-t lower bound of -2.70: one prompt's
difference was -1.26, the other nine near 0, and the resamples without it had almost no spread. Since
2026-11-29 ``paired_tests`` holds such a bound at the range of the differences (``TONE_RANGES``). Holding a
bound at a range the mean cannot leave never lowers coverage; this bench measures how often it binds and
what it does to the width, on four families of per-prompt differences:

* ``benign``: N(0.05, 0.1) (every prompt moves a little);
* ``rare10`` / ``rare20``: N(0, 0.05), except that 10 % / 20 % of prompts drop by U(0.3, 1.5) (VADER
  scores sit near +0.9 and now and then one reply reads negative: the committed run's shape);
* ``resampled``: the committed run's own sentiment differences (every pair of identities, every prompt of
  ``results/identity_tone/default/fresh_scores_described.csv``), drawn with replacement; truth their mean.

Beside cfbench's interval it prints a range-based interval that holds its level for *any* distribution on
[-2, 2]: the hedged-capital betting interval of Waudby-Smith and Ramdas (2024, JRSS-B, Theorem 3, with the
fixed-n bet ``sqrt(2 log(2/a) / (n var))`` truncated at 1/2 of the distance to the range's end). It is not
used by cfbench; it is here to show what validity for every shape would cost at these sizes.

Usage: ``python benchmarks/bench_sentiment_range.py [--audits 1000] [--write-docs]``.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np
from _common import audits_main, coverage_cell, machine

from cfbench.stats.coverage import _summary
from cfbench.stats.paired import bootstrap_t_interval

START, END = "<!-- bench_sentiment_range:start -->", "<!-- bench_sentiment_range:end -->"
NS = (8, 10, 20)
FAMILIES = ("benign", "rare10", "rare20", "resampled")
SCORES = Path(__file__).resolve().parents[1] / "results" / "identity_tone" / "default" / "fresh_scores_described.csv"


def draws(name: str, rng: np.random.Generator, reps: int, n: int) -> tuple[np.ndarray, float]:
    """(reps x n per-prompt differences in [-2, 2], the true mean)."""
    if name == "benign":
        return np.clip(rng.normal(0.05, 0.1, (reps, n)), -2, 2), 0.05
    if name.startswith("rare"):
        share = int(name[4:]) / 100
        big = rng.random((reps, n)) < share
        return np.where(big, -rng.uniform(0.3, 1.5, (reps, n)), rng.normal(0.0, 0.05, (reps, n))), -share * 0.9
    import pandas as pd

    s = pd.read_csv(SCORES)
    s = s[s["model"] == s["model"].iloc[0]]
    w = s.pivot(index="prompt_id", columns="identity", values="sentiment").to_numpy(float)
    pool = np.concatenate([w[:, a] - w[:, b] for a, b in itertools.combinations(range(w.shape[1]), 2)])
    pool = pool[~np.isnan(pool)]
    return rng.choice(pool, (reps, n)), float(pool.mean())


def betting_interval(x: np.ndarray, low: float, high: float, alpha: float = 0.05, grid: int = 1601
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Hedged-capital betting interval of the mean of each row of ``x`` (values in [low, high]), on a grid."""
    y = (x - low) / (high - low)
    reps, n = y.shape
    m = np.linspace(0.0, 1.0, grid)[None, None, :]
    i = np.arange(1, n + 1)
    csum = np.cumsum(y, axis=1)
    mean_after = (0.5 + csum) / (i + 1)
    dev = np.cumsum((y - mean_after) ** 2, axis=1)
    var = (0.25 + np.concatenate([np.zeros((reps, 1)), dev[:, :-1]], axis=1)) / i  # predictable variance
    lam = np.sqrt(2 * np.log(2 / alpha) / (n * var))[:, :, None]
    with np.errstate(divide="ignore"):
        up = np.prod(1 + np.minimum(lam, 0.5 / m) * (y[:, :, None] - m), axis=1)
        down = np.prod(1 - np.minimum(lam, 0.5 / (1 - m)) * (y[:, :, None] - m), axis=1)
    keep = np.maximum(0.5 * up, 0.5 * down) < 1 / alpha
    grid_m = m[0, 0]
    lo = grid_m[np.argmax(keep, axis=1)]
    hi = grid_m[grid - 1 - np.argmax(keep[:, ::-1], axis=1)]
    return low + (high - low) * lo, low + (high - low) * hi


def run(audits: int) -> list[str]:
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_sentiment_range.py --audits {audits}` on {machine()}: "
             f"{audits} audits per cell (seed 33 + n), 2000 resamples. Each cell: coverage % (miss of lower / upper "
             "bound %) x mean width / sampling spread; `held` is the share of audits with a bound held at [-2, 2].", "",
             "| family | interval | " + " | ".join(f"n={n}" for n in NS) + " |", "|---|---|" + "---|" * len(NS)]
    for name in FAMILIES:
        rows: dict[str, list[str]] = {"cfbench, no range (before)": [], "cfbench, held at [-2, 2] (now)": [],
                                      "betting, any shape on [-2, 2] (not used)": []}
        for n in NS:
            d, truth = draws(name, np.random.default_rng(33 + n), audits, n)
            est = d.mean(axis=1)
            lo, hi = bootstrap_t_interval(d, n_boot=2000, rng=np.random.default_rng(1))
            lo2, hi2 = bootstrap_t_interval(d, n_boot=2000, rng=np.random.default_rng(1), value_range=(-2.0, 2.0))
            held = float(np.mean((lo2 != lo) | (hi2 != hi)))
            bl, bh = betting_interval(d, -2.0, 2.0)
            rows["cfbench, no range (before)"].append(coverage_cell(_summary(lo, hi, truth, est)))
            rows["cfbench, held at [-2, 2] (now)"].append(coverage_cell(_summary(lo2, hi2, truth, est))
                                                          + f"; held {100 * held:.1f} %")
            rows["betting, any shape on [-2, 2] (not used)"].append(coverage_cell(_summary(bl, bh, truth, est)))
        for label, cells in rows.items():
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    return lines + ["", f"Run time: {time.time() - t0:.0f} s."]


if __name__ == "__main__":
    audits_main(__doc__, run, START, END, audits=1000)
