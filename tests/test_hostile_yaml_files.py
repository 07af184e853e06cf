"""Hostile YAML inputs: the Auto-QA rubric (a user-supplied prompt file) and the ShopFlow release contract."""

from __future__ import annotations

import pytest
from hostile_util import CORPUS, expect_input_error

from cfbench.studies.shopflow import FairnessContract
from cfbench.studies.contact_center_qa.qa import load_rubric

RUBRIC = {
    "empty.yaml": ("questions", None),
    "not_a_mapping.yaml": ("questions", None),
    "questions_is_string.yaml": ("id", "#0"),
    "missing_text.yaml": ("text", "q1"),
    "unknown_type.yaml": ("type", "q1"),
    "duplicate_ids.yaml": ("id", "q1"),
    "bad_yaml.yaml": ("<yaml>", "line"),
    "latin1.yaml": ("<encoding>", "line"),
    "text_is_number.yaml": ("text", "q1"),
    "criteria_is_string.yaml": ("criteria", "q1"),
}

CONTRACT = {
    "empty.yaml": (None, None),
    "gap_above_one.yaml": ("max_tpr_gap", None),
    "gap_negative.yaml": ("max_fpr_gap", None),
    "gap_nan.yaml": ("max_tpr_gap", None),
    "gap_is_text.yaml": ("max_tpr_gap", None),
    "support_negative.yaml": ("min_positive_per_slice", None),
    "unknown_key.yaml": ("max_gap", None),
    "bad_yaml.yaml": ("<yaml>", "line"),
    "latin1.yaml": ("<encoding>", "line"),
    "duplicate_key.yaml": ("max_tpr_gap", "line 6"),
    "duplicate_nested_key.yaml": ("attested", "line 10"),
    "empty_requirements.yaml": ("release_requirements", None),
}


def test_every_corpus_file_has_a_case():
    assert sorted(p.name for p in (CORPUS / "rubric").iterdir()) == sorted(RUBRIC)
    assert sorted(p.name for p in (CORPUS / "contract").iterdir()) == sorted(CONTRACT)


@pytest.mark.parametrize("name", sorted(RUBRIC))
def test_bad_rubric(name):
    field, record = RUBRIC[name]
    expect_input_error(lambda: load_rubric(str(CORPUS / "rubric" / name)), field=field, record=record)


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_bad_contract(name):
    field, record = CONTRACT[name]
    err = expect_input_error(lambda: FairnessContract.from_yaml(CORPUS / "contract" / name), field=field,
                             record=record)
    assert name in str(err)


def test_missing_rubric_file(tmp_path):
    expect_input_error(lambda: load_rubric(str(tmp_path / "none.yaml")), field=None)
