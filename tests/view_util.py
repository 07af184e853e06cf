"""Shared by the view tests: decode a page's embedded data, and build a hostile results folder."""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import zlib
from pathlib import Path

import pandas as pd

import cfbench.studies.contact_center_qa  # noqa: F401  (registers its explorer: write_view finds the pairs)

REPO = Path(__file__).resolve().parents[1]
COMMITTED = {s: REPO / "results" / s / "default" for s in ("contact_center_qa", "shopflow", "identity_tone", "judge_bias")}


def pairs_of(folder):
    """The pairs the folder's study describes (through the study registry, as `cfbench view` does)."""
    from cfbench.studies import explorer_pairs

    return explorer_pairs(folder)

#: strings that would run script if any reached the page as markup or a URL
HOSTILE = [
    "<script>window.__pwned='script'</script>",
    "</script><script>window.__pwned='close'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "javascript:window.__pwned='url'",
    "<!-- <script>window.__pwned='comment'</script> -->",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "<a href=\"javascript:window.__pwned='a'\">click</a> & \u2028 \\u003c/script\\u003e",
]


def page_data(page: str) -> dict:
    """The decoded JSON payload of a view page."""
    m = re.search(r'<script type="application/json" id="cfbench-data">(.*?)</script>', page, re.S)
    box = json.loads(m.group(1))
    assert box["encoding"] == "gzip+base64"
    return json.loads(gzip.decompress(base64.b64decode(box["payload"])).decode("utf-8"))


def tiny_png() -> bytes:
    """A valid 1x1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"\x00\xff\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def hostile_cc_folder(d: Path, *, secret: str | None = None) -> dict:
    """A contact-center-shaped results folder whose every text field is hostile; returns what went in."""
    d.mkdir(parents=True, exist_ok=True)
    h = HOSTILE
    judge = "scripted:" + h[0]
    item = "item" + h[2]
    dim = "gender" + h[1]
    cond_b = "male" + h[3]
    base = [{"speaker": "agent", "text": "Hello, this is Ana. " + h[0]},
            {"speaker": "customer", "text": "My order " + h[1] + " is late."}]
    var = [{"speaker": "agent", "text": "Hello, this is Marco. " + h[0]},
           {"speaker": "customer", "text": "My order " + h[1] + " is late."}]
    variants = pd.DataFrame([
        {"variant_id": f"{item}::original", "item_id": item, "dimension": "original", "condition": "original",
         "turns": base, "header": None},
        {"variant_id": f"{item}::{dim}::{cond_b}", "item_id": item, "dimension": dim, "condition": cond_b,
         "turns": var, "header": h[4]},
    ])
    variants.to_parquet(d / "variants.parquet", index=False)
    reply_a = "Yes 90 " + h[2] + (f" key={secret}" if secret else "")
    reply_b = "No 80 " + h[5]
    rows = pd.DataFrame([
        dict(judge=judge, arm="baseline", task="qa", question_id="q" + h[6], item_id=item, dimension=dim,
             condition="original", variant_id=f"{item}::original", key="k1", answer="Yes", p_yes=0.9,
             confidence=90.0, score=None, parse_ok=True, evidence_rule_violated=None),
        dict(judge=judge, arm="baseline", task="qa", question_id="q" + h[6], item_id=item, dimension=dim,
             condition=cond_b, variant_id=f"{item}::{dim}::{cond_b}", key="k2", answer="No", p_yes=0.2,
             confidence=80.0, score=None, parse_ok=True, evidence_rule_violated=1.0),
    ])
    rows.to_parquet(d / "rows.parquet", index=False)
    pd.DataFrame([dict(judge=judge, key="k1", text=reply_a, parse_error=None),
                  dict(judge=judge, key="k2", text=reply_b, parse_error=h[3])]).to_parquet(
        d / "judgments.parquet", index=False)
    pd.DataFrame({h[0]: [h[1], h[2]], "plain": [h[3], h[5]]}).to_csv(d / "hostile_table.csv", index=False)
    (d / "fig_<img src=x onerror=\"window.__pwned='fig'\">.png").write_bytes(tiny_png())
    (d / "summary.json").write_text(json.dumps({h[0]: h[1], "params": {"x": h[2]}}), encoding="utf-8")
    (d / "run_info.json").write_text(json.dumps({"study": "contact_center_qa", "config": h[1], "replay": True,
                                                 "commit": h[3], "machine": h[2]}), encoding="utf-8")
    pair_id = f"{judge}|synthetic|baseline|qa|q{h[6]}|{item}|{dim}|original~{cond_b}"
    return {"pair_id": pair_id, "reply_a": reply_a, "reply_b": reply_b,
            "input_a": "Agent: Hello, this is Ana. " + h[0] + "\nCustomer: My order " + h[1] + " is late.",
            "input_b": h[4] + "\n\nAgent: Hello, this is Marco. " + h[0] + "\nCustomer: My order " + h[1]
                       + " is late."}
