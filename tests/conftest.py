"""Shared fixtures. Every test gets its own response cache directory."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


USER_CACHE: Path | None = None  # the cache the run would have used: tests never write to it
_SESSION_CACHE: Path | None = None


def _cache_sharing_the_model(path: Path) -> Path:
    real_models = USER_CACHE / "models"
    (path / "models").symlink_to(real_models, target_is_directory=True) if real_models.exists() else None
    return path


def pytest_configure(config):
    """A session-wide cache before any fixture runs: a module- or session-scoped fixture is set up before
    the per-test cache below, and once wrote a test double's replies into the user's cache."""
    global USER_CACHE, _SESSION_CACHE
    from cfbench.judges.cache import default_cache_dir

    USER_CACHE = default_cache_dir()
    _SESSION_CACHE = _cache_sharing_the_model(Path(tempfile.mkdtemp(prefix="cfbench-test-cache-")))
    os.environ["CFBENCH_CACHE_DIR"] = str(_SESSION_CACHE)


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)  # the folder pytest_configure made, nothing else
        os.environ["CFBENCH_CACHE_DIR"] = str(USER_CACHE)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep test runs out of the user's cache, but share the assembled model."""
    cache = _cache_sharing_the_model(tmp_path_factory.mktemp("cfbench-cache"))
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("CFBENCH_MODE", raising=False)
    yield cache


@pytest.fixture(autouse=True)
def _figures_closed_after_each_test():
    """Close what a test left in pyplot's registry (a plotting function returns its figure to the caller), so
    later tests do not warn of "More than 20 figures". Whether a study run leaves figures open is tested on its
    own (``test_a_run_leaves_no_figure_open_in_pyplot`` in each study's test file)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("llama_cpp") is None:
        skip = pytest.mark.skip(reason="llama-cpp-python is not installed (pip install 'cfbench[local]')")
        for item in items:
            if "local_model" in item.keywords:
                item.add_marker(skip)


def results_with_a_cut_reply(src: Path, dst: Path) -> Path:
    """A copy of an identity-tone results folder whose first fresh reply is marked cut at the token cap
    (``finish_reason = length``, ``truncated``), for tests of how the explorer flags cut replies: a live run
    may cut none, so the committed results cannot be relied on to hold one)."""
    import pandas as pd

    shutil.copytree(src, dst)
    path = dst / "fresh_responses.csv"
    resp = pd.read_csv(path)
    resp.loc[0, "finish_reason"] = "length"
    if "truncated" in resp:
        resp.loc[0, "truncated"] = True
    resp.to_csv(path, index=False)
    return dst


@pytest.fixture(scope="module")
def import_benchmark():
    """``benchmarks/`` on ``sys.path`` for one test module, and ``importlib.import_module`` to load a benchmark
    script whose functions the module's tests check (the scripts import their siblings by plain name)."""
    import importlib

    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(REPO / "benchmarks"))
    yield importlib.import_module
    mp.undo()
