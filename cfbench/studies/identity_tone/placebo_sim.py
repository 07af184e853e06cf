"""Seeded audits of the identity-tone placebo contrast with a known truth (coverage, one-sided misses, width).

One model, ``n_prompts`` prompts x the 8 identities, plus one placebo reply per prompt for a seeded identity, as
the study sends them. A reply's tone is ``prompt effect + identity effect + e``: the prompt effect is N(0, 1), the
identity effect ``effect`` for the female-stated identities and 0 otherwise (the same under the placebo wording:
the group moves the tone, the wording does not), and ``e`` is each reply's own noise, fresh for every edit of
the user text (normal, or skewed: a centred exponential), of scale ``noise``. :func:`placebo_coverage` runs
:func:`.audit.placebo_contrast` (the study's own code) on each audit. The truth (mean over prompts of
``mean_B |A - B| - |A - A'|``) is 0 exactly when ``effect = 0`` (both sides are then differences of two
independent noises); otherwise it is taken from one audit of 400,000 prompts (Monte Carlo error below 0.002).
``benchmarks/bench_identity_placebo.py`` prints the docs table; ``tests/test_identity_placebo.py`` runs fewer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cfbench.perturb.stimuli import identity_ids

from .audit import placebo_contrast

__all__ = ["draw_scores", "placebo_coverage", "truth"]

_IDS = identity_ids()
_FEMALE = np.array(["_female_" in i for i in _IDS])


def _noise(rng: np.random.Generator, shape, noise: float, skewed: bool) -> np.ndarray:
    return noise * ((rng.exponential(1.0, shape) - 1.0) if skewed else rng.normal(0.0, 1.0, shape))


def _draw(rng: np.random.Generator, n: int, effect: float, noise: float, skewed: bool):
    """(tones of the 8 identities, placebo identity index, placebo tone), one row per prompt."""
    mu = rng.normal(0.0, 1.0, (n, 1))
    x = mu + effect * _FEMALE[None, :] + _noise(rng, (n, len(_IDS)), noise, skewed)
    a = rng.integers(len(_IDS), size=n)
    xp = mu[:, 0] + effect * _FEMALE[a] + _noise(rng, n, noise, skewed)
    return x, a, xp


def truth(effect: float, noise: float, skewed: bool) -> float:
    """The population value of the contrast (0 when ``effect`` is 0; else one audit of 400,000 prompts)."""
    if effect == 0:
        return 0.0
    x, a, xp = _draw(np.random.default_rng(12345), 400_000, effect, noise, skewed)
    xa = x[np.arange(len(a)), a]
    others = np.abs(xa[:, None] - x)
    id_abs = (others.sum(axis=1)) / (len(_IDS) - 1)  # the A - A term is 0
    return float((id_abs - np.abs(xa - xp)).mean())


def draw_scores(rng: np.random.Generator, n_prompts: int, *, effect: float, noise: float, skewed: bool = False,
                metric: str = "sentiment") -> tuple[pd.DataFrame, pd.DataFrame]:
    """One audit's described scores and placebo scores (the frames :func:`.audit.placebo_contrast` reads)."""
    x, a, xp = _draw(rng, n_prompts, effect, noise, skewed)
    pids = [f"p{k:04d}" for k in range(n_prompts)]
    sc = pd.DataFrame({"model": "sim", "prompt_id": np.repeat(pids, len(_IDS)), "identity": _IDS * n_prompts,
                       metric: x.ravel()})
    pl = pd.DataFrame({"model": "sim", "prompt_id": pids, "identity": [_IDS[k] for k in a], metric: xp})
    return sc, pl


def placebo_coverage(*, n_prompts: int, effect: float = 0.0, noise: float = 0.5, skewed: bool = False,
                     reps: int = 1000, seed: int = 0, n_boot: int = 1000) -> dict[str, float]:
    """Two-sided coverage, misses below / above, mean width over the 2.5-97.5 % range of the estimate across
    audits (``width_ratio``) and audits without an interval (``no_ci``)."""
    rng = np.random.default_rng(seed)
    t = truth(effect, noise, skewed)
    rows = []
    for k in range(reps):
        sc, pl = draw_scores(rng, n_prompts, effect=effect, noise=noise, skewed=skewed)
        r = placebo_contrast(sc, pl, seed=seed + k, n_boot=n_boot, metrics=("sentiment",)).iloc[0]
        rows.append((float(r.estimate), float(r.ci_low), float(r.ci_high)))
    est, lo, hi = (np.array(v) for v in zip(*rows))
    ok = np.isfinite(lo) & np.isfinite(hi)
    spread = float(np.subtract(*np.percentile(est, [97.5, 2.5])))
    return {"truth": t, "coverage": float(((lo <= t) & (t <= hi))[ok].mean()), "miss_low": float((lo > t)[ok].mean()),
            "miss_high": float((hi < t)[ok].mean()),
            "width_ratio": float((hi - lo)[ok].mean() / spread) if spread > 0 else float("inf"),
            "no_ci": int((~ok).sum())}
