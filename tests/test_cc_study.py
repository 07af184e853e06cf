"""The study API: Params mirrors the notebook, run() returns a checked result, audit() for own transcripts."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.report import InvariantError
from cfbench.studies.contact_center_qa import ContactCenterResult, Params, audit, run

REPO = Path(__file__).resolve().parents[1]
SMALL = dict(n_items=2, dimensions=("gender", "priming", "directness"), n_boot=50, coaching_items=1)


@pytest.fixture(scope="module")
def small_result():
    return run(Params(**SMALL), progress=False)


def test_params_mirror_the_notebook_parameters():
    from cfbench.reproduce import notebook_parameters

    nb = notebook_parameters(REPO / "notebooks" / "contact_center_qa.ipynb")
    fields = {f.name for f in dataclasses.fields(Params)}
    assert set(nb) - {"output_dir", "config_name"} == fields
    cell = json.loads((REPO / "notebooks" / "contact_center_qa.ipynb").read_text())["cells"][1]
    src = "".join(cell["source"])
    for f in dataclasses.fields(Params):  # same defaults (lists in the notebook, tuples in Params)
        line = next(ln for ln in src.splitlines() if ln.startswith(f"{f.name}:"))
        literal = eval(line.split("=", 1)[1].split("  #")[0])  # noqa: S307 - our own notebook's literal
        default = f.default
        assert (list(default) if isinstance(default, tuple) else default) == literal, f.name


@pytest.mark.parametrize("config", ["smoke", "default", "paper"])
def test_every_config_builds_params(config):
    data = yaml.safe_load((REPO / "configs" / "contact_center_qa" / f"{config}.yaml").read_text())
    p = Params.from_config(data, source=f"{config}.yaml")
    assert p.judges and p.questions


def test_unknown_parameter_is_an_input_error():
    from cfbench.core.errors import InputError

    with pytest.raises(InputError, match="n_itemz"):
        Params.from_config({"n_itemz": 3})


def test_run_returns_a_checked_result_with_every_step(small_result, tmp_path):
    r = small_result
    assert isinstance(r, ContactCenterResult)
    for name in ("transcripts", "variants", "plan", "plan_summary", "cost", "judgments", "rows"):
        assert name in r.frames and len(r.frames[name]), name
    assert set(r.tables["cfr"]["dimension"]) == set(SMALL["dimensions"])
    assert all(r.check().values())
    assert "2 transcripts" in r.header() and "3 dimensions" in r.header()
    r.save(tmp_path)
    for f in ("cfr.csv", "masd.csv", "table2.csv", "judgments.parquet", "rows.parquet", "summary.json",
              "heatmap_cfr.png"):
        assert (tmp_path / f).exists(), f
    assert "/work/" not in (tmp_path / "summary.json").read_text()


def _broken(r: ContactCenterResult, **frames) -> ContactCenterResult:
    return dataclasses.replace(r, frames=r.frames | frames, tables=dict(r.tables))


def test_check_names_each_broken_invariant(small_result):
    r = small_result
    j = r.frames["judgments"].copy()
    failed = j.index[~j["parse_ok"]]
    assert len(failed), "the scripted judge answers some prompts with unreadable text"
    j.loc[failed[0], "answer"] = "No"  # a parse failure turned into a verdict
    with pytest.raises(InvariantError, match="a parse failure never becomes an answer"):
        _broken(r, judgments=j).check()
    bad = _broken(r)
    bad.tables["cfr"] = r.tables["cfr"].assign(cfr=1.5)
    with pytest.raises(InvariantError) as e:
        bad.check()
    assert "CFR is a fraction" in str(e.value) and "cfr: interval contains estimate" in str(e.value)
    mixed = _broken(r)
    mixed.tables["cfr"] = pd.concat([r.tables["cfr"], r.tables["cfr"].head(1).assign(dimension="original")])
    with pytest.raises(InvariantError, match="counterfactual dimensions only"):
        mixed.check()


def test_findings_are_generated_from_the_numbers(small_result):
    text = small_result.findings()
    assert "2 transcripts" in text and "scripted test double" in text
    n_fail = int((~small_result.frames["judgments"]["parse_ok"]).sum())
    assert f"{n_fail} parse failures excluded" in text


def test_audit_own_transcripts_in_a_few_lines(tmp_path):
    from cfbench.io.transcripts import load_transcripts, save_transcripts
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    path = save_transcripts(load_transcripts(shipped_transcripts_path())[:3], tmp_path / "mine.jsonl")
    r = audit(path, judges=["scripted:cc-qa"], questions=["issue_resolution"], dimensions=["gender"],
              n_boot=50, progress=False)
    cfr = r.tables["cfr"]
    assert list(cfr["dimension"]) == ["gender"] and cfr["n_items"].iloc[0] == 3
    assert {"ci_low", "ci_high"} <= set(cfr.columns)
    assert r.tables["cfr_minus_robustness"]["dimension"].tolist() == ["gender"]
    assert all(r.check().values())


def test_sampled_conditions_give_one_pair_per_unit_and_are_seeded():
    p = Params(n_items=3, dimensions=("ethnicity_name", "priming"), conditions_per_dimension=2, n_boot=0,
               fairness=False, coaching=False, repeats=2)
    a, b = run(p, progress=False), run(p, progress=False)
    cfr = a.tables["cfr"]
    assert (cfr["n_pairs"] + cfr["n_pairs_excluded"] == 3 * 2).all()  # 3 items x 2 questions x 1 pair
    pd.testing.assert_frame_equal(a.frames["plan"], b.frames["plan"])
    other = run(dataclasses.replace(p, seed=1), progress=False)
    assert not a.frames["plan"]["condition"].equals(other.frames["plan"]["condition"])


def test_a_judge_that_only_says_no_idea_gets_no_cfr_masd_or_accuracy(capsys, tmp_path):
    import math

    spec = "scripted:cc_fixtures:no_idea"
    r = run(Params(judges=(spec,), n_items=2, dimensions=("gender", "priming"), qa_mode="compact", n_boot=50,
                   coaching=True), out=tmp_path, progress=False)
    printed = capsys.readouterr().out
    assert f"{spec}: none of its" in printed and "no CFR, MASD or accuracy" in printed
    j = r.frames["judgments"]
    assert not j["parse_ok"].any() and j["answer"].isna().all() and j["score"].isna().all()
    assert (j["text"] == "No idea, the transcript does not say.").all()  # raw text kept
    assert r.tables["cfr"]["cfr"].isna().all() and (r.tables["cfr"]["n_pairs"] == 0).all()
    assert (r.tables["cfr"]["n_pairs_excluded"] > 0).all()  # the excluded n is shown
    assert r.tables["masd"]["masd"].isna().all() if len(r.tables["masd"]) else True
    acc = r.tables["accuracy"]
    assert acc["n"].eq(0).all() and acc["accuracy"].isna().all() and (acc["n_unparsed"] > 0).all()
    assert all(math.isnan(v) for v in r.tables["cfr_minus_robustness"]["estimate"])
    assert "heatmap_cfr" not in r.figures and not (tmp_path / "heatmap_cfr.png").exists()
    text = r.findings()
    assert "no CFR, MASD or accuracy" in text and "0 replies read" in text
    assert r.summary["accuracy_pct"] == {spec: None} or all(
        v is None or (isinstance(v, float) and math.isnan(v)) for v in r.summary["accuracy_pct"].values())
    assert all(r.check().values())


def test_net_cfr_gate_by_point_and_by_interval_upper_bound():
    from cfbench.studies.contact_center_qa.tables import net_cfr_gate

    cmr = pd.DataFrame({"judge": "j", "dimension": ["a", "b", "c", "d"], "baseline": "robustness",
                        "estimate": [0.02, 0.05, 0.20, 0.0], "counterfactual": 0.0, "robustness": 0.0,
                        "n_items": [12, 3, 12, 1], "ci_low": [0.0, 0.0, 0.1, float("nan")],
                        "ci_high": [0.08, 0.30, 0.35, float("nan")]})
    g = net_cfr_gate(pd.concat([cmr, cmr.assign(baseline="robustness_t0.7")]), max_net=0.1).set_index("dimension")
    assert len(g) == 4 and set(g["baseline"]) == {"robustness"}
    assert g["point_pass"].tolist() == [True, True, False, True]
    assert g["interval_pass"].tolist() == [True, False, False, False]  # no interval, no pass
    # 0 flips in K items give the Clopper-Pearson bound 1 - 0.025^(1/K): below 0.1 from K = 36 on
    assert (g["items_needed"] == 36).all()
    assert g["verdict"].tolist() == ["pass", "not decidable at this n (needs >= 36 items)",
                                     "not decidable at this n (needs >= 36 items)",
                                     "no interval (none)"]
    # an upper bound equal to the maximum does not pass
    eq = net_cfr_gate(cmr.assign(ci_high=0.1, n_items=40), max_net=0.1)
    assert not eq["interval_pass"].any() and (eq["verdict"].iloc[:3] == "fail").all()


def test_findings_state_the_gate(small_result):
    text = small_result.findings()
    assert "Gate on CFR net of repeat noise (at most 10 pp; passes only when the upper bound" in text
    gate = small_result.tables["net_cfr_gate"]
    # 2 transcripts cannot support the decision: no row may read as shown to stay under the maximum
    assert not gate["interval_pass"].any() and "shown to stay under 10 pp (" not in text
    assert "none is shown to stay under 10 pp" in text


def test_findings_set_each_dimension_against_the_wording_row():
    from cfbench.studies.contact_center_qa.findings import _wording_scale

    masd = pd.DataFrame({"dimension": ["a", "b", "c"], "ci_low": [0.0, 1.0, 9.0], "ci_high": [2.0, 3.0, 12.0]})
    rob = pd.DataFrame({"judge": ["j", "j"], "baseline": ["robustness_wording", "robustness"],
                        "metric": ["masd_p_yes", "masd_p_yes"], "value": [5.0, 0.0], "ci_low": [4.0, 0.0],
                        "ci_high": [6.0, 0.0]})
    (line,) = _wording_scale("j", masd, rob)
    assert "moves P(Yes) by 5.00 [4.0, 6.0]" in line
    assert "2 of 3 dimensions move it by more than zero" in line
    assert "1 move it clearly more than rewording does (c) and 2 clearly less" in line
    assert _wording_scale("other judge", masd, rob) == [] and _wording_scale("j", masd, rob.iloc[1:]) == []
