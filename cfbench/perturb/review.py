"""A self-contained review page for a variants frame (``review.html``, no network).

The page shows, per variant, the changed turns side by side (original | variant)
with the word-level edits highlighted (``<del>`` / ``<ins>``), the header of a
metadata variant, and the guard's verdict. Filters: dimension, validity,
decision. Each variant has Accept / Reject buttons; "Export decisions" writes a
CSV (``variant_id,decision``) to the page's text box and offers it as a
download (a ``data:`` link, so nothing leaves the machine). Decisions are kept
in ``localStorage`` between reloads when the browser allows it.

Safety: nothing from the data ever becomes markup or script. The cards travel as
JSON inside a non-executable ``<script type="application/json">`` block (``<``,
``>`` and ``&`` written as ``\\u`` escapes, so no ``</script>`` or ``<!--`` can
close it) and are drawn with DOM calls and ``textContent`` only, never
``innerHTML``. The page's Content-Security-Policy allows its one inline script
and style by SHA-256 hash (no ``'unsafe-inline'``), nothing else. Exported CSV
cells that a spreadsheet would run as a formula (leading ``=``, ``+``, ``-``,
``@``, tab or carriage return) are prefixed with ``'``; reading the decisions
back undoes that prefix.

Scale: cards are ordered reviewable first (changed and applicable), then the
unchanged comparison rows, then "not applicable" ones; the page draws one page
of ``PAGE_SIZE`` cards at a time, so 40,000 variants open as fast as 100.

Feed the exported CSV back with ``cfbench variants FILE --out DIR --decisions
reviewed.csv`` (or ``make_variants(..., decisions=...)``): rejected variants
become invalid with reason "human review" and count in Table 9's human column.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import json
import re
from typing import Any, Iterable

import pandas as pd

from cfbench.core.text import neutralise_cell
from cfbench.io.transcripts import Transcript

__all__ = ["diff_html", "diff_segments", "review_cards", "review_html", "PAGE_SIZE", "neutralise_cell"]

#: Cards drawn per page of the review page.
PAGE_SIZE = 100

_PIECE = re.compile(r"\s+|\w+(?:['’\-]\w+)*|[^\w\s]")


def diff_html(before: str, after: str) -> tuple[str, str]:
    """Escaped HTML of both texts with removed words in ``<del>`` and added words in ``<ins>``.

    >>> diff_html("May I have your name?", "What is your name?")
    ('<del>May</del> <del>I have</del> your name?', '<ins>What</ins> <ins>is</ins> your name?')
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



def diff_segments(before: str, after: str) -> tuple[list, list]:
    """Both texts as plain-text segments: a string is unchanged text, a one-element list ``[text]``
    is removed (left) or added (right) text. The page draws them with ``textContent``.

    >>> diff_segments("May I have your name?", "What is your name?")
    ([['May'], ' ', ['I have'], ' your name?'], [['What'], ' ', ['is'], ' your name?'])
    """
    a, b = _PIECE.findall(before), _PIECE.findall(after)
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    left: list = []
    right: list = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        x, y = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(x)
            right.append(y)
            continue
        if x:
            left.append([x])
        if y:
            right.append([y])
    return left, right


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _rank(card: dict[str, Any]) -> int:
    """0 reviewable (applicable and changed), 1 unchanged comparison rows, 2 not applicable."""
    if card["status"] == "na":
        return 2
    return 1 if card["unchanged"] else 0


def review_cards(variants: pd.DataFrame, transcripts: Iterable[Transcript]) -> list[dict[str, Any]]:
    """One card per non-original variant row, reviewable ones first (then unchanged rows, then
    not-applicable ones; the frame's order within each). Plain data: every value is text the page
    draws with ``textContent``; diffs are :func:`diff_segments`."""
    by_id = {t.id: t for t in transcripts}
    cards = []
    cols = list(variants.columns)
    for row in variants.itertuples(index=False, name=None):
        r = dict(zip(cols, row))
        if r["dimension"] == "original":
            continue
        rows = []
        edits = r["edits"] if isinstance(r["edits"], (list, tuple)) or hasattr(r["edits"], "tolist") else []
        if hasattr(edits, "tolist"):
            edits = edits.tolist()
        for e in edits:
            if e.get("op") == "insert":
                rows.append([int(e["turn"]), _text(e["speaker"]), "insert", [], [[_text(e["after"])]]])
            else:
                b, a = diff_segments(_text(e["before"]), _text(e["after"]))
                rows.append([int(e["turn"]), _text(e["speaker"]), "replace", b, a])
        t = by_id.get(r["item_id"])
        status = "na" if not bool(r["applicable"]) else ("valid" if bool(r["valid"]) else "invalid")
        unchanged = bool(r["applicable"]) and r["operation"] == "none"
        cards.append({"id": _text(r["variant_id"]), "item": _text(r["item_id"]), "dimension": _text(r["dimension"]),
                      "condition": _text(r["condition"]), "status": status,
                      "reason": _text(r.get("rejection_reason") or r.get("reason") or ""),
                      "perturber": _text(r.get("perturber", "") or ""),
                      "rejected_by": _text(r.get("rejected_by", "") or ""),
                      "header": _text(r["header"]) if isinstance(r["header"], str) else "", "rows": rows,
                      "unchanged": unchanged, "n_turns": len(t.turns) if t else None})
    order = sorted(range(len(cards)), key=lambda i: (_rank(cards[i]), i))
    return [cards[i] for i in order]


#: What a spreadsheet reads as the start of a formula.
def _json_for_script(obj: Any) -> str:
    """JSON that cannot end its ``<script>`` block or open a comment: ``<``, ``>``, ``&`` and the
    two JavaScript line separators are written as ``\\u`` escapes (JSON.parse reads them back)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


_STYLE = """
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
button{margin-right:.4rem}#export-csv{width:100%;height:6em}#pager{margin:.3rem 0}
"""

# The one script. It reads the JSON block, and builds every node with createElement + textContent.
_SCRIPT = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const CARDS = DATA.cards, PAGE = DATA.page_size;
const KEY = "cfbench-review:" + DATA.run;
let decisions = {};
try { decisions = JSON.parse(localStorage.getItem(KEY) || "{}") || {}; } catch (e) { decisions = {}; }
if (typeof decisions !== "object" || Array.isArray(decisions)) decisions = {};
let page = 0, shown = [];
function save() { try { localStorage.setItem(KEY, JSON.stringify(decisions)); } catch (e) {} }
function node(tag, cls, text) {
  const x = document.createElement(tag);
  if (cls) x.className = cls;
  if (text !== undefined) x.textContent = String(text);
  return x;
}
function add(parent, ...kids) { for (const k of kids) parent.appendChild(typeof k === "string" ? document.createTextNode(k) : k); return parent; }
function segments(cell, segs, tag) {
  for (const s of segs) add(cell, Array.isArray(s) ? node(tag, "", s[0]) : s);
  return cell;
}
function decisionOf(c) { return Object.prototype.hasOwnProperty.call(decisions, c.id) ? decisions[c.id] : "none"; }
function card(c) {
  const d = decisionOf(c);
  const box = node("section", "card" + (d === "accept" ? " accepted" : d === "reject" ? " rejected" : ""));
  box.dataset.id = c.id;
  const meta = node("div", "meta");
  add(meta, node("b", "", c.dimension + " / " + c.condition), " \u00b7 ", node("span", "item", c.item), " \u00b7 ",
      node("span", "st-" + (c.status === "valid" || c.status === "invalid" ? c.status : "na"),
           c.status === "na" ? "not applicable" : c.status));
  if (c.reason) add(meta, " \u00b7 ", node("span", "reason", c.reason));
  if (c.perturber) add(meta, " \u00b7 ", node("span", "perturber", c.perturber));
  add(meta, " \u00b7 decision: ", node("span", "dec", d));
  box.appendChild(meta);
  if (c.header) box.appendChild(add(node("pre", "header"), node("ins", "", c.header)));
  if (c.rows.length) {
    const t = node("table", "diff");
    add(t, add(node("tr"), node("th", "", "turn"), node("th", "", "original"), node("th", "", "variant")));
    for (const [turn, speaker, kind, before, after] of c.rows) {
      add(t, add(node("tr"), node("th", "", turn + " " + speaker + (kind === "insert" ? " (new)" : "")),
                 segments(node("td"), before, "del"), segments(node("td"), after, "ins")));
    }
    box.appendChild(t);
  } else if (!c.header) {
    box.appendChild(node("div", "meta", c.unchanged ? "identical to the original (the comparison condition): nothing to review"
                                                    : "no change to the turns"));
  }
  if (c.status !== "na" && !c.unchanged) {
    for (const [label, value] of [["Accept", "accept"], ["Reject", "reject"]]) {
      const b = node("button", value, label);
      b.type = "button";
      b.addEventListener("click", () => { decisions[c.id] = value; save(); draw(); });
      box.appendChild(b);
    }
  }
  return box;
}
function filter() {
  const dim = document.getElementById("f-dim").value, val = document.getElementById("f-valid").value,
        dec = document.getElementById("f-dec").value;
  shown = [];
  for (let i = 0; i < CARDS.length; i++) {
    const c = CARDS[i];
    if (dim && c.dimension !== dim) continue;
    if (val === "reviewable" ? (c.status === "na" || c.unchanged) : (val && c.status !== val)) continue;
    if (dec && decisionOf(c) !== dec) continue;
    shown.push(i);
  }
  page = 0;
  draw();
}
function draw() {
  const main = document.getElementById("cards");
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  if (page >= pages) page = pages - 1;
  main.textContent = "";
  const frag = document.createDocumentFragment();
  for (const i of shown.slice(page * PAGE, (page + 1) * PAGE)) frag.appendChild(card(CARDS[i]));
  main.appendChild(frag);
  document.getElementById("count").textContent = shown.length + " of " + CARDS.length + " variants match, " +
    Object.keys(decisions).length + " decided";
  document.getElementById("page-no").textContent = "page " + (page + 1) + " of " + pages;
  document.getElementById("prev").disabled = page === 0;
  document.getElementById("next").disabled = page >= pages - 1;
}
function csvCell(s) {
  s = String(s);
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
function exportCsv() {
  const lines = ["variant_id,decision"];
  for (const c of CARDS) {
    const d = decisionOf(c);
    if (d === "accept" || d === "reject") lines.push(csvCell(c.id) + "," + d);
  }
  const text = lines.join("\n") + "\n";
  document.getElementById("export-csv").value = text;
  const a = document.getElementById("download");
  a.href = "data:text/csv;charset=utf-8," + encodeURIComponent(text); a.hidden = false;
  return text;
}
document.getElementById("run-title").textContent = DATA.title;
for (const d of [...new Set(CARDS.map(c => c.dimension))]) {
  const o = node("option", "", d); o.value = d; document.getElementById("f-dim").appendChild(o);
}
for (const id of ["f-dim", "f-valid", "f-dec"]) document.getElementById(id).addEventListener("change", filter);
document.getElementById("prev").addEventListener("click", () => { page--; draw(); window.scrollTo(0, 0); });
document.getElementById("next").addEventListener("click", () => { page++; draw(); window.scrollTo(0, 0); });
document.getElementById("export").addEventListener("click", exportCsv);
filter();
document.body.dataset.readyMs = String(Math.round(performance.now()));
document.body.dataset.ready = "1";
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src __SCRIPT_HASH__; \
style-src __STYLE_HASH__; img-src data:; base-uri 'none'; form-action 'none'">
<title>cfbench variant review: __TITLE__</title>
<style>__STYLE__</style></head><body>
<header>
<strong>Variant review</strong> <span class="meta"><span id="run-title"></span> &middot; <span id="count"></span></span><br>
<label>Dimension <select id="f-dim"><option value="">all</option></select></label>
<label>Validity <select id="f-valid"><option value="">all</option><option value="reviewable">to review</option>
<option value="valid">valid</option><option value="invalid">invalid</option><option value="na">not applicable</option></select></label>
<label>Decision <select id="f-dec"><option value="">all</option><option value="none">undecided</option>
<option value="accept">accepted</option><option value="reject">rejected</option></select></label>
<button id="export" type="button">Export decisions</button> <a id="download" download="decisions.csv" hidden>decisions.csv</a>
<div id="pager"><button id="prev" type="button">&larr; previous</button> <span id="page-no"></span>
<button id="next" type="button">next &rarr;</button></div>
<textarea id="export-csv" readonly placeholder="exported CSV appears here"></textarea>
</header>
<main id="cards"></main>
<script type="application/json" id="data">__DATA__</script>
<script>__SCRIPT__</script></body></html>
"""


def review_html(variants: pd.DataFrame, transcripts: Iterable[Transcript], *, title: str = "variants",
                page_size: int = PAGE_SIZE) -> str:
    """The review page as one HTML string (inline CSS and JS, data embedded as inert JSON, no
    external resource, a CSP that runs only the page's own script)."""
    cards = review_cards(variants, transcripts)
    data = _json_for_script({"title": str(title), "run": f"{title}:{len(cards)}", "page_size": int(page_size),
                             "cards": cards})
    return (_PAGE.replace("__SCRIPT_HASH__", _sha256(_SCRIPT)).replace("__STYLE_HASH__", _sha256(_STYLE))
            .replace("__TITLE__", html.escape(str(title), quote=True)).replace("__STYLE__", _STYLE)
            .replace("__SCRIPT__", _SCRIPT).replace("__DATA__", data))
