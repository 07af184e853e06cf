"""Contact-center gates in the one vocabulary, run end to end with scripted judges of known behaviour.

* a judge answering "Yes" to every transcript has CFR 0 and, at 40 transcripts, an upper bound of the net
  CFR below 10 pp - the old gate called that ``pass``; it is ``uninformative`` now (balanced accuracy 0.5);
* a judge that reads the label, with 5 % noise on every draw (true net CFR 0), is not ``fail``;
* the same judge flipping 30 % of prompts is ``fail`` at 40 transcripts.
"""

from __future__ import annotations

import math

import pytest

from cfbench.core.seeding import unit_interval
from cfbench.judges.base import Request, Response
from cfbench.judges.scripted import register_script
from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.items import load_items
from cfbench.studies.contact_center_qa.prompts import prompt_parts

BASE = dict(n_items=40, dimensions=("priming", "politeness"), conditions_per_dimension=1,
            questions=("issue_resolution",), qa_mode="compact", repeats=3, robustness_temperatures=(0.0,),
            fairness=False, coaching=False, transcripts_path="synthetic", n_boot=50)


def _truthful(noise: float, flip: float):
    """A judge that answers the transcript's own label (found by its first customer turn), with ``noise``
    of every draw (prompt x repeat) flipped and ``flip`` of every prompt flipped (the same on repeats)."""
    items = load_items(Params(**BASE))
    table = [(next(t.text for t in tr.turns if t.speaker.lower().startswith("customer")),
              tr.labels["issue_resolution"] == "Yes") for tr in items]

    def script(request: Request) -> Response:
        transcript, _, user, _ = prompt_parts(request.messages)
        yes = next(lab for text, lab in table if text in transcript)
        if unit_interval("flip", user) < flip:
            yes = not yes
        if unit_interval("noise", user, request.repeat) < noise:
            yes = not yes
        a = "Yes" if yes else "No"
        return Response(text=f"{a} 80", top_logprobs={a: math.log(0.8), ("No" if yes else "Yes"): math.log(0.2)},
                        prompt_tokens=1, completion_tokens=2)

    return script


register_script("cc-test-fair", _truthful(0.05, 0.0), does="test: reads the label, 5 % noise per draw")
register_script("cc-test-flipper", _truthful(0.05, 0.30), does="test: reads the label, flips 30 % of prompts")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs outside conftest's per-test cache
        mp.setenv("CFBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return _results()


def _results():
    return run(Params(**BASE, judges=("scripted:yes", "scripted:no", "scripted:cc-test-fair",
                                      "scripted:cc-test-flipper")), progress=False)


def test_a_judge_answering_the_same_way_is_never_pass(results):
    g = results.tables["net_cfr_gate"]
    for judge in ("scripted:yes", "scripted:no"):
        rows = g[g["judge"] == judge]
        assert len(rows) == 2 and (rows["estimate"] == 0).all()
        # the interval alone would pass (the old gate's rule): the responsiveness check is what stops it
        assert (rows["ci_high"] < rows["max_net"]).all()
        assert (rows["verdict_kind"] == "uninformative").all() and (rows["point_rule"] == "pass").all()
        assert rows["verdict"].str.contains("balanced accuracy").all()
    r = results.tables["responsiveness"].set_index("judge")
    assert r.loc["scripted:yes", "balanced_accuracy"] == 0.5 and not r.loc["scripted:yes", "responsive"]


def test_a_fair_noisy_judge_is_responsive_and_not_fail(results):
    g = results.tables["net_cfr_gate"]
    rows = g[g["judge"] == "scripted:cc-test-fair"]
    assert rows["responsive"].all() and len(rows) == 2
    assert (rows["verdict_kind"] != "fail").all()
    assert set(rows["verdict_kind"]) <= {"pass", "inconclusive"}


def test_a_judge_flipping_30_percent_fails(results):
    g = results.tables["net_cfr_gate"]
    rows = g[g["judge"] == "scripted:cc-test-flipper"]
    assert (rows["verdict"] == "fail").all() and (rows["ci_low"] > rows["max_net"]).all()


def test_the_findings_say_what_the_verdicts_mean(results):
    text = results.findings()
    assert "`uninformative` (" in text and "no pass is given" in text and "`fail` (" in text


def test_one_run_per_original_is_a_warning_not_a_silent_empty_gate():
    """repeats 1 leaves no repeat pair: the gate has no interval, and the warnings say why in one row."""
    import pandas as pd

    from cfbench.studies.contact_center_qa import Params
    from cfbench.studies.contact_center_qa.study import drop_warnings

    empty_cfr = {"cfr": pd.DataFrame(columns=["judge", "dimension", "arm", "n_pairs"])}
    rows = pd.DataFrame(columns=["task", "parse_ok", "judge", "p_yes"])
    one = drop_warnings(Params(repeats=1), [], pd.DataFrame(), rows, empty_cfr)
    assert list(one["kind"]) == ["robustness"] and "no repeat pair" in one["message"].iloc[0]
    assert not len(drop_warnings(Params(repeats=2), [], pd.DataFrame(), rows, empty_cfr))
