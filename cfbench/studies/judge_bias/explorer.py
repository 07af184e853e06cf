"""The judge-bias study's pairs for the run explorer (:mod:`cfbench.view`, protocol in :mod:`cfbench.view.pairs`).

From ``answers.csv`` (every judged request) and ``items.csv``: per judge x item x task, the baseline
prompt against each other condition under the same reply order: each cue (``counterfactual``), the
reworded prompt and repeats (``noise``: the study's noise reference); the position cue is the two
baseline orders. The prompts are rebuilt as the judge saw them by the study's own :func:`.study.plan`
with the run's parameters (the executed notebook's papermill record); the items are reloaded from STAR
and used only when they match ``items.csv`` exactly, else the items of ``items.csv`` stand in and the
page says that each prompt's conversation is cut to its last customer turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from cfbench.view.pairs import Flag, Metric, PairSet, Texts, folder_file, missing, need, read_csv, unique_ids

from .items import Item

__all__ = ["explorer_pairs"]


def _params(d: Path) -> dict[str, Any] | None:
    nb = next((p for p in (folder_file(d, n.name) for n in sorted(d.glob("*.ipynb"))) if p is not None), None)
    if nb is None:
        return None
    try:
        meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
    except (ValueError, UnicodeDecodeError):
        return None
    got = meta.get("parameters")
    return dict(got) if isinstance(got, dict) else None


def _prompts(d: Path, items: pd.DataFrame, notes: list[str]) -> dict[str, str]:
    """request id -> the prompt the judge saw (empty when the run's parameters are not recorded)."""
    from .items import load_items
    from .study import Params, plan

    raw = _params(d)
    if raw is None:
        notes.append("Prompts: the folder records no run parameters (executed notebook), so the prompts cannot "
                     "be rebuilt; answers and replies are shown.")
        return {}
    params = Params.from_config(raw, source=f"{d.name}: notebook parameters")
    want = {(str(r.item_id), str(r.real), str(r.alt)) for r in items.itertuples()}
    try:
        loaded, _, _ = load_items(params.star_path, n_draft=params.n_draft, n_control=params.n_control,
                                  seed=params.seed, context_turns=params.context_turns)
    except Exception:  # noqa: BLE001 - the dialogues moved or are absent: the stand-in below says so
        loaded = []
    if {(it.item_id, it.real, it.alt) for it in loaded} != want:
        loaded = [Item(str(r.item_id), str(r.source), str(r.dialogue_id), str(r.kind),
                       (("customer", str(r.last_customer_turn)),), str(r.real), str(r.alt)) for r in items.itertuples()]
        notes.append("Prompts: the run's dialogues could not be reloaded to match items.csv, so each prompt's "
                     "conversation is cut to its last customer turn (items.csv keeps only that); the replies, "
                     "cues and instructions are as the judge saw them.")
    return {r.request_id: r.messages[-1]["content"] for r in plan(params, loaded).requests}


def _chosen(answer: Any, order: Any, task: str) -> Any:
    if task != "pairwise" or missing(answer):
        return answer
    return ("real" if str(answer) == "A" else "alt") if str(order) == "realA" else ("alt" if str(answer) == "A" else "real")


def _pairs_of(g: pd.DataFrame) -> list[tuple[Any, Any, str, str]]:
    """(row a, row b, cue, kind) of one judge x item x task."""
    rows = {(r.condition, r.order): r for r in g.itertuples()}
    out = []
    base = [r for r in g.itertuples() if r.condition == "baseline"]
    if len(base) == 2 and g["task"].iloc[0] == "pairwise":
        ra, rb = sorted(base, key=lambda r: str(r.order))
        out.append((ra, rb, "position", "counterfactual"))
    for r in g.itertuples():
        if r.condition == "baseline":
            continue
        a = rows.get(("baseline", r.order))
        if a is None:
            continue
        noisy = r.condition == "reworded" or str(r.condition).startswith("repeat")
        out.append((a, r, str(r.condition), "noise" if noisy else "counterfactual"))
    return out


def _sequential(d: Path) -> str | None:
    """From ``sequential_cells.csv`` (a sequential run): one note saying which (judge, cue) cells stopped early,
    where and why, and which stayed undecided."""
    path = folder_file(d, "sequential_cells.csv")
    if path is None:
        return None
    t = read_csv(path)
    need(t, ["judge", "cue", "verdict", "items_used", "stopped_at_item", "reason"], path)
    early, rest = [], []
    for r in t.itertuples(index=False):
        cell = f"{r.judge} x {r.cue}" + (" (pointwise)" if str(getattr(r, "task", "")) == "pointwise" else "")
        if str(r.verdict) in ("pass", "fail") and not missing(r.stopped_at_item):
            early.append(f"{cell}: {r.verdict} at item {int(r.stopped_at_item)} ({r.reason})")
        else:
            rest.append(f"{cell}: {r.verdict} after {int(r.items_used)} items ({r.reason})")
    return ("Sequential audit: " + ("stopped early, decided: " + "; ".join(early) if early else "no cell decided")
            + (". Still undecided: " + "; ".join(rest) if rest else "") + ". A decided cue has pairs only for the "
            "items up to its stopping point.")


def explorer_pairs(folder: str | Path) -> PairSet | None:
    """Every compared pair of a judge-bias results folder (None without ``answers.csv``)."""
    d = Path(folder)
    ap, ip = folder_file(d, "answers.csv"), folder_file(d, "items.csv")
    if ap is None or ip is None:
        return None
    ans, items = read_csv(ap), read_csv(ip)
    need(ans, ["judge", "item_id", "task", "condition", "order", "answer", "parse_ok", "raw"], ap)
    need(items, ["item_id", "source", "dialogue_id", "kind", "last_customer_turn", "real", "alt"], ip)
    notes: list[str] = []
    prompts = _prompts(d, items, notes)
    seq = _sequential(d)
    if seq is not None:  # issue 35: which (judge, cue) cells stopped early and why
        notes.append(seq)
    cued = dict(zip(items["item_id"].astype(str), items.get("cued_candidate", pd.Series(dtype=str)).astype(str)))
    recs = []
    for (judge, item, task), g in ans.astype({"item_id": str}).groupby(["judge", "item_id", "task"], sort=False):
        for a, b, cue, kind in _pairs_of(g):
            recs.append((judge, item, task, a, b, cue, kind))
    if not recs:
        return None
    col = lambda side, f: [getattr(r[3 if side == "a" else 4], f) for r in recs]  # noqa: E731
    prompt = lambda side: [prompts.get(f"{r[1]}/{r[2]}/{x.condition}/{x.order}") for r in recs  # noqa: E731
                           for x in (r[3 if side == "a" else 4],)]
    chosen = {s: [_chosen(x.answer, x.order, r[2]) for r in recs for x in (r[3 if s == "a" else 4],)] for s in "ab"}
    ok = {s: [bool(x) and str(x).lower() != "false" for x in col(s, "parse_ok")] for s in "ab"}
    flipped, toward, reasons = [], [], []
    for i, r in enumerate(recs):
        both = ok["a"][i] and ok["b"][i]
        moved = both and str(chosen["a"][i]) != str(chosen["b"][i])
        target = cued.get(r[1], "")
        to_cue = moved and r[6] == "counterfactual" and r[5] != "position" and str(chosen["b"][i]) == target
        flipped.append(moved)
        toward.append(to_cue)
        why = f"chose {chosen['a'][i]} -> {chosen['b'][i]}" if moved else ""
        if to_cue:
            why += f" (toward the cued reply, {target})"
        if not both:
            why = "reply not parsed: " + " / ".join(str(x) for x in (r[3].raw, r[4].raw))
        reasons.append(why)
    metrics = [Metric("answer", "str", col("a", "answer"), col("b", "answer")),
               Metric("chosen reply", "str", chosen["a"], chosen["b"])]
    if "p_a" in ans:
        metrics.append(Metric("P(A)", "num", col("a", "p_a"), col("b", "p_a")))
    if "score" in ans and ans["score"].notna().any():
        metrics.append(Metric("score", "num", col("a", "score"), col("b", "score")))
    sides = lambda s: [f"{x.condition} ({x.order})" for x in (r[3 if s == "a" else 4] for r in recs)]  # noqa: E731
    kinds = dict(zip(items["item_id"].astype(str), items["kind"].astype(str)))
    return PairSet(
        pair_id=unique_ids([f"{r[0]}|{r[2]}|{r[1]}|{r[5]}" for r in recs]), arm=[r[2] for r in recs],
        kind=[r[6] for r in recs], side_a=sides("a"), side_b=sides("b"),
        facets={"judge": [r[0] for r in recs], "cue": [r[5] for r in recs], "item": [r[1] for r in recs],
                "item kind": [kinds.get(r[1], "?") for r in recs]},
        diffs=[Texts("prompt as the judge saw it", prompt("a"), prompt("b"))],
        outputs=[Texts("judge's reply", col("a", "raw"), col("b", "raw"))], metrics=metrics,
        flags=[Flag("flipped", flipped, "choice flipped", "chose the other reply", "same choice"),
               Flag("toward_cue", toward, "moved toward the cue", "toward the cued reply", "not toward the cue"),
               Flag("parse_fail", [not (x and y) for x, y in zip(ok["a"], ok["b"])], "replies not read",
                  "a reply not read (unparseable, refused, failed or not sent)",
                    "read on both sides")],
        reasons=reasons, notes=notes, same_input_note="the two prompts are identical").check(str(d))
