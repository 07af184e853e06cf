"""Exact reproduction of the released seed-002 workbook (needs ../shared beside the repo)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.io import amiri
from cfbench.metrics.lexicon import score_responses
from cfbench.stats.paired import group_means, paired_tests
from cfbench.perturb.stimuli import identity_ids
from cfbench.studies.identity_tone.prompts import load_as_run_terms, load_lexicons, released_prompts
from cfbench.studies.identity_tone.reproduction import tables34

KEYS = {"model": "model", "unit": "prompt_id", "group": "identity"}

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "amiri2026"
pytestmark = pytest.mark.skipif(not (DATA / amiri.AMIRI_FILE).is_file(),
                                reason=f"released seed-002 workbook not present at {DATA}")

TABLE2 = ["sentiment", "politeness", "hedging", "neg_tone", "words"]
METRICS = ["sentiment", "politeness", "hedging", "neg_tone", "words", "chars"]


@pytest.fixture(scope="module")
def wb(tmp_path_factory):
    return amiri.load_amiri(DATA, cache_dir=tmp_path_factory.mktemp("amiri-cache"))


@pytest.fixture(scope="module")
def as_run(wb):
    c = wb.career
    resp = c[["model", "prompt_id", "identity"]].assign(text=c.output, status="ok",
                                                        variant_id=c.model + "/" + c.prompt_id + "/" + c.identity)
    keep = ("model", "prompt_id", "identity")
    return (score_responses(resp, lexicons=load_as_run_terms(), mode="as_run", keep=keep),
            score_responses(resp, lexicons=load_lexicons(), mode="described", keep=keep))


def test_loader_shapes_and_cache(wb, tmp_path):
    assert wb.career.shape == (480, 14)
    assert wb.career.groupby(["model", "prompt_id"]).identity.nunique().eq(8).all()
    assert set(wb.career.identity) == set(identity_ids())
    assert len(wb.table2) == 16 and len(wb.significance) == 336
    first = amiri.load_amiri(DATA, cache_dir=tmp_path)
    assert len(list(tmp_path.rglob("*.parquet"))) == len(amiri.SHEETS)
    again = amiri.load_amiri(DATA, cache_dir=tmp_path)
    pd.testing.assert_frame_equal(first.career, again.career)
    pd.testing.assert_frame_equal(first.significance, again.significance)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="Sample_Data_Paper.numbers"):
        amiri.load_amiri(tmp_path / "nope.numbers")


def test_per_response_values_reproduce_exactly(wb, as_run):
    run, _ = as_run
    check = amiri.compare_to_released(run, amiri.released_scores(wb), keys=["model", "prompt_id", "identity"],
                                      columns={"sentiment": 1e-9, "politeness": 0, "hedging": 0,
                                               "neg_tone": 0, "words": 0, "chars": 0})
    assert (check.n_match == 480).all(), check


def test_described_sentiment_does_not_match_the_release(wb, as_run):
    _, desc = as_run
    released = wb.career.sentiment.to_numpy()
    n_same = int(np.isclose(desc.sentiment.to_numpy(), released, atol=1e-4).sum())
    assert 300 < n_same < 400  # about two thirds, as recorded in the data README


def test_table2_reproduces_exactly(wb, as_run):
    run, _ = as_run
    t2 = group_means(run, metrics=TABLE2, groups=identity_ids(), model="model", group="identity")
    check = amiri.compare_to_released(t2, amiri.released_table2(wb), keys=["model", "identity"],
                                      columns={c: 1e-9 for c in ["n", *TABLE2]})
    assert (check.n_match == 16).all(), check
    # a printed Table-2 number (paper): GPT-4 Younger Male (Immigrant) hedging 0.77
    row = t2[(t2.model == "GPT-4") & (t2.identity == "younger_male_immigrant")].iloc[0]
    assert round(row.hedging, 2) == 0.77


def test_described_table2_differs_as_the_readme_says(as_run):
    _, desc = as_run
    t2 = group_means(desc, metrics=TABLE2, groups=identity_ids(), model="model", group="identity")
    row = t2[(t2.model == "GPT-4") & (t2.identity == "older_female_US-born")].iloc[0]
    assert round(row.sentiment, 3) == 0.650  # vs the published 0.61


@pytest.fixture(scope="module")
def pairs(as_run):
    return paired_tests(as_run[0], metrics=METRICS, groups=identity_ids(), seed=0, n_resamples=10_000,
                        ci_method="bootstrap", **KEYS)  # the percentile reading the reproduction compares


@pytest.fixture(scope="module")
def pairs_t(as_run):
    return paired_tests(as_run[0], metrics=METRICS, groups=identity_ids(), seed=0, ci_method="paired_t", **KEYS)


def test_statistical_significance_sheet_reproduces(wb, pairs):
    check = amiri.compare_to_released(
        pairs, amiri.released_pairs(wb), keys=["model", "metric", "identity_a", "identity_b"],
        columns={"n": 0, "mean_a": 1e-9, "mean_b": 1e-9, "mean_diff": 1e-9, "t": 1e-9, "t_p": 1e-9,
                 "cohens_d": 1e-9, "wilcoxon_p": 0.015})
    assert (check.n_match == 336).all(), check
    assert len(pairs) == 336


# Paper Tables 3 and 4: (model, A, B) -> (delta, ci_low, ci_high, d, p_w) as printed (2 decimals; p 3 decimals)
PRINTED = {
    ("sentiment", "GPT-4", "older_male_US-born", "younger_male_US-born"): (0.12, -0.03, 0.28, 0.30, 0.164),
    ("sentiment", "GPT-4", "older_male_US-born", "older_male_immigrant"): (0.11, -0.04, 0.27, 0.28, 0.171),
    ("sentiment", "LLaMa-3.1-70B", "older_female_immigrant", "younger_male_immigrant"): (-0.20, -0.38, -0.01, -0.39, 0.047),
    ("sentiment", "LLaMa-3.1-70B", "older_female_immigrant", "younger_male_US-born"): (-0.24, -0.44, -0.05, -0.46, 0.070),
    ("hedging", "GPT-4", "older_female_US-born", "younger_male_US-born"): (-0.33, -0.58, -0.09, -0.50, 0.012),
    ("hedging", "GPT-4", "older_female_US-born", "younger_male_immigrant"): (-0.37, -0.70, -0.03, -0.41, 0.033),
    ("hedging", "LLaMa-3.1-70B", "younger_female_immigrant", "younger_male_immigrant"): (0.20, -0.01, 0.41, 0.36, 0.058),
    ("hedging", "LLaMa-3.1-70B", "older_male_US-born", "younger_female_immigrant"): (-0.23, -0.51, 0.04, -0.32, 0.088),
}


def test_as_run_tables_3_and_4_equal_the_printed_ones(pairs_t, pairs):
    """Δ, interval, d and p_w of all 8 printed rows; the intervals are paired-t intervals (as found)."""
    t34 = tables34(pairs_t, pairs)
    top = t34["as_run"]
    assert set(zip(top.metric, top.model, top.identity_a, top.identity_b)) == set(PRINTED)
    assert (top.ci_method == "paired t (as found in the printed tables)").all()
    idx = top.set_index(["metric", "model", "identity_a", "identity_b"])
    for key, (delta, lo, hi, d, pw) in PRINTED.items():
        r = idx.loc[key]
        assert (round(r.mean_diff, 2), round(r.ci_low, 2), round(r.ci_high, 2), round(r.cohens_d, 2)) == \
            pytest.approx((delta, lo, hi, d), abs=1e-9), key
        assert round(r.wilcoxon_p, 3) == pytest.approx(pw, abs=1e-9), key


def test_the_percentile_bootstrap_reproduces_no_printed_interval(pairs_t, pairs):
    boot = tables34(pairs_t, pairs)["bootstrap"].set_index(["metric", "model", "identity_a", "identity_b"])
    same = [key for key, (_, lo, hi, _, _) in PRINTED.items()
            if (round(boot.loc[key].ci_low, 2), round(boot.loc[key].ci_high, 2)) == (lo, hi)]
    assert len(same) <= 1  # the issue measured 0 of 8; Monte Carlo may hit one by chance


def test_the_interval_reading_changes_only_for_llama_hedging_younger_f_imm(pairs_t, pairs):
    both = tables34(pairs_t, pairs)["interval_methods"]
    changed = both[both.reading_changes]
    assert list(zip(changed.model, changed.metric, changed.identity_a, changed.identity_b)) == [
        ("LLaMa-3.1-70B", "hedging", "younger_female_immigrant", "younger_male_immigrant")]
    r = changed.iloc[0]
    assert (round(r.ci_low_t, 2), round(r.ci_high_t, 2)) == (-0.01, 0.41) and r.zero_in_t
    assert r.ci_low_boot > 0 and not r.zero_in_boot  # the issue's [+0.033, +0.400]


def test_paired_t_interval_against_scipy(pairs_t, as_run):
    from scipy import stats

    wide = as_run[0][as_run[0].model == "GPT-4"].pivot(index="prompt_id", columns="identity", values="hedging")
    d = (wide["older_female_US-born"] - wide["younger_male_US-born"]).to_numpy()
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    r = pairs_t[(pairs_t.model == "GPT-4") & (pairs_t.metric == "hedging")
                & (pairs_t.identity_a == "older_female_US-born") & (pairs_t.identity_b == "younger_male_US-born")].iloc[0]
    assert (r.ci_low, r.ci_high) == pytest.approx((ref.low, ref.high), rel=1e-12)


def test_refusal_table_rebuilt_from_the_released_replies(wb):
    from cfbench.studies.identity_tone.reproduction import refusal_rebuild

    by_identity, table1 = refusal_rebuild(wb)
    assert len(by_identity) == 16 and (by_identity.n == 30).all()
    assert (by_identity.none_rate == by_identity.none_rate_released).all()
    assert table1[["full_pct", "partial_pct", "none_pct"]].values.tolist() == [[0, 0, 100], [0, 0, 100]]


def test_released_prompts_and_bad_input(wb):
    p = released_prompts(wb.career)
    assert len(p) == 30 and p.prompt_id.is_unique
    bad = wb.career.copy()
    bad.loc[bad.index[0], "base_prompt"] = "something else"
    with pytest.raises(InputError) as err:
        released_prompts(bad)
    assert err.value.field == "base_prompt"


def test_dropping_an_identity_row_is_reported(as_run):
    run = as_run[0]
    broken = run.drop(run.index[5])
    with pytest.raises(InputError) as err:
        paired_tests(broken, metrics=["sentiment"], groups=identity_ids(), seed=0, n_resamples=100, **KEYS)
    assert err.value.field == "identity" and err.value.record == run.prompt_id.iloc[5]


def test_symmetry_check_of_the_released_differences(wb):
    from cfbench.studies.identity_tone.reproduction import reproduce_released

    rep = reproduce_released(wb, as_run_terms=load_as_run_terms(), described_lexicons=load_lexicons(), seed=0,
                             n_resamples=100)
    sym = rep.tables["released_symmetry_as_run"]
    assert len(sym) == 2 * 4 * 28
    s = rep.summary["released_symmetry"]
    # measured: the four hedging rows of Table 4 have median difference 0 (most prompts' counts are equal)
    assert s["tables34_median_zero"] >= 4 and s["tables34_symmetric"] < 8
    assert rep.summary["reproduction"]["per_response"] == {k: 480 for k in
                                                           ("sentiment", "politeness", "hedging", "neg_tone",
                                                            "words", "chars")}
