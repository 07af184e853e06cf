"""The agent_identity cue on real STAR replies: both replies signed, contrasting identities from the
shared lexicons, seeded, stands_for recorded, only the sign-off span added."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cfbench.perturb.base import load_data
from cfbench.perturb.judge_cue_agent_identity import AgentIdentityCue
from cfbench.perturb.judge_cue_base import CueGuardError
from cfbench.perturb.judge_cues import BATTERY, CandidatePair, cue_phrases, get_cue
from cfbench.studies.judge_bias.items import star_items

from judge_bias_util import star_dir


@pytest.fixture(scope="module")
def star_pairs():
    items = star_items(star_dir(), n_draft=15, n_control=15, seed=9, context_turns=4)
    return [(it.item_id, CandidatePair({"real": it.real, "alt": it.alt}, ("real", "alt"))) for it in items]


def _signed(text: str) -> tuple[str, str]:
    """(own text, name) of a signed reply."""
    head, _, name = text.rpartition(", ")
    return head, name


def test_registered_in_the_battery_pairwise_only_with_a_frozen_description():
    assert "agent_identity" in BATTERY
    cue = get_cue("agent_identity")
    assert cue.tasks == ("pairwise",)
    d = cue.description
    assert d.tag == "agent_identity@1" and hash(d)
    p = dict(d.parameters)
    assert p["axis"] == "gender" and p["cued"] == "female" and p["other"] == "male"
    assert p["names_version"] == load_data("names.yaml")["version"]
    assert p["signoff"] == cue_phrases()["agent_identity"]["signoff"]


def test_gender_contrast_on_star_signs_both_replies_with_one_groups_female_and_male_names(star_pairs):
    cue = get_cue("agent_identity")
    names = load_data("names.yaml")["ethnicity"]
    groups_seen = set()
    for iid, plain in star_pairs:
        for target in plain.order:
            other = next(k for k in plain.order if k != target)
            cued = cue.apply(plain, target, seed=4, item_id=iid)
            assert cued.order == plain.order and dict(cued.labels) == {} and cued.note == ""
            drawn = {}
            for k in plain.order:
                base = plain.texts[k].rstrip()
                assert cued.texts[k].startswith(base)  # the reply's own text, byte for byte
                tail = cued.texts[k][len(base):]
                assert tail.lstrip(". ").startswith("Kind regards, ")
                drawn[k] = _signed(cued.texts[k])[1]
                assert drawn[k].lower() not in plain.texts[k].lower().split()
            group = next(g for g in names if drawn[target] in names[g]["female"])
            assert drawn[other] in names[group]["male"]  # the same group: only gender differs
            groups_seen.add(group)
            assert f"'{drawn[target]}'" in cued.stands_for[target] and "female-coded" in cued.stands_for[target]
            assert f"'{drawn[other]}'" in cued.stands_for[other] and "male-coded" in cued.stands_for[other]
            assert cued.cue == "agent_identity@1" and cued.target == target
    assert len(groups_seen) >= 3  # the group is drawn per item


def test_names_already_in_a_reply_are_never_drawn(star_pairs):
    cue = get_cue("agent_identity")
    iid, plain = star_pairs[0]
    first = cue.apply(plain, "alt", seed=4, item_id=iid)
    name = _signed(first.texts["alt"])[1]
    crowded = replace(plain, texts={"real": plain.texts["real"] + f" {name} will help.", "alt": plain.texts["alt"]})
    again = cue.apply(crowded, "alt", seed=4, item_id=iid)
    assert _signed(again.texts["alt"])[1] != name
    # and a signature with a name that was already there is rejected by the guard
    texts = dict(again.texts)
    texts["alt"] = again.texts["alt"].rpartition(", ")[0] + f", {name}"
    assert any("already appears" in p for p in cue.guard(crowded, replace(again, texts=texts)))


def test_religion_contrast_with_culture_well_wishes_on_star(star_pairs):
    cue = AgentIdentityCue("agent_identity_religion", axis="religion", cued="islam", other="christianity",
                           with_cue=True)
    assert cue.description.tag == "agent_identity_religion@1"
    assert dict(cue.description.parameters)["cues_version"] == load_data("cues.yaml")["version"]
    lex = load_data("cues.yaml")["religion"]
    names = load_data("names.yaml")["religion"]
    for iid, plain in star_pairs:
        cued = cue.apply(plain, "real", seed=2, item_id=iid)
        for k, group in (("real", "islam"), ("alt", "christianity")):
            tail = cued.texts[k][len(plain.texts[k].rstrip()):]
            wish = next(w for w in lex[group]["closing"] if w in tail)
            name = _signed(cued.texts[k])[1]
            assert name in names[group]["male"] + names[group]["female"]
            assert load_data("cues.yaml")["stands_for"]["religion"][group][wish] in cued.stands_for[k]
        assert cue.guard(plain, cued, seed=2, item_id=iid) == []
        # a well-wish of the other group on the cued reply is not this contrast
        w_islam = next(w for w in lex["islam"]["closing"] if w in cued.texts["real"])
        bad = replace(cued, texts={**dict(cued.texts), "real": cued.texts["real"].replace(
            w_islam, lex["christianity"]["closing"][0])})
        with pytest.raises(CueGuardError, match="not a registered sign-off of the islam identity"):
            cue.check(plain, bad, item_id=iid)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(axis="age"), "axis must be one of"),
    (dict(axis="gender", cued="female", other="female"), "both 'female'"),
    (dict(axis="ethnicity", cued="martian", other="white"), "cued must be one of"),
    (dict(axis="gender", with_cue=True), "culture well-wishes"),
])
def test_a_contrast_that_is_not_one_is_refused(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        AgentIdentityCue("x", **kwargs)


def test_the_signoff_span_is_the_only_edit_on_the_review_page(star_pairs):
    from cfbench.perturb.judge_cue_review import cue_variants

    v = cue_variants([{"item_id": i, "real": p.texts["real"], "alt": p.texts["alt"]} for i, p in star_pairs[:6]],
                     ["agent_identity"], seed=4)
    rows = v[v["dimension"] == "cue:agent_identity"]
    assert len(rows) == 12 and rows["valid"].all()
    for r in rows.itertuples():
        assert len(r.edits) == 2  # both replies, nothing else
        for e in r.edits:
            assert e["after"].startswith(e["before"].rstrip()) and "Kind regards, " in e["after"][len(e["before"]):]
        assert "female-coded" in r.reason and "male-coded" in r.reason  # stands_for shown to the reviewer
