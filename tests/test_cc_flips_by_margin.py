"""``flips_by_margin``: each counterfactual pair in the band of its original's P(Yes) (near 0.5 or not), and
the findings line that reads it. Built by hand so every count is known."""

from __future__ import annotations

import math

import pandas as pd

from cfbench.studies.contact_center_qa import tables as TB
from cfbench.studies.contact_center_qa.findings import _margin_line


def _unit(item: str, dim: str, p_orig: float, answers: list[int], *, ok: bool = True) -> list[dict]:
    """One QA unit: the original (P(Yes) ``p_orig``, answer from it) and one variant per entry of ``answers``."""
    base = dict(judge="j", arm="baseline", task="qa", question_id="q", item_id=item, dimension=dim)
    orig_yes = float(p_orig > 0.5) if not math.isnan(p_orig) else 1.0
    rows = [dict(base, condition="original", answer_yes=orig_yes, p_yes=p_orig, parse_ok=ok)]
    rows += [dict(base, condition=f"c{k}", answer_yes=float(a), p_yes=float("nan"), parse_ok=True)
             for k, a in enumerate(answers)]
    return rows


def _frame(*units: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([r for u in units for r in u])


def _cells(qa_cf: pd.DataFrame) -> pd.DataFrame:
    return TB._margin_cells(qa_cf, TB._qa_unit_pairs(qa_cf))


def _table(qa_cf: pd.DataFrame) -> pd.DataFrame:
    return TB._flips_by_margin(_cells(qa_cf))


def test_pairs_are_counted_in_the_band_of_their_original():
    qa_cf = _frame(
        _unit("a", "d1", 0.45, [1]),       # near, flips
        _unit("a", "d2", 0.45, [0]),       # near, stays
        _unit("b", "d1", 0.58, [0, 1]),    # near: 3 pairs, 2 discordant
        _unit("c", "d1", 0.95, [1]),       # far, stays
        _unit("d", "d1", 0.10, [1]),       # far, flips
        _unit("e", "d1", 0.62, [0]),       # far, flips
        _unit("f", "d1", float("nan"), [0]),  # no P(Yes) read: its own band, flips
    )
    t = _table(qa_cf).set_index("band")
    assert list(t.columns) == [c for c in TB.MARGIN_COLUMNS if c != "band"]
    assert t.loc["near", ["n_items", "n_pairs", "n_flips"]].tolist() == [2, 5, 3]
    assert t.loc["far", ["n_items", "n_pairs", "n_flips"]].tolist() == [3, 3, 2]
    assert t.loc["no_p_yes", ["n_items", "n_pairs", "n_flips"]].tolist() == [1, 1, 1]
    assert math.isclose(t.loc["near", "cfr"], 3 / 5)
    assert math.isclose(t["share_of_flips"].sum(), 1.0) and math.isclose(t.loc["near", "share_of_flips"], 3 / 6)


def test_an_unread_original_leaves_its_pair_out():
    """A unit whose original was not read has no valid pair, so it adds to no band."""
    qa_cf = _frame(_unit("a", "d1", 0.45, [1], ok=False), _unit("b", "d1", 0.9, [1]))
    t = _table(qa_cf)
    assert t[["band", "n_items", "n_pairs", "n_flips"]].values.tolist() == [["far", 1, 1, 0]]


def test_cells_of_disjoint_items_add_up_to_the_cells_of_all():
    units = [_unit(f"i{k}", "d1", p, [a]) for k, (p, a) in enumerate([(0.45, 1), (0.9, 1), (0.55, 1), (0.2, 0)])]
    whole = _table(_frame(*units))
    parts = pd.concat([_cells(_frame(*units[:2])), _cells(_frame(*units[2:]))])
    pd.testing.assert_frame_equal(TB._flips_by_margin(parts), whole)


def test_the_findings_say_where_the_flips_fall_and_only_when_there_are_some():
    qa_cf = _frame(_unit("a", "d1", 0.45, [1]), _unit("b", "d1", 0.52, [0]), _unit("c", "d1", 0.9, [1]),
                   _unit("d", "d1", 0.1, [0]), _unit("e", "d1", 0.2, [0]))
    line = _margin_line("j", _table(qa_cf))
    assert "2 transcripts had an original whose P(Yes) lay within 0.10 of 0.5" in line
    assert "2 of the 2 flips were on them (2 of 2 pairs), 0 of 3 pairs elsewhere (3 transcripts)" in line
    calm = _frame(_unit("a", "d1", 0.45, [0]), _unit("c", "d1", 0.9, [1]))
    assert _margin_line("j", _table(calm)) == ""
    assert _margin_line("other judge", _table(qa_cf)) == ""
