"""Fixtures wider than a test run before the per-test cache exists: they must not reach the user's cache."""

from __future__ import annotations

import pytest

from cfbench.judges.cache import default_cache_dir

import conftest  # tests/ is on sys.path (pytest prepend import mode)


@pytest.fixture(scope="module")
def module_cache_dir():
    return default_cache_dir()  # what a module fixture calling a judge would write to


def test_a_module_fixture_does_not_see_the_users_cache(module_cache_dir):
    assert conftest.USER_CACHE is not None
    assert module_cache_dir.resolve() != conftest.USER_CACHE.resolve()
    assert module_cache_dir.name.startswith("cfbench-test-cache-")


def test_a_test_gets_its_own_cache_that_shares_the_assembled_model(module_cache_dir):
    here = default_cache_dir()
    assert here != module_cache_dir and here.name.startswith("cfbench-cache")
    if (conftest.USER_CACHE / "models").exists():
        assert (here / "models").resolve() == (conftest.USER_CACHE / "models").resolve()
