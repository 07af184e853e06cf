"""Error rates of the verdicts at the committed sizes (seeded simulation; docs/statistics.md, Verdicts).

Net-CFR gate (contact center and judge-bias repeat net): per item one counterfactual pair and 1 repeat pair (the
committed contact-center default, ``repeats: 2`` at T=0: Tango's matched-pairs interval) or 3 (``repeats: 3``:
the MOVER with the corrected correlation); a judge's answer flips under the counterfactual with probability
``noise + net`` and under a repeat with ``noise``, independently. The interval is the study's
(``cfbench.stats.intervals.paired_difference``, ``pairing="corrected"``), the verdict
``cfbench.stats.verdicts.verdict`` at a maximum of 0.10, the judge responsive. Reported per n: false pass (true net = 0.10), false fail (true net 0, 5 % repeat noise), power
(pass at true net 0, 5 % noise) and the fail rate at a true net of 0.30.

Responsiveness (balanced accuracy lower bound > 0.5, ``verdicts.balanced_accuracy`` of two Clopper-Pearson
intervals): the rate at which a constant judge and a label-blind random judge (P(Yes) 0.5 and 0.8) are called
responsive, and the power for judges with accuracy 0.7 / 0.8 / 0.9 on both classes, half the items each class.

    python benchmarks/bench_verdicts.py [reps]
"""

from __future__ import annotations

import sys

import numpy as np

from cfbench.stats.intervals import clopper_pearson, paired_difference
from cfbench.stats.verdicts import balanced_accuracy, verdict

SIZES = (4, 6, 12, 20, 36, 60)
MAX = 0.10


def gate_rates(n: int, net: float, noise: float, reps: int, seed: int, repeat_pairs: int = 3,
               pairing: str = "corrected") -> dict[str, float]:
    rng = np.random.default_rng(seed)
    out = {"pass": 0, "fail": 0}
    for _ in range(reps):
        cf = (rng.random(n) < noise + net).astype(float)
        rep = rng.binomial(repeat_pairs, noise, n).astype(float)
        d = paired_difference(cf, np.ones(n), rep, np.full(n, float(repeat_pairs)), kind="rate",
                              pairing=pairing)
        v = verdict(d["ci_low"], d["ci_high"], MAX)
        out[v] = out.get(v, 0) + 1
    return {k: out.get(k, 0) / reps for k in ("pass", "fail")}


def responsive_rate(n: int, p_yes_given_yes: float, p_yes_given_no: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    n1, n2 = n // 2, n - n // 2
    k1, k2 = rng.binomial(n1, p_yes_given_yes, reps), rng.binomial(n2, 1 - p_yes_given_no, reps)
    hits = 0
    for a, b in zip(k1, k2):
        l1, h1 = clopper_pearson(a, n1)
        l2, h2 = clopper_pearson(b, n2)
        hits += balanced_accuracy(a / n1, float(l1), float(h1), b / n2, float(l2), float(h2))[1] > 0.5
    return hits / reps


def main(reps: int = 2000) -> None:
    print(f"Net-CFR gate at a maximum of {MAX} ({reps} seeded audits per cell; % of audits)\n")
    print("| repeat pairs per item: interval | items | false pass (net = 0.10) | false fail (net 0, noise 5 %) "
          "| false fail (net 0, noise 20 %) | power: pass (net 0, noise 5 %) | fail at net 0.30 |")
    print("|---|---|---|---|---|---|---|")
    designs = ((1, "corrected", "1: Tango (in use; the committed default)"),
               (1, "capped", "1: capped MOVER (before 2026-11-29)"), (3, "corrected", "3: MOVER, corrected correlation"))
    for m, pairing, label in designs:  # the same seeded audits for every design with the same repeat pairs
        for n in SIZES:
            at = gate_rates(n, MAX, 0.05, reps, 1, m, pairing)
            z5, z20 = gate_rates(n, 0.0, 0.05, reps, 2, m, pairing), gate_rates(n, 0.0, 0.20, reps, 3, m, pairing)
            big = gate_rates(n, 0.30, 0.05, reps, 4, m, pairing)
            print(f"| {label} | {n} | {100 * at['pass']:.1f} | {100 * z5['fail']:.1f} | {100 * z20['fail']:.1f} | "
                  f"{100 * z5['pass']:.1f} | {100 * big['fail']:.1f} |")
    print(f"\nResponsiveness: balanced accuracy lower bound > 0.5 ({reps} seeded audits per cell; % called responsive)\n")
    print("| items | constant | random P(Yes) 0.5 | random P(Yes) 0.8 | accuracy 0.7 | accuracy 0.8 | accuracy 0.9 |")
    print("|---|---|---|---|---|---|---|")
    for n in SIZES:
        cells = [responsive_rate(n, 1.0, 1.0, reps, 5), responsive_rate(n, 0.5, 0.5, reps, 6),
                 responsive_rate(n, 0.8, 0.8, reps, 7)]
        cells += [responsive_rate(n, a, 1 - a, reps, 8 + i) for i, a in enumerate((0.7, 0.8, 0.9))]
        print(f"| {n} | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
