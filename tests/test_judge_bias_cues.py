"""Judge-bias cue perturbers and the verbosity content guard, on real STAR replies."""

from __future__ import annotations

import pytest

from cfbench.perturb.judge_cues import BATTERY, CandidatePair, content_guard, cue_phrases, cues, get_cue
from cfbench.studies.judge_bias.items import load_items, normalise, star_items

from judge_bias_util import star_dir


@pytest.fixture(scope="module")
def star_pairs():
    items = star_items(star_dir(), n_draft=15, n_control=15, seed=3, context_turns=6)
    return items


def test_every_cue_is_registered_with_a_frozen_versioned_description():
    assert set(BATTERY) <= set(cues())
    for name in BATTERY:
        d = get_cue(name).description
        assert d.tag == f"{name}@{d.version}" and d.does
        hash(d)  # frozen, parameters included (a list would make it unhashable)
    assert "phrases_version" in dict(get_cue("authority").description.parameters)


def test_cues_on_star_pairs_change_only_what_they_claim(star_pairs):
    for it in star_pairs:
        pair = CandidatePair({"real": it.real, "alt": it.alt}, ("real", "alt"))
        for target in ("real", "alt"):
            other = "alt" if target == "real" else "real"
            pos = get_cue("position").apply(pair, target)
            assert pos.order == (target, other) and dict(pos.texts) == dict(pair.texts)
            auth = get_cue("authority").apply(pair, target)
            assert auth.labels == {target: cue_phrases()["authority"]["label"]} and dict(auth.texts) == dict(pair.texts)
            src = get_cue("source").apply(pair, target)
            assert "human" in src.labels[target] and "AI" in src.labels[other]
            bw = get_cue("bandwagon").apply(pair, target)
            assert bw.note.endswith(f"Reply {pair.slot_of(target)}.") and dict(bw.texts) == dict(pair.texts)
            # the bandwagon note follows the slot when the order is swapped
            assert get_cue("bandwagon").apply(pair.swapped(), target).note.endswith(f"Reply {pair.swapped().slot_of(target)}.")
            v = get_cue("verbosity").apply(pair, target, seed=1, item_id=it.item_id)
            assert v.texts[other] == pair.texts[other]
            assert v.texts[target].startswith(pair.texts[target].rstrip())
            added = v.texts[target][len(pair.texts[target].rstrip()):]
            assert len(added) > 20 and content_guard(added) == []
            assert v.cue == "verbosity@1" and v.target == target


def test_verbosity_padding_is_seeded_and_deterministic(star_pairs):
    cue = get_cue("verbosity")
    a = [cue.padding(7, it.item_id) for it in star_pairs]
    assert a == [cue.padding(7, it.item_id) for it in star_pairs]
    assert len(set(a)) > 1  # differs across items


def test_content_guard_flags_digits_names_and_commitments_in_real_star_replies(star_pairs):
    # real STAR replies carry content the padding must never add: the guard sees it
    flagged = [it.real for it in star_pairs if content_guard(it.real)]
    assert flagged, "no real STAR reply flagged: the guard would pass anything"
    assert content_guard("Your booking for 6pm is confirmed.") != []
    assert any("digit" in p for p in content_guard("Table for 4 at the venue."))
    assert any("possible name" in p for p in content_guard("I hope you enjoy North Heights Venue."))
    assert any("commitment" in p for p in content_guard("We will refund you today."))
    assert any("commitment" in p for p in content_guard("I'll sort it out."))
    for s in cue_phrases()["verbosity"]["sentences"]:
        assert content_guard(s) == [], s


def test_a_cue_rejects_an_unknown_target():
    pair = CandidatePair({"real": "x", "alt": "y"}, ("real", "alt"))
    for name in BATTERY:
        with pytest.raises(ValueError):
            get_cue(name).apply(pair, "other")


def test_star_items_pair_the_sent_reply_with_a_different_draft_or_a_distant_control(star_pairs):
    kinds = {it.kind for it in star_pairs}
    assert kinds == {"draft", "control"}
    for it in star_pairs:
        assert it.context[-1][0] == "customer" and it.source == "star"
        assert normalise(it.real) != normalise(it.alt)
    # deterministic: the same seed gives the same items, another seed others
    again = star_items(star_dir(), n_draft=15, n_control=15, seed=3, context_turns=6)
    assert again == star_pairs
    other = star_items(star_dir(), n_draft=15, n_control=15, seed=4, context_turns=6)
    assert [i.item_id for i in other] != [i.item_id for i in star_pairs]


def test_without_star_the_synthetic_calls_give_control_items_and_say_so():
    items, source, why = load_items("none", n_draft=2, n_control=3, seed=1, context_turns=4)
    assert source == "synthetic" and len(items) == 5 and {i.kind for i in items} == {"control"}
    assert "none" in why


def test_star_items_never_repeat_the_same_prompt():
    from cfbench.studies.judge_bias.items import star_items

    items = star_items(star_dir(), n_draft=60, n_control=60, seed=20260027, context_turns=6)
    keys = {(tuple((s, normalise(t)) for s, t in i.context), normalise(i.real), normalise(i.alt)) for i in items}
    assert len(keys) == len(items) == 120
