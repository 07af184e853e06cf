"""Every reproduced results folder ships its view.html, provenance filled in; a page that fails costs one warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cfbench.cli import main
from view_util import page_data

pm = pytest.importorskip("papermill")


@pytest.fixture
def fake_notebook(tmp_path, monkeypatch):
    """Stands in for papermill: writes a notebook and one table into the run folder (no kernel)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))

    def fake_execute(src, out, *, parameters, cwd, **_):
        Path(cwd, "summary.csv").write_text("metric,value\nflips,0\n")
        Path(out).write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))

    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    monkeypatch.setattr("cfbench.cli.reproduce.notebook.kernel_manager",
                        lambda: type("KM", (), {"has_kernel": False, "ip": str(tmp_path / "km" / "k")})())
    return tmp_path


def test_a_reproduced_folder_has_its_view_page_with_provenance(fake_notebook, capsys):
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow", "-p", "n_boot", "50"]) == 0
    folder = next(p for p in (fake_notebook / "results" / "shopflow").iterdir() if p.name.startswith("smoke-"))
    info = json.loads((folder / "run_info.json").read_text())
    assert "commit" in info  # recorded (None only outside a git checkout)
    data = page_data((folder / "view.html").read_text(encoding="utf-8"))
    shown = data["run_info"]
    assert shown["mode"] == "live" and shown["replay"] is False
    assert shown["overrides"] == {"n_boot": 50}
    assert shown["commit"] == info["commit"] and shown["machine"] == info["machine"]
    assert shown["wall_s"] == info["wall_s"]
    assert data["title"] == f"shopflow / {folder.name}"  # the folder's final name, not its staging name
    assert data["study"] == "shopflow" and data["pairs"] is None  # the stand-in notebook judged nothing
    assert data["notes"][0].startswith("No pairs")
    assert "warning" not in capsys.readouterr().err


def test_a_page_that_cannot_be_built_costs_one_warning_not_the_run(fake_notebook, monkeypatch, capsys):
    def broken(*a, **k):
        raise ValueError("no\nway")

    monkeypatch.setattr("cfbench.view.write_view", broken)
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow"]) == 0
    folder = fake_notebook / "results" / "shopflow" / "smoke"
    assert (folder / "run_info.json").is_file() and not (folder / "view.html").exists()
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "view.html not written (ValueError: no way)" in warnings[0], warnings


def test_the_page_shows_the_commit_not_an_object(tmp_path):
    from cfbench.view import write_view
    from cfbench.view.cdp import Chromium, chromium_path

    if chromium_path() is None:
        pytest.skip("no Chromium installed (/usr/bin/chromium)")
    (tmp_path / "run_info.json").write_text(json.dumps({
        "study": "shopflow", "config": "smoke", "replay": False, "mode": "live", "wall_s": 3.5,
        "machine": "x86_64", "cpus": 2, "python": "3.11.7", "overrides": {"n_boot": 50},
        "commit": {"sha": "0123456789abcdef0123", "dirty": True}}))
    page = write_view(tmp_path)
    with Chromium() as b:
        b.open(page.resolve().as_uri())
        facts = b.eval("Object.fromEntries([...document.querySelectorAll('dd[data-key]')]"
                       ".map(d => [d.dataset.key, d.textContent]))")
    assert facts["commit"] == "0123456789ab with uncommitted changes to tracked files"
    assert facts["live or replay"].startswith("live") and facts["wall time"].startswith("3.5 s")
    assert '"n_boot": 50' in facts["overrides"]
