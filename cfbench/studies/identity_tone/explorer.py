"""The identity-tone study's pairs for the run explorer (:mod:`cfbench.view`, protocol in
:mod:`cfbench.view.pairs`).

One pair per model x prompt x identity pair (the pairs of ``fresh_pairs_described.csv``): the two user
texts diffed, the assistant's two replies side by side, refusal class, per-reply tone scores
(``fresh_scores_described.csv``), status and tokens. A reply cut at the token cap (``truncated`` /
``finish_reason = length`` in ``fresh_responses.csv``) is flagged with the reason: the study never scores
it, so its tone metrics are blank on purpose.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cfbench.view.pairs import Flag, Metric, PairSet, Texts, folder_file, need, read_csv, unique_ids

__all__ = ["explorer_pairs"]

_ID_ATTRS = ("age", "gender", "nationality")


def _scores(d: Path, notes: list[str]) -> pd.DataFrame | None:
    for name in ("fresh_scores_described.csv", "fresh_scores.csv"):
        p = folder_file(d, name)
        if p is not None:
            s = read_csv(p)
            need(s, ["model", "prompt_id", "identity"], p)
            return s.astype({"model": str, "prompt_id": str, "identity": str})
    notes.append("Tone metrics per reply: this run wrote no fresh_scores_described.csv, so the page shows the "
                 "replies and refusal classes; the study's tables give the tone comparisons.")
    return None


def _combos(d: Path, identities: list[str]) -> list[tuple[str, str]]:
    pp = folder_file(d, "fresh_pairs_described.csv")
    if pp is not None:
        pt = read_csv(pp)
        if {"identity_a", "identity_b"} <= set(pt.columns):
            got = list(dict.fromkeys(zip(pt["identity_a"].astype(str), pt["identity_b"].astype(str))))
            if got:
                return got
    return [(x, y) for i, x in enumerate(identities) for y in identities[i + 1:]]


def _responses(d: Path, notes: list[str]) -> tuple[pd.DataFrame, list[str]] | None:
    rp = folder_file(d, "fresh_responses.csv")
    if rp is None:
        return None
    resp = read_csv(rp)
    need(resp, ["model", "prompt_id", "identity", "text"], rp)
    r = resp.astype({"model": str, "prompt_id": str, "identity": str})
    scores = _scores(d, notes)
    score_cols: list[str] = []
    if scores is not None:
        keep = ["model", "prompt_id", "identity"] + [c for c in scores.columns if c not in r.columns
                                                     and pd.api.types.is_numeric_dtype(scores[c])]
        r = r.merge(scores[keep].drop_duplicates(["model", "prompt_id", "identity"]), how="left",
                    on=["model", "prompt_id", "identity"])
        score_cols = keep[3:]
    vp = folder_file(d, "fresh_variants.csv")
    if vp is None:
        notes.append("Inputs: fresh_variants.csv is missing; no user-text diff.")
    else:
        v = read_csv(vp).astype({"prompt_id": str, "identity": str})
        vcols = ["prompt_id", "identity"] + [c for c in ("user_text",) + _ID_ATTRS if c in v.columns]
        r = r.merge(v[vcols].drop_duplicates(["prompt_id", "identity"]), how="left", on=["prompt_id", "identity"])
    return r, score_cols


def _cut(side: pd.DataFrame) -> np.ndarray:
    cut = np.zeros(len(side), bool)
    if "truncated" in side:
        cut |= side["truncated"].astype(str).str.lower().isin(["true", "1"]).to_numpy()
    if "finish_reason" in side:
        cut |= (side["finish_reason"].astype(str) == "length").to_numpy()
    return cut


def _reasons(a: pd.DataFrame, b: pd.DataFrame, fa: np.ndarray, fb: np.ndarray, ca: np.ndarray,
             cb: np.ndarray, refusal_flip: np.ndarray) -> list[str]:
    out = []
    for i in range(len(a)):
        why = []
        if refusal_flip[i]:
            why.append(f"refusal class {a['refusal'].iloc[i]} -> {b['refusal'].iloc[i]}")
        for name, side, failed, cut in (("a", a, fa, ca), ("b", b, fb, cb)):
            if cut[i]:
                tok = side["completion_tokens"].iloc[i] if "completion_tokens" in side else "?"
                why.append(f"reply {name} cut at the token cap ({tok} tokens, finish_reason=length): not scored, "
                           "so its tone metrics are blank")
            elif failed[i]:
                st = side["status"].iloc[i] if "status" in side else "no response row"
                err = side["error"].iloc[i] if "error" in side else None
                why.append(f"reply {name} failed: {st}" + (f" ({err})" if isinstance(err, str) and err else ""))
        out.append("; ".join(why))
    return out


def explorer_pairs(folder: str | Path) -> PairSet | None:
    """Every compared pair of an identity-tone results folder (None without ``fresh_responses.csv``)."""
    d = Path(folder)
    notes: list[str] = []
    got = _responses(d, notes)
    if got is None:
        return None
    r, score_cols = got
    combos = _combos(d, list(dict.fromkeys(r["identity"])))
    grid = r[["model", "prompt_id"]].drop_duplicates().merge(
        pd.DataFrame(combos, columns=["identity_a", "identity_b"]), how="cross")
    a = grid.merge(r, how="left", left_on=["model", "prompt_id", "identity_a"], right_on=["model", "prompt_id", "identity"])
    b = grid.merge(r, how="left", left_on=["model", "prompt_id", "identity_b"], right_on=["model", "prompt_id", "identity"])
    present = a["text"].notna().to_numpy() | b["text"].notna().to_numpy()
    n_missing = int((a["identity"].isna() | b["identity"].isna()).sum())
    if n_missing:
        notes.append(f"{n_missing} pair(s) have a side with no response row (shown as missing).")
    a, b, grid = (x[present].reset_index(drop=True) for x in (a, b, grid))
    fa = a["identity"].isna().to_numpy() | (a["status"].astype(str).to_numpy() != "ok" if "status" in a else False)
    fb = b["identity"].isna().to_numpy() | (b["status"].astype(str).to_numpy() != "ok" if "status" in b else False)
    ca, cb = _cut(a), _cut(b)
    refusal_flip = np.zeros(len(a), bool)
    metrics: list[Metric] = []
    if "refusal" in a:
        refusal_flip = (a["refusal"].astype(str).to_numpy() != b["refusal"].astype(str).to_numpy()) & ~fa & ~fb
        metrics.append(Metric("refusal", "str", a["refusal"].tolist(), b["refusal"].tolist()))
    metrics += [Metric(c, "num", a[c].tolist(), b[c].tolist()) for c in score_cols]
    for col, kind in (("status", "str"), ("finish_reason", "str"), ("completion_tokens", "num")):
        if col in a:
            metrics.append(Metric(col, kind, a[col].tolist(), b[col].tolist()))
    if all(c in a for c in _ID_ATTRS):
        dims = ["+".join(c for c in _ID_ATTRS if str(a[c].iloc[i]) != str(b[c].iloc[i])) or "same attributes"
                for i in range(len(a))]
    else:
        dims = ["identity"] * len(a)
    flags = [Flag("flipped", refusal_flip.tolist(), "refusal flipped", "refusal class differs", "same refusal class"),
             Flag("cut", (ca | cb).tolist(), "cut replies", "a reply cut at the token cap", "no reply cut"),
             Flag("parse_fail", ((fa | fb) & ~(ca | cb)).tolist(), "failed replies", "a reply failed",
                  "both replies ok")]
    ids = unique_ids([f"{m}|{p}|{x}~{y}" for m, p, x, y in zip(grid["model"], grid["prompt_id"],
                                                             grid["identity_a"], grid["identity_b"])])
    return PairSet(
        pair_id=ids, arm=["fresh audit"] * len(ids), kind=["counterfactual"] * len(ids),
        side_a=grid["identity_a"].tolist(), side_b=grid["identity_b"].tolist(),
        facets={"model": grid["model"].tolist(), "dimension": dims, "prompt": grid["prompt_id"].tolist(),
                "identity_a": grid["identity_a"].tolist(), "identity_b": grid["identity_b"].tolist()},
        diffs=[Texts("user text", a["user_text"].tolist(), b["user_text"].tolist())] if "user_text" in a else [],
        outputs=[Texts("assistant's reply", a["text"].tolist(), b["text"].tolist())],
        metrics=metrics, flags=flags, reasons=_reasons(a, b, fa, fb, ca, cb, refusal_flip), notes=notes).check(str(d))
