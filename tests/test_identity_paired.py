"""Paired statistics checked against independent computations and published numbers."""

import itertools
import math

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import optimize, stats

from cfbench.core.errors import InputError
from cfbench.stats.paired import (PAIR_COLUMNS, adjust_pvalues, cohens_dz, group_means, largest_gaps,
                                    min_detectable_d, paired_matrix, paired_tests, wilcoxon_method)

GROUPS = ["g1", "g2", "g3"]
KEYS = {"model": "model", "unit": "prompt_id", "group": "identity"}


def _scores(n=12, seed=0, shift=(0.0, 0.3, -0.2)):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    rows = []
    for g, s in zip(GROUPS, shift):
        noise = rng.normal(scale=0.5, size=n)
        for i in range(n):
            rows.append({"model": "m", "prompt_id": f"p{i:02d}", "identity": g, "x": base[i] + s + noise[i]})
    return pd.DataFrame(rows)


def test_columns_and_pairs():
    res = paired_tests(_scores(), metrics=["x"], groups=GROUPS, seed=0, n_resamples=2000, **KEYS)
    assert list(res.columns) == PAIR_COLUMNS
    assert list(zip(res.identity_a, res.identity_b)) == list(itertools.combinations(GROUPS, 2))


def test_t_and_effect_size_against_pingouin_and_formula():
    sc = _scores()
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=2000, **KEYS)
    wide = sc.pivot(index="prompt_id", columns="identity", values="x")
    for _, r in res.iterrows():
        a, b = wide[r.identity_a].to_numpy(), wide[r.identity_b].to_numpy()
        ref = pg.ttest(a, b, paired=True)
        assert r.t == pytest.approx(ref["T"].iloc[0], rel=1e-10)
        assert r.t_p == pytest.approx(ref["p_val"].iloc[0] if "p_val" in ref else ref["p-val"].iloc[0], rel=1e-8)
        d = a - b
        assert r.cohens_d == pytest.approx(d.mean() / math.sqrt(((d - d.mean()) ** 2).sum() / (len(d) - 1)))
        # pingouin's paired "cohen" uses the pooled SD of the two samples: a different quantity
        pg_d = pg.compute_effsize(a, b, paired=True, eftype="cohen")
        assert not np.isclose(pg_d, r.cohens_d)


def _exact_wilcoxon_p(d):
    """Two-sided exact signed-rank p by enumerating all 2^n sign patterns (no ties, no zeros)."""
    ranks = stats.rankdata(np.abs(d))
    w_plus = ranks[d > 0].sum()
    n = len(d)
    total = n * (n + 1) / 2
    dist = np.array([sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=n)])
    lo = min(w_plus, total - w_plus)
    return min(1.0, 2 * np.mean(dist <= lo + 1e-9)), lo


def test_wilcoxon_exact_against_enumeration():
    sc = _scores(n=11, seed=4)
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=1000, **KEYS)
    wide = sc.pivot(index="prompt_id", columns="identity", values="x")
    for _, r in res.iterrows():
        d = (wide[r.identity_a] - wide[r.identity_b]).to_numpy()
        p, w = _exact_wilcoxon_p(d)
        assert r.wilcoxon_method == "exact"
        assert r.wilcoxon_stat == pytest.approx(w)
        assert r.wilcoxon_p == pytest.approx(p, rel=1e-9)


def test_wilcoxon_zero_handling_is_recorded():
    d = np.array([0.0, 0.0, 1.0, -2.0, 3.0, 1.0] + list(range(4, 24)), dtype=float)
    assert wilcoxon_method(d) == "asymptotic"          # zeros/ties, n > 13
    assert wilcoxon_method(np.array([1.0, -2.0, 3.0])) == "exact"
    assert wilcoxon_method(np.array([1.0, -1.0, 3.0])) == "permutation"  # tie, n <= 13
    rows = []
    for i, v in enumerate(d):
        rows += [{"model": "m", "prompt_id": i, "identity": "g1", "x": v}, {"model": "m", "prompt_id": i, "identity": "g2", "x": 0.0}]
    res = paired_tests(pd.DataFrame(rows), metrics=["x"], groups=["g1", "g2"], seed=0, n_resamples=500, **KEYS).iloc[0]
    assert res.n_zero_diff == 2 and res.wilcoxon_method == "asymptotic"
    # zero_method="wilcox": zeros dropped, normal approximation with tie correction, no continuity correction
    nz = d[d != 0]
    r = stats.rankdata(np.abs(nz))
    w_plus = r[nz > 0].sum()
    n = len(nz)
    _, counts = np.unique(np.abs(nz), return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - (counts ** 3 - counts).sum() / 48
    z = (w_plus - n * (n + 1) / 4) / math.sqrt(var)
    assert res.wilcoxon_p == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-9)


def test_all_zero_differences_are_undefined_not_dropped():
    rows = [{"model": "m", "prompt_id": i, "identity": g, "x": 1.0} for i in range(5) for g in ("g1", "g2")]
    res = paired_tests(pd.DataFrame(rows), metrics=["x"], groups=["g1", "g2"], seed=0, n_resamples=200, **KEYS).iloc[0]
    assert res.n == 5 and res.mean_diff == 0
    assert math.isnan(res.wilcoxon_p) and res.wilcoxon_method.startswith("undefined")


def test_bootstrap_ci_against_a_plain_numpy_bootstrap():
    sc = _scores(n=25, seed=1)
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=7, n_resamples=10_000, ci_method="bootstrap", **KEYS)
    wide = sc.pivot(index="prompt_id", columns="identity", values="x")
    rng = np.random.default_rng(123)
    for _, r in res.iterrows():
        d = (wide[r.identity_a] - wide[r.identity_b]).to_numpy()
        idx = rng.integers(0, len(d), size=(20_000, len(d)))
        lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
        width = hi - lo
        assert r.ci_low == pytest.approx(lo, abs=0.05 * width)
        assert r.ci_high == pytest.approx(hi, abs=0.05 * width)
        assert r.ci_low <= r.mean_diff <= r.ci_high


def test_bootstrap_is_seeded_and_independent_of_other_metrics():
    sc = _scores().assign(y=lambda f: f.x ** 2)
    a = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=3, n_resamples=1000, **KEYS)
    b = paired_tests(sc, metrics=["y", "x"], groups=GROUPS, seed=3, n_resamples=1000, **KEYS)
    c = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=4, n_resamples=1000, **KEYS)
    bx = b[b.metric == "x"].reset_index(drop=True)
    assert np.array_equal(a.ci_low, bx.ci_low) and np.array_equal(a.ci_high, bx.ci_high)
    assert not np.array_equal(a.ci_low, c.ci_low)


def test_holm_and_bh_against_hand_computation():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted .005,.01,.03,.04 -> 4*.005, 3*.01, 2*.03, 1*.04 -> running max .02,.03,.06,.06
    assert adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: p*m/rank = .02,.02,.04,.04 (running min from the top)
    assert adjust_pvalues(p, "fdr_bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    out = adjust_pvalues([0.01, np.nan, 0.02], "holm")
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)


def test_min_detectable_d_against_noncentral_t_and_published_value():
    def power(d, n, alpha=0.05):
        df = n - 1
        crit = stats.t.ppf(1 - alpha / 2, df)
        nc = d * math.sqrt(n)
        return stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)

    for n in (6, 30, 100):
        ref = optimize.brentq(lambda d: power(d, n) - 0.8, 0.01, 6 / math.sqrt(n))
        assert min_detectable_d(n) == pytest.approx(ref, rel=1e-4)
    # Cohen (1988) / G*Power: n = 30 pairs, alpha .05 two-sided, power .8 -> d_z ~ 0.53
    assert round(min_detectable_d(30), 2) == 0.53
    assert math.isnan(min_detectable_d(1))


def test_cohens_dz_formula():
    assert float(cohens_dz(np.array([1.0, 2.0, 3.0, 6.0]))) == pytest.approx(3 / np.std([1, 2, 3, 6], ddof=1))


def test_missing_identity_for_a_prompt_raises():
    sc = _scores()
    sc = sc[~((sc.prompt_id == "p03") & (sc.identity == "g2"))]
    with pytest.raises(InputError) as err:
        paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=100, **KEYS)
    assert err.value.record == "p03" and err.value.field == "identity"


def test_duplicate_and_unknown_identity_raise():
    sc = _scores()
    with pytest.raises(InputError, match="duplicate"):
        paired_matrix(pd.concat([sc, sc.iloc[:1]]), metric="x", groups=GROUPS, unit="prompt_id", group="identity")
    with pytest.raises(InputError, match="unknown"):
        paired_matrix(sc.replace({"identity": {"g3": "g9"}}), metric="x", groups=GROUPS, unit="prompt_id", group="identity")


def test_missing_score_raises_or_drops_the_prompt_from_its_pairs():
    sc = _scores()
    sc.loc[(sc.prompt_id == "p05") & (sc.identity == "g1"), "x"] = np.nan
    with pytest.raises(InputError) as err:
        paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=100, **KEYS)
    assert err.value.record == "p05" and err.value.field == "x"
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=500, on_missing="drop_unit", **KEYS)
    assert res.set_index(["identity_a", "identity_b"])["n"].to_dict() == {
        ("g1", "g2"): 11, ("g1", "g3"): 11, ("g2", "g3"): 12}


def test_group_means_and_largest_gaps():
    sc = _scores()
    t = group_means(sc, metrics=["x"], groups=GROUPS, model="model", group="identity")
    assert t.x.tolist() == pytest.approx([sc[sc.identity == g].x.mean() for g in GROUPS])
    assert (t.n == 12).all()
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=200, **KEYS)
    top = largest_gaps(res, model="model", k=1, by="abs_d")
    assert len(top) == 1 and abs(top.cohens_d.iloc[0]) == res.cohens_d.abs().max()


def test_column_names_are_parameters_without_defaults():
    sc = _scores().rename(columns={"model": "judge", "prompt_id": "item", "identity": "persona"})
    with pytest.raises(TypeError):
        paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0)  # no study defaults
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, n_resamples=200, model="judge", unit="item",
                       group="persona")
    assert list(res.columns[:4]) == ["judge", "metric", "persona_a", "persona_b"]
    ref = paired_tests(_scores(), metrics=["x"], groups=GROUPS, seed=0, n_resamples=200, **KEYS)
    assert res["t"].tolist() == ref["t"].tolist() and res["ci_low"].tolist() == ref["ci_low"].tolist()


def test_paired_t_interval_equals_scipy_one_sample_interval():
    sc = _scores(n=9, seed=2)
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, ci_method="paired_t", **KEYS)
    wide = sc.pivot(index="prompt_id", columns="identity", values="x")
    for _, r in res.iterrows():
        d = (wide[r.identity_a] - wide[r.identity_b]).to_numpy()
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
        assert (r.ci_low, r.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert res.attrs["ci_method"] == "paired t over units"
    with pytest.raises(ValueError):
        paired_tests(sc, metrics=["x"], groups=GROUPS, seed=0, ci_method="bca", **KEYS)


def test_length_adjusted_difference_against_statsmodels_ols():
    import statsmodels.api as sm

    from cfbench.stats.paired import length_adjusted_tests

    rng = np.random.default_rng(5)
    rows = []
    for i in range(15):
        for g, shift in zip(GROUPS, (0.0, 0.4, -0.1)):
            words = 140 + rng.normal(0, 8) + 10 * shift
            rows.append({"model": "m", "prompt_id": f"p{i}", "identity": g, "words": words,
                         "x": 0.02 * words + shift + rng.normal(0, 0.3)})
    sc = pd.DataFrame(rows)
    # the OLS t interval by name (the default is the residual bootstrap-t/t union, which contains it:
    # tests/test_coverage_length_adjusted.py)
    res = length_adjusted_tests(sc, metrics=["x"], groups=GROUPS, length="words", ci_method="ols_t", **KEYS)
    wide_x = sc.pivot(index="prompt_id", columns="identity", values="x")
    wide_w = sc.pivot(index="prompt_id", columns="identity", values="words")
    for _, r in res.iterrows():
        y = (wide_x[r.identity_a] - wide_x[r.identity_b]).to_numpy()
        x = (wide_w[r.identity_a] - wide_w[r.identity_b]).to_numpy()
        fit = sm.OLS(y, sm.add_constant(x)).fit()
        lo, hi = fit.conf_int(0.05)[0]
        assert r.adj_diff == pytest.approx(fit.params[0], rel=1e-10)
        assert r.slope == pytest.approx(fit.params[1], rel=1e-10)
        assert (r.adj_ci_low, r.adj_ci_high) == pytest.approx((lo, hi), rel=1e-10)
        assert r.adj_p == pytest.approx(fit.pvalues[0], rel=1e-8)
        assert r.mean_diff == pytest.approx(y.mean())


def test_length_adjustment_is_nan_when_lengths_do_not_vary():
    from cfbench.stats.paired import length_adjusted_tests

    sc = _scores().assign(words=100.0)
    res = length_adjusted_tests(sc, metrics=["x"], groups=GROUPS, length="words", **KEYS)
    assert res.adj_diff.isna().all() and res.mean_diff.notna().all()


def test_symmetry_checks_flag_skew_and_leverage():
    from cfbench.stats.paired import symmetry_checks

    n = 20
    sym_d = np.r_[np.linspace(-1, 1, n)]
    skew_d = np.r_[np.zeros(n - 1), 10.0]   # one extreme point
    rows = []
    for i in range(n):
        rows += [{"model": "m", "prompt_id": f"p{i}", "identity": "g1", "x": sym_d[i], "y": skew_d[i]},
                 {"model": "m", "prompt_id": f"p{i}", "identity": "g2", "x": 0.0, "y": 0.0}]
    res = symmetry_checks(pd.DataFrame(rows), metrics=["x", "y"], groups=["g1", "g2"], **KEYS).set_index("metric")
    assert bool(res.loc["x", "symmetric"]) and res.loc["x", "gap_sd"] == pytest.approx(0.0, abs=1e-12)
    assert not bool(res.loc["y", "symmetric"]) and res.loc["y", "n_extreme"] == 1
    assert res.loc["y", "skewness"] == pytest.approx(stats.skew(skew_d, bias=False))


@pytest.mark.parametrize("seed", range(2))
def test_enumerated_signed_rank_equals_scipys_default_permutation_test(seed):
    import warnings

    from cfbench.stats.paired import signed_rank_permutation

    rng = np.random.default_rng(seed)
    checked = 0
    for k in range(30):
        n = 13 if k == 0 else int(rng.integers(2, 11))
        d = rng.integers(-3, 4, size=n).astype(float) * (0.25 if seed % 2 else 1.0)  # ties and zeros
        if not np.any(d != 0) or wilcoxon_method(d) != "permutation":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = stats.wilcoxon(d)
        stat, p = signed_rank_permutation(d)
        assert stat == pytest.approx(float(ref.statistic), abs=1e-12)
        assert p == pytest.approx(float(ref.pvalue), abs=1e-12)
        checked += 1
    assert checked >= 15


def test_paired_tests_use_the_enumeration_for_small_tied_samples():
    rows = [{"model": "m", "prompt_id": f"p{i}", "identity": g, "x": float(v)}
            for i, (a, b) in enumerate([(1, 0), (2, 0), (1, 1), (3, 1), (0, 1), (2, 0), (1, 0), (2, 2)])
            for g, v in (("g1", a), ("g2", b))]
    res = paired_tests(pd.DataFrame(rows), metrics=["x"], groups=["g1", "g2"], seed=0, n_resamples=100, **KEYS)
    d = np.array([1, 2, 0, 2, -1, 2, 1, 0], dtype=float)
    ref = stats.wilcoxon(d)
    assert res.wilcoxon_method.iloc[0] == "permutation"
    assert res.wilcoxon_p.iloc[0] == pytest.approx(ref.pvalue, abs=1e-12)
    assert res.wilcoxon_stat.iloc[0] == pytest.approx(ref.statistic)


def test_default_bootstrap_t_against_a_plain_loop():
    sc = _scores(n=9, seed=2)
    res = paired_tests(sc, metrics=["x"], groups=GROUPS, seed=7, n_resamples=4000, **KEYS)
    assert res.attrs["ci_method"] == "bootstrap-t and paired t over units (union)"
    wide = sc.pivot(index="prompt_id", columns="identity", values="x")
    rng = np.random.default_rng(99)
    for _, r in res.iterrows():
        d = (wide[r.identity_a] - wide[r.identity_b]).to_numpy()
        n, m, se = len(d), d.mean(), d.std(ddof=1) / math.sqrt(len(d))
        t = []
        for _ in range(8000):
            x = d[rng.integers(0, n, n)]
            s_ = x.std(ddof=1) / math.sqrt(n)
            # a resample with no spread borrows se / sqrt(n), any other is floored at se / n
            s_ = se / math.sqrt(n) if s_ <= 1e-9 * se else max(s_, se / n)
            t.append((x.mean() - m) / s_)
        c = (n / (n - 1)) ** 2  # small-sample widening of the bootstrap-t half-widths
        t_lo, t_hi = np.quantile(t, 0.025), np.quantile(t, 0.975)
        # the long side of t (the one whose 2.5 % quantile is farther from 0) at 1 %, at most 1.35x as far
        if -t_lo > t_hi:
            t_lo = max(np.quantile(t, 0.01), 1.35 * t_lo)
        else:
            t_hi = min(np.quantile(t, 0.99), 1.35 * t_hi)
        lo, hi = m - c * t_hi * se, m - c * t_lo * se
        q = stats.t.ppf(0.975, n - 1)
        lo, hi = min(lo, m - q * se), max(hi, m + q * se)
        assert r.ci_low == pytest.approx(lo, abs=0.08 * (hi - lo))
        assert r.ci_high == pytest.approx(hi, abs=0.08 * (hi - lo))


def test_all_equal_differences_get_no_point_interval():
    rows = [{"model": "m", "prompt_id": i, "identity": g, "x": 1.0} for i in range(8) for g in ("g1", "g2")]
    res = paired_tests(pd.DataFrame(rows), metrics=["x"], groups=["g1", "g2"], seed=0, n_resamples=200, **KEYS).iloc[0]
    assert res.mean_diff == 0 and math.isnan(res.ci_low) and math.isnan(res.ci_high)


def test_a_known_score_range_holds_every_method_s_bounds_and_the_row_says_so():
    """Ten prompts, one far outlier: the bootstrap-t lower bound went to -2.70 for a VADER compound, whose
    differences cannot leave [-2, 2] (a committed sentiment row). With the metric's range the bound is held at
    -2 and ``ci_method`` says so; a row that stays inside is untouched; a metric without a range is unchanged."""
    d = np.array([-1.262, -0.474, 0.004, -0.309, -0.012, 0.017, -0.023, 0.031, -0.09, -0.063])
    rows = []
    for i, x in enumerate(d):
        rows += [{"model": "m", "prompt_id": f"p{i}", "identity": "g1", "s": x / 2, "u": x / 2 + 0.4},
                 {"model": "m", "prompt_id": f"p{i}", "identity": "g2", "s": -x / 2, "u": -x / 2 + 0.4}]
    sc = pd.DataFrame(rows)
    free = paired_tests(sc, metrics=["s", "u"], groups=["g1", "g2"], seed=0, n_resamples=2000, **KEYS)
    held = paired_tests(sc, metrics=["s", "u"], groups=["g1", "g2"], seed=0, n_resamples=2000,
                        value_ranges={"s": (-1.0, 1.0)}, **KEYS)
    f, h = free.set_index("metric"), held.set_index("metric")
    assert f.loc["s", "ci_low"] < -2.0  # the pathology: a bound no mean of these differences can reach
    assert h.loc["s", "ci_low"] == -2.0 and h.loc["s", "ci_high"] == f.loc["s", "ci_high"]
    assert h.loc["s", "ci_method"].endswith("bound held at the differences' range [-2, 2]")
    assert h.loc["u"].equals(f.loc["u"])
    for method in ("paired_t", "bootstrap"):
        t = paired_tests(sc, metrics=["s"], groups=["g1", "g2"], seed=0, n_resamples=500, ci_method=method,
                         value_ranges={"s": (-1.0, 1.0)}, **KEYS).iloc[0]
        assert -2.0 <= t.ci_low <= t.mean_diff <= t.ci_high <= 2.0

