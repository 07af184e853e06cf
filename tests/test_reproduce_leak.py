"""A credential written during a run, successful or failed: one line naming the file and where in it (never
the key), exit 2, the run's outputs moved aside whole to a quarantine folder (never deleted), the cache rows
holding it removed. A placeholder key (``sk-no-key-required``, ``anything``) is not hunted: the run keeps
everything (issues 36, 37)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest

from cfbench.cli import main
from cfbench.judges import GenerationConfig, Request, ResponseCache, run_requests
from cfbench.judges.cache import default_cache_path

pm = pytest.importorskip("papermill")

KEY = "sk-proj-Zq8xWv3Tn5Lm2Kp7Rd9Ys4Hb6Jc1Fg0"


def _no_kernel(monkeypatch, tmp_path):
    monkeypatch.setattr("cfbench.cli.reproduce.notebook.kernel_manager",
                        lambda: type("KM", (), {"has_kernel": False, "ip": str(tmp_path / "km" / "k")})())


def _notebook(cells: list[dict]) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_key_echoed_by_the_judge_is_one_line_and_nothing_of_it_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # an unrelated row already in the cache: must survive
    run_requests("scripted:yes", [Request("old", ({"role": "user", "content": "hello"},), GenerationConfig())],
                 progress=False)

    def fake_execute(src, out, *, parameters, cwd, **_):
        """Stands in for the notebook: a scripted judge that echoes its prompt, the prompt holding
        the key percent-encoded (as a URL would), its replies written to the results."""
        encoded = urllib.parse.quote(KEY, safe="")
        req = Request("leak", ({"role": "user", "content": f"see https://x.test/?k={encoded}"},),
                      GenerationConfig())
        res = run_requests("scripted:echo", [req], progress=False)
        Path(cwd, "judgments.csv").write_text(f"id,text\nleak,{encoded}\n")
        Path(out).write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        return res

    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    monkeypatch.setattr("cfbench.cli.reproduce.notebook.kernel_manager",
                        lambda: type("KM", (), {"has_kernel": False, "ip": str(tmp_path / "km" / "k")})())
    code = main(["reproduce", "--config", "smoke", "--study", "shopflow"])
    err = capsys.readouterr().err
    last = [ln for ln in err.splitlines() if ln.startswith("cfbench: error:")]
    assert code == 2 and len(last) == 1 and "Traceback" not in err, err
    line = last[0]
    assert "credential from the environment was written to judgments.csv (character 13)" in line
    assert "cache row(s) holding it removed" in line and KEY not in err
    assert "0 cache row(s)" not in line  # the prompt (pending) row held it
    study = tmp_path / "results" / "shopflow"
    assert not (study / "smoke").exists()
    assert not [p for p in study.iterdir() if ".staging-" in p.name]
    aside = [p for p in study.iterdir() if p.name.startswith("smoke.quarantined-")]
    assert len(aside) == 1 and f"moved aside to {aside[0].relative_to(tmp_path)}" in line
    assert (aside[0] / "judgments.csv").is_file() and (aside[0].stat().st_mode & 0o077) == 0  # kept, owner only
    cache = ResponseCache(default_cache_path())
    assert cache.find_secret_leaks() == []  # nothing of the key is left in the cache
    old = run_requests("scripted:yes", [Request("old", ({"role": "user", "content": "hello"},), GenerationConfig())],
                       progress=False, mode="replay")
    assert old.stats["n_cached"] == 1  # the unrelated row was kept


def test_a_failed_run_whose_notebook_holds_the_key_is_quarantined_not_kept_as_failed(tmp_path, monkeypatch, capsys):
    """The key pasted into a base URL: the notebook fails, and papermill's injected-parameters cell holds it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def fake_execute(src, out, *, parameters, cwd, **_):
        injected = {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "outputs": [],
                    "source": [f'judges = ["openai:m@http://127.0.0.1:9/{KEY}/v1"]\n']}
        Path(out).write_text(_notebook([injected]), encoding="utf-8")
        raise RuntimeError(f"connection refused: http://127.0.0.1:9/{KEY}/v1")

    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    _no_kernel(monkeypatch, tmp_path)
    code = main(["reproduce", "--config", "smoke", "--study", "shopflow"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and KEY not in err and KEY[8:20] not in err, err
    line = [ln for ln in err.splitlines() if ln.startswith("cfbench: error:")]
    assert len(line) == 1 and "shopflow.ipynb (character " in line[0] and "RuntimeError" in line[0], err
    study = tmp_path / "results" / "shopflow"
    assert not (study / "smoke.failed").exists()
    aside = [p for p in study.iterdir() if p.name.startswith("smoke.quarantined-")]
    assert len(aside) == 1 and (aside[0] / "shopflow.ipynb").is_file()
    from cfbench.core.secrets import find_secret_leaks

    assert [p for p in study.rglob("*") if p.is_file() and not p.is_relative_to(aside[0])
            and find_secret_leaks(p.parent)] == []


@pytest.mark.parametrize("placeholder", ["sk-no-key-required", "anything", "EMPTY", "dummy", "sk-aaaaaaaaaaaaaaaaaaaa"])
def test_a_placeholder_key_is_not_hunted_and_the_run_keeps_everything(tmp_path, monkeypatch, capsys, placeholder):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", placeholder)
    monkeypatch.setattr("cfbench.core.secrets._NOTED", set(), raising=False)

    def fake_execute(src, out, *, parameters, cwd, **_):
        """Ordinary transcript text that holds the placeholder's words, as the STAR dialogues do."""
        req = Request("q", ({"role": "user", "content": f"Is anything else required? ({placeholder})"},),
                      GenerationConfig())
        res = run_requests("scripted:echo", [req], progress=False)
        assert res.stats["n_failed"] == 0  # the reply quoting those words is not "an echoed credential"
        Path(cwd, "judgments.csv").write_text(f"id,text\nq,Anything else required? {placeholder}\n")
        Path(out).write_text(_notebook([]), encoding="utf-8")
        return res

    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    _no_kernel(monkeypatch, tmp_path)
    code = main(["reproduce", "--config", "smoke", "--study", "shopflow"])
    err = capsys.readouterr().err
    assert code == 0, err
    notes = [ln for ln in err.splitlines() if "OPENAI_API_KEY" in ln]
    assert len(notes) == 1 and "not searched for in outputs" in notes[0] and placeholder not in notes[0], err
    assert (tmp_path / "results" / "shopflow" / "smoke" / "judgments.csv").is_file()
