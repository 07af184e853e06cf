"""Sequential gates: false pass under continuous monitoring, and items to a decision vs a fixed-n design.

For each quantity a gate reads (an item's values in a known range), simulate audits whose true value
is 0, exactly the maximum, and twice the maximum; look after every item (the betting confidence
sequence of cfbench.stats.sequential) and stop at the first pass or fail, or at the budget.
Prints, per quantity and true value: how often each verdict was reached, the mean items used, and the
fixed-n design the sequence is compared with: the fewest items at which a fixed-n 95 % interval (exact
Clopper-Pearson for a 0/1 rate, else the t interval) passes
a judge at true value 0 with 80 % power (found by simulation), and that fixed design's own false pass
when it too is peeked at after every item. The savings column is fixed-n items / mean sequential items.

    python benchmarks/bench_sequential.py [--audits 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy import stats as sps

from cfbench.stats.sequential import BettingCS, gate_verdict


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


# name: (range lo, range hi, maximum, draw(rng, n, effect)) -- one value per item
def _net(rng, n, effect, noise=0.05):
    """Net flip rate per item: flipped under the cue (rate noise + effect) minus flipped on a repeat (noise)."""
    return (rng.random(n) < noise + effect).astype(float) - (rng.random(n) < noise)


def _rate(rng, n, effect):
    return (rng.random(n) < effect).astype(float)


def _gap(rng, n, effect, discordant=0.2):
    """Matched-pair gap: +1 / -1 discordant pairs, their difference in rate = effect."""
    u = rng.random(n)
    return np.where(u < discordant / 2 + effect / 2, 1.0, np.where(u < discordant, -1.0, 0.0))


def _shift(rng, n, effect):
    """A bounded score shift in [-9, 9] points (1-10 scores): mostly zero, a heavy tail, mean = effect."""
    base = np.where(rng.random(n) < 0.8, 0.0, rng.choice([-2.0, -1.0, 1.0, 2.0], n))
    return np.clip(base + rng.choice([0.0, 1.0], n, p=[1 - effect, effect]) * 1.0, -9, 9)


QUANTITIES = {
    "flip rate (CFR), max 0.10": (0.0, 1.0, 0.10, _rate),
    "net flip rate (cue - repeat), max 0.10": (-1.0, 1.0, 0.10, _net),
    "matched-pair gap, max 0.10": (-1.0, 1.0, 0.10, _gap),
    "mean score shift (1-10 scores), max 0.3": (-9.0, 9.0, 0.3, _shift),
}


def _sequential(draw, lo, hi, maximum, effect, *, budget, audits, rng, wave=1):
    verdicts, used = [], []
    for _ in range(audits):
        x = draw(rng, budget, effect)
        cs = BettingCS(lo=lo, hi=hi)
        lower, upper = cs.update(x)
        lower, upper = lo + lower * (hi - lo), lo + upper * (hi - lo)
        looks = np.arange(wave - 1, budget, wave)
        passed = looks[upper[looks] < maximum]
        failed = looks[lower[looks] > maximum]
        first_p = passed[0] if passed.size else budget
        first_f = failed[0] if failed.size else budget
        if first_p == first_f == budget:
            verdicts.append("inconclusive")
            used.append(budget)
        elif first_p < first_f:
            verdicts.append("pass")
            used.append(first_p + 1)
        else:
            verdicts.append("fail")
            used.append(first_f + 1)
    v = np.array(verdicts)
    return {k: float((v == k).mean()) for k in ("pass", "fail", "inconclusive")}, float(np.mean(used))


def _t_upper(x):
    n = len(x)
    s = x.std(ddof=1)
    return x.mean() + sps.t.ppf(0.975, n - 1) * s / np.sqrt(n) if s > 0 else x.mean()


def _fixed_upper(x, lo):
    """A fixed-n 95 % upper bound: exact Clopper-Pearson for 0/1 rates, else the t interval (no bound when
    the items show no spread: a t interval of identical values says nothing)."""
    if lo == 0.0 and set(np.unique(x)) <= {0.0, 1.0}:
        k, n = x.sum(), len(x)
        return 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))
    return _t_upper(x) if x.std() > 0 else np.inf


def _fixed_n(draw, maximum, lo, *, audits, rng, grid=(20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640)):
    """The fewest items at which the fixed-n upper bound is below the maximum in >= 80 % of audits at true
    value 0 (the design a fixed-n audit would pick)."""
    for n in grid:
        ok = np.mean([_fixed_upper(draw(rng, n, 0.0), lo) < maximum for _ in range(audits)])
        if ok >= 0.8:
            return n
    return grid[-1]


def _peeked_fixed_false_pass(draw, maximum, *, n, audits, rng, start=8):
    """The fixed-n t interval looked at after every item from ``start`` on, true value at the maximum."""
    hits = 0
    for _ in range(audits):
        x = draw(rng, n, maximum)
        c = np.cumsum(x)
        c2 = np.cumsum(x * x)
        k = np.arange(1, n + 1)
        mean = c / k
        var = np.maximum(c2 / k - mean ** 2, 0) * k / np.maximum(k - 1, 1)
        upper = mean + sps.t.ppf(0.975, np.maximum(k - 1, 1)) * np.sqrt(var / k)
        spread = var > 0
        hits += bool(((upper < maximum) & spread)[start - 1:].any())
    return hits / audits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    print(f"CPU: {_cpu()}; {args.audits} audits per row; seed {args.seed}; alpha 0.05 two-sided "
          f"(each bound 2.5 %); budget = 2 x the fixed-n design\n")
    print("| quantity | fixed-n design (items) | true value | pass | fail | inconclusive | mean items (sequential) "
          "| fixed-n / sequential items |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (lo, hi, maximum, draw) in QUANTITIES.items():
        n_fixed = _fixed_n(draw, maximum, lo, audits=max(200, args.audits // 5), rng=rng)
        for effect in (0.0, maximum, 2 * maximum):
            share, items = _sequential(draw, lo, hi, maximum, effect, budget=2 * n_fixed, audits=args.audits,
                                       rng=rng)
            print(f"| {name} | {n_fixed} | {effect:g} | {share['pass']:.3f} | {share['fail']:.3f} | "
                  f"{share['inconclusive']:.3f} | {items:.1f} | {n_fixed / items:.2f} |")
        peeked = _peeked_fixed_false_pass(draw, maximum, n=2 * n_fixed, audits=args.audits, rng=rng)
        print(f"| {name}: fixed-n t interval peeked after every item, true value at the maximum | "
              f"{2 * n_fixed} | {maximum:g} | {peeked:.3f} (false pass) | | | | |")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
