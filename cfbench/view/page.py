"""Build the run explorer page of a results folder (``view.html``).

Reading: a results folder is recognised by the files its study writes
(``run_info.json``'s ``study`` first, then the files themselves):

* contact center (``rows.parquet`` + ``judgments.parquet``): one pair per judge x arm x
  task x question x item x dimension and compared condition, against the unit's
  ``original`` condition (or its first condition when the unit has no original, e.g. the
  robustness repeats); replies from ``judgments.parquet`` by cache key; the inputs (rendered
  transcripts) from ``variants.parquet`` when the run wrote one;
* ShopFlow (``judged_rows.csv``): one pair per ``pair_id`` (the two wordings), routes and
  P(ready); request and reply texts from ``request``/``reply`` columns or a
  ``judged_pairs.csv``/``pairs.jsonl`` beside it when present;
* identity tone (``fresh_responses.csv`` + ``fresh_variants.csv``): one pair per model x
  prompt x identity pair (the pairs of ``fresh_pairs_described.csv``), user texts diffed,
  both replies, refusal class; per-response tone scores from ``fresh_scores_described.csv``
  when present.

Anything else gets the tables, figures and provenance only. What a folder lacks is said on
the page (``notes``), never filled in.

Writing: the data travel as JSON inside ``<script type="application/json">`` (gzip +
base64, ``<``, ``>`` and ``&`` escaped as ``\\u003c`` etc.), rendered by one inline script
whose SHA-256 is the only script the page's Content-Security-Policy allows
(``default-src 'none'``: no network, no other script). The script builds every element with
DOM calls and ``textContent``; no data string ever reaches ``innerHTML``.
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import html
import io
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.paths import package_text
from cfbench.core.secrets import credentials, echoed_credential, scrub_secrets
from cfbench.core.text import csv_text

__all__ = ["ViewPage", "build_payload", "load_pairs_any", "view_html", "write_view", "diff_segments",
           "write_inputs", "INPUT_FRAMES",
           "MAX_TABLE_ROWS", "PAGE_VERSION"]

PAGE_VERSION = 1
#: rows of one CSV table embedded in the page (the rest is counted, not shown)
MAX_TABLE_ROWS = 2000
_NUM_DIGITS = 6

# ---------------------------------------------------------------------------------------------
# diff: the review page's word-level diff, turned into plain segments (no HTML reaches the page)

_TAG = re.compile(r"(<del>.*?</del>|<ins>.*?</ins>)", re.S)


class _Segs:
    """Alternating segments under construction: even positions unchanged, odd positions changed."""

    def __init__(self) -> None:
        self.items = [""]

    def same(self, text: str) -> None:
        if not text:
            return
        if len(self.items) % 2 == 1:
            self.items[-1] += text
        else:
            self.items.append(text)

    def changed(self, text: str) -> None:
        if not text:
            return
        if len(self.items) % 2 == 0:
            self.items[-1] += text
        else:
            self.items.append(text)

    def extend(self, segs: Sequence[str]) -> None:
        for k, t in enumerate(segs):
            (self.same if k % 2 == 0 else self.changed)(t)


def diff_segments(before: str, after: str) -> tuple[list[str], list[str]]:
    """Word-level diff of two texts as alternating segments: ``[same, changed, same, changed, ...]``.

    Lines are matched first (a transcript's unchanged turns cost nothing); each replaced line is
    then diffed word by word with :func:`cfbench.perturb.review.diff_html` (the review page's
    diff), read back into plain text. Even positions are unchanged text, odd positions removed
    (left) or added (right) words; ``"".join(left) == before`` and ``"".join(right) == after``.

    >>> diff_segments("May I have your name?", "What is your name?")
    (['', 'May', ' ', 'I have', ' your name?'], ['', 'What', ' ', 'is', ' your name?'])
    """
    import difflib

    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    if len(a) <= 1 and len(b) <= 1:
        return _word_segments(before, after)
    left, right = _Segs(), _Segs()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.same("".join(a[i1:i2]))
            right.same("".join(b[j1:j2]))
        elif op == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2]):
                sl, sr = _word_segments(x, y)
                left.extend(sl)
                right.extend(sr)
        elif op == "replace":
            sl, sr = _word_segments("".join(a[i1:i2]), "".join(b[j1:j2]))
            left.extend(sl)
            right.extend(sr)
        else:
            left.changed("".join(a[i1:i2]))
            right.changed("".join(b[j1:j2]))
    return left.items, right.items


def _word_segments(before: str, after: str) -> tuple[list[str], list[str]]:
    from cfbench.perturb.review import diff_html

    left, right = diff_html(before, after)
    out = []
    for side in (left, right):
        segs = [""]
        for part in _TAG.split(side):
            if not part:
                continue
            if part.startswith(("<del>", "<ins>")) and part.endswith(("</del>", "</ins>")):
                segs.append(html.unescape(part[5:-6]))
                segs.append("")
            else:
                segs[-1] += html.unescape(part)
        if segs[-1] == "" and len(segs) > 1:
            segs.pop()
        out.append(segs)
    return out[0], out[1]


# ---------------------------------------------------------------------------------------------
# a columnar pairs frame -> the page's payload


class _Strings:
    """A string table: each distinct text stored once, referenced by index (-1 for none)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def add(self, s: Any) -> int:
        if s is None or (isinstance(s, float) and math.isnan(s)) or s is pd.NA:
            return -1
        s = str(s)
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i

    def many(self, values: Iterable[Any]) -> list[int]:
        return [self.add(v) for v in values]


def _num(values: Any) -> list[Any]:
    arr = pd.to_numeric(pd.Series(values), errors="coerce").astype(float).to_numpy()
    out: list[Any] = []
    for v in arr:
        if not math.isfinite(v):
            out.append(None)
        elif v == int(v) and abs(v) < 2**53:
            out.append(int(v))
        else:
            out.append(float(f"{v:.{_NUM_DIGITS}g}"))
    return out


def _strs(values: Any) -> list[Any]:
    return [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))) else str(v)
            for v in values]


def _codes(values: Sequence[Any]) -> dict[str, Any]:
    """A categorical column: distinct values (in first-seen order) and one code per row."""
    s = pd.Series(_strs(values), dtype=object).fillna("(none)")
    codes, uniques = pd.factorize(s, sort=False)
    return {"values": [str(u) for u in uniques], "codes": codes.astype(int).tolist()}


@dataclass
class PairFrame:
    """What a study adapter hands to the page builder (all lists have one entry per pair).

    ``facets``: name -> categorical values (filters); ``metrics``: (name, kind, a, b) with kind
    ``num`` or ``str``; ``flags``: name -> booleans (``flipped``, ``parse_fail``,
    ``evidence_violation``); ``inputs``: (a texts, b texts) diffed word by word, or None;
    ``blocks``: (label, a texts, b texts) shown side by side (replies); ``side_labels``: (a, b)
    condition names per pair.
    """

    ids: list[str]
    facets: dict[str, list[Any]]
    side_labels: tuple[list[Any], list[Any]]
    metrics: list[tuple[str, str, list[Any], list[Any]]]
    flags: dict[str, list[bool]]
    inputs: tuple[list[Any], list[Any]] | None
    blocks: list[tuple[str, list[Any], list[Any]]]
    notes: list[str]
    input_label: str = "input"
    same_input_note: str = "the two inputs are identical"

    def __len__(self) -> int:
        return len(self.ids)


def _unique_ids(ids: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        n = seen.get(i, 0)
        seen[i] = n + 1
        out.append(i if n == 0 else f"{i}#{n + 1}")
    return out


def _pairs_payload(p: PairFrame, strings: _Strings) -> dict[str, Any]:
    n = len(p)
    facets = [{"name": k, **_codes(v)} for k, v in p.facets.items()]
    metrics = []
    for name, kind, a, b in p.metrics:
        if kind == "num":
            metrics.append({"name": name, "kind": "num", "a": _num(a), "b": _num(b)})
        else:
            metrics.append({"name": name, "kind": "str", "a": strings.many(a), "b": strings.many(b)})
    flags = {k: [1 if bool(x) else 0 for x in v] for k, v in p.flags.items()}
    diff_index: list[int] = []
    diffs: list[list[int]] = []
    if p.inputs is not None:
        seen: dict[tuple[int, int], int] = {}
        for a, b in zip(*p.inputs):
            ia, ib = strings.add(a), strings.add(b)
            if ia < 0 or ib < 0:
                diff_index.append(-1)
                continue
            key = (ia, ib)
            j = seen.get(key)
            if j is None:
                left, right = diff_segments(str(a), str(b))
                j = seen[key] = len(diffs)
                diffs.append([strings.add(s) for s in left] + [-2] + [strings.add(s) for s in right])
            diff_index.append(j)
    blocks = [{"label": label, "a": strings.many(a), "b": strings.many(b)} for label, a, b in p.blocks]
    return {"n": n, "ids": list(p.ids), "facets": facets,
            "side_a": strings.many(p.side_labels[0]), "side_b": strings.many(p.side_labels[1]),
            "metrics": metrics, "flags": flags, "diff": diff_index, "diffs": diffs,
            "input_label": p.input_label, "same_input_note": p.same_input_note, "blocks": blocks}


# ---------------------------------------------------------------------------------------------
# study adapters (files only; no study is imported)


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=True)
    except Exception as exc:  # pandas' parser errors name no record; say the file
        raise InputError(f"cannot read as CSV: {' '.join(str(exc).split())[:200]}", source=str(path)) from None


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:
        raise InputError(f"cannot read as parquet: {' '.join(str(exc).split())[:200]}", source=str(path)) from None


def _need(frame: pd.DataFrame, cols: Sequence[str], source: Path) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", source=str(source), field=missing[0])


def _render_variant(row: Any, record: str) -> str | None:
    from cfbench.core.render import render_transcript

    turns = row.get("turns")
    if turns is None or (isinstance(turns, float) and math.isnan(turns)):
        return None
    turns = [dict(t) for t in list(turns)]
    if not turns:
        return None
    header = row.get("header")
    if isinstance(header, float) and math.isnan(header):
        header = None
    return render_transcript(turns, header if isinstance(header, (str, dict)) or header is None else str(header),
                             record=record)


def _cc_inputs(d: Path, rows: pd.DataFrame) -> tuple[dict[str, str] | None, list[str]]:
    path = d / "variants.parquet"
    if not path.exists():
        return None, ["Inputs: this run did not write variants.parquet, so the page shows no transcript diff "
                      "(replies, answers and flags are shown)."]
    v = _read_parquet(path)
    _need(v, ["variant_id", "item_id", "dimension", "turns"], path)
    texts: dict[str, str] = {}
    for rec in v.to_dict(orient="records"):
        t = _render_variant(rec, f"{path.name}: variant {rec['variant_id']}")
        if t is not None:
            texts[str(rec["variant_id"])] = t
    return texts, []


def _cc_pairs(d: Path) -> PairFrame:
    rp, jp = d / "rows.parquet", d / "judgments.parquet"
    rows = _read_parquet(rp)
    _need(rows, ["judge", "arm", "task", "question_id", "item_id", "dimension", "condition", "variant_id", "key"], rp)
    judg = _read_parquet(jp) if jp.exists() else None
    notes = [] if judg is not None else ["Replies: judgments.parquet is missing; answers are shown without replies."]
    unit = ["judge", "arm", "task", "question_id", "item_id", "dimension"]
    r = rows.reset_index(drop=True).copy()
    r = r[r["dimension"].astype(str) != "original"]
    r["_unit"] = r.groupby(unit, sort=False, dropna=False).ngroup()
    r["_notref"] = r["condition"].astype(str) != "original"
    r = r.sort_values(["_unit", "_notref", "condition"], kind="stable")
    first = ~r["_unit"].duplicated()
    ref = r[first].set_index("_unit")
    oth = r[~first]
    a = ref.loc[oth["_unit"].to_numpy()].reset_index(drop=True)
    b = oth.reset_index(drop=True)
    if judg is not None:
        _need(judg, ["judge", "key", "text"], jp)
        jt = judg.drop_duplicates(["judge", "key"]).set_index(["judge", "key"])
        extra = [c for c in ("parse_error", "parse_note") if c in jt.columns]

        def look(side: pd.DataFrame, col: str) -> list[Any]:
            idx = pd.MultiIndex.from_arrays([side["judge"], side["key"]])
            return jt[col].reindex(idx).tolist()

        reply_a, reply_b = look(a, "text"), look(b, "text")
        err_a = look(a, extra[0]) if extra else [None] * len(a)
        err_b = look(b, extra[0]) if extra else [None] * len(b)
        call_a = look(a, "error") if "error" in jt.columns else [None] * len(a)
        call_b = look(b, "error") if "error" in jt.columns else [None] * len(b)
    else:
        reply_a = reply_b = err_a = err_b = call_a = call_b = [None] * len(a)
    texts, more = _cc_inputs(d, rows)
    notes += more
    inputs = None
    if texts is not None:
        def text_of(side: pd.DataFrame) -> list[Any]:
            out = []
            for vid, item in zip(side["variant_id"].astype(str), side["item_id"].astype(str)):
                out.append(texts.get(vid, texts.get(f"{item}::original")))
            return out
        inputs = (text_of(a), text_of(b))
    ok_a = a["parse_ok"].fillna(False).astype(bool).to_numpy() if "parse_ok" in a else np.ones(len(a), bool)
    ok_b = b["parse_ok"].fillna(False).astype(bool).to_numpy() if "parse_ok" in b else np.ones(len(b), bool)
    both = ok_a & ok_b
    flipped = np.zeros(len(a), bool)
    if "answer" in a:
        aa, bb = a["answer"].astype(object), b["answer"].astype(object)
        has = aa.notna().to_numpy() & bb.notna().to_numpy()
        flipped |= both & has & (aa.astype(str).to_numpy() != bb.astype(str).to_numpy())
    if "score" in a:
        sa, sb = pd.to_numeric(a["score"], errors="coerce"), pd.to_numeric(b["score"], errors="coerce")
        has = sa.notna().to_numpy() & sb.notna().to_numpy()
        flipped |= both & has & (sa.to_numpy() != sb.to_numpy())
    flags = {"flipped": flipped.tolist(), "parse_fail": (~both).tolist()}
    if "evidence_rule_violated" in a:
        ev = (pd.to_numeric(a["evidence_rule_violated"], errors="coerce").fillna(0).to_numpy() > 0) | (
            pd.to_numeric(b["evidence_rule_violated"], errors="coerce").fillna(0).to_numpy() > 0)
        if a["evidence_rule_violated"].notna().any() or b["evidence_rule_violated"].notna().any():
            flags["evidence_violation"] = ev.tolist()
    metrics: list[tuple[str, str, list[Any], list[Any]]] = []
    for col, kind in (("answer", "str"), ("p_yes", "num"), ("confidence", "num"), ("score", "num"),
                      ("evidence_status", "num"), ("n_quotes_found", "num")):
        if col in a and (a[col].notna().any() or b[col].notna().any()):
            metrics.append((col, kind, a[col].tolist(), b[col].tolist()))
    metrics.append(("parsed", "str", ["yes" if x else "PARSE FAILURE" for x in ok_a],
                    ["yes" if x else "PARSE FAILURE" for x in ok_b]))
    for name, ea, eb in (("parse_error", err_a, err_b), ("call_error", call_a, call_b)):
        if any(e is not None and not (isinstance(e, float) and math.isnan(e)) for e in list(ea) + list(eb)):
            metrics.append((name, "str", ea, eb))
    facets: dict[str, list[Any]] = {"judge": b["judge"].tolist()}
    for col, name in (("arm", "arm"), ("task", "task")):
        if b[col].nunique(dropna=False) > 1:
            facets[name] = b[col].tolist()
    facets.update({"dimension": b["dimension"].tolist(), "question": b["question_id"].tolist(),
                   "item": b["item_id"].tolist(), "condition": b["condition"].tolist()})
    ids = _unique_ids([f"{j}|{arm}|{t}|{q}|{i}|{dim}|{ca}~{cb}" for j, arm, t, q, i, dim, ca, cb in zip(
        b["judge"], b["arm"], b["task"], b["question_id"], b["item_id"], b["dimension"], a["condition"],
        b["condition"])])
    return PairFrame(ids=ids, facets=facets, side_labels=(a["condition"].tolist(), b["condition"].tolist()),
                     metrics=metrics, flags=flags, inputs=inputs,
                     blocks=[("judge's reply", reply_a, reply_b)], notes=notes, input_label="transcript",
                     same_input_note="the two transcripts are identical: what differs is the request itself (a "
                                     "repeat, the temperature or the rubric's wording for the robustness rows)")


def _shopflow_texts(d: Path, jr: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    if "request" in jr.columns:
        return jr, []
    for name in ("judged_pairs.csv", "judged_pairs.parquet", "pairs.jsonl"):
        p = d / name
        if not p.exists():
            continue
        if p.suffix == ".csv":
            src = _read_csv(p)
        elif p.suffix == ".parquet":
            src = _read_parquet(p)
        else:
            try:
                src = pd.read_json(p, lines=True, dtype=False)
            except ValueError as exc:
                raise InputError(f"cannot read as JSONL: {' '.join(str(exc).split())[:200]}", source=str(p)) from None
        _need(src, ["pair_id", "variant", "request"], p)
        keep = [c for c in ("pair_id", "variant", "request", "reply", "channel", "expected_ready") if c in src.columns]
        src = src[keep].astype({"pair_id": str, "variant": str}).drop_duplicates(["pair_id", "variant"])
        src = src.rename(columns={"channel": "_channel", "expected_ready": "_expected_ready"})
        out = jr.merge(src, on=["pair_id", "variant"], how="left")
        for col in ("channel", "expected_ready"):  # rows of excluded pairs take them from the pairs file
            if f"_{col}" in out:
                out[col] = out[col].astype(object).where(out[col].notna(), out[f"_{col}"]) if col in out else out[f"_{col}"]
                out = out.drop(columns=[f"_{col}"])
        return out, []
    return jr, ["Inputs: judged_rows.csv holds no request text and no judged_pairs file is beside it, so the "
                "page shows routes, scores and the judge's reply without the wording diff."]


def _with_excluded(d: Path, jr: pd.DataFrame, variants: tuple[str, str]) -> pd.DataFrame:
    """Pairs the study excluded (an unparseable reply; ``judged_excluded.csv``) as parse-failure rows."""
    p = d / "judged_excluded.csv"
    if not p.exists():
        return jr
    ex = _read_csv(p)
    if ex.empty:
        return jr
    _need(ex, ["pair_id", "variant", "reason"], p)
    ex = ex.astype({"pair_id": str, "variant": str})
    have = set(jr["pair_id"])
    add = []
    for pid, g in ex.groupby("pair_id", sort=False):
        if pid in have:
            continue
        why = dict(zip(g["variant"], g["reason"].astype(str)))
        for v in variants:
            add.append({"pair_id": pid, "variant": v, "route": None,
                        "score_source": "parse_failure" if v in why else None,
                        "excluded": why.get(v, "excluded with its pair (the other wording's reply is unparseable)")})
    if not add:
        return jr
    return pd.concat([jr.assign(excluded=None), pd.DataFrame(add)], ignore_index=True)


def _shopflow_pairs(d: Path, summary: dict[str, Any]) -> PairFrame:
    p = d / "judged_rows.csv"
    jr = _read_csv(p)
    _need(jr, ["pair_id", "variant", "route"], p)
    jr = jr.astype({"pair_id": str, "variant": str})
    variants = list(dict.fromkeys(jr["variant"]))
    if len(variants) != 2:
        raise InputError(f"expected two wordings per pair, found {variants}", source=str(p), field="variant")
    va, vb = variants
    jr = _with_excluded(d, jr, (va, vb))
    jr, notes = _shopflow_texts(d, jr)
    a = jr[jr["variant"] == va].drop_duplicates("pair_id").set_index("pair_id")
    b = jr[jr["variant"] == vb].drop_duplicates("pair_id").set_index("pair_id")
    ids = [i for i in dict.fromkeys(jr["pair_id"]) if i in a.index and i in b.index]
    lone = sorted(set(jr["pair_id"]) - set(ids))
    if lone:
        notes.append(f"{len(lone)} pair(s) with one wording only are not shown: {', '.join(lone[:10])}")
    a, b = a.loc[ids], b.loc[ids]
    judge = str((summary.get("judged") or {}).get("judge") or "judge (not recorded)")

    def failed(side: pd.DataFrame) -> np.ndarray:
        bad = (np.array(pd.to_numeric(side["score"], errors="coerce").isna(), dtype=bool) if "score" in side
               else np.zeros(len(side), bool))
        if "score_source" in side:
            bad |= side["score_source"].isna().to_numpy() | (side["score_source"].astype(str) == "parse_failure").to_numpy()
        return bad

    fa, fb = failed(a), failed(b)
    flipped = (a["route"].astype(str).to_numpy() != b["route"].astype(str).to_numpy()) & ~fa & ~fb
    metrics: list[tuple[str, str, list[Any], list[Any]]] = [("route", "str", a["route"].tolist(), b["route"].tolist())]
    for col, kind in (("score", "num"), ("yes_no_mass", "num"), ("score_source", "str"), ("excluded", "str")):
        if col in a and (col != "excluded" or a[col].notna().any()):
            metrics.append((col, kind, a[col].tolist(), b[col].tolist()))
    facets: dict[str, list[Any]] = {"judge": [judge] * len(ids)}
    for col in ("channel", "expected_ready"):
        if col in a:
            facets[col] = a[col].tolist()
    facets["item"] = ids
    blocks = []
    if "reply" in a:
        blocks.append(("support reply (judged)", a["reply"].tolist(), b["reply"].tolist()))
    if "raw" in a:
        blocks.append(("judge's reply", a["raw"].tolist(), b["raw"].tolist()))
    if "review_note" in a:
        blocks.append(("review note", a["review_note"].tolist(), b["review_note"].tolist()))
    inputs = (a["request"].tolist(), b["request"].tolist()) if "request" in a else None
    return PairFrame(ids=list(ids), facets=facets, side_labels=([va] * len(ids), [vb] * len(ids)),
                     metrics=metrics, flags={"flipped": flipped.tolist(), "parse_fail": (fa | fb).tolist()},
                     inputs=inputs, blocks=blocks, notes=notes, input_label="request")


_ID_ATTRS = ("age", "gender", "nationality")


def _identity_pairs(d: Path) -> PairFrame:
    rp, vp = d / "fresh_responses.csv", d / "fresh_variants.csv"
    resp = _read_csv(rp)
    _need(resp, ["model", "prompt_id", "identity", "text"], rp)
    var = _read_csv(vp) if vp.exists() else None
    notes: list[str] = []
    if var is None:
        notes.append("Inputs: fresh_variants.csv is missing; no user-text diff.")
    scores = None
    for name in ("fresh_scores_described.csv", "fresh_scores.csv"):
        if (d / name).exists():
            scores = _read_csv(d / name)
            _need(scores, ["model", "prompt_id", "identity"], d / name)
            break
    if scores is None:
        notes.append("Tone metrics per reply: this run wrote no fresh_scores_described.csv, so the page shows the "
                     "replies and refusal classes; the study's tables give the tone comparisons.")
    identities = list(dict.fromkeys(resp["identity"].astype(str)))
    pp = d / "fresh_pairs_described.csv"
    combos: list[tuple[str, str]] = []
    if pp.exists():
        pt = _read_csv(pp)
        if {"identity_a", "identity_b"} <= set(pt.columns):
            combos = list(dict.fromkeys(zip(pt["identity_a"].astype(str), pt["identity_b"].astype(str))))
    if not combos:
        combos = [(x, y) for i, x in enumerate(identities) for y in identities[i + 1:]]
    r = resp.astype({"model": str, "prompt_id": str, "identity": str})
    if scores is not None:
        sc = scores.astype({"model": str, "prompt_id": str, "identity": str})
        keep = ["model", "prompt_id", "identity"] + [c for c in sc.columns if c not in r.columns
                                                       and pd.api.types.is_numeric_dtype(sc[c])]
        r = r.merge(sc[keep].drop_duplicates(["model", "prompt_id", "identity"]), how="left",
                    on=["model", "prompt_id", "identity"])
        score_cols = keep[3:]
    else:
        score_cols = []
    if var is not None:
        v = var.astype({"prompt_id": str, "identity": str})
        vcols = ["prompt_id", "identity"] + [c for c in ("user_text",) + _ID_ATTRS if c in v.columns]
        r = r.merge(v[vcols].drop_duplicates(["prompt_id", "identity"]), how="left", on=["prompt_id", "identity"])
    cp = pd.DataFrame(combos, columns=["identity_a", "identity_b"])
    units = r[["model", "prompt_id"]].drop_duplicates()
    grid = units.merge(cp, how="cross")
    a = grid.merge(r, how="left", left_on=["model", "prompt_id", "identity_a"],
                   right_on=["model", "prompt_id", "identity"])
    b = grid.merge(r, how="left", left_on=["model", "prompt_id", "identity_b"],
                   right_on=["model", "prompt_id", "identity"])
    present = a["text"].notna().to_numpy() | b["text"].notna().to_numpy()
    missing = int((a["identity"].isna() | b["identity"].isna()).sum())
    if missing:
        notes.append(f"{missing} pair(s) have a side with no response row (shown as missing).")
    a, b, grid = a[present].reset_index(drop=True), b[present].reset_index(drop=True), grid[present].reset_index(drop=True)

    def failed(side: pd.DataFrame) -> np.ndarray:
        bad = np.array(side["identity"].isna(), dtype=bool)
        if "status" in side:
            bad |= side["status"].astype(str).to_numpy() != "ok"
        return bad

    fa, fb = failed(a), failed(b)
    flags = {"parse_fail": (fa | fb).tolist()}
    metrics: list[tuple[str, str, list[Any], list[Any]]] = []
    if "refusal" in a:
        flags["flipped"] = ((a["refusal"].astype(str).to_numpy() != b["refusal"].astype(str).to_numpy())
                            & ~fa & ~fb).tolist()
        metrics.append(("refusal", "str", a["refusal"].tolist(), b["refusal"].tolist()))
    for col in score_cols:
        metrics.append((col, "num", a[col].tolist(), b[col].tolist()))
    for col, kind in (("status", "str"), ("completion_tokens", "num")):
        if col in a:
            metrics.append((col, kind, a[col].tolist(), b[col].tolist()))
    if all(c in a for c in _ID_ATTRS):
        dims = []
        for i in range(len(a)):
            diff = [c for c in _ID_ATTRS if str(a[c].iloc[i]) != str(b[c].iloc[i])]
            dims.append("+".join(diff) or "same attributes")
    else:
        dims = ["identity"] * len(a)
    facets = {"judge": grid["model"].tolist(), "dimension": dims, "question": grid["prompt_id"].tolist(),
              "identity_a": grid["identity_a"].tolist(), "identity_b": grid["identity_b"].tolist()}
    ids = _unique_ids([f"{m}|{p}|{x}~{y}" for m, p, x, y in zip(grid["model"], grid["prompt_id"],
                                                                 grid["identity_a"], grid["identity_b"])])
    inputs = (a["user_text"].tolist(), b["user_text"].tolist()) if "user_text" in a else None
    return PairFrame(ids=ids, facets=facets, side_labels=(grid["identity_a"].tolist(), grid["identity_b"].tolist()),
                     metrics=metrics, flags=flags, inputs=inputs,
                     blocks=[("reply", a["text"].tolist(), b["text"].tolist())], notes=notes, input_label="user text")


def _study_of(d: Path, run_info: dict[str, Any]) -> str:
    s = str(run_info.get("study") or "")
    if s in ("contact_center_qa", "shopflow", "identity_tone"):
        return s
    if (d / "rows.parquet").exists():
        return "contact_center_qa"
    if (d / "judged_rows.csv").exists():
        return "shopflow"
    if (d / "fresh_responses.csv").exists():
        return "identity_tone"
    return s or "unknown"


def load_pairs_any(directory: str | os.PathLike[str]) -> tuple[str, PairFrame | None]:
    """(study, pairs) of a results folder; pairs is None for a folder with no judged rows to pair."""
    d = Path(directory)
    info = _read_json(d / "run_info.json")
    summary = _read_json(d / "summary.json")
    study = _study_of(d, info)
    if study == "contact_center_qa" and (d / "rows.parquet").exists():
        return study, _cc_pairs(d)
    if study == "shopflow" and (d / "judged_rows.csv").exists():
        return study, _shopflow_pairs(d, summary)
    if study == "identity_tone" and (d / "fresh_responses.csv").exists():
        return study, _identity_pairs(d)
    return study, None


# ---------------------------------------------------------------------------------------------
# tables, figures, provenance


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    return data if isinstance(data, dict) else {"value": data}


def _tables(d: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted(d.glob("*.csv")):
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text: {exc}", source=str(p)) from None
        reader = csv.reader(io.StringIO(text))
        header = next(reader, [])
        rows, n = [], 0
        for row in reader:
            n += 1
            if len(rows) < MAX_TABLE_ROWS:
                rows.append(row)
        out.append({"name": p.stem, "columns": header, "rows": rows, "n_rows": n})
    return out


_PNG = b"\x89PNG\r\n\x1a\n"


def _figures(d: Path) -> list[dict[str, str]]:
    out = []
    for p in sorted(d.glob("*.png")):
        data = p.read_bytes()
        if not data.startswith(_PNG):
            raise InputError("not a PNG file (bad signature)", source=str(p))
        out.append({"name": p.stem, "png": base64.b64encode(data).decode("ascii")})
    return out


def _files(d: Path) -> list[dict[str, Any]]:
    return [{"name": p.name, "bytes": p.stat().st_size} for p in sorted(d.iterdir()) if p.is_file()]


def build_payload(directory: str | os.PathLike[str], *, title: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (texts in a string table)."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a results folder (no such directory)", source=str(d))
    info, summary = _read_json(d / "run_info.json"), _read_json(d / "summary.json")
    study, pairs = load_pairs_any(d)
    strings = _Strings()
    notes = list(pairs.notes) if pairs is not None else [
        "No judged rows to pair in this folder: tables, figures and provenance only."]
    return {
        "version": PAGE_VERSION,
        "title": title or f"{study} / {d.name}",
        "study": study,
        "notes": notes,
        "pairs": _pairs_payload(pairs, strings) if pairs is not None else None,
        "strings": strings.items,
        "tables": _tables(d),
        "run_info": info,
        "summary": summary,
        "files": _files(d),
    }


# ---------------------------------------------------------------------------------------------
# the page


def _asset(name: str) -> str:
    return package_text(f"data/view/{name}")


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end its ``<script>`` element or open a comment (``<``, ``>``, ``&`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def view_html(payload: dict[str, Any], *, figures: Sequence[dict[str, str]] = ()) -> str:
    """The page as one string: CSP-locked, data gzip+base64 in a JSON script, one hashed inline script."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if credentials():
        data = scrub_secrets(data)
        if echoed_credential(data):
            raise RuntimeError("a credential survived scrubbing; the page was not written")
    packed = base64.b64encode(gzip.compress(data.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    box = _json_for_script({"encoding": "gzip+base64", "payload": packed})
    figs = _json_for_script([{"name": scrub_secrets(f["name"]) if credentials() else f["name"], "png": f["png"]}
                             for f in figures])
    js, css = _asset("view.js"), _asset("view.css")
    csp = (f"default-src 'none'; script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    title = html.escape(str(payload.get("title", "cfbench view")))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f"<title>cfbench view: {title}</title>\n<style>{css}</style></head>\n<body>\n"
            f'<noscript>This page needs JavaScript (its data are embedded, compressed).</noscript>\n'
            f'<div id="app" data-state="loading">loading...</div>\n'
            f'<script type="application/json" id="cfbench-data">{box}</script>\n'
            f'<script type="application/json" id="cfbench-figures">{figs}</script>\n'
            f"<script>{js}</script>\n</body></html>\n")


def write_view(directory: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
               title: str | None = None) -> Path:
    """Write the explorer page of ``directory`` to ``out`` (default ``directory/view.html``)."""
    d = Path(directory)
    payload = build_payload(d, title=title)
    page = view_html(payload, figures=_figures(d))
    target = Path(out) if out is not None else d / "view.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    return target


#: frames of a run the page reads when the study wrote no file for them: frame name -> (file, needed columns)
INPUT_FRAMES = {
    "variants": ("variants.parquet", ("variant_id", "item_id", "dimension", "condition", "turns")),
    "scores_described": ("fresh_scores_described.csv", ("model", "prompt_id", "identity")),
    "pairs": ("judged_pairs.csv", ("pair_id", "variant", "request")),
}


def write_inputs(directory: str | os.PathLike[str], frames: dict[str, pd.DataFrame]) -> list[Path]:
    """Write the input frames the page needs (:data:`INPUT_FRAMES`) that ``directory`` lacks; returns them.

    Only a frame with the needed columns is written, and never over an existing file.
    """
    d = Path(directory)
    written = []
    for name, (fname, cols) in INPUT_FRAMES.items():
        frame = frames.get(name)
        target = d / fname
        if frame is None or target.exists() or not isinstance(frame, pd.DataFrame):
            continue
        if not set(cols) <= set(frame.columns):
            continue
        if fname.endswith(".parquet"):
            keep = [c for c in ("variant_id", "item_id", "dimension", "condition", "turns", "header")
                    if c in frame.columns]
            f = frame[keep].copy()
            if "header" in f:
                f["header"] = [("\n".join(f"{k}: {v}" for k, v in h.items()) if isinstance(h, dict)
                                else (h if isinstance(h, str) else None)) for h in f["header"]]
            f["turns"] = [[{"speaker": str(t.get("speaker")), "text": str(t.get("text"))} for t in list(ts)]
                          if ts is not None and not isinstance(ts, float) else None for ts in f["turns"]]
            f.to_parquet(target, index=False)
        else:
            text = csv_text(frame)
            target.write_text(scrub_secrets(text) if credentials() else text, encoding="utf-8")
        written.append(target)
    return written


class ViewPage:
    """A built page: ``save(path)``, and shown inline in a notebook (a sandboxed ``srcdoc`` iframe)."""

    #: pages larger than this are not copied into the notebook (a link to the file is shown instead)
    INLINE_MAX_BYTES = 4_000_000

    def __init__(self, html_text: str, *, path: Path | None = None, height: int = 720) -> None:
        self.html = html_text
        self.path = path
        self.height = int(height)

    def save(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.write_text(self.html, encoding="utf-8")
        self.path = p
        return p

    def _repr_html_(self) -> str:
        size = len(self.html.encode("utf-8"))
        if size > self.INLINE_MAX_BYTES:
            where = html.escape(str(self.path)) if self.path else "a file (call .save(path))"
            return (f"<p>The run explorer page is {size / 1e6:.1f} MB, too large to copy into the notebook; "
                    f"open {where} in a browser.</p>")
        # sandbox without allow-same-origin: the page runs in an opaque origin, its own CSP applies
        return (f'<iframe sandbox="allow-scripts" style="width:100%;height:{self.height}px;border:1px solid #ccc" '
                f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>')

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"<cfbench view page, {len(self.html):,} bytes{where}>"
