"""The generic cells of a sequential audit (cfbench.stats.sequential_cells): each cell is the betting sequence of
its items, responsiveness comes before a pass, a decided cell takes nothing more, the level is split over the
cells; and the two-sided matched-pair gap gate (ShopFlow's) keeps its false pass at the maximum under peeking
after every item."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from cfbench.core.errors import InputError
from cfbench.stats.sequential import BettingCS, confidence_sequence
from cfbench.stats.sequential_cells import SequentialCells, add_wave_tallies, check_sequential_params


def _gap(rng, n, mean, discordant=0.3):
    """Matched-pair gaps in {-1, 0, 1}: a share ``discordant`` of pairs differ, their mean ``mean``."""
    u = rng.random(n)
    return np.where(u < (discordant + mean) / 2, 1.0, np.where(u < discordant, -1.0, 0.0))


def _two_sided_pass(lo, up, limit):
    return (lo > -limit) & (up < limit)


def test_peeking_after_every_pair_keeps_the_two_sided_false_pass_at_the_maximum_under_5_percent():
    """True gap exactly at the maximum of |gap| <= 0.10: every pass is false. 300 audits of 500 pairs (15 %
    discordant), a look after every pair, the sequence at a single cell's full 5 % (ShopFlow runs each of its
    two cells at 2.5 %). The binomial 99.9 % upper limit of the observed rate must stay under 5 %, so the
    check cannot pass by luck if the true rate were 5 % or more. (At -0.10 the same holds by symmetry: the
    hedged sequence treats d and -d alike.) The same loop passes most audits of a zero gap, so the check is
    not met by a sequence that never passes."""
    rng = np.random.default_rng(35)
    paths = [confidence_sequence(_gap(rng, 500, 0.10, 0.15), lo=-1.0, hi=1.0, alpha=0.05, grid=200)
             for _ in range(300)]
    fp = float(np.mean([_two_sided_pass(lo, up, 0.10).any() for lo, up in paths]))
    upper_999 = sps.beta.ppf(0.999, fp * 300 + 1, 300 - fp * 300)
    assert upper_999 < 0.05, (fp, upper_999)
    clean = [confidence_sequence(_gap(rng, 500, 0.0, 0.15), lo=-1.0, hi=1.0, alpha=0.05, grid=200)
             for _ in range(60)]
    assert np.mean([_two_sided_pass(lo, up, 0.10).any() for lo, up in clean]) >= 0.6
    # the control: a fixed-n 95 % t interval of the same data, peeked after every pair from the 10th, passes
    # far more often (the check above can fail)
    wald = []
    for _ in range(300):
        x = _gap(rng, 500, 0.10, 0.15)
        k = np.arange(1, 501)
        m = np.cumsum(x) / k
        sd = np.sqrt(np.maximum(np.cumsum(x * x) / k - m * m, 0) * k / np.maximum(k - 1, 1))
        half = sps.t.ppf(0.975, np.maximum(k - 1, 1)) * sd / np.sqrt(k)
        wald.append(bool((_two_sided_pass(m - half, m + half, 0.10) & (sd > 0))[9:].any()))
    assert np.mean(wald) > 0.15


def test_a_clean_gap_passes_and_a_large_one_fails_two_sided():
    rng = np.random.default_rng(7)
    verdicts = {}
    for name, mean in (("zero", 0.0), ("plus", 0.6), ("minus", -0.6)):
        cells = SequentialCells(keys=[("g",)], key_names=["gap"], maximum=0.3, two_sided=True)
        for _ in range(40):
            cells.update({("g",): _gap(rng, 10, mean, discordant=0.1 if mean == 0 else 0.7)}, {("g",): (True, "")})
            if cells.done:
                break
        verdicts[name] = cells.cells[("g",)].verdict
    assert verdicts == {"zero": "pass", "plus": "fail", "minus": "fail"}


def test_each_cell_is_the_betting_sequence_of_its_items_at_its_share_of_alpha():
    rng = np.random.default_rng(3)
    keys = [("a", "x"), ("a", "y"), ("b", "x")]
    cells = SequentialCells(keys=keys, key_names=["judge", "cue"], maximum=0.2)
    assert cells.cell_alpha == pytest.approx(0.05 / 3)
    fed = {k: [] for k in keys}
    for _ in range(6):
        wave = {k: list((rng.random(4) < 0.3).astype(float) - (rng.random(4) < 0.1)) for k in keys}
        cells.update(wave, {k: (True, "") for k in keys})
        for k in keys:
            if len(fed[k]) < cells.cells[k].cs.n:
                fed[k] += wave[k]
    for k in keys:
        ref = BettingCS(alpha=0.05 / 3, lo=-1.0, hi=1.0)
        ref.update(fed[k])
        assert cells.cells[k].cs.bounds() == pytest.approx(ref.bounds())
    t = cells.table()
    assert list(t[["judge", "cue"]].itertuples(index=False, name=None)) == keys
    w = cells.waves_table()
    assert (w.groupby(["judge", "cue"])["items"].diff().dropna() > 0).all()


def test_responsiveness_comes_first_and_a_decided_cell_takes_nothing_more():
    cells = SequentialCells(keys=[("j", "quiet"), ("j", "loud")], key_names=["judge", "cue"], maximum=0.3)
    quiet, loud = [0.0] * 10, [1.0] * 10
    for _ in range(5):
        cells.update({("j", "quiet"): quiet, ("j", "loud"): loud}, {("j", "quiet"): (False, "accuracy at chance")})
    q, lo_ = cells.cells[("j", "quiet")], cells.cells[("j", "loud")]
    assert q.verdict == "inconclusive" and q.cs.bounds()[1] < 0.3  # would pass, but not shown to look
    assert "accuracy at chance" in q.reason and cells.undecided() == [("j", "quiet")]
    assert lo_.verdict == "fail"  # a fail needs no responsiveness
    n_loud = lo_.cs.n
    cells.update({("j", "quiet"): quiet, ("j", "loud"): loud}, {("j", "quiet"): (True, "")})
    assert lo_.cs.n == n_loud  # decided: took nothing
    assert q.verdict == "pass" and q.stopped_at_wave == 6 and cells.done  # shown now: passes on the next look


def test_per_cell_maxima_and_the_forecast():
    cells = SequentialCells(keys=[("tpr",), ("fpr",)], key_names=["gap"], maximum={("tpr",): 0.1, ("fpr",): 0.5},
                            two_sided=True)
    rng = np.random.default_rng(1)
    x = list(_gap(rng, 30, 0.0, discordant=0.1))
    cells.update({("tpr",): x, ("fpr",): x}, {("tpr",): (True, ""), ("fpr",): (True, "")})
    t = cells.table().set_index("gap")
    assert t.loc["fpr", "verdict"] == "pass" and t.loc["tpr", "verdict"] == "inconclusive"
    assert t.loc["tpr", "forecast_items"] > 30 and math.isnan(t.loc["fpr", "forecast_items"])
    with pytest.raises(ValueError, match="no maximum"):
        SequentialCells(keys=[("a",)], key_names=["gap"], maximum={("b",): 0.1})


def test_wave_tallies_add_up():
    total: dict = {}
    add_wave_tallies(total, {"judge": "j", "n_called": 3, "n_unique": 4, "n_failed": 1, "wall_s": 1.5,
                             "failures_by_kind": {"timeout": 1}})
    add_wave_tallies(total, {"judge": "j", "n_called": 2, "n_unique": 4, "n_failed": 0, "wall_s": 0.5,
                             "failures_by_kind": {"timeout": 0, "unparseable": 2}})
    assert total == {"judge": "j", "n_called": 5, "n_unique": 8, "n_failed": 1, "wall_s": 2.0,
                     "failures_by_kind": {"timeout": 1, "unparseable": 2}, "non_completion_rate": 1 / 8, "waves": 2}


class _P:
    def __init__(self, **kw):
        self.__dict__.update(dict(sequential=False, max_items=0, wave_size=1, max_requests=0, max_cost_usd=0.0) | kw)


@pytest.mark.parametrize("kw,field", [({"wave_size": 0}, "wave_size"), ({"max_items": True}, "max_items"),
                                      ({"max_requests": 1.5}, "max_requests"),
                                      ({"max_cost_usd": float("nan"), "sequential": True}, "max_cost_usd"),
                                      ({"max_requests": 10}, "max_requests")])
def test_sequential_params_are_checked_by_name(kw, field):
    with pytest.raises(InputError, match=field):
        check_sequential_params(_P(**kw), priced=True)
    check_sequential_params(_P(sequential=True, max_requests=10, max_items=3, max_cost_usd=2.0), priced=True)


def test_a_cell_may_declare_its_own_range():
    from cfbench.stats.sequential import BettingCS

    cells = SequentialCells(keys=[("a",), ("b",)], key_names=["cell"], maximum={("a",): 0.1, ("b",): 1.0},
                            ranges={("b",): (-9.0, 9.0)})
    vals = [0.0, 0.5, -0.5, 1.0] * 5
    cells.update({("a",): [v / 9 for v in vals], ("b",): vals}, {("a",): (True, ""), ("b",): (True, "")})
    ref = BettingCS(alpha=cells.cell_alpha, lo=-9.0, hi=9.0)
    ref.update(vals)
    t = cells.table().set_index("cell")
    assert (t.loc["b", "cs_low"], t.loc["b", "cs_high"]) == pytest.approx(ref.bounds())
    assert t.loc["b", "cs_high"] == pytest.approx(9 * t.loc["a", "cs_high"])  # the same sequence, rescaled
    with pytest.raises(ValueError, match="not a cell"):
        SequentialCells(keys=[("a",)], key_names=["cell"], maximum=0.1, ranges={("z",): (0.0, 1.0)})


def test_the_sequential_paragraph_reads_the_cells_table_without_naming_a_study():
    """cfbench.report.sequential_paragraph (the judge-bias and ShopFlow findings paragraphs call it): the decided
    cells with where and why they stopped, how the walk ended, the undecided ones, the level split."""
    import pandas as pd

    from cfbench.report import sequential_paragraph

    table = pd.DataFrame({"cell": ["a", "b", "c"], "verdict": ["fail", "inconclusive", "pass"],
                          "stopped_at_item": [6, math.nan, 14], "stopped_at_wave": [3, math.nan, 7],
                          "reason": ["above", "wide", "below"]})
    kw = dict(unit="pair", cells="test cells", name=lambda r: f"<{r.cell}>", stopped_note="and no more sent")
    text = sequential_paragraph(table, n_walked=20, budget=40, stopped_by="budget: max_requests 9", **kw)
    assert text.startswith("**Sequential audit**: 3 test cells at 5 % / 3 (Bonferroni: at most 5 % chance")
    assert "it stopped after 20 of its 40 pairs at its budget: max_requests 9." in text
    assert ("Stopped early, and no more sent: <a> fail at pair 6 (wave 3: above); <c> pass at pair 14 (wave 7: "
            "below). 1 cell inconclusive.") in text
    done = table.assign(verdict=["fail", "pass", "pass"], stopped_at_item=[6, 8, 14], stopped_at_wave=[3, 4, 7])
    text = sequential_paragraph(done, n_walked=20, budget=40, all_decided="all three decided", tail="Tail.",
                                left=lambda rows: "never called", alpha=0.1, **kw)
    assert "it stopped after 20 of its 40 pairs, all three decided. " in text and "never" not in text
    assert "at 10 % / 3" in text and text.endswith("<c> pass at pair 14 (wave 7: below). Tail.")
    none = table.assign(verdict="inconclusive")
    text = sequential_paragraph(none, n_walked=40, budget=40, left=lambda rows: f"{len(rows)} open", **kw)
    assert "it judged 40 of its 40 pairs. No cell was decided. 3 open." in text
    assert sequential_paragraph(None, n_walked=0, budget=0, **kw) == sequential_paragraph(table.iloc[0:0], n_walked=0,
                                                                                          budget=0, **kw) == ""
