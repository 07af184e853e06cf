"""Judge A minus judge B flip rates with several pairs per item: the clustered Tango interval against
the bootstrap-t of the item differences it replaced.

Two judges scored on the same pairs; each item has ``m`` pairs (3, or 1-5), and each judge's item count
is the number of its pairs that flipped. ``paired_difference(kind="rate", pairing="items")`` used the
studentized bootstrap of the item differences whenever an item had more than one pair. Most item
differences are 0, so its resamples often have no spread, and at 20 items the interval was 3.7
sampling spreads wide (the families table of ``bench_coverage.py``). The replacement,
``intervals.clustered_tango``, is Tango's matched-pairs score interval on the discordant counts
divided by the items' design effect (Rao-Scott), the item the unit when no pair is discordant.

Families (every one with the judges' flips correlated through an item flippiness ``u ~ Beta(0.5, 4.5)``,
mean 0.1):

* ``shared``: A flips whenever B does and on another 5 % of the rest (the coverage suite's
  ``judges_cfr_3pairs``), truth 0.045;
* ``whole_items``: A also flips every pair of 6 % of items (discordance clustered by item), truth 0.054;
* ``item_rates``: A also flips each pair at an item rate ``Beta(0.2, 3.8)`` (partly clustered), truth 0.045;
* ``independent``: the judges flip independently given the item, A at ``min(1, 1.5 u)``, B at ``u``
  (pairs disagree both ways, more than the item sums show), truth 0.0498;
* ``independent_null``: the same with both at ``u``, truth 0;
* ``whole_items_null``: 4 % of items all-flip for A only, 4 % for B only, truth 0;
* ``whole_items_5``: 5 pairs per item, A flips every pair of 8 % of items, truth 0.072;
* ``pairs_1_to_5``: ``shared`` with 1-5 pairs per item.

Each cell: coverage % (miss of lower / upper bound %) x mean width over the sampling spread (the
2.5-97.5 % range of the estimate over the audits). The bootstrap-t row is the code path before this
change (``bootstrap_t_difference_rows``, the capped MOVER when the item differences show no spread).

Usage: ``python benchmarks/bench_clustered_tango.py [--audits 2000] [--n-boot 1000] [--quick]
[--write-docs]`` (``--write-docs`` replaces the block between the ``bench_clustered_tango`` markers of
docs/statistics.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import coverage_cell, machine, publish

from cfbench.stats.bootstrap import resample_counts
from cfbench.stats.coverage import _summary
from cfbench.stats.intervals import bootstrap_t_difference_rows, clustered_tango, paired_difference

START, END = "<!-- bench_clustered_tango:start -->", "<!-- bench_clustered_tango:end -->"
NS = (8, 20, 60)
SEED = 1000

FAMILIES = {
    "shared": "A flips whenever B does, and on 5 % of the rest; 3 pairs per item",
    "whole_items": "A also flips every pair of 6 % of items; 3 pairs per item",
    "item_rates": "A also flips each pair at an item rate Beta(0.2, 3.8); 3 pairs per item",
    "independent": "independent flips given the item, A at min(1, 1.5 u), B at u; 3 pairs per item",
    "independent_null": "independent flips given the item, both at u; 3 pairs per item",
    "whole_items_null": "4 % of items flip on every pair for A only, 4 % for B only; 3 pairs per item",
    "whole_items_5": "A also flips every pair of 8 % of items; 5 pairs per item",
    "pairs_1_to_5": "as `shared`, with 1-5 pairs per item",
}


def draws(name: str, rng: np.random.Generator, reps: int, K: int):
    """``(a, b, m, truth)``: A's and B's flips per item, pairs per item (``reps x K``) and the true difference."""
    m = 5 if name == "whole_items_5" else 3
    u = rng.beta(0.5, 4.5, size=(reps, K, 1))
    if name == "pairs_1_to_5":
        mm = rng.integers(1, 6, size=(reps, K, 1))
        draw = rng.random((reps, K, 5))
        use = np.arange(5)[None, None, :] < mm
        a = ((draw < u + 0.05 * (1 - u)) & use).sum(2)
        b = ((draw < u) & use).sum(2)
        return a.astype(float), b.astype(float), mm[..., 0].astype(float), 0.045
    full = np.full((reps, K), float(m))
    if name.startswith("independent"):
        ka = 1.0 if name.endswith("null") else 1.5
        a = (rng.random((reps, K, m)) < np.minimum(1.0, ka * u)).sum(2)
        b = (rng.random((reps, K, m)) < u).sum(2)
        truth = 0.0 if name.endswith("null") else _independent_truth()
        return a.astype(float), b.astype(float), full, truth
    draw = rng.random((reps, K, m))
    base = draw < u
    if name == "shared":
        return (draw < u + 0.05 * (1 - u)).sum(2).astype(float), base.sum(2).astype(float), full, 0.045
    if name in ("whole_items", "whole_items_5"):
        share = 0.06 if name == "whole_items" else 0.08
        biased = rng.random((reps, K, 1)) < share
        return (base | biased).sum(2).astype(float), base.sum(2).astype(float), full, share * 0.9
    if name == "item_rates":
        q = rng.beta(0.2, 3.8, size=(reps, K, 1))
        extra = rng.random((reps, K, m)) < q
        return (base | extra).sum(2).astype(float), base.sum(2).astype(float), full, 0.05 * 0.9
    if name == "whole_items_null":
        v = rng.random((reps, K, 1))
        return (base | (v < 0.04)).sum(2).astype(float), (base | (v > 0.96)).sum(2).astype(float), full, 0.0
    raise ValueError(f"unknown family {name!r}")


def _independent_truth() -> float:
    """``E[min(1, 1.5 u)] - E[u]`` for ``u ~ Beta(0.5, 4.5)``, by quadrature."""
    from scipy import integrate, stats

    f = stats.beta(0.5, 4.5).pdf
    top, _ = integrate.quad(lambda x: (1.5 * x - 1.0) * f(x), 2 / 3, 1.0)
    return 0.5 * 0.1 - top


def bootstrap_rows(a, b, m, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The interval before this change: bootstrap-t of the item differences, the capped MOVER without spread."""
    lo, hi = np.empty(len(a)), np.empty(len(a))
    for i in range(len(a)):
        z = (a[i] - b[i]) - (a[i] - b[i]).sum() / m[i].sum() * m[i]
        if np.ptp(z) <= 1e-12:
            d = paired_difference(a[i], m[i], b[i], m[i], kind="rate", pairing="capped")
            lo[i], hi[i] = d["ci_low"], d["ci_high"]
            continue
        w = resample_counts(a.shape[1], n_boot, rng)
        l2, h2 = bootstrap_t_difference_rows(a[i][None], m[i][None], b[i][None], m[i][None], w)
        lo[i], hi[i] = max(float(l2[0]), -1.0), min(float(h2[0]), 1.0)
    return lo, hi


def tango_rows(a, b, m) -> tuple[np.ndarray, np.ndarray]:
    got = [clustered_tango(a[i], b[i], m[i])[:2] for i in range(len(a))]
    return np.array([g[0] for g in got]), np.array([g[1] for g in got])


def family_cells(name: str, audits: int, n_boot: int) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {"clustered Tango": [], "bootstrap-t (before)": []}
    for K in NS:
        a, b, m, truth = draws(name, np.random.default_rng(SEED + K), audits, K)
        est = (a - b).sum(1) / m.sum(1)
        out["clustered Tango"].append(_summary(*tango_rows(a, b, m), truth, est))
        out["bootstrap-t (before)"].append(_summary(*bootstrap_rows(a, b, m, n_boot, np.random.default_rng(7)),
                                                   truth, est))
    return out


def run(audits: int, n_boot: int) -> list[str]:
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_clustered_tango.py --audits {audits} --n-boot {n_boot}` on "
             f"{machine()}: {audits} audits per cell (seed {SEED} + n), the same audits for both methods; "
             f"bootstrap {n_boot} resamples. Each cell: coverage % (miss of lower / upper bound %) x mean width / "
             "sampling spread.", "",
             "| family | method | " + " | ".join(f"n={n}" for n in NS) + " |", "|---|---|" + "---|" * len(NS)]
    for name, what in FAMILIES.items():
        for label, cells in family_cells(name, audits, n_boot).items():
            lines.append(f"| {name}: {what} | {label} | " + " | ".join(coverage_cell(c) for c in cells) + " |")
            print(lines[-1], flush=True)
    return lines + ["", f"Run time: {time.time() - t0:.0f} s."]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="smoke run: 200 audits, 200 resamples")
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.audits, a.n_boot = 200, 200
    lines = run(a.audits, a.n_boot)
    print(lines[0])
    publish(lines, START, END, write_docs=a.write_docs, partial="--quick" if a.quick else None)


if __name__ == "__main__":
    main()
