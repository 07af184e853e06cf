"""Placebo arm of the contact-center study: a same-group swap per identity dimension, and the
``placebo_contrast`` table (identity flip rate minus the placebo's, paired by item).

* the placebo's new name stays in the original name's group (and gender, and length class) and differs
  from the original name, on synthetic and on STAR-shaped dialogues; an unknown group gives no placebo;
* a judge that re-draws its answer on any edit gives a contrast near 0 (interval covering 0); a judge keyed
  on the name's group gives a positive contrast with its lower bound above 0;
* the placebo arm changes no other table; its interval covers the truth in seeded simulations at 8, 20 and
  60 items, zero events and correlated flips included (:func:`cfbench.stats.coverage.placebo_contrast_coverage`).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from cfbench.core.seeding import unit_interval
from cfbench.io.star import star_dialogue
from cfbench.judges.base import Request, Response
from cfbench.judges.scripted import register_script
from cfbench.perturb.base import load_data
from cfbench.perturb.identify import identify_turns, name_lookup
from cfbench.perturb.placebo import PLACEBO_DIMENSIONS, length_class, placebo_rows, placebo_variant
from cfbench.stats.coverage import placebo_contrast_coverage
from cfbench.stats.intervals import worst_case_bound
from cfbench.studies.contact_center_qa import Params
from cfbench.studies.contact_center_qa.judging import iter_judged
from cfbench.studies.contact_center_qa.prompts import prompt_parts
from cfbench.studies.contact_center_qa.synth import generate_transcripts
from cfbench.studies.contact_center_qa.tables import TABLES, new_state


def _star(name: str, i: int = 7):
    """A STAR-shaped dialogue (Wizard / User events, a questionnaire label) whose agent introduces itself."""
    return star_dialogue({"DialogueID": i, "Scenario": {"Domains": ["hotel"]}, "Events": [
        {"Agent": "User", "Action": "utter", "Text": "Hello! How are you today?"},
        {"Agent": "Wizard", "Action": "utter", "Text": f"Hello, this is {name}. I am well, thanks. How can I help?"},
        {"Agent": "User", "Action": "utter", "Text": "Book me a room in a hotel for Friday."},
        {"Agent": "Wizard", "Action": "utter", "Text": "Done, the room is booked for Friday."},
        {"Agent": "User", "Action": "utter", "Text": "Thanks, bye."},
        {"Agent": "Wizard", "Action": "utter", "Text": "Goodbye, have a nice day!"}],
        "UserQuestionnaire": [{"Question": "Did the assistant reserve your hotel?", "Answer": True}]},
        source=f"{i}.json")


def _in_list(name: str, kind: str, group: str, gender: str) -> bool:
    return name.lower() in (n.lower() for n in load_data("names.yaml")[kind][group][gender])


def _check_rows(transcripts, seed: int) -> dict[str, int]:
    """Every applicable placebo row: its new name is in the original's list (kind, group, gender), of the
    same length class, not the original name; the text changed. Returns applicable rows per dimension."""
    rows = placebo_rows(transcripts, list(PLACEBO_DIMENSIONS), seed=seed)
    by_id = {t.id: t for t in transcripts}
    made = dict.fromkeys(PLACEBO_DIMENSIONS, 0)
    for r in rows.itertuples(index=False):
        if not r.applicable:
            assert r.reason.startswith("placebo: "), r.reason
            continue
        made[r.dimension] += 1
        t = by_id[r.item_id]
        ident = identify_turns(t)
        e = next(e for e in r.edits if e["op"] == "replace" and e["turn"] in ident.name_turns)
        orig = ident.agent_name.split()[0]
        # the word where the original name stood (a cue may add a name-like word: "Ni hao!")
        m = re.search(rf"(?i)(?<![\w'])({re.escape(orig)})(?!\w)", e["before"])
        prefix = e["before"][:m.start()]
        assert prefix, e
        new_name = re.match(r"[\w'-]+", e["after"][e["after"].index(prefix) + len(prefix):]).group(0)
        gender = ident.agent_gender or name_lookup(orig)["gender"]
        assert new_name.lower() != orig.lower()
        assert length_class(new_name) == length_class(orig)
        kind = PLACEBO_DIMENSIONS[r.dimension]
        if kind == "gender":  # same gender, same ethnicity list
            assert _in_list(new_name, "ethnicity", ident.agent_race, gender), (r.item_id, new_name)
        else:
            group = ident.agent_race if kind == "ethnicity" else ident.agent_religion
            assert _in_list(new_name, kind, group, gender), (r.dimension, r.item_id, new_name, group)
        assert r.turns != [x.to_dict() for x in t.turns] and r.valid, r.rejection_reason
    return made


@pytest.mark.parametrize("seed", [0, 3])
def test_synthetic_placebos_stay_in_group_and_differ_from_the_original(seed):
    made = _check_rows(generate_transcripts(40, seed=seed), seed)
    for d in ("gender", "ethnicity_name", "ethnicity_cues"):
        assert made[d] >= 10, (d, made)


def test_star_shaped_placebos_stay_in_group_and_differ_from_the_original():
    ts = [_star(n, i) for i, n in enumerate(["Miriam", "Megan", "Mei", "Fatima", "Guadalupe", "Esther", "Ahmed",
                                              "Tyrone", "Hana", "Priyanka"])]
    made = _check_rows(ts, 0)
    assert min(made.values()) >= 2, made  # each dimension has names whose group is known
    # a cue placebo adds the original group's own cues
    v = placebo_variant("religion_cues", ts[0], identify_turns(ts[0]), seed=0)
    cues = load_data("cues.yaml")["religion"]["judaism"]
    assert v.applicable and all(any(c in lst for lst in cues.values()) for c in v.checks["injected"])


def test_an_unknown_group_gives_no_placebo_and_the_draw_is_seeded():
    t = _star("Zorblat")  # in no list: no same-group alternative is defined, never a name of another group
    ident = identify_turns(t)
    for d in PLACEBO_DIMENSIONS:
        v = placebo_variant(d, t, ident, seed=0)
        assert not v.applicable and "placebo" in v.reason
    t = _star("Megan")
    a, b = (placebo_variant("ethnicity_name", t, identify_turns(t), seed=5) for _ in range(2))
    assert a.turns == b.turns
    names = {placebo_variant("ethnicity_name", t, identify_turns(t), seed=s).checks["placebo_name"] for s in range(12)}
    assert len(names) >= 2 and "megan" not in names


# -- scripted judges of known behaviour ----------------------------------------------------------------

_FAVOURED = {"white", "hispanic_latino", "black"}


def _agent_group(transcript: str) -> str:
    for line in transcript.splitlines():
        if line.startswith("Agent:"):
            for w in re.findall(r"[A-Z][\w'-]+", line):
                g = name_lookup(w).get("ethnicity")
                if g:
                    return g
    return ""


def _reply(yes: bool) -> Response:
    a = "Yes" if yes else "No"
    return Response(text=f"{a} 80", top_logprobs={a: math.log(0.8), ("No" if yes else "Yes"): math.log(0.2)},
                    prompt_tokens=1, completion_tokens=2)


def _any_edit(request: Request) -> Response:
    """test: re-draws its answer from the whole transcript text, so any edit flips it half the time."""
    transcript, _, _, _ = prompt_parts(request.messages)
    return _reply(unit_interval("any-edit", transcript) < 0.5)


def _keyed(request: Request) -> Response:
    """test: answers Yes exactly when the agent's name is of a favoured ethnicity group."""
    transcript, _, _, _ = prompt_parts(request.messages)
    return _reply(_agent_group(transcript) in _FAVOURED)


register_script("cc-test-any-edit", _any_edit)
register_script("cc-test-keyed", _keyed)

BASE = dict(n_items=24, transcripts_path="synthetic", dimensions=("gender", "ethnicity_name"),
            questions=("issue_resolution",), qa_mode="compact", repeats=0, robustness_temperatures=(0.0,),
            paraphrases=0, fairness=False, coaching=False, n_boot=300, placebo=True)


def _tables(params: Params) -> dict[str, pd.DataFrame]:
    state = new_state()
    for _, variants, _, judgments, rows, _ in iter_judged(params):
        state.update(rows, judgments, variants, complete=True)
    return state.compute(n_boot=params.n_boot, seed=params.seed)


@pytest.fixture(scope="module")
def contrast(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs outside conftest's per-test cache
        mp.setenv("CFBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        t = _tables(Params(**BASE, judges=("scripted:cc-test-any-edit", "scripted:cc-test-keyed")))
    return t["placebo_contrast"].set_index(["judge", "dimension"])


def test_a_judge_moved_by_any_edit_has_a_contrast_near_zero(contrast):
    for dim in ("gender", "ethnicity_name"):
        r = contrast.loc[("scripted:cc-test-any-edit", dim)]
        assert r["n_items"] >= 20 and r["placebo_cfr"] > 0.25 and r["identity_cfr"] > 0.25  # it does flip
        assert r["ci_low"] <= 0 <= r["ci_high"] and abs(r["estimate"]) < 0.25, r.to_dict()  # ~1.7 SE


def test_a_judge_keyed_on_the_group_has_a_positive_contrast(contrast):
    r = contrast.loc[("scripted:cc-test-keyed", "ethnicity_name")]
    assert r["placebo_cfr"] == 0.0  # a same-group swap never moves it
    # 3 favoured of 6 groups: 9 of the 15 cross-group pairs of an item flip, on every item
    assert r["identity_cfr"] == pytest.approx(0.6) and r["estimate"] == pytest.approx(0.6)
    assert r["ci_low"] > 0.3 and r["ci_high"] <= 1.0, r.to_dict()
    assert r["n_pairs"] == 15 * r["n_items"] and r["n_placebo_pairs"] == r["n_items"] >= 15
    g = contrast.loc[("scripted:cc-test-keyed", "gender")]  # gender keeps the ethnicity list: no flip either side
    assert g["estimate"] == 0.0 and g["ci_low"] <= 0 <= g["ci_high"]


def test_the_placebo_arm_changes_no_other_table(tmp_path, monkeypatch):
    """Sampled design (one condition per item against the original): the same draws with the placebo on, so
    every table but ``placebo_contrast`` and ``parse_rates`` (which counts every call made, the placebo's
    included) is identical; the contrast has rows only with the placebo on."""
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path))
    kw = dict(BASE, n_items=8, dimensions=("gender", "ethnicity_cues", "priming"), conditions_per_dimension=1,
              judges=("scripted:cc-qa",), n_boot=50)
    on, off = _tables(Params(**kw)), _tables(Params(**kw | {"placebo": False}))
    assert set(on) == set(off) == set(TABLES)
    assert on["parse_rates"]["n"].sum() > off["parse_rates"]["n"].sum()
    for name in TABLES:
        if name not in ("placebo_contrast", "parse_rates"):
            pd.testing.assert_frame_equal(on[name].reset_index(drop=True), off[name].reset_index(drop=True),
                                          obj=name)
    assert len(off["placebo_contrast"]) == 0
    pc = on["placebo_contrast"]
    assert set(pc["dimension"]) == {"gender", "ethnicity_cues"} and pc["ci_method"].str.startswith("tango").all()


# -- coverage of the paired interval (seeded simulation, known truth) -----------------------------------

#: (label, settings): one pair per item on each side (Tango); several identity pairs per item (bootstrap-t);
#: most items never flipping; no flip at all (zero events); an identity effect on top of the edit effect
DESIGNS = [("1 vs 1, any edit", dict(effect=0.0)),
           ("1 vs 1, effect 0.2", dict(effect=0.2)),
           ("6 vs 2, any edit", dict(effect=0.0, identity_pairs=6, placebo_pairs=2)),
           ("6 vs 1, effect 0.2", dict(effect=0.2, identity_pairs=6, placebo_pairs=1)),
           ("6 vs 1, 80 % never flip", dict(effect=0.0, zero_share=0.8, identity_pairs=6, placebo_pairs=1)),
           ("no flip anywhere", dict(effect=0.0, p_any=0.0, identity_pairs=6, placebo_pairs=1))]


@pytest.mark.parametrize("n_items", [8, 20, 60])
@pytest.mark.parametrize("label,design", DESIGNS, ids=[d[0] for d in DESIGNS])
def test_the_contrast_interval_covers_the_truth(label, design, n_items):
    r = placebo_contrast_coverage(n_items=n_items, reps=400, n_boot=1000, seed=n_items, **design)
    assert r["no_ci"] == 0 and r["coverage"] >= 0.93, r
    assert r["max_abs_bound"] <= 1.0
    if design.get("p_any", 0.3) == 0:  # every estimate 0: no spread to compare with; no bound beyond the
        # zero-event Clopper-Pearson bound of n items (0.37 at 8, 0.17 at 20, 0.06 at 60)
        assert 0 < r["max_abs_bound"] <= worst_case_bound(n_items) + 1e-12, r
    else:  # width within 2.5x the estimator's own 2.5-97.5 % spread (1.05-2.4x measured), never collapsed
        assert 0.9 <= r["width_ratio"] <= 2.5, r


def test_a_reviewed_placebo_is_rejected_like_any_variant(tmp_path):
    """A decisions file from the review page may reject a placebo variant: it is then invalid (human) and not
    judged; the sampled design draws the same conditions."""
    from cfbench.studies.contact_center_qa.variants import make_item_variants

    ts = generate_transcripts(6, seed=0)
    kw = dict(n_items=6, dimensions=("ethnicity_name", "priming"), conditions_per_dimension=1, placebo=True)
    v, compared, per_item = make_item_variants(Params(**kw), ts, progress=False)
    pl = v[(v["condition"] == "placebo") & v["valid"].astype(bool)]
    assert "placebo" in compared["ethnicity_name"] and "placebo" not in compared["priming"]
    target = pl.iloc[0]
    assert per_item[(target["item_id"], "ethnicity_name")][-1] == "placebo"
    path = tmp_path / "decisions.csv"
    pd.DataFrame({"variant_id": [target["variant_id"]], "decision": ["reject"]}).to_csv(path, index=False)
    v2, _, per_item2 = make_item_variants(Params(**kw, decisions_path=str(path)), ts, progress=False)
    row = v2[v2["variant_id"] == target["variant_id"]].iloc[0]
    assert not row["valid"] and row["rejected_by"] == "human"
    assert per_item2[(target["item_id"], "ethnicity_name")] == per_item[(target["item_id"], "ethnicity_name")][:-1]
    _, _, per_off = make_item_variants(Params(**kw | {"placebo": False}), ts, progress=False)
    assert {k: [c for c in c_ if c != "placebo"] for k, c_ in per_item.items()} == per_off


def test_the_placebo_is_judged_on_baseline_auto_qa_only():
    """Only ``placebo_contrast`` reads the placebo (baseline Auto-QA): no fairness-arm or coaching request."""
    from cfbench.studies.contact_center_qa.requests import plan_for

    ts = generate_transcripts(4, seed=0)
    p = Params(n_items=4, dimensions=("ethnicity_name", "gender"), placebo=True, fairness=True, coaching=True,
               coaching_items=4)
    _, plan = plan_for(p, ts, progress=False)
    r = plan.rows[plan.rows["condition"] == "placebo"]
    assert len(r) and set(r["arm"]) == {"baseline"} and set(r["task"]) == {"qa"}
    assert len(r) == 2 * len(set(r["variant_id"]))  # each placebo variant: both questions, one judge
    assert {"fairness"} <= set(plan.rows["arm"]) and {"positives"} <= set(plan.rows["task"])


def test_a_run_keeps_the_placebo_out_of_table_9_and_the_gates(tmp_path, monkeypatch):
    """``run``: the rejection table (Table 9), Table 2, the warnings and the gates are those of the run without
    the placebo arm; the placebo's own table has its rows."""
    from cfbench.studies.contact_center_qa import run

    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path))
    kw = dict(n_items=3, dimensions=("gender", "religion_name", "priming"), conditions_per_dimension=1,
              questions=("issue_resolution",), fairness=False, coaching=False, n_boot=50, paraphrases=0)
    on, off = (run(Params(**kw, placebo=p), progress=False).tables for p in (True, False))
    for name in ("variant_rejections", "table2", "warnings", "net_cfr_gate", "cfr_minus_robustness"):
        pd.testing.assert_frame_equal(on[name].reset_index(drop=True), off[name].reset_index(drop=True), obj=name)
    assert len(on["placebo_contrast"]) and not len(off["placebo_contrast"])
