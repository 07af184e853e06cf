"""VADER compound sentiment of a reply, in two clearly named modes.

``described`` (default)
    The ``vaderSentiment`` package's analyzer (Hutto & Gilbert's reference
    implementation), as seed 002 describes.

``as_run`` (paper-compat, reproduction only)
    NLTK's VADER implementation (``nltk.sentiment.vader``) given the lexicon
    file that ships inside the ``vaderSentiment`` package. This is what the
    released seed-002 data used (it matches 480/480 released values; the
    ``vaderSentiment`` analyzer matches fewer). NLTK >= 3.10 loads the lexicon
    only from an NLTK data directory, so it is staged offline as
    ``sentiment/vader_lexicon.zip`` under ``<cfbench cache>/nltk_data``.
"""

from __future__ import annotations

import hashlib
import zipfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..core.errors import InputError

from ..core.paths import cache_dir as _user_cache_dir

__all__ = ["vader_compound", "SENTIMENT_MODES", "stage_nltk_vader_lexicon"]

SENTIMENT_MODES = ("described", "as_run")


def _vader_lexicon_text() -> bytes:
    return resources.files("vaderSentiment").joinpath("vader_lexicon.txt").read_bytes()


def stage_nltk_vader_lexicon(cache_dir: Path | None = None) -> Path:
    """Write the vaderSentiment lexicon as an NLTK resource; return the data dir.

    The zip is rewritten only when the lexicon's bytes changed (keyed by hash).
    """
    data = _vader_lexicon_text()
    digest = hashlib.sha256(data).hexdigest()[:16]
    root = (cache_dir or _user_cache_dir()) / "nltk_data" / digest
    target = root / "sentiment" / "vader_lexicon.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".zip.tmp")
        with zipfile.ZipFile(tmp, "w") as zf:
            zf.writestr("vader_lexicon/vader_lexicon.txt", data)
        tmp.replace(target)
    return root


@lru_cache(maxsize=None)
def _nltk_analyzer():
    import nltk.data
    from nltk.sentiment.vader import SentimentIntensityAnalyzer

    root = str(stage_nltk_vader_lexicon())
    # Search only the staged dir while loading, so another NLTK data dir's copy is never used;
    # the lexicon is read once in the constructor, after which the path is restored.
    saved = list(nltk.data.path)
    nltk.data.path[:] = [root]
    try:
        return SentimentIntensityAnalyzer(lexicon_file="sentiment/vader_lexicon.zip/vader_lexicon/vader_lexicon.txt")
    finally:
        nltk.data.path[:] = saved


@lru_cache(maxsize=None)
def _vs_analyzer():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def vader_compound(texts: Iterable[object], *, mode: str = "described",
                   ids: Sequence[object] | None = None) -> np.ndarray:
    """VADER compound score in [-1, 1] per text.

    Non-text input raises :class:`~cfbench.core.errors.InputError` naming the
    record and field; an empty string scores 0.0 (VADER's own convention)
    and is left to the caller to flag.
    """
    if mode not in SENTIMENT_MODES:
        raise ValueError(f"mode must be one of {SENTIMENT_MODES}, got {mode!r}")
    analyzer = _vs_analyzer() if mode == "described" else _nltk_analyzer()
    out = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"response must be text, got {type(t).__name__}",
                             record=ids[i] if ids is not None else i, field="text")
        out.append(analyzer.polarity_scores(t)["compound"])
    return np.asarray(out, dtype=float)
