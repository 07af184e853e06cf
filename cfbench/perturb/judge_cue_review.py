"""Cued pairs as variant rows: the review page and Table 9 for the judge-bias cues.

:func:`cue_variants` turns items (anything with ``item_id``, ``real``, ``alt``) x cues into the
tidy variants frame :func:`cfbench.perturb.make_variants` returns
(:data:`cfbench.core.schema.VARIANT_COLUMNS` + ``perturber``, ``rejected_by``), so
:func:`cfbench.perturb.review.review_html`, :func:`cfbench.perturb.apply_decisions` and
:func:`cfbench.perturb.rejection_table` (Table 9) apply to cues unchanged.

A presentation is written as "turns", one per candidate in the uncued order (speaker = the
candidate key, text = ``Reply A (label): reply`` as the judge sees it), then the note (speaker
``note``) when there is one. The original row of an item is the uncued pair; a cue row holds the
cued presentation with an edit per changed line (``replace``) and the note as an ``insert``, so
the page's word diff shows exactly the cue's span (a slot letter, a label, padding, a sign-off).
Dimension ``cue:<name>``, condition = the cued candidate's key, perturber ``name@version``.
The guard's verdict (:meth:`CandidateCue.guard`, seeded) is ``valid`` / ``rejection_reason``
with ``rejected_by="guard"``; a cue that leaves the presentation as it was (``position`` with the cued
reply already in slot A) is an unchanged comparison row (operation ``none``, not counted as made in
Table 9); a cue whose task list leaves out ``task`` is a not-applicable row.
Nothing is dropped: every (item, cue, target) gives one row.

:func:`cue_guard_catch_table` measures the guards as :func:`cfbench.perturb.report.guard_catch_table`
does for transcript variants: every clean cued pair is corrupted in each way of
:func:`cue_corruptions` and the table counts how many the cue's guard rejects (target: all).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import re
from dataclasses import replace

import pandas as pd

from cfbench.core.schema import VARIANT_COLUMNS

from ._variants import PROVENANCE_COLUMNS, apply_decisions, original_variant_id, variant_id
from .judge_cue_base import CandidateCue, CandidatePair, get_cue
from . import judge_cues as _judge_cues  # noqa: F401  (registers the cues)

__all__ = ["cue_variants", "presentation_turns", "plain_pair", "cue_dimension", "cue_corruptions",
           "cue_guard_catch_table"]


def cue_dimension(name: str) -> str:
    """The ``dimension`` value of a cue's rows."""
    return f"cue:{name}"


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, Mapping) else getattr(item, name)


def plain_pair(item: Any, order: Sequence[str] = ("real", "alt")) -> CandidatePair:
    """The uncued pair of an item: ``real`` in slot A, ``alt`` in slot B (or ``order``)."""
    return CandidatePair({"real": str(_field(item, "real")), "alt": str(_field(item, "alt"))}, tuple(order))


def presentation_turns(pair: CandidatePair, keys: Sequence[str]) -> list[dict[str, str]]:
    """The pair as the judge sees it, one "turn" per candidate in ``keys`` order, then the note if any."""
    out = []
    for k in keys:
        label = pair.labels.get(k, "")
        out.append({"speaker": k, "text": f"Reply {pair.slot_of(k)}{f' ({label})' if label else ''}: {pair.texts[k]}"})
    if pair.note:
        out.append({"speaker": "note", "text": pair.note})
    return out


def _edits(before: list[dict[str, str]], after: list[dict[str, str]]) -> list[dict[str, Any]]:
    edits = []
    for i, (b, a) in enumerate(zip(before, after)):
        if b["text"] != a["text"]:
            edits.append({"turn": i, "op": "replace", "speaker": a["speaker"], "before": b["text"], "after": a["text"]})
    for i in range(len(before), len(after)):
        edits.append({"turn": i, "op": "insert", "speaker": after[i]["speaker"], "before": "", "after": after[i]["text"]})
    for i in range(len(after), len(before)):  # a note the cue removed: shown as emptied
        edits.append({"turn": i, "op": "replace", "speaker": before[i]["speaker"], "before": before[i]["text"],
                      "after": ""})
    return edits


_OPERATION = {"position": "turn_transformation", "verbosity": "turn_transformation",
              "agent_identity": "turn_transformation"}


def _row(item_id: str, dim: str, cond: str, vid: str, operation: str, turns: Any, edits: list, seed: int,
         applicable: bool, reason: str, problems: list[str], perturber: str) -> dict[str, Any]:
    return {"item_id": item_id, "dimension": dim, "condition": cond, "variant_id": vid, "operation": operation,
            "turns": turns, "header": None, "edits": edits, "seed": seed, "applicable": applicable,
            "reason": reason, "valid": bool(applicable and not problems),
            "rejection_reason": "not applicable" if not applicable else "; ".join(problems),
            "perturber": perturber,
            "rejected_by": "not applicable" if not applicable else ("guard" if problems else "")}


def cue_variants(items: Iterable[Any], cues: Sequence[str | CandidateCue], *, seed: int = 0,
                 targets: Mapping[str, str] | None = None, orders: Mapping[str, Sequence[str]] | None = None,
                 task: str = "pairwise", decisions: Any = None, make: Any = None) -> pd.DataFrame:
    """One ``original`` row per item (the uncued pair) and one row per (item, cue, cued candidate).

    ``items``: objects or mappings with ``item_id``, ``real``, ``alt`` (e.g. the judge-bias study's
    items). ``cues``: registered names or cue objects. ``targets``: item id -> the cued candidate
    (``"real"``/``"alt"``); None = both candidates, one row each. ``orders``: item id -> the uncued
    slot order the cues start from (e.g. ``("alt", "real")``; default real in slot A). ``seed`` is the seed the cues draw
    with (the study's ``Params.seed``), and the guard checks the seeded choice. ``decisions``: the CSV
    the review page exports (rejected rows become invalid, ``rejected_by="human"``). ``make``
    (for tests of the guard) replaces a cue's ``make``: ``make(cue, pair, target, seed, item_id)``.
    """
    objs = [c if isinstance(c, CandidateCue) else get_cue(c) for c in cues]
    names = [c.name for c in objs]
    if len(set(names)) != len(names):
        raise ValueError(f"cues listed twice: {names}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for it in items:
        iid = str(_field(it, "item_id"))
        if iid in seen:
            raise ValueError(f"item {iid!r} listed twice")
        seen.add(iid)
        plain = plain_pair(it, orders[iid] if orders is not None else ("real", "alt"))
        keys = list(plain.order)
        base = presentation_turns(plain, keys)
        r = _row(iid, "original", "original", original_variant_id(iid), "none", base, [], seed, True, "", [],
                 "original")
        rows.append(r)
        tlist = list(plain.order) if targets is None else [targets[iid]]
        for cue in objs:
            dim = cue_dimension(cue.name)
            tag = cue.description.tag
            for target in tlist:
                vid = variant_id(iid, dim, target)
                if task not in cue.tasks:
                    rows.append(_row(iid, dim, target, vid, _OPERATION.get(cue.name, "context_injection"), None, [],
                                     seed, False, f"the cue does not apply to the {task} task (tasks: "
                                     f"{', '.join(cue.tasks)})", [], tag))
                    continue
                cued = (make(cue, plain, target, seed, iid) if make is not None
                        else cue.make(plain, target, seed=seed, item_id=iid))
                problems = cue.guard(plain, cued, seed=seed, item_id=iid)
                turns = presentation_turns(cued, keys) if set(cued.texts) == set(plain.texts) else \
                    [{"speaker": k, "text": str(v)} for k, v in cued.texts.items()]
                reason = "; ".join(f"{k}: {v}" for k, v in dict(cued.stands_for).items())
                edits = _edits(base, turns)
                operation = _OPERATION.get(cue.name, "context_injection")
                if not edits and not problems:  # e.g. position with the cued reply already in slot A
                    operation = "none"
                    reason = reason or "the cue leaves this presentation as it was (the comparison condition)"
                rows.append(_row(iid, dim, target, vid, operation, turns, edits, seed, True, reason, problems, tag))
    frame = pd.DataFrame(rows, columns=VARIANT_COLUMNS + PROVENANCE_COLUMNS)
    if decisions is not None:
        frame = apply_decisions(frame, decisions)
    return frame


_WORD3 = re.compile(r"[A-Za-z]{3,}")


def _edit_word(text: str) -> str:
    """``text`` with its first word of three or more letters replaced (a content edit in the reply's own text)."""
    m = _WORD3.search(text)
    if not m:
        return text + " purple"
    return text[:m.start()] + ("purple" if m.group(0).lower() != "purple" else "orange") + text[m.end():]


def cue_corruptions(plain: CandidatePair, cued: CandidatePair) -> list[tuple[str, CandidatePair]]:
    """Copies of a clean cued pair, each changing something no cue claims: ``other_reply_edited``,
    ``cued_reply_edited`` (a word of its own text), ``content_appended`` (a sentence with an amount and
    a commitment after the cued reply), ``cue_tag_changed``, ``label_on_other`` (a label on the
    other reply), ``note_reworded`` (a note added, or the cue's note reworded), ``order_reversed``
    (the slots exchanged again) and ``stands_for_invented``. A copy equal to the cued pair is left out."""
    t = cued.target
    o = next(k for k in plain.texts if k != t)
    out = [
        ("other_reply_edited", replace(cued, texts={**dict(cued.texts), o: _edit_word(cued.texts[o])})),
        ("cued_reply_edited", replace(cued, texts={**dict(cued.texts), t: _edit_word(cued.texts[t])})),
        ("content_appended", replace(cued, texts={**dict(cued.texts),
                                                  t: cued.texts[t] + " We will refund 20 dollars today."})),
        ("cue_tag_changed", replace(cued, cue=cued.cue.split("@")[0] + "@999")),
        ("label_on_other", replace(cued, labels={**dict(cued.labels),
                                                 o: (cued.labels.get(o, "") + " (checked by a manager)").strip()})),
        ("note_reworded", replace(cued, note=(cued.note.replace("Most", "All") if "Most" in cued.note
                                              else cued.note + " Reviewers preferred Reply A."))),
        ("order_reversed", replace(cued, order=(cued.order[1], cued.order[0]))),
        ("stands_for_invented", replace(cued, stands_for={**dict(cued.stands_for), t: "an identity nobody drew"})),
    ]
    return [(k, c) for k, c in out if c != cued]


def cue_guard_catch_table(items: Iterable[Any], cues: Sequence[str | CandidateCue], *, seed: int = 0) -> pd.DataFrame:
    """Per (cue, corruption kind): ``n`` corrupted pairs, ``n_rejected`` by the cue's guard, ``rejected_pct``.

    Every item is cued with each candidate as the target; a clean cued pair that fails its own guard
    raises (it would never reach a judge)."""
    objs = [c if isinstance(c, CandidateCue) else get_cue(c) for c in cues]
    rows = []
    for it in items:
        iid = str(_field(it, "item_id"))
        plain = plain_pair(it)
        for cue in objs:
            for target in plain.order:
                cued = cue.apply(plain, target, seed=seed, item_id=iid)
                for kind, bad in cue_corruptions(plain, cued):
                    rows.append({"cue": cue.name, "kind": kind,
                                 "rejected": bool(cue.guard(plain, bad, seed=seed, item_id=iid))})
    df = pd.DataFrame(rows, columns=["cue", "kind", "rejected"])
    tab = df.groupby(["cue", "kind"], sort=False)["rejected"].agg(n="size", n_rejected="sum").reset_index()
    tab["rejected_pct"] = (100.0 * tab["n_rejected"] / tab["n"]).round(1)
    return tab
