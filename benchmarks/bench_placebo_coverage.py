"""Coverage, one-sided misses and width of the placebo-contrast interval (contact-center ``placebo_contrast``).

Seeded audits with a known truth (:func:`cfbench.stats.coverage.placebo_contrast_coverage`): identity and
placebo flips share each item's sensitivity to any edit (correlated flips), many items never flip, one or
several pairs per item, zero events. Prints one row per design and size; the docs table
(docs/statistics.md, "Placebo contrast") is this output. ``tests/test_cc_placebo.py`` runs 400 audits of each.

    PYTHONPATH=. python benchmarks/bench_placebo_coverage.py [reps]
"""

from __future__ import annotations

import sys
import time

from cfbench.stats.coverage import placebo_contrast_coverage

DESIGNS = [("1 vs 1 pair, any edit (p=0.3, half never flip)", dict(effect=0.0)),
           ("1 vs 1 pair, identity effect 0.2", dict(effect=0.2)),
           ("6 vs 2 pairs, any edit", dict(effect=0.0, identity_pairs=6, placebo_pairs=2)),
           ("6 vs 1 pairs, identity effect 0.2", dict(effect=0.2, identity_pairs=6, placebo_pairs=1)),
           ("6 vs 1 pairs, 80 % of items never flip", dict(effect=0.0, zero_share=0.8, identity_pairs=6,
                                                          placebo_pairs=1)),
           ("6 vs 1 pairs, no flip anywhere", dict(effect=0.0, p_any=0.0, identity_pairs=6, placebo_pairs=1))]


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    t0 = time.perf_counter()
    print(f"| design | n items | coverage | miss low | miss high | width / spread | largest bound |  ({reps} audits each)")
    print("|---|---|---|---|---|---|---|")
    for label, design in DESIGNS:
        for n in (8, 20, 60):
            r = placebo_contrast_coverage(n_items=n, reps=reps, n_boot=1000, seed=1000 + n, **design)
            ratio = "-" if r["width_ratio"] == float("inf") else f"{r['width_ratio']:.2f}"
            print(f"| {label} | {n} | {100 * r['coverage']:.1f} % | {100 * r['miss_low']:.1f} % | "
                  f"{100 * r['miss_high']:.1f} % | {ratio} | {r['max_abs_bound']:.3f} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
