"""The review page and ``cfbench variants``: files written, decisions round-trip, a real headless browser.

The browser test drives Debian's ``chromium`` through the DevTools protocol
(aiohttp websocket): load the page, click Accept / Reject with real mouse
events, filter, click Export, read the CSV back and apply it. It is skipped
with a reason when chromium is not installed (CI: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from cfbench.perturb import make_variants, rejection_table
from cfbench.perturb.review import diff_html, review_cards, review_html
from cfbench.cli.variants import main as variants_main, run_variants
from star_util import need_star, star

STAR_FILES = ("10.json", "20.json", "30.json", "40.json", "50.json")


def _star_subset(tmp_path: Path) -> Path:
    src = need_star()
    d = tmp_path / "star"
    d.mkdir()
    for f in STAR_FILES:
        shutil.copy(src / f, d / f)
    return d


def test_diff_marks_only_changed_words():
    b, a = diff_html("Thank you and goodbye.", "Thank you and goodbye. Shabbat shalom!")
    assert b == "Thank you and goodbye." and a == "Thank you and goodbye.<ins> Shabbat shalom!</ins>"
    b, a = diff_html("<b>x</b> & y", "<b>z</b> & y")
    assert "<b>" not in b and "&lt;b&gt;" in b and "<del>x</del>" in b and "<ins>z</ins>" in a


def test_page_is_self_contained_and_escapes_the_data():
    ts = list(star(limit=6))
    v = make_variants(ts, dimensions=["politeness", "religion_cues", "priming"], seed=0, progress=False)
    page = review_html(v, ts, title="t")
    assert not re.search(r"(src|href)=[\"']?(https?:|//)", page)  # nothing is fetched
    assert "connect-src" not in page and "default-src 'none'" in page
    cards = review_cards(v, ts)
    assert len(cards) == int((v["dimension"] != "original").sum())
    hdr = next(c for c in cards if c["dimension"] == "priming")
    assert hdr["header"] and hdr["rows"] == []
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    assert [c["id"] for c in data["cards"]] == [c["id"] for c in cards]


def test_cli_writes_parquet_rejections_and_page(tmp_path, capsys):
    d = _star_subset(tmp_path)
    assert variants_main([str(d), "--out", str(tmp_path / "out"), "--dimensions", "politeness,disability",
                          "--quiet"]) == 0
    out = tmp_path / "out"
    v = pd.read_parquet(out / "variants.parquet")
    assert set(v["dimension"]) == {"original", "politeness", "disability"} and v["item_id"].nunique() == 5
    assert (pd.read_csv(out / "rejections.csv")["dimension"].tolist() == ["politeness", "disability"])
    assert (out / "review.html").read_text().count('"id":"star-') == int((v["dimension"] != "original").sum())
    assert variants_main([str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_decisions_mark_rejections_as_human_review(tmp_path):
    d = _star_subset(tmp_path)
    first = run_variants(d, tmp_path / "a", dimensions=["formality"], progress=False)
    v = pd.read_parquet(first["variants"])
    made = v[v["applicable"] & (v["operation"] != "none")]
    rej, acc = made["variant_id"].iloc[0], made["variant_id"].iloc[1]
    csv_path = tmp_path / "reviewed.csv"
    csv_path.write_text(f"variant_id,decision\n{rej},reject\n{acc},accept\n")
    second = pd.read_parquet(run_variants(d, tmp_path / "b", dimensions=["formality"], decisions=csv_path,
                                          progress=False)["variants"]).set_index("variant_id")
    assert not second.loc[rej, "valid"] and second.loc[rej, "rejection_reason"] == "human review"
    assert second.loc[acc, "valid"]
    tab = pd.read_csv(tmp_path / "b" / "rejections.csv").set_index("dimension")
    assert tab.loc["formality", "n_rejected_human"] == 1 and tab.loc["formality", "n_rejected"] == 1
    csv_path.write_text("variant_id,decision\nnot-a-variant,reject\n")
    from cfbench.core.errors import InputError
    with pytest.raises(InputError, match="not a variant of this run"):
        run_variants(d, tmp_path / "c", dimensions=["formality"], decisions=csv_path, progress=False)
    csv_path.write_text(f"variant_id,decision\n{rej},maybe\n")
    with pytest.raises(InputError, match="accept' or 'reject"):
        run_variants(d, tmp_path / "c", dimensions=["formality"], decisions=csv_path, progress=False)


# --------------------------------------------------------------------------- real browser

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium not installed (Debian: apt-get install -y chromium chromium-driver)")


class _Cdp:
    def __init__(self, ws):
        self.ws, self.n = ws, 0

    async def call(self, method: str, **params):
        self.n += 1
        await self.ws.send_json({"id": self.n, "method": method, "params": params})
        while True:
            msg = await self.ws.receive_json(timeout=30)
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    async def js(self, expr: str):
        r = await self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def click(self, selector: str):
        """A real left click (mouse pressed + released) at the centre of the element."""
        box = await self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


async def _drive(page: Path, port: int) -> dict:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json()
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with http.ws_connect(ws_url, max_msg_size=0) as ws:
            cdp = _Cdp(ws)
            await cdp.call("Page.enable")
            await cdp.call("Page.navigate", url=page.as_uri())
            for _ in range(100):
                if await cdp.js("document.readyState") == "complete" and await cdp.js(
                        "document.querySelectorAll('section.card').length") > 0:
                    break
                await asyncio.sleep(0.1)
            out = {"n_cards": await cdp.js("document.querySelectorAll('section.card').length")}
            ids = await cdp.js("[...document.querySelectorAll('section.card')].filter(c => c.querySelector('button'))"
                               ".slice(0, 3).map(c => c.dataset.id)")
            out["ids"] = ids
            await cdp.click(f'section.card[data-id="{ids[0]}"] button.accept')
            await cdp.click(f'section.card[data-id="{ids[1]}"] button.reject')
            await cdp.click(f'section.card[data-id="{ids[2]}"] button.accept')
            await cdp.click(f'section.card[data-id="{ids[2]}"] button.reject')  # a changed mind: last click wins
            out["classes"] = await cdp.js(f"{json.dumps(ids)}.map(i => document.querySelector("
                                         f"`section.card[data-id=\"${{i}}\"]`).className)")
            await cdp.js("(() => { const s = document.getElementById('f-dec'); s.value = 'reject';"
                         " s.dispatchEvent(new Event('change')); })()")
            out["n_rejected_shown"] = await cdp.js("document.querySelectorAll('section.card').length")
            await cdp.js("(() => { const s = document.getElementById('f-dec'); s.value = '';"
                         " s.dispatchEvent(new Event('change')); const v = document.getElementById('f-valid');"
                         " v.value = 'na'; v.dispatchEvent(new Event('change')); })()")
            out["n_na_shown"] = await cdp.js("document.querySelectorAll('section.card').length")
            out["na_buttons"] = await cdp.js("document.querySelectorAll('section.card button').length")
            await cdp.js("(() => { const v = document.getElementById('f-valid'); v.value = '';"
                         " v.dispatchEvent(new Event('change')); })()")
            out["unchanged_buttons"] = await cdp.js(
                "[...document.querySelectorAll('section.card')].filter(c => c.dataset.id.endsWith('::original'))"
                ".map(c => c.querySelectorAll('button').length)")
            await cdp.click("#export")
            out["csv"] = await cdp.js("document.getElementById('export-csv').value")
            out["href"] = await cdp.js("document.getElementById('download').getAttribute('href')")
            return out


def test_review_page_round_trips_decisions_in_headless_chromium(tmp_path):
    binary = _chromium()
    d = _star_subset(tmp_path)
    paths = run_variants(d, tmp_path / "out", dimensions=["politeness", "religion_name", "disability"],
                         progress=False)
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
        out = asyncio.run(_drive(paths["review"], port))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    v = pd.read_parquet(paths["variants"])
    assert out["n_cards"] == int((v["dimension"] != "original").sum())
    assert out["classes"] == ["card accepted", "card rejected", "card rejected"]
    assert out["n_rejected_shown"] == 2
    assert out["n_na_shown"] == int((~v["applicable"]).sum()) > 0 and out["na_buttons"] == 0
    assert out["unchanged_buttons"] and set(out["unchanged_buttons"]) == {0}  # nothing to decide on an unchanged row
    rows = list(csv.DictReader(io.StringIO(out["csv"])))
    a, b, c = out["ids"]
    assert rows == [{"variant_id": a, "decision": "accept"}, {"variant_id": b, "decision": "reject"},
                    {"variant_id": c, "decision": "reject"}]
    assert out["href"].startswith("data:text/csv")
    reviewed = tmp_path / "reviewed.csv"
    reviewed.write_text(out["csv"])
    again = pd.read_parquet(run_variants(d, tmp_path / "again", dimensions=["politeness", "religion_name",
                                                                           "disability"],
                                         decisions=reviewed, progress=False)["variants"]).set_index("variant_id")
    assert again.loc[[b, c], "rejection_reason"].eq("human review").all()
    assert again.loc[a, "valid"] and not again.loc[[b, c], "valid"].any()
    tab = rejection_table(again.reset_index())
    assert int(tab["n_rejected_human"].sum()) == 2
