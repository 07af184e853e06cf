"""Responsiveness looked at after every wave of a sequential walk: how often is a blind judge called responsive?

A sequential audit (contact center, judge bias, ShopFlow) re-checks its fixed-n responsiveness test after
every wave; a pass needs it. This bench simulates the contact-center form of the check - balanced accuracy of
a judge's answers against Yes / No labels (each class a Clopper-Pearson interval, combined by MOVER as
:func:`cfbench.stats.verdicts.balanced_accuracy` does), responsive when the lower bound exceeds 0.5 - on
walks of ``max_n`` items (labels half Yes) looked at after every ``wave`` items, and prints per design:

* a blind judge (answers at random: balanced accuracy 0.5 in truth) called responsive at *any* look, with every
  look at the fixed 95 % level, and at :func:`cfbench.stats.sequential.looks_level` (95 % split over the most
  looks; what the walks use);
* a judge right on 75 % of items shown at any look with the walk's level, and with one look at the end.

One random generator (``--seed``) for every design, in order. ``python benchmarks/bench_responsive_looks.py``
(``--walks 4000``, about 35 s on 2 cores); docs/sequential.md quotes its output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from cfbench.stats.intervals import clopper_pearson
from cfbench.stats.sequential import looks_level

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine  # noqa: E402

DESIGNS = [(10, 100), (10, 200), (10, 400), (20, 400), (1, 36), (6, 36)]  # (wave, max_n)


def shown_at_any_look(rng: np.random.Generator, walks: int, wave: int, max_n: int, acc: float, level: float) -> float:
    """% of ``walks`` in which the check passes at some look."""
    looks = np.arange(wave, max_n + 1, wave)
    ever = 0
    for _ in range(walks):
        lab = rng.random(max_n) < 0.5
        ans = np.where(rng.random(max_n) < acc, lab, ~lab)
        ny = np.cumsum(lab)[looks - 1]
        nn = looks - ny
        ky = np.cumsum(ans & lab)[looks - 1]
        kn = np.cumsum(~ans & ~lab)[looks - 1]
        ok = (ny >= 1) & (nn >= 1)
        if not ok.any():
            continue
        lo1, _ = clopper_pearson(ky[ok].astype(float), ny[ok].astype(float), confidence=level)
        lo2, _ = clopper_pearson(kn[ok].astype(float), nn[ok].astype(float), confidence=level)
        p1, p2 = ky[ok] / ny[ok], kn[ok] / nn[ok]
        lo = (p1 + p2) / 2 - np.sqrt((p1 - lo1) ** 2 + (p2 - lo2) ** 2) / 2
        ever += bool((lo > 0.5).any())
    return 100.0 * ever / walks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--walks", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    t0 = time.time()
    print(f"{a.walks} walks per cell, seed {a.seed}; {machine()}")
    print("| wave | items | looks | blind, 95 % each look | blind, walk's level | 75 % judge, walk's level "
          "| 75 % judge, one look at the end |")
    print("|---|---|---|---|---|---|---|")
    for wave, max_n in DESIGNS:
        looks = -(-max_n // wave)
        lvl = looks_level(looks)
        row = [shown_at_any_look(rng, a.walks, wave, max_n, 0.5, 0.95),
               shown_at_any_look(rng, a.walks, wave, max_n, 0.5, lvl),
               shown_at_any_look(rng, a.walks, wave, max_n, 0.75, lvl),
               shown_at_any_look(rng, a.walks, max_n, max_n, 0.75, 0.95)]
        print(f"| {wave} | {max_n} | {looks} | " + " | ".join(f"{v:.1f} %" for v in row) + " |", flush=True)
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
