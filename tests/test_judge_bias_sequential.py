"""The judge-bias sequential audit (issue 35): a decided (judge, cue) cell gets no more requests for that cue,
a judge not shown to look at the replies never passes, and a request budget is never passed.

The judges are scripted test doubles registered here; every request they receive is logged, so the tests
count what was sent, not what the tables report.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.stats.sequential import BettingCS
from cfbench.studies.judge_bias import sequential as S
from cfbench.studies.judge_bias.study import Params, run

N_ITEMS = 40
SENT: list = []  # (judge, item, condition) of every request the judges received


def _reply(pick: str) -> Response:
    other = "B" if pick == "A" else "A"
    return Response(text=pick, top_logprobs={pick: math.log(0.8), other: math.log(0.2)}, prompt_tokens=10,
                    completion_tokens=1)


def _real_judge(request) -> Response:
    """Picks the sent reply (slot A in order realA, B in realB), so it is accurate on the controls and
    position-consistent; under ``authority`` it picks the other reply (a flip on every item), under
    ``verbosity`` on every other item (net share 0.5, the test's maximum)."""
    item, task, cond, order = request.request_id.split("/")
    SENT.append(("real", item, cond))
    real = "A" if order == "realA" else "B"
    flip = cond == "authority" or (cond == "verbosity" and int(item[2:5]) % 2 == 0)
    return _reply(("B" if real == "A" else "A") if flip else real)


def _slot_a_judge(request) -> Response:
    """Always slot A: never flips under a cue in the same order, looks at nothing."""
    item, task, cond, order = request.request_id.split("/")
    SENT.append(("slot_a", item, cond))
    return _reply("A")


def _scoring_judge(request) -> Response:
    """Pairwise: as :func:`_real_judge` (responsive). Pointwise (the order field names the reply scored): 5 for
    the real reply and 2 for the known-worse one, so it tells them apart; 5 points more under ``authority`` (a
    net shift of 5 points on every item) and the same under ``verbosity`` (net 0)."""
    item, task, cond, order = request.request_id.split("/")
    if task == "pairwise":
        return _real_judge(request)
    SENT.append(("scoring", item, f"pointwise:{cond}"))
    score = (5 if order == "real" else 2) + (5 if cond == "authority" else 0)
    return Response(text=str(score), prompt_tokens=10, completion_tokens=1)


def _flat_scoring_judge(request) -> Response:
    """Pairwise: as :func:`_real_judge` (responsive). Pointwise: 5 for every reply whatever the condition, so
    every cue's net shift is exactly 0 on every item, and the score says nothing about the reply."""
    item, task, cond, order = request.request_id.split("/")
    if task == "pairwise":
        return _real_judge(request)
    SENT.append(("flat", item, f"pointwise:{cond}"))
    return Response(text="5", prompt_tokens=10, completion_tokens=1)


register_script("jb-seq-real", _real_judge)
register_script("jb-seq-scoring", _scoring_judge)
register_script("jb-seq-flat-scoring", _flat_scoring_judge)
register_script("jb-seq-slot-a", _slot_a_judge)


def _params(judge: str, **kw) -> Params:
    base = dict(judges=(judge,), star_path="none", n_draft=0, n_control=N_ITEMS,
                cues=("position", "verbosity", "authority"), pointwise_cues=(), gate_max_net_flip=0.5, n_boot=50,
                sequential=True, wave_size=2)
    return Params(**(base | kw))


def _run(params: Params, out=None):
    SENT.clear()
    return run(params, out, progress=False)


def _sent() -> pd.DataFrame:
    return pd.DataFrame(SENT, columns=["judge", "item", "condition"])


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    out = tmp_path_factory.mktemp("jbseq")
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs before conftest's per-test cache
        mp.setenv("CFBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("jbseq-cache")))
        r = _run(_params("scripted:jb-seq-real"), out)
    return r, out, _sent()


def test_a_decided_cue_is_no_longer_sent_after_its_stopping_wave(real):
    r, _, sent = real
    cells = r.tables["sequential_cells"].set_index("cue")
    assert cells.loc["authority", "verdict"] == "fail"  # flips on every item
    assert cells.loc["position", "verdict"] == "pass"  # never flips, judge shown to look
    assert cells.loc["verbosity", "verdict"] == "inconclusive"  # net 0.5 sits at the maximum
    walked = list(dict.fromkeys(r.frames["items"]["item_id"]))[:r.summary["sequential"]["n_walked"]]
    assert len(walked) == N_ITEMS  # verbosity never decides, so every item is walked
    asked = {c: set(sent.loc[sent["condition"] == c, "item"]) for c in ("authority", "verbosity", "baseline")}
    k = int(cells.loc["authority", "stopped_at_item"])
    assert k < N_ITEMS
    assert asked["authority"] == set(walked[:k])  # asked about its first k items only ...
    assert int((sent["condition"] == "authority").sum()) == k  # ... once each
    assert asked["verbosity"] == set(walked)  # the undecided cue was asked about every item
    assert asked["baseline"] == set(walked)  # the shared references go on for every item
    assert cells.loc["authority", "requests_used"] == k and cells.loc["verbosity", "requests_used"] == N_ITEMS
    assert cells.loc["position", "requests_used"] == 0  # it reads the baseline orders: nothing of its own
    assert r.summary["n_requests_sent_all_judges"] == len(sent)
    assert not [name for name, ok in r.invariants().items() if not ok]
    text = r.findings()
    assert "Sequential audit" in text and f"`authority` fail at item {k} (wave" in text


def test_the_cell_sequence_is_the_betting_sequence_of_the_item_net_shares(real):
    r, _, _ = real
    cells = r.tables["sequential_cells"].set_index("cue")
    k = int(cells.loc["verbosity", "items_used"])
    parsed = r.frames["parsed"]
    pw = parsed[(parsed["task"] == "pairwise")]
    # independently: per item, the verbosity answer differs from the baseline in the same order (1 pair), the
    # reworded answer from the baseline (1 pair); this judge never flips under rewording
    wide = pw.pivot_table(index=["item_id", "order"], columns="condition", values="answer", aggfunc="first")
    v = wide.dropna(subset=["verbosity"])
    d = (v["verbosity"] != v["baseline"]).astype(float).to_numpy()
    order = list(dict.fromkeys(r.frames["items"]["item_id"]))
    d = pd.Series(d, index=v.index.get_level_values(0)).reindex(order).dropna().to_numpy()
    cs = BettingCS(alpha=0.05 / 3, lo=-1.0, hi=1.0)
    cs.update(d[:k])
    assert (cells.loc["verbosity", "cs_low"], cells.loc["verbosity", "cs_high"]) == pytest.approx(cs.bounds())


def test_a_judge_not_shown_to_look_never_passes_and_keeps_being_asked():
    r = _run(_params("scripted:jb-seq-slot-a", wave_size=8))
    cells = r.tables["sequential_cells"].set_index("cue")
    assert "pass" not in set(cells["verdict"])
    assert "responsiveness not shown" in cells.loc["authority", "reason"]
    assert cells.loc["authority", "cs_high"] < 0.5  # the sequence alone would have passed
    sent = _sent()
    assert sent.loc[sent["condition"] == "authority", "item"].nunique() == N_ITEMS


@pytest.mark.parametrize("max_requests", [30, 61])
def test_a_request_budget_is_never_passed(max_requests):
    r = _run(_params("scripted:jb-seq-slot-a", max_requests=max_requests))
    per_wave = 2 * 5  # 2 items x (2 baseline orders, reworded, verbosity, authority)
    assert max_requests - per_wave < len(SENT) <= max_requests
    assert "max_requests" in r.summary["sequential"]["stopped_by"]


def test_pointwise_cues_are_cells_that_stop_when_decided():
    # a 2-point maximum: on the 18-point range of a net shift, 40 items of exactly 0 give [-1.44, 1.44]
    r = _run(_params("scripted:jb-seq-scoring", pointwise_cues=("verbosity", "authority"), wave_size=4,
                     gate_max_score_shift=2.0))
    cells = r.tables["sequential_cells"].set_index(["task", "cue"])
    assert set(cells.index) == {("pairwise", c) for c in ("position", "verbosity", "authority")} | \
        {("pointwise", "verbosity"), ("pointwise", "authority")}
    shifted, flat = cells.loc[("pointwise", "authority")], cells.loc[("pointwise", "verbosity")]
    assert shifted["verdict"] == "fail" and shifted["cs_low"] > 2.0  # 5 points net on every item
    assert flat["verdict"] == "pass" and flat["cs_high"] < 2.0
    assert -9.0 <= shifted["cs_low"] <= shifted["cs_high"] <= 9.0  # the score range, not the flip share's
    sent = _sent()
    for cue, row in ((c, cells.loc[("pointwise", c)]) for c in ("authority", "verbosity")):
        asked = sent.loc[sent["condition"] == f"pointwise:{cue}", "item"].nunique()
        assert asked == row["items_used"] == row["stopped_at_item"] < N_ITEMS  # nothing sent after its decision
    base = sent.loc[sent["condition"] == "pointwise:baseline", "item"].nunique()
    assert base > cells.loc[("pointwise", "verbosity"), "items_used"]  # the shared references went on
    assert "sequential_pointwise_sequences" in r.figures
    text = S.sequential_sentence(r.tables["sequential_cells"], r.summary["sequential"])
    assert "(pointwise) fail" in text and "net absolute 1-10 score shift" in text


@pytest.mark.parametrize("sequential", [True, False])
def test_a_judge_giving_every_reply_one_score_never_passes_a_pointwise_gate(sequential):
    # pairwise it looks at the replies (responsive there), pointwise it scores everything 5: every net shift is 0,
    # which passed the pointwise gate while the gate read the pairwise checks. 40 items is past the fixed-n floor.
    r = _run(_params("scripted:jb-seq-flat-scoring", pointwise_cues=("verbosity", "authority"), wave_size=8,
                     gate_max_score_shift=2.0, sequential=sequential))
    pw = r.tables["pointwise"]
    assert len(pw) == 2 and (pw["net_abs_shift"] == 0).all() and (pw["net_ci_high"] < 2.0).all()
    assert all(str(g).startswith("uninformative (pointwise control discrimination") for g in pw["gate"])
    assert "same as the real one on all 40 control items" in pw["responsiveness"].iloc[0]
    control = r.tables["pointwise_control"].iloc[0]
    assert (control["n_items"], control["tied"], control["real_higher"]) == (40, 40, 0)
    if sequential:
        cells = r.tables["sequential_cells"].set_index(["task", "cue"])
        assert cells.loc[("pointwise", "verbosity"), "verdict"] != "pass"
        assert cells.loc[("pairwise", "position"), "verdict"] == "pass"  # the pairwise checks are met
    text = r.findings()
    assert "`authority` `uninformative`" in text and "the same on 40 (mean 5.00 vs 5.00)" in text
    r.check()


def test_pointwise_net_items_take_the_smaller_noise_and_skip_unread_scores():
    cells = pd.DataFrame({"judge": "j", "item_id": ["a"] * 4 + ["b"] * 4 + ["c"] * 3,
                          "condition": ["baseline", "reworded", "repeat1", "x"] * 2 + ["baseline", "reworded", "x"],
                          "score": [5, 8, 6, 9, 5, 5, 7, 5, 5, 6, 10]})
    got = S.pointwise_net_items(cells, ["x"])[("j", "pointwise", "x")]
    assert got == [4 - 1, 0 - 0]  # a: |9-5| - min(3, 1); b: 0 - min(0, 2); c has no repeat: not counted


def test_a_dollar_budget_prices_each_wave_before_sending_it(monkeypatch):
    import cfbench.judges.pricing as pricing

    # one cent per request for the scripted judge (scripted judges cost 0 in the real price table)
    monkeypatch.setattr(pricing, "request_pricers",
                        lambda judges, batch: {"_why": {}, **{j: (lambda reqs: 0.01 * len(reqs)) for j in judges}})
    r = _run(_params("scripted:jb-seq-slot-a", max_cost_usd=0.35))
    seq = r.summary["sequential"]
    assert seq["spent_usd"] == pytest.approx(0.01 * len(SENT)) and len(SENT) == seq["requests_sent"]
    assert 0.35 - 0.10 < seq["spent_usd"] <= 0.35  # a wave costs 10 cents: three sent, the fourth refused
    assert "max_cost_usd" in seq["stopped_by"] and "USD 0.1000" in seq["stopped_by"]
    findings = r.findings()  # Markdown: two "$" in a paragraph would be set as a formula
    assert "would pass max_cost_usd 0.35" in findings and "$" not in findings


def test_a_dollar_budget_needs_every_judge_priced():
    with pytest.raises(InputError, match="max_cost_usd") as info:
        _run(_params("openai:no-such-model-xyz@http://127.0.0.1:9/v1", max_cost_usd=1.0))
    assert "no-such-model-xyz" in str(info.value) and not SENT


@pytest.mark.parametrize("field,value", [("wave_size", 0), ("max_items", -1), ("max_requests", -1),
                                         ("max_cost_usd", -0.5), ("max_cost_usd", float("nan"))])
def test_bad_sequential_parameters_name_their_field(field, value):
    with pytest.raises(InputError, match=field):
        Params(**{field: value, "sequential": True})


def test_net_items_take_the_smaller_noise_when_repeats_were_sent():
    cues = pd.DataFrame({"judge": "j", "item_id": ["a", "b", "c"], "cue": "x", "num1": 0, "num2": 0,
                         "den": [1, 1, 1], "flips": [1, 1, 0], "noise_flips": [1, 0, 0], "noise_den": [1, 1, 1],
                         "rep_flips": [0, 1, 0], "rep_den": [2, 2, 0]})
    # a: 1 - min(1, 0) = 1; b: 1 - min(0, 0.5) = 1; c has no repeat pair: left out, as in the fixed-n gate
    assert S.net_items(cues) == {("j", "x"): [1.0, 1.0]}


def test_the_figure_and_the_explorer_say_where_each_cell_stopped(real):
    from cfbench.studies.judge_bias.explorer import explorer_pairs

    r, out, _ = real
    k = int(r.tables["sequential_cells"].set_index("cue").loc["authority", "stopped_at_item"])
    fig = r.figures["sequential_sequences"]
    text = " ".join(" ".join([fig._suptitle.get_text()] + [ax.get_title() for ax in fig.axes]).split())
    assert f"authority fail at item {k}" in text and f"verbosity inconclusive after {N_ITEMS} items" in text
    note = " ".join(explorer_pairs(out).notes)
    assert f"x authority: fail at item {k} (" in note and f"x verbosity: inconclusive after {N_ITEMS} items" in note


def test_sequential_is_a_reproduce_override_the_notebook_and_params_accept():
    from cfbench.cli.reproduce import load_config_file, parse_override, project_root

    over = dict([parse_override("sequential", "true"), parse_override("wave_size", "3"),
                 parse_override("max_items", "6"), parse_override("max_requests", "90"),
                 parse_override("max_cost_usd", "2.5")])
    cfg = project_root() / "configs" / "judge_bias" / "smoke.yaml"
    params = Params.from_config(load_config_file(cfg, "judge_bias", overrides=over))
    assert (params.sequential, params.wave_size, params.max_items, params.max_requests,
            params.max_cost_usd) == (True, 3, 6, 90, 2.5)


@pytest.mark.parametrize("sequential", [False, True])
def test_a_pointwise_only_audit_states_its_findings_and_passes_its_checks(sequential):
    # cues: [] with pointwise cues is a valid design (a live pointwise-only run on STAR once crashed in findings
    # on the empty pairwise table); the pointwise gate gets its own summary line
    r = _run(_params("scripted:jb-seq-scoring", cues=(), pointwise_cues=("verbosity", "authority"), wave_size=4,
                     gate_max_score_shift=2.0, sequential=sequential))
    assert len(r.tables["cues"]) == 0 and len(r.tables["pointwise"]) == 2
    from cfbench.studies.judge_bias.metrics import CUE_COLUMNS

    assert list(r.tables["cues"].columns) == ["judge", *CUE_COLUMNS]  # an empty table that names its columns
    text = r.findings()
    assert "No pairwise cue was asked for" in text and "Gate (net |score shift| at most 2 points)" in text
    assert "`authority` `fail`" in text
    r.check()
