"""The judge-bias placebo arm (``placebo: true``): for the identity cue, the same edit (both replies signed) with no
identity contrast (both signed by the other side's identity, the cued name swapped for a same-length name of that
group), and the cue's effect net of the placebo, paired by item (``placebo_contrast``).

Three scripted judges, known truth: one ignores the sign-offs (never flips: not biased net of the placebo), one
re-reads any edited text (flips under the cue and the placebo alike: net ~0), one picks the reply signed with a
female-coded name (moved by the group only: net flips and net shift clearly positive)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.perturb.base import load_data
from cfbench.perturb.judge_cues import CandidatePair, get_cue
from cfbench.perturb.placebo import length_class
from cfbench.studies.judge_bias import metrics as M
from cfbench.studies.judge_bias.study import Params, n_requests, plan, run
from cfbench.studies.judge_bias.tasks import _REPLY_LINE, _h

_SIGNOFF = re.compile(r"\s*Kind regards, ([\w'-]+)\s*$")
_FEMALE = {n.lower() for k in ("ethnicity", "religion") for g in load_data("names.yaml")[k].values()
           for n in g["female"]}


def _replies(request):
    (_, _, ta), (_, _, tb) = _REPLY_LINE.findall(request.messages[-1]["content"])
    return ta, tb


def _unsigned(text: str) -> str:
    return _SIGNOFF.sub("", text)


def _answer(pick: str) -> Response:
    other = "B" if pick == "A" else "A"
    return Response(text=pick, top_logprobs={pick: math.log(0.8), other: math.log(0.2)}, completion_tokens=1)


def _ignores(request):
    """Content only, sign-offs stripped: no cue or placebo moves it."""
    ta, tb = _replies(request)
    return _answer("A" if _h(_unsigned(ta)) >= _h(_unsigned(tb)) else "B")


def _any_edit(request):
    """Content with the sign-offs: any edit re-draws its choice."""
    ta, tb = _replies(request)
    return _answer("A" if _h(ta + "|" + tb) >= 0.5 else "B")


def _group(request):
    """The reply signed with a female-coded name when exactly one is, else content only (sign-offs stripped)."""
    ta, tb = _replies(request)
    fem = [bool(m) and m.group(1).lower() in _FEMALE for m in (_SIGNOFF.search(ta), _SIGNOFF.search(tb))]
    if fem[0] != fem[1]:
        return _answer("A" if fem[0] else "B")
    return _ignores(request)


for _name, _fn in (("jb-placebo-ignores", _ignores), ("jb-placebo-any-edit", _any_edit), ("jb-placebo-group", _group)):
    register_script(_name, _fn, does="test double of tests/test_judge_bias_placebo.py")

JUDGES = ("scripted:jb-placebo-ignores", "scripted:jb-placebo-any-edit", "scripted:jb-placebo-group")


def _params(**kw) -> Params:
    base = dict(star_path="none", n_draft=0, n_control=24, judges=JUDGES, cues=("agent_identity", "authority"),
                pointwise_cues=(), n_boot=200, placebo=True)
    return Params(**{**base, **kw})


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    import os

    old = os.environ.get("CFBENCH_CACHE_DIR")
    os.environ["CFBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        return run(_params(), progress=False)
    finally:
        if old is None:
            os.environ.pop("CFBENCH_CACHE_DIR", None)
        else:
            os.environ["CFBENCH_CACHE_DIR"] = old


def _row(result, judge):
    t = result.tables["placebo_contrast"]
    r = t[(t["judge"] == judge) & (t["cue"] == "agent_identity")]
    assert len(r) == 1
    return r.iloc[0]


def test_placebo_pair_is_the_same_edit_with_one_identity():
    cue = get_cue("agent_identity")
    pair = CandidatePair({"real": "Sure, I can help with that.", "alt": "No."}, ("real", "alt"))
    made = 0
    for i in range(60):
        pl = cue.placebo(pair, "real", seed=3, item_id=f"i{i}")
        if pl is None:
            continue
        made += 1
        ids = cue.identities(pair, seed=3, item_id=f"i{i}")
        got = {k: _SIGNOFF.search(v).group(1) for k, v in pl.texts.items()}
        assert got["alt"] == ids["other"].name  # the other reply keeps its sign-off
        assert got["real"] != ids["other"].name and length_class(got["real"]) == length_class(ids["cued"].name)
        assert got["real"].lower() not in _FEMALE  # the cued reply is now signed by the other (male) identity
        assert pl.texts["real"].startswith("Sure, I can help with that. ")
        assert cue.placebo_problems(pair, pl, seed=3, item_id=f"i{i}") == []
        swapped = CandidatePair(dict(pl.texts, real=pl.texts["real"].replace(got["real"], ids["cued"].name)),
                                pl.order, target="real")
        assert cue.placebo_problems(pair, swapped, seed=3, item_id=f"i{i}")  # the identity cue's name is caught
    assert made >= 50


def test_params_placebo_is_validated():
    assert Params().placebo is False and Params().placebo_cues == ()
    assert _params().placebo_cues == ("agent_identity",)
    with pytest.raises(InputError, match="placebo"):
        Params(placebo="yes")
    with pytest.raises(InputError, match="identity cue"):
        Params(cues=("authority",), placebo=True)
    assert Params.from_config({"placebo": True}).placebo is True


def test_plan_adds_one_placebo_request_per_item_at_most():
    on, off = plan(_params()), plan(_params(placebo=False))
    extra = [r for r in on.requests if "/placebo-agent_identity/" in r.request_id]
    assert len(on.requests) - len(off.requests) == len(extra) and 0.8 * 24 <= len(extra) <= 24
    assert n_requests(_params()) - n_requests(_params(placebo=False)) == 24  # the bound the ETA uses
    assert [r.request_id for r in off.requests] == [r.request_id for r in on.requests if r not in extra]


def test_ignoring_judge_is_not_biased_net_of_placebo(result):
    r = _row(result, JUDGES[0])
    assert r.flip_rate == 0 and r.placebo_flip_rate == 0 and r.net_flip_rate == 0
    assert r.ci_low < 0 < r.ci_high and r.shift_ci_low < 0 < r.shift_ci_high


def test_any_edit_judge_nets_to_about_zero(result):
    r = _row(result, JUDGES[1])
    assert r.flip_rate > 0.25 and r.placebo_flip_rate > 0.25  # both edits move it
    assert r.ci_low < 0 < r.ci_high and abs(r.net_flip_rate) < 0.3
    assert r.shift_ci_low < 0 < r.shift_ci_high


def test_group_judge_shows_a_positive_net_effect(result):
    r = _row(result, JUDGES[2])
    assert r.placebo_flip_rate == 0 and r.chose_cued_with_cue == 1
    assert r.ci_low > 0 and r.shift_ci_low > 0 and r.net_shift > 0.25


def test_placebo_arm_changes_no_other_table(tmp_path):
    import os

    os.environ["CFBENCH_CACHE_DIR"] = str(tmp_path)
    try:
        on, off = (run(_params(n_control=8, placebo=p), progress=False) for p in (True, False))
    finally:
        os.environ.pop("CFBENCH_CACHE_DIR", None)
    assert "placebo_contrast" in on.tables and "placebo_contrast" not in off.tables
    inv = on.invariants()
    assert all(inv.values()) and sum("placebo" in k for k in inv) == 2, inv
    for name in ("position", "accuracy", "noise", "cues"):
        pd.testing.assert_frame_equal(on.tables[name], off.tables[name], obj=name)
    assert on.findings().count("net of its placebo") == len(JUDGES) and "net of its placebo" not in off.findings()


# -- coverage and width of the paired interval (seeded simulation, known truth) -------------------------------
@pytest.mark.parametrize("g, zero_share, n_items", [(0.0, 0.5, 8), (0.0, 0.5, 20), (0.3, 0.5, 8), (0.3, 0.5, 20)])
def test_the_contrast_interval_covers_the_truth(g, zero_share, n_items):
    from cfbench.studies.judge_bias.placebo_sim import placebo_coverage, truths

    r = placebo_coverage(n_items=n_items, g=g, zero_share=zero_share, reps=300, seed=7 + n_items)
    for k, v in r.items():
        assert v["truth"] == truths(g, zero_share)[k] and v["no_ci"] == 0
        assert v["coverage"] >= 0.93 and v["miss_low"] <= 0.035 and v["miss_high"] <= 0.035, (k, v)
        assert 0.9 <= v["width_ratio"] <= 1.75, (k, v)  # not a trivially wide interval


def test_simulated_truths_match_a_large_audit():
    """The analytic truths of placebo_sim against the mean of one audit of 200,000 items."""
    from cfbench.studies.judge_bias.placebo_sim import draw_cells, truths

    c = draw_cells(np.random.default_rng(5), 200_000, g=0.3, zero_share=0.5)
    t = truths(0.3, 0.5)
    assert abs((c.id_flip - c.pl_flip).mean() - t["net_flip_rate"]) < 0.005
    assert abs((c.id_chose - c.pl_chose).mean() - t["net_shift"]) < 0.005
