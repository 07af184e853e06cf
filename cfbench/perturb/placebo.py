"""Placebo variants of the identity dimensions: a same-group swap (condition ``"placebo"``).

A placebo variant makes the *same kind* of edit as the dimension's own perturber, but keeps the
identity: the agent's name is replaced by another name of the original name's own group (the same
ethnicity or religion list of ``names.yaml``; for ``gender`` the same gender and ethnicity list), of the
same gender and of the same length class (:func:`length_class`); a cue dimension also adds that same group's cues.
Compared with the original transcript, it tells "the judge reacts to *who* the agent is" from "the
judge reacts to any edit of this kind".

The placebo is drawn by the dimension's own perturber (so the edit operation is the same code): it is
asked for the original's group under a sequence of derived seeds, drawn from ``(seed, item, dimension)``
(:func:`cfbench.perturb.base.item_rng`), and the first variant whose new name passes the checks above
is kept. When the original's group is not known (a name in none of the lists, no agent name) or no
name of the group passes, the row is not applicable and its ``reason`` says why (never a variant of
another group).

>>> length_class("Mei"), length_class("Megan"), length_class("Priyanka")
('short', 'medium', 'long')
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from cfbench.io.transcripts import Transcript

from .base import Variant, get_perturber, item_rng
from .identify import TurnIdentification, identify_turns, name_lookup
from .validate import check_variant

__all__ = ["PLACEBO", "PLACEBO_DIMENSIONS", "length_class", "original_group", "placebo_variant", "placebo_rows",
           "MAX_DRAWS"]

#: the condition of a placebo variant
PLACEBO = "placebo"
#: dimension -> the names.yaml list its group is read from (``gender``: the gender of the agent)
PLACEBO_DIMENSIONS = {"gender": "gender", "ethnicity_name": "ethnicity", "religion_name": "religion",
                      "ethnicity_cues": "ethnicity", "religion_cues": "religion"}
#: derived seeds tried before a placebo row is called not applicable
MAX_DRAWS = 64


def length_class(name: str) -> str:
    """``short`` (at most 4 letters), ``medium`` (5-6) or ``long`` (7 or more), of the first name's letters."""
    first = (name or "").strip().split()[0] if (name or "").strip() else ""
    n = sum(ch.isalpha() for ch in first)
    return "short" if n <= 4 else ("medium" if n <= 6 else "long")


def _gender_of(ident: TurnIdentification) -> str:
    return ident.agent_gender or name_lookup(ident.agent_name).get("gender", "")


def original_group(dimension: str, ident: TurnIdentification) -> str:
    """The original agent's group on ``dimension`` ("" when not known): the gender for ``gender``, else the
    ethnicity / religion list the agent's name appears in."""
    kind = PLACEBO_DIMENSIONS[dimension]
    if kind == "gender":
        return _gender_of(ident)
    return ident.agent_race if kind == "ethnicity" else ident.agent_religion


def _new_name(v: Variant) -> str:
    swaps = (v.checks.get("scope") or {}).get("swaps") or []
    return str(swaps[0][1]) if swaps else ""


def _accept(v: Variant, transcript: Transcript, ident: TurnIdentification, gender: str, ethnicity: str) -> str:
    """The new name when ``v`` is a usable placebo of the original, else "" (``ethnicity``: the list the new
    name must also be in, "" for any)."""
    new = _new_name(v)
    if not v.applicable or not new or new.lower() == ident.agent_name.strip().split()[0].lower() \
            or new.lower() == ident.agent_name.lower():
        return ""
    if length_class(new) != length_class(ident.agent_name) or name_lookup(new).get("gender", "") != gender:
        return ""
    if ethnicity and name_lookup(new).get("ethnicity", "") != ethnicity:
        return ""
    if v.turns == [x.to_dict() for x in transcript.turns]:
        return ""
    return new


def placebo_variant(dimension: str, transcript: Transcript, ident: TurnIdentification, *, seed: int) -> Variant:
    """The placebo variant of ``transcript`` on ``dimension`` (see the module note), or a not-applicable one."""
    p = get_perturber(dimension)
    op = p.dimension.operation
    group, gender = original_group(dimension, ident), _gender_of(ident)
    if not ident.agent_name or not ident.name_turns:
        return Variant.not_applicable("placebo: the agent gives no name to swap within its group", op)
    if not group or not gender:
        return Variant.not_applicable(f"placebo: the original name's {PLACEBO_DIMENSIONS[dimension]} is not in the "
                                      "name lists (no same-group alternative is defined)", op)
    # gender: the new name keeps the original's ethnicity list too (a gender placebo must not swap ethnicity)
    ethnicity = ident.agent_race if dimension == "gender" else ""
    if dimension == "gender" and not ethnicity:
        return Variant.not_applicable("placebo: the original name's ethnicity is not in the name lists (a same-gender "
                                      "name of the same ethnicity is not defined)", op)
    rng = item_rng(seed, transcript.id, "placebo", dimension)
    for _ in range(MAX_DRAWS):
        v = p.perturb(transcript, ident, group, seed=int(rng.integers(2**31)))
        new = _accept(v, transcript, ident, gender, ethnicity)
        if new:
            v.reason = (f"placebo: same-group swap ({PLACEBO_DIMENSIONS[dimension]} {group}, {gender}, "
                        f"{length_class(new)} name)")
            v.checks.update(placebo_group=group, placebo_name=new, length_class=length_class(new))
            return v
    return Variant.not_applicable(f"placebo: no other {length_class(ident.agent_name)} {gender} name of "
                                  f"{group} in {MAX_DRAWS} draws", op)


def placebo_rows(transcripts: Iterable[Transcript], dimensions: Sequence[str], *, seed: int,
                 idents: dict[str, Any] | None = None) -> pd.DataFrame:
    """One variants-frame row (condition :data:`PLACEBO`) per transcript and placebo-capable dimension of
    ``dimensions`` (the others are skipped), with the guards of :func:`check_variant` applied; the columns
    of :func:`cfbench.perturb.make_variants`. ``idents``: turn identifications by item id (default: the
    rules / the synthetic plan, :func:`identify_turns`)."""
    from cfbench.core.schema import VARIANT_COLUMNS

    from ._variants import PROVENANCE_COLUMNS, _row

    dims = [d for d in dimensions if d in PLACEBO_DIMENSIONS]
    rows = []
    for t in transcripts:
        ident = (idents or {}).get(t.id) or identify_turns(t)
        for d in dims:
            v = placebo_variant(d, t, ident, seed=seed)
            problems = check_variant(t, v) if v.applicable else []
            rows.append(_row(t, d, PLACEBO, v, seed, problems,
                             perturber=f"{get_perturber(d).description.tag}+placebo"))
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS + PROVENANCE_COLUMNS)
