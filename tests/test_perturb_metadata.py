"""Operation 3: metadata headers (conditions, content, determinism), turns unchanged."""

from __future__ import annotations

import pytest

from cfbench.perturb import DIMENSIONS, get_perturber, identify_turns, render_transcript
from cfbench.perturb.header import header_text
from cfbench.studies.contact_center_qa.synth import generate_transcripts

T = generate_transcripts(1, seed=0)[0]


@pytest.mark.parametrize("dim,n", [("past_performance", 5), ("agent_profile", 4), ("customer_profile", 4),
                                   ("priming", 5), ("contextual_metadata", 3)])
def test_conditions_and_unchanged_turns(dim, n):
    p = get_perturber(dim)
    assert len(p.dimension.conditions) == n and p.dimension.compared == p.dimension.conditions
    assert DIMENSIONS[dim].operation == "metadata_header"
    headers = set()
    for cond in p.dimension.conditions:
        v = p.perturb(T, identify_turns(T), cond, seed=0)
        assert v.turns == [x.to_dict() for x in T.turns] and v.edits == []
        assert v.header.startswith("Agent and call record:\n- ") and "{" not in v.header
        headers.add(v.header)
    assert len(headers) == n


def test_header_contents():
    assert header_text("past_performance", "improving", seed=0, item_id="a").endswith("64 -> 81 (improving).")
    assert "Senior Advisor" in header_text("agent_profile", "senior_advisor_7y", seed=0, item_id="a")
    assert "VIP Platinum" in header_text("customer_profile", "vip_platinum", seed=0, item_id="a")
    assert "empathy" in header_text("priming", "focused_issue", seed=0, item_id="a")


def test_contextual_fillers_are_seeded_per_item():
    one = {header_text("contextual_metadata", "environmental", seed=0, item_id=f"x{i}") for i in range(20)}
    assert len(one) > 1
    assert header_text("contextual_metadata", "operational_queue", seed=1, item_id="a") == \
        header_text("contextual_metadata", "operational_queue", seed=1, item_id="a")


def test_render_puts_header_on_top():
    v = get_perturber("agent_profile").perturb(T, identify_turns(T), "trainee_2w", seed=0)
    text = render_transcript(v.turns, v.header)
    assert text.splitlines()[:3] == ["Agent and call record:", "- Agent role: Trainee. Time in role: 2 weeks.", ""]
    assert text.splitlines()[3] == f"Agent: {T.turns[0].text}"
    assert render_transcript(v.turns, None).splitlines()[0] == f"Agent: {T.turns[0].text}"
