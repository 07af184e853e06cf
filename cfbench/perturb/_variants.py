"""``make_variants``: transcripts in, the tidy variants frame out."""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from tqdm import tqdm  # text bars: they render in executed notebooks and terminals alike

from cfbench.core.errors import InputError
from cfbench.io.transcripts import Transcript, load_transcripts, transcripts_from_records
from cfbench.core.render import render_transcript
from cfbench.core.schema import VARIANT_COLUMNS

from . import cues as _cues  # noqa: F401  (each module registers its perturber)
from . import disability as _disability  # noqa: F401
from . import disfluency as _disfluency  # noqa: F401
from . import gender as _gender  # noqa: F401
from . import header as _header  # noqa: F401
from . import names as _names  # noqa: F401
from . import style as _style  # noqa: F401
from .base import TABLE_DIMENSIONS, Variant, get_perturber
from .llm_tasks import Complete
from .identify import identify_turns
from .validate import check_variant

__all__ = ["make_variants", "render_transcript", "side_by_side", "variant_id", "original_variant_id",
           "DEFAULT_DIMENSIONS", "PROVENANCE_COLUMNS", "apply_decisions", "read_decisions"]

#: Columns after :data:`VARIANT_COLUMNS`: which perturber (``name@version``) made the row,
#: and who rejected it ("" when valid; "guard", "llm", "human" or "not applicable").
PROVENANCE_COLUMNS = ["perturber", "rejected_by"]

#: ``make_variants(dimensions=None)`` makes these: the 15 table rows.
DEFAULT_DIMENSIONS: tuple[str, ...] = TABLE_DIMENSIONS


def variant_id(item_id: str, dimension: str, condition: str) -> str:
    return f"{item_id}::{dimension}::{condition}"


def original_variant_id(item_id: str) -> str:
    return f"{item_id}::original"


def _as_transcripts(transcripts: Any) -> list[Transcript]:
    if isinstance(transcripts, (str, os.PathLike)):
        return load_transcripts(transcripts)
    out = list(transcripts)
    if all(isinstance(t, Transcript) for t in out):
        ids = [t.id for t in out]
        dup = next((i for i in ids if ids.count(i) > 1), None)
        if dup is not None:
            raise InputError("duplicate id", source="make_variants", record=dup, field="id")
        return out
    return transcripts_from_records([t.to_dict() if isinstance(t, Transcript) else t for t in out],
                                    source="make_variants")


def _row(t: Transcript, dim: str, cond: str, v: Variant, seed: int, problems: list[str], *,
         perturber: str = "", by: str = "guard") -> dict[str, Any]:
    return {
        "item_id": t.id,
        "dimension": dim,
        "condition": cond,
        "variant_id": variant_id(t.id, dim, cond),
        "operation": v.operation,
        "turns": v.turns,
        "header": v.header,
        "edits": v.edits,
        "seed": seed,
        "applicable": v.applicable,
        "reason": v.reason,
        "valid": bool(v.applicable and not problems),
        "rejection_reason": "not applicable" if not v.applicable else "; ".join(problems),
        "perturber": perturber,
        "rejected_by": "not applicable" if not v.applicable else (by if problems else ""),
    }


def make_variants(transcripts: Iterable[Transcript] | str | os.PathLike[str], *,
                  dimensions: Sequence[str] | None = None, seed: int = 0,
                  rewrite_judge: Complete | None = None, validate_judge: Complete | None = None,
                  identify_judge: Complete | None = None, max_regenerations: int = 3,
                  llm_check_all: bool = False, decisions: Any = None, progress: bool = True) -> pd.DataFrame:
    """Every counterfactual variant of every transcript, as a tidy frame.

    Parameters
    ----------
    transcripts : list of Transcript, list of JSONL-shaped dicts, or a path
        A path is read with :func:`cfbench.io.transcripts.load_transcripts`
        (STAR dialogues: :func:`cfbench.io.star.load_star` first).
    dimensions : sequence of str, optional
        Dimension ids (default: the 15 table rows, :data:`DEFAULT_DIMENSIONS`;
        ``"disfluency"`` is available as an extra).
    seed : int
        With the item id, determines every random choice (names, cues,
        templates, header fillers).
    identify_judge, rewrite_judge, validate_judge : judge callable, optional
        :data:`cfbench.perturb.llm_tasks.Complete` -- a batch of chat message
        lists in, one reply text (``None`` = failed call) per chat out; the
        study builds it from a judge spec. ``identify_judge`` identifies the
        turns of transcripts without a synthetic plan (a reply that fails the
        contract falls back to the rules for that item, noted in ``reason``).
        ``rewrite_judge`` rewrites the style variants of such transcripts
        (instead of the style rules), each checked by the guards and, with
        ``validate_judge``, an LLM equivalence check, regenerating up to
        ``max_regenerations`` times after the first attempt.
    llm_check_all : bool
        Also send every Operation-1/2 variant that passed the guards to
        ``validate_judge``; "not equivalent" marks it invalid (``rejected_by="llm"``).
    decisions : path or DataFrame, optional
        Human review decisions (the CSV exported by ``review.html``: columns
        ``variant_id`` and ``decision`` accept/reject); rejected variants become
        invalid with reason "human review" (``rejected_by="human"``).

    Returns
    -------
    DataFrame with :data:`cfbench.core.schema.VARIANT_COLUMNS` then
    :data:`PROVENANCE_COLUMNS`: one ``original`` row per item, then one row
    per (item, dimension, condition). ``turns`` is a list of ``{"speaker",
    "text"}`` (None when not applicable), ``edits`` a list of ``{"turn", "op",
    "speaker", "before", "after"}``, ``header`` a string or None. ``valid`` is
    False when a guard, the LLM validator or a human rejected the row
    (``rejection_reason`` says why) or the row is not applicable.
    """
    ts = _as_transcripts(transcripts)
    dims = list(DEFAULT_DIMENSIONS if dimensions is None else dimensions)
    for d in dims:
        get_perturber(d)  # raises KeyError on an unknown id
    if len(set(dims)) != len(dims):
        raise ValueError(f"dimensions listed twice: {dims}")
    if llm_check_all and validate_judge is None:
        raise ValueError("llm_check_all=True needs validate_judge")
    rows: list[dict[str, Any]] = []
    llm_jobs: list[tuple[int, Transcript, Any, str, str]] = []
    llm_idents, notes = _llm_identifications(ts, identify_judge, progress=progress)
    for t in tqdm(ts, desc="variants", disable=not progress):
        ident = llm_idents.get(t.id) or identify_turns(t)
        orig = Variant([x.to_dict() for x in t.turns], operation="none")
        r = _row(t, "original", "original", orig, seed, [], perturber="original")
        r["variant_id"] = original_variant_id(t.id)
        rows.append(r)
        for d in dims:
            p = get_perturber(d)
            tag = p.description.tag
            for cond in p.dimension.conditions:
                v = p.perturb(t, ident, cond, seed=seed)
                if (rewrite_judge is not None and p.dimension.category == "style" and ident.source != "plan"
                        and cond != "original"):
                    llm_jobs.append((len(rows), t, ident, d, cond))
                if v.applicable and t.id in notes and not v.reason:
                    v.reason = notes[t.id]
                rows.append(_row(t, d, cond, v, seed, check_variant(t, v), perturber=tag))
    if llm_jobs:
        from .llm import llm_style_variants

        results = llm_style_variants([(t, ident, d, c) for _, t, ident, d, c in llm_jobs], seed=seed,
                                     rewrite_judge=rewrite_judge, validate_judge=validate_judge,
                                     max_regenerations=max_regenerations, progress=progress)
        for (pos, t, _, d, c), (v, problems) in zip(llm_jobs, results):
            by = "llm" if problems and any(p.startswith("valid") for p in problems) else "guard"
            rows[pos] = _row(t, d, c, v, seed, problems, perturber=f"{rows[pos]['perturber']}+llm", by=by)
    if llm_check_all:
        _llm_check_all(rows, ts, validate_judge, progress=progress)
    frame = pd.DataFrame(rows, columns=VARIANT_COLUMNS + PROVENANCE_COLUMNS)
    if decisions is not None:
        frame = apply_decisions(frame, decisions)
    return frame


def _llm_identifications(ts: Sequence[Transcript], identify_judge: Complete | None, *,
                         progress: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """The LLM's turn identification of the transcripts without a synthetic plan (by id), and a note per
    transcript whose reply failed the contract (the rules identify its turns instead)."""
    llm_idents: dict[str, Any] = {}
    notes: dict[str, str] = {}
    if identify_judge is None:
        return llm_idents, notes
    from .identify import TurnIdentification, plan_matches
    from .llm import identify_turns_llm

    need = [t for t in ts if not plan_matches(t)]
    for t, res in zip(need, identify_turns_llm(need, identify_judge, progress=progress) if need else []):
        if res["parse_ok"]:
            llm_idents[t.id] = TurnIdentification.from_llm(res["identification"], t)
        else:
            notes[t.id] = f"LLM identification failed ({res['parse_error']}); rule-based identification used"
    return llm_idents, notes


def _llm_check_all(rows: list[dict[str, Any]], ts: Sequence[Transcript], validate_judge: Complete | None, *,
                   progress: bool) -> None:
    """Send every Operation-1/2 variant that passed the guards to ``validate_judge``; a "not equivalent"
    reply marks its row invalid (``rejected_by="llm"``), in place."""
    from .llm import llm_check_variants

    by_id = {t.id: t for t in ts}
    picks = [k for k, r in enumerate(rows)
             if r["valid"] and r["operation"] in ("turn_transformation", "context_injection")
             and not str(r["reason"]).startswith("LLM rewrite")]
    checks = llm_check_variants([by_id[rows[k]["item_id"]] for k in picks],
                                [Variant(rows[k]["turns"], edits=rows[k]["edits"]) for k in picks],
                                validate_judge=validate_judge, progress=progress)
    for k, problems in zip(picks, checks):
        if problems:
            rows[k].update(valid=False, rejection_reason="; ".join(problems), rejected_by="llm")


def read_decisions(decisions: Any) -> pd.DataFrame:
    """Review decisions as a frame ``variant_id, decision`` (decision ``accept``/``reject``).

    Accepts a path to the CSV exported by ``review.html`` or a DataFrame. An
    unknown decision value or a missing column raises :class:`InputError`.
    """
    if isinstance(decisions, pd.DataFrame):
        df, source = decisions.copy(), "<decisions frame>"
    else:
        source = str(decisions)
        if not os.path.exists(source):
            raise InputError("does not exist", source=source, record="<file>", field=None)
        df = _read_decisions_csv(source)
    for col in ("variant_id", "decision"):
        if col not in df.columns:
            raise InputError("is missing", source=source, record="<header>", field=col)
    unknown = [c for c in df.columns if c not in ("variant_id", "decision")]
    if unknown:
        raise InputError(f"unknown column(s) {unknown}; a decisions file has variant_id,decision",
                         source=source, record="<header>", field=str(unknown[0]))
    for k, r in df.iterrows():
        if r["decision"] not in ("accept", "reject"):
            raise InputError(f"must be 'accept' or 'reject', got {r['decision']!r}", source=source,
                             record=r["variant_id"] or f"row {k + 2}", field="decision")
    dup = df["variant_id"][df["variant_id"].duplicated()]
    if len(dup):
        raise InputError("decided twice", source=source, record=dup.iloc[0], field="variant_id")
    return df[["variant_id", "decision"]]


def _read_decisions_csv(source: str) -> pd.DataFrame:
    """The decisions CSV as strings; a header naming a column twice is an error (pandas would
    rename the second one and the first would win)."""
    import csv

    from cfbench.io.headers import check_header

    with open(source, encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh), [])
    check_header(header, source=source, record="<header>")
    return pd.read_csv(source, dtype=str, keep_default_na=False)


def apply_decisions(variants: pd.DataFrame, decisions: Any) -> pd.DataFrame:
    """``variants`` with human-rejected rows marked invalid (reason "human review", ``rejected_by="human"``).

    A decision for a variant id that is not in the frame raises :class:`InputError`
    (a review of another run must not be applied silently).
    """
    d = read_decisions(decisions)
    source = "<decisions frame>" if isinstance(decisions, pd.DataFrame) else str(decisions)
    known = set(variants["variant_id"])
    # the page's export writes an id a spreadsheet would run as a formula with a leading "'"
    d["variant_id"] = [v[1:] if v not in known and v[:1] == "'" and v[1:2] in ("=", "+", "-", "@", "\t", "\r")
                       and v[1:] in known else v for v in d["variant_id"]]
    unknown = [v for v in d["variant_id"] if v not in known]
    if unknown:
        raise InputError(f"not a variant of this run ({len(unknown)} unknown ids)", source=source,
                         record=unknown[0], field="variant_id")
    originals = set(variants.loc[variants["dimension"] == "original", "variant_id"])
    on_original = [v for v in d["variant_id"] if v in originals]
    if on_original:
        raise InputError("is an original transcript, not a variant: there is nothing to accept or reject "
                         f"({len(on_original)} such decisions)", source=source, record=on_original[0],
                         field="variant_id")
    out = variants.copy()
    if "rejected_by" not in out.columns:
        out["rejected_by"] = ""
    rejected = set(d.loc[d["decision"] == "reject", "variant_id"])
    mask = out["variant_id"].isin(rejected) & out["valid"].astype(bool)
    out.loc[mask, "valid"] = False
    out.loc[mask, "rejection_reason"] = "human review"
    out.loc[mask, "rejected_by"] = "human"
    return out


def side_by_side(variants: pd.DataFrame, item_id: str, *, conditions: Mapping[str, str] | None = None,
                 dimensions: Sequence[str] | None = None) -> pd.DataFrame:
    """For one item, what each dimension's variant changed (Appendix-E style).

    One variant per dimension: ``conditions[dim]`` if given, else the first
    applicable condition whose operation is not ``none``. Returns rows
    ``dimension, condition, where, original, variant, valid`` (one row per
    edited turn; the header as ``where="header"``; a not-applicable dimension
    as one row with its reason).
    """
    df = variants[(variants["item_id"] == item_id) & (variants["dimension"] != "original")]
    if df.empty:
        raise KeyError(f"no variants for item {item_id!r}")
    dims = list(dimensions) if dimensions is not None else list(dict.fromkeys(df["dimension"]))
    out = []
    for dim in dims:
        g = df[df["dimension"] == dim]
        if g.empty:
            continue
        if conditions and dim in conditions:
            pick = g[g["condition"] == conditions[dim]]
        else:
            pick = g[g["applicable"].astype(bool) & (g["operation"] != "none")]
        if pick.empty:
            out.append({"dimension": dim, "condition": "", "where": "", "original": "",
                        "variant": f"(not applicable: {g['reason'].iloc[0]})", "valid": False})
            continue
        row = pick.iloc[0]
        if not row["applicable"]:
            out.append({"dimension": dim, "condition": row["condition"], "where": "", "original": "",
                        "variant": f"(not applicable: {row['reason']})", "valid": False})
            continue
        if isinstance(row["header"], str) and row["header"]:
            out.append({"dimension": dim, "condition": row["condition"], "where": "header", "original": "",
                        "variant": row["header"], "valid": bool(row["valid"])})
        for e in row["edits"]:
            where = f"turn {e['turn']}" if e["op"] == "replace" else f"inserted turn {e['turn']}"
            out.append({"dimension": dim, "condition": row["condition"], "where": f"{where} ({e['speaker']})",
                        "original": e["before"], "variant": e["after"], "valid": bool(row["valid"])})
    return pd.DataFrame(out, columns=["dimension", "condition", "where", "original", "variant", "valid"])

