"""The contact-center study takes the perturbers' LLM validation and a human review file as parameters."""

from __future__ import annotations

import pandas as pd

from cfbench.studies.contact_center_qa import Params, run

BASE = dict(judges=("scripted:cc-qa",), n_items=2, dimensions=("politeness", "past_performance"),
            questions=("issue_resolution",), qa_mode="compact", repeats=1, fairness=False, coaching=False,
            n_boot=0)


def _rejections(result) -> pd.DataFrame:
    return result.tables["variant_rejections"].set_index("dimension")


def test_an_llm_validator_named_by_spec_rejects_variants(tmp_path):
    plain = run(Params(**BASE), progress=False)
    checked = run(Params(**BASE, validate_judge="scripted:perturb_doubles:validate_no_request"), progress=False)
    assert _rejections(plain)["n_rejected_llm"].sum() == 0
    assert _rejections(checked).loc["politeness", "n_rejected_llm"] > 0
    variants = checked.frames["variants"]
    assert (variants.loc[variants["rejected_by"] == "llm", "valid"] == False).all()  # noqa: E712


def test_a_review_file_marks_rejected_variants_as_human_review(tmp_path):
    first = run(Params(**BASE), progress=False).frames["variants"]
    made = first[first["applicable"].astype(bool) & (first["dimension"] == "past_performance")]
    target = made["variant_id"].iloc[0]
    path = tmp_path / "reviewed.csv"
    pd.DataFrame({"variant_id": [target], "decision": ["reject"]}).to_csv(path, index=False)
    second = run(Params(**BASE, decisions_path=str(path)), progress=False)
    row = second.frames["variants"].set_index("variant_id").loc[target]
    assert not row["valid"] and row["rejection_reason"] == "human review" and row["rejected_by"] == "human"
    assert _rejections(second).loc["past_performance", "n_rejected_human"] == 1


def test_a_review_of_decisions_on_two_transcripts_applies_to_each_and_an_unknown_id_is_refused(tmp_path):
    """The run plans transcript by transcript: each transcript gets the decisions on its own variants, and a
    decision on no variant of the run still raises (never dropped)."""
    import pytest

    from cfbench.core.errors import InputError

    first = run(Params(**BASE), progress=False).frames["variants"]
    made = first[first["applicable"].astype(bool) & (first["dimension"] == "past_performance")]
    targets = made.drop_duplicates("item_id")["variant_id"].tolist()
    assert len(targets) == 2  # one variant of each transcript
    path = tmp_path / "reviewed.csv"
    pd.DataFrame({"variant_id": targets, "decision": ["reject"] * 2}).to_csv(path, index=False)
    second = run(Params(**BASE, decisions_path=str(path)), progress=False)
    assert _rejections(second).loc["past_performance", "n_rejected_human"] == 2
    pd.DataFrame({"variant_id": targets + ["zz999::past_performance::improving"],
                  "decision": ["reject"] * 3}).to_csv(path, index=False)
    with pytest.raises(InputError, match="not a variant of this run"):
        run(Params(**BASE, decisions_path=str(path)), progress=False)
