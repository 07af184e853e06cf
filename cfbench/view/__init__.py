"""``cfbench view RESULTS_DIR``: one self-contained HTML page to browse a run's counterfactual pairs.

The page (no network, no server) shows every compared pair of a study's results
folder side by side, with the word-level diff of the two inputs, both replies,
the parsed metrics and flags, filters and sorts, the run's tables and figures,
and its provenance. See ``docs/view.md``.

This package knows no study: a study describes its pairs as a :class:`PairSet`
(:mod:`cfbench.view.pairs`, the protocol) and the page renders whatever it is given.
"""

from .page import (INPUT_FRAMES, ViewPage, build_payload, explorer_for, register_explorer, view_html, write_inputs,
                   write_view)
from .pairs import Flag, Metric, PairSet, Texts, final_name, study_of

__all__ = ["INPUT_FRAMES", "ViewPage", "write_inputs", "build_payload", "view_html", "write_view",
           "register_explorer", "explorer_for", "PairSet", "Texts", "Metric", "Flag", "study_of", "final_name"]
