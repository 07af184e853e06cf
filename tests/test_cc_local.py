"""The Auto-QA and coaching contracts against the real embedded local judge (slow)."""

from __future__ import annotations

import json
import math

import pytest

from cc_fixtures import BASE_TURNS
from cfbench.judges import run_requests
from cfbench.studies.contact_center_qa import coaching, qa

pytestmark = pytest.mark.local_model
JUDGE = "local:qwen2.5-coder-1.5b"


def test_compact_and_json_contracts_parse_on_the_local_model():
    text = qa.format_transcript(BASE_TURNS)
    q = qa.load_rubric().set_index("question_id").loc["issue_resolution"].to_dict()
    reqs = [qa.qa_request("compact", text, q, mode="compact"), qa.qa_request("json", text, q, mode="json"),
            coaching.coaching_request("coach", text, "positives", config=coaching.coaching_config(analysis_chars=80))]
    j = run_requests(JUDGE, reqs, progress=False).judgments
    assert j["ok"].all()
    compact = qa.parse_qa(j.loc[0, "text"], json.loads(j.loc[0, "top_logprobs"]))
    assert compact["parse_ok"] and 0.0 <= compact["p_yes"] <= 1.0
    as_json = qa.parse_qa(j.loc[1, "text"])
    assert as_json["parse_ok"] and math.isnan(as_json["p_yes"])
    c = coaching.parse_coaching(j.loc[2, "text"])
    assert c["parse_ok"] and 0 <= c["score"] <= 100
