"""Seeded audits of the judge-bias placebo contrast with a known truth (coverage, one-sided misses, width).

One pairwise request per item and side, as the study sends them: the baseline choice ``b`` (the cued reply or
not, each with probability 1/2), the identity cue and its placebo in the same order. Each item has a
sensitivity to *any* edit ``u`` (0 on a share ``zero_share`` of items, else Beta(1.5, 3.5), mean 0.3): under the
placebo the judge re-draws its choice with probability ``u`` (a fair coin), else keeps ``b``; under the cue it
picks the cued reply with probability ``g`` (the group effect), else behaves as under the placebo. So both
sides' flips are correlated item by item, and the truths are exact:

* net flips (cue flip rate minus placebo flip rate): ``g / 2 * (1 - E[u])``;
* net shift (chose the cued reply under the cue minus under the placebo): ``g / 2``.

:func:`placebo_coverage` runs :func:`.metrics.placebo_table` (the study's own code) on each audit.
``benchmarks/bench_judge_bias_placebo.py`` prints the table of docs/statistics.md;
``tests/test_judge_bias_placebo.py`` runs a smaller version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import placebo_table

__all__ = ["draw_cells", "placebo_coverage", "truths"]

_BETA = (1.5, 3.5)  # mean 0.3


def truths(g: float, zero_share: float) -> dict[str, float]:
    """The exact population values of the two contrasts (see the module note)."""
    mean_u = (1 - zero_share) * _BETA[0] / sum(_BETA)
    return {"net_flip_rate": g / 2 * (1 - mean_u), "net_shift": g / 2}


def draw_cells(rng: np.random.Generator, n_items: int, *, g: float, zero_share: float) -> pd.DataFrame:
    """One audit's ``placebo`` cells (the columns :func:`.metrics.placebo_table` reads)."""
    u = np.where(rng.random(n_items) < zero_share, 0.0, rng.beta(*_BETA, n_items))
    b = rng.random(n_items) < 0.5
    pl = np.where(rng.random(n_items) < u, rng.random(n_items) < 0.5, b)
    ident = np.where(rng.random(n_items) < g, True,
                     np.where(rng.random(n_items) < u, rng.random(n_items) < 0.5, b))
    return pd.DataFrame({"item_id": [f"i{k:04d}" for k in range(n_items)], "cue": "agent_identity",
                         "id_chose": ident.astype(float), "pl_chose": pl.astype(float),
                         "id_flip": (ident != b).astype(float), "pl_flip": (pl != b).astype(float)})


def placebo_coverage(*, n_items: int, g: float = 0.0, zero_share: float = 0.5, reps: int = 1000,
                     seed: int = 0) -> dict[str, dict[str, float]]:
    """Per contrast (``net_flip_rate``, ``net_shift``): two-sided coverage, misses below / above (lower bound
    above the truth / upper bound below it), mean width over the 2.5-97.5 % range of the estimate across audits
    (``width_ratio``; inf when the estimate never varies) and audits without an interval (``no_ci``)."""
    rng = np.random.default_rng(seed)
    truth = truths(g, zero_share)
    cols = {"net_flip_rate": ("ci_low", "ci_high"), "net_shift": ("shift_ci_low", "shift_ci_high")}
    got = {k: [] for k in cols}
    for _ in range(reps):
        t = placebo_table(draw_cells(rng, n_items, g=g, zero_share=zero_share), ["agent_identity"], n_boot=0,
                          seed=0).iloc[0]
        for k, (lo, hi) in cols.items():
            got[k].append((float(t[k]), float(t[lo]), float(t[hi])))
    out = {}
    for k, rows in got.items():
        est, lo, hi = (np.array(x) for x in zip(*rows))
        ok = np.isfinite(lo) & np.isfinite(hi)
        spread = float(np.subtract(*np.percentile(est, [97.5, 2.5])))
        out[k] = {"truth": truth[k], "coverage": float(((lo <= truth[k]) & (truth[k] <= hi))[ok].mean()),
                  "miss_low": float((lo > truth[k])[ok].mean()), "miss_high": float((hi < truth[k])[ok].mean()),
                  "width_ratio": float((hi - lo)[ok].mean() / spread) if spread > 0 else float("inf"),
                  "no_ci": int((~ok).sum())}
    return out
