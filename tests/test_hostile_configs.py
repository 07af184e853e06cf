"""Hostile study configs through ``cfbench.cli.reproduce.load_config``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_util import CORPUS, expect_input_error

from cfbench.cli.reproduce import load_config

REPO = Path(__file__).resolve().parents[1]

CASES = {
    "top_level_list.yaml": None,
    "bad_yaml.yaml": "<yaml>",
    "latin1.yaml": "<encoding>",
    "non_string_key.yaml": "3",
    "api_key_parameter.yaml": "openai_api_key",
    "empty.yaml": None,
    "unknown_parameter.yaml": "jugde_threshold",
    "wrong_type.yaml": "n_boot",
}


def _root(tmp_path: Path, name: str, study: str = "shopflow") -> Path:
    (tmp_path / "configs" / study).mkdir(parents=True)
    shutil.copy(CORPUS / "configs" / name, tmp_path / "configs" / study / "default.yaml")
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / f"{study}.ipynb", tmp_path / "notebooks" / f"{study}.ipynb")
    return tmp_path


def test_every_corpus_file_has_a_case():
    assert sorted(p.name for p in (CORPUS / "configs").iterdir()) == sorted(
        [*CASES, "threshold_above_one.yaml"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_config(tmp_path, name):
    root = _root(tmp_path, name)
    err = expect_input_error(lambda: load_config("shopflow", "default", root=root), field=CASES[name])
    assert "default.yaml" in str(err)


def test_missing_config_file(tmp_path):
    (tmp_path / "configs" / "shopflow").mkdir(parents=True)
    expect_input_error(lambda: load_config("shopflow", "paper", root=tmp_path), field=None)


def test_threshold_outside_unit_interval_is_caught_where_it_is_used(tmp_path):
    """Ranges are not known to load_config; the routing code rejects the value before routing anything."""
    import pandas as pd

    from cfbench.studies.shopflow import route_rows

    params = load_config("shopflow", "default", root=_root(tmp_path, "threshold_above_one.yaml"))
    frame = pd.DataFrame({"pair_id": ["p1"], "score": [0.4], "evidence_passed": [True]})
    expect_input_error(lambda: route_rows(frame, params["judged_threshold"]), field="threshold")


def test_shipped_configs_all_load():
    from cfbench.cli.reproduce import CONFIGS, studies

    for study in studies():
        for config in CONFIGS:
            assert isinstance(load_config(study, config, root=REPO), dict)
