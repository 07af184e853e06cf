"""Hostile identity-tone inputs: prompt lists, identity ids, and the released workbook file."""

from __future__ import annotations

import pandas as pd
import pytest
from hostile_util import expect_input_error

from cfbench.perturb.stimuli import describe_identity, identity_label, identity_variants

GOOD = {"prompt_id": "p1", "task": "How should I prepare for a promotion talk?"}


@pytest.mark.parametrize("prompts,field,record", [
    ([{"task": "x"}], "prompt_id", None),
    ([{"prompt_id": "p1"}], "task", None),
    ([GOOD, {"prompt_id": "", "task": "x"}], "prompt_id", "1"),
    ([GOOD, {"prompt_id": 7, "task": "x"}], "prompt_id", "1"),
    ([GOOD, dict(GOOD)], "prompt_id", "p1"),
    ([{"prompt_id": "p2", "task": "   "}], "task", "p2"),
    ([{"prompt_id": "p2", "task": None}], "task", "p2"),
    ([{"prompt_id": "p2", "task": 3.5}], "task", "p2"),
], ids=["no-id-column", "no-task-column", "empty-id", "numeric-id", "duplicate-id", "blank-task", "null-task",
        "numeric-task"])
def test_bad_prompt_records(prompts, field, record):
    expect_input_error(lambda: identity_variants(prompts, seed=0, prompt_source="prompts.csv"), field=field,
                       record=record)


def test_bad_prompt_frame_with_nan_task():
    frame = pd.DataFrame([GOOD, {"prompt_id": "p2", "task": float("nan")}])
    expect_input_error(lambda: identity_variants(frame, seed=0), field="task", record="p2")


def test_huge_task_text_is_kept_whole():
    task = "word " * 200_000 + "end."
    v = identity_variants([{"prompt_id": "big", "task": task}], seed=0)
    assert len(v) == 8 and v["user_text"].str.endswith(task).all()


@pytest.mark.parametrize("identity", ["", "young", "young_male", "old_male_immigrant_extra", "ancient_male_immigrant"])
def test_unknown_identity_ids(identity):
    with pytest.raises(Exception) as info:
        describe_identity(identity)
    from cfbench.core.errors import InputError

    assert isinstance(info.value, InputError) and repr(identity) in str(info.value)


@pytest.mark.parametrize("identity", ["young", "a_b"])
def test_malformed_identity_label(identity):
    from cfbench.core.errors import InputError

    with pytest.raises(InputError):
        identity_label(identity)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 not really a numbers archive", "r\u00e9sum\u00e9".encode("latin-1")],
                         ids=["empty", "truncated-zip", "latin1-text"])
def test_amiri_workbook_that_is_not_a_numbers_file(tmp_path, content):
    pytest.importorskip("numbers_parser")
    from cfbench.io.amiri import load_amiri

    bad = tmp_path / "bad.numbers"
    bad.write_bytes(content)
    expect_input_error(lambda: load_amiri(bad, cache_dir=tmp_path / "cache", use_cache=False), field="<file>")


def test_amiri_missing_file_is_a_clear_file_not_found(tmp_path):
    from cfbench.io.amiri import load_amiri

    with pytest.raises(FileNotFoundError, match="not found"):
        load_amiri(tmp_path / "absent.numbers", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("mapping,field", [
    ({"n_prompt": 4}, "n_prompt"),
    ({"n_prompts": "12"}, "n_prompts"),
    ({"fresh_models": "local:qwen2.5-coder-1.5b"}, "fresh_models"),
    ({"prompt_set": "mine"}, "prompt_set"),
    ({"n_prompts": 0}, "n_prompts"),
    ({"completion_cap": -5}, "completion_cap"),
    ({"fresh_models": []}, "fresh_models"),
    ({"use_cache": "yes"}, "use_cache"),
    ({"repeat_penalty": 0}, "repeat_penalty"),
    ({"repeat_penalty": "1.1"}, "repeat_penalty"),
], ids=["unknown-name", "string-number", "string-not-list", "bad-prompt-set", "zero-prompts", "negative-cap",
        "no-models", "string-bool", "zero-penalty", "string-penalty"])
def test_bad_study_parameters(mapping, field):
    from cfbench.studies.identity_tone import Params

    expect_input_error(lambda: Params.from_config(mapping, source="my.yaml"), field=field)


def test_released_prompt_set_without_the_workbook_is_a_clear_error(tmp_path):
    from cfbench.studies.identity_tone import Params, run

    params = Params(prompt_set="released", reproduce_released=False, n_resamples=10)
    expect_input_error(lambda: run(params), field="prompt_set")


def test_too_many_cfbench_prompts_names_the_field():
    from cfbench.studies.identity_tone import Params, run

    expect_input_error(lambda: run(Params(n_prompts=999, reproduce_released=False, n_resamples=10)), field="n_prompts")


@pytest.mark.parametrize("value", ["False", "no", 0, None])
def test_amiri_is_error_must_be_a_checkbox_value(value):
    """`astype(bool)` read the text "False" as True; a value that is not true/false is named instead."""
    import pandas as pd

    from cfbench.io.amiri import _NUMERIC, _validate_career

    row = {"model": "m", "prompt_id": "p1", "identity": "i", "output": "text", "is_error": False,
           **{c: 1.0 for c in _NUMERIC}}
    assert not _validate_career(pd.DataFrame([row]), "wb.numbers")["is_error"].iloc[0]
    expect_input_error(lambda: _validate_career(pd.DataFrame([{**row, "is_error": value}]), "wb.numbers"),
                       field="is_error", record="m/p1/i")


def test_amiri_rows_repeating_a_model_prompt_and_identity_are_refused():
    """A repeated row would count its prompt twice in every paired test; the released workbook has none."""
    import pandas as pd

    from cfbench.io.amiri import _NUMERIC, _validate_career

    row = {"model": "m", "prompt_id": "p1", "identity": "i", "output": "text", "is_error": False,
           **{c: 1.0 for c in _NUMERIC}}
    other = {**row, "identity": "j"}
    assert len(_validate_career(pd.DataFrame([row, other]), "wb.numbers")) == 2
    err = expect_input_error(lambda: _validate_career(pd.DataFrame([row, other, {**row, "output": "x"}]), "wb.numbers"),
                             field="identity", record="m/p1/i")
    assert "rows 2 and 4" in str(err)
