"""Hostile YAML inputs: the Auto-QA rubric (a user-supplied prompt file) and the ShopFlow release contract."""

from __future__ import annotations

import pytest
from hostile_util import CORPUS, expect_input_error

from cfbench.metrics.groups import FairnessContract
from cfbench.tasks.qa import load_rubric

RUBRIC = {
    "empty.yaml": ("questions", None),
    "not_a_mapping.yaml": ("questions", None),
    "questions_is_string.yaml": ("id", "#0"),
    "missing_text.yaml": ("text", "q1"),
    "unknown_type.yaml": ("type", "q1"),
    "duplicate_ids.yaml": ("id", "q1"),
}
RUBRIC_BROKEN = {
    "bad_yaml.yaml": ((None, None), "load_rubric: yaml.ParserError escapes; fix: catch yaml.YAMLError -> "
                                    "InputError(f'not valid YAML: {exc}', source=path) as reproduce.load_config does"),
    "latin1.yaml": (("<encoding>", None), "load_rubric: UnicodeDecodeError from open(); fix: catch it -> "
                                          "InputError(source=path, field='<encoding>')"),
    "text_is_number.yaml": (("text", "q1"), "load_rubric: AttributeError 'int' has no attribute 'strip'; fix: "
                                            "check isinstance(q['text'], str) -> InputError(record=qid, field='text')"),
    "criteria_is_string.yaml": (("criteria", "q1"), "load_rubric: a criteria string is silently split into "
                                                    "one criterion per character; fix: require a list of "
                                                    "strings -> InputError(record=qid, field='criteria')"),
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
}
CONTRACT_BROKEN: dict = {}


def _xfail(cases):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=r))
            for n, (_, r) in sorted(cases.items())]


def test_every_corpus_file_has_a_case():
    assert sorted(p.name for p in (CORPUS / "rubric").iterdir()) == sorted({**RUBRIC, **RUBRIC_BROKEN})
    assert sorted(p.name for p in (CORPUS / "contract").iterdir()) == sorted({**CONTRACT, **CONTRACT_BROKEN})


@pytest.mark.parametrize("name", sorted(RUBRIC))
def test_bad_rubric(name):
    field, record = RUBRIC[name]
    expect_input_error(lambda: load_rubric(str(CORPUS / "rubric" / name)), field=field, record=record)


@pytest.mark.parametrize("name", _xfail(RUBRIC_BROKEN))
def test_bad_rubric_not_yet_wrapped(name):
    field, record = RUBRIC_BROKEN[name][0]
    expect_input_error(lambda: load_rubric(str(CORPUS / "rubric" / name)), field=field, record=record)


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_bad_contract(name):
    field, record = CONTRACT[name]
    err = expect_input_error(lambda: FairnessContract.from_yaml(CORPUS / "contract" / name), field=field,
                             record=record)
    assert name in str(err)


@pytest.mark.parametrize("name", _xfail(CONTRACT_BROKEN))
def test_bad_contract_not_yet_wrapped(name):
    field, record = CONTRACT_BROKEN[name][0]
    expect_input_error(lambda: FairnessContract.from_yaml(CORPUS / "contract" / name), field=field, record=record)


@pytest.mark.xfail(strict=True, reason="load_rubric: a missing path raises FileNotFoundError "
                   "from open(); fix: InputError('file not found', source=path)")
def test_missing_rubric_file(tmp_path):
    expect_input_error(lambda: load_rubric(str(tmp_path / "none.yaml")), field=None)
