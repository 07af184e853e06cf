"""Cued pairs as variant rows: the review page, decisions and Table 9 apply to the judge-bias cues."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pandas as pd
import pytest

from cfbench.perturb import apply_decisions, rejection_table
from cfbench.perturb.judge_cue_review import cue_corruptions, cue_guard_catch_table, cue_variants
from cfbench.perturb.judge_cues import BATTERY, CandidatePair, get_cue
from cfbench.perturb.review import review_cards, review_html
from cfbench.studies.judge_bias.items import star_items
from cfbench.cli.variants import main as variants_main

from judge_bias_util import star_dir


@pytest.fixture(scope="module")
def items():
    return star_items(star_dir(), n_draft=5, n_control=5, seed=7, context_turns=4)


def test_one_original_and_one_row_per_item_cue_and_target_all_valid_on_star(items):
    v = cue_variants(items, BATTERY, seed=3)
    assert (v["dimension"] == "original").sum() == len(items)
    assert len(v) == len(items) * (1 + 2 * len(BATTERY))
    assert v["variant_id"].is_unique
    cued = v[v["dimension"] != "original"]
    assert cued["valid"].all() and (cued["rejected_by"] == "").all()
    assert set(cued["perturber"]) == {get_cue(c).description.tag for c in BATTERY}
    # position with the cued reply already in slot A changes nothing: an unchanged comparison row
    pos = cued[cued["dimension"] == "cue:position"].set_index("condition")
    assert (pos.loc["real", "operation"] == "none").all() and (pos.loc["alt", "operation"] != "none").all()
    t9 = rejection_table(v).set_index("dimension")
    assert list(t9.index) == [f"cue:{c}" for c in BATTERY]
    assert t9.loc["cue:position", "n_made"] == len(items) and t9.loc["cue:authority", "n_made"] == 2 * len(items)
    assert (t9["n_rejected_guard"] == 0).all()
    assert cue_variants(items, BATTERY, seed=3).drop(columns=["turns", "edits"]).equals(
        v.drop(columns=["turns", "edits"]))  # seeded: the same frame again


def test_edits_are_exactly_the_cue_span(items):
    v = cue_variants(items, ["authority", "bandwagon", "position", "source"], seed=3,
                     targets={it.item_id: "alt" for it in items})
    for r in v[v["dimension"] != "original"].itertuples():
        if r.dimension == "cue:authority":
            (e,) = r.edits
            assert e["after"] == e["before"].replace("Reply B:", "Reply B (approved by a senior supervisor):")
        elif r.dimension == "cue:bandwagon":
            (e,) = r.edits
            assert e["op"] == "insert" and e["speaker"] == "note" and e["after"].endswith("Reply B.")
        elif r.dimension == "cue:position":
            assert [(e["before"][:8], e["after"][:8]) for e in r.edits] == [("Reply A:", "Reply B:"),
                                                                             ("Reply B:", "Reply A:")]
            assert all(e["before"][8:] == e["after"][8:] for e in r.edits)
        else:
            assert len(r.edits) == 2
    cards = review_cards(v, [])
    auth = next(c for c in cards if c["dimension"] == "cue:authority")
    ((_, _, _, before, after),) = auth["rows"]
    assert [s for s in after if isinstance(s, list)] == [[" (approved by a senior supervisor)"]]
    assert not any(isinstance(s, list) for s in before)


def test_a_broken_cue_is_a_guard_rejection_counted_in_table_9_never_dropped(items):
    def corrupt(cue, pair, target, seed, item_id):
        cued = cue.make(pair, target, seed=seed, item_id=item_id)
        if target == "alt":  # the alt-cued rows: the other reply is quietly edited
            cued = replace(cued, texts={**dict(cued.texts), "real": cued.texts["real"] + " Your refund is 20 dollars."})
        return cued

    v = cue_variants(items, BATTERY, seed=3, make=corrupt)
    bad = v[(v["dimension"] != "original") & (v["condition"] == "alt")]
    assert len(bad) == len(items) * len(BATTERY)
    assert (~bad["valid"]).all() and (bad["rejected_by"] == "guard").all()
    assert bad["rejection_reason"].str.contains("'real'").all()
    t9 = rejection_table(v).set_index("dimension")
    assert (t9["n_rejected_guard"] == len(items)).all() and (t9["n_rejected"] == len(items)).all()


def test_review_decisions_apply_to_cue_rows_and_count_in_the_human_column(items, tmp_path):
    v = cue_variants(items, ["authority", "source"], seed=3)
    vid = v.loc[v["dimension"] == "cue:source", "variant_id"].iloc[0]
    p = tmp_path / "decisions.csv"
    p.write_text(f"variant_id,decision\n{vid},reject\n")
    out = apply_decisions(v, p)
    assert out.set_index("variant_id").loc[vid, "rejected_by"] == "human"
    t9 = rejection_table(out).set_index("dimension")
    assert t9.loc["cue:source", "n_rejected_human"] == 1 and t9.loc["cue:authority", "n_rejected"] == 0


def test_a_cue_that_does_not_apply_to_the_task_is_a_not_applicable_row(items):
    v = cue_variants(items[:3], ["bandwagon", "authority"], seed=3, task="pointwise")
    bw = v[v["dimension"] == "cue:bandwagon"]
    assert len(bw) == 6 and (~bw["applicable"]).all() and bw["reason"].str.contains("pointwise").all()
    assert v[v["dimension"] == "cue:authority"]["valid"].all()


HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)> =cmd|' /C calc'!A0 \u2028 &amp;"


def test_hostile_reply_text_reaches_the_page_only_as_inert_json():
    items = [{"item_id": "=cmd|x", "real": HOSTILE, "alt": "Sure, <b onmouseover=alert(3)>done</b>."},
             {"item_id": "ok-1", "real": "Fine.", "alt": "Okay then"}]
    v = cue_variants(items, BATTERY, seed=1)
    assert v[v["dimension"] != "original"]["valid"].all()
    page = review_html(v, [], title="<script>alert(4)</script>")
    assert "<script>alert" not in page and "<img src=x" not in page and "<b onmouseover" not in page
    assert page.count("<script") == 2  # the JSON block and the page's own script
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    cards = json.loads(data)["cards"]
    texts = json.dumps(cards, ensure_ascii=False)
    assert "alert(1)" in texts and "onerror=alert(2)" in texts  # shown literally, as text


def test_cli_writes_variants_table_9_and_review_page_for_cues(tmp_path, capsys):
    out = tmp_path / "out"
    rc = variants_main([str(star_dir()), "--out", str(out), "--cues", "all", "--n-draft", "2", "--n-control", "2",
                        "--seed", "5"])
    assert rc == 0
    v = pd.read_parquet(out / "variants.parquet")
    assert (v["dimension"] == "original").sum() == 4 and len(v) == 4 * (1 + 2 * len(BATTERY))
    t9 = pd.read_csv(out / "rejections.csv")
    assert list(t9["dimension"]) == [f"cue:{c}" for c in BATTERY] and t9["n_rejected"].sum() == 0
    assert "cfbench variant review: cues: dialogues" in (out / "review.html").read_text()
    catch = pd.read_csv(out / "guard_catch.csv")
    assert set(catch["cue"]) == set(BATTERY) and (catch["n_rejected"] == catch["n"]).all()
    # the page's decisions feed back
    vid = v.loc[v["dimension"] == "cue:verbosity", "variant_id"].iloc[0]
    (tmp_path / "d.csv").write_text(f"variant_id,decision\n{vid},reject\n")
    assert variants_main([str(star_dir()), "--out", str(out), "--cues", "verbosity", "--n-draft", "2",
                          "--n-control", "2", "--seed", "5", "--decisions", str(tmp_path / "d.csv")]) == 0
    t9 = pd.read_csv(out / "rejections.csv")
    assert t9.loc[0, "n_rejected_human"] == 1


def test_cli_reads_your_own_pairs(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    recs = [{"id": f"p{k}", "context": [{"speaker": "customer", "text": "My parcel is late."}],
             "reply": "I am sorry; let me check the tracking.", "alternative": f"Parcels are often late ({k})."}
            for k in range(3)]
    pairs.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert variants_main([str(pairs), "--out", str(tmp_path / "o"), "--cues", "authority,agent_identity"]) == 0
    v = pd.read_parquet(tmp_path / "o" / "variants.parquet")
    assert sorted(v.loc[v["dimension"] == "original", "item_id"]) == ["p0", "p1", "p2"]
    assert v["valid"].all()


@pytest.mark.parametrize("args, msg", [
    (["--cues", "nope"], "unknown cue"),
    (["--cues", "authority", "--dimensions", "gender"], "--cues makes cued candidate pairs"),
    (["--cues", "authority", "--n-draft", "-1"], "whole number"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, args, msg):
    assert variants_main([str(star_dir()), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_hostile_ids_render_as_text_in_chromium(tmp_path):
    from test_perturb_review import _chromium
    from test_perturb_review_hostile import _run_browser

    _chromium()
    items = [{"item_id": "=cmd|' /C calc'!A0", "real": HOSTILE, "alt": "Sure, <b onmouseover=alert(3)>done</b>."},
             {"item_id": "ok-1", "real": "Fine.", "alt": "Okay then"}]
    v = cue_variants(items, BATTERY, seed=1)
    page = tmp_path / "review.html"
    page.write_text(review_html(v, [], title="cues", page_size=5), encoding="utf-8")
    out = _run_browser(tmp_path, page, "=cmd|")
    assert out["ready"] == "1"
    assert all(s["n_bad"] == 0 for s in out["pages"])
    assert "alert(1)" in "".join(s["text"] for s in out["pages"])


def test_guard_catch_table_on_star_every_corruption_of_every_cue_is_rejected(items):
    t = cue_guard_catch_table(items, BATTERY, seed=3)
    assert set(t["cue"]) == set(BATTERY) and t.groupby("cue").size().min() >= 7
    assert (t["n"] > 0).all() and (t["n_rejected"] == t["n"]).all(), t[t["n_rejected"] < t["n"]]


def test_a_guard_that_accepts_everything_shows_up_in_the_catch_table(items, monkeypatch):
    cue = get_cue("authority")
    monkeypatch.setattr(type(cue), "guard_problems", lambda self, plain, cued, **kw: [])
    t = cue_guard_catch_table(items[:3], ["authority"], seed=3).set_index("kind")
    # only the checks common to every cue (candidate keys, tag) still catch anything
    assert t.loc["cue_tag_changed", "rejected_pct"] == 100.0
    assert t.loc["other_reply_edited", "n_rejected"] == 0 and t.loc["label_on_other", "n_rejected"] == 0


def test_corruptions_never_return_the_clean_pair(items):
    it = items[0]
    plain = CandidatePair({"real": it.real, "alt": it.alt}, ("real", "alt"))
    for name in BATTERY:
        cued = get_cue(name).apply(plain, "alt", seed=3, item_id=it.item_id)
        for kind, bad in cue_corruptions(plain, cued):
            assert bad != cued, (name, kind)


def test_orders_start_the_cues_from_the_studys_single_order(items):
    orders = {it.item_id: ("alt", "real") for it in items}
    v = cue_variants(items, ["bandwagon", "position"], seed=3, targets={it.item_id: "alt" for it in items},
                     orders=orders)
    bw = v[v["dimension"] == "cue:bandwagon"]
    assert bw["valid"].all() and all(r[-1]["after"].endswith("Reply A.") for r in bw["edits"])
    assert (v.loc[v["dimension"] == "cue:position", "operation"] == "none").all()  # alt already in slot A
