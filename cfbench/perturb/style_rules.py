"""The rule-based style transformer (``cfbench/data/perturb/style_rules.yaml``).

:func:`restyle` rewrites an agent turn into a style dimension's ``neutral`` or
``marked`` form with the versioned lexicon of rules, sentence by sentence;
``original`` is the identity. Captured content is copied verbatim, so the
result differs from the input only by the lexicon's fixed phrases.

>>> restyle("May I have your name, please?", "directness", "marked")
'Give me your name.'
>>> restyle("I am sorry, but the flight is not available.", "emotional_labor", "neutral")
'The flight is not available.'
>>> restyle("Okay, I'm checking.", "formality", "marked")
'Very well, I am checking.'
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .base import load_data

__all__ = ["restyle", "rule_matches", "style_vocabulary", "rules_version", "STYLE_LEVELS"]

STYLE_LEVELS = ("neutral", "marked")
_LOWER_OK = {"the", "there", "your", "it", "we", "this", "that", "our", "these", "those", "a", "an", "you",
             "unfortunately", "great", "excellent", "what", "how"}


def rules_version() -> int:
    return int(load_data("style_rules.yaml")["version"])


@functools.lru_cache(maxsize=None)
def _compiled(dim: str) -> dict[str, Any]:
    spec = load_data("style_rules.yaml")["dimensions"][dim]["rules"]
    sentence, prefix, words = [], [], {}
    for r in spec:
        if r["kind"] == "sentence":
            sentence.append((r, [re.compile(f) for f in r["forms"]]))
        elif r["kind"] == "prefix":
            forms = sorted({*r["forms"], r["neutral"], r["marked"]} - {""}, key=len, reverse=True)
            when = re.compile(r["when"]) if r.get("when") else None
            unless = re.compile(r["unless"]) if r.get("unless") else None
            prefix.append((r, forms, when, unless))
        elif r["kind"] == "word":
            for f in {*r["forms"], r["neutral"], r["marked"]} - {""}:
                words[f.lower()] = r
        else:
            raise ValueError(f"style_rules.yaml: unknown rule kind {r['kind']!r} in {dim}")
    alt = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    word_re = re.compile(rf"(?i)(?<![\w'’])(?:{alt})(?![\w'’])") if words else None
    return {"sentence": sentence, "prefix": prefix, "words": words, "word_re": word_re}


def _fill(template: str, groups: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        g, mod = m.group(1), m.group(2)
        v = groups.get(g) or ""
        if mod == "^":
            return v[:1].upper() + v[1:]
        if mod == "_":
            return v[:1].lower() + v[1:] if v[:1] != "I" else v
        return v
    return re.sub(r"\{([A-Za-z0-9]+)([\^_]?)\}", sub, template)


def _case_like(src: str, new: str, at_start: bool) -> str:
    new = re.sub(r"(?<![\w'’])i(?=$|\s|['’])", "I", new)  # the pronoun is always upper-case
    if src.isupper() and len(src) > 2 and " " not in new:
        return new.upper()  # an acronym stays one: ASAP
    if src[:1].isupper() and (at_start or not (src.isupper() and len(src) > 2)):
        return new[:1].upper() + new[1:]
    return new


def _sentence(s: str, dim: str, level: str) -> tuple[str, bool]:
    """One sentence restyled, and whether any rule matched it."""
    c = _compiled(dim)
    for rule, forms in c["sentence"]:
        for f in forms:
            m = f.match(s)
            if m:
                return _fill(rule[level], m.groupdict()), True
    for rule, forms, when, unless in c["prefix"]:
        hit = next((f for f in forms if s.startswith(f)), None)
        rest = s[len(hit):] if hit else s
        first = re.match(r"[\w'’]+", rest)
        if hit is None and (not rule[level] or when is None or not when.search(s)
                            or (unless is not None and unless.search(s))
                            or not first or first.group(0).lower() not in _LOWER_OK):
            continue
        new_prefix = rule[level]
        if hit is None:
            rest = rest[:1].lower() + rest[1:]
        elif not new_prefix:
            rest = rest[:1].upper() + rest[1:]
        return new_prefix + rest, hit is not None or bool(rule[level])
    if c["word_re"] is None:
        return s, False
    found = False

    def sub(m: re.Match[str]) -> str:
        nonlocal found
        found = True
        rule = c["words"][m.group(0).lower()]
        return _case_like(m.group(0), rule[level], m.start() == 0) if rule[level] else "\0"

    out = c["word_re"].sub(sub, s)
    if "\0" in out:  # a phrase dropped: take a joining comma and the spaces with it
        out = re.sub(r",\s*\0\s*,", ",", out)
        out = re.sub(r"\s*,?\s*\0(?=\s*([.!?]|$))", "", out)
        out = re.sub(r"^\s*\0\s*,?\s*", "", out)
        out = re.sub(r"\s*\0\s*", " ", out)
        if s[:1].isupper():
            out = out[:1].upper() + out[1:]
    return out, found


def _split(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])(\s+)", text)


def restyle(text: str, dim: str, level: str) -> str:
    """``text`` in the ``neutral`` or ``marked`` form of ``dim`` (unchanged where no rule applies)."""
    if level not in STYLE_LEVELS:
        raise ValueError(f"level must be one of {STYLE_LEVELS}, got {level!r}")
    parts = _split(text)
    return "".join(p if k % 2 else _sentence(p, dim, level)[0] for k, p in enumerate(parts))


def rule_matches(text: str, dim: str) -> bool:
    """True when a rule of ``dim`` recognises a sentence of ``text`` (the turn is a style turn)."""
    parts = _split(text)
    for k, p in enumerate(parts):
        if k % 2:
            continue
        for level in STYLE_LEVELS:
            new, hit = _sentence(p, dim, level)
            if hit or new != p:
                return True
    return False


@functools.lru_cache(maxsize=None)
def style_vocabulary(dim: str) -> frozenset[str]:
    """Every word the rules of ``dim`` may add or remove (lower-case)."""
    words: set[str] = set()
    for r in load_data("style_rules.yaml")["dimensions"][dim]["rules"]:
        texts = [r["neutral"], r["marked"]] + ([] if r["kind"] == "sentence" else list(r["forms"]))
        if r["kind"] == "sentence":
            texts += [re.sub(r"\(\?P<\w+>.*?\)|\\[?.]|[\^$()?:|*+\[\]]", " ", f) for f in r["forms"]]
        for t in texts:
            words.update(w.lower() for w in re.findall(r"[A-Za-z]+(?:['’][A-Za-z]+)?", re.sub(r"\{[A-Za-z0-9]+[\^_]?\}", " ", t)))
    return frozenset(words)
