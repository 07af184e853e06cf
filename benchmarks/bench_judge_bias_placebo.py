"""Coverage, one-sided misses and width of the judge-bias placebo contrast (``placebo_contrast``).

Seeded audits with a known truth (:func:`cfbench.studies.judge_bias.placebo_sim.placebo_coverage`, which runs the
study's own ``placebo_table``): one request per item and side, flips of the cue and of its placebo correlated
through each item's sensitivity to any edit, a share of items that never move, a group effect ``g``. Prints one
row per design, size and contrast; the table in docs/statistics.md ("Placebo contrast", judge bias) is this
output. ``tests/test_judge_bias_placebo.py`` runs 300 audits of two designs.

    PYTHONPATH=. python benchmarks/bench_judge_bias_placebo.py [reps]
"""

from __future__ import annotations

import sys
import time

from cfbench.studies.judge_bias.placebo_sim import placebo_coverage

DESIGNS = [("any edit only (g = 0), half the items never move", dict(g=0.0, zero_share=0.5)),
           ("group effect g = 0.3, half the items never move", dict(g=0.3, zero_share=0.5)),
           ("group effect g = 0.3, every item edit-sensitive", dict(g=0.3, zero_share=0.0)),
           ("any edit only, 90 % of items never move", dict(g=0.0, zero_share=0.9))]


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    t0 = time.perf_counter()
    print(f"| design | items | contrast | truth | coverage | miss low | miss high | width / spread |  ({reps} audits each)")
    print("|---|---|---|---|---|---|---|---|")
    for label, design in DESIGNS:
        for n in (8, 20, 60):
            r = placebo_coverage(n_items=n, reps=reps, seed=2000 + n, **design)
            for k, v in r.items():
                ratio = "-" if v["width_ratio"] == float("inf") else f"{v['width_ratio']:.2f}"
                print(f"| {label} | {n} | {k} | {v['truth']:.4f} | {100 * v['coverage']:.1f} % | "
                      f"{100 * v['miss_low']:.1f} % | {100 * v['miss_high']:.1f} % | {ratio} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
