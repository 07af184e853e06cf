"""Identity-tone figures: unsupported cells are masked, the colour scale is fixed, panels carry n and units."""

import itertools

import numpy as np
import pandas as pd

from cfbench.perturb.stimuli import identity_ids
from cfbench.studies.identity_tone import figures as F


def _pairs(n=6, nonzero=1):
    rows = []
    for a, b in itertools.combinations(identity_ids(), 2):
        for metric in ("sentiment", "hedging"):
            d = np.r_[np.ones(nonzero), np.zeros(n - nonzero)]
            rows.append({"model": "m", "metric": metric, "identity_a": a, "identity_b": b, "n": n,
                         "n_zero_diff": n - nonzero, "cohens_d": d.mean() / d.std(ddof=1), "p_holm": 1.0})
    return pd.DataFrame(rows)


def test_a_single_nonzero_difference_is_the_artefact_the_heatmap_masks():
    p = _pairs(n=6, nonzero=1)
    assert np.allclose(p.cohens_d, 1 / np.sqrt(6))  # the ±0.41 cells of issue 14
    assert not F.supported(p).any()
    fig = F.effect_heatmap(p, model="m", metrics=["sentiment", "hedging"])
    im = fig.axes[0].images[0]
    assert np.ma.getmaskarray(im.get_array()).all()
    assert im.get_clim() == (-1.5, 1.5)
    assert "56 cells" in fig.axes[0].get_title()


def test_supported_cells_are_drawn_on_the_fixed_scale():
    p = _pairs(n=12, nonzero=5)
    assert F.supported(p).all()
    fig = F.effect_heatmap(p, model="m", metrics=["sentiment", "hedging"], limit=2.0)
    im = fig.axes[0].images[0]
    assert not np.ma.getmaskarray(im.get_array()).any() and im.get_clim() == (-2.0, 2.0)
    assert "n = 12" in fig.axes[0].get_title()


def test_strip_panels_have_units_and_n():
    rows = [{"model": "m", "prompt_id": f"p{i}", "identity": g, "sentiment": 0.1 * i, "words": 100 + i}
            for i in range(5) for g in identity_ids()]
    fig = F.metric_strips(pd.DataFrame(rows), identities=identity_ids(), metrics=["sentiment", "words"],
                          title="T")
    titles = [ax.get_title() for ax in fig.axes]
    assert all("n = 5" in t for t in titles)
    assert fig.axes[0].get_ylabel().startswith("VADER") and fig.axes[1].get_ylabel() == "words per reply"
    assert fig._suptitle.get_text() == "T"
