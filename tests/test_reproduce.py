"""`cfbench reproduce`: studies discovered, any config file, overrides, results replaced only on success."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import yaml

from cfbench.cli import main
from cfbench.core.errors import InputError
from cfbench.cli.reproduce import MARKER, StudyFailed, load_config_file, reproduce, studies

pytest.importorskip("papermill")
REPO = Path(__file__).resolve().parents[1]


def test_studies_are_discovered_from_the_package():
    assert set(studies()) == {"contact_center_qa", "identity_tone", "judge_bias", "shopflow"}


def test_a_failed_run_leaves_the_previous_results_untouched(tmp_path):
    previous = tmp_path / "shopflow" / "smoke"
    previous.mkdir(parents=True)
    (previous / MARKER).write_text("made by cfbench\n")
    (previous / "summary.json").write_text('{"old": true}\n')
    with pytest.raises(StudyFailed) as err:
        reproduce("smoke", ["shopflow"], results_dir=tmp_path, overrides={"judge": "scripted:no-such-script"})
    assert json.loads((previous / "summary.json").read_text()) == {"old": True}
    failed = tmp_path / "shopflow" / "smoke.failed" / "shopflow.ipynb"
    assert failed.is_file() and str(failed) in str(err.value)
    assert "no scripted judge named 'no-such-script'" in str(err.value) and "\n" not in str(err.value)


def test_config_file_and_overrides_name_the_results_folder(tmp_path):
    cfg = yaml.safe_load((REPO / "configs" / "shopflow" / "smoke.yaml").read_text())
    path = tmp_path / "smoke.yaml"  # the name says what it is: test doubles only
    path.write_text(yaml.safe_dump(cfg))
    info = reproduce(studies_=["shopflow"], config_file=path, overrides={"n_boot": 50},
                     results_dir=tmp_path / "res")
    out = tmp_path / "res" / "shopflow" / "smoke"
    assert info["shopflow"]["config"] == "smoke" and (out / "summary.json").is_file()
    nb = nbformat.read(out / "shopflow.ipynb", as_version=4)
    injected = next(c.source for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "n_boot = 50" in injected
    assert str(tmp_path) not in injected and 'output_dir = "."' in injected  # no machine path in parameters
    assert str(tmp_path) not in (out / "shopflow.ipynb").read_text() and "/work/" not in (out / "shopflow.ipynb").read_text()
    assert nb.metadata["papermill"]["input_path"] == "notebooks/shopflow.ipynb"
    assert not (tmp_path / "res" / "shopflow" / ".smoke.staging").exists()


def test_overrides_are_checked_against_the_notebook(tmp_path):
    with pytest.raises(InputError, match="declares no parameter"):
        load_config_file(REPO / "configs" / "shopflow" / "smoke.yaml", "shopflow", overrides={"n_bot": 5})
    with pytest.raises(InputError, match="set by cfbench reproduce"):
        load_config_file(REPO / "configs" / "shopflow" / "smoke.yaml", "shopflow", overrides={"output_dir": "x"})


def test_cli_errors_are_one_line_with_status_2(capsys):
    assert main(["reproduce", "--config", "smoke", "--study", "no_such_study"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cfbench: error:") and "no_such_study" in err and "\n" not in err
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow", "-p", "n_bot", "3"]) == 2
    assert "declares no parameter 'n_bot'" in capsys.readouterr().err


def test_debug_shows_the_traceback():
    with pytest.raises(InputError):
        main(["--debug", "reproduce", "--config", "smoke", "--study", "no_such_study"])


def test_a_config_that_repeats_a_parameter_is_an_error(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("n_boot: 50\nseed: 1\nn_boot: 5000\n")
    with pytest.raises(InputError) as err:
        load_config_file(path, "shopflow")
    assert err.value.field == "n_boot" and "lines 1 and 3" in str(err.value)


def test_the_commit_is_dirty_for_changed_code_but_not_for_results_a_run_replaced(tmp_path):
    """A multi-study run replaces committed results/ before the next study starts; that is output, not code."""
    import subprocess

    from cfbench.cli.reproduce.provenance import git_commit

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "results" / "a").mkdir(parents=True)
    (tmp_path / "results" / "a" / "t.csv").write_text("x\n1\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    assert git_commit(tmp_path)["dirty"] is False
    (tmp_path / "results" / "a" / "t.csv").write_text("x\n2\n")
    assert git_commit(tmp_path)["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path)["dirty"] is True
