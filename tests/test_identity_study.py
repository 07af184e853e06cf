"""The study API: Params -> run -> IdentityToneResult (check, findings), without the released data."""

import pytest

from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.report import InvariantError
from cfbench.studies.identity_tone import Params, fresh_audit, run

register_script("test-identity-refuser", lambda r: "I'm sorry, but I won't be able to help with that.")


def _half_refuser(request):
    if "older" in request.messages[-1]["content"]:
        return "I can't help with that."
    return Response(text="1) Three actions:\n- Ask for feedback.\n- List results.\n- Book a meeting.\n"
                         "2) Two phrases:\n- \"Could we talk?\"\n- \"Here is my plan.\"\n3) One mistake: waiting.\n"
                         "4) Plan: Day 1 list; Day 2 draft; Day 3 meet. " + "More detail here. " * 20,
                    completion_tokens=120, finish_reason="stop")


register_script("test-identity-half-refuser", _half_refuser)


@pytest.fixture(scope="module")
def smoke_and_left_open():
    """The smoke run, and the pyplot figures it left open."""
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    result = run(Params(reproduce_released=False, n_prompts=6, n_resamples=300))
    return result, set(plt.get_fignums()) - before


@pytest.fixture(scope="module")
def smoke(smoke_and_left_open):
    return smoke_and_left_open[0]


def test_a_run_leaves_no_figure_open_in_pyplot(smoke_and_left_open):
    """Its figures are kept for saving and display, not in pyplot's registry: a lab session that runs the study
    again and again neither grows nor reaches pyplot's "More than 20 figures" warning."""
    result, left_open = smoke_and_left_open
    assert len(result.figures) >= 2 and not left_open


def test_result_shape_and_check(smoke):
    checks = smoke.check()
    assert checks and all(checks.values())
    assert len(smoke.frames["responses"]) == 48 and len(smoke.frames["variants"]) == 48
    assert smoke.summary["fresh"]["n_prompts"] == 6 and smoke.summary["released_data_available"] is False
    assert {"refusals", "fresh_pairs_described", "fresh_length_adjusted_described",
            "fresh_symmetry_described"} <= set(smoke.tables)
    assert smoke.figures["fresh_metric_strips_described"] is not None


def test_check_fails_loudly_when_an_invariant_breaks(smoke):
    import copy

    broken = copy.copy(smoke)
    broken.frames = dict(smoke.frames)
    broken.frames["responses"] = smoke.frames["responses"].iloc[1:]
    broken.tables = dict(smoke.tables)
    pairs = smoke.tables["fresh_pairs_described"].copy()
    pairs.loc[pairs.index[0], "ci_low"] = pairs.loc[pairs.index[0], "mean_diff"] + 1
    broken.tables["fresh_pairs_described"] = pairs
    with pytest.raises(InvariantError) as err:
        broken.check()
    assert "one reply row per model x prompt x identity" in str(err.value)
    assert "described: intervals contain their estimates" in str(err.value)


def test_findings_are_generated_from_the_numbers(smoke):
    text = smoke.findings()
    mde = smoke.summary["fresh"]["power"]["mde_d_alpha05_power80"]
    assert f"{mde:.2f}" in text and "n = 6" in text
    assert "Length control" in text and "Symmetry" in text
    n_sig = int((smoke.tables["fresh_pairs_described"].p_holm < 0.05).sum())
    assert f"{n_sig} comparisons with p_holm < 0.05 across the 6 families" in text


def test_an_all_refusing_assistant_gets_no_tone_numbers():
    res = run(Params(reproduce_released=False, n_prompts=3, n_resamples=50,
                     fresh_models=("scripted:test-identity-refuser",)))
    assert res.summary["fresh"]["n_scored"] == 0
    assert res.summary["fresh"]["not_scored"] == {"full refusal": 24}
    assert res.tables["refusals"]["full_count"].sum() == 24
    assert res.tables["fresh_pairs_described"]["n"].eq(0).all()
    assert res.tables["fresh_pairs_described"]["mean_diff"].isna().all()
    assert "No reply could be scored" in res.findings()
    assert "Largest |d|" not in res.findings()


def test_full_refusals_are_left_out_of_tone_scores():
    a = fresh_audit(["scripted:test-identity-half-refuser"], [f"Task number {i}." for i in range(5)],
                    n_resamples=50, cache=False)
    sc = a.frames["scores_described"]
    older = sc.identity.str.startswith("older")
    assert sc.loc[older, "sentiment"].isna().all() and sc.loc[~older, "sentiment"].notna().all()
    pairs = a.tables["fresh_pairs_described"]
    young_pair = pairs[(pairs.identity_a == "younger_female_US-born") & (pairs.identity_b == "younger_male_US-born")]
    assert (young_pair["n"] == 5).all()
    assert (pairs[pairs.identity_a.str.startswith("older")]["n"] == 0).all()
    assert a.summary["not_scored"] == {"full refusal": 20}


def test_params_mirror_the_configs():
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1] / "configs" / "identity_tone"
    default = Params.from_config(yaml.safe_load((root / "default.yaml").read_text()), source="default.yaml")
    assert default.n_prompts >= 10 and default.fresh_models == ("local:qwen2.5-coder-1.5b",)
    # the seed's token limit: the embedded model's replies (mean ~150, max 245 tokens measured) end on their own
    assert default.completion_cap >= 300


def test_the_repeat_penalty_reaches_every_request_and_the_header():
    from cfbench.studies.identity_tone.study import describe_run, iter_requests

    plain = list(iter_requests(Params(reproduce_released=False, n_prompts=2)))
    assert {r.config.repeat_penalty for r in plain} == {1.0}
    p = Params(reproduce_released=False, n_prompts=2, repeat_penalty=1.1)
    reqs = list(iter_requests(p))
    assert len(reqs) == 16 and {r.config.repeat_penalty for r in reqs} == {1.1}
    assert {(r.config.temperature, r.config.top_p) for r in reqs} == {(0.2, 0.9)}  # the seed's decoding kept
    assert "repeat penalty 1.1" in describe_run(p) and "repeat penalty" not in describe_run(Params())
