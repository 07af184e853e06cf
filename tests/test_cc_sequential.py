"""The contact-center sequential audit (issue 35): decided dimensions get no more requests, an unresponsive
judge never passes, and peeking after every wave keeps the false pass at the level.

The judges here are scripted test doubles registered by this module: they read the transcript's own label
(so they are responsive), and flip on the dimensions named in :data:`BEHAVIOUR`; every request they get is
logged, so the tests count what was sent, not what the tables report.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.core.seeding import unit_interval
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.stats.sequential import BettingCS
from cfbench.studies.contact_center_qa import sequential as S
from cfbench.studies.contact_center_qa.items import iter_items
from cfbench.studies.contact_center_qa.params import Params
from cfbench.studies.contact_center_qa.study import run
from cfbench.studies.contact_center_qa.tables import gate_item_stats, item_stats

#: dimension -> how the test judge answers its variants: "never" flips, "always" flips (the two compared
#: conditions disagree on every item), "half" flips on a seeded 3/4 of the items (3 conditions, 2 of
#: 3 pairs flip: net rate 0.5)
BEHAVIOUR = {"gender": "always", "politeness": "never", "formality": "half"}
LABELS: dict = {}
SENT: list = []  # (item, dimension or "original") of every request the judges received


def _parse(request_id: str) -> tuple[str, str, str, str]:
    """(question, item, dimension, condition) of a plan's request id
    ``qa/<question>/<arm>/<item>/<item>::<dimension>::<condition>/r<k>/t<T>`` (originals: ``<item>::original``)."""
    parts = request_id.split("/")
    variant = parts[4].split("::")
    dim, cond = (variant[1], variant[2]) if len(variant) == 3 else ("original", "original")
    return parts[1], parts[3], dim, cond


def _reply(answer_yes: bool) -> Response:
    return Response(text=json.dumps({"answer": "Yes" if answer_yes else "No", "confidence": 80}),
                    prompt_tokens=10, completion_tokens=5)


def _label_judge(request) -> Response:
    """Answers the item's own label, flipping per :data:`BEHAVIOUR`; logs the request."""
    qid, item, dim, cond = _parse(request.request_id)
    SENT.append((item, dim))
    yes = LABELS[item][qid] == "Yes"
    how = BEHAVIOUR.get(dim, "never")
    flip = how == "always" or (how == "half" and unit_interval("seq-test", item) < 0.75)
    first = cond in ("male", "neutral")  # the first compared condition keeps the label
    return _reply(yes if (not flip or first) else not yes)


def _constant_judge(request) -> Response:
    """Always Yes: never flips, reads nothing."""
    qid, item, dim, cond = _parse(request.request_id)
    SENT.append((item, dim))
    return _reply(True)


register_script("cc-seq-label", _label_judge)
register_script("cc-seq-constant", _constant_judge)


def _params(judge: str, **kw) -> Params:
    base = dict(judges=(judge,), transcripts_path="synthetic", n_items=40, dimensions=tuple(BEHAVIOUR),
                questions=("issue_resolution",), repeats=2, robustness_temperatures=(0.0,), fairness=False,
                coaching=False, n_boot=20, gate_max_net_cfr=0.5, sequential=True, wave_size=2)
    return Params(**(base | kw))


def _run(params: Params):
    LABELS.clear()
    LABELS.update({t.id: dict(t.labels) for t in iter_items(S.walk_params(params))})
    SENT.clear()
    return run(params, progress=False, say_warnings=False, cache=False)


def _sent() -> pd.DataFrame:
    return pd.DataFrame(SENT, columns=["item", "dimension"])


def test_a_decided_dimension_gets_no_request_after_its_stopping_wave():
    p = _params("scripted:cc-seq-label", dimensions=("politeness", "formality"), max_items=12)
    r = _run(p)
    cells = r.tables["sequential_cells"].set_index("dimension")
    assert cells.loc["politeness", "verdict"] == "pass"  # never flips, and the judge answers the labels
    assert cells.loc["formality", "verdict"] == "inconclusive"  # net rate 0.5 sits at the maximum
    items = r.summary["items"]
    assert len(items) == 12  # formality never decides, so the budget is spent
    sent = _sent()
    asked = {d: set(sent.loc[sent["dimension"] == d, "item"]) for d in ("politeness", "formality", "original")}
    wave = int(cells.loc["politeness", "stopped_at_wave"])
    before, after = items[: wave * p.wave_size], items[wave * p.wave_size:]
    assert after, "politeness decided at the last wave: the test would show nothing"
    assert asked["politeness"] == set(before)  # asked about every transcript up to its stopping wave ...
    assert not asked["politeness"] & set(after)  # ... and about none after it
    assert int((sent["dimension"] == "politeness").sum()) == 2 * len(before)  # neutral, polite (original: shared)
    assert asked["formality"] == set(items)  # the undecided one was asked about every transcript
    assert asked["original"] == set(items)  # originals and repeats: the responsiveness and noise baselines
    assert cells.loc["politeness", "items_used"] == len(before)
    assert np.isfinite(cells.loc["formality", "forecast_items"]) or "maximum" in cells.loc["formality", "reason"]
    assert cells.loc["politeness", "requests_used"] == 2 * len(before)  # its own variants' requests, as counted
    assert cells.loc["politeness", "stopped_at_item"] == len(before)
    text = r.findings()  # the sentence says where the cell stopped, read from the table
    assert "Sequential audit" in text and (f"`politeness` pass at transcript {len(before)} (wave {wave}:" in text)
    bad = [k for k, ok in r.invariants().items() if not ok]
    assert not bad  # the run's row and table checks hold on a run whose dimensions stopped at different items


@pytest.mark.parametrize("max_requests", [37, 64])
def test_a_request_budget_is_never_passed_and_the_wave_that_would_pass_it_is_not_sent(max_requests):
    # the requests per transcript are read from what the judge received, not assumed; formality sits at
    # the maximum and never decides, so only the budget stops the walk
    p = _params("scripted:cc-seq-label", dimensions=("formality",), max_items=40, max_requests=max_requests)
    r = _run(p)
    sent = len(SENT)
    per_transcript = sent / len(r.summary["items"])
    assert sent <= max_requests  # never past the budget
    assert sent + p.wave_size * per_transcript > max_requests  # the next wave would have passed it
    assert len(r.summary["items"]) < 40
    seq = r.summary["sequential"]
    assert seq["requests_sent"] == sent and "max_requests" in seq["stopped_by"]
    row = r.tables["sequential_cells"].iloc[0]
    assert row["verdict"] == "inconclusive" and "budget" in row["reason"]
    assert "at its budget" in r.findings()


def test_the_forecast_requests_are_the_forecast_items_left_times_the_cell_requests_per_transcript():
    p = _params("scripted:cc-seq-label", dimensions=("formality",), max_items=10, gate_max_net_cfr=0.3)
    row = _run(p).tables["sequential_cells"].iloc[0]
    assert row["verdict"] == "inconclusive" and np.isfinite(row["forecast_items"])
    per = row["requests_used"] / 10
    assert row["forecast_requests"] == pytest.approx((row["forecast_items"] - row["items_used"]) * per)
    assert row["requests_used"] == int((_sent()["dimension"] == "formality").sum())


def test_a_dollar_budget_needs_every_judge_priced():
    with pytest.raises(InputError, match="max_cost_usd"):
        _run(_params("openai:no-such-model-xyz", dimensions=("formality",), max_cost_usd=1.0))


def test_a_dollar_budget_prices_each_wave_before_sending_it():
    from cfbench.judges.pricing import estimate_from_chars, load_prices
    from cfbench.studies.contact_center_qa.requests import plan_for

    prices = S.judge_prices(["openai:gpt-4o-mini", "scripted:x"], batch=True)
    assert prices["scripted:x"]([]) == 0.0
    p = _params("scripted:cc-seq-label", dimensions=("formality",), n_items=1)
    t = next(iter(iter_items(p)))
    _, plan = plan_for(p, [t], progress=False)
    reqs = plan.requests["scripted:cc-seq-label"]
    chars = sum(len(m["role"]) + len(m["content"]) for q in reqs for m in q.messages)
    want = estimate_from_chars("gpt-4o-mini", len(reqs), chars, sum(q.config.max_tokens for q in reqs),
                               load_prices(), batch=True)["cost"]["total_usd"]
    assert prices["openai:gpt-4o-mini"](reqs) == pytest.approx(want) and want > 0
    audit = S.SequentialAudit(judges=["scripted:cc-seq-label"], dimensions=["formality"], max_net=0.1,
                              max_cost_usd=2.5 * want, prices={"scripted:cc-seq-label": prices["openai:gpt-4o-mini"]})
    assert audit.admit([plan]) and audit.admit([plan])
    assert not audit.admit([plan]) and "max_cost_usd" in audit.stopped_by  # the third would pass 2.5 x
    assert audit.spent_usd == pytest.approx(2 * want)


def test_the_run_stops_when_every_cell_is_decided():
    p = _params("scripted:cc-seq-label", dimensions=("gender",), gate_max_net_cfr=0.2, max_items=20)
    r = _run(p)
    row = r.tables["sequential_cells"].iloc[0]
    assert row["verdict"] == "fail" and row["cs_low"] > 0.2  # flips on every item: shown over the maximum
    n = len(r.summary["items"])
    assert n < 20 and n == int(row["stopped_at_wave"]) * p.wave_size == r.summary["sequential"]["n_walked"]
    assert set(_sent()["item"]) == set(r.summary["items"])  # nothing was sent for a transcript after the stop
    assert "stopped after" in r.findings()


def test_an_unresponsive_judge_is_never_pass_and_keeps_being_asked():
    p = _params("scripted:cc-seq-constant", dimensions=("politeness",), max_items=12)
    r = _run(p)
    row = r.tables["sequential_cells"].iloc[0]
    assert row["verdict"] != "pass"
    assert row["cs_high"] < p.gate_max_net_cfr  # the bound alone would have passed it
    assert "responsiveness not shown" in row["reason"]
    sent = _sent()
    assert set(sent.loc[sent["dimension"] == "politeness", "item"]) == set(r.summary["items"])
    assert len(r.summary["items"]) == 12


def _peeked_false_pass(n_audits: int, *, true_net: float, max_net: float, seed: int, waves: int, wave: int,
                       responsive: bool = True) -> float:
    """Share of simulated audits whose cell passes at some look (a look after every wave)."""
    rng = np.random.default_rng(seed)
    noise = 0.05
    passed = 0
    for _ in range(n_audits):
        audit = S.SequentialAudit(judges=["j"], dimensions=["d"], max_net=max_net, wave_size=wave)
        for _ in range(waves):
            d = (rng.random(wave) < noise + true_net).astype(float) - (rng.random(wave) < noise)
            audit.decide({("j", "d"): d.tolist()}, {"j": (responsive, "")})
            if audit.done:
                break
        passed += audit.cells[("j", "d")].verdict == "pass"
    return passed / n_audits


def test_peeking_after_every_wave_keeps_the_false_pass_at_the_maximum_under_5_percent():
    # true net flip rate exactly the maximum: every pass is false
    # (300 audits, 30 looks of 5 items; the sequence's own bound is 2.5 %: one-sided, alpha / 2)
    fp = _peeked_false_pass(300, true_net=0.10, max_net=0.10, seed=1, waves=30, wave=5)
    assert fp <= 0.05
    # the same loop passes a clean judge often (the sequence is not just never passing) ...
    power = _peeked_false_pass(60, true_net=0.0, max_net=0.10, seed=2, waves=30, wave=5)
    assert power >= 0.5
    # ... and never an unresponsive one
    assert _peeked_false_pass(30, true_net=0.0, max_net=0.10, seed=3, waves=30, wave=5, responsive=False) == 0


def test_a_fixed_n_interval_peeked_the_same_way_would_fail_this_check():
    # the control: a Wald interval looked at after every wave of the same data passes far more than 5 %,
    # so the check above can fail
    rng = np.random.default_rng(1)
    passed = 0
    for _ in range(300):
        vals: list = []
        for _ in range(30):
            vals += ((rng.random(5) < 0.15).astype(float) - (rng.random(5) < 0.05)).tolist()
            x = np.asarray(vals)
            if x.std(ddof=1) > 0 and x.mean() + 1.96 * x.std(ddof=1) / np.sqrt(len(x)) < 0.10:
                passed += 1
                break
    assert passed / 300 > 0.10


def test_the_cell_sequence_is_the_betting_sequence_of_the_item_values():
    audit = S.SequentialAudit(judges=["j"], dimensions=["d"], max_net=0.1, wave_size=3)
    rng = np.random.default_rng(5)
    vals = ((rng.random(30) < 0.2).astype(float) - (rng.random(30) < 0.05)).tolist()
    for k in range(0, 30, 3):
        audit.decide({("j", "d"): vals[k:k + 3]}, {"j": (True, "")})
    ref = BettingCS(alpha=0.05, lo=-1, hi=1)  # one cell: the whole alpha
    ref.update(vals[: audit.cells[("j", "d")].cs.n])
    assert audit.cells[("j", "d")].cs.bounds() == pytest.approx(ref.bounds())
    assert audit.cell_alpha == 0.05
    assert S.SequentialAudit(judges=["a", "b"], dimensions=["x", "y", "z"], max_net=0.1).cell_alpha == \
        pytest.approx(0.05 / 6)


def test_gate_item_stats_are_item_stats_frames():
    from cfbench.studies.contact_center_qa.study import run as run_fixed

    r = run_fixed(Params(n_items=2, dimensions=("politeness",), coaching=False, fairness=False, n_boot=10,
                         questions=("issue_resolution",)), progress=False, say_warnings=False, cache=False)
    rows = r.frames["rows"]
    lean, full = gate_item_stats(rows), item_stats(rows)
    assert lean.names()
    for name in lean.names():
        pd.testing.assert_frame_equal(lean.frame(name).reset_index(drop=True), full.frame(name).reset_index(drop=True))


def test_net_flip_items_subtracts_the_repeat_share_per_item():
    from cfbench.metrics.state import ItemStatistics

    s = ItemStatistics()
    s.add("cfr", pd.DataFrame({"judge": ["j", "j", "j"], "arm": ["baseline", "baseline", "fairness"],
                               "dimension": ["d", "d", "d"], "item_id": ["a", "b", "a"], "stat": [2.0, 0.0, 1.0],
                               "n_pairs": [4.0, 2.0, 4.0], "n_units": [1.0, 1.0, 1.0],
                               "n_pairs_all": [4.0, 2.0, 4.0]}))
    s.add("rob/robustness/qa/cfr", pd.DataFrame({"judge": ["j", "j"], "item_id": ["a", "c"], "stat": [1.0, 0.0],
                                                 "n_pairs": [2.0, 2.0], "n_units": [1.0, 1.0],
                                                 "n_pairs_all": [2.0, 2.0]}))
    n = S.net_flip_items(s)
    # item a: 2/4 - 1/2 = 0; item b has no repeat pair, item c no counterfactual pair: both left out
    assert n.to_dict("records") == [{"judge": "j", "dimension": "d", "item_id": "a", "d": 0.0}]


@pytest.mark.parametrize("field,value", [("wave_size", 0), ("max_items", -1), ("max_requests", -1),
                                         ("max_cost_usd", -0.5), ("max_cost_usd", float("nan"))])
def test_bad_sequential_parameters_name_their_field(field, value):
    with pytest.raises(InputError, match=field):
        Params(**{field: value, "sequential": True})


@pytest.mark.parametrize("field,value", [("max_requests", 100), ("max_cost_usd", 1.0)])
def test_a_budget_without_a_sequential_run_is_refused_not_ignored(field, value):
    with pytest.raises(InputError, match=f"{field}.*sequential"):
        Params(**{field: value})
    assert getattr(Params(sequential=True, **{field: value}), field) == value


def test_sequential_is_a_reproduce_override_the_notebook_and_params_accept():
    # `cfbench reproduce --study contact_center_qa -p sequential true -p wave_size 2`: the values are read as
    # YAML, checked against the notebook's parameters cell and Params, and reach Params (the full CLI run was
    # made by hand, docs/sequential.md)
    from cfbench.cli.reproduce import load_config_file, parse_override, project_root

    over = dict([parse_override("sequential", "true"), parse_override("wave_size", "2"),
                 parse_override("max_items", "4"), parse_override("max_requests", "300"),
                 parse_override("max_cost_usd", "2.5")])
    cfg = project_root() / "configs" / "contact_center_qa" / "smoke.yaml"
    params = Params.from_config(load_config_file(cfg, "contact_center_qa", overrides=over))
    assert (params.sequential, params.wave_size, params.max_items) == (True, 2, 4)
    assert (params.max_requests, params.max_cost_usd) == (300, 2.5)


def test_the_figure_draws_each_cells_sequence_and_the_explorer_says_where_cells_stopped(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from cfbench.studies.contact_center_qa.explorer import explorer_pairs

    p = _params("scripted:cc-seq-label", dimensions=("politeness", "formality"), max_items=12)
    LABELS.clear()
    LABELS.update({t.id: dict(t.labels) for t in iter_items(S.walk_params(p))})
    r = run(p, tmp_path / "run", progress=False, say_warnings=False, cache=False)
    cells = r.tables["sequential_cells"].set_index("dimension")
    waves = r.tables["sequential_waves"]
    pol = waves[waves["dimension"] == "politeness"]
    # one bound per wave it took items in, narrowing, the last one the cell's own
    assert list(pol["items"]) == [2 * k for k in range(1, len(pol) + 1)]
    assert (pol["cs_high"].diff().dropna() <= 1e-12).all() and (pol["cs_low"].diff().dropna() >= -1e-12).all()
    assert pol["cs_high"].iloc[-1] == pytest.approx(cells.loc["politeness", "cs_high"])
    fig = r.figures["sequential_sequences"]
    text = " ".join(" ".join([fig._suptitle.get_text()] + [ax.get_title() for ax in fig.axes]).split())
    assert S.CS_METHOD in text  # the method, from the table's ci_method
    n_lo, n_hi = int(cells["items_used"].min()), int(cells["items_used"].max())
    assert f"over {n_lo}-{n_hi} items" in text and f"{(1 - 0.05 / 2) * 100:g}% intervals" in text
    k = int(cells.loc["politeness", "stopped_at_item"])
    assert f"politeness pass at item {k}" in text.lower() and "formality inconclusive after 12 items" in text.lower()
    panel = next(ax for ax in fig.axes if "politeness" in ax.get_title().lower())
    xs = {round(float(line.get_xdata()[0]), 6) for line in panel.lines if len(set(line.get_xdata())) == 1}
    ys = {round(float(line.get_ydata()[0]), 6) for line in panel.lines if len(set(line.get_ydata())) == 1}
    assert k in xs and p.gate_max_net_cfr * 100 in ys  # the stopping point and the maximum are drawn
    pairs = explorer_pairs(tmp_path / "run")
    note = " ".join(pairs.notes)
    assert f"politeness: pass at item {k} (" in note and "formality: inconclusive after 12 items" in note
    facet = dict(zip(pairs.facets["dimension"], pairs.facets["sequential cell"]))
    assert facet["politeness"] == f"pass at item {k}" and facet["formality"] == "inconclusive after 12 items"
