"""The run explorer page (no browser): what it reads from each study's folder, how it embeds it, bad input.

The browser half (open, filter, sort, deep links, hostile text) is tests/test_view_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.view import PairSet, build_payload, view_html, write_view
from cfbench.view.page import diff_segments
from view_util import COMMITTED, HOSTILE, hostile_cc_folder, page_data, pairs_of, tiny_png

from star_util import STAR_DIR


# -- the diff ------------------------------------------------------------------------------------

@pytest.mark.parametrize("before,after", [
    ("May I have your name?", "What is your name?"),
    ("", "all new"), ("all gone", ""), ("same", "same"),
    ("a <del>x</del> &amp; b", "a <ins>y</ins> &lt; b"),
    (HOSTILE[0] + " Ana", HOSTILE[1] + " Marco"),
    ("line one\n  Agent: it's fine", "line one\nAgent: it’s not fine\n"),
])
def test_diff_segments_read_back_both_texts_exactly(before, after):
    left, right = diff_segments(before, after)
    assert "".join(left) == before and "".join(right) == after
    # odd positions are the changes; a pure deletion never shows up as an insertion
    if before == after:
        assert len(left) == 1 and len(right) == 1
    if not before:
        assert "".join(right[1::2]) == after


def test_diff_segments_on_real_star_dialogues():
    candidates = [STAR_DIR, Path(__file__).resolve().parents[3] / "shared" / "data" / "star" / "dialogues"]
    star = next((p for p in candidates if p.is_dir()), None)
    if star is None:
        pytest.skip("STAR dialogues not found beside the repo (the project does not commit them)")
    files = sorted(star.glob("*.json"))[:20]
    assert files
    n_changed = 0
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        text = "\n".join(str(e.get("Text", "")) for e in d.get("Events", []) if e.get("Text"))
        if not text:
            continue
        edited = text.replace(" the ", " a ", 3).replace("you", "YOU", 1)
        left, right = diff_segments(text, edited)
        assert "".join(left) == text and "".join(right) == edited
        n_changed += (edited != text) and bool("".join(right[1::2]))
    assert n_changed > 0


# -- the committed results folders -------------------------------------------------------------------

def _committed(study: str) -> Path:
    d = COMMITTED[study]
    if not d.is_dir():
        pytest.skip(f"{d} not present")
    return d


def test_contact_center_pairs_match_the_rows_and_the_studys_flips():
    from cfbench.studies.contact_center_qa.tables import flipped_units

    d = _committed("contact_center_qa")
    pairs = pairs_of(d)
    rows = pd.read_parquet(d / "rows.parquet")
    if (d / "star_rows.parquet").is_file():  # the STAR arm's pairs are listed too
        rows = pd.concat([rows.assign(_src="synthetic"), pd.read_parquet(d / "star_rows.parquet").assign(_src="star")],
                         ignore_index=True)
    else:
        rows = rows.assign(_src="synthetic")
    r = rows[rows["dimension"] != "original"]
    units = r.groupby(["_src", "judge", "arm", "task", "question_id", "item_id", "dimension"]).ngroups
    assert len(pairs) == len(r) - units  # every row but each unit's reference is compared to it
    assert len(set(pairs.pair_id)) == len(pairs)
    # the flipped pairs' units are exactly the study's flipped units (robustness rows are not in that table)
    fu = flipped_units(rows)
    want = set(zip(fu["judge"], fu["dimension"], fu["item_id"], fu["question_id"]))
    f = pairs.facets
    got = {(f["judge"][i], f["dimension"][i], f["item"][i], f["question"][i])
           for i, x in enumerate(pairs.flag("flipped")) if x and not str(f["dimension"][i]).startswith("robustness")}
    assert got == want
    # counterfactual and noise rows are told apart: the robustness rows are the noise facet
    assert {k for k, dim in zip(pairs.kind, f["dimension"]) if str(dim).startswith("robustness")} == {"noise"}
    assert {k for k, dim in zip(pairs.kind, f["dimension"]) if not str(dim).startswith("robustness")} == {"counterfactual"}
    # replies come from judgments.parquet (star_judgments.parquet for the STAR arm), by cache key
    j = pd.concat([pd.read_parquet(d / n) for n in ("judgments.parquet", "star_judgments.parquet") if (d / n).is_file()],
                  ignore_index=True).drop_duplicates(["judge", "key"]).set_index(["judge", "key"])["text"]
    for i in (0, len(pairs) // 2, len(pairs) - 1):
        row = rows[(rows["judge"] == f["judge"][i]) & (rows["dimension"] == f["dimension"][i])
                   & (rows["item_id"] == f["item"][i]) & (rows["question_id"] == f["question"][i])
                   & (rows["condition"] == f["condition"][i])]
        assert len(row) == 1
        assert pairs.outputs[0].b[i] == j[(f["judge"][i], row["key"].iloc[0])]


def test_shopflow_pairs_and_flips_match_its_flip_table():
    d = _committed("shopflow")
    every = pairs_of(d)
    # the seed arm: its shipped observations routed at the seed threshold flip exactly the seed's flip table
    seed_flips = {p for p, arm, x in zip(every.pair_id, every.arm, every.flag("flipped")) if arm == "seed" and x}
    assert seed_flips == {f"seed:{p}" for p in pd.read_csv(d / "seed_flips.csv")["pair_id"]}
    keep = [i for i, arm in enumerate(every.arm) if arm == "judged"]
    pairs = PairSet.concat([every])  # a copy, cut to the judged arm below
    for f in ("pair_id", "arm", "kind", "side_a", "side_b", "reasons"):
        setattr(pairs, f, [getattr(every, f)[i] for i in keep])
    for t in pairs.diffs + pairs.metrics:
        t.a, t.b = [t.a[i] for i in keep], [t.b[i] for i in keep]
    for fl in pairs.flags:
        fl.values = [fl.values[i] for i in keep]
    jr = pd.read_csv(d / "judged_rows.csv")
    flips = pd.read_csv(d / "judged_flips.csv")
    assert len(pairs) == jr["pair_id"].nunique() == 44
    flipped = {pid for pid, x in zip(pairs.pair_id, pairs.flag("flipped")) if x}
    assert flipped == set(flips["pair_id"])
    a = jr[jr["variant"] == "formal"].set_index("pair_id")["score"]
    sm = next(m for m in pairs.metrics if m.name == "P(ready)")
    assert sm.a == [a[p] for p in pairs.pair_id]
    # the page diffs both wordings of the request and the two replies the judge scored
    jp = pd.read_csv(d / "judged_pairs.csv").set_index(["pair_id", "variant"])
    diffs = {t.label: t for t in pairs.diffs}
    assert diffs["request"].a == [jp.at[(p, "formal"), "request"] for p in pairs.pair_id]
    reply = diffs["support reply (what the judge scored)"]
    assert reply.b == [jp.at[(p, "conversational"), "reply"] for p in pairs.pair_id]
    # every flip's reason says whether the new route agrees with expected_ready, computed from the rows
    w = jr.set_index(["pair_id", "variant"])
    thr = json.loads((d / "summary.json").read_text())["judged"]["threshold"]
    for p, why in zip(pairs.pair_id, pairs.reasons):
        if p in flipped:
            right = (w.at[(p, "conversational"), "route"] == "auto_serve") == bool(w.at[(p, "conversational"),
                                                                                       "expected_ready"])
            assert ("matches expected_ready" if right else "contradicts expected_ready") in why
            assert f"threshold {thr:g}" in why
    # an answer that changes with both scores on one side of the threshold is flagged (not a route flip)
    same = [p for p in pairs.pair_id if w.at[(p, "formal"), "raw"] != w.at[(p, "conversational"), "raw"]
            and w.at[(p, "formal"), "route"] == w.at[(p, "conversational"), "route"]]
    assert {p for p, x in zip(pairs.pair_id, pairs.flag("answer_only")) if x} == set(same)


def test_identity_pairs_are_every_prompt_under_every_compared_identity_pair(tmp_path):
    from conftest import results_with_a_cut_reply

    d = _committed("identity_tone")
    if (pd.read_csv(d / "fresh_responses.csv")["finish_reason"] != "length").all():  # no cut reply to flag
        d = results_with_a_cut_reply(d, tmp_path / "identity_tone" / "default")
    pairs = pairs_of(d)
    resp = pd.read_csv(d / "fresh_responses.csv")
    combos = pd.read_csv(d / "fresh_pairs_described.csv")[["identity_a", "identity_b"]].drop_duplicates()
    assert len(pairs) == resp.groupby(["model", "prompt_id"]).ngroups * len(combos)
    v = pd.read_csv(d / "fresh_variants.csv").set_index(["prompt_id", "identity"])["user_text"]
    i = 5
    assert pairs.diffs[0].a[i] == v[(pairs.facets["prompt"][i], pairs.facets["identity_a"][i])]
    assert pairs.diffs[0].b[i] == v[(pairs.facets["prompt"][i], pairs.facets["identity_b"][i])]
    assert pairs.outputs[0].label == "assistant's reply"
    # a reply cut at the token cap is flagged on every pair it is in, with the reason
    cut = resp[resp["finish_reason"] == "length"]
    want = {k for k in range(len(pairs)) for _, r in cut.iterrows()
            if pairs.facets["prompt"][k] == r["prompt_id"] and r["identity"] in (pairs.facets["identity_a"][k],
                                                                                pairs.facets["identity_b"][k])}
    assert {k for k, x in enumerate(pairs.flag("cut")) if x} == want and want
    assert all("cut at the token cap" in pairs.reasons[k] for k in want)
    # the dimension names exactly the attributes that differ
    for k in range(len(pairs)):
        a, b = pairs.facets["identity_a"][k].split("_"), pairs.facets["identity_b"][k].split("_")
        diff = [n for n, x, y in zip(("age", "gender", "nationality"), a, b) if x != y]
        assert pairs.facets["dimension"][k] == "+".join(diff)


@pytest.mark.parametrize("study", sorted(COMMITTED))
def test_page_embeds_tables_figures_and_provenance(study, tmp_path):
    d = _committed(study)
    out = write_view(d, tmp_path / "view.html", pairs=pairs_of(d))
    page = out.read_text(encoding="utf-8")
    data = page_data(page)
    assert data["study"] == study
    assert data["pairs"]["n"] > 0 and data["title"] == f"{study} / default"
    assert {t["name"] for t in data["tables"]} == {p.stem for p in d.glob("*.csv")}
    figs = json.loads(re.search(r'id="cfbench-figures">(.*?)</script>', page, re.S).group(1))
    assert {f["name"] for f in figs} == {p.stem for p in d.glob("*.png")}
    assert all(base64.b64decode(f["png"]) == (d / f"{f['name']}.png").read_bytes() for f in figs)
    assert data["run_info"] == json.loads((d / "run_info.json").read_text())
    # the folder itself was not touched
    assert not (d / "view.html").exists() or (d / "view.html").stat().st_mtime < out.stat().st_mtime


# -- how the data are embedded ---------------------------------------------------------------------------

def test_page_has_one_hashed_script_and_a_csp_without_unsafe_inline(tmp_path):
    info = hostile_cc_folder(tmp_path / "run")
    page = write_view(tmp_path / "run", tmp_path / "v.html").read_text(encoding="utf-8")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    code = [body for attrs, body in scripts if "application/json" not in attrs]
    assert len(scripts) == 3 and len(code) == 1
    digest = base64.b64encode(hashlib.sha256(code[0].encode("utf-8")).digest()).decode()
    assert f"'sha256-{digest}'" in csp
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    assert base64.b64encode(hashlib.sha256(style.encode()).digest()).decode() in csp
    # no hostile string appears in the markup: the data blocks hold only escaped JSON / base64
    for h in HOSTILE:
        assert h not in page
    assert page.count("</script>") == 3 and "<!--" not in page
    assert "<img" not in page and "<svg" not in page and "<a " not in page  # names and texts only as escaped JSON
    data = page_data(page)
    assert info["pair_id"] in data["pairs"]["ids"]
    assert info["reply_a"] in data["strings"] and info["reply_b"] in data["strings"]


def test_credentials_are_scrubbed_from_the_page(tmp_path, monkeypatch):
    from cfbench.core.secrets import find_secret_leaks

    key = "sk-test-" + "Zq7" * 10
    monkeypatch.setenv("OPENAI_API_KEY", key)
    hostile_cc_folder(tmp_path / "run", secret=key)
    assert find_secret_leaks(tmp_path / "run")  # the planted key is there to find
    out = write_view(tmp_path / "run", tmp_path / "page" / "view.html")
    page = out.read_text(encoding="utf-8")
    decoded = json.dumps(page_data(page), ensure_ascii=False)
    assert key not in decoded and key[:14] not in decoded and key not in page
    assert find_secret_leaks(tmp_path / "page") == []


def test_payload_is_compressed_and_grows_with_the_data(tmp_path):
    info = hostile_cc_folder(tmp_path / "run")
    page = write_view(tmp_path / "run", tmp_path / "v.html").read_text(encoding="utf-8")
    raw = len(json.dumps(page_data(page), ensure_ascii=False).encode())
    box = re.search(r'id="cfbench-data">(.*?)</script>', page, re.S).group(1)
    assert len(box) < raw * 1.4  # base64 of gzip of the JSON, not the JSON itself
    assert info


# -- bad input: one line naming the file and the field ---------------------------------------------------

def test_missing_folder_and_missing_columns_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not a results folder"):
        build_payload(tmp_path / "nope")
    hostile_cc_folder(tmp_path / "run")
    pd.DataFrame({"judge": ["j"]}).to_parquet(tmp_path / "run" / "rows.parquet")
    with pytest.raises(InputError) as e:
        write_view(tmp_path / "run", tmp_path / "v.html")
    assert "rows.parquet" in str(e.value) and e.value.field == "arm"


def test_bad_png_json_csv_and_parquet_name_the_file(tmp_path):
    from cfbench.view.page import _figures

    d = tmp_path / "run"
    hostile_cc_folder(d)
    (d / "fake.png").write_bytes(b"<script>alert(1)</script>")
    with pytest.raises(InputError, match="fake.png"):
        _figures(d)
    (d / "fake.png").unlink()
    (d / "summary.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="summary.json"):
        write_view(d, tmp_path / "v.html")
    (d / "summary.json").write_text("{}", encoding="utf-8")
    (d / "judgments.parquet").write_bytes(b"PAR1 broken")
    with pytest.raises(InputError, match="judgments.parquet"):
        write_view(d, tmp_path / "v.html")
    e = tmp_path / "sf"
    e.mkdir()
    (e / "run_info.json").write_text('{"study": "shopflow"}', encoding="utf-8")
    (e / "judged_rows.csv").write_text("pair_id,variant,route\np1,formal,auto\np1,casual,auto\np1,third,auto\n")
    with pytest.raises(InputError) as err:
        pairs_of(e)
    assert "judged_rows.csv" in str(err.value) and err.value.field == "variant"


def test_a_folder_with_no_judged_rows_still_gets_tables_and_figures(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "f.png").write_bytes(tiny_png())
    data = page_data(view_html(build_payload(tmp_path)))
    assert data["pairs"] is None and data["tables"][0]["rows"] == [["1", "2"]]
    assert "No pairs" in data["notes"][0]


# -- the CLI and the notebook hook ------------------------------------------------------------------------

def test_cli_view_writes_the_page_and_reports_bad_input_in_one_line(tmp_path, capsys):
    from cfbench.cli import main

    hostile_cc_folder(tmp_path / "run")
    assert main(["view", str(tmp_path / "run"), "--out", str(tmp_path / "p.html")]) == 0
    assert (tmp_path / "p.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["view", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing" in err[0]


def test_result_view_renders_a_sandboxed_iframe_and_writes_the_inputs(tmp_path):
    from cfbench.studies.shopflow import Params, run

    res = run(Params(judge="scripted:shopflow-ready", max_pairs=4, n_boot=20, candidate_prompt=""),
              out=tmp_path / "sf", progress=False)
    page = res.view(tmp_path / "sf")
    assert (tmp_path / "sf" / "judged_pairs.csv").exists() and (tmp_path / "sf" / "view.html").exists()
    html = page._repr_html_()
    assert html.startswith("<iframe") and 'sandbox="allow-scripts"' in html and "allow-same-origin" not in html
    assert "<script" not in html  # the page sits escaped inside srcdoc
    data = page_data(page.html)
    judged = [i for i, p in enumerate(data["pairs"]["ids"]) if not p.startswith("seed:")]
    assert len(judged) == 4 and data["pairs"]["n"] == 4 + 10  # and the seed's 10 shipped pairs
    assert all(b["index"][i] >= 0 for b in data["pairs"]["diff_blocks"] for i in judged)
    assert [b["label"] for b in data["pairs"]["diff_blocks"]] == ["request", "support reply (what the judge scored)"]
    mem = res.view()
    assert mem.path is None and page_data(mem.html)["pairs"]["n"] == 14


def test_judge_bias_pairs_are_baseline_against_each_cue_with_the_prompts_as_judged():
    d = _committed("judge_bias")
    pairs = pairs_of(d)
    ans = pd.read_csv(d / "answers.csv")
    items = pd.read_csv(d / "items.csv").set_index("item_id")
    # per judge x item: the two baseline orders (position) + one pair per other condition
    n_other = int((ans["condition"] != "baseline").sum())
    n_items = ans.groupby(["judge", "item_id"]).ngroups
    assert len(pairs) == n_other + n_items
    assert set(pairs.kind) == {"counterfactual", "noise"}
    assert {c for c, k in zip(pairs.facets["cue"], pairs.kind) if k == "noise"} == {"reworded"}
    # the flag "toward the cue" is recomputed here from answers.csv: the cued row's choice is the cued reply,
    # the baseline's (same order) is not
    def chosen(r):
        return ("real" if r["answer"] == "A" else "alt") if r["order"] == "realA" else (
            "alt" if r["answer"] == "A" else "real")
    a = ans.set_index(["judge", "item_id", "task", "condition", "order"], drop=False)
    want = set()
    for (j, it, task, cond, order), r in a.iterrows():
        if cond in ("baseline", "reworded") or task != "pairwise":
            continue
        base = a.loc[(j, it, task, "baseline", order)]
        if chosen(r) != chosen(base) and chosen(r) == items.at[it, "cued_candidate"]:
            want.add(f"{j}|{task}|{it}|{cond}")
    assert {p for p, x in zip(pairs.pair_id, pairs.flag("toward_cue")) if x} == want and want
    # the prompts differ by the cue only: the cued reply's label or padding is in b, not in a
    k = next(i for i, c in enumerate(pairs.facets["cue"]) if c == "authority")
    pa, pb = pairs.diffs[0].a[k], pairs.diffs[0].b[k]
    assert pa and pb and pa != pb and "supervisor" in pb and "supervisor" not in pa
    assert items.at[pairs.facets["item"][k], "real"] in pa  # both candidate replies as the judge saw them


def test_a_plugin_study_is_browsable_through_the_protocol(tmp_path, monkeypatch):
    """A study the viewer has never heard of: its explorer_pairs describes two pairs, the page shows them."""
    import sys
    import types

    from cfbench.view import Flag, Metric, PairSet, Texts

    mod = types.ModuleType("plug_study_x")

    def explorer_pairs(folder):
        return PairSet(pair_id=["p1", "p2"], arm=["main", "main"], kind=["counterfactual", "noise"],
                       side_a=["x", "x"], side_b=["y", "x"], facets={"judge": ["j", "j"]},
                       diffs=[Texts("input", ["a b c", "same"], ["a B c", "same"])],
                       outputs=[Texts("reply", ["r1", "r2"], ["r3", "r4"])],
                       metrics=[Metric("score", "num", [1, 2], [3, 2])],
                       flags=[Flag("flipped", [True, False])], reasons=["score 1 -> 3", ""])

    mod.explorer_pairs = explorer_pairs
    monkeypatch.setitem(sys.modules, "plug_study_x", mod)
    import cfbench.studies as S
    ep = types.SimpleNamespace(name="plug_x", value="plug_study_x", group="cfbench.studies")
    monkeypatch.setattr(S, "_plugin_entry_points", lambda: {"plug_x": ep})
    (tmp_path / "run_info.json").write_text(json.dumps({"study": "plug_x"}), encoding="utf-8")
    from cfbench.cli import main

    assert main(["view", str(tmp_path), "--out", str(tmp_path / "v.html")]) == 0
    data = page_data((tmp_path / "v.html").read_text(encoding="utf-8"))
    assert data["study"] == "plug_x" and data["pairs"]["ids"] == ["p1", "p2"]
    assert data["strings"][data["pairs"]["reasons"][0]] == "score 1 -> 3"
    assert [f["name"] for f in data["pairs"]["facets"]][:2] == ["arm", "kind"]


def test_pair_set_names_the_field_of_a_wrong_length():
    from cfbench.view import Metric, PairSet

    p = PairSet(pair_id=["a", "b"], arm=["x", "x"], kind=["c", "c"], side_a=["1", "1"], side_b=["2", "2"],
                metrics=[Metric("m", "num", [1], [2, 3])])
    with pytest.raises(InputError) as e:
        p.check("somewhere")
    assert e.value.field == "metrics.m.a"


def test_staging_folder_names_never_reach_the_title(tmp_path):
    d = tmp_path / ".default.staging-obvk503_"
    hostile_cc_folder(d)
    (d / "run_info.json").write_text(json.dumps({"study": "contact_center_qa"}), encoding="utf-8")
    data = page_data(view_html(build_payload(d)))
    assert data["title"] == "contact_center_qa / default"
