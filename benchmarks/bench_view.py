"""The run explorer at scale (issue 24): page bytes and open time in headless Chromium vs judged rows.

Builds a contact-center-shaped results folder of ``N`` judged rows for each ``--rows`` size
(seeded synthetic transcripts of ``--turns`` turns; per item and question: the original plus
15 dimensions x (original + 2 conditions), judged by one judge with JSON replies; the
variants file the page diffs), writes its page with :func:`cfbench.view.write_view`, opens it
in headless Chromium over the DevTools protocol and measures:

* page bytes, bytes per judged row, and the growth exponent between sizes (<= 1: the page
  grows no faster than the data);
* open time: navigation until the page has decompressed its data and drawn the first page
  of pairs (the slowest of ``--repeats`` opens; target < 5 s at 100,000 rows);
* responsiveness at each size: one filter change, one sort by |delta P(Yes)|, one deep-link
  jump, each timed inside the page (target < 200 ms each, our choice: a click that answers
  within 0.2 s feels immediate);
* build time of the page in Python (reported, no target).

Every reply is distinct (``--reply-words`` words of rationale, default 40) and the transcripts
are drawn from a Zipf-weighted pseudo-vocabulary, so the compression is not flattered by
repetition the real data would not have.

The page is checked, not just timed: the pair count it shows must equal the number of pairs
the folder defines, and a deep link must open the pair it names.

Usage: ``python benchmarks/bench_view.py [--rows 1000 10000 100000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
from _common import header

from cfbench.studies.contact_center_qa import explorer_pairs
from cfbench.view import write_view
from cfbench.view.cdp import Chromium, chromium_path

OPEN_TARGET_S = 5.0
CLICK_TARGET_S = 0.2
DIMS = [f"dim{k:02d}" for k in range(15)]
_SYL = ("ba be bi bo ka ke ki ko la le li lo ma me mi mo na ne ni no pa pe pi po ra re ri ro sa se si so ta te "
        "ti to va ve vi vo an en in on ar er ir or st tr pl gr").split()


def _vocabulary(rng: np.random.Generator, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """Pseudo-words with Zipf-like frequencies (so the text compresses about as well as prose)."""
    words = np.array(["".join(rng.choice(_SYL, size=int(rng.integers(1, 4)))) for _ in range(n)])
    p = 1.0 / np.arange(1, n + 1)
    return words, p / p.sum()


def make_folder(n_rows: int, folder: Path, *, turns: int = 12, reply_words: int = 40, seed: int = 0) -> dict:
    """A contact-center-shaped folder with about ``n_rows`` judged rows; returns what it holds."""
    rng = np.random.default_rng(seed)
    WORDS, P = _vocabulary(rng)
    questions = ["issue_resolution", "work_avoidance", "empathy", "compliance"]
    per_item = len(questions) * (1 + len(DIMS) * 3)
    n_items = max(1, math.ceil(n_rows / per_item))
    variants, rows, judg = [], [], []
    names = ["Ana", "Marco", "Priya", "Wei", "Fatima", "John"]
    for it in range(n_items):
        item = f"it{it:05d}"
        base = []
        for t in range(turns):
            words = " ".join(rng.choice(WORDS, size=int(rng.integers(8, 20)), p=P))
            base.append({"speaker": "agent" if t % 2 == 0 else "customer",
                         "text": (f"Hello, this is {names[0]}. " if t == 0 else "") + words.capitalize() + "."})
        variants.append({"variant_id": f"{item}::original", "item_id": item, "dimension": "original",
                         "condition": "original", "turns": base, "header": None})
        for d, dim in enumerate(DIMS):
            for c in range(2):
                turns_v = [dict(x) for x in base]
                header = None
                if d % 3 == 0:
                    header = f"Agent profile: {dim} condition {c}"
                else:
                    turns_v[0]["text"] = turns_v[0]["text"].replace(names[0], names[1 + (d + c) % 5])
                    k = int(rng.integers(1, turns))
                    turns_v[k]["text"] = "Sure thing, " + turns_v[k]["text"].lower()
                variants.append({"variant_id": f"{item}::{dim}::c{c}", "item_id": item, "dimension": dim,
                                 "condition": f"c{c}", "turns": turns_v, "header": header})
    v = pd.DataFrame(variants)
    key = 0
    for it in range(n_items):
        item = f"it{it:05d}"
        for q in questions:
            conds = [("original", "original", f"{item}::original")]
            for dim in DIMS:
                conds.append((dim, "original", f"{item}::original"))
                conds += [(dim, f"c{c}", f"{item}::{dim}::c{c}") for c in range(2)]
            for dim, cond, vid in conds:
                key += 1
                p = float(np.clip(rng.normal(0.6, 0.2), 0.01, 0.99))
                ok = rng.random() > 0.01
                ans = "Yes" if p > 0.5 else "No"
                conf = int(rng.integers(50, 100))
                why = " ".join(rng.choice(WORDS, size=reply_words, p=P)) if reply_words else ""
                text = (json.dumps({"answer": ans, "confidence": conf, "rationale": why}) if ok
                        else "I think it depends. " + why)
                rows.append((item, q, dim, cond, vid, f"k{key}", ans if ok else None, p, conf if ok else None, ok))
                judg.append((f"k{key}", text, None if ok else "no JSON object in the reply"))
    r = pd.DataFrame(rows, columns=["item_id", "question_id", "dimension", "condition", "variant_id", "key",
                                    "answer", "p_yes", "confidence", "parse_ok"])
    r.insert(0, "judge", "local:bench-judge")
    r.insert(1, "arm", "baseline")
    r.insert(2, "task", "qa")
    j = pd.DataFrame(judg, columns=["key", "text", "parse_error"])
    j.insert(0, "judge", "local:bench-judge")
    folder.mkdir(parents=True, exist_ok=True)
    r.to_parquet(folder / "rows.parquet", index=False)
    j.to_parquet(folder / "judgments.parquet", index=False)
    v.to_parquet(folder / "variants.parquet", index=False)
    (folder / "run_info.json").write_text(json.dumps({"study": "contact_center_qa", "config": "bench",
                                                      "replay": True, "machine": "bench"}), encoding="utf-8")
    units = len(r[r["dimension"] != "original"].groupby(["item_id", "question_id", "dimension"]))
    n_pairs = int((r["dimension"] != "original").sum()) - units
    return {"rows": len(r), "pairs": n_pairs, "items": n_items, "variants": len(v)}


_CLICK = """(() => {{ const t0 = performance.now(); {body}; return performance.now() - t0; }})()"""


def measure(browser: Chromium, page: Path, facts: dict, repeats: int) -> dict:
    url = page.resolve().as_uri()
    opens = []
    for _ in range(repeats):
        browser.call("Page.navigate", {"url": "about:blank"})
        time.sleep(0.2)
        opens.append(browser.open(url))
    shown = browser.eval("document.getElementById('count').textContent")
    assert shown == f"{facts['pairs']} of {facts['pairs']} pairs shown", shown
    sel = ("const s = document.getElementById('{id}'); s.value = [...s.options].find(o => o.textContent === "
           "'{label}').value; s.dispatchEvent(new Event('change'))")
    # sort every pair, then filter the sorted list (each timed inside the page: recompute + first page drawn)
    sort = browser.eval(_CLICK.format(body=sel.format(id="sort", label="|\u0394 p_yes| largest first")))
    filt = browser.eval(_CLICK.format(body=sel.format(id="f-dimension", label="dim03")))
    n_filtered = browser.eval("document.getElementById('count').textContent")
    target = browser.eval("document.querySelectorAll('tr.pair-row')[7].dataset.id")
    jump = browser.eval(_CLICK.format(body="location.hash = 'pair=' + encodeURIComponent(" + json.dumps(target)
                                      + "); window.dispatchEvent(new HashChangeEvent('hashchange'))"))
    time.sleep(0.05)
    assert browser.eval("document.getElementById('detail').dataset.id") == target
    assert browser.eval("document.querySelectorAll('#detail pre.diff-b').length") == 1
    return {"open_s": max(opens), "opens": opens, "filter_ms": filt, "sort_ms": sort, "jump_ms": jump,
            "filtered": n_filtered}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--turns", type=int, default=12, help="turns per synthetic transcript")
    ap.add_argument("--reply-words", type=int, default=40, help="words of rationale in each (distinct) reply")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    header("bench_view: run explorer page bytes and open time vs judged rows")
    if chromium_path() is None:
        print("no Chromium installed: page sizes only")
    results = []
    with tempfile.TemporaryDirectory(prefix="cfbench-bench-view-") as tmp:
        browser = Chromium(timeout=120) if chromium_path() else None
        if browser:
            browser.start()
        try:
            for n in args.rows:
                folder = Path(tmp) / f"r{n}"
                t0 = time.perf_counter()
                facts = make_folder(n, folder, turns=args.turns, reply_words=args.reply_words)
                t1 = time.perf_counter()
                page = write_view(folder, folder / "view.html", pairs=explorer_pairs(folder))
                t2 = time.perf_counter()
                size = page.stat().st_size
                inputs = sum((folder / f).stat().st_size for f in ("rows.parquet", "judgments.parquet",
                                                                   "variants.parquet"))
                res = {"n": facts["rows"], "pairs": facts["pairs"], "variants": facts["variants"], "bytes": size,
                       "input_bytes": inputs, "build_s": t2 - t1, "make_s": t1 - t0}
                if browser:
                    res.update(measure(browser, page, facts, args.repeats))
                results.append(res)
                line = (f"rows {res['n']:>7,}  pairs {res['pairs']:>7,}  variants {res['variants']:>6,}  "
                        f"page {size / 1e6:7.2f} MB ({size / res['n']:6.0f} B/row; parquet inputs "
                        f"{inputs / 1e6:6.2f} MB)  build {res['build_s']:6.1f} s")
                if browser:
                    line += (f"  open (slowest) {res['open_s']:5.2f} s (runs {', '.join(f'{x:.2f}' for x in res['opens'])})"
                             f"  filter {res['filter_ms']:6.1f} ms  sort {res['sort_ms']:6.1f} ms"
                             f"  deep link {res['jump_ms']:5.1f} ms")
                print(line, flush=True)
        finally:
            if browser:
                browser.close()
    print()
    for a, b in zip(results, results[1:]):
        k = math.log(b["bytes"] / a["bytes"]) / math.log(b["n"] / a["n"])
        print(f"growth {a['n']:,} -> {b['n']:,} rows: page bytes x{b['bytes'] / a['bytes']:.2f} for data "
              f"x{b['n'] / a['n']:.2f}; exponent {k:.2f} (target <= 1)")
    for r in results:
        if "open_s" in r:
            worst = max(r["filter_ms"], r["sort_ms"], r["jump_ms"]) / 1000
            print(f"RATIO rows {r['n']:>7,}: open {r['open_s']:.2f} s / {OPEN_TARGET_S:.0f} s = "
                  f"{r['open_s'] / OPEN_TARGET_S:.3f}; slowest click {worst * 1000:.0f} ms / "
                  f"{CLICK_TARGET_S * 1000:.0f} ms = {worst / CLICK_TARGET_S:.3f}  (below 1 meets the target)")


if __name__ == "__main__":
    main()
