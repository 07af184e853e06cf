"""The edit-scope guard: a variant may change only what its dimension intends.

Every variant (rule or LLM) declares in ``checks["scope"]`` what it may do:

``swaps``      phrase pairs ``[old, new]`` (lower-case) it may substitute -- the
               agent's name for the new name, gender words for their counterpart,
               a style rule's neutral form for its marked form;
``inserted``   whole sentences it may add inside a turn (culture cues);
``rewrite``    turn indices it may rewrite freely (LLM style rewrites), which then
               pass the content-survival checks instead;
``gender``     gender words may change only in customer turns (the customer
               addressing the agent), never the verb "miss";
``name``       the agent name being swapped: each replaced occurrence must be
               capitalised (unless the whole turn is lower-case ASR text).

:func:`scope_problems` diffs each changed turn against the original word by
word (:mod:`difflib`) and returns one reason per change the scope does not
cover. Inserted turns are checked by :func:`cfbench.perturb.validate.check_variant`.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Mapping, Sequence

from cfbench.io.transcripts import Transcript

from .base import Variant

__all__ = ["tokens", "scope_problems", "rewrite_problems", "content_words"]

_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]")
_SOFT_PUNCT = {".", ",", "!"}


def tokens(text: str) -> list[str]:
    """Words (with inner apostrophes) and single punctuation marks.

    >>> tokens("Hi, I'm Omar's colleague.")
    ['Hi', ',', "I'm", "Omar's", 'colleague', '.']
    """
    return _TOKEN.findall(text)


def _norm(seq: Sequence[str]) -> str:
    return " ".join(t.lower().replace("’", "'") for t in seq)


def _strip_possessive(tok: str) -> str:
    return re.sub(r"(?i)['’]s$", "", tok)


def _swap_ok(old: Sequence[str], new: Sequence[str], swaps: set[tuple[str, str]]) -> bool:
    if (_norm(old), _norm(new)) in swaps:
        return True
    if len(old) == len(new) and len(old) > 0:
        pairs = [(_norm([_strip_possessive(a)]), _norm([_strip_possessive(b)])) for a, b in zip(old, new)]
        poss = all(bool(re.search(r"['’]s$", a)) == bool(re.search(r"['’]s$", b)) for a, b in zip(old, new))
        return poss and all(p in swaps or p[0] == p[1] for p in pairs)
    return False


def _remove_inserted(text: str, inserted: Sequence[str]) -> tuple[str, list[str]]:
    """``text`` without each declared inserted sentence (once, with its joining space); missing ones listed."""
    missing = []
    for s in inserted:
        for cand in (" " + s, s + " ", s):
            if cand in text:
                text = text.replace(cand, "", 1)
                break
        else:
            missing.append(s)
    return text, missing


def _miss_verb(before: str, tok_index: int, toks: list[str]) -> bool:
    from .identify import miss_is_address

    text = " ".join(toks)
    start = len(" ".join(toks[:tok_index])) + (1 if tok_index else 0)
    return not miss_is_address(text, start, start + 4)


def scope_problems(original: Transcript, variant: Variant) -> list[str]:
    """Changes of ``variant`` outside its declared scope (empty = within scope).

    Variants without a ``scope`` (e.g. built by hand) are not checked here.
    """
    scope: Mapping[str, Any] | None = variant.checks.get("scope")
    if scope is None or not variant.applicable or variant.turns is None:
        return []
    swaps = {(str(a).lower(), str(b).lower()) for a, b in scope.get("swaps", [])}
    inserted = [s for s in scope.get("inserted", []) if isinstance(s, str)]
    rewrite = set(int(i) for i in scope.get("rewrite", []))
    ins_turns = {int(e["turn"]) for e in variant.edits if e.get("op") == "insert"}
    base = [t for k, t in enumerate(variant.turns) if k not in ins_turns]
    if len(base) != len(original.turns):
        return []  # check_variant reports the turn-count problem
    problems: list[str] = []
    unplaced = list(inserted)
    for i, (o, v) in enumerate(zip(original.turns, base)):
        if v["text"] == o.text or i in rewrite:
            continue
        text = v["text"]
        here = [s for s in unplaced if s in text]
        text, _ = _remove_inserted(text, here)
        for s in here:
            unplaced.remove(s)
        if scope.get("style_vocab") is not None:
            vocab = set(scope["style_vocab"])
            lost = sorted(set(content_words(o.text, ignore=vocab)) ^ set(content_words(text, ignore=vocab)))
            if content_words(o.text, ignore=vocab) != content_words(text, ignore=vocab):
                problems.append(f"edit outside the style lexicon at turn {i}: {lost}")
            if o.speaker != "agent":
                problems.append(f"style edit in a {o.speaker} turn {i}")
            continue
        a, b = tokens(o.text), tokens(text)
        sm = difflib.SequenceMatcher(a=[x.lower() for x in a], b=[x.lower() for x in b], autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                continue
            old, new = a[i1:i2], b[j1:j2]
            if not _swap_ok(old, new, swaps):
                problems.append(f"edit outside scope at turn {i}: {' '.join(old)!r} -> {' '.join(new)!r}")
                continue
            if scope.get("gender") and any(_norm([x]) in _GENDER_SET for x in old):
                name_words = set(_norm(str(scope.get("name", "")).split()).split())
                if o.speaker != "customer" and not all(_norm([x]) in name_words for x in old):
                    problems.append(f"gender word changed in a {o.speaker} turn {i} (only words addressed "
                                    f"to the agent by the customer may change): {' '.join(old)!r}")
                if any(x.lower() == "miss" for x in old) and _miss_verb(o.text, i1, a):
                    problems.append(f"the verb 'miss' changed at turn {i}")
            name = str(scope.get("name", "") or "")
            if name and o.text != o.text.lower():
                first = name.split()[0].lower()
                if any(_strip_possessive(x).lower() == first and not x[:1].isupper() for x in old):
                    problems.append(f"lower-case {first!r} replaced at turn {i} (a word, not the agent's name)")
    for s in unplaced:
        problems.append(f"declared inserted text not found: {s!r}")
    return problems


_GENDER_SET = {"he", "him", "his", "himself", "she", "her", "hers", "herself", "sir", "ma'am", "maam",
               "madam", "miss", "mr", "mr.", "ms", "ms.", "mrs", "mrs."}

_FUNCTION = set("""a an the and or but so to of in on at for with by from as is are was were be been am it this
that these those i you we they he she me us them my your our their its do does did can could would will shall
should may might must have has had not no yes there here what which who when where how if then than just""".split())


def content_words(text: str, *, ignore: set[str] = frozenset()) -> list[str]:
    """Lower-cased words of ``text`` that carry content: not function words, not in ``ignore``, not punctuation."""
    return sorted(w.lower() for w in tokens(text)
                  if re.match(r"\w", w) and w.lower() not in _FUNCTION and w.lower() not in ignore)


def _entities(text: str) -> list[str]:
    """Capitalised words not at a sentence start, and every number."""
    out = []
    toks = tokens(text)
    for k, w in enumerate(toks):
        if re.fullmatch(r"\d[\d.,:/\-]*", w):
            out.append(w)
        elif w[:1].isupper() and k > 0 and toks[k - 1] not in {".", "!", "?", ":"} and w not in {"I", "I'm", "I'll", "I've", "I'd"}:
            out.append(w)
    return sorted(out)


_POLARITY = re.compile(r"(?i)\b(not|no|never|none|nothing|nobody|cannot|only|without)\b|n['’]t\b")


def _polarity(text: str) -> list[str]:
    """Negation and limiting words, in order ("can't" counts as "not"): a rewrite must keep them."""
    return ["not" if m.group(0).lower().endswith(("n't", "n’t")) or m.group(0).lower() == "cannot" else m.group(0).lower()
            for m in _POLARITY.finditer(text)]


def rewrite_problems(original: Transcript, variant: Variant, turns: Sequence[int]) -> list[str]:
    """Content-survival checks for freely rewritten turns (LLM style rewrites).

    Numbers and capitalised names/entities of the original turn survive, so do
    negation and limiting words ("not", "no", "never", "only", "can't"), a
    question stays a question, the rewrite is not empty and does not copy a
    neighbouring turn.
    """
    problems = []
    ins = {int(e["turn"]) for e in variant.edits if e.get("op") == "insert"}
    base = [t for k, t in enumerate(variant.turns or []) if k not in ins]
    for i in turns:
        before, after = original.turns[i].text, base[i]["text"]
        if after == before:
            continue
        if not after.strip():
            problems.append(f"turn {i} rewritten to nothing")
            continue
        lost = sorted(set(_entities(before)) - set(tokens(after)))
        if lost:
            problems.append(f"turn {i} rewrite lost {lost}")
        if _polarity(before) != _polarity(after):
            problems.append(f"turn {i}: negation/limiting words changed ({_polarity(before)} -> {_polarity(after)})")
        if "?" in before and "?" not in after:
            problems.append(f"turn {i}: a question became a statement")
        neighbours = [original.turns[j].text for j in (i - 1, i + 1) if 0 <= j < len(original.turns)]
        if any(after.strip().lower() == n.strip().lower() for n in neighbours):
            problems.append(f"turn {i} rewrite copies a neighbouring turn")
    return problems
