"""A calibrated (double) bootstrap-t beside the floor of ``bench_width_floor.py`` (issue 33, measured only).

``bench_width_floor`` showed that an oracle studentized interval meets issue 33's targets (one-sided
miss <= 3.5 %, two-sided coverage >= 93 %, width <= 1.5 sampling spreads at n >= 20) on every
long-tailed family at 20 items, while cfbench's interval (fixed "long side at 1 %" rule) is 1.4-2.0x
wider and the plain equal-tailed bootstrap-t misses the tail side in 4-6.7 %. This bench asks whether
the sample can tell each bound how far out to go: the **calibrated bootstrap-t** (Hall 1986's
iterated bootstrap; Beran 1987's prepivoting; the level calibration of Hall and Martin 1988).

For one audit (estimate ``r``, linearised SE ``se`` as ``bench_skew_tails._parts`` computes them):

1. ``n_boot`` outer resamples give the bootstrap-t's pivots ``T*_b = (r*_b - r) / se*_b`` (resample
   SEs floored as cfbench floors them), the same resamples as the plain bootstrap-t row;
2. the first ``--outer`` of them are treated as samples in their own right: each gets ``--inner``
   resamples of its own items, whose pivots ``T**`` (SE floored against that outer sample's own SE)
   give the plain bootstrap-t bound *that* sample would report. Its upper bound at nominal level
   ``beta`` misses the bootstrap world's truth ``r`` exactly when ``T*_b`` (with the outer sample's
   own, unfloored SE) lies below the ``beta`` quantile of its ``T**``, i.e. when
   ``u_b = P(T** < T*_b)`` (ties half) is below ``beta``. An outer sample whose items all share one
   value gets the all-equal rule of ``_finish`` instead (a miss or not, whatever ``beta``; without a
   value range no interval, and it is left out);
3. the nominal level of each bound is chosen so that the estimated miss equals the aim: the upper
   bound's ``beta`` is the level at which a share ``aim`` of the outer samples miss above (an
   interpolated quantile of the ``u_b``), the lower bound's likewise on the other side; the bound is
   ``r - Q_T*(beta) se`` with ``Q_T*`` the quantile of all ``n_boot`` outer pivots, then ``_finish``
   (all-equal rule, clipping to the value range) as for every row.

Aims: 2.5 % on each side; 3.0 % on the tail side with 2.5 % on the other (the tail side of an audit
is the side whose 2.5 % quantile of ``T*`` lies farther from 0, as in cfbench's long-side rule); and
2.5 % on each side with the levels allowed to move only outwards from the plain bootstrap-t's
2.5 / 97.5 % ("widen only": the calibration may not make a bound narrower than the plain one's, which
on discrete scores, where the bootstrap world's truth sits on an atom of the estimate, it otherwise does).
No small-sample factor, no union with t. Evaluated on the audits of ``bench_width_floor`` (seed
1000 + n, ``cell_rows``), beside cfbench's interval, the plain bootstrap-t and the 3.5 / 3.5 % oracle;
the outer resamples are shared by the audits of a cell (as every bootstrap row of these benches
does), the inner ones are drawn once per cell (seed 700000 + n). The cost per interval is timed
separately on single audits with their own resamples (``--cost``).

Usage: ``python benchmarks/bench_calibrated_boot.py [--audits 2000] [--calib 20000] [--n-boot 1000]
[--outer 200] [--inner 100] [--only FAMILY] [--quick] [--write-docs]`` (``--write-docs`` replaces
the block between the ``bench_calibrated_boot`` markers of docs/statistics.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import machine, publish
from bench_skew_tails import FAMILIES, NS, A, _finish, _parts, draws, resampled
from bench_width_floor import OURS, PLAIN, calibrate, cell_rows, envelope, ours, plain_bootstrap_t

from cfbench.stats import intervals as I
from cfbench.stats.bootstrap import resample_counts

START, END = "<!-- bench_calibrated_boot:start -->", "<!-- bench_calibrated_boot:end -->"
INNER_SEED = 700_000
ORACLE = "oracle, 3.5 / 3.5 %"
#: label -> (aim of the tail side's bound, aim of the other bound, never narrower than the plain bootstrap-t)
AIMS = {"calibrated bootstrap-t, aim 2.5 / 2.5 %": (0.025, 0.025, False),
        "calibrated bootstrap-t, aim 3.0 % tail side / 2.5 %": (0.030, 0.025, False),
        "calibrated bootstrap-t, aim 2.5 / 2.5 %, widen only": (0.025, 0.025, True)}
RESCUE = ("Where the calibrated bound (aim 2.5 / 2.5 %) spends its width, on the side where the plain "
          "bootstrap-t misses more (same audits):")
SHOWN = (OURS, PLAIN, ORACLE, *AIMS)
SHORT = {OURS: "cfbench (after)", PLAIN: "plain bootstrap-t", ORACLE: "oracle 3.5 / 3.5 %",
         **{k: "calibrated, aim " + k.split("aim ")[1] for k in AIMS}}


def inner_counts(w_outer: np.ndarray, n_inner: int, rng: np.random.Generator) -> np.ndarray:
    """(outer x inner) x K counts over the original items: ``n_inner`` resamples of each outer resample's
    own K items (row ``b * n_inner + j`` is inner resample j of outer resample b)."""
    B, K = w_outer.shape
    items = np.repeat(np.tile(np.arange(K), B), w_outer.astype(int).ravel()).reshape(B, K)
    pick = np.take_along_axis(items[:, None, :], rng.integers(0, K, size=(B, n_inner, K)), axis=2)
    flat = (np.arange(B * n_inner)[:, None] * K + pick.reshape(B * n_inner, K)).ravel()
    return np.bincount(flat, minlength=B * n_inner * K).reshape(B * n_inner, K).astype(float)


def row_quantile(values: np.ndarray, valid: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per row, the linearly interpolated ``p``-quantile of ``values`` over its ``valid`` entries
    (``p`` one level per row; a row with no valid entry gives NaN)."""
    s = np.sort(np.where(valid, values, np.inf), axis=1)
    n = valid.sum(1)
    pos = np.clip(p, 0, 1) * np.maximum(n - 1, 0)
    i0 = np.floor(pos).astype(int)
    i1 = np.minimum(i0 + 1, np.maximum(n - 1, 0))
    a = np.take_along_axis(s, i0[:, None], 1)[:, 0]
    b = np.take_along_axis(s, i1[:, None], 1)[:, 0]
    with np.errstate(invalid="ignore"):
        out = a + (pos - i0) * (b - a)
    return np.where(n > 0, out, np.nan)


def prepivots(num, den, vr, w_outer, w_inner):
    """Per audit and outer sample: ``u_b = P(T** < T*_b)`` (ties half; NaN where the outer sample has no
    spread), and whether the all-equal rule's lower / upper bound of such a sample misses ``r``."""
    A, K = num.shape
    B, M = len(w_outer), len(w_inner) // len(w_outer)
    r = num.sum(1) / den.sum(1)
    rb, se_b = resampled(num, den, w_outer)                          # A x B, outer SE unfloored
    y = num / den
    present = w_outer[None] > 0
    ptp = np.where(present, y[:, None], -np.inf).max(2) - np.where(present, y[:, None], np.inf).min(2)
    flat = ptp <= 1e-12 * np.maximum(1, np.abs(rb))
    rbb, se_bb = resampled(num, den, w_inner)                         # A x (B M)
    se_bb = I.floored_se(se_bb.reshape(A * B, M), se_b.ravel(), K).reshape(A, B, M)
    with np.errstate(divide="ignore", invalid="ignore"):              # outer samples without spread: NaN
        t_in = (rbb.reshape(A, B, M) - rb[..., None]) / se_bb
        t_out = ((rb - r[:, None]) / se_b)[..., None]
    u = (t_in < t_out).mean(2) + 0.5 * (t_in == t_out).mean(2)
    u[flat] = np.nan
    miss_lo = np.zeros_like(flat)
    miss_hi = np.zeros_like(flat)
    if vr is not None:
        wc = I.worst_case_bound(K)
        miss_lo = flat & (rb - (rb - vr[0]) * wc > r[:, None])
        miss_hi = flat & (rb + (vr[1] - rb) * wc < r[:, None])
    return u, miss_lo, miss_hi


def calibrated_levels(u, m_lo, m_hi, ranged: bool, aim_lo, aim_hi) -> tuple[np.ndarray, np.ndarray]:
    """Per audit, the levels of the ``T*`` quantiles for the lower and the upper bound at which the
    estimated misses (outer samples with spread: ``u_b`` beyond the level; without spread: the
    all-equal rule's miss, or left out when there is no value range) equal ``aim_lo`` / ``aim_hi``."""
    ok = ~np.isnan(u)
    n_ok = ok.sum(1)
    n_all = u.shape[1] if ranged else n_ok
    with np.errstate(divide="ignore", invalid="ignore"):
        p_hi = (aim_hi * n_all - m_hi.sum(1)) / n_ok        # share of the samples with spread to miss above
        p_lo = 1 - (aim_lo * n_all - m_lo.sum(1)) / n_ok
    return (np.where(n_ok > 0, row_quantile(u, ok, p_lo), 1 - aim_lo),
            np.where(n_ok > 0, row_quantile(u, ok, p_hi), aim_hi))


def calibrated_bounds(num, den, vr, w, w_inner, n_outer: int, aims: dict[str, tuple[float, float]]) -> dict:
    """label -> (lo, hi) of the calibrated bootstrap-t for each aim (tail side, other side, widen only). All rows of
    ``w`` give ``T*``; its first ``n_outer`` rows, resampled by ``w_inner`` (``inner_counts``), are
    calibrated."""
    r, se, rb, seb = _parts(num, den, w)
    T = (rb - r[:, None]) / seb
    u, m_lo, m_hi = prepivots(num, den, vr, w[:n_outer], w_inner)
    q025, q975 = np.quantile(T, [0.025, 0.975], axis=1)
    upper_is_tail = -q025 > q975
    every = np.ones_like(T, dtype=bool)
    out = {}
    for label, (aim_tail, aim_short, widen_only) in aims.items():
        aim_hi = np.where(upper_is_tail, aim_tail, aim_short)
        aim_lo = np.where(upper_is_tail, aim_short, aim_tail)
        beta_lo, beta_hi = calibrated_levels(u, m_lo, m_hi, vr is not None, aim_lo, aim_hi)
        if widen_only:     # the levels may move out from the plain bootstrap-t's 2.5 / 97.5 %, never in
            beta_lo, beta_hi = np.maximum(beta_lo, 1 - A), np.minimum(beta_hi, A)
        hi = r - row_quantile(T, every, beta_hi) * se
        lo = r - row_quantile(T, every, beta_lo) * se
        out[label] = _finish(num, den, lo, hi, vr)
    return out


class ExtraRows:
    """``cell_rows``'s hook: the calibrated rows on a cell's audits (blocks of ``block`` audits); keeps the
    last cell's bounds, and the plain bootstrap-t's, in ``last`` for :func:`rescue`."""

    def __init__(self, n_outer: int, n_inner: int, block: int = 100):
        self.n_outer, self.n_inner, self.block, self.last = n_outer, n_inner, block, {}

    def __call__(self, num, den, vr, w):
        K, b = num.shape[1], self.block
        w_inner = inner_counts(w[: self.n_outer], self.n_inner, np.random.default_rng(INNER_SEED + K))
        parts = [calibrated_bounds(num[i:i + b], den[i:i + b], vr, w, w_inner, self.n_outer, AIMS)
                 for i in range(0, len(num), b)]
        out = {k: tuple(np.concatenate([p[k][j] for p in parts]) for j in (0, 1)) for k in AIMS}
        self.last = {**out, PLAIN: plain_bootstrap_t(num, den, vr, w)}
        return out


def rescue(last: dict, truth: float) -> str:
    """Where the calibration spends its width: on the side where the plain bootstrap-t misses more, the
    share of the audits it misses that the calibrated bound (aim 2.5 %) still misses, and the calibrated
    over the plain width on the audits the plain bound missed and on those it covered."""
    (plo, phi), (clo, chi) = last[PLAIN], last[next(iter(AIMS))]
    truth_hi = np.sum(phi < truth) >= np.sum(plo > truth)
    missed = phi < truth if truth_hi else plo > truth
    still = (chi < truth if truth_hi else clo > truth)[missed]
    ratio = (chi - clo) / np.where(phi > plo, phi - plo, np.nan)
    r_miss, r_cover = np.nanmean(ratio[missed]), np.nanmean(ratio[~missed])
    return (f"{'upper' if truth_hi else 'lower'} | {100 * missed.mean():.1f} | "
            f"{100 * still.mean() if missed.any() else float('nan'):.0f} | {r_miss:.2f} / {r_cover:.2f}")


def cost_ms(K: int, n_boot: int, n_outer: int, n_inner: int, reps: int) -> tuple[float, float]:
    """CPU ms per interval on one audit at a time with its own resamples: (calibrated, cfbench's)."""
    rng = np.random.default_rng(900 + K)
    num, den, _, vr = draws("pyes_heavy_tail", rng, reps, K)
    c0 = time.process_time()
    for i in range(reps):
        w = resample_counts(K, n_boot, rng)
        calibrated_bounds(num[i:i + 1], den[i:i + 1], vr, w, inner_counts(w[:n_outer], n_inner, rng),
                          n_outer, AIMS)
    c1 = time.process_time()
    for i in range(reps):
        ours(num[i:i + 1], den[i:i + 1], vr, n_boot, rng)
    c2 = time.process_time()
    return 1000 * (c1 - c0) / reps, 1000 * (c2 - c1) / reps


def _cell(r: dict) -> str:
    return (f"{100 * r['coverage']:.1f} ({100 * r['miss_low']:.1f} / {100 * r['miss_high']:.1f}) "
            f"x{r['width_ratio']:.2f} {r['meets']}")


def run(a) -> list[str]:
    t0, c0 = time.time(), time.process_time()
    families = a.only or list(FAMILIES)
    cal = {(name, K): calibrate(name, K, a.calib) for name in FAMILIES for K in NS}  # every family: envelope
    hook = ExtraRows(a.outer, a.inner)
    table = ["| family | n | " + " | ".join(SHORT[m] for m in SHOWN) + " |", "|---|---|" + "---|" * len(SHOWN)]
    why = [RESCUE, "", "| family | n | side | plain misses there % | of those, calibrated still misses % | "
           "calibrated / plain width where plain missed / covered |", "|---|---|---|---|---|---|"]
    for name in families:
        for K in NS:
            rows = cell_rows(name, K, a.audits, a.n_boot, cal[name, K][0], envelope(cal, K), extra=hook)
            table.append(f"| {name} | {K} | " + " | ".join(_cell(rows[m]) for m in SHOWN) + " |")
            print(table[-1], flush=True)
            why.append(f"| {name} | {K} | {rescue(hook.last, draws(name, np.random.default_rng(0), 1, K)[2])} |")
    wall, cpu = time.time() - t0, time.process_time() - c0
    costs = {K: cost_ms(K, a.n_boot, a.outer, a.inner, a.cost) for K in NS}
    se = 100 * np.sqrt(0.035 * 0.965 / a.audits)
    cmd = (f"python benchmarks/bench_calibrated_boot.py --audits {a.audits} --calib {a.calib} --n-boot {a.n_boot} "
           f"--outer {a.outer} --inner {a.inner} --cost {a.cost}")
    head = (f"Measured with `{cmd}` on {machine()}: {a.audits} audits per cell (seed 1000 + n, those of "
            f"`bench_width_floor.py`), {a.n_boot} resamples (the calibrated rows: the first {a.outer} of them "
            f"with {a.inner} inner resamples each), oracle from {a.calib} calibration audits; SE of a 3.5 % miss "
            f"{se:.2f} points; a miss counts as met below 3.5 % + 2 SE. Each cell: coverage % (miss of lower / "
            "upper bound %) x mean width / sampling spread, targets met (`yes*`: n = 8, no width target).")
    cost = ("CPU per interval, one audit at a time with its own resamples (pyes_heavy_tail, "
            f"{a.cost} audits): " + "; ".join(f"n = {K}: calibrated {c:.0f} ms, cfbench's {o:.1f} ms"
                                               for K, (c, o) in costs.items()) + ".")
    foot = f"Run time: {wall:.0f} s wall, {cpu:.0f} s CPU (without the cost timing)."
    return [head, "", *[t.replace("yes (no width target)", "yes*") for t in table], "", *why, "", cost, "", foot]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=2000, help="evaluation audits per family and n")
    ap.add_argument("--calib", type=int, default=20_000, help="calibration audits of the oracle per family and n")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--outer", type=int, default=200, help="outer resamples that get inner resamples")
    ap.add_argument("--inner", type=int, default=100, help="inner resamples per outer resample")
    ap.add_argument("--cost", type=int, default=20, help="single audits timed per n")
    ap.add_argument("--only", choices=sorted(FAMILIES), action="append", help="run this family only (repeatable)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 200 audits, 2000 calibration, 200 resamples, "
                    "50 x 50 calibrated")
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.audits, a.calib, a.n_boot, a.outer, a.inner, a.cost = 200, 2000, 200, 50, 50, 3
    lines = run(a)
    print("\n".join(lines[lines.index(RESCUE):]))
    publish(lines, START, END, write_docs=a.write_docs,
            partial="--quick, no --only" if a.quick or a.only else None)


if __name__ == "__main__":
    main()
