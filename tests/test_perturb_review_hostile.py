"""Issue 26: hostile ids, dimensions, conditions, reasons and file names render as text in a real
browser; no handler runs; exported decisions are formula-safe; decisions files are validated.

The browser part drives Debian's ``chromium`` headless through the DevTools protocol (the same
driver as tests/test_perturb_review.py) and is skipped with a reason when chromium is absent.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.perturb import apply_decisions, make_variants
from cfbench.perturb.review import neutralise_cell, review_cards, review_html
from star_util import star
from test_perturb_review import _Cdp, _chromium

# each payload would set document.title (or a global) if it ever ran
HOSTILE = [
    "<img src=x onerror=\"document.title='pwned-img'\">",
    "\"><svg onload=\"document.title='pwned-svg'\">",
    "javascript:document.title='pwned-js'",
    "</script><script>document.title='pwned-script'</script>",
    "<!--<script>document.title='pwned-comment'</script>",
    "=cmd|' /C calc'!A0",
    "+SUM(1,1)", "-2+3", "@SUM(A1)",
]
TITLE = "<script>document.title='pwned-title'</script>.jsonl"


def hostile_frame():
    """A real variants frame (STAR text) whose ids and labels are hostile strings."""
    ts = list(star(limit=len(HOSTILE)))
    v = make_variants(ts, dimensions=["politeness", "priming", "disability"], seed=0, progress=False)
    mapping = {t.id: HOSTILE[i] for i, t in enumerate(ts)}
    v = v.copy()
    v["variant_id"] = [mapping[i] + vid[len(i):] for i, vid in zip(v["item_id"], v["variant_id"])]
    v["item_id"] = v["item_id"].map(mapping)
    non_orig = v["dimension"] != "original"
    v.loc[non_orig, "condition"] = "<b onmouseover=\"document.title='pwned-cond'\">c</b>"
    v.loc[non_orig, "reason"] = "<iframe src=javascript:document.title='pwned-reason'>"
    import dataclasses

    return v, [dataclasses.replace(t, id=mapping[t.id]) for t in ts]


def test_no_data_reaches_the_page_as_markup():
    v, ts = hostile_frame()
    page = review_html(v, ts, title=TITLE)
    body = page.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in body and ">" not in body  # the data block cannot be closed or commented out
    data = json.loads(body)
    assert {c["item"] for c in data["cards"]} <= set(HOSTILE) and data["title"] == TITLE
    assert "innerHTML" not in page and "unsafe-inline" not in page and "javascript:" not in page.replace(
        body, "")
    csp = re.search(r'Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "script-src 'sha256-" in csp and "default-src 'none'" in csp
    assert "<title>cfbench variant review: &lt;script&gt;" in page


def test_cards_put_reviewable_variants_first_and_not_applicable_last():
    ts = list(star(limit=12))
    v = make_variants(ts, dimensions=["religion_cues", "politeness", "priming"], seed=0, progress=False)
    cards = review_cards(v, ts)
    ranks = [2 if c["status"] == "na" else (1 if c["unchanged"] else 0) for c in cards]
    assert ranks == sorted(ranks) and ranks[0] == 0 and 2 in ranks


@pytest.mark.parametrize("cell,out", [("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@x", "'@x"),
                                      ("\tx", "'\tx"), ("\rx", "'\rx"), ("star-1::g::m", "star-1::g::m")])
def test_formula_cells_are_neutralised(cell, out):
    assert neutralise_cell(cell) == out


def _frame_and_csv(tmp_path, text: str) -> tuple[pd.DataFrame, Path]:
    ts = list(star(limit=3))
    v = make_variants(ts, dimensions=["politeness"], seed=0, progress=False)
    p = tmp_path / "decisions.csv"
    p.write_text(text.format(orig=v.loc[v["dimension"] == "original", "variant_id"].iloc[0],
                             var=v.loc[v["applicable"] & (v["operation"] != "none"), "variant_id"].iloc[0]))
    return v, p


def test_a_decisions_file_with_a_header_twice_is_an_error(tmp_path):
    v, p = _frame_and_csv(tmp_path, "variant_id,decision,decision\n{var},accept,reject\n")
    with pytest.raises(InputError, match=r"decisions\.csv.*field 'decision'.*twice"):
        apply_decisions(v, p)


def test_a_decisions_file_with_an_unknown_column_is_an_error(tmp_path):
    v, p = _frame_and_csv(tmp_path, "variant_id,decision,note\n{var},reject,x\n")
    with pytest.raises(InputError, match=r"decisions\.csv.*field 'note'.*unknown column"):
        apply_decisions(v, p)


def test_a_decision_on_an_original_is_an_error_naming_file_record_field(tmp_path):
    v, p = _frame_and_csv(tmp_path, "variant_id,decision\n{orig},reject\n")
    with pytest.raises(InputError) as info:
        apply_decisions(v, p)
    msg = str(info.value)
    assert str(p) in msg and "::original" in msg and "field 'variant_id'" in msg and "original transcript" in msg


def test_a_neutralised_id_reads_back_as_the_variant(tmp_path):
    v, _ = _frame_and_csv(tmp_path, "")
    v = v.copy()
    target = v.loc[v["applicable"] & (v["operation"] != "none"), "variant_id"].iloc[0]
    hostile = "=" + target
    v.loc[v["variant_id"] == target, "variant_id"] = hostile
    p = tmp_path / "d.csv"
    p.write_text(f"variant_id,decision\n{neutralise_cell(hostile)},reject\n")
    out = apply_decisions(v, p).set_index("variant_id")
    assert out.loc[hostile, "rejection_reason"] == "human review"


# --------------------------------------------------------------------------- real browser

async def _drive(page: Path, port: int, hostile_id: str) -> dict:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json()
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with http.ws_connect(ws_url, max_msg_size=0) as ws:
            cdp = _Cdp(ws)
            await cdp.call("Page.enable")
            await cdp.call("Page.navigate", url=page.as_uri())
            for _ in range(150):
                if await cdp.js("document.readyState") == "complete" and await cdp.js(
                        "document.body && document.body.dataset.ready") == "1":
                    break
                await asyncio.sleep(0.1)
            out = {"ready": await cdp.js("document.body.dataset.ready")}

            async def snapshot() -> dict:
                return {
                    "title": await cdp.js("document.title"),
                    "n_bad": await cdp.js("document.querySelectorAll('main img, main svg, main iframe, main script,"
                                          " main b[onmouseover], [onerror], [onload], a[href^=\"javascript\"]')"
                                          ".length"),
                    "text": await cdp.js("document.getElementById('cards').textContent"),
                    "n_cards": await cdp.js("document.querySelectorAll('section.card').length"),
                }

            await asyncio.sleep(0.5)  # an onerror on a broken image would have fired by now
            out["first"] = await snapshot()
            # every card of every page: walk the pages
            pages = []
            while True:
                pages.append(await snapshot())
                if await cdp.js("document.getElementById('next').disabled"):
                    break
                await cdp.click("#next")
            out["pages"] = pages
            # decide on the formula-like id and export
            await cdp.click("#prev") if len(pages) > 1 else None
            await cdp.js("(() => { const s = document.getElementById('f-valid'); s.value = 'reviewable';"
                         " s.dispatchEvent(new Event('change')); })()")
            sel = f"section.card[data-id^={json.dumps(hostile_id)}] button.reject"
            for _ in range(100):  # page on until the card is drawn
                if await cdp.js(f"!!document.querySelector({json.dumps(sel)})"):
                    break
                await cdp.click("#next")
            await cdp.click(sel)
            await cdp.click("#export")
            out["csv"] = await cdp.js("document.getElementById('export-csv').value")
            out["title_after"] = await cdp.js("document.title")
            out["run_title"] = await cdp.js("document.getElementById('run-title').textContent")
            return out


def _run_browser(tmp_path: Path, page: Path, hostile_id: str) -> dict:
    binary = _chromium()
    profile = tmp_path / "profile"
    proc = subprocess.Popen([binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                             "--no-first-run", "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(200):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        else:
            pytest.fail("chromium did not open its DevTools port")
        port = int(port_file.read_text().split()[0])
        return asyncio.run(_drive(page, port, hostile_id))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_hostile_ids_render_as_text_and_no_handler_runs_in_chromium(tmp_path):
    _chromium()
    v, ts = hostile_frame()
    page = tmp_path / "review.html"
    page.write_text(review_html(v, ts, title=TITLE, page_size=10), encoding="utf-8")
    out = _run_browser(tmp_path, page, "=cmd|")
    assert out["ready"] == "1"  # the page's own script ran under its CSP
    for snap in out["pages"]:
        assert snap["title"] == "cfbench variant review: " + TITLE and snap["n_bad"] == 0  # no handler set it
    assert out["title_after"] == "cfbench variant review: " + TITLE  # the file name, as text
    assert out["run_title"] == TITLE
    text = "".join(p["text"] for p in out["pages"])
    for h in HOSTILE[:5]:
        assert h in text, h  # shown literally
    assert "<iframe src=javascript:" in text and "<b onmouseover=" in text
    assert sum(p["n_cards"] for p in out["pages"]) == int((v["dimension"] != "original").sum())
    rows = list(csv.DictReader(io.StringIO(out["csv"])))
    assert len(rows) == 1 and rows[0]["decision"] == "reject"
    assert rows[0]["variant_id"].startswith("'=cmd|")  # neutralised for spreadsheets
    reviewed = tmp_path / "reviewed.csv"
    reviewed.write_text(out["csv"])
    back = apply_decisions(v, reviewed)
    assert (back["rejection_reason"] == "human review").sum() == 1
    assert back.loc[back["rejection_reason"] == "human review", "variant_id"].iloc[0].startswith("=cmd|")
