"""The real-dialogue arm: balanced STAR dialogues judged against the customers' own answers, every table
saying which source it rests on, and the default config inside its time budget."""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.io.transcripts import Transcript, Turn
from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.items import load_items, select_items
from cfbench.studies.contact_center_qa.requests import estimate_cost, plan_for
from cfbench.studies.contact_center_qa.screen import SCREEN_FACTOR, _originals_only
from cfbench.studies.contact_center_qa.study import REAL_TABLES, real_dialogues
from star_util import need_star

ROOT = Path(__file__).resolve().parents[1]


_star_dir = need_star


SMALL = Params(n_items=2, dimensions=("gender", "priming", "politeness"), conditions_per_dimension=1,
               questions=("issue_resolution",), qa_mode="compact", repeats=2, paraphrases=0, fairness=False,
               coaching=False, n_boot=100)


def test_unlabelled_items_never_stand_in_for_no():
    def t(i, lab):
        return Transcript(f"t{i}", (Turn("customer", "hi"), Turn("agent", "hello")),
                          labels={"issue_resolution": lab} if lab else {})
    items = [t(0, "Yes"), t(1, None), t(2, "Yes"), t(3, None), t(4, "No")]
    got = [x.id for x in select_items(items, 4, require_agent_name=False, balance_label="issue_resolution")]
    assert got == ["t0", "t4", "t2", "t1"]  # Yes, No, the surplus Yes, then an unlabelled one


def test_real_dialogues_are_balanced_on_the_customers_answers():
    ts = real_dialogues(_star_dir(), 6)
    assert [t.labels["issue_resolution"] for t in ts] == ["Yes", "No"] * 3
    assert all(t.meta["label_question"]["issue_resolution"].endswith("?") for t in ts)


def test_the_arm_runs_on_star_with_its_own_labelled_tables():
    star = _star_dir()
    r = run(dataclasses.replace(SMALL, real_items=4, real_path=str(star)), progress=False)
    t = r.tables
    for name in REAL_TABLES:
        assert (t[f"star_{name}"]["source"] == "star").all(), name
    for name in ("cfr", "masd", "accuracy", "warnings", "table2"):
        assert (t[name]["source"] == "synthetic").all() or name == "warnings"
    assert list(t["table2"].columns)[:3] == ["source", "block", "row"]
    acc = t["star_accuracy"].iloc[0]
    assert acc["n"] == 4 and 0 <= acc["ci_low"] <= acc["accuracy"] <= acc["ci_high"] <= 1
    items = r.summary["star"]["items"]
    assert len(items) == 4
    # balanced on the customers' answers: 2 labelled Yes and 2 No (the per-row frames cover the first
    # transcripts only; the responsiveness table counts the labelled items of every transcript)
    resp = t["star_responsiveness"].iloc[0]
    assert (resp["n_yes_items"], resp["n_no_items"]) == (2, 2)
    # STAR agents give no name: gender is a warning line of the arm, never a silent gap
    assert "gender" not in set(t["star_cfr"]["dimension"])
    star_w = t["warnings"][t["warnings"]["source"] == "star"]
    assert list(star_w["dimension"]) == ["gender"] and star_w["message"].iloc[0].startswith("STAR arm: dimension gender")
    assert {"priming", "politeness"} <= set(t["star_cfr"]["dimension"])
    assert (t["star_cfr"]["n_pairs"] > 0).all()
    # where the arm's flips fall: every compared pair of the arm's judge is in one band, every flip too
    margin, cfr = t["star_flips_by_margin"], t["star_cfr"]
    for arm, rows in cfr.groupby("arm"):
        m = margin[margin["arm"] == arm]
        assert m["n_pairs"].sum() == rows["n_pairs"].sum(), arm
        assert m["n_flips"].sum() == round((rows["cfr"] * rows["n_pairs"]).sum()), arm
    assert "STAR dialogues" in r.header() and "synthetic" in r.header()
    r.check()


def test_absent_dialogues_skip_the_arm_with_one_warning(tmp_path, capsys):
    r = run(dataclasses.replace(SMALL, real_items=4, real_path=str(tmp_path / "nowhere")), progress=False)
    assert not any(k.startswith("star_") for k in r.tables)
    w = r.tables["warnings"]
    assert list(w["kind"]) == ["real_arm"] and "no STAR dialogues" in w["message"].iloc[0]
    assert capsys.readouterr().out.count("warning: real-dialogue arm skipped") == 1


def test_a_researchers_own_file_is_source_file(tmp_path):
    path = tmp_path / "calls.jsonl"
    from cfbench.studies.contact_center_qa.synth import generate_transcripts
    from cfbench.io.transcripts import save_transcripts

    save_transcripts(generate_transcripts(2, seed=1), path)
    r = run(dataclasses.replace(SMALL, transcripts_path=str(path), require_agent_name=False), progress=False)
    assert set(r.tables["cfr"]["source"]) == {"file"}


def test_the_default_config_runs_synthetic_calls_beside_the_star_dialogues_within_its_budget():
    """The committed default: 36 seeded synthetic calls as the main arm (agents with names, both labels) and
    36 balanced STAR dialogues as the side arm, on the dimensions that apply to each; both arms within 45
    minutes by the cost model (calibrated on the slowest machine measured, so a live run takes less)."""
    cfg = yaml.safe_load((ROOT / "configs" / "contact_center_qa" / "default.yaml").read_text())
    star_dir = _star_dir()
    p = Params.from_config(cfg)
    assert p.transcripts_path.startswith("synthetic:") and p.n_items >= 36 and p.real_items >= 36
    items = load_items(p)
    assert len(items) == p.n_items and {t.meta.get("source", "synthetic") for t in items} == {"synthetic"}
    labels = [t.labels.get(p.questions[0]) for t in items]
    # the seeded set: both classes, as responsiveness needs
    assert (labels.count("Yes"), labels.count("No")) == (14, 22)
    # the STAR arm: a margin screen on the balanced order after the pilot's dialogues (.screen)
    assert p.real_margin == 0.15 and p.real_skip == 52
    n_screen = p.real_items * SCREEN_FACTOR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # STAR files without a turn are named and left out
        pilot = real_dialogues(star_dir, p.real_skip)
        candidates = real_dialogues(star_dir, p.real_skip + n_screen)[p.real_skip:]
    assert not {t.id for t in pilot} & {t.id for t in candidates}  # the gate's dialogues are not the pilot's
    # alternately resolved and not by the customers' own answers, as far as the corpus allows (it holds 63
    # dialogues whose customer said No; 26 are the pilots')
    labels = [t.labels.get("issue_resolution") for t in candidates]
    assert labels[:74] == ["Yes", "No"] * 37 and set(labels[74:]) == {"Yes"}
    _, plan = plan_for(p, items)
    sub = dataclasses.replace(p, real_items=0, real_margin=0.0, real_skip=0, transcripts_path=str(star_dir),
                              n_items=n_screen, require_agent_name=False)
    _, star_plan = plan_for(sub, candidates)
    dims = set(star_plan.rows["dimension"]) - {"original", "robustness"}
    assert dims == {"disability"}  # STAR agents give no name: the name swaps apply to no dialogue
    # the expected cost: 36 dialogues put to the variant and the repeat, found among about 62 screened (the
    # pilot kept 21 of its 36 at this margin); the cost model prices each request alone, so which ones barely
    # matters: the first ones here
    n_expected = math.ceil(p.real_items * 36 / 21)
    _, kept_plan = plan_for(dataclasses.replace(sub, n_items=p.real_items), candidates[:p.real_items])
    screen_plan = _originals_only(plan_for(sub, candidates[p.real_items:n_expected])[1])
    minutes = sum(float(estimate_cost(x)["est_seconds"].sum()) for x in (plan, kept_plan, screen_plan)) / 60
    assert 20 < minutes <= 45, minutes
    # the most it can cost, every candidate screened: within an hour by this model, which measured 2.4 times
    # the live time on the 2-core AMD EPYC of the committed run (27.2 min estimated, about 11 live, for the
    # synthetic arm)
    worst = _originals_only(plan_for(sub, candidates[p.real_items:])[1])
    minutes = sum(float(estimate_cost(x)["est_seconds"].sum()) for x in (plan, kept_plan, worst)) / 60
    assert minutes <= 60, minutes


def test_reproduce_runs_the_arm_through_the_notebook(tmp_path):
    _star_dir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CFBENCH_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "cfbench.cli", "reproduce", "--config", "smoke", "--study",
                        "contact_center_qa", "-p", "real_items", "2", "-p", "fairness", "false", "-p", "coaching",
                        "false", "-p", "n_boot", "50", "--results", str(tmp_path / "results")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir = tmp_path / "results" / "contact_center_qa" / "smoke"
    acc = pd.read_csv(run_dir / "star_accuracy.csv")
    assert list(acc["source"]) == ["star"] and list(acc["n"]) == [2]
    assert set(pd.read_csv(run_dir / "cfr.csv")["source"]) == {"synthetic"}
    import json

    nb = json.loads((run_dir / "contact_center_qa.ipynb").read_text())
    (cell,) = [c for c in nb["cells"] if c["cell_type"] == "code" and "star_accuracy" in "".join(c["source"])]
    shown = json.dumps(cell["outputs"])
    assert "`star_accuracy`" in shown and "`star_cfr`" in shown  # the display cell ran and showed the tables


@pytest.mark.parametrize("n, match", [(0, "positive whole number"), (True, "positive whole number"),
                                      (2.5, "positive whole number"), (9, "first 9 transcripts but there are 2")])
def test_audit_n_items_is_checked(n, match):
    from cfbench.core.errors import InputError
    from cfbench.studies.contact_center_qa import audit
    from cfbench.studies.contact_center_qa.synth import generate_transcripts

    with pytest.raises(InputError, match=match) as e:
        audit(generate_transcripts(2, seed=0), judges=["scripted:cc-qa"], questions=["issue_resolution"],
              n_items=n, progress=False)
    assert e.value.field == "n_items"
