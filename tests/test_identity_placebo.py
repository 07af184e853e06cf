"""The identity-tone placebo arm (``placebo: true``): one more reply per prompt and model, one identity stated in
other words (``PLACEBO_TEMPLATE``), and the identity effect on tone net of that rewording, paired by prompt
(``fresh_placebo_described``).

Three scripted models, known truth: one ignores the identity statement (no difference anywhere: never an effect
net of the placebo), one re-draws its reply on any edit of the user text (``scripted:identity-advice``: net ~0),
one adds polite phrases for a female-stated identity whatever the wording (moved by the group only: politeness
net clearly positive)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.perturb.stimuli import GRAMMATICAL_TEMPLATE, PLACEBO_TEMPLATE, identity_table
from cfbench.studies.identity_tone import scripted
from cfbench.studies.identity_tone.audit import PLACEBO, placebo_design
from cfbench.studies.identity_tone.study import Params, iter_requests, run



def _task(request) -> str:
    user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    return user.split("professional.", 1)[-1]


def _ignores(request):
    """The reply of scripted:identity-advice to the task alone (the identity statement is not read)."""
    req = type(request)(request.request_id.split("/")[0], messages=({"role": "user", "content": _task(request)},),
                        config=request.config)
    return scripted.identity_advice(req)


def _group(request):
    """As :func:`_ignores`, plus polite phrases when the statement says female (whatever its wording)."""
    user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    r = _ignores(request)
    if " female " in user.split("professional.", 1)[0]:
        r = Response(text=r.text + "\nThank you for asking; please reach out, I appreciate it.",
                     completion_tokens=r.completion_tokens, finish_reason="stop")
    return r


register_script("tone-placebo-ignores", _ignores, does="test double of tests/test_identity_placebo.py")
register_script("tone-placebo-group", _group, does="test double of tests/test_identity_placebo.py")
MODELS = ("scripted:tone-placebo-ignores", "scripted:identity-advice", "scripted:tone-placebo-group")


@pytest.fixture(scope="module")
def result():
    return run(Params(reproduce_released=False, n_prompts=8, n_resamples=200, fresh_models=MODELS, placebo=True))


def _row(result, model, metric):
    t = result.tables["fresh_placebo_described"]
    r = t[(t["model"] == model) & (t["metric"] == metric)]
    assert len(r) == 1
    return r.iloc[0]


def test_placebo_statement_is_the_same_identity_in_other_words():
    a, b = identity_table(template=GRAMMATICAL_TEMPLATE), identity_table(template=PLACEBO_TEMPLATE)
    assert list(a["identity"]) == list(b["identity"])
    for x, y in zip(a["descriptor"], b["descriptor"]):
        assert x != y and x.split()[2:] == y.split()[3:]  # same article and identity words
        assert len(y.split()) == len(x.split()) + 1  # same length class: one word longer


def test_placebo_design_one_seeded_variant_per_prompt():
    frame = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(40)], "task": "Help me.", "prompt_version": "v"})
    d1, d2 = (placebo_design(frame, seed=s, source="t") for s in (1, 1))
    assert d1.equals(d2) and len(d1) == 40 and (d1["arm"] == PLACEBO).all()
    assert d1["variant_id"].str.endswith("/placebo").all() and d1["user_text"].str.startswith("I work as").all()
    assert d1["identity"].nunique() >= 6  # the identity is drawn per prompt, not fixed
    assert not placebo_design(frame, seed=2, source="t")["identity"].equals(d1["identity"])


def test_params_and_requests():
    assert Params().placebo is False
    with pytest.raises(InputError, match="placebo"):
        Params(placebo="yes")
    on = list(iter_requests(Params(reproduce_released=False, n_prompts=5, placebo=True)))
    off = list(iter_requests(Params(reproduce_released=False, n_prompts=5)))
    assert len(on) == len(off) + 5 and [r.request_id for r in on[:len(off)]] == [r.request_id for r in off]


def test_ignoring_model_is_not_biased_net_of_placebo(result):
    for metric in ("sentiment", "politeness", "hedging", "neg_tone"):
        r = _row(result, MODELS[0], metric)
        assert r.n_prompts == 8 and r.identity_abs_diff == 0 and r.placebo_abs_diff == 0 and r.estimate == 0
        assert not r.ci_low > 0


def test_any_edit_model_nets_to_about_zero(result):
    for metric in ("sentiment", "politeness", "hedging"):
        r = _row(result, MODELS[1], metric)
        assert r.identity_abs_diff > 0 and r.placebo_abs_diff > 0
        assert r.ci_low < 0 < r.ci_high, (metric, r.to_dict())


def test_group_model_shows_a_positive_net_effect(result):
    r = _row(result, MODELS[2], "politeness")
    assert r.placebo_abs_diff == 0 and r.identity_abs_diff > 0 and r.ci_low > 0


def test_placebo_changes_no_other_table_and_reaches_findings(result):
    on, off = (run(Params(reproduce_released=False, n_prompts=6, n_resamples=200, fresh_models=MODELS[2:],
                          placebo=p)) for p in (True, False))
    assert "fresh_placebo_described" not in off.tables and "Placebo" not in off.findings()
    for name, t in off.tables.items():
        pd.testing.assert_frame_equal(on.tables[name], t, obj=name)
    assert all(result.invariants().values()), result.invariants()
    assert len(result.tables["fresh_placebo_responses"]) == 8 * len(MODELS)
    assert result.findings().count("**Placebo**") == 1 and on.findings().count("**Placebo**") == 1


# -- coverage and width of the paired interval (seeded simulation, known truth) -------------------------------
def test_the_contrast_interval_covers_the_truth():
    from cfbench.studies.identity_tone.placebo_sim import placebo_coverage

    v = placebo_coverage(n_prompts=20, effect=0.5, noise=0.5, reps=150, seed=20, n_boot=500)
    assert v["truth"] > 0.05 and v["no_ci"] == 0
    assert v["coverage"] >= 0.93 and v["miss_low"] <= 0.035 and v["miss_high"] <= 0.035, v
    assert 0.9 <= v["width_ratio"] <= 1.6, v


def test_simulated_truth_is_zero_without_effect_and_matches_a_large_audit():
    from cfbench.studies.identity_tone.placebo_sim import draw_scores, truth
    from cfbench.studies.identity_tone.audit import _placebo_units

    assert truth(0.0, 0.5, False) == 0.0
    sc, pl = draw_scores(np.random.default_rng(3), 20_000, effect=0.0, noise=0.5, skewed=True)
    a, b = _placebo_units(sc, pl, "sentiment")
    assert abs((a - b).mean()) < 0.01  # no effect: the two sides have the same mean
    sc, pl = draw_scores(np.random.default_rng(4), 20_000, effect=0.5, noise=0.5)
    a, b = _placebo_units(sc, pl, "sentiment")
    assert abs((a - b).mean() - truth(0.5, 0.5, False)) < 0.01
