"""Coverage, one-sided misses and width of the identity-tone placebo contrast (``fresh_placebo_described``).

Seeded audits with a known truth (:func:`cfbench.studies.identity_tone.placebo_sim.placebo_coverage`, which runs
the study's own ``placebo_contrast``): 8 identities and one placebo reply per prompt, each reply with its own
noise (normal or skewed), with or without a group effect. Prints one row per design and size; the table in
docs/statistics.md ("Placebo contrast", identity tone) is this output. ``tests/test_identity_placebo.py`` runs
fewer audits of one design.

    PYTHONPATH=. python benchmarks/bench_identity_placebo.py [reps]
"""

from __future__ import annotations

import sys
import time

from cfbench.studies.identity_tone.placebo_sim import placebo_coverage

DESIGNS = [("any rewording only (effect 0), normal noise 0.5", dict(effect=0.0, noise=0.5)),
           ("any rewording only, skewed noise 0.5", dict(effect=0.0, noise=0.5, skewed=True)),
           ("group effect 0.5, normal noise 0.5", dict(effect=0.5, noise=0.5)),
           ("group effect 0.5, skewed noise 0.5", dict(effect=0.5, noise=0.5, skewed=True))]


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    t0 = time.perf_counter()
    print(f"| design | prompts | truth | coverage | miss low | miss high | width / spread |  ({reps} audits each)")
    print("|---|---|---|---|---|---|---|")
    for label, design in DESIGNS:
        for n in (8, 20, 60):
            v = placebo_coverage(n_prompts=n, reps=reps, seed=3000 + n, **design)
            ratio = "-" if v["width_ratio"] == float("inf") else f"{v['width_ratio']:.2f}"
            print(f"| {label} | {n} | {v['truth']:.4f} | {100 * v['coverage']:.1f} % | {100 * v['miss_low']:.1f} % | "
                  f"{100 * v['miss_high']:.1f} % | {ratio} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
