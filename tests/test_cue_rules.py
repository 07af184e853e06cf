"""The cue lexicon (cfbench/data/perturb/cues.yaml) against the written rules in its README.

What a word list can check is checked here; whether a cue reads naturally stays a human
judgment (README.md says so). Each rule's check is also run on a cue that breaks it, so no
check passes vacuously.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from cfbench.perturb.base import load_data
from cfbench.perturb.cues import stands_for, unexplained_cues
from cfbench.perturb.validate import fact_tokens
from star_util import need_star

CUES = load_data("cues.yaml")
ALL = [(dim, group, kind, cue) for dim in ("ethnicity", "religion") for group, kinds in CUES[dim].items()
       for kind, lst in kinds.items() for cue in lst]

# rule 1: slang, caricature and folksy idioms (and dropped g's / dialect spellings)
SLANG = re.compile(r"(?i)\b(rez|howdy|y'all|ya'll|ain't|gonna|wanna|gotta|bro|bruh|fam|sis|homie|dude|yo|lit|"
                   r"chillin|amigo|cowboy|partner|mate|ese|holla|dawg|folks|reckon|fixin)\b|\w+in'(\s|$|[!.,])")
# rule 2: nothing about competence, speed, temperament, availability, effort; nothing about the task
OFF_LIMITS = re.compile(r"(?i)\b(slow|quick|fast|late|early|leave|leaving|busy|tired|sorry|apologi\w*|hurry|"
                        r"break|sick|fasting|quiet|focus\w*|skill\w*|experienc\w*|new here|trainee|angry|"
                        r"refund|order|account|charge\w*|payment|booking|ticket|complaint|problem|issue)\b")
MONTHS = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b")
# rule 4: religious words never in an ethnicity cue
RELIGIOUS = re.compile(r"(?i)\b(god|bless\w*|church|mosque|temple|synagogue|pray\w*|christmas|easter|eid|"
                       r"ramadan|diwali|navratri|shabbat|vesak|hashem|alhamdulillah|insha'?allah|namaste|"
                       r"shalom|salaam|dharma|buddha\w*|krishna|amen|lord|jesus|allah)\b")
MAX_WORDS = 14


def _breaks_rules(dim: str, cue: str) -> list[str]:
    out = []
    if SLANG.search(cue):
        out.append("slang")
    if OFF_LIMITS.search(cue):
        out.append("off-limits topic")
    if re.search(r"\d", cue) or MONTHS.search(cue) or fact_tokens(cue):
        out.append("number or date")
    if dim == "ethnicity" and RELIGIOUS.search(cue):
        out.append("religion in an ethnicity cue")
    if len(cue.split()) > MAX_WORDS:
        out.append("too long for small talk")
    return out


@pytest.mark.parametrize("dim, group, kind, cue", ALL, ids=[f"{d}-{g}-{k}-{i % 2}" for i, (d, g, k, _) in enumerate(ALL)])
def test_each_cue_meets_the_rules(dim, group, kind, cue):
    assert _breaks_rules(dim, cue) == []
    assert len(stands_for(dim, group, cue).split()) >= 2  # says who or what it stands for


@pytest.mark.parametrize("dim, cue, broken", [
    ("ethnicity", "Greetings from the rez!", "slang"),
    ("ethnicity", "Howdy!", "slang"),
    ("ethnicity", "I'm just chillin' today.", "slang"),
    ("religion", "Sorry, I'm fasting so I may be slow.", "off-limits topic"),
    ("ethnicity", "Happy Fourth of July!", "number or date"),
    ("ethnicity", "Back from the 4th cookout.", "number or date"),
    ("ethnicity", "Hope you're having a blessed week!", "religion in an ethnicity cue"),
])
def test_the_checks_catch_cues_that_break_the_rules(dim, cue, broken):
    assert broken in _breaks_rules(dim, cue)


def test_every_cue_and_only_cues_have_a_stands_for_entry():
    raw = (Path(__file__).resolve().parents[1] / "cfbench" / "data" / "perturb" / "cues.yaml").read_text("utf-8")
    assert raw.count("\nstands_for:") == 1  # YAML keeps the last of two keys silently
    assert unexplained_cues("ethnicity") == [] and unexplained_cues("religion") == []
    assert sum(len(g) for d in CUES["stands_for"].values() for g in d.values()) == len(ALL)


def test_no_cue_belongs_to_two_groups():
    seen: dict[str, str] = {}
    for dim, group, _, cue in ALL:
        assert seen.setdefault(cue, f"{dim}/{group}") == f"{dim}/{group}", cue


def test_each_group_keeps_two_cues_of_each_kind():
    for dim in ("ethnicity", "religion"):
        for group, kinds in CUES[dim].items():
            assert {k: len(v) for k, v in kinds.items()} == {"greeting": 2, "closing": 2, "smalltalk": 2}, group


def test_the_reviewed_out_cues_are_gone():
    texts = {cue for *_, cue in ALL}
    assert not texts & {"Greetings from the rez!", "Howdy!", "Hope you're having a blessed week!"}
    assert CUES["version"] == 3


_star_dir = need_star


def test_cues_placed_into_real_star_dialogues_pass_the_guards():
    from cfbench.io.star import load_star
    from cfbench.perturb import make_variants

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ts = load_star(_star_dir(), limit=60, skip_empty=True)
    v = make_variants(ts, dimensions=["ethnicity_cues", "religion_cues"], seed=0, progress=False)
    made = v[(v["dimension"] != "original") & v["applicable"].astype(bool)]
    assert len(made) >= 50
    assert made["valid"].astype(bool).all(), made.loc[~made["valid"].astype(bool), "rejection_reason"].head().tolist()
    texts = {cue for *_, cue in ALL}
    variant_text = ["\n".join(t["text"] for t in turns) for turns in made["turns"]]
    # each made variant carries at least one cue of the lexicon, on real text
    hits = sum(any(c.rstrip("!.") in vt for c in texts) for vt in variant_text)
    assert hits == len(made)
