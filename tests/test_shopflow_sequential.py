"""ShopFlow's sequential audit (issue 35): a decided gap cell's stratum gets no more requests, a judge whose
scores do not separate ready from needs-review requests never passes, and a request budget is never passed.

The judges are scripted test doubles registered here; every request they receive is logged, so the tests
count what was sent, not what the tables report.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.studies.shopflow import sequential as S
from cfbench.studies.shopflow.study import Params, run

N_PER_STRATUM = 60
SENT: list = []  # (pair_id, variant) of every request the judges received


def _ready(pair_id: str) -> bool:
    return int(pair_id[1:]) % 2 == 0


def _reply(p: float) -> Response:
    return Response(text="Yes" if p >= 0.5 else "No", top_logprobs={"Yes": math.log(p), "No": math.log(1 - p)},
                    prompt_tokens=10, completion_tokens=1)


def _split_judge(request) -> Response:
    """Ready pairs: both wordings served (gap 0). Needs-review pairs: the formal wording held back, the
    conversational one served on every other pair (gap -1 on half: mean -0.5, the maximum's negative)."""
    pair_id, variant = request.request_id.split("/")[-2:]
    SENT.append((pair_id, variant))
    if _ready(pair_id):
        return _reply(0.9)
    k = int(pair_id[1:]) // 2
    return _reply(0.9 if (variant == "conversational" and k % 2 == 0) else 0.1)


def _constant_judge(request) -> Response:
    """P(ready) 0.9 for everything: never a gap, reads nothing."""
    SENT.append(tuple(request.request_id.split("/")[-2:]))
    return _reply(0.9)


register_script("sf-seq-split", _split_judge)
register_script("sf-seq-constant", _constant_judge)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sfseq")
    rows = []
    for i in range(2 * N_PER_STRATUM):
        for v in ("formal", "conversational"):
            rows.append({"pair_id": f"p{i:03d}", "variant": v, "expected_ready": _ready(f"p{i:03d}"),
                         "channel": "chat", "evidence_passed": True, "request": f"request {i} ({v})",
                         "reply": f"reply {i} ({v})"})
    (d / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (d / "contract.yaml").write_text("primary_metric: equal_opportunity\nmax_tpr_gap: 0.5\nmax_fpr_gap: 0.5\n"
                                     "min_positive_per_slice: 1\nmin_negative_per_slice: 1\n", encoding="utf-8")
    return d


def _run(files, judge: str, out=None, **kw):
    SENT.clear()
    p = Params(judge=judge, pairs_path=str(files / "pairs.jsonl"), contract_path=str(files / "contract.yaml"),
               sequential=True, **({"wave_size": 4} | kw))
    return run(p, out, progress=False)


def _sent() -> pd.DataFrame:
    f = pd.DataFrame(SENT, columns=["pair_id", "variant"])
    return f.assign(ready=f["pair_id"].map(_ready))


@pytest.fixture(scope="module")
def split(files, tmp_path_factory):
    """One run of the split judge written to a folder, and what it was sent."""
    out = tmp_path_factory.mktemp("sfseq-run")
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs before conftest's per-test cache
        mp.setenv("CFBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("sfseq-cache")))
        r = _run(files, "scripted:sf-seq-split", out)
    return r, out, _sent()


def test_a_decided_gap_cell_gets_no_request_after_its_stopping_wave(split):
    r, _, sent = split
    cells = r.tables["judged_sequential_cells"].set_index("gap")
    assert cells.loc["tpr_gap", "verdict"] == "pass"  # gap 0 on the ready pairs, responsive judge
    assert cells.loc["fpr_gap", "verdict"] == "inconclusive"  # mean gap -0.5 sits at the maximum's negative
    ready_pairs = sorted(set(sent.loc[sent["ready"], "pair_id"]))  # (calls run concurrently: sent order varies)
    review_pairs = sorted(set(sent.loc[~sent["ready"], "pair_id"]))
    k = int(cells.loc["tpr_gap", "stopped_at_item"])
    assert k < N_PER_STRATUM  # it did stop early ...
    assert ready_pairs == [f"p{2 * i:03d}" for i in range(k)]  # ... asked about its first k pairs only
    assert int(sent["ready"].sum()) == 2 * k  # two wordings each, nothing after the stop
    assert len(review_pairs) == N_PER_STRATUM  # the undecided cell was asked about every pair of its stratum
    assert cells.loc["tpr_gap", "items_used"] == k and cells.loc["tpr_gap", "requests_used"] == 2 * k
    assert cells.loc["fpr_gap", "requests_used"] == 2 * N_PER_STRATUM
    assert r.summary["sequential"]["requests_sent"] == len(sent)
    # the fixed-n tables read the pairs the walk judged
    assert r.summary["judged"]["n_pairs"] == k + N_PER_STRATUM
    text = r.findings()
    assert "Sequential audit" in text and f"tpr_gap pass at pair {k} (wave" in text
    # the run's checks hold (the seed fixture's expected outcome is the shipped contract's, not this test's)
    assert not [name for name, ok in r.invariants().items() if not ok and not name.startswith("seed fixture:")]


def test_a_constant_judge_never_passes_and_keeps_being_asked(files):
    r = _run(files, "scripted:sf-seq-constant", wave_size=12)
    cells = r.tables["judged_sequential_cells"].set_index("gap")
    assert set(cells["verdict"]) == {"inconclusive"}  # no gap at all, but the scores separate nothing
    assert "responsiveness not shown" in cells.loc["tpr_gap", "reason"]
    assert cells.loc["tpr_gap", "cs_high"] < 0.5  # the sequence alone would have passed
    assert len(SENT) == 4 * N_PER_STRATUM  # every pair, both wordings: no cell was decided


@pytest.mark.parametrize("max_requests", [18, 40])
def test_a_request_budget_is_never_passed(files, max_requests):
    r = _run(files, "scripted:sf-seq-constant", max_requests=max_requests)
    assert len(SENT) <= max_requests and len(SENT) > max_requests - 8  # a wave is 4 pairs x 2 wordings
    assert "max_requests" in r.summary["sequential"]["stopped_by"]
    assert "budget" in r.tables["judged_sequential_cells"]["reason"].iloc[0]


def test_max_items_caps_the_pairs_walked(files):
    r = _run(files, "scripted:sf-seq-constant", max_items=10)
    assert len({p for p, _ in SENT}) == 10 and r.summary["sequential"]["budget"] == 10


def test_a_dollar_budget_prices_each_wave_before_sending_it(files, monkeypatch):
    import cfbench.judges.pricing as pricing

    # one cent per request (scripted judges cost 0 in the real price table); a wave is 4 pairs x 2 wordings
    monkeypatch.setattr(pricing, "request_pricers",
                        lambda judges, batch: {"_why": {}, **{j: (lambda reqs: 0.01 * len(reqs)) for j in judges}})
    r = _run(files, "scripted:sf-seq-constant", max_cost_usd=0.30)
    seq = r.summary["sequential"]
    assert len(SENT) == seq["requests_sent"] == 24 and seq["spent_usd"] == pytest.approx(0.01 * len(SENT))
    assert "max_cost_usd 0.3" in seq["stopped_by"] and "USD 0.0800" in seq["stopped_by"]  # the fourth wave refused
    assert "budget" in r.tables["judged_sequential_cells"]["reason"].iloc[0]


def test_a_scripted_judge_costs_nothing_under_a_dollar_budget(files):
    r = _run(files, "scripted:sf-seq-constant", wave_size=12, max_cost_usd=0.01)
    seq = r.summary["sequential"]
    assert seq["spent_usd"] == 0.0 and not seq["stopped_by"] and len(SENT) == 4 * N_PER_STRATUM


def test_a_dollar_budget_needs_the_judge_priced(files):
    with pytest.raises(InputError, match="max_cost_usd") as info:
        _run(files, "openai:no-such-model-xyz@http://127.0.0.1:9/v1", max_cost_usd=1.0)
    assert info.value.field == "max_cost_usd" and "no-such-model-xyz" in str(info.value)
    assert "\n" not in str(info.value) and not SENT


@pytest.mark.parametrize("field,value", [("wave_size", 0), ("max_items", -1), ("max_requests", -1),
                                         ("max_requests", 2.5), ("max_cost_usd", -0.5),
                                         ("max_cost_usd", float("nan")), ("max_cost_usd", "1")])
def test_bad_sequential_parameters_name_their_field(field, value):
    with pytest.raises(InputError, match=field):
        Params(**{field: value, "sequential": True})


@pytest.mark.parametrize("field,value", [("max_requests", 100), ("max_items", 10), ("max_cost_usd", 1.5)])
def test_a_budget_without_a_sequential_run_is_refused_not_ignored(field, value):
    with pytest.raises(InputError, match=f"{field}.*sequential"):
        Params(**{field: value})


def test_gap_items_are_the_matched_pair_gaps_of_each_stratum():
    rows = pd.DataFrame({"pair_id": ["a", "a", "b", "b", "c", "c"], "variant": ["f", "c"] * 3,
                         "expected_ready": [True, True, False, False, True, True], "channel": "chat",
                         "evidence_passed": True})
    parsed = pd.DataFrame({"request_id": [f"v/x/{p}/{v}" for p, v in zip(rows["pair_id"], rows["variant"])],
                           "score": [0.9, 0.2, 0.1, 0.8, 0.9, 0.9], "parse_ok": True})
    import cfbench.studies.shopflow.readiness as R

    old, R.request_id = R.request_id, (lambda p, v, prompt: f"v/{prompt}/{p}/{v}")
    try:
        values, _ = S.gap_items(rows, parsed, prompt="x", variants=["f", "c"], threshold=0.5)
    finally:
        R.request_id = old
    assert values == {("tpr_gap",): [1.0, 0.0], ("fpr_gap",): [-1.0]}


def test_the_figure_and_the_explorer_say_where_each_cell_stopped(split):
    from cfbench.studies.shopflow.explorer import explorer_pairs

    r, out, _ = split
    k = int(r.tables["judged_sequential_cells"].set_index("gap").loc["tpr_gap", "stopped_at_item"])
    fig = r.figures["judged_sequential_sequences"]
    text = " ".join(" ".join([fig._suptitle.get_text()] + [ax.get_title() for ax in fig.axes]).split())
    assert f"tpr_gap pass at pair {k}" in text and f"fpr_gap inconclusive after {N_PER_STRATUM} pairs" in text
    assert "betting confidence sequence" in text
    panel = next(ax for ax in fig.axes if "tpr_gap" in ax.get_title())
    xs = {round(float(line.get_xdata()[0]), 6) for line in panel.lines if len(set(line.get_xdata())) == 1}
    ys = {round(float(line.get_ydata()[0]), 6) for line in panel.lines if len(set(line.get_ydata())) == 1}
    assert k in xs and {50.0, -50.0} <= ys  # the stopping point and both sides of the two-sided gate
    note = " ".join(explorer_pairs(out).notes)
    assert f"tpr_gap: pass at pair {k} (" in note and f"fpr_gap: inconclusive after {N_PER_STRATUM} pairs" in note


def test_sequential_is_a_reproduce_override_the_notebook_and_params_accept():
    # `cfbench reproduce --study shopflow -p sequential true -p wave_size 2 ...`: read as YAML, checked against
    # the notebook's parameters cell and Params
    from cfbench.cli.reproduce import load_config_file, parse_override, project_root

    over = dict([parse_override("sequential", "true"), parse_override("wave_size", "2"),
                 parse_override("max_items", "20"), parse_override("max_requests", "30"),
                 parse_override("max_cost_usd", "2.5")])
    cfg = project_root() / "configs" / "shopflow" / "smoke.yaml"
    params = Params.from_config(load_config_file(cfg, "shopflow", overrides=over))
    assert (params.sequential, params.wave_size, params.max_items, params.max_requests,
            params.max_cost_usd) == (True, 2, 20, 30, 2.5)
