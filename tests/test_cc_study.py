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
def small_and_left_open():
    """A small run, and the pyplot figures it left open."""
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    result = run(Params(**SMALL), progress=False)
    return result, set(plt.get_fignums()) - before


@pytest.fixture(scope="module")
def small_result(small_and_left_open):
    return small_and_left_open[0]


def test_a_run_leaves_no_figure_open_in_pyplot(small_and_left_open):
    result, left_open = small_and_left_open
    assert len(result.figures) >= 2 and not left_open


def test_params_mirror_the_notebook_parameters():
    from cfbench.cli.reproduce import notebook_parameters

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
    assert n_fail > 0
    assert f"{n_fail} not read ({n_fail} unparseable), excluded" in text  # the double's replies all arrive


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


def test_audit_of_a_file_names_the_file_on_its_progress_bar(tmp_path, monkeypatch):
    import tqdm

    from cfbench.io.transcripts import load_transcripts, save_transcripts
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    bars: list[dict] = []

    class Bar:
        def __init__(self, *args, **kw):
            bars.append(dict(kw, done=0))

        def update(self, n=1):
            bars[-1]["done"] += n

        def refresh(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    path = save_transcripts(load_transcripts(shipped_transcripts_path())[:2], tmp_path / "my_calls.jsonl")
    audit(path, judges=["scripted:cc-qa"], questions=["issue_resolution"], dimensions=["gender"], n_boot=0)
    assert [(b["desc"], b["total"], b["done"]) for b in bars] == [("contact-center (my_calls.jsonl)", 2, 2)]
    bars.clear()
    audit(load_transcripts(path), judges=["scripted:cc-qa"], questions=["issue_resolution"], dimensions=["gender"],
          n_boot=0)  # loaded transcripts: no file to name
    assert [b["desc"] for b in bars] == ["contact-center"]


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


def test_net_cfr_gate_three_way_with_point_rule_and_responsiveness():
    from cfbench.studies.contact_center_qa.gates import net_cfr_gate

    cmr = pd.DataFrame({"judge": "j", "dimension": ["a", "b", "c", "d", "e"], "baseline": "robustness",
                        "estimate": [0.02, 0.05, 0.20, 0.0, 0.25], "counterfactual": 0.0, "robustness": 0.0,
                        "n_items": [12, 3, 12, 1, 12], "ci_low": [0.0, 0.0, 0.05, float("nan"), 0.12],
                        "ci_high": [0.08, 0.30, 0.35, float("nan"), 0.40]})
    resp = pd.DataFrame({"judge": ["j"], "balanced_accuracy": [0.9], "ci_low": [0.7], "responsive": [True],
                         "why": ["balanced accuracy lower bound 0.700 > 0.50"]})
    g = net_cfr_gate(pd.concat([cmr, cmr.assign(baseline="robustness_t0.7")]), max_net=0.1,
                     responsive=resp).set_index("dimension")
    assert len(g) == 5 and set(g["baseline"]) == {"robustness"}
    assert g["point_rule"].tolist() == ["pass", "pass", "fail", "pass", "fail"]
    # pass: upper bound below; fail: lower bound above; else inconclusive (no interval too)
    assert g["verdict"].tolist() == ["pass", "inconclusive", "inconclusive", "inconclusive", "fail"]
    # forecasts only on inconclusive rows with an interval, from the observed spread: b leans under
    # (0.05 with half-width 0.25 at 3 items reaches the maximum exactly at 3 * (0.25 / 0.05)^2 = 75 items,
    # strictly below from 76); c leans over (0.20 - 0.15 sqrt(12 / n) > 0.1 from n > 27)
    assert g.loc["b", "items_needed"] == 76 and g.loc["c", "items_needed"] == 28
    assert g.loc["b", "forecast"] == "about 76 items to pass" and g.loc["c", "forecast"] == "about 28 items to fail"
    assert pd.isna(g.loc["a", "items_needed"]) and g.loc["d", "forecast"].startswith("no forecast")
    # an upper bound equal to the maximum does not pass, nor is it a fail
    eq = net_cfr_gate(cmr.assign(ci_high=0.1, ci_low=0.0, n_items=40), max_net=0.1, responsive=resp)
    assert (eq["verdict"] == "inconclusive").all()
    # at the maximum: no number of items decides
    at = net_cfr_gate(cmr.assign(estimate=0.1, ci_low=0.05, ci_high=0.15), max_net=0.1, responsive=resp)
    assert (at.loc[at["ci_high"].notna(), "forecast"] == "not decidable by more items at the observed rate").all()
    # a judge not shown responsive never passes; a shown excess still fails
    un = net_cfr_gate(cmr, max_net=0.1, responsive=resp.assign(responsive=False, why="balanced accuracy ..."))
    assert un["verdict_kind"].tolist() == ["uninformative"] * 4 + ["fail"]
    assert un["verdict"].iloc[0] == "uninformative (balanced accuracy on labelled items not shown above chance)"
    assert (net_cfr_gate(cmr, max_net=0.1)["verdict_kind"] != "pass").all()  # no check given: no pass


def test_findings_state_the_gate(small_result):
    text = small_result.findings()
    assert "Gate on CFR net of repeat noise (at most 10 pp, 95% interval)" in text
    gate = small_result.tables["net_cfr_gate"]
    # 2 transcripts cannot support the decision: no row passes, and the text does not say one is shown under
    assert not (gate["verdict_kind"] == "pass").any() and "`pass` (" not in text
    assert set(gate["verdict_kind"]) <= {"inconclusive", "uninformative", "fail"}


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


def test_the_progress_bar_is_one_final_line_not_glued_to_the_loaders_output(capfd):
    # the bar is not drawn in its first second (an executed notebook kept "0/36" glued to a loader's warning),
    # and its final count is drawn even when the 10 s interval held every update
    run(Params(**SMALL), progress=True)
    err = capfd.readouterr().err
    bars = [seg for seg in err.replace("\r", "\n").split("\n") if seg.startswith("contact-center:")]
    assert bars and "2/2" in bars[-1], err[-500:]
    assert not any(" 0/2 " in b for b in bars), bars
