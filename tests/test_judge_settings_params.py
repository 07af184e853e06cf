"""``concurrency`` and ``timeout_s`` are parameters of every study (issue 37): in its Params, its shipped
default and paper configs, its notebook, and they reach the runner during ``run``."""

from __future__ import annotations

import dataclasses
import importlib
import math
from pathlib import Path

import pytest
import yaml

from cfbench.core.errors import InputError

REPO = Path(__file__).resolve().parents[1]
STUDIES = ("contact_center_qa", "identity_tone", "judge_bias", "shopflow")


def _params(study):
    return importlib.import_module(f"cfbench.studies.{study}").Params


@pytest.mark.parametrize("study", STUDIES)
def test_params_have_both_settings_defaulting_to_adapt_and_600_s(study):
    fields = {f.name: f.default for f in dataclasses.fields(_params(study))}
    assert fields["concurrency"] == 0 and fields["timeout_s"] == 0.0


@pytest.mark.parametrize("study", STUDIES)
@pytest.mark.parametrize("config", ["default", "paper"])
def test_default_and_paper_configs_list_them_at_todays_behaviour(study, config):
    data = yaml.safe_load((REPO / "configs" / study / f"{config}.yaml").read_text())
    assert data["concurrency"] == 0 and data["timeout_s"] == 0.0
    p = _params(study).from_config(data, source=f"{config}.yaml")
    assert p.concurrency == 0 and p.timeout_s == 0.0


@pytest.mark.parametrize("study", STUDIES)
@pytest.mark.parametrize("field,value", [("concurrency", -1), ("concurrency", 1.5), ("timeout_s", -3.0),
                                         ("timeout_s", math.inf), ("timeout_s", math.nan)])
def test_a_bad_setting_is_an_input_error_naming_the_field(study, field, value):
    with pytest.raises(InputError) as e:
        _params(study)(**{field: value})
    assert e.value.field == field


@pytest.mark.parametrize("study", ["contact_center_qa", "judge_bias"])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, 2.5, True, "0.2"])
def test_a_temperature_outside_0_to_2_is_an_input_error(study, value):
    with pytest.raises(InputError) as e:
        _params(study)(temperature=value)
    assert e.value.field == "temperature"
    assert _params(study)(temperature=0.7).temperature == 0.7


def test_judge_bias_run_hands_its_settings_to_the_runner():
    """The settings a judge call sees inside ``run`` are the Params' (read from the runner's context by the
    scripted judge itself)."""
    from cfbench.judges import runner
    from cfbench.judges.scripted import register_script
    from cfbench.studies.judge_bias import Params, run
    from cfbench.studies.judge_bias.tasks import _script

    seen = []
    good = _script(False)

    def spy(request):
        seen.append(runner.resolve_settings(None, runner.FROM_SETTINGS))
        return good(request)

    register_script("judge-bias-test-settings-spy", spy)
    register_script("judge-bias-test-settings-spy-2", spy)  # another name: no reply cached by the first run
    params = Params(star_path="none", n_draft=0, n_control=4, pointwise_cues=(), n_boot=50,
                    judges=("scripted:judge-bias-test-settings-spy",), concurrency=3, timeout_s=42.0)
    run(params, progress=False)
    assert seen and set(seen) == {(3, 42.0)}
    seen.clear()
    run(dataclasses.replace(params, concurrency=0, timeout_s=0.0, judges=("scripted:judge-bias-test-settings-spy-2",)),
        progress=False)
    assert seen and {c for c, _ in seen} == {None} and {t for _, t in seen} == {runner.DEFAULT_TIMEOUT_S}


@pytest.mark.parametrize("raw, expected", [("3", 3), ("3.0", 3), ("", None), ("0", None)])
def test_concurrency_from_the_environment_is_a_whole_number(monkeypatch, raw, expected):
    from cfbench.judges.runner import resolve_settings

    monkeypatch.setenv("CFBENCH_CONCURRENCY", raw)
    assert resolve_settings(None, 30.0)[0] == expected


@pytest.mark.parametrize("raw", ["2.7", "-1", "two", "nan"])
def test_a_concurrency_from_the_environment_that_is_not_a_whole_number_is_named(monkeypatch, raw):
    from cfbench.judges.runner import resolve_settings

    monkeypatch.setenv("CFBENCH_CONCURRENCY", raw)
    with pytest.raises(ValueError, match="CFBENCH_CONCURRENCY"):
        resolve_settings(None, 30.0)
