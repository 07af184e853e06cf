"""A credential written during a run: one line, exit 2, the run's outputs deleted, the cache rows holding it removed."""

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
    monkeypatch.setattr("cfbench.reproduce._kernel_manager",
                        lambda: type("KM", (), {"has_kernel": False, "ip": str(tmp_path / "km" / "k")})())
    code = main(["reproduce", "--config", "smoke", "--study", "shopflow"])
    err = capsys.readouterr().err
    last = [ln for ln in err.splitlines() if ln.startswith("cfbench: error:")]
    assert code == 2 and len(last) == 1 and "Traceback" not in err, err
    line = last[0]
    assert "credential from the environment was written to judgments.csv" in line
    assert "cache row(s) holding it removed" in line and KEY not in err
    assert "0 cache row(s)" not in line  # the prompt (pending) row held it
    study = tmp_path / "results" / "shopflow"
    assert not (study / "smoke").exists()
    assert not [p for p in study.iterdir() if ".staging-" in p.name]
    cache = ResponseCache(default_cache_path())
    assert cache.find_secret_leaks() == []  # nothing of the key is left in the cache
    old = run_requests("scripted:yes", [Request("old", ({"role": "user", "content": "hello"},), GenerationConfig())],
                       progress=False, mode="replay")
    assert old.stats["n_cached"] == 1  # the unrelated row was kept
