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
from cfbench.view import build_payload, view_html, write_view
from cfbench.view.page import diff_segments, load_pairs_any
from view_util import COMMITTED, HOSTILE, hostile_cc_folder, page_data, tiny_png

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
    study, pairs = load_pairs_any(d)
    rows = pd.read_parquet(d / "rows.parquet")
    assert study == "contact_center_qa"
    r = rows[rows["dimension"] != "original"]
    units = r.groupby(["judge", "arm", "task", "question_id", "item_id", "dimension"]).ngroups
    assert len(pairs) == len(r) - units  # every row but each unit's reference is compared to it
    assert len(set(pairs.ids)) == len(pairs)
    # the flipped pairs' units are exactly the study's flipped units (robustness rows are not in that table)
    fu = flipped_units(rows)
    want = set(zip(fu["judge"], fu["dimension"], fu["item_id"], fu["question_id"]))
    f = pairs.facets
    got = {(f["judge"][i], f["dimension"][i], f["item"][i], f["question"][i])
           for i, x in enumerate(pairs.flags["flipped"]) if x and not str(f["dimension"][i]).startswith("robustness")}
    assert got == want
    # replies come from judgments.parquet, by cache key
    j = pd.read_parquet(d / "judgments.parquet").set_index(["judge", "key"])["text"]
    for i in (0, len(pairs) // 2, len(pairs) - 1):
        row = rows[(rows["judge"] == f["judge"][i]) & (rows["dimension"] == f["dimension"][i])
                   & (rows["item_id"] == f["item"][i]) & (rows["question_id"] == f["question"][i])
                   & (rows["condition"] == f["condition"][i])]
        assert len(row) == 1
        assert pairs.blocks[0][2][i] == j[(f["judge"][i], row["key"].iloc[0])]


def test_shopflow_pairs_and_flips_match_its_flip_table():
    d = _committed("shopflow")
    study, pairs = load_pairs_any(d)
    jr = pd.read_csv(d / "judged_rows.csv")
    flips = pd.read_csv(d / "judged_flips.csv")
    assert study == "shopflow"
    assert len(pairs) == jr["pair_id"].nunique() == 44
    flipped = {pid for pid, x in zip(pairs.ids, pairs.flags["flipped"]) if x}
    assert flipped == set(flips["pair_id"])
    a = jr[jr["variant"] == "formal"].set_index("pair_id")["score"]
    sm = next(m for m in pairs.metrics if m[0] == "score")
    assert sm[2] == [a[p] for p in pairs.ids]
    texts = d / "judged_pairs.csv"  # written by result.view() in the notebook since the run explorer exists
    if texts.exists():  # the page diffs the two wordings of each pair
        jp = pd.read_csv(texts).set_index(["pair_id", "variant"])["request"]
        assert pairs.inputs is not None
        assert list(pairs.inputs[0]) == [jp[(p, "formal")] for p in pairs.ids]
        assert list(pairs.inputs[1]) == [jp[(p, "conversational")] for p in pairs.ids]
    else:  # an older folder without the request texts: said on the page, no diff invented
        assert pairs.inputs is None and any("request text" in n for n in pairs.notes)


def test_identity_pairs_are_every_prompt_under_every_compared_identity_pair():
    d = _committed("identity_tone")
    study, pairs = load_pairs_any(d)
    resp = pd.read_csv(d / "fresh_responses.csv")
    combos = pd.read_csv(d / "fresh_pairs_described.csv")[["identity_a", "identity_b"]].drop_duplicates()
    assert study == "identity_tone"
    assert len(pairs) == resp.groupby(["model", "prompt_id"]).ngroups * len(combos)
    v = pd.read_csv(d / "fresh_variants.csv").set_index(["prompt_id", "identity"])["user_text"]
    i = 5
    assert pairs.inputs[0][i] == v[(pairs.facets["question"][i], pairs.facets["identity_a"][i])]
    assert pairs.inputs[1][i] == v[(pairs.facets["question"][i], pairs.facets["identity_b"][i])]
    # the dimension names exactly the attributes that differ
    for k in range(len(pairs)):
        a, b = pairs.facets["identity_a"][k].split("_"), pairs.facets["identity_b"][k].split("_")
        diff = [n for n, x, y in zip(("age", "gender", "nationality"), a, b) if x != y]
        assert pairs.facets["dimension"][k] == "+".join(diff)


@pytest.mark.parametrize("study", sorted(COMMITTED))
def test_page_embeds_tables_figures_and_provenance(study, tmp_path):
    d = _committed(study)
    out = write_view(d, tmp_path / "view.html")
    page = out.read_text(encoding="utf-8")
    data = page_data(page)
    assert data["study"] == study
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
        build_payload(tmp_path / "run")
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
        build_payload(d)
    (d / "summary.json").write_text("{}", encoding="utf-8")
    (d / "judgments.parquet").write_bytes(b"PAR1 broken")
    with pytest.raises(InputError, match="judgments.parquet"):
        build_payload(d)
    e = tmp_path / "sf"
    e.mkdir()
    (e / "judged_rows.csv").write_text("pair_id,variant,route\np1,formal,auto\np1,casual,auto\np1,third,auto\n")
    with pytest.raises(InputError) as err:
        build_payload(e)
    assert "judged_rows.csv" in str(err.value) and err.value.field == "variant"


def test_a_folder_with_no_judged_rows_still_gets_tables_and_figures(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "f.png").write_bytes(tiny_png())
    data = page_data(view_html(build_payload(tmp_path)))
    assert data["pairs"] is None and data["tables"][0]["rows"] == [["1", "2"]]
    assert "No judged rows" in data["notes"][0]


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
    assert data["pairs"]["n"] == 4 and data["pairs"]["diff"] and min(data["pairs"]["diff"]) >= 0
    mem = res.view()
    assert mem.path is None and page_data(mem.html)["pairs"]["n"] == 4
