"""The net CFR with one counterfactual and one repeat pair per item: Tango's matched-pairs interval it uses
against the capped MOVER it used before.

The committed contact-center default runs this design (``repeats: 2`` at T=0: one repeat pair per item).
``paired_difference(pairing="corrected")`` gives it Tango's interval on the items' 2x2 counts of
counterfactual and repeat flips (docs/statistics.md, "The net CFR since issue 33"); until 2026-11-29 it
gave the capped MOVER, which the design calculator's zero-event bound, power and forecasts assumed. This
bench measures both on the same audits of two families of ``cfbench.stats.coverage``:

* ``independent``: counterfactual and repeat flips drawn apart, sharing an item factor (``_net_draws``);
* ``matched``: the counterfactual pair flips whenever the repeat pair does, plus extra flips for the net
  (``_matched_draws``; repeat flips of a few unstable items carry both sides).

Per cell: coverage % (miss of lower / upper bound %) x mean width over the sampling spread, and the gate's
pass share at its default maximum of 0.10 (upper bound below it): a false pass where the true net CFR is
0.10, the power where it is 0.

Usage: ``python benchmarks/bench_net_tango.py [--audits 2000] [--write-docs]``.
"""

from __future__ import annotations

import time

import numpy as np
from _common import audits_main, coverage_cell, machine

from cfbench.stats.coverage import _matched_draws, _net_draws, _paired_rows, _summary
from cfbench.stats.matched import tango_interval

START, END = "<!-- bench_net_tango:start -->", "<!-- bench_net_tango:end -->"
NS = (20, 36, 60)
GATE_MAX = 0.10
CASES = [("independent", 0.05, 0.0), ("independent", 0.05, 0.10), ("independent", 0.3, 0.0),
         ("independent", 0.3, 0.10), ("matched", 0.1, 0.0), ("matched", 0.1, 0.10), ("matched", 0.3, 0.0),
         ("matched", 0.3, 0.10)]


def draws(family: str, p_rep: float, net: float, audits: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    if family == "independent":
        x1, x2 = _net_draws(rng, p_rep + net, p_rep, audits, n, 1, 0.5)
        return x1, x2
    x1, x2, _ = _matched_draws(rng, audits, n, 1, p_rep, net, False, 1)
    return x1, x2


def bounds(x1: np.ndarray, x2: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Both bounds of every audit through the code in use: ``"tango"`` is ``pairing="corrected"`` (Tango for
    one pair per side), ``"mover"`` is ``pairing="capped"`` (the capped MOVER used before)."""
    one = np.ones_like(x1)
    return _paired_rows(x1, one, x2, one, pairing="capped" if method == "mover" else "corrected")


def tango_direct(x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tango's interval on each audit's discordant counts, called directly (the reference for ``bounds``)."""
    n10 = ((x1 == 1) & (x2 == 0)).sum(axis=1)
    n01 = ((x1 == 0) & (x2 == 1)).sum(axis=1)
    lo, hi = tango_interval(n10, n01, np.full(n10.shape, x1.shape[1]))
    return np.asarray(lo, float), np.asarray(hi, float)


def run(audits: int) -> list[str]:
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_net_tango.py --audits {audits}` on {machine()}: {audits} "
             "audits per cell (seed 3000 + n), the same audits for both methods. Each cell: coverage % (miss of "
             f"lower / upper bound %) x mean width / sampling spread (`n/a` where the estimate does not vary); the "
             f"share of audits whose upper bound lies below the gate's maximum net CFR of {GATE_MAX:.2f}.", "",
             "| family, repeat flips, true net | method | " + " | ".join(f"n={n}" for n in NS) + " |",
             "|---|---|" + "---|" * len(NS)]
    for family, p_rep, net in CASES:
        cells: dict[str, list[str]] = {"Tango (in use)": [], "capped MOVER (before)": []}
        for n in NS:
            x1, x2 = draws(family, p_rep, net, audits, n, 3000 + n)
            est = x1.mean(axis=1) - x2.mean(axis=1)
            for label, method in (("Tango (in use)", "tango"), ("capped MOVER (before)", "mover")):
                lo, hi = bounds(x1, x2, method)
                r = _summary(lo, hi, net, est)
                cells[label].append(f"{coverage_cell(r)}; pass {100 * np.mean(hi < GATE_MAX):.1f} %")
        for label, row in cells.items():
            lines.append(f"| {family}, {p_rep:g}, {net:g} | {label} | " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    return lines + ["", f"Run time: {time.time() - t0:.0f} s."]


if __name__ == "__main__":
    audits_main(__doc__, run, START, END, audits=2000)
