"""Coverage of the matched-pair gap intervals and the false-pass rate of ShopFlow's interval gate.

ShopFlow's interval rule passes a gap only when the whole 95 % interval of the
signed gap (matched pairs of the gap's stratum) lies inside [−0.10, +0.10].
This script prints, at the sizes ShopFlow uses (the seed's 6 ready / 4
needs-review pairs, the shipped fixture's 27 / 17 of 44 pairs) and at
n ∈ {10, 20, 44, 100, 200}:

1. the coverage of Tango's score interval, computed *exactly* from the
   trinomial distribution of the discordant counts (it depends on nothing
   else), over a grid of true gaps Δ = p10 − p01 and discordance p01 —
   including p10 = p01 = 0, where every audit sees zero discordant pairs;
2. the same for Newcombe's paired method 10 (which also depends on the split
   of the concordant pairs) by seeded Monte Carlo, and for the
   independent-sample Newcombe interval applied to matched pairs (what the
   gate used before), to show what ignoring the pairing does;
3. the gate's false-pass rate when the true gap equals the limit (|Δ| = 0.10),
   the worst case over the discordance grid, exact for Tango; and, beside it,
   the pass rate when the true gap is 0 (how often a fair judge can pass);
4. how many pairs a stratum needs for an 80 % chance of passing a fair judge
   (true gap 0), by the share of discordant pairs;
5. an end-to-end Monte-Carlo check through ``interval_checks`` on routed
   frames at n = 44 and 100: how often the interval it reports lies inside
   ±0.10, which must agree with the exact value (its status cannot be PASS
   there: ready pairs alone cannot show the judge responds).

Run: ``python benchmarks/bench_gate_shopflow.py`` (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cfbench.stats.matched import (draw_matched_counts, matched_counts_pmf, min_pairs_to_pass,  # noqa: E402
                                   newcombe_paired_interval, tango_interval)
from cfbench.stats.proportions import newcombe_interval  # noqa: E402

LIMIT = 0.10
SIZES = (4, 6, 10, 17, 20, 27, 44, 100, 200)
DELTAS = (0.0, 0.05, 0.10, 0.20, 0.30)
P01S = (0.0, 0.01, 0.02, 0.05, 0.10, 0.20, 0.30)
SEED = 20260021


def tango_exact(n: int, delta: float, p01: float) -> tuple[float, float, float, float]:
    """Exact coverage, miss above, miss below and P(gate passes) of Tango's interval."""
    b, c, prob = matched_counts_pmf(n, p01 + delta, p01)
    lo, hi = tango_interval(b, c, n)
    cover = float(prob[(lo <= delta) & (hi >= delta)].sum())
    above = float(prob[lo > delta].sum())  # interval entirely above the truth
    below = float(prob[hi < delta].sum())  # entirely below: a gate reading the upper end would under-state it
    passed = float(prob[(lo >= -LIMIT) & (hi <= LIMIT)].sum())
    return cover, above, below, passed


def newcombe_mc(n: int, delta: float, p01: float, reps: int, seed: int, *, paired: bool):
    """Monte-Carlo coverage and gate pass rate of Newcombe's paired (or independent) interval."""
    p10 = p01 + delta
    conc = 1 - p10 - p01
    cells = draw_matched_counts(n, conc / 2, p10, p01, reps, seed=seed)  # concordant pairs split evenly
    n11, n10, n01, n00 = cells.T
    if paired:
        lo, hi = newcombe_paired_interval(n11, n10, n01, n00)
    else:
        bounds = np.array([newcombe_interval(int(a + b), n, int(a + c), n) for a, b, c in zip(n11, n10, n01)])
        lo, hi = bounds[:, 0], bounds[:, 1]
    return float(((lo <= delta) & (hi >= delta)).mean()), float(((lo >= -LIMIT) & (hi <= LIMIT)).mean())


def end_to_end(n: int, p01: float, reps: int, seed: int) -> tuple[float, float]:
    """On routed frames whose true TPR gap is +0.10, through ``interval_checks`` itself: the share of audits
    whose reported TPR-gap interval lies inside ±0.10 (what the exact value counts), and the share with
    status ``PASS``. The frames have ready pairs only, so the judge cannot be shown to respond and no audit
    may pass: the second share must be 0 (a pass needs the responsiveness check too)."""
    from cfbench.studies.shopflow import FairnessContract, interval_checks, rates, route_rows, shipped

    contract = FairnessContract.from_yaml(shipped("contract.yaml"))
    rng = np.random.default_rng(seed)
    p10 = p01 + LIMIT
    inside = passes = 0
    ids = [f"q{i}" for i in range(n)]
    for _ in range(reps):
        u = rng.random(n)
        formal = (u < p10) | (u >= p10 + p01) & (u < p10 + p01 + (1 - p10 - p01) / 2)
        conv = (u >= p10) & (u < p10 + p01 + (1 - p10 - p01) / 2)
        frame = pd.DataFrame({"pair_id": np.repeat(ids, 2), "variant": ["formal", "conversational"] * n,
                              "expected_ready": True, "channel": "chat", "evidence_passed": True,
                              "score": np.column_stack([formal, conv]).ravel().astype(float)})
        routed = route_rows(frame, 0.5)
        row = interval_checks(rates(routed, variants=["formal", "conversational"]), contract,
                              routed=routed).set_index("check").loc["tpr_gap"]
        inside += bool(row["ci_low"] >= -LIMIT and row["ci_high"] <= LIMIT)
        passes += row["status"] == "PASS"
    return inside / reps, passes / reps


def main() -> None:
    t0 = time.perf_counter()
    need_t = min_pairs_to_pass(LIMIT)
    need_n = min_pairs_to_pass(LIMIT, method="newcombe_paired")
    print(f"Pairs a stratum needs before any outcome can pass ±{LIMIT}: Tango {need_t}, Newcombe paired {need_n}")
    print("Zero discordant pairs (Tango): " + ", ".join(
        f"n={n}: [{float(tango_interval(0, 0, n)[0]):+.3f}, {float(tango_interval(0, 0, n)[1]):+.3f}]"
        for n in (4, 6, 10, 27, 44)))

    print(f"\n1. Tango score 95% interval, exact coverage over Δ in {DELTAS} x p01 in {P01S}")
    print(f"{'n':>4} {'min cover':>10} {'mean cover':>11} {'max miss above':>15} {'max miss below':>15} "
          f"{'cover, 0 discordant':>20}")
    for n in SIZES:
        res = [tango_exact(n, d, p) for d in DELTAS for p in P01S if p + d + p <= 1]
        cov = [r[0] for r in res]
        print(f"{n:>4} {min(cov):>10.3f} {np.mean(cov):>11.3f} {max(r[1] for r in res):>15.3f} "
              f"{max(r[2] for r in res):>15.3f} {tango_exact(n, 0.0, 0.0)[0]:>20.3f}")

    reps = 4000
    se = np.sqrt(0.95 * 0.05 / reps)
    print(f"\n2. Monte-Carlo coverage ({reps} seeded audits per cell, SE {100 * se:.2f} points), min over the grid")
    print(f"{'n':>4} {'Newcombe paired':>16} {'Newcombe independent':>21}")
    for n in SIZES:
        covs_p, covs_i = [], []
        for k, (d, p) in enumerate((d, p) for d in DELTAS for p in P01S if p + d + p <= 1):
            covs_p.append(newcombe_mc(n, d, p, reps, SEED + 1000 * n + k, paired=True)[0])
            if n in (10, 44, 200) and d in (0.0, 0.1) and p in (0.0, 0.05, 0.2):
                covs_i.append(newcombe_mc(n, d, p, 1000, SEED + 7 + k, paired=False)[0])
        print(f"{n:>4} {min(covs_p):>16.3f} {(f'{min(covs_i):.3f}' if covs_i else '-'):>21}")

    grid = [p / 100 for p in range(0, 46)]
    print(f"\n3. Gate false-pass rate: true gap = +{LIMIT} (worst over p01 ∈ 0..0.45, exact for Tango); "
          "pass rate at true gap 0 for comparison")
    print(f"{'n':>4} {'decidable':>10} {'Tango false pass':>17} {'worst p01':>10} {'Newcombe-paired (MC)':>21} "
          f"{'pass at gap 0, p01=0.02: Tango':>31} {'Newcombe indep. (MC)':>21}")
    for n in SIZES:
        fp = [(tango_exact(n, LIMIT, p)[3], p) for p in grid if 2 * p + LIMIT <= 1]
        worst, at = max(fp)
        nc = max(newcombe_mc(n, LIMIT, p, 2000, SEED + 17 * n + i, paired=True)[1]
                 for i, p in enumerate((0.0, 0.02, 0.05, 0.1, 0.2)))
        fair = tango_exact(n, 0.0, 0.02)[3]
        fair_i = newcombe_mc(n, 0.0, 0.02, 1000, SEED + 31 * n, paired=False)[1]
        dec = "yes" if n >= need_t else f"no (<{need_t})"
        where = f"{at:.2f}" if worst > 0 else "-"
        print(f"{n:>4} {dec:>10} {worst:>17.4f} {where:>10} {nc:>21.4f} {fair:>31.3f} {fair_i:>21.3f}")

    print("\n4. Planning: pairs per stratum for an 80 % chance to pass when the true gap is 0, by the share of "
          "discordant pairs (seeded Monte Carlo, 2000 audits per n)")
    for disc in (0.0, 0.05, 0.10, 0.20, 0.30):
        def power(n: int) -> float:
            cells = draw_matched_counts(n, (1 - disc) / 2, disc / 2, disc / 2, 2000, seed=SEED + n)
            lo, hi = tango_interval(cells[:, 1], cells[:, 2], n)
            return float(((lo >= -LIMIT) & (hi <= LIMIT)).mean())
        lo_n, hi_n = need_t - 1, need_t
        while power(hi_n) < 0.8:
            lo_n, hi_n = hi_n, hi_n * 2
        while hi_n - lo_n > 1:
            mid = (lo_n + hi_n) // 2
            lo_n, hi_n = (lo_n, mid) if power(mid) >= 0.8 else (mid, hi_n)
        print(f"   discordant share {disc:.2f}: {hi_n} pairs")

    reps_e = 1000
    for n, p01 in ((44, 0.02), (100, 0.05)):
        mc, passed = end_to_end(n, p01, reps_e, SEED + n)
        exact = tango_exact(n, LIMIT, p01)[3]
        print(f"\n5. interval_checks end to end, n={n}, true TPR gap +{LIMIT}, p01={p01}: interval inside "
              f"±{LIMIT} in {mc:.3f} of {reps_e} audits (exact {exact:.4f}, MC SE "
              f"{np.sqrt(max(exact, 0.01) * 0.99 / reps_e):.3f}); status PASS in {passed:.3f} (no judge shown to "
              "respond: ready pairs only)")
    print(f"\n[{time.perf_counter() - t0:.0f} s]")


if __name__ == "__main__":
    main()
