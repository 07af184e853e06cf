"""VADER compound in the two modes, offline."""

import zipfile

import numpy as np
import pytest

from cfbench.core.errors import InputError
from cfbench.metrics.sentiment import stage_nltk_vader_lexicon, vader_compound

# Published examples from the VADER README (Hutto & Gilbert): compound scores.
VADER_README = [
    ("VADER is smart, handsome, and funny.", 0.8316),
    ("VADER is not smart, handsome, nor funny.", -0.7424),
    ("The book was kind of good.", 0.3832),
]


@pytest.mark.parametrize("mode", ["described", "as_run"])
def test_published_vader_examples(mode):
    got = vader_compound([t for t, _ in VADER_README], mode=mode)
    assert np.allclose(got, [c for _, c in VADER_README], atol=1e-4)


def test_staged_lexicon_is_the_vadersentiment_file(tmp_path):
    from importlib import resources
    root = stage_nltk_vader_lexicon(tmp_path)
    zpath = root / "sentiment" / "vader_lexicon.zip"
    with zipfile.ZipFile(zpath) as zf:
        data = zf.read("vader_lexicon/vader_lexicon.txt")
    assert data == resources.files("vaderSentiment").joinpath("vader_lexicon.txt").read_bytes()
    assert stage_nltk_vader_lexicon(tmp_path) == root  # idempotent


def test_modes_are_different_implementations():
    # vaderSentiment 3.3 scores "no" before a negative word differently from NLTK's port;
    # the released data (see test_identity_amiri_repro) matches only the NLTK port.
    text = ["No problem at all."]
    described, as_run = vader_compound(text, mode="described")[0], vader_compound(text, mode="as_run")[0]
    assert described > 0 > as_run
    same = ["Never fail to thank them.", "Kind of helpful."]
    assert np.allclose(vader_compound(same, mode="described"), vader_compound(same, mode="as_run"))


def test_non_text_raises():
    with pytest.raises(InputError) as err:
        vader_compound(["ok", None], ids=["r1", "r2"])
    assert err.value.record == "r2" and err.value.field == "text"


def test_unknown_mode():
    with pytest.raises(ValueError):
        vader_compound(["x"], mode="textblob")
