"""Shared fixtures. Every test gets its own response cache directory."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep test runs out of the user's cache, but share the assembled model."""
    from cfbench.judges.cache import default_cache_dir

    real_models = default_cache_dir() / "models"
    cache = tmp_path_factory.mktemp("cfbench-cache")
    (cache / "models").symlink_to(real_models, target_is_directory=True) if real_models.exists() else None
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("CFBENCH_MODE", raising=False)
    yield cache


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("llama_cpp") is None:
        skip = pytest.mark.skip(reason="llama-cpp-python is not installed (pip install 'cfbench[local]')")
        for item in items:
            if "local_model" in item.keywords:
                item.add_marker(skip)
