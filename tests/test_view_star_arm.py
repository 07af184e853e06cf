"""The contact-center STAR arm in the run explorer: the study run writes the arm's judged rows
(star_rows / star_judgments / star_variants .parquet) and the explorer lists its pairs beside the
synthetic arm's, with the real dialogues diffed. Needs the STAR dialogues beside the repo (skipped otherwise)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from star_util import STAR_DIR
from view_util import page_data


def _star() -> Path:
    for p in (STAR_DIR, Path(__file__).resolve().parents[3] / "shared" / "data" / "star" / "dialogues"):
        if p.is_dir():
            return p
    pytest.skip("STAR dialogues not found beside the repo (the project does not commit them)")


@pytest.fixture(scope="module")
def star_run(tmp_path_factory):
    from cfbench.studies.contact_center_qa import Params, run

    out = tmp_path_factory.mktemp("cc_star")
    run(Params(n_items=2, dimensions=("politeness",), conditions_per_dimension=0, n_boot=20, coaching=False,
               fairness=False, repeats=2, real_items=2, real_path=str(_star())), out=out, progress=False)
    return out


def test_the_run_writes_the_star_arms_rows_and_the_explorer_lists_them(star_run):
    from cfbench.studies.contact_center_qa import explorer_pairs

    for name in ("star_rows.parquet", "star_judgments.parquet", "star_variants.parquet"):
        assert (star_run / name).is_file(), name
    pairs = explorer_pairs(star_run)
    rows = pd.read_parquet(star_run / "star_rows.parquet")
    r = rows[rows["dimension"] != "original"]
    units = r.groupby(["judge", "arm", "task", "question_id", "item_id", "dimension"]).ngroups
    star = [i for i, a in enumerate(pairs.arm) if a == "STAR"]
    assert len(star) == len(r) - units > 0
    assert {pairs.kind[i] for i in star} == {"counterfactual", "noise"}
    # replies by cache key from the arm's own judgments; the transcripts are real STAR dialogues
    j = pd.read_parquet(star_run / "star_judgments.parquet").set_index(["judge", "key"])["text"]
    keys = rows.set_index(["judge", "question_id", "item_id", "dimension", "condition"])["key"]
    for i in star[:5]:
        k = keys[(pairs.facets["judge"][i], pairs.facets["question"][i], pairs.facets["item"][i],
                  pairs.facets["dimension"][i], pairs.facets["condition"][i])]
        assert pairs.outputs[0].b[i] == j[(pairs.facets["judge"][i], k)]
        assert pairs.diffs[0].a[i] and "Agent:" in pairs.diffs[0].a[i]
    assert not any("STAR arm" in n for n in pairs.notes)  # nothing missing to report


def test_the_page_shows_both_arms(star_run, tmp_path):
    from cfbench.view import write_view

    data = page_data(write_view(star_run, tmp_path / "v.html").read_text(encoding="utf-8"))
    arm = next(f for f in data["pairs"]["facets"] if f["name"] == "arm")
    assert set(arm["values"]) == {"synthetic", "STAR"}
