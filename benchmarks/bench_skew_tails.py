"""Long-tailed means: which bootstrap-t bound keeps the miss on the long side near its level (issue 33).

The upper bound of a MASD (values >= 0, most small, a few large) missed above in 4.5-6.8 % of simulated
audits at 8-60 items with the equal-tailed bootstrap-t (target: 3.5 %). This bench draws the same
seeded audits once per family and size and runs every candidate on them, so the rows of one family
differ only in the method:

* ``equal tails (before)`` - the bootstrap-t and t union as it was (``LONG_SIDE_SHARE = 1``);
* ``long side at 1 %, capped at 1.35 (after)`` - the same with the quantile on the long side of the
  resampled t values at ``a * 0.4``, at most 1.35 times as far from 0 as the ``a`` quantile
  (``intervals.long_side_quantiles``), the method in use; without the cap; and at 1.25 % and 0.83 %;
* Hall's skewness-corrected t (Hall 1992, the cubic transformation of the studentised mean, t
  quantiles), unioned with the t interval;
* BCa (percentile bootstrap with bias correction and jackknife acceleration);
* the bootstrap-t on a logit scale of the value range, ``h(m) = log(m - L + d) - log(U - m + d)``
  with ``d`` the sample's standard error (so an all-zero resample stays finite), back-transformed;
* the empirical-Bernstein bound of Maurer and Pontil (2009) on values scaled to the range, 2.5 %
  per side (valid for any distribution on the range);
* the betting confidence sequence of ``cfbench.stats.sequential`` (anytime-valid, so wider than a
  fixed-n bound), read after the last item; one pair per item only.

Each cell: coverage % (miss below % / miss above %) x mean width over the estimator's own sampling
spread (the 2.5-97.5 % range of the estimate over the same audits). All-equal audits get the
worst-case two-point bound of ``mean_interval_t`` under every method (ranges known) or none (tone).

Usage: ``python benchmarks/bench_skew_tails.py [--reps 2000] [--write-docs]`` (``--write-docs``
replaces the block between the ``bench_skew_tails`` markers of docs/statistics.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import machine, write_docs_block
from scipy import stats

from cfbench.stats import coverage as C
from cfbench.stats import intervals as I
from cfbench.stats.bootstrap import resample_counts

A = 0.025
NS = (8, 20, 60)
START, END = "<!-- bench_skew_tails:start -->", "<!-- bench_skew_tails:end -->"

#: family -> (what it is, value range or None); drawn by :func:`draws`
FAMILIES = {
    "pyes_heavy_tail": "MASD of P(Yes), lognormal shifts min(1, 0.03 e^Z), range 0..1",
    "variants_hetero": "MASD over 1-5 unequal variants per item, items very unlike, range 0..100",
    "pyes_rare_large": "MASD of P(Yes), a large shift U(.1, .4) on 30 % of items, range 0..1",
    "mean_skewed": "means table `skewed` (1 pair per item, item scales Gamma(2)), range 0..100",
    "mean_zero_inflated": "means table `zero_inflated` (1 pair per item), range 0..100",
    "mean_halfnormal": "means table `halfnormal` (items alike), range 0..100",
    "mean_signed": "means table `signed` (symmetric, heavy tails), range -100..100",
    "coaching_mostly_zero": "MASD of 1-10 coaching scores, differences 0/1/2/3 (.70/.20/.08/.02), range 0..9",
    "coaching_rare": "MASD of 1-10 coaching scores, differences 0/1/2 (.90/.08/.02), range 0..9",
    "tone_skewed": "paired tone difference Gamma(0.5, 2) - 1, no range (paired.bootstrap_t_interval)",
}


def draws(name: str, rng: np.random.Generator, reps: int, K: int):
    """(num, den, truth, value range) of one family, as :mod:`cfbench.stats.coverage` draws it."""
    if name == "tone_skewed":
        d = rng.gamma(0.5, 2.0, size=(reps, K)) - 1.0
        return d, np.ones_like(d), 0.0, None
    if name.startswith("mean_"):
        shape = name[5:]
        vr = (-100.0, 100.0) if shape == "signed" else (0.0, 100.0)
        num = np.clip(C._mean_draws(rng, shape, 2.0, reps, K, 1), *vr)
        return num, np.ones_like(num), C.mean_truth(shape, 2.0), vr
    return C._family_means(rng, name, reps, K)


def resampled(num, den, w):
    """Resample estimates ``sum(w num) / sum(w den)`` and their linearised SEs before any floor
    (audits x resamples), each resample's SE computed as the sample's is (``K / (K - 1)`` factor)."""
    K = num.shape[1]
    wt = w.T
    wd = den @ wt
    rb = (num @ wt) / wd
    ss = (num * num) @ wt - 2 * rb * ((num * den) @ wt) + rb * rb * ((den * den) @ wt)
    return rb, np.sqrt(np.maximum(ss, 0) * K / (K - 1)) / wd


def _parts(num, den, w):
    """Estimate, standard error, resample estimates and floored resample SEs (as bootstrap_t_rows)."""
    K = num.shape[1]
    D = den.sum(1)
    r = num.sum(1) / D
    se = np.sqrt((((num - r[:, None] * den) * (K / D)[:, None]) ** 2).sum(1) / (K * (K - 1)))
    rb, seb = resampled(num, den, w)
    return r, se, rb, I.floored_se(seb, se, K)


def _tq(K: int) -> float:
    return float(stats.t.ppf(1 - A, K - 1))


class long_side:
    """Patch the level (and cap) of the long side in :mod:`cfbench.stats.intervals` for a block."""

    def __init__(self, share: float, cap: float | None = None):
        self.share, self.cap = share, I.LONG_SIDE_CAP if cap is None else cap

    def __enter__(self):
        self.saved = (I.LONG_SIDE_SHARE, I.LONG_SIDE_CAP)
        I.LONG_SIDE_SHARE, I.LONG_SIDE_CAP = self.share, self.cap

    def __exit__(self, *exc):
        I.LONG_SIDE_SHARE, I.LONG_SIDE_CAP = self.saved


def boot_t(share: float, cap: float | None = None):
    def f(num, den, w, vr, P):
        with long_side(share, cap):
            return I.bootstrap_t_rows(num, den, w)
    return f


def hall_t(num, den, w, vr, P):
    """Hall's (1992) transformation g(T) = T + g T^2/(3 sqrt n) + g^2 T^3/(27 n) + g/(6 sqrt n) of the
    studentised mean, inverted at the t quantiles; unioned with the t interval."""
    r, se, _, _ = P
    K = num.shape[1]
    z = (num - r[:, None] * den) * (K / den.sum(1))[:, None]
    g = (z ** 3).mean(1) / np.maximum((z ** 2).mean(1), 1e-300) ** 1.5
    b = g / (3 * np.sqrt(K))
    b = np.where(np.abs(b) < 1e-12, 1e-12, b)

    def ginv(x):
        return (np.cbrt(1 + 3 * b * (x - g / (6 * np.sqrt(K)))) - 1) / b

    q = _tq(K)
    lo, hi = r - se * ginv(q), r - se * ginv(-q)
    return np.minimum(lo, r - q * se), np.maximum(hi, r + q * se)


def bca(num, den, w, vr, P):
    r, _, rb, _ = P
    N, D = num.sum(1), den.sum(1)
    jk = (N[:, None] - num) / (D[:, None] - den)
    dj = jk.mean(1, keepdims=True) - jk
    acc = (dj ** 3).sum(1) / (6 * np.maximum((dj ** 2).sum(1), 1e-300) ** 1.5)
    p0 = (rb < r[:, None]).mean(1) + 0.5 * (rb == r[:, None]).mean(1)
    z0 = stats.norm.ppf(np.clip(p0, 1e-6, 1 - 1e-6))
    srt, B = np.sort(rb, 1), rb.shape[1]
    out = []
    for za in (stats.norm.ppf(A), stats.norm.ppf(1 - A)):
        level = stats.norm.cdf(z0 + (z0 + za) / (1 - acc * (z0 + za)))
        idx = np.clip(np.round(level * (B - 1)).astype(int), 0, B - 1)
        out.append(np.take_along_axis(srt, idx[:, None], 1)[:, 0])
    return out[0], out[1]


def logit_boot_t(num, den, w, vr, P):
    """Bootstrap-t of h(r) = log(r - L + d) - log(U - r + d), d = se, factor (K/(K-1))^2, back-transformed,
    unioned with the t interval on the original scale."""
    r, se, rb, seb = P
    K = num.shape[1]
    L, U = vr
    d = se[:, None]

    def h(m):
        return np.log(m - L + d) - np.log(U - m + d)

    def hp(m):
        return 1 / (m - L + d) + 1 / (U - m + d)

    h0 = h(r[:, None])
    tb = (h(rb) - h0) / (hp(rb) * seb)
    tl, th = np.quantile(tb, A, 1), np.quantile(tb, 1 - A, 1)
    c = (K / (K - 1)) ** 2
    seh = hp(r[:, None])[:, 0] * se
    S = U - L + 2 * se

    def back(y):
        return L - se + S / (1 + np.exp(-y))

    lo, hi = back(h0[:, 0] - c * th * seh), back(h0[:, 0] - c * tl * seh)
    q = _tq(K)
    return np.minimum(lo, r - q * se), np.maximum(hi, r + q * se)


def emp_bernstein(num, den, w, vr, P):
    L, U = vr
    y = (num / den - L) / (U - L)
    K = y.shape[1]
    lg = np.log(1 / A)
    h = np.sqrt(2 * y.var(1, ddof=1) * lg / K) + 7 * lg / (3 * (K - 1))
    m = y.mean(1)
    return L + (U - L) * (m - h), L + (U - L) * (m + h)


def betting(num, den, w, vr, P):
    """The anytime-valid betting confidence sequence of ``stats.sequential`` (95 %, items in drawn order),
    read once after the last item; items with one pair each only (its mean is of items, not a ratio)."""
    from cfbench.stats.sequential import BettingCS

    lo, hi = np.full(len(num), np.nan), np.full(len(num), np.nan)
    if not np.all(den == 1):
        return lo, hi
    for i in range(len(num)):
        cs = BettingCS(lo=vr[0], hi=vr[1])
        cs.update(num[i])
        lo[i], hi[i] = cs.bounds()
    return lo, hi


#: label -> (function, needs a value range)
METHODS = {
    "equal tails (before)": (boot_t(1.0), False),
    "long side at 1 %, capped at 1.35 (after)": (boot_t(I.LONG_SIDE_SHARE), False),
    "long side at 1 %, no cap": (boot_t(I.LONG_SIDE_SHARE, cap=1e9), False),
    "long side at 1.25 %, no cap": (boot_t(0.5, cap=1e9), False),
    "long side at 0.83 %, no cap": (boot_t(1 / 3, cap=1e9), False),
    "Hall's skewness-corrected t, union t": (hall_t, False),
    "BCa": (bca, False),
    "bootstrap-t on a logit scale, union t": (logit_boot_t, True),
    "empirical Bernstein (Maurer-Pontil)": (emp_bernstein, True),
    "betting confidence sequence (stats.sequential)": (betting, True),
}


def _finish(num, den, lo, hi, vr):
    """The all-equal rule and the range of ``mean_interval_t`` (NaN without a range, as for tone)."""
    K = num.shape[1]
    y = num / den
    flat = np.ptp(y, 1) <= 1e-12 * np.maximum(1, np.abs(y.mean(1)))
    lo, hi = lo.copy(), hi.copy()
    if vr is None:
        lo[flat] = hi[flat] = np.nan
        return lo, hi
    r = num[flat].sum(1) / den[flat].sum(1)
    u = I.worst_case_bound(K)
    lo[flat], hi[flat] = r - (r - vr[0]) * u, r + (vr[1] - r) * u
    return np.maximum(lo, vr[0]), np.minimum(hi, vr[1])


def _cell(r: dict) -> str:
    return (f"{100 * r['coverage']:.1f} ({100 * r['miss_low']:.1f} / {100 * r['miss_high']:.1f}) "
            f"x{r['width_ratio']:.2f}")


def family_rows(name: str, reps: int, n_boot: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {m: [] for m in METHODS}
    for K in NS:
        rng = np.random.default_rng(1000 + K)
        num, den, truth, vr = draws(name, rng, reps, K)
        w = resample_counts(K, n_boot, rng)
        P = _parts(num, den, w)
        est = num.sum(1) / den.sum(1)
        for label, (f, needs_range) in METHODS.items():
            if label not in out or (needs_range and vr is None):
                out.pop(label, None)
                continue
            with np.errstate(all="ignore"):
                lo, hi = _finish(num, den, *f(num, den, w, vr, P), vr)
            if np.isnan(lo).all():  # the method does not apply to this family (betting: ratio of sums)
                out.pop(label, None)
                continue
            out[label].append(C._summary(lo, hi, truth, est))
    return out


def judges_rows(reps: int) -> dict[str, list[dict]]:
    """judge A - judge B MASD (bootstrap_t_difference_rows, whose bounds use the same quantiles)."""
    out = {}
    for label, share in (("equal tails (before)", 1.0), ("long side at 1 %, capped at 1.35 (after)",
                                                          I.LONG_SIDE_SHARE)):
        with long_side(share):
            out[label] = [C.family_coverage("judges_masd", n_items=K, reps=reps, n_boot=500, seed=1000 + K)
                          for K in NS]
    return out


def run(reps: int, n_boot: int) -> list[str]:
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_skew_tails.py --reps {reps}` on {machine()}: {reps} seeded "
             f"audits per cell (seed 1000 + n, the same audits and resamples for every method of a family), "
             f"{n_boot} resamples; judge differences {reps // 4} audits, 500 resamples. Each cell: coverage % "
             "(miss below % / miss above %) x mean width / sampling spread.", "",
             "| family | method | " + " | ".join(f"n={n}" for n in NS) + " |", "|---|---|" + "---|" * len(NS)]
    for name, what in FAMILIES.items():
        for label, cells in family_rows(name, reps, n_boot).items():
            lines.append(f"| {name}: {what} | {label} | " + " | ".join(_cell(c) for c in cells) + " |")
            print(lines[-1], flush=True)
    for label, cells in judges_rows(reps // 4).items():
        lines.append(f"| judges_masd: judge A - judge B MASD of P(Yes), paired by item | {label} | "
                     + " | ".join(_cell(c) for c in cells) + " |")
        print(lines[-1], flush=True)
    lines += ["", f"Run time: {time.time() - t0:.0f} s."]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    lines = run(a.reps, a.n_boot)
    print(lines[-1])
    if a.write_docs:
        print(f"wrote {write_docs_block(lines, START, END)}")


if __name__ == "__main__":
    main()
