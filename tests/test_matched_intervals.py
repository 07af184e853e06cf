"""Matched-pair intervals (cfbench.stats.matched) against independent computations and published values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import multinomial, norm

from cfbench.core.errors import InputError
from cfbench.stats.matched import (EXACT_MAX_PAIRS, exact_interval, matched_counts_pmf, matched_difference,
                                   min_pairs_to_pass, newcombe_paired_interval, tango_interval, zero_position)

Z = norm.ppf(0.975)


def _score_z_slow(delta: float, b: int, c: int, n: int, shift: float = 0.0) -> float:
    """Tango's statistic with the restricted MLE found numerically (no closed form): maximise the trinomial
    log-likelihood of (p10, p01) = (q + delta, q) over the feasible q; the numerator moved ``shift`` towards 0."""
    lo_q, hi_q = max(0.0, -delta), (1 - delta) / 2

    def negll(q):
        p10, p01, pc = q + delta, q, 1 - 2 * q - delta
        out = 0.0
        for k, p in ((b, p10), (c, p01), (n - b - c, pc)):
            if k:
                out -= k * math.log(max(p, 1e-300))
        return out

    q = minimize_scalar(negll, bounds=(lo_q, hi_q), method="bounded", options={"xatol": 1e-13}).x
    var = n * (2 * q + delta * (1 - delta))
    num = b - c - n * delta
    return math.copysign(max(abs(num) - shift, 0.0), num) / math.sqrt(var)


@pytest.mark.parametrize("b,c,n", [(5, 1, 27), (2, 5, 17), (3, 0, 10), (0, 4, 6), (12, 7, 44), (6, 16, 161),
                                   (1, 1, 20), (9, 0, 9)])
@pytest.mark.parametrize("correction", [0.0, 0.5])
def test_tango_bounds_solve_the_score_equation_with_a_numerical_mle(b, c, n, correction):
    """Plain Tango (``correction=0``) and the default: the bound between 0 and the estimate (the lower one
    when b > c, the upper one when c > b) solves the statistic with its numerator moved half a pair to 0."""
    lo, hi = (float(x) for x in tango_interval(b, c, n, correction=correction))
    est = (b - c) / n
    inner = min(max(est, -1 + 1e-9), 1 - 1e-9)
    s_lo, s_hi = (correction if b > c else 0.0), (correction if c > b else 0.0)
    want_lo = -1.0 if c == n else brentq(lambda d: _score_z_slow(d, b, c, n, s_lo) - Z, -1 + 1e-9, inner)
    want_hi = 1.0 if b == n else brentq(lambda d: _score_z_slow(d, b, c, n, s_hi) + Z, inner, 1 - 1e-9)
    assert lo == pytest.approx(want_lo, abs=2e-6) and hi == pytest.approx(want_hi, abs=2e-6)
    assert lo <= est <= hi


def test_the_correction_moves_only_the_bound_between_0_and_the_estimate():
    """5 of 27 one way, 1 the other: the lower bound moves towards 0 (wider), the upper stays; mirrored for
    the mirrored counts; equal counts (and none) give plain Tango's interval."""
    plain, default = tango_interval(5, 1, 27, correction=0), tango_interval(5, 1, 27)
    assert float(default[0]) < float(plain[0]) - 0.01 and float(default[1]) == pytest.approx(float(plain[1]))
    mirror = tango_interval(1, 5, 27)
    assert float(mirror[1]) == pytest.approx(-float(default[0])) and float(mirror[0]) == pytest.approx(
        -float(default[1]))
    for b in (0, 3):
        assert np.allclose(tango_interval(b, b, 20), tango_interval(b, b, 20, correction=0))
    with pytest.raises(InputError, match="correction"):
        tango_interval(1, 0, 5, correction=-0.5)


def test_zero_discordant_pairs_never_give_a_point():
    """No discordant pair: [−z²/(n+z²), +z²/(n+z²)] at every n — the [0, 0] of a percentile bootstrap is a bug."""
    n = np.arange(1, 301)
    lo, hi = tango_interval(np.zeros_like(n), np.zeros_like(n), n)
    want = Z ** 2 / (n + Z ** 2)
    assert np.allclose(hi, want, atol=1e-9) and np.allclose(lo, -want, atol=1e-9)
    assert (hi - lo > 0.02).all()
    a, b = newcombe_paired_interval(n // 2, 0, 0, n - n // 2)
    assert (b - a > 0).all()


def test_all_pairs_discordant_one_way_reach_the_edge():
    lo, hi = tango_interval(6, 0, 6)
    assert float(hi) == 1.0 and 0 < float(lo) < 1
    lo, hi = tango_interval(0, 6, 6)
    assert float(lo) == -1.0 and -1 < float(hi) < 0


def test_newcombe_paired_matches_the_published_example():
    """Fagerland, Lydersen & Laake's paired 2x2 example (Cavo et al. 2012, [[59, 6], [16, 80]]): Newcombe's
    square-and-add (method 10) gives −0.0621 (95% CI −0.1186 to −0.0046)."""
    lo, hi = newcombe_paired_interval(59, 6, 16, 80)
    assert (round(float(lo), 4), round(float(hi), 4)) == (-0.1186, -0.0046)


def test_vectorised_equals_one_at_a_time():
    rng = np.random.default_rng(5)
    b = rng.integers(0, 10, 40)
    c = rng.integers(0, 10, 40)
    n = b + c + rng.integers(0, 30, 40) + 1
    lo, hi = tango_interval(b, c, n)
    for i in range(0, 40, 7):
        one = tango_interval(int(b[i]), int(c[i]), int(n[i]))
        assert (float(one[0]), float(one[1])) == (pytest.approx(lo[i]), pytest.approx(hi[i]))


def test_matched_difference_counts_and_mcnemar():
    a = [True] * 5 + [False] * 1 + [True] * 21
    b = [False] * 5 + [True] * 1 + [True] * 21
    d = matched_difference(a, b)
    assert (d.n_pairs, d.a_only, d.b_only) == (27, 5, 1)
    assert d.estimate == pytest.approx(4 / 27) and d.mcnemar_p == pytest.approx(0.21875)
    assert d.ci_low < 0 < d.ci_high and d.zero == "inside"
    empty = matched_difference([], [])
    assert empty.n_pairs == 0 and math.isnan(empty.estimate) and empty.zero == "undefined"
    with pytest.raises(InputError):
        matched_difference([True], [True, False])
    with pytest.raises(InputError):
        matched_difference([True], [False], method="wald")


def test_zero_on_the_boundary_is_named():
    assert zero_position(0.0, 0.32) == "touches 0 (boundary)"
    assert zero_position(-0.5, 0.0) == "touches 0 (boundary)"
    assert zero_position(-0.1, 0.2) == "inside" and zero_position(0.01, 0.2) == "outside"


def test_min_pairs_to_pass_is_exact():
    """At the returned n a zero gap passes ±0.10; one pair fewer, no outcome at all passes."""
    need = min_pairs_to_pass(0.10)
    assert need == math.ceil(Z ** 2 * 0.9 / 0.1) == 35
    for n, any_pass in ((need - 1, False), (need, True)):
        b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        keep = b + c <= n
        lo, hi = tango_interval(b[keep], c[keep], n)
        assert bool(((lo >= -0.1) & (hi <= 0.1)).any()) is any_pass
    assert min_pairs_to_pass(0.05) > need > min_pairs_to_pass(0.2)


def test_trinomial_pmf_matches_scipy():
    b, c, p = matched_counts_pmf(12, 0.15, 0.05)
    assert p.sum() == pytest.approx(1.0)
    ref = multinomial(12, [0.15, 0.05, 0.80])
    for i in (0, 5, 17, 40):
        assert p[i] == pytest.approx(ref.pmf([b[i], c[i], 12 - b[i] - c[i]]))
    b, c, p = matched_counts_pmf(10, 0.0, 0.0)  # no discordance: all mass on (0, 0)
    assert p[(b == 0) & (c == 0)].item() == pytest.approx(1.0) and p.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("n", [8, 20])
def test_exact_interval_misses_at_most_alpha_half_on_each_side(n):
    """Summed exactly over every table of ``n`` pairs at every pair of cell rates on a 0.01 grid (ends included):
    neither bound misses on its side in more than 2.5 % of audits. The worst comes within 0.5 points of 2.5 %, so
    the check can fail (a nuisance grid that missed the maximum, or a wrong tail, would show here)."""
    b, c, _ = matched_counts_pmf(n, 0.1, 0.1)
    low, high = exact_interval(b, c, n)
    assert np.isfinite(low).all() and np.isfinite(high).all() and (low <= high).all()
    worst_low = worst_high = 0.0
    for p10 in np.linspace(0.0, 1.0, 101):
        for p01 in np.linspace(0.0, 1.0 - p10, max(1, int(round((1.0 - p10) / 0.01))) + 1):
            _, _, pmf = matched_counts_pmf(n, float(p10), float(min(p01, 1.0 - p10)))
            d = p10 - p01
            worst_low = max(worst_low, pmf[low > d + 1e-9].sum())
            worst_high = max(worst_high, pmf[high < d - 1e-9].sum())
    assert 0.02 < worst_low <= 0.025 + 1e-9 and 0.02 < worst_high <= 0.025 + 1e-9


def test_exact_interval_is_symmetric_keeps_the_estimate_and_is_wider_where_tango_misses():
    b, c, _ = matched_counts_pmf(8, 0.1, 0.1)
    low, high = exact_interval(b, c, 8)
    est = (b - c) / 8
    assert ((low <= est + 1e-9) & (est - 1e-9 <= high)).all()
    mirror_low, mirror_high = exact_interval(c, b, 8)
    assert np.allclose(low, -mirror_high) and np.allclose(high, -mirror_low)
    # no discordant item in 0 of 8 while the truth is -0.6 (p01 = 0.6): corrected Tango's far bound misses there
    t_low, _ = tango_interval(0, 2, 8)
    e_low, _ = exact_interval(0, 2, 8)
    assert e_low < t_low


def test_exact_interval_through_matched_difference_and_min_pairs():
    a = np.array([1, 0, 0, 1, 1] * 6, bool)
    b = np.array([1, 0, 0, 0, 1] * 6, bool)
    d = matched_difference(a, b, method="exact")
    lo, hi = exact_interval(6, 0, 30)
    assert (d.method, d.a_only, d.b_only, d.ci_low, d.ci_high) == ("exact", 6, 0, float(lo), float(hi))
    n = min_pairs_to_pass(0.20, method="exact")
    assert exact_interval(0, 0, n)[1] <= 0.20 < exact_interval(0, 0, n - 1)[1]
    assert n > min_pairs_to_pass(0.20)            # 18 against Tango's 16 (at 0.10: 36 against 35, bench_tango_exact)


def test_exact_interval_refuses_what_it_cannot_compute(monkeypatch):
    with pytest.raises(InputError, match=f"at most {EXACT_MAX_PAIRS} pairs") as info:
        exact_interval(0, 0, EXACT_MAX_PAIRS + 1)
    assert info.value.field == "n"
    with pytest.raises(InputError, match="whole pair counts"):
        exact_interval(0.5, 0, 10)
    with pytest.raises(InputError, match="0 <= n10"):
        exact_interval(5, 6, 10)
    import cfbench.stats.matched as matched

    monkeypatch.setattr(matched, "EXACT_MAX_PAIRS", 16)   # the search stops at the cap (200 would take 25 s here)
    with pytest.raises(InputError, match="at most 16 pairs, use method 'tango'") as info:
        matched.min_pairs_to_pass(0.10, method="exact")
    assert info.value.field == "limit"


def test_min_pairs_to_pass_refuses_a_method_it_does_not_know():
    """An unknown name is an error naming the field, never another method's answer (it read Newcombe's 18)."""
    with pytest.raises(InputError, match="must be one of") as info:
        min_pairs_to_pass(0.10, method="tangoo")
    assert info.value.field == "method"
