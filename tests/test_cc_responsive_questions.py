"""Contact-center responsiveness is judged within each question, and a sequential walk's repeated looks at it
are paid for: a judge that reads only the question, or is lucky at one of many looks, is not responsive."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cfbench.studies.contact_center_qa import Params
from cfbench.studies.contact_center_qa.gates import responsiveness_table
from cfbench.studies.contact_center_qa.sequential import SequentialAudit
from cfbench.studies.contact_center_qa.study import _sequential_audit
from cfbench.studies.contact_center_qa.tables import accuracy_table


def _cells(rows: list[tuple[str, bool, bool]], judge: str = "j") -> pd.DataFrame:
    """Accuracy cells as the tables build them, one labelled original per item: (question, label Yes, right)."""
    return pd.DataFrame([{"judge": judge, "question_id": q, "label_yes": float(y), "item_id": f"{q}-{k}",
                          "n_valid": 1.0, "n_correct": float(ok), "n_unparsed": 0.0}
                         for k, (q, y, ok) in enumerate(rows)])


def _by_question_judge() -> list[tuple[str, bool, bool]]:
    """A judge answering Yes to every transcript on question a (30 Yes-labelled, 10 No) and No to every one on
    question b (10 Yes, 30 No): right on 60 of 80, never reading a transcript."""
    a = [("a", True, True)] * 30 + [("a", False, False)] * 10
    b = [("b", True, False)] * 10 + [("b", False, True)] * 30
    return a + b


def test_a_judge_reading_only_the_question_is_not_responsive():
    cells = _by_question_judge()
    pooled = _cells([("all", y, ok) for _, y, ok in cells])  # the questions pooled, as the table was before
    assert bool(responsiveness_table(accuracy_table(pooled)).iloc[0]["responsive"])  # 0.75 balanced: fooled
    row = responsiveness_table(accuracy_table(_cells(cells))).iloc[0]
    assert not row["responsive"] and row["balanced_accuracy"] == 0.5
    assert "of a" in row["why"] and "of b" in row["why"]


def test_every_question_must_be_shown_and_an_unlabelled_one_is_not():
    good = [("a", True, True)] * 18 + [("a", False, True)] * 16 + [("a", False, False)] * 2
    blind_b = [("b", True, True)] * 18 + [("b", False, False)] * 18  # always Yes on b
    assert bool(responsiveness_table(accuracy_table(_cells(good))).iloc[0]["responsive"])
    row = responsiveness_table(accuracy_table(_cells(good + blind_b))).iloc[0]
    assert not row["responsive"] and row["balanced_accuracy"] == 0.5  # the weakest question's numbers
    assert row["why"].startswith("balanced accuracy on the labelled originals of b")
    row = responsiveness_table(accuracy_table(_cells(good)), questions=("a", "c")).iloc[0]
    assert not row["responsive"] and "no labelled original of c" in row["why"]
    # one question: the row and its wording as before the per-question check
    row = responsiveness_table(accuracy_table(_cells(good)), questions=("a",)).iloc[0]
    assert row["responsive"] and row["why"].startswith("balanced accuracy on the labelled originals lower bound")


def test_the_walk_pays_for_its_looks():
    p = Params(n_items=12, sequential=True, max_items=100, wave_size=10, questions=("issue_resolution",))
    audit = _sequential_audit(p, None)
    assert audit.max_looks == 10 and abs(audit.responsive_level - (1 - 0.05 / 10)) < 1e-12
    assert audit.questions == ("issue_resolution",)
    assert SequentialAudit(judges=["j"], dimensions=["d"], max_net=0.1).responsive_level == 0.95


def test_a_blind_judge_looked_at_after_every_wave_is_rarely_called_responsive():
    """300 walks of a judge answering at random (labels half Yes), 10 waves of 10 items, the check after every
    wave through the real tables: at the fixed level it is called responsive at some wave in about 6 % of
    walks (5.8 % of 4,000 in benchmarks/bench_responsive_looks.py); at the walk's level in about 0.7 %, under
    the 2.5 % a single look allows. A judge right on 75 % of items is still shown by the tenth wave in nearly
    every walk (99 %)."""
    rng = np.random.default_rng(20261128)
    looks, wave = 10, 10
    level = SequentialAudit(judges=["j"], dimensions=["d"], max_net=0.1, max_looks=looks).responsive_level

    def ever_shown(acc: float, lvl: float, reps: int) -> int:
        hits = 0
        for _ in range(reps):
            lab = rng.random(looks * wave) < 0.5
            right = rng.random(looks * wave) < acc
            cells = _cells([("q", bool(y), bool(ok)) for y, ok in zip(lab, right)])
            # every look at once: the items up to the look, under a judge name of their own
            at_looks = pd.concat([cells.iloc[:n].assign(judge=f"after {n}")
                                  for n in range(wave, looks * wave + 1, wave)], ignore_index=True)
            hits += bool(responsiveness_table(accuracy_table(at_looks, level=lvl))["responsive"].any())
        return hits

    blind = ever_shown(0.5, level, 300)
    assert blind <= 6, blind  # 2 % at most (this seed: 2 of 300)
    fooled = ever_shown(0.5, 0.95, 150)
    assert fooled >= 3, fooled  # the fixed level, looked at 10 times, is fooled (this seed: 13 of 150)
    shown = ever_shown(0.75, level, 30)
    assert shown >= 26, shown  # this seed: 29 of 30
