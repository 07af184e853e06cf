"""Every example in cfbench's docstrings runs and prints what it says (the package's doctests)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cfbench

# optional extras whose absence makes a module unimportable here are skipped, not failed
_OPTIONAL = ("llama_cpp", "openai", "papermill", "nbformat", "jupyter_client", "nltk", "vaderSentiment")


def _modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(cfbench.__path__, prefix="cfbench."):
        if info.name.startswith(("cfbench.notebooks", "cfbench.configs")) or info.name.endswith(".__main__"):
            continue  # data packages; __main__ runs the command line when imported
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        if any(opt in str(exc) for opt in _OPTIONAL):
            pytest.skip(f"{name}: optional dependency missing ({exc})")
        raise
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples in {name} failed"
