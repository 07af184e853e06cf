"""The findings read the real-dialogue (STAR) arm through its own intervals: flips as counts with their
interval, what the intervals leave open, flips beyond repeat noise, accuracy against the customers'
answers; nothing about STAR when the run has no STAR arm."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pandas as pd

from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.findings import findings_markdown

SMALL = Params(n_items=2, dimensions=("priming", "politeness"), conditions_per_dimension=1,
               questions=("issue_resolution",), qa_mode="compact", repeats=2, paraphrases=0, fairness=False,
               coaching=False, n_boot=100)


def _star_file(folder, i: int, resolved: bool) -> None:
    turns = [("User", "Hello, I would like to book a table for four tonight."),
             ("Wizard", "Of course. Which restaurant would you like?"),
             ("User", "The Italian place on Main Street, at seven please."),
             ("Wizard", "Done, your table at seven is booked." if resolved else
              "I am sorry, nothing is free at seven tonight."),
             ("User", "Thank you, goodbye.")]
    obj = {"DialogueID": i, "Scenario": {"Domains": ["restaurant"]},
           "Events": [{"Agent": a, "Action": "utter", "Text": x} for a, x in turns],
           "UserQuestionnaire": [{"Question": "Did the assistant book your table?", "Answer": resolved}]}
    (folder / f"{i}.json").write_text(json.dumps(obj), encoding="utf-8")


def test_a_scripted_run_with_the_arm_states_the_star_rows_with_their_intervals(tmp_path):
    for i in range(6):
        _star_file(tmp_path, 10 + i, resolved=i % 2 == 0)
    r = run(dataclasses.replace(SMALL, real_items=4, real_path=str(tmp_path)), progress=False)
    t = r.tables
    assert len(t["star_cfr"]) and len(t["star_accuracy"])
    text = findings_markdown(r)
    judge = r.summary["judges"][0]
    assert f"**{judge}, real dialogues (STAR arm)** - 4 dialogues" in text
    a = t["star_accuracy"].iloc[0]
    want = (f"Accuracy against the customers' answers: {int(a.n_correct)}/{int(a.n)} ({100 * a.accuracy:.1f}%) "
            f"[{100 * a.ci_low:.1f}, {100 * a.ci_high:.1f}] % on 4 dialogues.")
    assert want in text
    cfr = t["star_cfr"][(t["star_cfr"]["arm"] == "baseline") & (t["star_cfr"]["n_pairs"] > 0)]
    assert f"of {len(cfr)} dimension" in text
    assert ("upper bounds lie between" in text) == (len(cfr) > 1)  # one row has nothing to rank
    assert f"{100 * cfr['ci_high'].max():.1f}%" in text  # the widest interval is named, not hidden
    # the synthetic judge block comes first and is not mistaken for the STAR one
    assert text.index("real dialogues (STAR arm)") > text.index(f"**{judge}** -")


def _result(star: bool) -> SimpleNamespace:
    cfr = pd.DataFrame(columns=["judge", "arm", "dimension", "cfr", "n_items", "n_pairs", "ci_low", "ci_high"])
    tables = {"cfr": cfr, "masd": pd.DataFrame(columns=["judge", "arm", "score", "masd", "dimension", "ci_low",
                                                        "ci_high"]),
              "accuracy": pd.DataFrame(columns=["judge", "n"]), "cfr_minus_robustness": pd.DataFrame(),
              "warnings": pd.DataFrame()}
    if star:
        tables["star_cfr"] = pd.DataFrame([
            {"judge": "j", "arm": "baseline", "dimension": "priming", "cfr": 2 / 6, "n_items": 6, "n_pairs": 6,
             "ci_low": 0.0433, "ci_high": 0.7772},
            {"judge": "j", "arm": "baseline", "dimension": "politeness", "cfr": 0.0, "n_items": 6, "n_pairs": 6,
             "ci_low": 0.0, "ci_high": 0.4593},
            {"judge": "j", "arm": "baseline", "dimension": "formality", "cfr": 0.0, "n_items": 3, "n_pairs": 3,
             "ci_low": 0.0, "ci_high": 0.7076},
            {"judge": "j", "arm": "baseline", "dimension": "directness", "cfr": 1.0, "n_items": 1, "n_pairs": 1,
             "ci_low": float("nan"), "ci_high": float("nan")},
            {"judge": "j", "arm": "fairness", "dimension": "priming", "cfr": 1.0, "n_items": 6, "n_pairs": 6,
             "ci_low": 0.54, "ci_high": 1.0}])
        tables["star_cfr_minus_robustness"] = pd.DataFrame([
            {"judge": "j", "dimension": "priming", "baseline": "robustness", "estimate": 0.2, "ci_low": 0.01,
             "ci_high": 0.7},
            {"judge": "j", "dimension": "politeness", "baseline": "robustness", "estimate": 0.0, "ci_low": -0.46,
             "ci_high": 0.46}])
        tables["star_accuracy"] = pd.DataFrame([{"judge": "j", "accuracy": 5 / 6, "n": 6, "n_correct": 5,
                                                 "n_items": 6, "ci_low": 0.3588, "ci_high": 0.9958}])
    summary = {"items": ["a", "b"], "questions": ["q"], "dimensions": ["priming"], "judges": ["j"],
               "n_requests": 10, "n_parsed": {"j": 10}, "n_not_read": {"j": 0}}
    if star:
        summary["star"] = {"items": [f"star-{i}" for i in range(6)]}
    return SimpleNamespace(summary=summary, tables=tables, params=SimpleNamespace(n_boot=1000))


def test_star_sentences_follow_the_rows():
    text = findings_markdown(_result(star=True))
    block = text[text.index("**j, real dialogues (STAR arm)**"):]
    assert "6 dialogues from the STAR corpus" in block
    # the baseline arm only (the fairness row's 6/6 is not read), counts with their intervals
    assert "flips seen in 2 of 4 dimensions (directness 1/1 no interval; priming 2/6 [4.3, 77.7] %)" in block
    assert ("2 dimensions show none, in 3-6 pairs: a CFR up to 70.8% cannot be ruled out for the least covered "
            "(formality).") in block
    assert "lower bounds reach at most 4.3% and the upper bounds lie between 45.9% and 77.7%: every interval" in block
    assert "1 dimension rests on one dialogue and has no interval." in block
    assert "repeat noise on these dialogues (interval of CFR minus robustness above 0): priming +20.0 pp [1.0, 70.0] pp." in block
    assert "Accuracy against the customers' answers: 5/6 (83.3%) [35.9, 99.6] % on 6 dialogues." in block


def test_no_star_arm_no_star_sentence():
    assert "STAR" not in findings_markdown(_result(star=False))


def test_one_star_row_is_not_ranked_and_its_flips_are_placed_by_margin():
    """One STAR dimension (the committed default): no 'every interval overlaps every other', and the
    line on where the flips fall reads the STAR arm's own `star_flips_by_margin`."""
    r = _result(star=True)
    t = r.tables
    t["star_cfr"] = t["star_cfr"].iloc[[0]]
    t["star_flips_by_margin"] = pd.DataFrame([
        {"judge": "j", "arm": "baseline", "band": "far", "n_items": 4, "n_pairs": 4, "n_flips": 0},
        {"judge": "j", "arm": "baseline", "band": "near", "n_items": 2, "n_pairs": 2, "n_flips": 2}])
    block = findings_markdown(r)
    block = block[block.index("**j, real dialogues (STAR arm)**"):]
    assert "flips seen in 1 of 1 dimension (priming 2/6 [4.3, 77.7] %)." in block
    assert "upper bounds lie between" not in block and "rank" not in block
    assert ("Where the flips fall (`star_flips_by_margin`): 2 dialogues had an original whose P(Yes) lay within "
            "0.10 of 0.5") in block
    assert "2 of the 2 flips were on them (2 of 2 pairs), 0 of 4 pairs elsewhere (4 dialogues)" in block
