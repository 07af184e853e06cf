"""The contact-center study's pairs for the run explorer (:mod:`cfbench.view`, protocol in
:mod:`cfbench.view.pairs`), read from a results folder.

Arms: the main run (``rows.parquet``, ``judgments.parquet``, ``variants.parquet``; its source is
``summary.json``'s ``source``, usually ``synthetic``) and the real-dialogue STAR arm (the same three
files with a ``star_`` prefix, written by :func:`save_star_frames`). A pair is one judge x prompt arm x
task x question x item x dimension, each compared condition against the unit's ``original`` (or its
first condition when the compared set has no original: gender ``female~male``, repeats
``repeat0~repeat1``). ``kind`` is ``counterfactual`` for an edited transcript and ``noise`` for the
robustness rows (the same transcript asked again: a repeat, T = 0.7, another rubric wording).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cfbench.core.render import render_transcript
from cfbench.view.page import variants_for_page
from cfbench.view.pairs import Flag, Metric, PairSet, Texts, folder_file, missing, need, read_csv, read_json, \
    read_parquet, unique_ids

__all__ = ["explorer_pairs", "star_frames", "save_star_frames", "STAR_FILES"]

#: the STAR arm's row-level files (beside its ``star_*`` tables)
STAR_FILES = ("star_rows.parquet", "star_judgments.parquet", "star_variants.parquet")
_UNIT = ["judge", "arm", "task", "question_id", "item_id", "dimension"]


def star_frames(real_frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The STAR arm's frames the explorer reads, from the arm's own result frames."""
    return {f"star_{k}": real_frames[k] for k in ("rows", "variants") if k in real_frames}


def save_star_frames(frames: dict[str, pd.DataFrame], out: Any) -> None:
    """Write the STAR arm's rows, judgments and variants (``STAR_FILES``) when the run has the arm."""
    if "star_rows" not in frames:
        return
    j = frames.get("star_judgments")
    if j is not None:
        if "top_logprobs" in j.columns:
            j = j.drop(columns=["top_logprobs"]).assign(top_logprobs=j["top_logprobs"].astype(str))
        out.table("star_judgments", j, fmt="parquet")
    out.table("star_rows", frames["star_rows"], fmt="parquet")
    if "star_variants" in frames:
        out.table("star_variants", variants_for_page(frames["star_variants"]), fmt="parquet")


def _texts(d: Path, name: str) -> dict[str, str] | None:
    path = folder_file(d, name)
    if path is None:
        return None
    v = read_parquet(path)
    need(v, ["variant_id", "turns"], path)
    out: dict[str, str] = {}
    for rec in v.to_dict(orient="records"):
        turns = rec.get("turns")
        if turns is None or (isinstance(turns, float) and math.isnan(turns)) or not len(turns):
            continue
        header = rec.get("header")
        header = None if missing(header) else header
        out[str(rec["variant_id"])] = render_transcript([dict(t) for t in list(turns)], header,
                                                        record=f"{name}: variant {rec['variant_id']}")
    return out


def _sides(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(a, b): each unit's reference row against every other row of the unit."""
    r = rows[rows["dimension"].astype(str) != "original"].reset_index(drop=True).copy()
    r["_unit"] = r.groupby(_UNIT, sort=False, dropna=False).ngroup()
    r["_notref"] = r["condition"].astype(str) != "original"
    r = r.sort_values(["_unit", "_notref", "condition"], kind="stable")
    first = ~r["_unit"].duplicated()
    ref = r[first].set_index("_unit")
    oth = r[~first]
    return ref.loc[oth["_unit"].to_numpy()].reset_index(drop=True), oth.reset_index(drop=True)


def _lookup(judg: pd.DataFrame | None, side: pd.DataFrame, col: str) -> list[Any]:
    if judg is None or col not in judg.columns:
        return [None] * len(side)
    idx = pd.MultiIndex.from_arrays([side["judge"], side["key"]])
    return judg[col].reindex(idx).tolist()


def _answers(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(both parsed, flipped, reasons) of the pairs."""
    ok_a = a["parse_ok"].fillna(False).astype(bool).to_numpy() if "parse_ok" in a else np.ones(len(a), bool)
    ok_b = b["parse_ok"].fillna(False).astype(bool).to_numpy() if "parse_ok" in b else np.ones(len(b), bool)
    both = ok_a & ok_b
    flipped = np.zeros(len(a), bool)
    reasons = [""] * len(a)
    for col in ("answer", "score"):
        if col not in a:
            continue
        va, vb = a[col].astype(object).tolist(), b[col].astype(object).tolist()
        for i, (x, y) in enumerate(zip(va, vb)):
            if both[i] and not missing(x) and not missing(y) and str(x) != str(y):
                flipped[i] = True
                reasons[i] = f"{col} {x} -> {y}"
    for i in np.flatnonzero(~both):
        reasons[i] = "reply not parsed on side " + ("a and b" if not (ok_a[i] or ok_b[i]) else "a" if not ok_a[i]
                                                     else "b")
    return both, flipped, reasons


def _arm(d: Path, prefix: str, arm: str) -> tuple[dict[str, Any], list[str]] | None:
    """The pairs of one arm as columns (or None when the folder has no rows for it), and its notes."""
    rp = folder_file(d, f"{prefix}rows.parquet")
    if rp is None:
        return None
    rows = read_parquet(rp)
    need(rows, _UNIT + ["condition", "variant_id", "key"], rp)
    notes: list[str] = []
    jp = folder_file(d, f"{prefix}judgments.parquet")
    judg = read_parquet(jp) if jp is not None else None
    if judg is None:
        notes.append(f"{arm} arm: {prefix}judgments.parquet is missing; answers are shown without replies.")
    else:
        need(judg, ["judge", "key", "text"], jp)
        judg = judg.drop_duplicates(["judge", "key"]).set_index(["judge", "key"])
    a, b = _sides(rows)
    texts = _texts(d, f"{prefix}variants.parquet")
    if texts is None:
        notes.append(f"{arm} arm: this run wrote no {prefix}variants.parquet, so the page shows no transcript "
                     "diff for it (replies, answers and flags are shown).")

    def text_of(side: pd.DataFrame) -> list[Any]:
        if texts is None:
            return [None] * len(side)
        return [texts.get(v, texts.get(f"{i}::original")) for v, i in zip(side["variant_id"].astype(str),
                                                                         side["item_id"].astype(str))]

    both, flipped, reasons = _answers(a, b)
    perr = "parse_error" if judg is not None and "parse_error" in judg.columns else "parse_note"
    noise = b["dimension"].astype(str).str.startswith("robustness").to_numpy()
    for i in np.flatnonzero(flipped & noise):
        reasons[i] += " (noise: the same transcript asked again)"
    ev = None
    if "evidence_rule_violated" in a and (a["evidence_rule_violated"].notna().any()
                                          or b["evidence_rule_violated"].notna().any()):
        ev = ((pd.to_numeric(a["evidence_rule_violated"], errors="coerce").fillna(0).to_numpy() > 0)
              | (pd.to_numeric(b["evidence_rule_violated"], errors="coerce").fillna(0).to_numpy() > 0))
    return {"a": a, "b": b, "arm": arm, "kind": np.where(noise, "noise", "counterfactual"),
            "input": (text_of(a), text_of(b)), "reply": (_lookup(judg, a, "text"), _lookup(judg, b, "text")),
            "parse_error": (_lookup(judg, a, perr), _lookup(judg, b, perr)),
            "call_error": (_lookup(judg, a, "error"), _lookup(judg, b, "error")),
            "both": both, "flipped": flipped, "reasons": reasons, "evidence": ev}, notes


def _cat(parts: list[dict[str, Any]], get: Any) -> list[Any]:
    return [x for p in parts for x in list(get(p))]


def _metrics(parts: list[dict[str, Any]]) -> list[Metric]:
    out = []
    for col, kind in (("answer", "str"), ("p_yes", "num"), ("confidence", "num"), ("score", "num"),
                      ("evidence_status", "num"), ("n_quotes_found", "num")):
        if all(col in p["a"] for p in parts) and any(p["a"][col].notna().any() or p["b"][col].notna().any()
                                                     for p in parts):
            out.append(Metric(col, kind, _cat(parts, lambda p: p["a"][col]), _cat(parts, lambda p: p["b"][col])))
    ok = lambda side: lambda p: ["yes" if x else "PARSE FAILURE" for x in  # noqa: E731
                                 (p[side]["parse_ok"].fillna(False).astype(bool) if "parse_ok" in p[side]
                                  else [True] * len(p[side]))]
    out.append(Metric("parsed", "str", _cat(parts, ok("a")), _cat(parts, ok("b"))))
    for name in ("parse_error", "call_error"):
        a, b = _cat(parts, lambda p: p[name][0]), _cat(parts, lambda p: p[name][1])
        if any(not missing(e) for e in a + b):
            out.append(Metric(name, "str", a, b))
    return out


def _sequential(d: Path) -> tuple[dict, str] | None:
    """From ``sequential_cells.csv`` (a sequential run): (judge, dimension) -> what its cell did ("pass at
    item 8", "inconclusive after 12 items (budget)"), and one note saying which cells stopped early and why."""
    path = folder_file(d, "sequential_cells.csv")
    if path is None:
        return None
    t = read_csv(path)
    need(t, ["judge", "dimension", "verdict", "items_used", "stopped_at_item", "reason"], path)
    said, early, rest = {}, [], []
    for r in t.itertuples(index=False):
        if str(r.verdict) in ("pass", "fail") and not missing(r.stopped_at_item):
            said[(str(r.judge), str(r.dimension))] = f"{r.verdict} at item {int(r.stopped_at_item)}"
            early.append(f"{r.judge} x {r.dimension}: {r.verdict} at item {int(r.stopped_at_item)} ({r.reason})")
        else:
            why = " (budget)" if "budget" in str(r.reason) else ""
            said[(str(r.judge), str(r.dimension))] = f"{r.verdict} after {int(r.items_used)} items{why}"
            rest.append(f"{r.judge} x {r.dimension}: {r.verdict} after {int(r.items_used)} items ({r.reason})")
    note = ("Sequential audit: " + ("stopped early, decided: " + "; ".join(early) if early else "no cell decided")
            + (". Still undecided: " + "; ".join(rest) if rest else "") + ". Pairs of a decided cell exist only "
            "for the items up to its stopping point (facet 'sequential cell').")
    return said, note


def explorer_pairs(folder: str | Path) -> PairSet | None:
    """Every compared pair of a contact-center results folder, both arms (None without ``rows.parquet``)."""
    d = Path(folder)
    p = folder_file(d, "summary.json")
    summary = read_json(p) if p is not None else {}
    source = str(summary.get("source") or "synthetic")
    parts, notes = [], []
    for prefix, arm in (("", source), ("star_", "STAR")):
        got = _arm(d, prefix, arm)
        if got is not None:
            parts.append(got[0])
            notes += got[1]
    if not parts:
        return None
    if not any(p["arm"] == "STAR" for p in parts) and (summary.get("star") or folder_file(d, "star_cfr.csv")):
        notes.append("STAR arm: this folder has the arm's tables (star_*.csv) but not its judged rows "
                     "(star_rows.parquet, written by runs since the explorer shows the arm), so its pairs "
                     "cannot be shown; re-run the study to browse them.")
    b = lambda col: _cat(parts, lambda p: p["b"][col])  # noqa: E731
    a = lambda col: _cat(parts, lambda p: p["a"][col])  # noqa: E731
    facets: dict[str, list[Any]] = {"judge": b("judge"), "prompt arm": b("arm"), "task": b("task"),
                                    "dimension": b("dimension"), "question": b("question_id"), "item": b("item_id"),
                                    "condition": b("condition")}
    flags = [Flag("flipped", _cat(parts, lambda p: p["flipped"]), "flipped", "answer or score differs",
                  "same answer"),
             Flag("parse_fail", _cat(parts, lambda p: ~p["both"]), "replies not read",
                  "a reply not read (unparseable, refused, failed or not sent)",
                  "read on both sides")]
    if any(p["evidence"] is not None for p in parts):
        flags.append(Flag("evidence_violation", _cat(parts, lambda p: p["evidence"] if p["evidence"] is not None
                                                      else np.zeros(len(p["a"]), bool)),
                          "evidence rule", "evidence rule violated", "evidence rule kept"))
    arms = _cat(parts, lambda p: [p["arm"]] * len(p["a"]))
    ids = unique_ids([f"{j}|{x}|{pa}|{t}|{q}|{i}|{dim}|{ca}~{cb}" for j, x, pa, t, q, i, dim, ca, cb in zip(
        b("judge"), arms, b("arm"), b("task"), b("question_id"), b("item_id"), b("dimension"), a("condition"),
        b("condition"))])
    seq = _sequential(d)
    if seq is not None:  # a sequential run (issue 35): each pair's cell, and which cells stopped early and why
        notes.append(seq[1])
        facets["sequential cell"] = [seq[0].get((j, dim), "") if arm == source and pa == "baseline" else ""
                                     for j, dim, arm, pa in zip(b("judge"), b("dimension"), arms, b("arm"))]
    return PairSet(
        pair_id=ids, arm=arms, kind=_cat(parts, lambda p: p["kind"]), side_a=a("condition"), side_b=b("condition"),
        facets=facets,
        diffs=[Texts("transcript", _cat(parts, lambda p: p["input"][0]), _cat(parts, lambda p: p["input"][1]))],
        outputs=[Texts("judge's reply", _cat(parts, lambda p: p["reply"][0]), _cat(parts, lambda p: p["reply"][1]))],
        metrics=_metrics(parts), flags=flags, reasons=_cat(parts, lambda p: p["reasons"]), notes=notes,
        same_input_note="the two transcripts are identical: what differs is the request itself (a repeat, the "
                        "temperature or the rubric's wording: the noise rows)").check(str(d))
