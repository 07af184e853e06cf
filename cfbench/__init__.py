"""cfbench: counterfactual fairness audits of LLM judges and LLM assistants.

Subpackages, in dependency order (each imports only those before it):

- :mod:`cfbench.core` — errors, frame columns, seeding, rendering, files, paths, secrets
- :mod:`cfbench.io` — loaders and validators for transcripts, matched pairs, released data
- :mod:`cfbench.perturb` — counterfactual variants and stimulus designs
- :mod:`cfbench.tasks` — judge tasks: prompts and reply parsers
- :mod:`cfbench.judges` — LLM backends, response cache, concurrent runner
- :mod:`cfbench.metrics` — flip rates, score gaps, group rates, lexicon/sentiment
- :mod:`cfbench.stats` — one bootstrap, Wilson/Newcombe intervals, paired tests, multiplicity
- :mod:`cfbench.plots`, :mod:`cfbench.report` — figures and run outputs

Subpackages load on first attribute access, so ``import cfbench`` is cheap and
never needs an optional SDK.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBPACKAGES = ("core", "io", "perturb", "tasks", "judges", "metrics", "stats", "plots", "report")
__all__ = list(_SUBPACKAGES) + ["__version__"]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'cfbench' has no attribute {name!r}")
