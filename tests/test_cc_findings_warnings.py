"""The findings say what was not measured (the run's warning lines) and count dimensions against those
requested, in grammatical English ("1 transcript", "4 transcripts", never "8-8")."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from cfbench.studies.contact_center_qa.findings import findings_markdown
from cfbench.studies.contact_center_qa.study import WARNING_COLUMNS
from star_util import need_star


def _result(cfr: pd.DataFrame, warn: pd.DataFrame, dims: list[str]) -> SimpleNamespace:
    tables = {"cfr": cfr, "masd": pd.DataFrame(columns=["judge", "arm", "score", "masd", "dimension", "ci_low",
                                                        "ci_high"]),
              "accuracy": pd.DataFrame(columns=["judge", "n"]), "cfr_minus_robustness": pd.DataFrame(),
              "warnings": warn}
    summary = {"items": ["a", "b", "c", "d"], "questions": ["q"], "dimensions": dims, "judges": ["j"],
               "n_requests": 10, "n_parsed": {"j": 10}, "n_not_read": {"j": 0}}
    return SimpleNamespace(summary=summary, tables=tables, params=SimpleNamespace(n_boot=1000))


def _cfr(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame([{"judge": "j", "arm": "baseline", "dimension": d, "cfr": 0.0 if n else float("nan"),
                          "n_items": k, "n_pairs": n, "ci_low": 0.0, "ci_high": 0.5} for d, k, n in rows])


def _warn(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c, "") for c in WARNING_COLUMNS} for r in rows], columns=WARNING_COLUMNS)


def test_each_warning_is_a_not_measured_line_and_rows_count_against_the_request():
    w = _warn({"kind": "dimension", "dimension": "gender",
               "message": "dimension gender was requested but yields no judged variant: not applicable to any of "
                          "the 4 transcripts: no agent name"},
              {"kind": "p_yes", "judge": "j",
               "message": "judge j has no P(Yes): its backend gives no log-probs; its P(Yes) MASD rows are empty"})
    text = findings_markdown(_result(_cfr([("gender", 0, 0), ("priming", 4, 4)]), w, ["gender", "priming"]))
    paras = text.split("\n\n")
    assert ("**Not measured:** dimension gender was requested but yields no judged variant: not applicable to any "
            "of the 4 transcripts: no agent name.") in paras
    assert "**Not measured:** judge j has no P(Yes): its backend gives no log-probs; its P(Yes) MASD rows are " \
           "empty." in paras
    assert "CFR rows: 1 of 2 requested dimensions, 4 transcripts per row, 4 compared pairs in all (the others " \
           "are listed under Not measured)." in text
    assert "2 dimensions requested" in text


def test_counts_are_grammatical():
    one = findings_markdown(_result(_cfr([("priming", 1, 1)]), _warn(), ["priming"]))
    assert "CFR rows: 1 of 1 requested dimension, 1 transcript per row, 1 compared pair in all." in one
    assert "1 dimension requested" in one and "Not measured" not in one
    spread = findings_markdown(_result(_cfr([("a", 3, 3), ("b", 4, 4)]), _warn(), ["a", "b"]))
    assert "CFR rows: 2 of 2 requested dimensions, 3-4 transcripts per row, 7 compared pairs in all." in spread
    same = findings_markdown(_result(_cfr([("a", 8, 8), ("b", 8, 8)]), _warn(), ["a", "b"]))
    assert "8 transcripts per row" in same and "8-8" not in same
    for text in (one, spread, same):
        assert "1 dimensions" not in text and "dimension(s)" not in text


_star_dir = need_star


def test_star_audit_names_the_dimension_it_could_not_measure():
    """Issue 23's case: gender and priming on STAR, whose agents give no name."""
    from cfbench.studies.contact_center_qa import audit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # STAR files without a turn are named and left out
        r = audit(_star_dir(), judges=["scripted:cc-qa"], questions=["issue_resolution"],
                  dimensions=["gender", "priming"], n_items=3, n_boot=50, progress=False)
    text = r.findings()
    assert r.warnings and r.warnings[0].startswith("dimension gender was requested but yields no judged variant")
    assert f"**Not measured:** {r.warnings[0]}" in text
    assert "CFR rows: 1 of 2 requested dimensions, 3 transcripts per row" in text
