"""Turn identification: which turns carry the agent's name, gender cues, style markers.

:func:`identify_turns` is rule-based and returns the seed's structure
(agent name/gender/race/religion, ``name_turns``, ``gender_turns`` with the
exact ``agent_pronouns``, race/religion/politeness/formality/directness/
emotional-labor/disfluency/disability turns). Turn numbers are **0-based**
indices into ``transcript.turns`` (the LLM contract in
:mod:`cfbench.perturb.llm_tasks` numbers turns from 1 and converts).

For synthetic transcripts (``meta["plan"]`` present and matching the text)
the style and third-person-reference turns come from the plan, so they are
exact; for other transcripts they come from marker lexicons.

Gender cues that refer to the agent are:
* honorifics used by the customer (sir, ma'am, madam, miss, Mr/Ms/Mrs + the
  agent's name) -- the customer addresses the agent;
* third-person pronouns in a customer turn that follow a mention of the
  agent's name in the same sentence, before any other person is mentioned
  (rule path, and only pronouns of the agent's gender), or inside a planned
  ``agent_ref`` piece (synthetic path). Pronouns about anyone else are left alone.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from cfbench.io.transcripts import Transcript

from .base import load_data
from .style_rules import rule_matches

__all__ = ["TurnIdentification", "identify_turns", "find_gender_words", "name_lookup", "GENDER_WORDS",
           "plan_matches", "guess_agent_name", "miss_is_address"]

MALE_WORDS = {"he", "him", "his", "himself", "sir", "mr", "mr."}
FEMALE_WORDS = {"she", "her", "hers", "herself", "ma'am", "maam", "madam", "miss", "ms", "ms.", "mrs", "mrs."}
GENDER_WORDS = MALE_WORDS | FEMALE_WORDS
_PRONOUNS = {"he", "him", "his", "himself", "she", "her", "hers", "herself"}
_VOCATIVES = {"sir", "ma'am", "maam", "madam", "miss"}
_TITLES = {"mr", "mr.", "ms", "ms.", "mrs", "mrs.", "miss"}

_WORD_RE = re.compile(r"(?i)\b(?:ma'am|ma’am|mrs\.?|mr\.?|ms\.?|maam|madam|miss|sir|himself|herself|hers|his|him|her|he|she)(?!\w)")

_POLITE = re.compile(r"(?i)\b(please|thank you|thanks|kindly|appreciate|would you mind|if you don't mind|"
                     r"sorry|pardon|excuse me|my pleasure|you're welcome)\b")
_FORMAL = re.compile(r"(?i)\b(good (morning|afternoon|evening|day)|allow me|may i|i would be|assist(ance)?|"
                     r"regarding|kindly|certainly|inconvenience|pleasure|i apologi[sz]e|records on file|"
                     r"wish you)\b")
_DIRECT = re.compile(r"(?i)(\b(you need to|you must|you have to|you'll need to|give me|tell me|i need your|"
                     r"provide|what is your|can you|could you|would you)\b)")
_EMOTION = re.compile(r"(?i)\b(sorry|understand|frustrat\w*|stressful|upsetting|worr\w*|i know this|"
                      r"i get why|i care|i can only imagine|that's (annoying|not great|a pain)|oh no)\b")
_DISFLUENT = re.compile(r"(?i)(\b(um+|uh+|er+m?|hmm+|you know|i mean)\b|\b(\w+) \3\b)")
_DISABILITY = re.compile(r"(?i)\b(screen reader|screen magnifier|captions?|captioning|stutter|hard of hearing|"
                         r"hearing aid|amplified headset|voice dictation|wheelchair|sign language|dyslexi\w*)\b")
# A self-introduction: the name must follow one of these phrases (and, except in
# all-lower-case ASR text, be capitalised). "I am" / "I'm" count only before a
# capitalised word that is a known first name or is followed by "from/at/with/here/
# speaking" or a comma/full stop -- "I am only able to help" is not an introduction.
_INTRO_STRONG = re.compile(r"(?i:\b(?:my name is|my name's|the name is|name's|you're speaking with|you are speaking with|"
                           r"you're speaking to|you are speaking to|this is))"
                           r"\s+([A-Za-z][a-z'\-]+)")
_INTRO_WEAK = re.compile(r"(?i:\b(?:i am|i'm))\s+([A-Za-z][a-z'\-]+)(?=(\s+(?:from|at|with|here|speaking|and)\b|[,.!]))")
_INTRO_SPEAKING = re.compile(r"^(?:(?:hi|hello|good (?:morning|afternoon|evening))[,!.]?\s+)?([A-Z][a-z'\-]+)\s+speaking\b",
                             re.I)
_NOT_NAMES = {"calling", "here", "happy", "glad", "sorry", "going", "the", "a", "an", "just", "with", "from",
              "so", "very", "really", "not", "able", "looking", "checking", "sure", "afraid", "on", "in",
              "your", "customer", "support", "service", "speaking", "back", "still", "now", "also",
              "trying", "having", "unable", "pleased", "delighted", "available", "there", "it", "only", "only",
              "that", "what", "correct", "right", "done", "ready", "fine", "good", "great", "okay", "ok", "well",
              "afraid", "certain", "confident", "happy", "unsure", "new", "your", "our", "my", "his", "her",
              "their", "this", "customer", "agent", "assistant", "booking", "reservation", "hotel", "flight"}

@dataclass
class TurnIdentification:
    """The seed's identification structure (0-based turn indices), plus the
    exact character spans of gender words that refer to the agent."""

    agent_name: str = ""
    agent_gender: str = ""
    agent_race: str = ""
    agent_religion: str = ""
    name_turns: list[int] = field(default_factory=list)
    agent_pronouns: list[str] = field(default_factory=list)
    gender_turns: list[int] = field(default_factory=list)
    race_turns: list[int] = field(default_factory=list)
    religion_turns: list[int] = field(default_factory=list)
    politeness_turns: list[int] = field(default_factory=list)
    formality_turns: list[int] = field(default_factory=list)
    directness_turns: list[int] = field(default_factory=list)
    emotional_labor_turns: list[int] = field(default_factory=list)
    disfluency_turns: list[int] = field(default_factory=list)
    disability_turns: list[int] = field(default_factory=list)
    #: one entry per agent-referring gender word: {"turn", "start", "end", "word"}
    gender_words: list[dict[str, Any]] = field(default_factory=list)
    source: str = "rules"  # "rules" | "plan" | "llm"
    #: where the agent name came from: "record", "intro" (the agent introduces it), "llm" or ""
    name_source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def style_turns(self, dim: str) -> list[int]:
        return list(getattr(self, f"{dim}_turns"))

    @classmethod
    def from_llm(cls, data: dict[str, Any], transcript: Transcript) -> "TurnIdentification":
        """Build from a parsed LLM identification (0-based turns, see
        :func:`cfbench.perturb.llm_tasks.parse_identify`). Each reported gender
        word is located in its turn (customer turns only; words not found are
        dropped, since a swap needs an exact position)."""
        ident = cls(source="llm")
        for k in ("agent_name", "agent_gender", "agent_race", "agent_religion"):
            setattr(ident, k, str(data.get(k, "") or ""))
        if ident.agent_name and not _name_pattern(ident.agent_name).search(
                "\n".join(x.text for x in transcript.turns if x.speaker == "agent")):
            ident.agent_name = ""  # a name the agent never says is not the agent's name
        ident.name_source = "llm" if ident.agent_name else ""
        if transcript.agent_name:
            ident.agent_name, ident.name_source = transcript.agent_name, "record"
        if ident.agent_gender not in ("male", "female"):
            ident.agent_gender = ""
        for k in ("name_turns", "race_turns", "religion_turns", "politeness_turns", "formality_turns",
                  "directness_turns", "emotional_labor_turns"):
            setattr(ident, k, sorted(set(int(i) for i in data.get(k, []))))
        used: set[tuple[int, int]] = set()
        for turn, word in zip(data.get("gender_turns", []), data.get("agent_pronouns", [])):
            if not (0 <= turn < len(transcript.turns)) or transcript.turns[turn].speaker != "customer":
                continue
            text = transcript.turns[turn].text
            for w in find_gender_words(text, kinds=("pronoun", "vocative", "title"), name=ident.agent_name):
                key = (turn, w["start"])
                if w["word"].lower() == str(word).lower().strip() and key not in used:
                    used.add(key)
                    ident.gender_words.append({"turn": turn, "start": w["start"], "end": w["end"],
                                               "word": w["word"]})
                    break
        ident.gender_words.sort(key=lambda w: (w["turn"], w["start"]))
        ident.gender_turns = [w["turn"] for w in ident.gender_words]
        ident.agent_pronouns = [w["word"] for w in ident.gender_words]
        rules = identify_turns(transcript)
        ident.disfluency_turns = rules.disfluency_turns
        ident.disability_turns = rules.disability_turns
        return ident


def name_lookup(name: str) -> dict[str, str]:
    """Where a first name appears in the shipped lists: ``{"gender", "ethnicity", "religion"}`` (any may be missing)."""
    out: dict[str, str] = {}
    if not name:
        return out
    key = name.strip().split()[0].lower()
    names = load_data("names.yaml")
    for kind in ("ethnicity", "religion"):
        for group, by_gender in names[kind].items():
            for g, lst in by_gender.items():
                if key in (n.lower() for n in lst):
                    out.setdefault(kind, group)
                    out.setdefault("gender", g)
    return out


def _name_pattern(name: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in name.split()]
    alts = [r"\s+".join(parts)] + ([parts[0]] if len(parts) > 1 else [])
    return re.compile(r"(?i)(?<![\w'’])(?:" + "|".join(alts) + r")(?![\w])")


def _known_first_name(word: str) -> bool:
    return bool(name_lookup(word))


def _intro_name(text: str) -> str:
    """The name an agent introduces in ``text`` ("" if none); see the module docstring."""
    lower_text = text == text.lower()
    for pat in (_INTRO_STRONG, _INTRO_SPEAKING, _INTRO_WEAK):
        for m in pat.finditer(text):
            cand = m.group(1).strip("'-")
            if len(cand) < 2 or cand.lower() in _NOT_NAMES:
                continue
            capitalised = cand[0].isupper()
            if re.match(r"\s+[A-Z]", text[m.end(1):]) and not _known_first_name(cand):
                continue  # "this is Summit Auto Care": a company, not a person
            if pat is _INTRO_WEAK and not _known_first_name(cand) and not capitalised:
                continue
            asr_intro = lower_text and pat is _INTRO_STRONG and re.match(
                r"\s*($|[,.!]|(from|at|with|here|speaking|and|calling)\b)", text[m.end(1):])
            if not capitalised and not (lower_text and (_known_first_name(cand) or asr_intro)):
                continue
            return cand
    return ""


def guess_agent_name(t: Transcript) -> tuple[str, str]:
    """``(name, source)``: the record's ``agent_name`` (source ``"record"``), else a
    name the agent introduces in one of its first two turns (``"intro"``), else ``("", "")``."""
    if t.agent_name:
        return t.agent_name, "record"
    for turn in [x for x in t.turns if x.speaker == "agent"][:2]:
        name = _intro_name(turn.text)
        if name:
            return name, "intro"
    return "", ""


def _guess_name(t: Transcript) -> str:
    return guess_agent_name(t)[0]


_OTHER_ANTECEDENT = re.compile(r"(?i)\b(wife|husband|partner|mother|mom|mum|father|dad|daughter|son|sister|"
                               r"brother|girlfriend|boyfriend|aunt|uncle|grandma|grandmother|grandpa|grandfather|"
                               r"niece|nephew|lady|woman|man|guy|girl|boy|manager|supervisor|colleague|friend|"
                               r"neighbou?r|landlord|landlady|doctor|technician|driver)\b")


def _antecedent_scope(text: str, start: int) -> int:
    """Where pronouns after an agent-name mention stop referring to the agent: the
    end of the sentence, or an earlier mention of another person."""
    end = len(text)
    m = re.search(r"[.!?](\s|$)", text[start:])
    if m:
        end = start + m.start()
    other = _OTHER_ANTECEDENT.search(text, start, end)
    return other.start() if other else end


def find_gender_words(text: str, *, start: int = 0, end: int | None = None,
                      kinds: tuple[str, ...] = ("pronoun", "vocative", "title"),
                      name: str = "") -> list[dict[str, Any]]:
    """Gender words in ``text[start:end]`` as ``{"start", "end", "word", "kind"}``.

    Titles (Mr/Ms/Mrs/Miss) count only when followed by ``name`` (the agent's
    name); "miss" followed by a capitalised word is a title, otherwise a vocative.
    """
    end = len(text) if end is None else end
    out = []
    name_re = _name_pattern(name) if name else None
    for m in _WORD_RE.finditer(text, start, end):
        w = m.group(0)
        low = w.lower().replace("’", "'")
        rest = text[m.end():]
        if low in _PRONOUNS:
            kind = "pronoun"
        elif low == "miss":
            if re.match(r"\s+[A-Z]", rest):
                kind = "title"
            elif miss_is_address(text, m.start(), m.end()):
                kind = "vocative"
            else:
                continue  # the verb: "I don't want to miss this"
        elif low in _TITLES:
            kind = "title"
        else:
            kind = "vocative"
        if kind not in kinds:
            continue
        follows = re.match(r"\s+([\w'’\-]+)", rest)
        if kind == "title":
            if not (name_re and follows and name_re.match(follows.group(1))):
                continue
        elif kind == "vocative":
            if follows and follows.group(1)[:1].isupper() and not (name_re and name_re.match(follows.group(1))):
                continue  # an honorific of another person: "Sir John Smith", a pet "Sir Pouncealot"
            if _SELF_REFERENCE.search(text[:m.start()]) or _ARTICLE_BEFORE.search(text[:m.start()]):
                continue  # "call me ma'am", "I'm a sir", "the madam of the house"
        out.append({"start": m.start(), "end": m.end(), "word": w, "kind": kind})
    return out


_SELF_REFERENCE = re.compile(r"(?i)\b(call me|i am|i'm|i’m|my name is|it's|it is)\s*,?\s*(?:a\s+)?$")
_ARTICLE_BEFORE = re.compile(r"(?i)\b(a|an|the|this|that|some|young|old|dear)\s+$")
# "miss" addresses someone only as a standalone word: after a greeting/thanks/yes/no or
# at the start, and followed by punctuation or the end ("Thank you, miss.", "Excuse me miss,").
_MISS_BEFORE = re.compile(r"(?i)(^|[,.!?;:]\s*|\b(thanks|thank you|yes|no|sorry|excuse me|hello|hi|hey|"
                          r"okay|ok|please|bye|goodbye)\s*,?\s*)$")


def miss_is_address(text: str, start: int, end: int) -> bool:
    """True when "miss" at ``text[start:end]`` is a form of address, not the verb.

    >>> miss_is_address("Thank you, miss.", 11, 15), miss_is_address("I don't want to miss this fight", 16, 20)
    (True, False)
    """
    after = text[end:]
    if not re.match(r"\s*([,.!?;:]|$)", after):
        return False
    return bool(_MISS_BEFORE.search(text[:start]))


def _gender_of_word(word: str) -> str:
    low = word.lower().replace("’", "'")
    return "male" if low in MALE_WORDS else "female"


def plan_matches(t: Transcript) -> bool:
    """True when ``meta["plan"]`` re-renders to exactly the transcript's text."""
    plan = t.meta.get("plan") if isinstance(t.meta, dict) else None
    if not plan or len(plan) != len(t.turns):
        return False
    from cfbench.perturb.style_plan import render_plan

    try:
        texts = render_plan(plan, t.meta.get("context", {}))
    except (KeyError, IndexError, ValueError, TypeError):
        return False
    return all(a == b.text and p.get("speaker") == b.speaker for a, b, p in zip(texts, t.turns, plan))


def _piece_spans(plan_turn: dict[str, Any], context: dict[str, str]) -> list[tuple[dict[str, Any], int, int]]:
    from cfbench.perturb.style_plan import render_piece

    spans, pos = [], 0
    for p in plan_turn["pieces"]:
        s = render_piece(p, context)
        if not s:
            continue
        if spans:
            pos += 1
        spans.append((p, pos, pos + len(s)))
        pos += len(s)
    return spans


def identify_turns(t: Transcript) -> TurnIdentification:
    """Rule-based (or plan-based, for synthetic transcripts) turn identification.

    >>> from cfbench.io.transcripts import transcripts_from_records
    >>> t = transcripts_from_records([{"id": "x", "turns": [
    ...     {"speaker": "agent", "text": "Hello, this is Omar from Ledgerly."},
    ...     {"speaker": "customer", "text": "Thanks, sir."}]}])[0]
    >>> ident = identify_turns(t)
    >>> ident.agent_name, ident.name_turns, ident.gender_turns, ident.agent_pronouns
    ('Omar', [0], [1], ['sir'])
    """
    ident = TurnIdentification()
    name, ident.name_source = guess_agent_name(t)
    ident.agent_name = name
    lookup = name_lookup(name)
    ident.agent_race = lookup.get("ethnicity", "")
    ident.agent_religion = lookup.get("religion", "")
    meta_gender = t.meta.get("agent_gender") if isinstance(t.meta, dict) else None
    name_re = _name_pattern(name) if name else None
    if name_re:
        ident.name_turns = [i for i, x in enumerate(t.turns) if name_re.search(x.text)]

    use_plan = plan_matches(t)
    ident.source = "plan" if use_plan else "rules"
    words: list[dict[str, Any]] = []
    for i, x in enumerate(t.turns):
        if x.speaker != "customer":
            continue
        found = find_gender_words(x.text, kinds=("vocative", "title"), name=name)
        if use_plan:
            for p, s, e in _piece_spans(t.meta["plan"][i], t.meta.get("context", {})):
                if p["kind"] == "agent_ref":
                    found += find_gender_words(x.text, start=s, end=e, kinds=("pronoun",))
        elif name_re:
            for m in name_re.finditer(x.text):
                found += find_gender_words(x.text, start=m.end(), end=_antecedent_scope(x.text, m.end()),
                                           kinds=("pronoun",))
        for w in found:
            words.append({"turn": i, **w})
    gender = meta_gender or lookup.get("gender", "")
    if not gender and words:
        voc = [w for w in words if w["kind"] in ("vocative", "title")] or words
        gender = _gender_of_word(voc[0]["word"])
    if gender and not use_plan:
        # on the rule path, pronouns after the name count only if they match the agent's gender
        words = [w for w in words if w["kind"] != "pronoun" or _gender_of_word(w["word"]) == gender]
    words.sort(key=lambda w: (w["turn"], w["start"]))
    ident.agent_gender = gender or ""
    ident.gender_words = [{k: w[k] for k in ("turn", "start", "end", "word")} for w in words]
    ident.gender_turns = [w["turn"] for w in words]
    ident.agent_pronouns = [w["word"] for w in words]

    cues = load_data("cues.yaml")
    race_cues = [c for kinds in cues["ethnicity"].values() for lst in kinds.values() for c in lst]
    rel_cues = [c for kinds in cues["religion"].values() for lst in kinds.values() for c in lst]
    rel_words = re.compile(r"(?i)\b(god bless|blessed|inshallah|insha'allah|alhamdulillah|mashallah|namaste|"
                           r"shalom|baruch hashem|pray(er|ers|ing)?|church|mosque|temple|synagogue)\b")
    for i, x in enumerate(t.turns):
        if x.speaker != "agent":
            continue
        if any(c in x.text for c in race_cues):
            ident.race_turns.append(i)
        if any(c in x.text for c in rel_cues) or rel_words.search(x.text):
            ident.religion_turns.append(i)
        if _DISFLUENT.search(x.text):
            ident.disfluency_turns.append(i)
        if _DISABILITY.search(x.text):
            ident.disability_turns.append(i)
        if use_plan:
            dims = {p["dim"] for p in t.meta["plan"][i]["pieces"] if p["kind"] == "slot"}
            for dim in ("politeness", "formality", "directness", "emotional_labor"):
                if dim in dims:
                    getattr(ident, f"{dim}_turns").append(i)
        else:
            for dim in ("politeness", "formality", "directness", "emotional_labor"):
                if rule_matches(x.text, dim):
                    getattr(ident, f"{dim}_turns").append(i)
    return ident
