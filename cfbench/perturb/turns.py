"""Text operations shared by the Operation-1/2 perturbers: name swap, gender
swap, disfluency cleaning, applying turn edits, seeded name choice.

The text functions (:func:`swap_gender_words`, :func:`replace_name`,
:func:`clean_disfluencies`) are pure and usable on their own. The perturbers
use the turn identification to decide *which* words refer to the agent.

The gender swap keeps English grammatical: "her" becomes "him" when it is an
object ("I'll let her finish") and "his" when it is a possessive determiner
("on her screen"); "his" becomes "her" before a noun and "hers" when it
stands alone ("the fault was his"). The decision looks at the next word (and,
for let/make/help, the previous one). Known limit: after a perception verb
with a bare infinitive ("I heard her say it") "her" is read as possessive.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from cfbench.io.transcripts import Transcript

from .base import item_rng, load_data, pick
from .identify import TurnIdentification, find_gender_words

__all__ = ["swap_gender_words", "replace_name", "clean_disfluencies", "apply_turn_edits",
           "choose_name", "choose_group", "name_and_gender_edits", "scope_for"]

# Words after which "her" is an object pronoun (and "his" a standalone "hers").
_OBJECT_FOLLOWERS = {
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "my", "your", "his", "her", "our",
    "their", "its", "to", "for", "with", "about", "at", "in", "on", "from", "by", "of", "into", "onto", "up",
    "down", "out", "off", "over", "back", "again", "too", "now", "then", "and", "or", "but", "so", "if",
    "when", "because", "as", "know", "please", "today", "tomorrow", "yesterday", "right", "already",
    "later", "soon", "yet", "once", "twice", "first", "what", "how", "why", "where", "whether", "anything",
    "something", "nothing", "everything", "all", "here", "there", "i", "you", "he", "she", "we", "they",
    "it", "me", "him", "us", "them", "is", "was", "am", "are", "were", "be", "very", "alone", "well",
    "personally", "directly", "enough", "though", "either", "instead", "ma'am", "sir", "just", "who",
    "which", "not",
}
_TO_MALE = {"she": "he", "herself": "himself", "hers": "his", "ma'am": "sir", "ma’am": "sir", "maam": "sir",
            "madam": "sir", "miss": "sir", "ms": "mr", "ms.": "mr.", "mrs": "mr", "mrs.": "mr."}
_TO_FEMALE = {"he": "she", "him": "her", "himself": "herself", "sir": "ma'am", "mr": "ms", "mr.": "ms."}


def _match_case(src: str, new: str) -> str:
    if len(src) > 1 and src.isupper():
        return new.upper()
    if src[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _next_word(text: str, pos: int) -> str | None:
    """The next token after ``pos``: a lower-cased word, a digit run, or None at punctuation/end."""
    m = re.match(r"\s*([A-Za-z][A-Za-z'’\-]*|\d+)", text[pos:])
    if not m:
        return None
    # punctuation directly after the word (e.g. "her," or "her.") ends the phrase
    if re.match(r"\s*[^\sA-Za-z0-9]", text[pos:]) and not re.match(r"\s+[A-Za-z0-9]", text[pos:]):
        return None
    return m.group(1).lower()


# Verbs after which "her" + bare verb is an object ("let her finish", "help her find").
# ("see/hear her ..." is left out: "I saw her new address" is far more common there.)
_CAUSATIVES = {"let", "lets", "letting", "make", "makes", "made", "help", "helps", "helped"}


def _prev_word(text: str, start: int) -> str | None:
    m = re.search(r"([A-Za-z][A-Za-z'’]*)\s+$", text[:start])
    return m.group(1).lower() if m else None


def _her_is_object(text: str, start: int, end: int) -> bool:
    nxt = _next_word(text, end)
    if nxt is None or nxt.isdigit() or nxt in _OBJECT_FOLLOWERS:
        return True
    return _prev_word(text, start) in _CAUSATIVES and nxt not in {"own"}


def _swap_word(word: str, target: str, text: str, start: int, end: int) -> str:
    low = word.lower().replace("’", "'")
    if target == "male":
        if low == "her":
            new = "him" if _her_is_object(text, start, end) else "his"
        elif low == "miss" and re.match(r"\s+[A-Z]", text[end:]):
            new = "mr."
        else:
            new = _TO_MALE.get(low, low)
    else:
        if low == "his":
            nxt = _next_word(text, end)
            new = "her" if (nxt is not None and not nxt.isdigit() and nxt not in _OBJECT_FOLLOWERS) else "hers"
        else:
            new = _TO_FEMALE.get(low, low)
    return _match_case(word, new)


def swap_gender_words(text: str, target: str, spans: Iterable[Mapping[str, Any]] | None = None) -> str:
    """Rewrite gendered words toward ``target`` ("male"/"female").

    ``spans`` are ``{"start", "end"}`` of the words to change (from
    :func:`cfbench.perturb.identify.find_gender_words` or an identification);
    by default every pronoun and vocative in ``text`` is changed. Words already
    of the target gender stay as they are.

    >>> swap_gender_words("Yes, she said she'd check her screen and call her back.", "male")
    "Yes, he said he'd check his screen and call him back."
    >>> swap_gender_words("The mistake was his, not mine. Thank you, sir.", "female")
    "The mistake was hers, not mine. Thank you, ma'am."
    """
    if target not in ("male", "female"):
        raise ValueError(f"target must be 'male' or 'female', got {target!r}")
    if spans is None:
        spans = find_gender_words(text, kinds=("pronoun", "vocative"))
    out, pos = [], 0
    for s in sorted(spans, key=lambda x: x["start"]):
        start, end = int(s["start"]), int(s["end"])
        out.append(text[pos:start])
        out.append(_swap_word(text[start:end], target, text, start, end))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def replace_name(text: str, old: str, new: str) -> str:
    """Replace the agent's name (full or first name) with ``new``, matching case style.

    >>> replace_name("hello this is monica, Monica's desk", "Monica", "Rivka")
    "hello this is rivka, Rivka's desk"
    """
    if not old:
        return text
    parts = [re.escape(p) for p in old.split()]
    alts = [r"\s+".join(parts)] + ([parts[0]] if len(parts) > 1 else [])
    pat = re.compile(r"(?i)(?<![\w'’])(?:" + "|".join(alts) + r")(?!\w)")

    def sub(m: re.Match[str]) -> str:
        src = m.group(0)
        if src.islower():
            return new.lower()
        if src.isupper() and len(src) > 1:
            return new.upper()
        return new

    return pat.sub(sub, text)


_FILLER_SENTENCE = re.compile(r"(?i)(?:(?<=^)|(?<=[.!?]\s))(?:um+|uh+|erm?|hmm+|well)(?:,\s*(?:okay|right|yeah|um+|uh+))?[.!?]\s*")
_FILLER_WORD = re.compile(r"(?i)(?:,\s*)?\b(?:um+|uh+|erm|hmm+)\b,?\s*")
_REPEAT = re.compile(r"(?i)\b(\w+)(\s+\1\b)+")


def clean_disfluencies(text: str) -> str:
    """Remove fillers (um, uh, erm, hmm), filler-only sentences and immediate word repeats.

    >>> clean_disfluencies("Um, okay. I I can see the the charge, uh, from March.")
    'I can see the charge from March.'
    """
    out = _FILLER_SENTENCE.sub("", text)
    out = _FILLER_WORD.sub(lambda m: " " if m.group(0).startswith(",") else "", out)
    out = _REPEAT.sub(r"\1", out)
    out = re.sub(r"\s+([,.!?])", r"\1", out)
    out = re.sub(r"\s{2,}", " ", out).strip()
    if out and text[:1].isupper():
        out = out[:1].upper() + out[1:]
    return out


def apply_turn_edits(transcript: Transcript, new_texts: Mapping[int, str]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """Turns with ``new_texts`` replaced, and the edit list (only turns that really changed)."""
    turns, edits = [], []
    for i, t in enumerate(transcript.turns):
        text = new_texts.get(i, t.text)
        turns.append({"speaker": t.speaker, "text": text})
        if text != t.text:
            edits.append({"turn": i, "op": "replace", "speaker": t.speaker, "before": t.text, "after": text})
    return turns, edits


# --------------------------------------------------------------------------- name choice

def choose_group(seed: int, item_id: str, kind: str, ident: TurnIdentification) -> str:
    """The ethnicity group used for the gender dimension: the original name's, else seeded."""
    names = load_data("names.yaml")
    if kind == "ethnicity" and ident.agent_race:
        return ident.agent_race
    return pick(item_rng(seed, item_id, "group", kind), sorted(names[kind]))


def choose_name(seed: int, item_id: str, kind: str, group: str, gender: str, *, avoid: str = "") -> str:
    """A seeded name from ``names.yaml[kind][group][gender]``, never the original name.

    The same (seed, item, kind, group, gender) always gives the same name, so
    the name-only and with-cues variants of a condition share it.
    """
    pool = [n for n in load_data("names.yaml")[kind][group][gender] if n.lower() != avoid.lower()]
    return pick(item_rng(seed, item_id, "name", kind, group, gender), pool)


def _agent_gender_for(seed: int, item_id: str, ident: TurnIdentification) -> str:
    return ident.agent_gender or pick(item_rng(seed, item_id, "gender"), ["female", "male"])


def name_and_gender_edits(transcript: Transcript, ident: TurnIdentification, new_name: str | None,
                          target_gender: str | None) -> dict[int, str]:
    """New texts for turns touched by a name swap and/or a gender swap."""
    new: dict[int, str] = {}
    if target_gender:
        by_turn: dict[int, list[dict[str, Any]]] = {}
        for w in ident.gender_words:
            by_turn.setdefault(w["turn"], []).append(w)
        for i, spans in by_turn.items():
            new[i] = swap_gender_words(transcript.turns[i].text, target_gender, spans)
    if new_name and ident.agent_name:
        for i in ident.name_turns:
            new[i] = replace_name(new.get(i, transcript.turns[i].text), ident.agent_name, new_name)
    return new


# --------------------------------------------------------------------------- edit scope

def gender_swap_pairs() -> list[list[str]]:
    """Every (old, new) word pair a gender swap may produce, lower-cased."""
    pairs = {(k.replace("’", "'"), v) for k, v in {**_TO_MALE, **_TO_FEMALE}.items()}
    pairs |= {("her", "him"), ("her", "his"), ("his", "her"), ("his", "hers"), ("miss", "mr."), ("miss", "mr")}
    return sorted([a, b] for a, b in pairs)


def scope_for(ident: TurnIdentification, *, new_name: str | None = None, gender: bool = False,
              inserted: list[str] | None = None) -> dict[str, Any]:
    """The edit scope a name/gender/cue variant declares: the phrase swaps it may
    make (agent name -> new name, gender words) and the sentences it may add.
    :func:`cfbench.perturb.scope.scope_problems` checks the diff against it."""
    swaps: list[list[str]] = []
    if new_name and ident.agent_name:
        old = ident.agent_name.lower()
        swaps.append([old, new_name.lower()])
        if " " in old:
            swaps.append([old.split()[0], new_name.lower()])
    out: dict[str, Any] = {"swaps": swaps, "inserted": list(inserted or []),
                           "name": ident.agent_name if new_name else "",
                           "name_source": getattr(ident, "name_source", "")}
    if gender:
        out["swaps"] = swaps + gender_swap_pairs()
        out["gender"] = True
    return out
