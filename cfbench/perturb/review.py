"""A self-contained review page for a variants frame (``review.html``, no network).

The page shows, per variant, the changed turns side by side (original | variant)
with the word-level edits highlighted (``<del>`` / ``<ins>``), the header of a
metadata variant, and the guard's verdict. Filters: dimension, validity,
decision. Each variant has Accept / Reject buttons; "Export decisions" writes a
CSV (``variant_id,decision``) to the page's text box and offers it as a
download (a ``data:`` link, so nothing leaves the machine). Decisions are kept
in ``localStorage`` between reloads when the browser allows it.

Feed the exported CSV back with ``cfbench variants FILE --out DIR --decisions
reviewed.csv`` (or ``make_variants(..., decisions=...)``): rejected variants
become invalid with reason "human review" and count in Table 9's human column.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from typing import Any, Iterable, Mapping

import pandas as pd

from cfbench.io.transcripts import Transcript

__all__ = ["diff_html", "review_cards", "review_html"]

_PIECE = re.compile(r"\s+|\w+(?:['’\-]\w+)*|[^\w\s]")


def diff_html(before: str, after: str) -> tuple[str, str]:
    """Escaped HTML of both texts with removed words in ``<del>`` and added words in ``<ins>``.

    >>> diff_html("May I have your name?", "What is your name?")
    ('<del>May I have</del> your name?', '<ins>What is</ins> your name?')
    """
    a, b = _PIECE.findall(before), _PIECE.findall(after)
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    left, right = [], []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        x, y = html.escape("".join(a[i1:i2])), html.escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(x)
            right.append(y)
            continue
        if x:
            left.append(f"<del>{x}</del>")
        if y:
            right.append(f"<ins>{y}</ins>")
    return "".join(left), "".join(right)


def review_cards(variants: pd.DataFrame, transcripts: Iterable[Transcript]) -> list[dict[str, Any]]:
    """One card per non-original variant row: what the page renders (plain data, escaped HTML)."""
    by_id = {t.id: t for t in transcripts}
    cards = []
    for _, r in variants.iterrows():
        if r["dimension"] == "original":
            continue
        rows = []
        edits = r["edits"] if isinstance(r["edits"], list) else []
        for e in edits:
            if e.get("op") == "insert":
                rows.append({"turn": int(e["turn"]), "speaker": e["speaker"], "kind": "insert", "before": "",
                             "after": f"<ins>{html.escape(e['after'])}</ins>"})
            else:
                b, a = diff_html(e["before"], e["after"])
                rows.append({"turn": int(e["turn"]), "speaker": e["speaker"], "kind": "replace", "before": b,
                             "after": a})
        header = r["header"] if isinstance(r["header"], str) else ""
        t = by_id.get(r["item_id"])
        status = "na" if not bool(r["applicable"]) else ("valid" if bool(r["valid"]) else "invalid")
        unchanged = bool(r["applicable"]) and r["operation"] == "none"
        cards.append({"id": r["variant_id"], "item": r["item_id"], "dimension": r["dimension"],
                      "condition": r["condition"], "status": status,
                      "reason": str(r["rejection_reason"] or r["reason"] or ""),
                      "perturber": str(r.get("perturber", "") or ""), "rejected_by": str(r.get("rejected_by", "") or ""),
                      "header": html.escape(header), "rows": rows, "unchanged": unchanged, "n_turns": len(t.turns) if t else None})
    return cards


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>cfbench variant review: __TITLE__</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;padding:0 1rem 3rem;color:#222}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:.5rem 0;z-index:2}
.card{border:1px solid #ccc;border-radius:6px;margin:.8rem 0;padding:.5rem .8rem}
.card.accepted{border-color:#2a7;background:#f3fbf6}.card.rejected{border-color:#c33;background:#fdf3f3}
.meta{font-size:12px;color:#555}.st-valid{color:#2a7}.st-invalid{color:#c33}.st-na{color:#888}
table.diff{width:100%;border-collapse:collapse;table-layout:fixed;margin:.4rem 0}
table.diff td,table.diff th{border-top:1px solid #eee;padding:.25rem .4rem;vertical-align:top;text-align:left;white-space:pre-wrap}
table.diff th{width:5.5em;font-weight:normal;color:#666}
del{background:#fcc;text-decoration:line-through}ins{background:#bfb;text-decoration:none}
pre.header{background:#f6f6f6;padding:.4rem;white-space:pre-wrap}
button{margin-right:.4rem}#export-csv{width:100%;height:6em}
</style></head><body>
<header>
<strong>Variant review</strong> <span class="meta">__TITLE__ &middot; <span id="count"></span></span><br>
<label>Dimension <select id="f-dim"><option value="">all</option></select></label>
<label>Validity <select id="f-valid"><option value="">all</option><option value="valid">valid</option>
<option value="invalid">invalid</option><option value="na">not applicable</option></select></label>
<label>Decision <select id="f-dec"><option value="">all</option><option value="none">undecided</option>
<option value="accept">accepted</option><option value="reject">rejected</option></select></label>
<button id="export">Export decisions</button> <a id="download" download="decisions.csv" hidden>decisions.csv</a>
<textarea id="export-csv" readonly placeholder="exported CSV appears here"></textarea>
</header>
<main id="cards"></main>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const CARDS = JSON.parse(document.getElementById("data").textContent);
const KEY = "cfbench-review:" + __RUN__;
let decisions = {};
try { decisions = JSON.parse(localStorage.getItem(KEY) || "{}"); } catch (e) { decisions = {}; }
function save() { try { localStorage.setItem(KEY, JSON.stringify(decisions)); } catch (e) {} }
function el(tag, attrs, html) { const x = document.createElement(tag); Object.assign(x, attrs || {}); if (html !== undefined) x.innerHTML = html; return x; }
function render() {
  const dim = document.getElementById("f-dim").value, val = document.getElementById("f-valid").value,
        dec = document.getElementById("f-dec").value, main = document.getElementById("cards");
  main.textContent = "";
  let shown = 0;
  for (const c of CARDS) {
    const d = decisions[c.id] || "none";
    if ((dim && c.dimension !== dim) || (val && c.status !== val) || (dec && d !== dec)) continue;
    shown++;
    const card = el("section", {className: "card" + (d === "accept" ? " accepted" : d === "reject" ? " rejected" : "")});
    card.dataset.id = c.id;
    card.appendChild(el("div", {className: "meta"},
      "<b>" + c.dimension + " / " + c.condition + "</b> &middot; " + c.item + " &middot; <span class='st-" + c.status + "'>" +
      (c.status === "na" ? "not applicable" : c.status) + "</span>" + (c.reason ? " &middot; " + escapeText(c.reason) : "") +
      (c.perturber ? " &middot; " + escapeText(c.perturber) : "") + " &middot; decision: <span class='dec'>" + d + "</span>"));
    if (c.header) card.appendChild(el("pre", {className: "header"}, "<ins>" + c.header + "</ins>"));
    if (c.rows.length) {
      const t = el("table", {className: "diff"});
      t.appendChild(el("tr", {}, "<th>turn</th><th>original</th><th>variant</th>"));
      for (const r of c.rows) t.appendChild(el("tr", {}, "<th>" + r.turn + " " + r.speaker + (r.kind === "insert" ? " (new)" : "") +
        "</th><td>" + r.before + "</td><td>" + r.after + "</td>"));
      card.appendChild(t);
    } else if (!c.header) { card.appendChild(el("div", {className: "meta"},
      c.unchanged ? "identical to the original (the comparison condition): nothing to review" : "no change to the turns")); }
    if (c.status !== "na" && !c.unchanged) {
      for (const [label, value] of [["Accept", "accept"], ["Reject", "reject"]]) {
        const b = el("button", {className: value, textContent: label});
        b.addEventListener("click", () => { decisions[c.id] = value; save(); render(); });
        card.appendChild(b);
      }
    }
    main.appendChild(card);
  }
  document.getElementById("count").textContent = shown + " of " + CARDS.length + " variants shown, " +
    Object.keys(decisions).length + " decided";
}
function escapeText(s) { const d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
function csvCell(s) { return /[",\\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; }
function exportCsv() {
  const lines = ["variant_id,decision"];
  for (const c of CARDS) if (decisions[c.id]) lines.push(csvCell(c.id) + "," + decisions[c.id]);
  const text = lines.join("\\n") + "\\n";
  document.getElementById("export-csv").value = text;
  const a = document.getElementById("download");
  a.href = "data:text/csv;charset=utf-8," + encodeURIComponent(text); a.hidden = false;
  return text;
}
const dims = [...new Set(CARDS.map(c => c.dimension))];
for (const d of dims) document.getElementById("f-dim").appendChild(el("option", {value: d, textContent: d}));
for (const id of ["f-dim", "f-valid", "f-dec"]) document.getElementById(id).addEventListener("change", render);
document.getElementById("export").addEventListener("click", exportCsv);
render();
</script></body></html>
"""


def review_html(variants: pd.DataFrame, transcripts: Iterable[Transcript], *, title: str = "variants") -> str:
    """The review page as one HTML string (inline CSS and JS, data embedded, no external resource)."""
    cards = review_cards(variants, transcripts)
    data = json.dumps(cards, ensure_ascii=False).replace("</", "<\\/")
    run = json.dumps(title + ":" + str(len(cards)))
    return (_PAGE.replace("__TITLE__", html.escape(title)).replace("__RUN__", run)
            .replace("__DATA__", data))
