"""`cfbench reproduce` changes only what it made: own folders for variations, marker, lock, links, bad paths.

Each run here executes the ShopFlow smoke notebook (scripted test double, seconds) into a temporary
folder; nothing under the checkout's results/ is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from cfbench.cli import main
from cfbench.core.errors import InputError
from cfbench.cli.reproduce import MARKER, reproduce, results_folder_name
from cfbench.cli.reproduce.folders import FolderLock

pytest.importorskip("papermill")
REPO = Path(__file__).resolve().parents[1]


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) with the sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cfbench: error:") and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_run_with_overrides_leaves_the_reference_run_byte_identical(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    study_dir = tmp_path / "results" / "shopflow"
    study_dir.mkdir(parents=True)
    os.symlink(tmp_path / "gone", study_dir / ".smoke.old")  # debris of an older cfbench: a dangling link
    (study_dir / ".smoke.staging-killed").mkdir()  # a killed run's staging (cfbench's: it holds the marker)
    (study_dir / ".smoke.staging-killed" / MARKER).write_text("x")
    (study_dir / ".smoke.staging-notmine").mkdir()  # same pattern, no marker: not cfbench's to delete
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow"]) == 0
    reference = study_dir / "smoke"
    assert (reference / MARKER).is_file()
    before = _tree(reference)
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow", "-p", "n_boot", "50"]) == 0
    assert _tree(reference) == before  # byte-identical, run_info.json and notebook included
    own = study_dir / results_folder_name("smoke", {"n_boot": 50})
    assert own.name.startswith("smoke-") and own.is_dir(), sorted(p.name for p in study_dir.iterdir())
    info = json.loads((own / "run_info.json").read_text())
    assert info["overrides"] == {"n_boot": 50} and info["config"] == own.name and info["mode"] == "live"
    assert "n_boot = 50" in (own / "shopflow.ipynb").read_text()
    assert own.name in capsys.readouterr().out  # the command says where the results went
    # nothing else was left beside them; the foreign link is still there, untouched
    assert sorted(p.name for p in study_dir.iterdir()) == sorted([".smoke.old", ".smoke.staging-notmine", "smoke",
                                                                  own.name])
    assert (study_dir / ".smoke.old").is_symlink()


def test_a_config_file_gets_its_own_folder_even_when_named_like_a_shipped_config(tmp_path):
    cfg = tmp_path / "default.yaml"
    cfg.write_text((REPO / "configs" / "shopflow" / "smoke.yaml").read_text())
    a = results_folder_name("default", None, {"n_boot": 500})
    assert a != "default" and a == results_folder_name("default", None, {"n_boot": 500})
    assert a != results_folder_name("default", None, {"n_boot": 501})
    assert results_folder_name("default") == "default"


def test_a_foreign_folder_survives_a_run_pointed_at_it(tmp_path, capsys):
    foreign = tmp_path / "unrelated" / "shopflow" / "smoke"
    foreign.mkdir(parents=True)
    (foreign / "thesis.docx").write_bytes(b"four years of work")
    err = _one_line_error(capsys, ["reproduce", "--config", "smoke", "--study", "shopflow",
                                   "--results", str(tmp_path / "unrelated")])
    assert "not made by cfbench" in err and "--force" in err
    assert (foreign / "thesis.docx").read_bytes() == b"four years of work"
    assert sorted(p.name for p in foreign.parent.iterdir()) == ["smoke"]  # no staging, lock or .old left


def test_a_symlinked_results_folder_is_refused_without_debris(tmp_path, capsys):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    (tmp_path / "res" / "shopflow").mkdir(parents=True)
    os.symlink(target, tmp_path / "res" / "shopflow" / "smoke")
    err = _one_line_error(capsys, ["reproduce", "--config", "smoke", "--study", "shopflow",
                                   "--results", str(tmp_path / "res")])
    assert "symbolic link" in err
    assert sorted(p.name for p in (tmp_path / "res" / "shopflow").iterdir()) == ["smoke"]
    assert (tmp_path / "res" / "shopflow" / "smoke").is_symlink() and _tree(target) == {
        "keep.txt": hashlib.sha256(b"mine").hexdigest()}


def test_a_second_run_of_the_same_folder_is_refused_and_never_touches_the_first_runs_staging(tmp_path, capsys):
    final = tmp_path / "res" / "shopflow" / "smoke"
    final.parent.mkdir(parents=True)
    staging = final.parent / ".smoke.staging-first"  # the first run's, mid-way
    staging.mkdir()
    (staging / MARKER).write_text("x")
    (staging / "half.csv").write_text("a,b\n")
    with FolderLock(final):
        err = _one_line_error(capsys, ["reproduce", "--config", "smoke", "--study", "shopflow",
                                       "--results", str(tmp_path / "res")])
        assert "another cfbench run" in err and f"pid {os.getpid()}" in err
        assert (staging / "half.csv").read_text() == "a,b\n" and not final.exists()
    assert not (final.parent / ".smoke.lock").exists()  # the lock goes with its holder


def test_bad_paths_and_values_are_one_line_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    assert "is a file" in _one_line_error(capsys, ["reproduce", "--config", "smoke", "--results", "afile"])
    assert "filesystem root" in _one_line_error(capsys, ["reproduce", "--config", "smoke", "--results", "/"])
    (tmp_path / "..yaml").write_text((REPO / "configs" / "shopflow" / "smoke.yaml").read_text())
    err = _one_line_error(capsys, ["reproduce", "--study", "shopflow", "-f", "..yaml"])
    assert "cannot name a results folder" in err
    (tmp_path / "cfgdir").mkdir()
    assert "is a folder" in _one_line_error(capsys, ["reproduce", "--study", "shopflow", "-f", "cfgdir"])
    assert "no such file" in _one_line_error(capsys, ["reproduce", "--study", "shopflow", "-f", "nope.yaml"])
    err = _one_line_error(capsys, ["reproduce", "--config", "smoke", "--study", "contact_center_qa",
                                   "-p", "n_items", "0"])
    assert "-p n_items" in err and "field 'n_items'" in err and "at least 1" in err
    err = _one_line_error(capsys, ["reproduce", "--config", "smoke", "--study", "shopflow", "-p", "n_boot", "many"])
    assert "-p n_boot" in err and "smoke.yaml" not in err
    assert not (tmp_path / "results").exists()  # refused before anything was made


def test_a_lab_run_writes_under_results_never_beside_the_notebook(tmp_path, monkeypatch):
    from cfbench.report import notebook_output_dir

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "configs").mkdir()
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    out = notebook_output_dir("", "shopflow")
    assert out == tmp_path / "results" / "shopflow" / "lab" and (out / MARKER).is_file()
    assert notebook_output_dir("somewhere", "shopflow") == Path("somewhere")
    foreign = tmp_path / "results" / "identity_tone" / "lab"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not made by cfbench"):
        notebook_output_dir("", "identity_tone")
    assert list(tmp_path.joinpath("notebooks").iterdir()) == []


def test_reproduce_rejects_a_study_value_before_running(tmp_path):
    with pytest.raises(InputError) as err:
        reproduce("smoke", ["contact_center_qa"], overrides={"n_items": -2}, results_dir=tmp_path)
    assert err.value.field == "n_items" and err.value.source == "-p n_items"
    assert list(tmp_path.iterdir()) == []


def test_force_replaces_a_foreign_folder_only_when_asked(tmp_path):
    foreign = tmp_path / "shopflow" / "smoke"
    foreign.mkdir(parents=True)
    (foreign / "old.txt").write_text("not cfbench's")
    with pytest.raises(InputError, match="not made by cfbench"):
        reproduce("smoke", ["shopflow"], results_dir=tmp_path)
    assert (foreign / "old.txt").is_file()
    reproduce("smoke", ["shopflow"], results_dir=tmp_path, force=True)
    assert not (foreign / "old.txt").exists() and (foreign / MARKER).is_file()
    assert sorted(p.name for p in foreign.parent.iterdir()) == ["smoke"]
