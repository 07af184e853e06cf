"""The results swap survives a kill at any step, a full disk, and links (issue 36).

A fake papermill writes a small "executed notebook" and a table into the staging folder, so each
run takes milliseconds; a kill -9 is stood for by an exception raised at a step of the swap that no
code of cfbench catches (nothing after it runs, as after a kill).
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import cfbench
from cfbench.cli.reproduce import DiskFull, MARKER, StudyFailed, failures, folders, notebook, provenance, swap
from cfbench.cli.reproduce.config import Run, project_root
from cfbench.cli.reproduce.run import run_study
from cfbench.core.errors import InputError

STEPS = ("journal written", "old results moved aside", "new results in place", "old results deleted")


class Killed(BaseException):
    """Stands for kill -9: not an Exception, so no except clause of cfbench sees it."""


class FakePapermill:
    def __init__(self, tag: str, *, fail: BaseException | None = None):
        self.tag, self.fail = tag, fail

    def execute_notebook(self, src, out, *, parameters, cwd, **_):
        nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]}],
              "metadata": {"papermill": {}}, "nbformat": 4, "nbformat_minor": 5}
        Path(out).write_text(json.dumps(nb), encoding="utf-8")
        (Path(cwd) / "table.csv").write_text(f"run,{self.tag}\n" + "x,1\n" * 50, encoding="utf-8")
        if self.fail is not None:
            raise self.fail


@pytest.fixture
def quick(tmp_path, monkeypatch):
    """No kernel, no view page, a private cache folder."""
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(notebook, "kernel_manager", lambda: None)
    monkeypatch.setattr(notebook, "shutdown", lambda km: None)
    monkeypatch.setattr(notebook, "write_view_page", lambda folder, run: None)
    monkeypatch.setattr(provenance, "git_commit", lambda root: None)
    return tmp_path / "R"


RUN = Run("shopflow", "smoke", {}, "--config smoke")


def _run(results: Path, tag: str, **kw) -> None:
    try:
        run_study(FakePapermill(tag, **kw), project_root(), RUN, results, "live")
    except StudyFailed:
        if "fail" not in kw or failures.is_disk_full(kw["fail"]):
            raise


def _state(results: Path) -> tuple[str | None, list[str]]:
    """(the tag of the complete results in place or None, every other name beside them)."""
    study = results / "shopflow"
    final = study / "smoke"
    tag = None
    if final.is_dir() and (final / "run_info.json").is_file() and (final / MARKER).is_file():
        tag = (final / "table.csv").read_text().splitlines()[0].split(",")[1]
        assert (final / "table.csv").read_text().count("x,1") == 50  # complete, not a part
    return tag, sorted(p.name for p in study.iterdir() if p.name != "smoke")


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_of_the_swap_leaves_old_or_new_complete(quick, monkeypatch, step, capsys):
    _run(quick, "old")
    assert _state(quick) == ("old", [])

    def crash(at):
        if at == step:
            if at == "new results in place":  # a kill half-way through deleting the old folder
                old = next((quick / "shopflow").glob(".smoke.old-*"))
                (old / MARKER).unlink()
                (old / "run_info.json").unlink()
            raise Killed(at)

    monkeypatch.setattr(swap, "_crash_point", crash)
    with pytest.raises(Killed):
        _run(quick, "new")
    monkeypatch.setattr(swap, "_crash_point", lambda at: None)
    # the next run's first step, on its own: old or new complete, nothing of the swap left
    swap.recover_swap(quick / "shopflow" / "smoke")
    tag, others = _state(quick)
    assert tag in ("old", "new") and others == [], (step, tag, others)
    if step in ("old results moved aside", "new results in place", "old results deleted"):
        assert tag == "new"
    # and a whole next run ends with its own results and nothing else
    _run(quick, "third")
    assert _state(quick) == ("third", [])
    assert "Traceback" not in capsys.readouterr().err


def test_the_layout_an_older_cfbench_left_after_a_kill_between_the_renames(quick):
    """The issue's case: results missing, the old ones in .smoke.old-XXXX, a finished staging folder."""
    _run(quick, "old")
    study = quick / "shopflow"
    (study / "smoke").rename(study / ".smoke.old-1a2b3c4d")
    elsewhere = quick.parent / "R2"
    _run(elsewhere, "new")  # a complete run, moved in under the staging name the killed run had
    (elsewhere / "shopflow" / "smoke").rename(study / ".smoke.staging-killed")
    assert _state(quick) == (None, [".smoke.old-1a2b3c4d", ".smoke.staging-killed"])
    _run(quick, "third", fail=RuntimeError("this run fails"))  # whatever the next run does ...
    assert _state(quick) == ("old", ["smoke.failed"])  # ... the old results are back first
    _run(quick, "third")
    assert _state(quick) == ("third", [])


def test_a_foreign_old_looking_folder_is_never_touched(quick):
    _run(quick, "old")
    study = quick / "shopflow"
    foreign = study / ".smoke.old-notmine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    _run(quick, "new")
    assert (foreign / "keep.txt").read_text() == "mine"


# -- a full disk ---------------------------------------------------------------------------------

def test_a_full_disk_removes_the_runs_own_folders_in_one_line(quick, capsys):
    from cfbench.cli import main

    _run(quick, "old")
    stale = quick / "shopflow" / "smoke.failed"  # a failed run's folder kept from before
    stale.mkdir()
    (stale / MARKER).write_text("x")
    (stale / "big.bin").write_bytes(b"0" * 10_000)
    with pytest.raises(StudyFailed) as info:
        _run(quick, "new", fail=OSError(errno.ENOSPC, "No space left on device"))
    message = str(info.value)
    assert "no space left" in message and "\n" not in message and "ipynb" not in message
    assert _state(quick) == ("old", [])  # old results intact; no staging, no failed folder


def test_a_full_disk_inside_a_notebook_cell_counts_too(quick):
    class CellError(Exception):  # what papermill raises for a cell's exception
        ename, evalue = "OSError", "[Errno 28] No space left on device: 'rows.parquet'"

    _run(quick, "old")
    with pytest.raises(DiskFull):
        _run(quick, "new", fail=CellError("cell 3"))
    assert _state(quick) == ("old", [])


def test_a_full_disk_at_the_next_start_frees_the_failed_folder_and_runs(quick, monkeypatch):
    _run(quick, "old")
    failed = quick / "shopflow" / "smoke.failed"
    failed.mkdir()
    (failed / MARKER).write_text("x")
    real = folders.new_folder

    def new_folder(parent, prefix):
        if failed.exists():  # the disk stays full while the failed folder is there
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(parent, prefix)

    monkeypatch.setattr(folders, "new_folder", new_folder)
    _run(quick, "new")
    assert _state(quick) == ("new", [])


def test_a_full_disk_that_stays_full_is_one_line(quick, monkeypatch):
    def new_folder(parent, prefix):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(folders, "new_folder", new_folder)
    with pytest.raises(StudyFailed, match="no space left"):
        _run(quick, "new")


# -- links and ownership ---------------------------------------------------------------------------

def test_a_symlinked_study_folder_is_refused_and_its_target_untouched(tmp_path, capsys):
    from cfbench.cli import main

    res = tmp_path / "R"
    other = res / "contact_center_qa" / "smoke"
    other.mkdir(parents=True)
    (other / MARKER).write_text("x")
    (other / "run_info.json").write_text(json.dumps({"study": "contact_center_qa", "config": "smoke"}))
    (other / "table.csv").write_text("theirs")
    os.symlink("contact_center_qa", res / "shopflow")
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow", "--results", str(res)]) == 2
    err = capsys.readouterr().err.strip()
    assert "symbolic link" in err and "\n" not in err
    assert (other / "table.csv").read_text() == "theirs"
    assert sorted(p.name for p in other.iterdir()) == sorted([MARKER, "run_info.json", "table.csv"])


def test_a_marker_in_another_studys_results_is_not_ours(tmp_path):
    folder = tmp_path / "shopflow" / "smoke"
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("x")
    (folder / "run_info.json").write_text(json.dumps({"study": "contact_center_qa", "config": "smoke"}))
    assert not folders.is_ours(folder)
    with pytest.raises(InputError, match="not made by cfbench"):
        folders.check_ours(folder, force=False)
    (folder / "run_info.json").write_text(json.dumps({"study": "shopflow", "config": "smoke"}))
    assert folders.is_ours(folder)
    (folder / "run_info.json").write_text(json.dumps({"study": "shopflow", "config": "paper"}))
    assert not folders.is_ours(folder)


KILL_SCRIPT = r'''
import json, os, signal, sys
from pathlib import Path
from cfbench.cli.reproduce import folders, notebook, provenance, swap
from cfbench.cli.reproduce.config import Run, project_root
from cfbench.cli.reproduce.run import run_study

class FakePapermill:
    def execute_notebook(self, src, out, *, parameters, cwd, **_):
        nb = {"cells": [], "metadata": {"papermill": {}}, "nbformat": 4, "nbformat_minor": 5}
        Path(out).write_text(json.dumps(nb))
        (Path(cwd) / "table.csv").write_text(f"run,{sys.argv[2]}\n" + "x,1\n" * 50)

notebook.kernel_manager = lambda: None
notebook.shutdown = lambda km: None
notebook.write_view_page = lambda folder, run: None
provenance.git_commit = lambda root: None
step = sys.argv[3]
def crash(at):
    if at == step:
        os.kill(os.getpid(), signal.SIGKILL)
swap._crash_point = crash
run = Run("shopflow", "smoke", {}, "--config smoke")
with folders.FolderLock(Path(sys.argv[1]).resolve() / "shopflow" / "smoke"):
    run_study(FakePapermill(), project_root(), run, Path(sys.argv[1]), "live")
'''


@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_each_step_then_the_next_run(quick, step):
    """A real kill -9 of a process at each step (no cleanup of any kind runs), then a next run."""
    import signal
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(cfbench.__file__).parents[1]),
                                                          os.environ.get("PYTHONPATH", "")])}
    for tag, at in (("old", "none"), ("new", step)):
        proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(quick), tag, at], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == (0 if at == "none" else -signal.SIGKILL), proc.stderr
    tag, others = _state(quick)
    assert tag is None or set(others) - {".smoke.lock"}  # the kill left the swap half done
    with folders.FolderLock((quick / "shopflow" / "smoke").resolve()):  # the next run, as reproduce() runs it
        _run(quick, "third")
    assert _state(quick) == ("third", [])
