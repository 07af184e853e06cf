"""Lexicon tone measures of a reply: hedging, politeness, negative tone, length.

Two clearly separated modes:

``described`` (default)
    The method as seed 002 describes it: word count = whitespace tokens after
    lowercasing and stripping punctuation; a lexicon count = case-insensitive
    word-boundary matches of words and multi-word phrases, leftmost-longest
    (greedy) without double counting; reported as a rate per 100 words.

``as_run`` (paper-compat, reproduction only)
    What the released workbook actually computed: plain substring counts on
    the lowercased text (``"may"`` inside ``"maybe"`` counts), summed over the
    terms recoverable from the data, reported as raw counts; word count = a
    plain whitespace split of the raw text; char count = see
    :func:`as_run_char_count`. (Described mode: ``len(text)``.)

This module knows no study and reads no file of its own: the caller passes
the term lists (:class:`Lexicons`, e.g. built with :func:`lexicons_from_mapping`
from a study's YAML file).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError

__all__ = [
    "Lexicons",
    "LEXICON_METRICS",
    "lexicons_from_mapping",
    "described_word_count",
    "as_run_word_count",
    "as_run_char_count",
    "count_matches",
    "count_substrings",
    "lexicon_scores",
    "tone_scores",
    "score_responses",
    "TONE_METRICS",
    "TONE_RANGES",
]

#: Lexicon names in the data files, in output-column order.
LEXICON_METRICS = ("politeness", "hedging", "negative_tone")
_COLUMN = {"politeness": "politeness", "hedging": "hedging", "negative_tone": "neg_tone"}

#: Per-response tone metrics, as columns of :func:`tone_scores`.
TONE_METRICS = ("sentiment", "politeness", "hedging", "neg_tone", "words", "chars")

#: The range each tone metric's score is known to lie in: a VADER compound in [-1, 1]. The lexicon
#: columns (counts, or rates per 100 words) and the lengths have no upper bound to state.
TONE_RANGES: dict[str, tuple[float, float]] = {"sentiment": (-1.0, 1.0)}


@dataclass(frozen=True)
class Lexicons:
    """Named term lists plus the version of the file they came from."""

    version: str
    terms: Mapping[str, tuple[str, ...]]

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return self.terms[name]


def lexicons_from_mapping(raw: Any, *, source: str) -> Lexicons:
    """Build :class:`Lexicons` from a parsed YAML/JSON mapping.

    ``raw`` needs a ``version`` and a non-empty list of strings for each of
    :data:`LEXICON_METRICS`; terms are lowercased with straightened
    apostrophes, and a duplicate after that is an :class:`InputError` naming
    ``source`` and the list.

    >>> lexicons_from_mapping({"version": "v", "politeness": ["Please"], "hedging": ["may"],
    ...                        "negative_tone": ["just"]}, source="example")["politeness"]
    ('please',)
    """
    if not isinstance(raw, Mapping) or "version" not in raw:
        raise InputError("lexicon file needs a 'version'", source=source, field="version")
    terms = {}
    for key in LEXICON_METRICS:
        items = raw.get(key)
        if not isinstance(items, list) or not items:
            raise InputError("missing or empty term list", source=source, field=key)
        bad = [t for t in items if not isinstance(t, str) or not t.strip()]
        if bad:
            raise InputError(f"term must be a non-empty string, got {bad[0]!r}", source=source, field=key)
        norm = tuple(_normalise(t).strip() for t in items)
        if len(set(norm)) != len(norm):
            raise InputError("duplicate term", source=source, field=key)
        terms[key] = norm
    return Lexicons(version=str(raw["version"]), terms=terms)


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def _normalise(text: str) -> str:
    return text.translate(_APOSTROPHES).lower()


def _check_text(text: object, record: object = None) -> str:
    if not isinstance(text, str):
        raise InputError(f"response must be text, got {type(text).__name__}", record=record, field="text")
    return text


def described_word_count(text: str) -> int:
    """Whitespace tokens after lowercasing and stripping punctuation.

    Punctuation is every Unicode character of category P* (so ``"•"``,
    ``"–"`` and ``"1)"``'s parenthesis go); tokens left empty are not words.

    >>> described_word_count("Hello, world -- it's me!")  # hello world its me
    4
    """
    text = _check_text(text)
    stripped = "".join(" " if ch.isspace() else ch for ch in _normalise(text)
                       if not unicodedata.category(ch).startswith("P"))
    return len(stripped.split())


def as_run_word_count(text: str) -> int:
    """Plain whitespace split of the raw text (what the released data did)."""
    return len(_check_text(text).split())


_INDENTED_BULLET = re.compile(r"\n  -")


def as_run_char_count(text: str) -> int:
    """Character count as the released workbook has it (480/480 reproduced).

    Empirical: ``len`` of the text without its newline characters, plus two
    for every line that starts with a two-space-indented bullet (``"\\n  -"``).
    The stored texts evidently differ in whitespace from the texts that were
    counted (7 of 480 responses have such bullets); this formula is what the
    released numbers support, not a documented definition.
    """
    text = _check_text(text)
    return len(text.replace("\n", "")) + 2 * len(_INDENTED_BULLET.findall(text))


@lru_cache(maxsize=256)
def _pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    # longest phrases first, so alternation at one position prefers the longest match
    ordered = sorted(terms, key=lambda t: (-len(t.split()), -len(t), t))
    alts = [r"\s+".join(re.escape(w) for w in t.split()) for t in ordered]
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")(?!\w)")


def count_matches(text: str, terms: Sequence[str]) -> int:
    """Word-boundary, case-insensitive, leftmost-longest, non-overlapping matches.

    >>> count_matches("It may depend; maybe it depends.", ["may", "maybe", "it depends"])
    3
    >>> count_matches("It depends on you", ["it depends", "depends on"])
    1
    """
    return len(_pattern(tuple(_normalise(t) for t in terms)).findall(_normalise(_check_text(text))))


def count_substrings(text: str, terms: Sequence[str]) -> int:
    """Sum over terms of ``str.count`` on the lowercased text (as-run).

    >>> count_substrings("Maybe you may.", ["may"])
    2
    """
    low = _check_text(text).lower()
    return sum(low.count(t.lower()) for t in terms)


def lexicon_scores(texts: Iterable[object], *, lexicons: Lexicons, mode: str = "described",
                   ids: Sequence[object] | None = None) -> pd.DataFrame:
    """Per-text politeness, hedging, negative tone, words and chars, counted with ``lexicons``.

    Columns ``politeness``, ``hedging``, ``neg_tone``, ``words``, ``chars``, ``empty``.
    ``described``: the lexicon columns are rates per 100 words (NaN for a text with no
    words, flagged in ``empty``); ``as_run``: raw counts. Non-text input
    raises :class:`~cfbench.core.errors.InputError` naming the record (``ids[i]``
    or the position) and the field.
    """
    if mode not in ("described", "as_run"):
        raise ValueError(f"mode must be 'described' or 'as_run', got {mode!r}")
    if not isinstance(lexicons, Lexicons):
        raise TypeError(f"lexicons must be a Lexicons, got {type(lexicons).__name__}")
    lex = lexicons
    rows = []
    for i, text in enumerate(texts):
        rec = ids[i] if ids is not None else i
        text = _check_text(text, rec)
        if mode == "described":
            words = described_word_count(text)
            counts = {m: count_matches(text, lex[m]) for m in LEXICON_METRICS}
            vals = {_COLUMN[m]: (100.0 * c / words if words else np.nan) for m, c in counts.items()}
        else:
            words = as_run_word_count(text)
            vals = {_COLUMN[m]: float(count_substrings(text, lex[m])) for m in LEXICON_METRICS}
        chars = len(text) if mode == "described" else as_run_char_count(text)
        rows.append({**vals, "words": float(words), "chars": float(chars),
                     "empty": not text.strip()})
    out = pd.DataFrame(rows, columns=[*_COLUMN.values(), "words", "chars", "empty"])
    out.attrs["lexicon_version"] = lex.version
    out.attrs["mode"] = mode
    return out


def tone_scores(texts: Sequence[object], *, lexicons: Lexicons, mode: str = "described",
                ids: Sequence[object] | None = None) -> pd.DataFrame:
    """All per-response tone metrics of one mode: :data:`TONE_METRICS` + ``empty``.

    ``described``: vaderSentiment compound, rates per 100 words of the
    ``lexicons`` terms, described word count. ``as_run``: NLTK VADER with the same
    VADER lexicon, raw substring counts of the terms, whitespace word count,
    as-run char count. An empty response gets NaN sentiment (not VADER's 0.0)
    and ``empty=True``, so it can never pass for a neutral reply.

    >>> lex = lexicons_from_mapping({"version": "v", "politeness": ["please", "consider"],
    ...                              "hedging": ["may"], "negative_tone": ["just"]}, source="example")
    >>> tone_scores(["Please consider it."], lexicons=lex, mode="as_run")[["politeness", "words"]].iloc[0].tolist()
    [2.0, 3.0]
    """
    from .sentiment import vader_compound

    texts = list(texts)
    lex = lexicon_scores(texts, lexicons=lexicons, mode=mode, ids=ids)
    sent = vader_compound(texts, mode=mode, ids=ids)
    lex.insert(0, "sentiment", np.where(lex["empty"].to_numpy(), np.nan, sent))
    return lex


def score_responses(responses: pd.DataFrame, *, lexicons: Lexicons, keep: Sequence[str],
                    mode: str = "described", text: str = "text", status: str | None = "status",
                    record: str | None = None) -> pd.DataFrame:
    """Tone metrics for a frame of replies, one output row per input row.

    ``keep`` names the columns copied to the output (e.g. model, unit, group);
    ``record`` names the column that identifies a row in error messages
    (default: the row position).

    Rows whose ``status`` is not ``"ok"`` (failed calls, blank replies) get
    NaN metrics and stay in the frame — they are never dropped here; the
    paired tests decide (and report) what to do with them.
    """
    missing = [c for c in (*keep, text) if c not in responses.columns]
    if missing:
        raise InputError("column missing", source="responses", field=missing[0])
    ok = (responses[status] == "ok").to_numpy() if status else np.ones(len(responses), bool)
    base = responses[list(keep)].reset_index(drop=True)
    if record is not None and record not in responses.columns:
        raise InputError("column missing", source="responses", field=record)
    ids = responses[record] if record is not None else pd.Series(range(len(responses)))
    ids = ids.reset_index(drop=True)
    scored = tone_scores(list(responses[text][ok]), lexicons=lexicons, mode=mode, ids=list(ids[ok]))
    out = pd.DataFrame(np.nan, index=base.index, columns=list(TONE_METRICS))
    out.loc[ok, list(TONE_METRICS)] = scored[list(TONE_METRICS)].to_numpy()
    res = pd.concat([base, out], axis=1)
    res["status"] = responses[status].to_numpy() if status else "ok"
    res.attrs.update(scored.attrs)
    return res
