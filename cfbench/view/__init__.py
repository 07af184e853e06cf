"""``cfbench view RESULTS_DIR``: one self-contained HTML page to browse a run's counterfactual pairs.

The page (no network, no server) shows every compared pair of a study's results
folder side by side, with the word-level diff of the two inputs, both replies,
the parsed metrics and flags, filters and sorts, the run's tables and figures,
and its provenance. See ``docs/view.md``.

This package reads results *files*; it imports no study (it sits beside
:mod:`cfbench.report` in the layering).
"""

from .page import INPUT_FRAMES, ViewPage, build_payload, load_pairs_any, view_html, write_inputs, write_view

__all__ = ["INPUT_FRAMES", "ViewPage", "write_inputs", "build_payload", "load_pairs_any", "view_html", "write_view"]
