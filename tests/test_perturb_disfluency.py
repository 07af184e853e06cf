"""Disfluency cleaning (Operation 1): fillers and repeats removed, nothing else."""

from __future__ import annotations

import pytest

from cfbench.perturb import check_variant, clean_disfluencies, get_perturber, identify_turns
from cfbench.studies.contact_center_qa.synth import generate_transcripts


@pytest.mark.parametrize("text,expected", [
    ("Um, okay. I I can see the the charge, uh, from March.", "I can see the charge from March."),
    ("Uh, right. Let me check.", "Let me check."),
    ("So um the refund is $20.", "So the refund is $20."),
    ("Hmm, okay.", ""),
    ("Well, um. It is fine.", "It is fine."),
    ("I will check that for you.", "I will check that for you."),
])
def test_clean_disfluencies(text, expected):
    assert clean_disfluencies(text) == expected


def test_perturber_removes_planned_fillers_only():
    ts = generate_transcripts(40, seed=9)
    p = get_perturber("disfluency")
    n = 0
    for t in ts:
        has_filler = any(pc["kind"] == "filler" for turn in t.meta["plan"] for pc in turn["pieces"])
        v = p.perturb(t, identify_turns(t), "cleaned", seed=0)
        assert v.applicable == has_filler, t.id
        if not v.applicable:
            continue
        n += 1
        assert check_variant(t, v) == []
        for turn, new in zip(t.meta["plan"], v.turns):
            for pc in turn["pieces"]:
                if pc["kind"] == "filler":
                    assert pc["text"] not in new["text"]
    assert n > 3
