"""Lexicon metrics: as-described (word boundaries, rates) vs as-run (substrings, counts)."""

import math

import pytest

from cfbench.core.errors import InputError
from cfbench.metrics.lexicon import (as_run_char_count, as_run_word_count, count_matches, count_substrings,
                                     described_word_count, lexicon_scores, lexicons_from_mapping,
                                     score_responses, tone_scores)
from cfbench.studies.identity_tone.prompts import load_as_run_terms, load_lexicons

DESC = load_lexicons()
RUN = load_as_run_terms()


def test_shipped_lexicons_have_the_described_sizes_and_a_version():
    lex = load_lexicons()
    assert lex.version
    assert (len(lex["hedging"]), len(lex["politeness"]), len(lex["negative_tone"])) == (18, 12, 15)
    run = load_as_run_terms()
    assert set(run["hedging"]) == {"could", "might", "may", "often"}
    assert set(run["politeness"]) == {"consider", "appreciate", "i suggest", "i recommend", "thank you", "please"}
    assert set(run["negative_tone"]) == {"just", "clearly", "simply", "you need"}


def test_word_boundaries_and_case():
    assert count_matches("Maybe. MAY. dismay. may-be", ["may"]) == 2  # "MAY" and "may" of "may-be"
    assert count_substrings("Maybe. MAY. dismay.", ["may"]) == 3


def test_greedy_longest_match_without_double_counting():
    terms = ["it depends", "depends on", "depends"]
    # leftmost-longest: "it depends" wins at position 0, leaving "on the" unmatched
    assert count_matches("It depends on the team.", terms) == 1
    assert count_matches("That depends on you; it depends.", terms) == 2
    assert count_matches("in some cases, in\nsome   cases", ["in some cases", "some"]) == 2


def test_curly_apostrophes():
    assert count_matches("You can\u2019t rush it; you can't.", ["can't"]) == 2


def test_word_counts():
    text = "1) Top actions:\n - Ask, then listen.\n - Don't rush \u2014 ever."
    # described: lowercase, strip punctuation -> 1 top actions ask then listen dont rush ever
    assert described_word_count(text) == 9
    # as-run: whitespace split of the raw text keeps "-" and "\u2014" tokens
    assert as_run_word_count(text) == 12


def test_as_run_char_count_rule():
    assert as_run_char_count("ab\ncd") == 4
    assert as_run_char_count("x:\n  - y") == len("x:  - y") + 2


def test_described_rates_per_100_words():
    text = "You might consider this; it could work. Please try."  # 9 words
    s = lexicon_scores([text], lexicons=DESC, mode="described").iloc[0]
    assert s.words == 9
    assert s.hedging == pytest.approx(100 * 2 / 9)       # might, could
    assert s.politeness == pytest.approx(100 * 2 / 9)    # consider, please
    assert s.neg_tone == 0


def test_as_run_raw_counts():
    text = "You might consider this; maybe it could work. You need to, just simply, please."
    s = lexicon_scores([text], lexicons=RUN, mode="as_run").iloc[0]
    assert (s.hedging, s.politeness, s.neg_tone) == (3.0, 2.0, 3.0)  # might, may(be), could / consider, please / you need, just, simply
    assert s.words == len(text.split())


def test_empty_text_is_flagged_not_zeroed():
    s = tone_scores(["   "], lexicons=DESC, mode="described").iloc[0]
    assert bool(s["empty"]) and math.isnan(s.hedging) and math.isnan(s.sentiment)


@pytest.mark.parametrize("bad", [None, 3, 2.5, b"bytes"])
def test_non_text_raises_naming_record(bad):
    with pytest.raises(InputError) as err:
        lexicon_scores(["fine", bad], lexicons=DESC, mode="described", ids=["a", "b"])
    assert err.value.record == "b" and err.value.field == "text"


def test_unknown_mode():
    with pytest.raises(ValueError):
        lexicon_scores(["x"], lexicons=DESC, mode="paper")


def test_score_responses_keeps_failed_rows():
    import pandas as pd
    frame = pd.DataFrame({"model": ["m"] * 3, "prompt_id": ["p"] * 3, "identity": ["a", "b", "c"],
                          "variant_id": ["p/a", "p/b", "p/c"], "text": ["Please try.", None, ""],
                          "status": ["ok", "error", "empty"]})
    out = score_responses(frame, lexicons=DESC, mode="described", keep=("model", "prompt_id", "identity"),
                          record="variant_id")
    assert len(out) == 3
    assert out.politeness.iloc[0] == pytest.approx(50.0)
    assert out[["sentiment", "politeness", "words"]].iloc[1:].isna().all().all()
    assert out.status.tolist() == ["ok", "error", "empty"]


def test_lexicons_are_a_parameter_and_bad_term_lists_are_input_errors():
    with pytest.raises(TypeError):
        lexicon_scores(["x"], lexicons=None)
    good = {"version": "v", "politeness": ["please"], "hedging": ["may"], "negative_tone": ["just"]}
    assert lexicons_from_mapping(good, source="s")["hedging"] == ("may",)
    for field, bad in [("version", None), ("hedging", []), ("hedging", ["may", "MAY"]), ("politeness", [3]),
                       ("negative_tone", [" "])]:
        raw = dict(good)
        if bad is None:
            raw.pop(field)
        else:
            raw[field] = bad
        with pytest.raises(InputError) as err:
            lexicons_from_mapping(raw, source="my.yaml")
        assert err.value.field == field and "my.yaml" in str(err.value)


def test_metrics_module_reads_no_study_file():
    import inspect

    import cfbench.metrics.lexicon as mod

    assert "identity_tone" not in inspect.getsource(mod) and "package_text" not in inspect.getsource(mod)


def test_score_responses_names_the_record_column():
    import pandas as pd
    frame = pd.DataFrame({"model": ["m"], "prompt_id": ["p"], "identity": ["a"], "rid": ["r1"], "text": [5],
                          "status": ["ok"]})
    with pytest.raises(InputError) as err:
        score_responses(frame, lexicons=DESC, keep=("model",), record="rid")
    assert err.value.record == "r1"
