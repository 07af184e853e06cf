"""The contact-center study runs end to end on real STAR dialogues with the rule perturbers."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import yaml
from star_util import need_star

from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.requests import PREVIEW_ITEMS

REPO = Path(__file__).resolve().parents[1]


def test_contact_center_study_on_star_dialogues(tmp_path):
    star = need_star()
    smoke = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "smoke.yaml").read_text())
    params = Params.from_config(smoke, transcripts_path=str(star), n_items=5, require_agent_name=False,
                                balance_label="", coaching=False, fairness=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # STAR files without a turn are named and left out
        result = run(params, out=tmp_path)
    result.check()
    # the in-memory frame keeps the first transcripts; variants.parquet holds every one of them
    variants = result.frames["variants"]
    assert variants["item_id"].nunique() == PREVIEW_ITEMS
    assert pd.read_parquet(tmp_path / "variants.parquet")["item_id"].nunique() == 5
    # STAR agents never give their name: the name dimensions are rows marked not applicable, not dropped
    names = variants[variants["dimension"].isin(["gender", "ethnicity_name", "religion_name"])]
    assert len(names) > 0 and not names["applicable"].any()
    # the header and cue dimensions apply to real dialogues and are judged
    cfr = result.tables["cfr"].set_index("dimension")
    assert {"past_performance", "ethnicity_cues"} <= set(cfr.index)
    assert (cfr.loc[["past_performance", "ethnicity_cues"], "n_items"] >= 2).all()
    assert (tmp_path / "cfr.csv").is_file()


def test_a_sampled_condition_is_never_the_original_itself():
    """`disability: normal` leaves a dialogue as it was. With one sampled condition per item it was drawn
    for 16 of the default's 36 STAR dialogues: pairs of one request with itself, which cannot flip and
    diluted the CFR (3 flips of 36 where 20 dialogues were edited)."""
    from cfbench.studies.contact_center_qa.items import load_items
    from cfbench.studies.contact_center_qa.requests import plan_for

    need_star()
    params = Params.from_config(yaml.safe_load((REPO / "configs" / "contact_center_qa" / "default.yaml").read_text()),
                                transcripts_path=str(need_star()), n_items=12, judges=("scripted:cc-qa",),
                                require_agent_name=False, balance_label="issue_resolution",
                                dimensions=("priming", "disability"))  # the previous default, on STAR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        items = load_items(params)
        variants, plan = plan_for(params, items)
    rows = plan.rows
    dis = rows[rows["dimension"] == "disability"]
    assert set(dis["condition"]) == {"original", "disabled"}
    assert dis.loc[dis["condition"] == "disabled", "item_id"].nunique() == 12
    # every compared pair's two sides are different requests: a pair never reads one reply twice
    orig = rows[rows["condition"] == "original"].drop_duplicates("item_id").set_index("item_id")["request_id"]
    edits = rows[rows["dimension"].isin(["priming", "disability"]) & (rows["condition"] != "original")]
    same = edits.apply(lambda r: orig[r["item_id"]] == r["request_id"], axis=1)
    assert len(edits) == 24 and not same.any()
