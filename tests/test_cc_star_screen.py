"""The STAR arm's margin screen (``real_margin``, ``real_skip``; .screen): which dialogues go on to the variants,
what the screen records, where its responsiveness check is taken, and that an unresponsive judge earns no
pass by being sure of everything."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.core.seeding import unit_interval
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.prompts import prompt_parts
from cfbench.studies.contact_center_qa.screen import SCREEN_FACTOR
from cfbench.studies.contact_center_qa.study import real_dialogues
from star_util import need_star

CALLS: list[str] = []


def _reply(p: float) -> Response:
    answer = "Yes" if p > 0.5 else "No"
    lp = {"Yes": math.log(p), "No": math.log(1 - p)}
    return Response(text=f"{answer} {int(100 * max(p, 1 - p))}", top_logprobs=lp, prompt_tokens=10,
                    completion_tokens=2)


def _graded(request):
    """Test double: P(Yes) from a hash of the customer's turns, from 0.05 to 0.95 (so some dialogues lie near 0.5)."""
    transcript, _, user, _ = prompt_parts(request.messages)
    CALLS.append(user)
    customer = "\n".join(ln for ln in transcript.splitlines() if ln.startswith("Customer:"))
    return _reply(0.05 + 0.9 * unit_interval("screen-test", customer))


def _sure_yes(request):
    """Test double: Yes with P(Yes) 0.99 to every dialogue - sure of everything, reading nothing."""
    CALLS.append(prompt_parts(request.messages)[2])
    return _reply(0.99)


register_script("cc-screen-graded", _graded)
register_script("cc-screen-sure-yes", _sure_yes)

BASE = Params(judges=("scripted:cc-screen-graded",), n_items=2, dimensions=("disability",),
              conditions_per_dimension=1, questions=("issue_resolution",), qa_mode="compact", repeats=2,
              paraphrases=0, robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=50)


def _run(**kw):
    CALLS.clear()
    return run(dataclasses.replace(BASE, real_path=str(need_star()), **kw), progress=False, cache=False)


def test_only_the_dialogues_the_judge_is_sure_of_go_on_and_every_screened_one_is_recorded():
    r = _run(real_items=4, real_margin=0.3, real_skip=2)
    sc = r.tables["star_screen"]
    order = [t.id for t in real_dialogues(need_star(), 2 + 4 * SCREEN_FACTOR)][2:]
    # the screen walks the balanced order after the skipped dialogues, and stops once 4 are kept
    assert list(sc["item_id"]) == order[:len(sc)]
    assert (sc["kept"] == (sc["margin"] >= 0.3)).all() and (sc["threshold"] == 0.3).all()
    assert (sc.loc[~sc["kept"], "why"] == "P(Yes) within 0.3 of 0.5").all() and (sc.loc[sc["kept"], "why"] == "").all()
    kept = list(sc.loc[sc["kept"], "item_id"])
    assert r.summary["star"]["items"] == kept and (len(kept) == 4 or len(sc) == 4 * SCREEN_FACTOR)
    assert sc["kept"].iloc[-1] or len(sc) == 4 * SCREEN_FACTOR  # it stopped on the 4th kept one
    assert 0 < (~sc["kept"]).sum()  # this double puts some dialogues near 0.5: the screen had work to do
    # the gate rests on the kept dialogues, the accuracy (so the responsiveness) on every screened one
    assert int(r.tables["star_cfr"]["n_items"].max()) == len(kept)
    assert int(r.tables["star_net_cfr_gate"]["n_items"].iloc[0]) == len(kept)
    acc = r.tables["star_accuracy"].iloc[0]
    assert int(acc["n_items"]) == len(sc)
    resp = r.tables["star_responsiveness"].iloc[0]
    labels = sc["label"].value_counts()
    assert (resp["n_yes_items"], resp["n_no_items"]) == (labels.get("Yes", 0), labels.get("No", 0))
    s = r.summary["star"]["screen"]
    assert (s["screened"], s["kept"], s["skipped"], s["margin"]) == (len(sc), len(kept), 2, 0.3)
    assert "screened" in r.header() and "at least 0.3 from 0.5" in r.header()
    assert "Screen (`star_screen`)" in r.findings()
    r.check()


def test_a_kept_original_is_asked_once_the_arm_reads_it_from_the_cache(tmp_path):
    from cfbench.judges.cache import ResponseCache

    CALLS.clear()
    cache = ResponseCache(tmp_path / "responses.sqlite")
    r = run(dataclasses.replace(BASE, real_path=str(need_star()), real_items=3, real_margin=0.3), progress=False,
            cache=cache)
    sc = r.tables["star_screen"]
    main = r.summary["n_requests"]
    # every screened original once, then per kept dialogue only its variant and its repeat
    n_star = len(sc) + 2 * int(sc["kept"].sum())
    assert len(CALLS) == main + n_star
    assert r.summary["star"]["n_requests"] == n_star


def test_a_judge_sure_of_everything_and_reading_nothing_gets_no_pass():
    """Every dialogue passes the screen and no verdict moves, yet the gate says uninformative: its balanced
    accuracy over the screened dialogues (both classes, by the customers' answers) is 0.5."""
    r = _run(judges=("scripted:cc-screen-sure-yes",), real_items=6, real_margin=0.2)
    sc = r.tables["star_screen"]
    assert sc["kept"].all() and len(sc) == 6
    gate = r.tables["star_net_cfr_gate"].iloc[0]
    assert float(gate["estimate"]) == 0.0
    assert gate["verdict"].startswith("uninformative")
    assert float(r.tables["star_responsiveness"]["balanced_accuracy"].iloc[0]) == 0.5


def test_no_dialogue_sure_enough_is_one_warning_not_a_gate():
    r = _run(real_items=2, real_margin=0.49)
    assert "star_net_cfr_gate" not in r.tables
    w = r.tables["warnings"]
    (msg,) = w.loc[w["kind"] == "real_arm", "message"]
    assert "at least 0.49 from 0.5" in msg and f"{2 * SCREEN_FACTOR} STAR dialogues screened" in msg


@pytest.mark.parametrize("field, value, match", [
    ("real_margin", 0.5, "up to, not including, 0.5"), ("real_margin", -0.1, "from 0"),
    ("real_margin", float("nan"), "from 0"), ("real_margin", True, "from 0"),
    ("real_skip", -1, "0 or more")])
def test_screen_parameters_are_checked(field, value, match):
    with pytest.raises(InputError, match=match) as e:
        dataclasses.replace(BASE, **{field: value})
    assert e.value.field == field


def test_the_screen_needs_the_first_tokens_p_yes():
    with pytest.raises(InputError, match="compact") as e:
        dataclasses.replace(BASE, qa_mode="json", real_margin=0.1)
    assert e.value.field == "real_margin"


def test_real_dialogues_takes_what_there_is_above_the_floor(tmp_path):
    star = need_star()
    every = real_dialogues(star, 10)
    assert [t.id for t in real_dialogues(star, 10, at_least=4)] == [t.id for t in every]
    with pytest.raises(InputError, match="100000"):
        real_dialogues(star, 200000, at_least=100000)
    assert pd.Series([t.labels["issue_resolution"] for t in every]).value_counts().to_dict() == {"Yes": 5, "No": 5}


def test_plan_only_plans_the_screen_and_says_why_no_variant(monkeypatch):
    monkeypatch.setenv("CFBENCH_MODE", "plan")
    CALLS.clear()
    r = run(dataclasses.replace(BASE, real_path=str(need_star()), real_items=2, real_margin=0.2), progress=False,
            cache=False)
    assert not CALLS  # nothing was asked
    w = r.tables["warnings"]
    (msg,) = w.loc[w["kind"] == "real_arm", "message"]
    assert msg.startswith("real-dialogue arm: plan only") and f"originals of {2 * SCREEN_FACTOR} STAR" in msg


def test_the_screened_tables_read_like_the_arms_other_tables():
    """The accuracy tables and Table 2 the screen rebuilds carry the arm's source and the columns they have
    without a screen."""
    plain = _run(real_items=2)
    screened = _run(real_items=2, real_margin=0.01)
    for name in ("star_accuracy", "star_accuracy_by_label", "star_table2"):
        assert list(screened.tables[name].columns) == list(plain.tables[name].columns), name
        assert (screened.tables[name]["source"] == "star").all(), name


def test_the_star_arms_progress_bar_names_the_dialogues_and_counts_to_a_total(monkeypatch):
    import tqdm

    bars: list[dict] = []

    class Bar:
        def __init__(self, *args, **kw):
            bars.append(kw)

        def update(self, n=1):
            bars[-1]["done"] = bars[-1].get("done", 0) + n

        def refresh(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    CALLS.clear()
    run(dataclasses.replace(BASE, real_path=str(need_star()), real_items=4, real_margin=0.2), progress=True,
        cache=False)
    by_name = {b["desc"]: b for b in bars}
    assert set(by_name) == {"contact-center", "STAR screen (kept)", "contact-center (STAR)"}, bars
    assert by_name["contact-center"]["total"] == by_name["contact-center"]["done"] == 2  # the synthetic calls
    assert by_name["contact-center (STAR)"]["total"] == by_name["contact-center (STAR)"]["done"] == 4
