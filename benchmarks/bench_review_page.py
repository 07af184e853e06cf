"""The review page at scale (issue 23): bytes, build time, and open / first-render / interaction
times in headless Chromium at ~40,000 variants.

Variants come from a ``cfbench variants`` run (``--variants DIR/variants.parquet``) or are made
here from the STAR dialogues (``--star DIR``, all 665 give ~37k variants; that takes minutes).
When there are fewer than ``--n`` variants the frame is repeated with suffixed ids until it
has ``--n`` (stated in the output). The page is written, then opened in ``/usr/bin/chromium``
(DevTools protocol) and timed:

* open: navigation start -> the page's script has drawn its first page (``performance.now()``
  inside the page, so the browser's own start-up is not counted), and the wall time seen from
  outside (navigate -> ready);
* interaction: a filter change over all cards, and the next-page button, each as the time the
  synchronous redraw takes inside the page.

Targets (printed as ratios, <= 1 met): page bytes <= 15 MB (the old one-shot page was 14.8 MB at
37,465 variants), first render <= 3,000 ms, filter <= 250 ms, next page <= 100 ms.

Usage: ``python benchmarks/bench_review_page.py [--star ../shared/data/star/dialogues]
[--variants out/variants.parquet] [--n 40000] [--limit 665]``
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _common import REPO, header

import pandas as pd

TARGETS = {"page_mb": 15.0, "first_render_ms": 3000.0, "filter_ms": 250.0, "next_page_ms": 100.0}


def load_frame(args) -> tuple[pd.DataFrame, list]:
    from cfbench.io.star import load_star
    from cfbench.perturb import make_variants

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ts = load_star(args.star, limit=args.limit, skip_empty=True)
    if args.variants:
        v = pd.read_parquet(args.variants)
    else:
        t0 = time.perf_counter()
        v = make_variants(ts, seed=0, progress=True)
        print(f"made {len(v):,} variant rows from {len(ts)} dialogues in {time.perf_counter() - t0:.0f} s")
    return v, ts


def grow(v: pd.DataFrame, n: int) -> tuple[pd.DataFrame, int]:
    """``v`` repeated (ids suffixed ``#k``) and cut so that it has ``n`` non-original rows (or all of
    ``v`` when it has more)."""
    base = int((v["dimension"] != "original").sum())
    if base >= n:
        return v, 1
    copies, k = [v], 1
    while base * k < n:
        c = v.copy()
        c["variant_id"] = c["variant_id"] + f"#{k}"
        c["item_id"] = c["item_id"] + f"#{k}"
        copies.append(c)
        k += 1
    out = pd.concat(copies, ignore_index=True)
    keep = (out["dimension"] != "original").cumsum() <= n
    return out[keep].reset_index(drop=True), k


async def _time_page(page: Path, port: int) -> dict:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json()
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with http.ws_connect(ws_url, max_msg_size=0) as ws:
            n = 0

            async def call(method: str, **params):
                nonlocal n
                n += 1
                await ws.send_json({"id": n, "method": method, "params": params})
                while True:
                    msg = await ws.receive_json(timeout=120)
                    if msg.get("id") == n:
                        return msg.get("result", {})

            async def js(expr: str):
                r = await call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
                return r.get("result", {}).get("value")

            await call("Page.enable")
            t0 = time.perf_counter()
            await call("Page.navigate", url=page.as_uri())
            while not await js("!!(document.body && document.body.dataset.ready === '1')"):
                await asyncio.sleep(0.02)
            wall = (time.perf_counter() - t0) * 1000
            out = {"first_render_ms": float(await js("Number(document.body.dataset.readyMs)")),
                   "outside_wall_ms": wall,
                   "cards_drawn": await js("document.querySelectorAll('section.card').length"),
                   "first_status": await js("[...document.querySelectorAll('section.card')].slice(0, 20)"
                                            ".map(c => c.querySelector('[class^=st-]').textContent)")}
            out["filter_ms"] = await js("(() => { const s = document.getElementById('f-valid'); s.value = 'na';"
                                        " const t = performance.now(); s.dispatchEvent(new Event('change'));"
                                        " const d = performance.now() - t; s.value = '';"
                                        " s.dispatchEvent(new Event('change')); return d; })()")
            out["next_page_ms"] = await js("(() => { const t = performance.now();"
                                           " document.getElementById('next').click(); return performance.now() - t; })()")
            out["count_line"] = await js("document.getElementById('count').textContent")
            return out


def open_in_chromium(page: Path) -> dict | None:
    binary = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if binary is None:
        return None
    # Chromium's helper processes can still write into the profile for a moment after the browser exits; a
    # profile folder left in the temp dir must not fail the benchmark (a CI run failed on 'Default' not empty).
    with tempfile.TemporaryDirectory(prefix="cfbench-chromium-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                 f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            for _ in range(300):
                if port_file.exists() and port_file.read_text().strip():
                    break
                time.sleep(0.1)
            port = int(port_file.read_text().split()[0])
            return asyncio.run(_time_page(page, port))
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--star", default=str(REPO.parent / "shared" / "data" / "star" / "dialogues"))
    ap.add_argument("--variants", help="variants.parquet of a `cfbench variants` run over --star")
    ap.add_argument("--limit", type=int, default=None, help="dialogues to use (default: all)")
    ap.add_argument("--n", type=int, default=40000, help="variants on the page")
    args = ap.parse_args()
    from cfbench.perturb.review import review_html

    header("review page at scale")
    v, ts = load_frame(args)
    v, copies = grow(v, args.n)
    n_cards = int((v["dimension"] != "original").sum())
    t0 = time.perf_counter()
    page_text = review_html(v, ts, title="bench")
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "review.html"
        page.write_text(page_text, encoding="utf-8")
        size = page.stat().st_size
        print(f"{n_cards:,} variants on the page ({len(ts)} STAR dialogues"
              f"{f', frame repeated x{copies} with suffixed ids' if copies > 1 else ''})")
        print(f"  page {size / 1e6:.1f} MB ({size / n_cards:.0f} bytes per variant), built in {build_s:.1f} s")
        timing = open_in_chromium(page)
    ratios = {"page_mb": size / 1e6 / TARGETS["page_mb"]}
    if timing is None:
        print("  chromium not found: browser timings skipped")
    else:
        print(f"  headless Chromium: first page drawn {timing['first_render_ms']:.0f} ms after navigation start "
              f"(outside wall {timing['outside_wall_ms']:.0f} ms), {timing['cards_drawn']} cards drawn")
        print(f"  first statuses shown: {', '.join(dict.fromkeys(timing['first_status']))}")
        print(f"  filter over all cards {timing['filter_ms']:.1f} ms, next page {timing['next_page_ms']:.1f} ms; "
              f"'{timing['count_line']}'")
        for k in ("first_render_ms", "filter_ms", "next_page_ms"):
            ratios[k] = timing[k] / TARGETS[k]
    for k, r in ratios.items():
        print(f"  RATIO {k} / target {TARGETS[k]:g} = {r:.2f}  ({'met' if r <= 1 else 'NOT met'})")


if __name__ == "__main__":
    main()
