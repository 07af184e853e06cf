"""Hand-built inputs for the contact-center tests (no dependency on the perturbers)."""

from __future__ import annotations

import pandas as pd

from cfbench.core.schema import VARIANT_COLUMNS

BASE_TURNS = [
    {"speaker": "agent", "text": "Thanks for calling Northwind Energy, this is Maria. How can I help?"},
    {"speaker": "customer", "text": "My bill doubled this month and I do not know why."},
    {"speaker": "agent", "text": "I can look into that. Could you confirm your account number?"},
    {"speaker": "customer", "text": "It is 4471-22."},
    {"speaker": "agent", "text": "Thank you. I see an estimated reading; I have corrected it and issued a credit of $42."},
    {"speaker": "customer", "text": "Great, thanks."},
]


def _swap(turns, old, new):
    return [{"speaker": t["speaker"], "text": t["text"].replace(old, new)} for t in turns]


def variants_frame(items=("c1", "c2", "c3")) -> pd.DataFrame:
    """Original + gender (2 conditions incl. original) + past_performance (2 headers)
    + one not-applicable row, for each item."""
    rows = []
    for it in items:
        base = [{"speaker": t["speaker"], "text": t["text"] + ("" if i else f" (ref {it})")}
                for i, t in enumerate(BASE_TURNS)]
        common = dict(item_id=it, edits=[], seed=0, reason="", valid=True, rejection_reason="")
        rows.append(common | dict(dimension="original", condition="original", variant_id=f"{it}/original",
                                  operation="none", turns=base, header=None, applicable=True))
        rows.append(common | dict(dimension="gender", condition="original", variant_id=f"{it}/original",
                                  operation="none", turns=base, header=None, applicable=True))
        rows.append(common | dict(dimension="gender", condition="male", variant_id=f"{it}/gender/male",
                                  operation="turn_transformation", turns=_swap(base, "Maria", "Marco"),
                                  header=None, applicable=True))
        for cond, hdr in (("improving", "Past QA scores: 65 -> 80"), ("declining", "Past QA scores: 90 -> 75")):
            rows.append(common | dict(dimension="past_performance", condition=cond,
                                      variant_id=f"{it}/past_performance/{cond}", operation="metadata_header",
                                      turns=base, header=hdr, applicable=True))
        rows.append(common | dict(dimension="disability", condition="disabled", variant_id=f"{it}/disability/x",
                                  operation="context_injection", turns=None, header=None, applicable=False,
                                  reason="no agent turn to inject into", valid=None))
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)


#: Replies of the embedded local judge (Qwen2.5-Coder-1.5B Q4_K_M via llama.cpp) recorded
#: while sizing the default config, with what a reader reads in them.
LOCAL_QA_REPLIES = [
    ("Yes 100", "Yes", 100.0),
    ("Yes 90", "Yes", 90.0),
    ("No 70", "No", 70.0),
    ('{"answer": "Yes", "confidence": 100}', "Yes", 100.0),
    ('{"answer": "Yes", "confidence": 80}', "Yes", 80.0),
]
LOCAL_COACHING_REPLIES = [
    ('{"analysis": "The agent did not show any concrete strengths in this call. The only positive performance '
     'mentioned is the agent\'s clear", "score": 0}', 0.0),
    ('{"analysis": "- Agent was clear and concise in explaining the situation and the steps to resolve it.\n- '
     'Agent took ownership of the job", "score": 80}', 80.0),
    ('{ "analysis": "- Agent did not provide the customer\'s home address, which is crucial for the transfer to '
     'be cancelled.\n- The agent did,", "score": 75}', 75.0),
]


# --- the metrics with the contact-center study's column names filled in -------------------------
# cfbench.metrics.counterfactual has no study defaults; these wrappers pass the names the study
# uses (as cfbench.studies.contact_center_qa.tables does), and any keyword given overrides them.

from cfbench.metrics import counterfactual as _M  # noqa: E402

CC_UNIT = ["item_id", "question_id"]
CC_BY = ["judge", "dimension"]


def _with(defaults, fn):
    def call(*args, **kw):
        return fn(*args, **(defaults | kw))
    call.__name__ = fn.__name__
    return call


flip_rate = _with(dict(value="answer_yes", unit=CC_UNIT, by=CC_BY), _M.flip_rate)
mean_abs_score_diff = _with(dict(value="confidence", unit=CC_UNIT, by=CC_BY), _M.mean_abs_score_diff)
cfr_masd = _with(dict(answer="answer_yes", score="confidence", unit=CC_UNIT, by=CC_BY), _M.cfr_masd)
pair_table = _with(dict(unit=CC_UNIT, by=CC_BY), _M.pair_table)
robustness_baseline = _with(dict(answer="answer_yes", scores=("confidence",), unit=CC_UNIT, by=["judge"]),
                            _M.robustness_baseline)
accuracy = _with(dict(answer="answer_yes", label="label", by=["judge"]), _M.accuracy)
repeat_kappa = _with(dict(answer="answer_yes", unit=CC_UNIT, by=["judge"]), _M.repeat_kappa)
flip_distribution = _with(dict(value="answer_yes", unit=CC_UNIT, by=CC_BY), _M.flip_distribution)
cfr_minus_robustness = _with(dict(value="answer_yes", unit=CC_UNIT, by=CC_BY), _M.cfr_minus_robustness)
effect_direction = _with(dict(value="confidence", unit=CC_UNIT, by=CC_BY, match=["judge"]), _M.effect_direction)
fairness_prompting_delta = _with(dict(baseline="baseline", treated="fairness", by=["judge"], over="dimension"),
                                 _M.fairness_prompting_delta)
cohen_kappa = _M.cohen_kappa


def no_idea(request):
    """A judge that never answers (issue 12): spec ``scripted:cc_fixtures:no_idea``."""
    return "No idea, the transcript does not say."
