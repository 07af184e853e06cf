"""Judge-bias gates in the one vocabulary, end to end on the synthetic control items with scripted judges.

* a judge choosing slot A on every request (as the 1.5B judge did on 36/36) is invariant to every cue,
  so its net flips are bounded under the maximum - it is ``uninformative``, never ``pass``, at 60 items;
* a judge that picks the sent reply, with 5 % of draws turned the other way (true net flips 0), is
  responsive and not ``fail`` (pass or inconclusive);
* the same judge turned by the supervisor label on 30 % of cued prompts ``fail``s the authority gate.
"""

from __future__ import annotations

import hashlib
import math

import pytest

from cfbench.judges.base import Request, Response
from cfbench.judges.scripted import register_script
from cfbench.studies.judge_bias import Params, run
from cfbench.studies.judge_bias.study import plan

KW = dict(star_path="none", n_draft=0, n_control=60, cues=("position", "authority", "source"),
          pointwise_cues=(), n_boot=200, temperature=0.7, repeats=1)


def _h(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _slot_a(request: Request) -> Response:
    return Response(text="A", top_logprobs={"A": math.log(0.9), "B": math.log(0.1)}, prompt_tokens=1,
                    completion_tokens=1)


def _truthful(noise: float, authority: float):
    """Picks the reply that was sent (it knows the items), turns ``noise`` of draws (prompt x repeat) the other
    way and, on prompts naming a supervisor, ``authority`` of prompts toward the other reply."""
    real = {frozenset((i.real.strip(), i.alt.strip())): i.real.strip() for i in plan(Params(**KW)).items}

    def script(request: Request) -> Response:
        body = request.messages[-1]["content"]
        a, b = (next(ln for ln in body.splitlines() if ln.startswith(f"Reply {s}")).split(": ", 1)[1].strip()
                for s in "AB")
        pick_a = real[frozenset((a, b))] == a
        if _h(f"noise|{request.repeat}|{body}") < noise:
            pick_a = not pick_a
        if "supervisor" in body and _h(f"auth|{body}") < authority:
            pick_a = not pick_a
        p = "A" if pick_a else "B"
        return Response(text=p, top_logprobs={p: math.log(0.9), ("B" if pick_a else "A"): math.log(0.1)},
                        prompt_tokens=1, completion_tokens=1)

    return script


register_script("jb-test-slot-a", _slot_a, does="test: slot A on every request")
register_script("jb-test-fair", _truthful(0.05, 0.0), does="test: picks the sent reply, 5 % noise per draw")
register_script("jb-test-authority", _truthful(0.05, 0.30), does="test: as jb-test-fair, turned by 30 % of supervisor labels")


@pytest.fixture(scope="module")
def cues(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs outside conftest's per-test cache
        mp.setenv("CFBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return _cues()


def _cues():
    r = run(Params(**KW, judges=("scripted:jb-test-slot-a", "scripted:jb-test-fair", "scripted:jb-test-authority")), progress=False)
    r.check()
    return r.tables["cues"].set_index(["judge", "cue"]), r


def test_a_judge_choosing_slot_a_always_is_never_pass(cues):
    c, r = cues
    rows = c.loc["scripted:jb-test-slot-a"]
    assert (rows["gate_kind"] != "pass").all() and not rows["responsive"].any()
    # the position cue flips every answer: shown unfair (a fail needs no responsiveness); the label cues never move
    # it: uninformative
    assert rows.loc["position", "gate"] == "fail"
    assert (rows.loc[["authority", "source"], "gate_kind"] == "uninformative").all()
    # its label-cue nets are exactly 0 and bounded under the maximum: the old gate passed them
    label = rows.loc[["authority", "source"]]
    assert (label["net_flip_rate"] == 0).all() and (label["net_ci_high"] < 0.10).all()
    assert "position consistency" in rows["responsiveness"].iloc[0]


def test_a_fair_noisy_judge_is_responsive_and_not_fail(cues):
    c, _ = cues
    rows = c.loc["scripted:jb-test-fair"]
    assert rows["responsive"].all(), rows["responsiveness"].iloc[0]
    assert set(rows.loc[["authority", "source"], "gate_kind"]) <= {"pass", "inconclusive"}


def test_a_judge_turned_by_30_percent_fails(cues):
    c, r = cues
    a = c.loc[("scripted:jb-test-authority", "authority")]
    assert a.gate == "fail" and a.responsive
    assert c.loc[("scripted:jb-test-authority", "source"), "gate_kind"] != "fail"
    assert "`fail` (" in r.findings() and "`uninformative` (" in r.findings()
