"""The design calculator: MDEs against independent computations, the cost model, the default's choice."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import yaml
from pathlib import Path

from cfbench.stats.intervals import mean_interval_t, paired_difference
from cfbench.studies.contact_center_qa.calculator import SD_PYES, cfr_mde, design_table, mean_mde
from cfbench.studies.contact_center_qa.study import Params

REPO = Path(__file__).resolve().parents[1]


def _net_lower_by_hand(k: int, n: int) -> float:
    """Lower bound of CFR minus robustness with k of n transcripts flipping (one pair each) and no repeat
    flip, from the formulas in docs/statistics.md: Clopper-Pearson lower bound of k/n (scipy beta), repeat
    side [0, 1 - 0.025^(1/n)], MOVER with correlation 0."""
    from scipy.stats import beta

    e = k / n
    lo = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    return e - math.sqrt((e - lo) ** 2 + (1 - 0.025 ** (1 / n)) ** 2)


def _power_by_hand(n, p):
    return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1) if _net_lower_by_hand(k, n) > 0)


@pytest.mark.parametrize("n", [4, 8, 9, 12, 20])
def test_cfr_mde_is_the_smallest_p_with_80_percent_power(n):
    p = cfr_mde(n, 1)
    assert _power_by_hand(n, p) >= 0.8 > _power_by_hand(n, p - 0.00025)


def _simulated_power(n, m, p, reps, seed):
    """Share of simulated rows whose cfr_minus_robustness interval, computed by the code the table uses
    (cfbench.stats.intervals.paired_difference: counterfactual pairs against 3 repeat pairs per transcript
    with no repeat flip, as at temperature 0), lies above 0."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        ev = rng.binomial(m, p, size=n).astype(float)
        d = paired_difference(ev, np.full(n, float(m)), np.zeros(n), np.full(n, 3.0), kind="rate")
        hits += d["ci_low"] > 0
    return hits / reps


@pytest.mark.parametrize("n,m", [(8, 1), (12, 1), (12, 2), (20, 3)])
def test_power_at_the_stated_cfr_mde_is_80_percent_in_a_simulation_of_the_printed_interval(n, m):
    reps = 1500
    se = math.sqrt(0.8 * 0.2 / reps)  # 1.0 point
    mde = cfr_mde(n, m)
    at = _simulated_power(n, m, mde, reps, seed=100 + n + m)
    assert 0.8 - 3 * se - 0.01 <= at <= 0.8 + 3 * se + 0.04, (n, m, mde, at)
    # and it is the *smallest* such rate: 0.05 below it the power is clearly under 80 %
    assert _simulated_power(n, m, mde - 0.05, reps, seed=200 + n + m) < 0.8 - 3 * se, (n, m, mde)


def _tango_power_by_hand(n, p):
    """One counterfactual and one repeat pair per transcript, no repeat flip: the printed interval is Tango's on
    (k flipping transcripts, 0 the other way), run through paired_difference itself for every k."""
    ok = [paired_difference(np.r_[np.ones(k), np.zeros(n - k)], np.ones(n), np.zeros(n), np.ones(n), kind="rate",
                            pairing="corrected")["ci_low"] > 0 for k in range(n + 1)]
    return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1) if ok[k])


@pytest.mark.parametrize("n", [6, 8, 20, 36])
def test_cfr_mde_of_one_repeat_pair_is_the_smallest_p_with_80_percent_power_through_tango(n):
    p = cfr_mde(n, 1, repeat_pairs=1)
    assert _tango_power_by_hand(n, p) >= 0.8 > _tango_power_by_hand(n, p - 0.00025)
    assert math.isnan(cfr_mde(4, 1, repeat_pairs=1))  # 4 of 4 flipping is not enough for Tango


def test_one_flip_is_never_enough_at_temperature_0():
    """The repeat side's bound 1 - 0.025^(1/n) keeps a single flipping transcript from counting."""
    for n in (4, 8, 20, 60):
        assert _net_lower_by_hand(1, n) < 0
    assert math.isnan(cfr_mde(1, 5)) and math.isnan(cfr_mde(5, 0))
    assert cfr_mde(4, 1) > cfr_mde(8, 1) > cfr_mde(20, 1)


@pytest.mark.parametrize("n", [4, 8, 20])
def test_power_at_the_stated_masd_mde_is_80_percent_for_the_printed_interval(n):
    """mean_interval_t (bootstrap-t and t, union) on normal per-transcript values at the stated MDE."""
    reps, sd = 800, SD_PYES
    se = math.sqrt(0.8 * 0.2 / reps)  # 1.4 points
    mde = mean_mde(n, sd=sd)
    rng = np.random.default_rng(300 + n)
    hits = 0
    for _ in range(reps):
        lo, _, _ = mean_interval_t(rng.normal(mde, sd, size=n), np.ones(n), n_boot=1000, rng=rng)
        hits += lo > 0
    assert abs(hits / reps - 0.8) <= 3 * se + 0.01, (n, mde, hits / reps)


def test_masd_mde_is_wider_than_a_t_test_and_nan_where_the_interval_is_unbounded():
    from statsmodels.stats.power import TTestPower

    t_only = TTestPower().solve_power(nobs=8, alpha=0.05, power=0.8) * SD_PYES
    assert mean_mde(8, sd=SD_PYES) > t_only
    assert math.isnan(mean_mde(2, sd=1.0)) and math.isnan(mean_mde(8, sd=0.0))
    # at 3 items a resample repeating one item has no spread; its floored SE keeps the bound finite
    # (it was unbounded while such resamples had t clipped to 1e12)
    assert math.isfinite(mean_mde(3, sd=1.0))
    assert math.isfinite(mean_mde(4, sd=1.0))


def test_sd_pyes_is_the_measured_value_the_docs_cite():
    doc = (REPO / "docs" / "contact_center_design.md").read_text()
    assert SD_PYES == 2.70 and "2.70" in doc


def test_design_table_picks_within_budget_and_the_default_follows_it():
    c = {"E": Params(judges=("local:qwen2.5-coder-1.5b",), n_items=3, conditions_per_dimension=1,
                     questions=("issue_resolution",), qa_mode="compact", fairness=False, coaching=False),
         "all": Params(judges=("local:qwen2.5-coder-1.5b",), n_items=1, qa_mode="compact", fairness=False,
                       coaching=False)}
    t = design_table(c).set_index("design")
    assert t.loc["E", "requests"] < t.loc["all", "requests"] * 1.5
    assert t.loc["E", "items_in_budget"] >= 8 and bool(t.loc["E", "pick"]) and not t.loc["all", "pick"]
    default = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "default.yaml").read_text())
    p = Params.from_config(default)
    row = design_table({"default": p}).iloc[0]
    # the gate's items_needed rule: the default has one counterfactual and one repeat pair per transcript, so
    # its net CFR is Tango's interval and a 10 pp gate needs 35 transcripts with no flip (36 through the MOVER
    # it used before, the size the default's arms keep: one spare); both arms together stay within the
    # reproduce budget (tests/test_star_arm.py)
    assert row["repeat_pairs_per_item"] == 1.0 and row["gate_items_needed"] == 35 and row["gate_decidable"]
    assert row["gate_items_needed"] <= p.n_items <= row["gate_items_needed"] + 1
    three = design_table({"3 repeat pairs": dataclasses.replace(p, repeats=3)}).iloc[0]
    assert three["repeat_pairs_per_item"] == 3.0 and three["gate_items_needed"] == 36
    # the forecast is the design's own: 1 + 1 pairs through Tango, 1 + 3 through the MOVER
    from cfbench.studies.contact_center_qa.calculator import gate_forecast

    assert row["gate_items_to_pass"] == gate_forecast(pairs=1, repeats=1) == 56
    assert three["gate_items_to_pass"] == gate_forecast(pairs=1, repeats=3) == 55


def test_the_gate_forecast_uses_the_designs_own_pairs_and_half_its_audits_pass_there():
    """``gate_items_to_pass`` once assumed 3 repeat pairs (and one counterfactual pair) for every design that was
    not one pair of each; it now takes the design's counts. At the forecast size about half the simulated audits
    of the judge it assumes (net CFR 0, 5 % of pairs flip on either side, independently) pass, through the
    interval the gate table prints (``paired_difference(pairing="corrected")``)."""
    from cfbench.studies.contact_center_qa.calculator import gate_forecast

    two_q = design_table({"2 questions, k=2": Params(
        judges=("local:qwen2.5-coder-1.5b",), n_items=2, conditions_per_dimension=1, qa_mode="compact",
        fairness=False, coaching=False, repeats=2, robustness_temperatures=(0.0,),
        dimensions=("gender",))}).iloc[0]
    assert two_q["repeat_pairs_per_item"] == 2.0 and two_q["gate_items_needed"] == 36
    assert two_q["gate_items_to_pass"] == gate_forecast(pairs=2, repeats=2) == 29
    assert gate_forecast(pairs=2, repeats=6) == 28 and gate_forecast(pairs=1, repeats=0) is None
    rng = np.random.default_rng(2)
    for cf, rep in [(1, 1), (1, 3), (2, 6), (2, 2)]:
        n = gate_forecast(pairs=cf, repeats=rep)
        passed = 0
        for _ in range(600):
            x1, x2 = rng.binomial(cf, 0.05, n), rng.binomial(rep, 0.05, n)
            got = paired_difference(x1, np.full(n, cf), x2, np.full(n, rep), kind="rate", pairing="corrected")
            passed += got["ci_high"] < 0.10
        assert 0.38 < passed / 600 < 0.62, (cf, rep, n, passed / 600)


def test_the_design_note_reads_the_runs_own_repeat_flips():
    import pandas as pd

    from cfbench.studies.contact_center_qa.calculator import design_note

    main = pd.DataFrame({"robustness": [0.0, 2 / 36, 0.0], "n_repeat_pairs": [36, 36, 36]})
    star = pd.DataFrame({"robustness": [1 / 30], "n_repeat_pairs": [30]})
    note = design_note({"gate_items_needed": 35, "gate_items_to_pass": 56},
                       {"cfr_minus_robustness": main, "star_cfr_minus_robustness": star})
    assert "(35)" in note and "(56)" in note
    assert "main arm: 0-2 of 36 repeat pairs flipped (3 dimension rows)" in note
    assert "STAR arm: 1 of 30 repeat pairs flipped (1 dimension row)" in note
    failed = pd.DataFrame({"robustness": [np.nan, 0.0], "n_repeat_pairs": [0, 36]})  # a judge whose replies failed
    assert "main arm: 0 of 36 repeat pairs flipped (2 dimension rows; 1 with no repeat pair read)" in design_note(
        {"gate_items_needed": 35, "gate_items_to_pass": 56}, {"cfr_minus_robustness": failed})
    none = pd.DataFrame({"robustness": [np.nan], "n_repeat_pairs": [np.nan]})
    assert "main arm: no repeat pair read (1 dimension row)" in design_note(
        {"gate_items_needed": 35, "gate_items_to_pass": 56}, {"cfr_minus_robustness": none})
    empty = design_note({"gate_items_needed": 36, "gate_items_to_pass": float("nan")}, {})
    assert "no repeat pair" in empty and "This run's judge" not in empty


def _cfr_power_one_array(p, n_items, pairs, *, alpha=0.05, reps=4000, seed=0):
    """The simulation as one (reps x items x pairs) array: the reference for the blocked one."""
    from cfbench.studies.contact_center_qa.calculator import _net_lower

    u = np.random.default_rng(seed).random((reps, n_items, pairs))
    return np.array([np.mean(_net_lower((u < q).sum(axis=2), pairs, 1 - alpha) > 0) for q in np.atleast_1d(p)])


def test_power_simulation_in_blocks_equals_one_array_and_stays_small(monkeypatch):
    import tracemalloc

    from cfbench.studies.contact_center_qa import calculator as C

    grid = np.array([0.06, 0.09, 0.12, 0.15])
    want = _cfr_power_one_array(grid, 40, 7, reps=600, seed=3)
    assert 0 < want.min() < want.max() < 1  # a curve, not all 0 or all 1
    monkeypatch.setattr(C, "SIM_BLOCK", 1000)  # 3 simulated rows per block: many blocks, one partial
    np.testing.assert_array_equal(C.cfr_power(grid, 40, 7, reps=600, seed=3), want)
    monkeypatch.undo()
    # a paper-sized row (1,200 transcripts, 40 pairs each): one array would be 4000 x 1200 x 40 doubles (1.5 GB)
    tracemalloc.start()
    try:
        C.cfr_power(0.002, 1200, 40)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MB"


def test_the_forecasts_the_default_config_cites_are_the_calculators():
    """The default's comment cites calculator numbers; each is recomputed here (an earlier comment said
    gate_forecast(net=0) = 36 where the function gave 55)."""
    from cfbench.studies.contact_center_qa.calculator import gate_forecast, responsive_items

    text = (REPO / "configs" / "contact_center_qa" / "default.yaml").read_text()
    cited = {"at 35 items (calculator.gate_forecast(net=0, noise=0, repeats=1) = 35;":
             gate_forecast(net=0, noise=0, repeats=1) == 35,
             "at about 56 (gate_forecast(net=0, repeats=1))": gate_forecast(net=0, repeats=1) == 56,
             "about 23 items (gate_forecast(net=0.33, noise=0, repeats=1))":
             gate_forecast(net=0.33, noise=0, repeats=1) == 23,
             "about 15 labelled items (calculator.responsive_items(0.8))": responsive_items(0.8) == 15}
    for phrase, holds in cited.items():
        assert phrase in text and holds, phrase
