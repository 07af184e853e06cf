"""Sequential gates: false pass under continuous monitoring, and items to a decision vs a fixed-n design.

For each quantity a gate reads (an item's values in a known range), simulate audits whose true value
is 0, exactly the maximum, and twice the maximum; look after every item (the betting confidence
sequence of cfbench.stats.sequential) and stop at the first pass or fail, or at the budget.
Prints, per quantity and true value: how often each verdict was reached, the mean items used, and the
fixed-n design the sequence is compared with: the fewest items at which a fixed-n 95 % interval (exact
Clopper-Pearson for a 0/1 rate, else the t interval) passes
a judge at true value 0 with 80 % power (found by simulation), and that fixed design's own false pass
when it too is peeked at after every item. The savings column is fixed-n items / mean sequential items.
A two-sided gate (ShopFlow's |gap| <= max) passes when the sequence (or the fixed-n t interval) lies inside
(-max, max) and fails when it lies wholly beyond one side.

    python benchmarks/bench_sequential.py [--audits 1000] [--seed 0] [--only TEXT]
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


def _net_min(rng, n, effect, noise=0.05):
    """Judge-bias net flip share with repeats: the cue's flip minus the smaller of the item's two noise flips
    (reworded prompt, repeat; each at rate ``noise``), its mean = effect."""
    smaller = (rng.random(n) < noise) & (rng.random(n) < noise)
    return (rng.random(n) < effect + noise * noise).astype(float) - smaller


def _net_abs_min(rng, n, effect):
    """Judge-bias pointwise net shift with repeats: |cued - baseline| minus the smaller of the item's two noise
    shifts (|reworded - baseline|, |repeat - baseline|; each 0 in 80 % of items, else 1 or 2 points), on
    [-9, 9]. The cue moves the score like the smaller noise plus 3 points on a share effect / 3 of the items,
    so its mean = effect."""
    def noise():
        return np.where(rng.random(n) < 0.8, 0.0, rng.choice([1.0, 2.0], n))

    smaller = np.minimum(noise(), noise())
    cue = np.minimum(noise(), noise()) + 3.0 * (rng.random(n) < effect / 3.0)
    return cue - smaller


QUANTITIES = {
    "flip rate (CFR), max 0.10": (0.0, 1.0, 0.10, _rate),
    "net flip rate (cue - repeat), max 0.10": (-1.0, 1.0, 0.10, _net),
    "matched-pair gap, max 0.10": (-1.0, 1.0, 0.10, _gap),
    "mean score shift (1-10 scores), max 0.3": (-9.0, 9.0, 0.3, _shift),
    # issue 35's other studies: ShopFlow's gap gates are two-sided (|gap| <= max); the judge-bias net share
    # with repeats subtracts the smaller noise
    "matched-pair gap, two-sided |gap| <= 0.10 (ShopFlow)": (-1.0, 1.0, 0.10, _gap, True),
    "net flip share vs the smaller noise, max 0.10 (judge bias)": (-1.0, 1.0, 0.10, _net_min),
    "net |score shift| vs the smaller noise, max 1 point (judge bias pointwise)": (-9.0, 9.0, 1.0, _net_abs_min),
}


def _decisions(lower, upper, maximum, looks, two_sided):
    """The looks at which the gate passes and fails (two-sided: inside (-max, max) / wholly beyond a side)."""
    if two_sided:
        return (looks[(lower[looks] > -maximum) & (upper[looks] < maximum)],
                looks[(lower[looks] > maximum) | (upper[looks] < -maximum)])
    return looks[upper[looks] < maximum], looks[lower[looks] > maximum]


def _sequential(draw, lo, hi, maximum, effect, *, budget, audits, rng, wave=1, two_sided=False):
    verdicts, used = [], []
    for _ in range(audits):
        x = draw(rng, budget, effect)
        cs = BettingCS(lo=lo, hi=hi)
        lower, upper = cs.update(x)
        lower, upper = lo + lower * (hi - lo), lo + upper * (hi - lo)
        looks = np.arange(wave - 1, budget, wave)
        passed, failed = _decisions(lower, upper, maximum, looks, two_sided)
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


def _fixed_passes(x, lo, maximum, two_sided):
    """Whether the fixed-n 95 % interval passes the gate (two-sided: the t interval inside (-max, max))."""
    if not two_sided:
        return _fixed_upper(x, lo) < maximum
    if x.std() == 0:
        return False
    half = sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return -maximum < x.mean() - half and x.mean() + half < maximum


def _fixed_upper(x, lo):
    """A fixed-n 95 % upper bound: exact Clopper-Pearson for 0/1 rates, else the t interval (no bound when
    the items show no spread: a t interval of identical values says nothing)."""
    if lo == 0.0 and set(np.unique(x)) <= {0.0, 1.0}:
        k, n = x.sum(), len(x)
        return 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))
    return _t_upper(x) if x.std() > 0 else np.inf


def _fixed_n(draw, maximum, lo, *, audits, rng, two_sided=False,
             grid=(20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640)):
    """The fewest items at which the fixed-n interval passes in >= 80 % of audits at true value 0 (the design
    a fixed-n audit would pick)."""
    for n in grid:
        ok = np.mean([_fixed_passes(draw(rng, n, 0.0), lo, maximum, two_sided) for _ in range(audits)])
        if ok >= 0.8:
            return n
    return grid[-1]


def _peeked_fixed_false_pass(draw, maximum, *, n, audits, rng, start=8, two_sided=False):
    """The fixed-n t interval looked at after every item from ``start`` on, true value at the maximum."""
    hits = 0
    for _ in range(audits):
        x = draw(rng, n, maximum)
        c = np.cumsum(x)
        c2 = np.cumsum(x * x)
        k = np.arange(1, n + 1)
        mean = c / k
        var = np.maximum(c2 / k - mean ** 2, 0) * k / np.maximum(k - 1, 1)
        half = sps.t.ppf(0.975, np.maximum(k - 1, 1)) * np.sqrt(var / k)
        inside = (mean + half < maximum) & ((mean - half > -maximum) if two_sided else True)
        hits += bool((inside & (var > 0))[start - 1:].any())
    return hits / audits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="run only the quantities whose name contains this text")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    print(f"CPU: {_cpu()}; {args.audits} audits per row; seed {args.seed}; alpha 0.05 two-sided "
          f"(each bound 2.5 %); budget = 2 x the fixed-n design\n")
    print("| quantity | fixed-n design (items) | true value | pass | fail | inconclusive | mean items (sequential) "
          "| fixed-n / sequential items |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (lo, hi, maximum, draw, *two) in QUANTITIES.items():
        if args.only not in name:
            continue
        two_sided = bool(two and two[0])
        n_fixed = _fixed_n(draw, maximum, lo, audits=max(200, args.audits // 5), rng=rng, two_sided=two_sided)
        for effect in (0.0, maximum, 2 * maximum):
            share, items = _sequential(draw, lo, hi, maximum, effect, budget=2 * n_fixed, audits=args.audits,
                                       rng=rng, two_sided=two_sided)
            print(f"| {name} | {n_fixed} | {effect:g} | {share['pass']:.3f} | {share['fail']:.3f} | "
                  f"{share['inconclusive']:.3f} | {items:.1f} | {n_fixed / items:.2f} |")
        peeked = _peeked_fixed_false_pass(draw, maximum, n=2 * n_fixed, audits=args.audits, rng=rng,
                                          two_sided=two_sided)
        print(f"| {name}: fixed-n t interval peeked after every item, true value at the maximum | "
              f"{2 * n_fixed} | {maximum:g} | {peeked:.3f} (false pass) | | | | |")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
