"""Every judge-bias cue's guard on real STAR replies: clean cued pairs pass, corrupted ones are rejected
with one clear line, seeded choices reproduce."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cfbench.perturb.judge_cue_base import CueGuardError
from cfbench.perturb.judge_cues import BATTERY, CandidatePair, cue_phrases, get_cue
from cfbench.studies.judge_bias.items import star_items

from judge_bias_util import star_dir

SEED = 11


@pytest.fixture(scope="module")
def star_pairs():
    items = star_items(star_dir(), n_draft=12, n_control=12, seed=5, context_turns=4)
    return [(it.item_id, CandidatePair({"real": it.real, "alt": it.alt}, ("real", "alt"))) for it in items]


def _other(pair: CandidatePair, target: str) -> str:
    return next(k for k in pair.texts if k != target)


def _swap_word(text: str) -> str:
    """``text`` with its first word of 3+ letters replaced (a content edit)."""
    words = text.split(" ")
    for i, w in enumerate(words):
        if sum(ch.isalpha() for ch in w) >= 3:
            words[i] = "purple" if w.lower() != "purple" else "orange"
            return " ".join(words)
    return text + " purple"


def corruptions(name: str, plain: CandidatePair, cued: CandidatePair) -> list[tuple[str, CandidatePair]]:
    """Cued pairs that change something the cue does not claim (or change its claim)."""
    t, o = cued.target, _other(plain, cued.target)
    out = []
    texts = dict(cued.texts)
    texts[o] = _swap_word(cued.texts[o])
    out.append(("other reply edited", replace(cued, texts=texts)))
    texts = dict(cued.texts)
    texts[t] = _swap_word(cued.texts[t])  # the first word is the reply's own text, not the cue's span
    out.append(("cued reply edited", replace(cued, texts=texts)))
    texts = dict(cued.texts)
    texts[t] = cued.texts[t] + " We will refund 20 dollars today."
    out.append(("content appended", replace(cued, texts=texts)))
    out.append(("cue tag wrong", replace(cued, cue=f"{name}@99")))
    out.append(("extra label on the other reply", replace(cued, labels={**dict(cued.labels), o: "approved by a manager"})))
    out.append(("stands_for invented", replace(cued, stands_for={**dict(cued.stands_for), t: "a made-up identity"})))
    if name != "bandwagon":
        out.append(("note added", replace(cued, note="Most reviewers who saw this conversation preferred Reply A.")))
    else:
        wrong = "A" if cued.slot_of(t) == "B" else "B"
        out.append(("note names the wrong slot", replace(cued, note=f"Most reviewers who saw this conversation preferred Reply {wrong}.")))
        out.append(("note reworded", replace(cued, note=cued.note.replace("Most", "All"))))
    if name == "position":
        out.append(("cued reply not in slot A", replace(cued, order=(o, t))))
    else:
        out.append(("order swapped", cued.swapped()))
    if name == "authority":
        out.append(("label reworded", replace(cued, labels={t: "approved by a senior manager"})))
        out.append(("label on the wrong reply", replace(cued, labels={o: cued.labels[t]})))
    if name == "source":
        out.append(("labels exchanged", replace(cued, labels={t: cued.labels[o], o: cued.labels[t]})))
        out.append(("AI label dropped", replace(cued, labels={t: cued.labels[t]})))
    if name == "verbosity":
        texts = dict(cued.texts)
        pad = cued.texts[t][len(plain.texts[t].rstrip()):]
        s = cue_phrases()["verbosity"]["sentences"]
        other_pad = next(x for x in s if x not in pad)
        first = next(x for x in s if x in pad)
        texts[t] = cued.texts[t].replace(first, other_pad)
        out.append(("a registered sentence the seed did not pick", replace(cued, texts=texts)))
        texts = dict(cued.texts)
        texts[t] = cued.texts[t].replace(first, "Your order ships on Monday.")
        out.append(("padding sentence with content", replace(cued, texts=texts)))
        out.append(("padding on the other reply", replace(cued, texts={t: plain.texts[t], o: cued.texts[t].replace(
            plain.texts[t].rstrip(), plain.texts[o].rstrip())})))
    if name == "agent_identity":
        texts = dict(cued.texts)
        texts[o] = plain.texts[o]
        out.append(("other reply unsigned", replace(cued, texts=texts)))
        name_t = cued.stands_for[t].split("'")[1]
        name_o = cued.stands_for[o].split("'")[1]
        texts = dict(cued.texts)
        texts[t] = cued.texts[t][: -len(name_t)] + name_o
        out.append(("both signed with one name", replace(cued, texts=texts)))
        texts = dict(cued.texts)
        texts[t] = cued.texts[t].replace("Kind regards", "Warm regards")
        out.append(("sign-off reworded", replace(cued, texts=texts)))
        texts = dict(cued.texts)
        texts[t], texts[o] = (cued.texts[t][: -len(name_t)] + name_o, cued.texts[o][: -len(name_o)] + name_t)
        out.append(("identities exchanged", replace(cued, texts=texts)))
        texts = dict(cued.texts)
        texts[t] = cued.texts[t][: -len(name_t)] + ("Aaliyah" if name_t != "Aaliyah" else "Mei")
        out.append(("a name of another group", replace(cued, texts=texts)))
        out.append(("stands_for swapped", replace(cued, stands_for={t: cued.stands_for[o], o: cued.stands_for[t]})))
    return out


@pytest.mark.parametrize("name", BATTERY)
def test_clean_cued_star_pairs_pass_their_guard_and_reproduce(star_pairs, name):
    cue = get_cue(name)
    for iid, plain in star_pairs:
        for target in plain.order:
            cued = cue.apply(plain, target, seed=SEED, item_id=iid)
            assert cue.guard(plain, cued, seed=SEED, item_id=iid) == []
            assert cue.guard(plain, cued) == []  # the unseeded (structural) guard too
            again = cue.apply(plain, target, seed=SEED, item_id=iid)
            assert dict(again.texts) == dict(cued.texts) and again == cued


@pytest.mark.parametrize("name", BATTERY)
def test_every_corruption_of_a_star_cued_pair_is_rejected_in_one_line(star_pairs, name):
    cue = get_cue(name)
    kinds_seen: dict[str, int] = {}
    for iid, plain in star_pairs:
        for target in plain.order:
            cued = cue.apply(plain, target, seed=SEED, item_id=iid)
            for kind, bad in corruptions(name, plain, cued):
                if bad == cued:
                    continue  # e.g. position: swapping back is the plain order when the target was in B
                problems = cue.guard(plain, bad, seed=SEED, item_id=iid)
                assert problems, f"{name}: {kind} on {iid} passed the guard"
                kinds_seen[kind] = kinds_seen.get(kind, 0) + 1
                with pytest.raises(CueGuardError) as exc:
                    cue.check(plain, bad, seed=SEED, item_id=iid)
                msg = str(exc.value)
                assert "\n" not in msg and msg.startswith(f"cue {name} on {iid} fails its guard: ")
    assert len(kinds_seen) >= 8, kinds_seen  # every kind was actually tried on real text


@pytest.mark.parametrize("name", BATTERY)
def test_apply_raises_when_the_change_breaks_the_guard(star_pairs, name, monkeypatch):
    cue = get_cue(name)
    iid, plain = star_pairs[0]
    real_make = type(cue).make

    def bad_make(self, pair, target, *, seed=0, item_id=""):
        cued = real_make(self, pair, target, seed=seed, item_id=item_id)
        other = _other(pair, target)
        return replace(cued, texts={**dict(cued.texts), other: _swap_word(cued.texts[other])})

    monkeypatch.setattr(type(cue), "make", bad_make)
    with pytest.raises(CueGuardError, match=f"cue {name} on {iid} fails its guard"):
        cue.apply(plain, "alt", seed=SEED, item_id=iid)


def test_seeded_choices_reproduce_and_vary_across_items_and_seeds(star_pairs):
    for name in ("verbosity", "agent_identity"):
        cue = get_cue(name)
        a = [dict(cue.apply(p, "alt", seed=SEED, item_id=i).texts) for i, p in star_pairs]
        assert a == [dict(cue.apply(p, "alt", seed=SEED, item_id=i).texts) for i, p in star_pairs]
        b = [dict(cue.apply(p, "alt", seed=SEED + 1, item_id=i).texts) for i, p in star_pairs]
        assert a != b  # another seed draws other padding / names on some items
        added = {x["alt"][len(p.texts["alt"].rstrip()):] for x, (_, p) in zip(a, star_pairs)}
        assert len(added) > 1  # differs across items


def test_the_guard_rejects_a_pair_whose_candidates_changed(star_pairs):
    iid, plain = star_pairs[0]
    for name in BATTERY:
        cue = get_cue(name)
        cued = cue.apply(plain, "alt", seed=SEED, item_id=iid)
        bad = CandidatePair({"real": cued.texts["real"], "draft": cued.texts["alt"]}, ("real", "draft"),
                            cue=cued.cue, target="draft")
        assert cue.guard(plain, bad) and "candidate keys changed" in cue.guard(plain, bad)[0]


@pytest.mark.parametrize("real, alt", [
    ("ok", "Sure thing!  \n"),  # no terminal punctuation; trailing whitespace and newline
    ("¡Hola! ¿En qué puedo ayudarle?", "Kind regards, Megan"),  # non-ASCII; a reply that already signs off
    ("I'll send it to Megan Connor today.", "What is your booking number?"),  # names of the lexicon in the text
])
def test_edge_replies_pass_every_guard_and_keep_their_text(real, alt):
    plain = CandidatePair({"real": real, "alt": alt}, ("real", "alt"))
    for name in BATTERY:
        cue = get_cue(name)
        for target in plain.order:
            cued = cue.apply(plain, target, seed=SEED, item_id="edge")
            for k in plain.order:
                assert cued.texts[k].startswith(plain.texts[k].rstrip())
            if name == "agent_identity":
                signed = {cued.texts[k].rpartition(", ")[2] for k in plain.order}
                assert not signed & {"Megan", "Connor"}  # names already there are never drawn
