"""The ShopFlow study's pairs for the run explorer (:mod:`cfbench.view`, protocol in :mod:`cfbench.view.pairs`).

One pair per ``pair_id`` of ``judged_rows.csv``: the same request in its two wordings (``formal`` ->
``conversational``), each with the support reply the judge scored. Diffed: the two requests and the two
replies (``judged_pairs.csv``, written beside the rows); shown: the judge's own reply and the review note.
The routing threshold (``summary.json``) is on every pair: a flip is a route change, and its reason says
whether the new route agrees with ``expected_ready``; an answer that changes while both scores stay on
the same side of the threshold is flagged too (``sf08`` in the default run: "Yes" vs "No", both routed at
0.50).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.view.pairs import Flag, Metric, PairSet, Texts, folder_file, missing, need, read_csv, read_json, \
    read_parquet

__all__ = ["explorer_pairs"]

_AUTO = "auto_serve"  # the route a ready reply takes (cfbench.studies.shopflow.policy.ROUTES[0])


def _texts(d: Path, jr: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    if "request" in jr.columns:
        return jr, []
    for name in ("judged_pairs.csv", "judged_pairs.parquet", "pairs.jsonl"):
        p = folder_file(d, name)
        if p is None:
            continue
        if p.suffix == ".csv":
            src = read_csv(p)
        elif p.suffix == ".parquet":
            src = read_parquet(p)
        else:
            try:
                src = pd.read_json(p, lines=True, dtype=False)
            except ValueError as exc:
                raise InputError(f"cannot read as JSONL: {' '.join(str(exc).split())[:200]}", source=str(p)) from None
        need(src, ["pair_id", "variant", "request"], p)
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
                "page shows routes, scores and the judge's reply without the wording and reply diffs."]


def _with_excluded(d: Path, jr: pd.DataFrame, variants: tuple[str, str]) -> pd.DataFrame:
    """Pairs the study excluded (an unparseable reply; ``judged_excluded.csv``) as parse-failure rows."""
    p = folder_file(d, "judged_excluded.csv")
    if p is None:
        return jr
    ex = read_csv(p)
    if ex.empty:
        return jr
    need(ex, ["pair_id", "variant", "reason"], p)
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


def _failed(side: pd.DataFrame) -> np.ndarray:
    bad = (np.array(pd.to_numeric(side["score"], errors="coerce").isna(), dtype=bool) if "score" in side
           else np.zeros(len(side), bool))
    if "score_source" in side:
        bad |= side["score_source"].isna().to_numpy() | (side["score_source"].astype(str) == "parse_failure").to_numpy()
    return bad


def _truth(value: Any) -> bool | None:
    if missing(value):
        return None
    s = str(value).strip().lower()
    return True if s in ("true", "1", "yes") else False if s in ("false", "0", "no") else None


def _reasons(a: pd.DataFrame, b: pd.DataFrame, flipped: np.ndarray, answer_only: np.ndarray,
             threshold: float | None, va: str, vb: str) -> list[str]:
    out = []
    sa = pd.to_numeric(a["score"], errors="coerce").tolist() if "score" in a else [None] * len(a)
    sb = pd.to_numeric(b["score"], errors="coerce").tolist() if "score" in b else [None] * len(b)
    t = f" (threshold {threshold:g})" if threshold is not None else ""
    for i in range(len(a)):
        if flipped[i]:
            want = _truth(a["expected_ready"].iloc[i]) if "expected_ready" in a else None
            ra, rb = str(a["route"].iloc[i]), str(b["route"].iloc[i])
            if want is None:
                side = "expected_ready not recorded"
            else:
                right_a, right_b = (ra == _AUTO) == want, (rb == _AUTO) == want
                side = (f"{vb} route {'matches' if right_b else 'contradicts'} expected_ready={want} "
                        f"({va} route {'matched' if right_a else 'contradicted'} it)")
            out.append(f"route {ra} -> {rb}: P(ready) {sa[i]:.4f} -> {sb[i]:.4f}{t}; {side}")
        elif answer_only[i]:
            out.append(f"answer {a['raw'].iloc[i]} -> {b['raw'].iloc[i]} but both P(ready) on the same side{t}: "
                       f"{sa[i]:.4f} and {sb[i]:.4f}, route unchanged")
        elif "excluded" in a and (not missing(a["excluded"].iloc[i]) or not missing(b["excluded"].iloc[i])):
            out.append("excluded by the study: " + "; ".join(str(x) for x in (a["excluded"].iloc[i],
                                                                               b["excluded"].iloc[i]) if not missing(x)))
        else:
            out.append("")
    return out


def _seed_pairs(d: Path, seed: dict[str, Any]) -> PairSet | None:
    """The seed part: its shipped observations (scores only, no texts) routed at the seed's threshold."""
    from .policy import route_rows

    if not seed:
        return None
    threshold = seed.get("threshold")
    if not seed.get("shipped_fixture") or not isinstance(threshold, (int, float)):
        return PairSet([], [], [], [], [], notes=[
            f"seed arm: its observations ({seed.get('source', 'not recorded')}) are not in this folder, so its "
            "pairs are not shown (the seed_* tables are)."])
    path = Path(__file__).resolve().parent / "data" / "seed_observations.csv"
    obs = read_csv(path)
    need(obs, ["pair_id", "variant", "score", "evidence_passed", "expected_ready"], path)
    r = route_rows(obs.astype({"pair_id": str, "variant": str}), float(threshold))
    va, vb = list(dict.fromkeys(r["variant"]))[:2]
    a = r[r["variant"] == va].set_index("pair_id")
    b = r[r["variant"] == vb].set_index("pair_id").loc[a.index]
    flipped = a["route"].to_numpy() != b["route"].to_numpy()
    n = len(a)
    metrics = [Metric("route", "str", a["route"].tolist(), b["route"].tolist()),
               Metric("P(ready)", "num", a["score"].tolist(), b["score"].tolist()),
               Metric("threshold", "num", [threshold] * n, [threshold] * n)]
    if "candidate_score" in a:
        metrics.append(Metric("candidate prompt's P(ready)", "num", a["candidate_score"].tolist(),
                              b["candidate_score"].tolist()))
    a = a.assign(raw=None)
    reasons = _reasons(a, b.assign(raw=None), flipped, np.zeros(n, bool), float(threshold), va, vb)
    return PairSet(pair_id=[f"seed:{i}" for i in a.index], arm=["seed"] * n, kind=["counterfactual"] * n,
                   side_a=[va] * n, side_b=[vb] * n,
                   facets={"judge": ["seed observations (scores only)"] * n, "channel": a["channel"].astype(str).tolist(),
                           "expected_ready": [str(_truth(x)) for x in a["expected_ready"]]},
                   metrics=metrics, flags=[Flag("flipped", flipped.tolist(), "route flipped", "route differs",
                                                "same route")],
                   reasons=reasons, notes=["seed arm: the seed's shipped observations are scores only (no request "
                                           "or reply texts), routed at the seed's threshold."])


def explorer_pairs(folder: str | Path) -> PairSet | None:
    """Every pair of a ShopFlow results folder, the judged part and the seed part (None without
    ``judged_rows.csv``)."""
    d = Path(folder)
    p = folder_file(d, "judged_rows.csv")
    if p is None:
        return None
    sp = folder_file(d, "summary.json")
    summary = read_json(sp) if sp is not None else {}
    judged = _judged_pairs(d, p, summary.get("judged") or {})
    seed = _seed_pairs(d, summary.get("seed") or {})
    return judged if seed is None else PairSet.concat([judged, seed]).check(str(d))


def _sequential(d: Path) -> tuple[dict, str] | None:
    """From ``judged_sequential_cells.csv`` (a sequential run): gap -> what its cell did ("pass at pair 8",
    "inconclusive after 12 pairs"), and one note saying which cells stopped early and why."""
    path = folder_file(d, "judged_sequential_cells.csv")
    if path is None:
        return None
    t = read_csv(path)
    need(t, ["gap", "verdict", "items_used", "stopped_at_item", "reason"], path)
    said, early, rest = {}, [], []
    for r in t.itertuples(index=False):
        if str(r.verdict) in ("pass", "fail") and not missing(r.stopped_at_item):
            said[str(r.gap)] = f"{r.verdict} at pair {int(r.stopped_at_item)}"
            early.append(f"{r.gap}: {said[str(r.gap)]} ({r.reason})")
        else:
            said[str(r.gap)] = f"{r.verdict} after {int(r.items_used)} pairs"
            rest.append(f"{r.gap}: {said[str(r.gap)]} ({r.reason})")
    note = ("Sequential audit: " + ("stopped early, decided: " + "; ".join(early) if early else "no cell decided")
            + (". Still undecided: " + "; ".join(rest) if rest else "") + ". A decided cell's stratum has pairs "
            "only up to its stopping point (facet 'sequential cell').")
    return said, note


def _judged_pairs(d: Path, p: Path, judged: dict[str, Any]) -> PairSet:
    jr = read_csv(p)
    need(jr, ["pair_id", "variant", "route"], p)
    jr = jr.astype({"pair_id": str, "variant": str})
    variants = list(dict.fromkeys(jr["variant"]))
    if len(variants) != 2:
        raise InputError(f"expected two wordings per pair, found {variants}", source=str(p), field="variant")
    va, vb = variants
    jr, notes = _texts(d, _with_excluded(d, jr, (va, vb)))
    a = jr[jr["variant"] == va].drop_duplicates("pair_id").set_index("pair_id")
    b = jr[jr["variant"] == vb].drop_duplicates("pair_id").set_index("pair_id")
    ids = [i for i in dict.fromkeys(jr["pair_id"]) if i in a.index and i in b.index]
    lone = sorted(set(jr["pair_id"]) - set(ids))
    if lone:
        notes.append(f"{len(lone)} pair(s) with one wording only are not shown: {', '.join(lone[:10])}")
    a, b = a.loc[ids], b.loc[ids]
    threshold = judged.get("threshold")
    threshold = float(threshold) if isinstance(threshold, (int, float)) else None
    if threshold is None:
        notes.append("The routing threshold is not recorded in summary.json (judged.threshold).")
    fa, fb = _failed(a), _failed(b)
    flipped = (a["route"].astype(str).to_numpy() != b["route"].astype(str).to_numpy()) & ~fa & ~fb
    answer_only = np.zeros(len(ids), bool)
    if "raw" in a:
        answer_only = (a["raw"].astype(str).str.strip().to_numpy() != b["raw"].astype(str).str.strip().to_numpy()) \
            & ~flipped & ~fa & ~fb
    metrics = [Metric("route", "str", a["route"].tolist(), b["route"].tolist())]
    for col, kind in (("score", "num"), ("yes_no_mass", "num"), ("score_source", "str"), ("raw", "str"),
                      ("excluded", "str")):
        if col in a and (col != "excluded" or a[col].notna().any() or b[col].notna().any()):
            metrics.append(Metric("P(ready)" if col == "score" else "answer" if col == "raw" else col, kind,
                                  a[col].tolist(), b[col].tolist()))
    if threshold is not None:
        metrics.append(Metric("threshold", "num", [threshold] * len(ids), [threshold] * len(ids)))
    facets: dict[str, list[Any]] = {"judge": [str(judged.get("judge") or "judge (not recorded)")] * len(ids)}
    for col in ("channel", "expected_ready"):
        if col in a:
            facets[col] = a[col].astype(str).tolist()
    seq = _sequential(d)
    if seq is not None and "expected_ready" in a:  # issue 35: which gap cell each pair fed, and where it stopped
        stratum = {"true": "tpr_gap", "false": "fpr_gap"}
        facets["sequential cell"] = [seq[0].get(stratum.get(str(r).lower(), ""), "")
                                     for r in a["expected_ready"].tolist()]
        notes.append(seq[1])
    diffs = [Texts("request", a["request"].tolist(), b["request"].tolist())] if "request" in a else []
    if "reply" in a:
        diffs.append(Texts("support reply (what the judge scored)", a["reply"].tolist(), b["reply"].tolist()))
    outputs = [Texts(label, a[col].tolist(), b[col].tolist()) for col, label in
               (("raw", "judge's reply"), ("review_note", "review note")) if col in a]
    flags = [Flag("flipped", flipped.tolist(), "route flipped", "route differs", "same route"),
             Flag("answer_only", answer_only.tolist(), "answer changed, route kept", "answer differs, same route",
                  "no such change"),
             Flag("parse_fail", (fa | fb).tolist(), "replies not read",
                  "a reply not read (unparseable, refused, failed or not sent)",
                  "read on both sides")]
    return PairSet(pair_id=list(ids), arm=["judged"] * len(ids), kind=["counterfactual"] * len(ids),
                   side_a=[va] * len(ids), side_b=[vb] * len(ids), facets=facets, diffs=diffs, outputs=outputs,
                   metrics=metrics, flags=flags,
                   reasons=_reasons(a, b, flipped, answer_only, threshold, va, vb), notes=notes).check(str(d))
