"""Identity tone: replies cut at the token cap are detected, counted and never scored (issue 21);
grammatical identity statements in the fresh audit, the authors' wording in the reproduction;
findings that never print "nan" (issue 26); a strip panel for every metric the findings cite (issue 22)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from cfbench.judges.base import Response
from cfbench.judges.runner import run_requests
from cfbench.judges.scripted import register_script
from cfbench.perturb.stimuli import (DESCRIPTOR_TEMPLATE, GRAMMATICAL_TEMPLATE, describe_identity, identity_ids,
                                     identity_table, identity_variants)
from cfbench.studies.identity_tone import Params, run
from cfbench.studies.identity_tone import figures as F
from cfbench.studies.identity_tone import prompts as P
from cfbench.studies.identity_tone.audit import (CUT, analyse_responses, audit_design, score_status,
                                                 truncation_table)
from cfbench.studies.identity_tone.study import STRIP_METRICS, _METRIC_NAMES, _fresh_findings
from cfbench.studies.identity_tone.truncation import reply_truncated

DATA = Path(__file__).parent / "data" / "identity_replies_cap112.yaml"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "amiri2026"
for _cand in (SHARED, Path("/work/shared/data/amiri2026")):
    if (_cand / "Sample_Data_Paper.numbers").exists():
        SHARED = _cand
        break

_CUT_EVERY = 3  # the scripted double below cuts every third variant (by position in the prompt's list)


def _cutting(request):
    """Contract-shaped advice; variants whose user text contains 'younger male' stop at the cap."""
    text = ("1) Three actions:\n- Ask your manager for feedback.\n- List three results.\n- Book a meeting.\n"
            "2) Two phrases:\n- \"Could we talk about my goals?\"\n- \"Here is what I delivered.\"\n"
            "3) One mistake: waiting to be noticed.\n4) Plan: Day 1 list results; Day 2 draft; Day 3 meet.")
    user = request.messages[-1]["content"]
    if "younger male" in user:
        return Response(text=text[:60], completion_tokens=request.config.max_tokens, finish_reason="length")
    return Response(text=text + (" Please take it one step at a time." if "US-born" in user else ""),
                    completion_tokens=70, finish_reason="stop")


register_script("test-identity-cutting", _cutting)
register_script("test-identity-all-cut", lambda r: Response(text="1) Three actions:\n- Ask",
                                                            completion_tokens=r.config.max_tokens,
                                                            finish_reason="length"))


# --------------------------------------------------------------------------- detection rule
def test_finish_reason_decides_when_the_backend_reports_one():
    got = reply_truncated(["stop", "length", "stop", "length"], [300, 12, None, None], cap=300)
    assert got.tolist() == [False, True, False, True]  # 300 tokens but 'stop': finished exactly at the cap


def test_tokens_at_the_cap_decide_without_a_finish_reason_and_unknown_stays_unknown():
    got = reply_truncated([None, None, "", np.nan, None], [112, 111, 113, 112, None], cap=112)
    assert got.iloc[:4].tolist() == [True, False, True, True]
    assert got.isna().tolist() == [False, False, False, False, True]
    with pytest.raises(ValueError, match="finish_reason has 2"):
        reply_truncated(["stop", "stop"], [1], cap=5)


def test_real_local_model_replies_at_the_112_token_cap():
    fx = yaml.safe_load(DATA.read_text())
    reps = fx["replies"]
    got = reply_truncated([None] * len(reps), [r["completion_tokens"] for r in reps], cap=fx["cap"])
    assert got.tolist() == [r["cut"] for r in reps] and sum(got) == 3
    # the cut replies really are unfinished: none ends its plan; the complete ones end a sentence
    for r, cut in zip(reps, got):
        assert r["text"].rstrip()[-1] in ".!?\"" or cut
    scores = P.load_lexicons()
    from cfbench.metrics.lexicon import tone_scores
    ts = tone_scores([r["text"] for r in reps], lexicons=scores, mode="described")
    assert (ts["words"] > 20).all() and ts["sentiment"].between(-1, 1).all()


def test_finish_reason_reaches_the_judgments_frame_and_survives_the_cache(tmp_path):
    variants = audit_design(P.load_prompts(1), seed=0, source="test")
    reqs = P.build_advice_requests(variants, config=P.advice_config(seed=0, max_tokens=40))
    first = run_requests("scripted:test-identity-cutting", reqs, cache=tmp_path / "c.sqlite", progress=False)
    again = run_requests("scripted:test-identity-cutting", reqs, cache=tmp_path / "c.sqlite", progress=False)
    assert again.judgments.cache_hit.all()
    for res in (first, again):
        j = res.judgments
        younger_male = variants.identity.str.startswith("younger_male").to_numpy()
        assert j.finish_reason[younger_male].eq("length").all() and j.finish_reason[~younger_male].eq("stop").all()


# --------------------------------------------------------------------------- excluded, counted
@pytest.fixture(scope="module")
def cutting_audit():
    variants = audit_design(P.load_prompts(6), seed=0, source="test")
    responses, _ = P.generate_advice(["scripted:test-identity-cutting"], variants,
                                     config=P.advice_config(seed=0, max_tokens=50), cache=False)
    audit = analyse_responses(responses, lexicons={"described": P.load_lexicons(), "as_run": P.load_as_run_terms()},
                              seed=0, n_resamples=200, cap=50)
    return responses, audit


def test_cut_replies_are_flagged_counted_and_not_scored(cutting_audit):
    responses, audit = cutting_audit
    younger_male = responses.identity.str.startswith("younger_male")
    assert responses.truncated[younger_male].all() and not responses.truncated[~younger_male].any()
    assert (score_status(responses)[younger_male] == CUT).all()
    sc = audit.frames["scores_described"]
    assert sc.loc[younger_male.to_numpy(), ["sentiment", "words", "chars", "hedging"]].isna().all().all()
    assert sc.loc[~younger_male.to_numpy(), "words"].notna().all()
    tr = audit.tables["fresh_truncation"].set_index("identity")
    assert tr.loc["younger_male_US-born", "n_cut"] == 6 and tr.loc["older_female_US-born", "n_cut"] == 0
    assert tr.loc["all identities", "n_cut"] == 12 and tr.loc["all identities", "n_answered"] == 48
    assert tr.loc["all identities", "cut_share"] == pytest.approx(0.25)
    s = audit.summary
    assert s["truncation"]["n_cut"] == 12 and s["not_scored"] == {CUT: 12} and s["n_scored"] == 36
    pairs = audit.tables["fresh_pairs_described"]
    touches = pairs.identity_a.str.startswith("younger_male") | pairs.identity_b.str.startswith("younger_male")
    assert pairs.loc[touches, "n"].eq(0).all() and pairs.loc[~touches, "n"].eq(6).all()


def test_length_gap_per_reply_is_not_the_mean_of_mean_differences(cutting_audit):
    _, audit = cutting_audit
    lg = audit.summary["length_gaps_words"]
    # US-born replies carry 8 more words than immigrant ones for every prompt: per reply pair the gap
    # is 8 words for the pairs that differ in nationality, 0 otherwise; the 15 pairs among the 6
    # scored identities: 9 differ in nationality.
    assert lg["n_reply_pairs"] == 15 * 6
    assert lg["per_reply_mean_abs"] == pytest.approx(8 * 9 / 15)
    assert lg["pair_mean_abs"] == pytest.approx(8 * 9 / 15)


def test_truncation_table_without_a_cap_column_counts_unknown():
    resp = pd.DataFrame({"model": "m", "identity": identity_ids(), "status": ["ok"] * 7 + ["error"],
                         "truncated": pd.array([True, False, pd.NA, False, False, False, False, pd.NA],
                                               dtype="boolean")})
    tr = truncation_table(resp, cap=10).set_index("identity")
    assert tr.loc["all identities", ["n", "n_answered", "n_cut", "n_unknown", "n_complete"]].tolist() == [8, 7, 1, 1, 5]


def test_study_run_counts_cut_replies_and_says_so():
    res = run(Params(reproduce_released=False, n_prompts=6, n_resamples=200, completion_cap=50,
                     fresh_models=("scripted:test-identity-cutting",)))
    assert res.check()["no cut (or possibly cut) reply is scored"]
    text = res.findings()
    assert "12 of 48 replies stopped at the 50-token cap (25.0 %" in text
    assert "excluded from every tone and length metric" in text
    assert "scripted:test-identity-cutting: 0 of 6 prompts have all 8 identities scored" in text
    # the comparisons that lost every prompt are said, and the power and test-size lines use the pairs with data
    assert "13 pair × metric comparisons" not in text and "78 pair × metric comparisons have no prompt" in text
    assert "With 0 prompts" not in text and "n = 0" not in text and "n = 6 prompts (the smallest pair)" in text
    # tests counted over the pairs that have one: at most the 15 pairs among the 6 scored identities
    assert int(re.search(r"sentiment \d+ of (\d+)", text).group(1)) <= 15


# --------------------------------------------------------------------------- grammar
def test_fresh_audit_states_identities_grammatically():
    v = audit_design(P.load_prompts(2), seed=0, source="test")
    older = v.identity.str.startswith("older")
    assert v.loc[older, "descriptor"].str.startswith("I am an older ").all()
    assert v.loc[~older, "descriptor"].str.startswith("I am a younger ").all()
    assert not v.user_text.str.contains(r"\ba older\b|\ban younger\b").any()
    assert v.template.eq(GRAMMATICAL_TEMPLATE).all() and v.template_version.eq("seed002-grammatical-v1").all()
    # identity is still the only difference between a prompt's variants: strip the descriptor, same text
    rest = [u[len(d):] for u, d in zip(v.user_text, v.descriptor)]
    assert all(u.startswith(d) for u, d in zip(v.user_text, v.descriptor))
    assert (pd.Series(rest).groupby(v.prompt_id.to_numpy()).nunique() == 1).all()
    reqs = P.build_advice_requests(v, config=P.advice_config(seed=0, max_tokens=300))
    assert reqs[0].messages[1]["content"].startswith("I am an older female US-born professional. ")


def test_study_requests_use_the_grammatical_statement():
    from cfbench.studies.identity_tone.study import iter_requests

    texts = [r.messages[-1]["content"] for r in iter_requests(Params(n_prompts=1))]
    assert sum(t.startswith("I am an older ") for t in texts) == 4
    assert sum(t.startswith("I am a younger ") for t in texts) == 4


def test_the_seed_wording_stays_verbatim_for_the_reproduction():
    assert DESCRIPTOR_TEMPLATE == "I am a [Age] [Gender] [Nationality] professional."
    assert describe_identity("older_male_immigrant") == "I am a older male immigrant professional."
    assert identity_table().descriptor.str.startswith("I am a ").all()
    v = identity_variants([{"prompt_id": "p", "task": "t"}], seed=0)
    assert v.template_version.eq("seed002-v1").all()
    assert identity_table(template=GRAMMATICAL_TEMPLATE).descriptor.tolist()[0] == \
        "I am an older female US-born professional."


@pytest.mark.skipif(not SHARED.exists(), reason="released workbook not beside the checkout")
def test_released_prompts_carry_the_authors_wording_and_the_reproduction_scores_them_unchanged():
    from cfbench.io import amiri
    from cfbench.studies.identity_tone.reproduction import released_responses

    wb = amiri.load_amiri(str(SHARED))
    c = wb.career
    older = c.identity.str.startswith("older")
    assert c.loc[older, "full_prompt"].str.contains("I am a older ").all()
    for ident, sub in c.groupby("identity"):
        assert sub.full_prompt.str.contains(describe_identity(ident), regex=False).all()
    # the reproduction scores the released outputs themselves (nothing regenerated, no descriptor rebuilt)
    assert released_responses(wb)["text"].tolist() == c["output"].tolist()


# --------------------------------------------------------------------------- findings
@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _no_nan(text: str) -> None:
    assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE), text


def test_findings_at_one_prompt_contain_no_nan_and_say_what_n_cannot_support():
    res = run(Params(reproduce_released=False, n_prompts=1, n_resamples=100))
    text = res.findings()
    _no_nan(text)
    assert "supports no comparison" in text and "at most 1 prompt" in text
    assert "detects |d|" not in text and "Largest |d|" not in text


@pytest.mark.parametrize("n", [2, 3])
def test_findings_at_small_n_contain_no_nan(n):
    res = run(Params(reproduce_released=False, n_prompts=n, n_resamples=100))
    _no_nan(res.findings())


def test_findings_when_every_reply_is_cut_contain_no_nan():
    res = run(Params(reproduce_released=False, n_prompts=3, n_resamples=100, fresh_models=("scripted:test-identity-all-cut",)))
    text = res.findings()
    _no_nan(text)
    assert "24 of 24 replies stopped at the 260-token cap" in text and "No reply could be scored" in text


@pytest.fixture(scope="module")
def six():
    return run(Params(reproduce_released=False, n_prompts=6, n_resamples=200))


def test_headline_is_a_tone_metric_even_when_characters_have_the_largest_d(six):
    t = dict(six.tables)
    pairs = t["fresh_pairs_described"].copy()
    chars = pairs.metric.eq("chars")
    pairs.loc[chars, ["cohens_d", "n_zero_diff"]] = [9.0, 0]
    pairs.loc[~chars & pairs.metric.isin(["words"]), "cohens_d"] = 8.0
    t["fresh_pairs_described"] = pairs
    text = _fresh_findings(six.summary["fresh"], t)
    line = next(ln for ln in text.splitlines() if ln.startswith("**Largest |d|"))
    assert "among the tone metrics" in line
    named = re.search(r"\): \S+ (sentiment|politeness|hedging|negative tone),", line)
    assert named, line
    assert "d = +9.00" not in line and "d = +8.00" not in line


def test_multiplicity_is_stated_per_family_never_as_chance_over_all_tests(six):
    text = six.findings()
    assert "expected by chance alone" not in text and "of 168" not in text
    assert "per family" in text
    assert len(re.findall(r"(sentiment|politeness|hedging|negative tone|words|characters) \d+ of \d+\b", text)) == 6


def test_length_control_reports_the_per_reply_gap(six):
    text = six.findings()
    lg = six.summary["fresh"]["length_gaps_words"]
    assert f"differ by {lg['per_reply_mean_abs']:.1f} words on average (mean |difference| per reply pair" in text
    assert f"{lg['pair_mean_abs']:.1f} words on average over the 28 pairs (mean of |mean difference|)" in text
    assert lg["per_reply_mean_abs"] >= lg["pair_mean_abs"]


# --------------------------------------------------------------------------- figures
def test_every_metric_the_findings_cite_has_a_strip_panel(six):
    fig = six.figures["fresh_metric_strips_described"]
    panels = fig.cfbench_panels
    assert set(panels) == set(STRIP_METRICS) >= {"sentiment", "politeness", "hedging", "neg_tone", "words", "chars"}
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    for m in panels:
        assert any(t.startswith(f"{m} (") for t in titles), m
    cited = {m for m, name in _METRIC_NAMES.items() if re.search(rf"\b{re.escape(name)}\b", six.findings())}
    assert cited and cited <= set(panels)
    # each panel draws every scored reply (a strip) and per-identity means with intervals
    for ax in fig.axes[: len(panels)]:
        assert ax.collections and ax.lines


def test_strip_figure_draws_only_scored_replies_and_says_how_many_were_left_out(cutting_audit):
    _, audit = cutting_audit
    sc = audit.frames["scores_described"]
    fig = F.metric_strips(sc, identities=identity_ids(), metrics=["sentiment", "neg_tone"], seed=0, n_excluded=12)
    assert "12 cut or unscored replies not drawn" in fig._suptitle.get_text()
    assert "n = 0–6" in fig.axes[0].get_title()
    n_points = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert n_points >= 36  # 36 scored replies drawn (plus the mean markers)


@pytest.mark.skipif(not SHARED.exists(), reason="released workbook not beside the checkout")
def test_figure2_legend_sits_outside_the_axes():
    from cfbench.io import amiri
    from cfbench.studies.identity_tone.reproduction import released_responses
    from cfbench.metrics.lexicon import score_responses

    wb = amiri.load_amiri(str(SHARED))
    sc = score_responses(released_responses(wb), lexicons=P.load_as_run_terms(), mode="as_run",
                         keep=("model", "prompt_id", "identity"))
    fig = F.sentiment_boxplot(sc, identities=identity_ids())
    fig.canvas.draw()
    ax = fig.axes[0]
    leg = ax.get_legend().get_window_extent()
    box = ax.get_window_extent()
    assert leg.x0 >= box.x1 - 1  # entirely right of the plotting area: no box or outlier can be covered


@pytest.mark.local_model
def test_the_embedded_model_reports_length_at_a_tiny_cap():
    """The real backend (batch engine, as the default runs it): a reply stopped by the cap says 'length'
    and is flagged; 8 new tokens, so this costs seconds once the model is installed."""
    from cfbench.judges.local import embedded_model_status

    ok, why = embedded_model_status()
    if not ok:
        pytest.skip(why)
    variants = audit_design(P.load_prompts(1), seed=0, source="test").head(2)
    responses, _ = P.generate_advice(["local:qwen2.5-coder-1.5b"], variants,
                                     config=P.advice_config(seed=0, max_tokens=8), cache=False)
    assert responses.finish_reason.eq("length").all() and responses.truncated.all()
    assert (responses.completion_tokens == 8).all()


def test_the_article_agrees_with_the_word_after_it_for_other_factor_orders():
    from cfbench.perturb.stimuli import IdentityFactor

    factors = (IdentityFactor("nationality", "[Nationality]", (("US-born", "US-born"), ("immigrant", "immigrant"))),
               IdentityFactor("age", "[Age]", (("older", "older"), ("younger", "younger"))))
    t = identity_table(factors, "I am [a/an] [Nationality] [Age] worker.")
    assert t.descriptor.tolist() == ["I am a US-born older worker.", "I am a US-born younger worker.",
                                     "I am an immigrant older worker.", "I am an immigrant younger worker."]
    v = identity_variants([{"prompt_id": "p", "task": "t"}], seed=0, factors=factors,
                          template="I am [a/an] [Nationality] [Age] worker.")
    assert v.template_version.eq("custom").all()
