"""The synthetic generator: determinism, labels by construction, plans, the shipped set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cfbench.io.transcripts import load_transcripts
from cfbench.studies.contact_center_qa.synth import (DOMAINS, LABEL_QUESTIONS, generate_transcripts, render_plan, shipped_transcripts_path,
                           write_synthetic_set)
from cfbench.studies.contact_center_qa.synth.domains import PII_FIELDS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def many():
    return generate_transcripts(60, seed=7)


def test_same_seed_same_transcripts_and_item_independent_of_batch():
    a = generate_transcripts(5, seed=3)
    b = generate_transcripts(9, seed=3)
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b[:5]]
    c = generate_transcripts(5, seed=4)
    assert [t.to_dict() for t in a] != [t.to_dict() for t in c]


def test_label_ids_match_the_rubric_constant(many):
    assert LABEL_QUESTIONS == ("issue_resolution", "greeting_name", "pii_disclosure", "work_avoidance")
    for t in many:
        assert tuple(t.labels) == LABEL_QUESTIONS
        assert set(t.labels.values()) <= {"Yes", "No"}


def test_all_twelve_domains_and_turn_bounds(many):
    assert len(DOMAINS) == 12
    assert {t.domain for t in many} == set(DOMAINS)
    assert all(10 <= t.n_turns <= 14 for t in many)
    longer = generate_transcripts(12, seed=1, min_turns=26, max_turns=46)
    assert all(26 <= t.n_turns <= 46 for t in longer)


def test_labels_agree_with_the_text(many):
    """Check each label from the words of the transcript, not from the plan."""
    values = {v for vs in PII_FIELDS.values() for v in vs}
    for t in many:
        first = t.turns[0]
        assert first.speaker == "agent"
        has_name = bool(t.agent_name) and re.search(rf"\b{re.escape(t.agent_name)}\b", first.text) is not None
        assert (t.labels["greeting_name"] == "Yes") == has_name, t.id
        # PII disclosure: a personal-data value is said first by the agent
        said = [(x.speaker, v) for x in t.turns for v in values if v in x.text]
        assert said, t.id
        assert (t.labels["pii_disclosure"] == "Yes") == (said[0][0] == "agent"), t.id
        text = " ".join(x.text for x in t.turns)
        if t.labels["work_avoidance"] == "Yes":
            assert t.labels["issue_resolution"] == "No"
            assert "I can't look into it" in text
        if t.labels["issue_resolution"] == "Yes":
            assert "still not fixed" not in text and "not helpful" not in text
        else:
            assert "still not fixed" in text or "not helpful at all" in text


def test_mixed_outcomes_and_cues_present(many):
    outcomes = {t.meta["outcome"] for t in many}
    assert outcomes == {"resolved", "failed", "avoided"}
    assert any("sir" in x.text or "ma'am" in x.text for t in many for x in t.turns)
    assert any(p["kind"] == "agent_ref" for t in many for turn in t.meta["plan"] for p in turn["pieces"])
    assert any(p["kind"] == "filler" for t in many for turn in t.meta["plan"] for p in turn["pieces"])


def test_plan_renders_to_the_text(many):
    for t in many:
        assert render_plan(t.meta["plan"], t.meta["context"]) == [x.text for x in t.turns]


def test_shipped_set_is_what_the_command_regenerates(tmp_path):
    shipped = shipped_transcripts_path()
    stats_path = shipped.parent / "synthetic_stats.json"
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    j, s = write_synthetic_set(tmp_path, n=stats["n"], seed=stats["seed"], min_turns=stats["min_turns"],
                               max_turns=stats["max_turns"])
    assert j.read_bytes() == shipped.read_bytes()
    regenerated = json.loads(s.read_text(encoding="utf-8"))
    assert {k: v for k, v in regenerated.items() if k != "command"} == \
        {k: v for k, v in stats.items() if k != "command"}
    ts = load_transcripts(shipped)
    assert len(ts) == stats["n"] == 24
    counts = stats["labels"]
    assert counts["issue_resolution"]["Yes"] > 0 and counts["issue_resolution"]["No"] > 0
    assert counts["pii_disclosure"]["Yes"] > 0
