"""Semantic-equivalence guards for variants, and the rejection-rate table.

:func:`check_variant` runs deterministic guards on every variant:

* only declared edits happened: turns not in ``edits`` are byte-identical,
  speakers never change, inserted turns are declared as inserts;
* only target turns changed (the turns the identification or the plan named);
* numbers, amounts, dates and product facts (``meta["facts"]``) are preserved;
* the transcript's length ratio stays within bounds, not counting declared
  additions (inserted turns, injected cue sentences); for LLM-made rewrites
  each rewritten turn's ratio too;
* after a name swap the original agent name no longer appears;
* the edit scope (:mod:`cfbench.perturb.scope`): the word-level diff touches
  only what the dimension intends; freely rewritten turns keep their numbers,
  names, questions and do not copy a neighbour.

It returns the list of failed guards (empty = valid). LLM-made variants are
additionally checked by an LLM validator (:mod:`cfbench.perturb.llm`).
A rejected variant stays in the frame with ``valid=False`` and its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

import pandas as pd

from cfbench.io.transcripts import Transcript

from .base import DIMENSIONS, Variant
from .scope import _remove_inserted, rewrite_problems, scope_problems

__all__ = ["check_variant", "fact_tokens", "rejection_table", "GuardSettings"]

_NUM = re.compile(r"\d+(?:[.,:/\-]\d+)*")
# "may" counts as a month only before a day number (otherwise it is the modal verb)
_MONTH = re.compile(r"(?i)\b(january|february|march|april|june|july|august|september|october|"
                    r"november|december|may(?=\s+\d))\b")


class GuardSettings:
    """Bounds used by :func:`check_variant` (module-level defaults, override per call)."""

    min_ratio = 0.6
    max_ratio = 1.6
    llm_turn_min_ratio = 0.33
    llm_turn_max_ratio = 3.0


def fact_tokens(text: str) -> Counter[str]:
    """Numbers (with their internal separators) and month names in ``text``.

    >>> sorted(fact_tokens("Refund $42.10 on March 3rd, ref 4471-2290.").elements())
    ['3', '42.10', '4471-2290', 'march']
    """
    c: Counter[str] = Counter(m.group(0) for m in _NUM.finditer(text))
    c.update(m.group(0).lower() for m in _MONTH.finditer(text))
    return c


def _diff(a: Counter[str], b: Counter[str]) -> tuple[list[str], list[str]]:
    return sorted((a - b).elements()), sorted((b - a).elements())


def check_variant(original: Transcript, variant: Variant, *, facts: Sequence[str] | None = None,
                  min_ratio: float | None = None, max_ratio: float | None = None) -> list[str]:
    """Failed guards for one variant of ``original`` (an empty list means valid).

    ``facts`` defaults to ``original.meta["facts"]`` when present.
    """
    if not variant.applicable or variant.turns is None:
        return []
    min_ratio = GuardSettings.min_ratio if min_ratio is None else min_ratio
    max_ratio = GuardSettings.max_ratio if max_ratio is None else max_ratio
    problems: list[str] = []
    inserted = {int(e["turn"]) for e in variant.edits if e.get("op") == "insert"}
    replaced = {int(e["turn"]): e for e in variant.edits if e.get("op", "replace") == "replace"}
    base = [t for k, t in enumerate(variant.turns) if k not in inserted]
    if len(base) != len(original.turns):
        problems.append(f"turn count changed outside declared insertions ({len(original.turns)} -> {len(base)})")
        return problems
    for i, (o, v) in enumerate(zip(original.turns, base)):
        if o.speaker != v["speaker"]:
            problems.append(f"speaker changed at turn {i}")
        if v["text"] != o.text and i not in replaced:
            problems.append(f"undeclared change at turn {i}")
        if i in replaced and (replaced[i]["before"] != o.text or replaced[i]["after"] != v["text"]):
            problems.append(f"edit record for turn {i} does not match the texts")
    targets = variant.checks.get("target_turns")
    if targets is not None and variant.operation != "none":
        extra = sorted(set(replaced) - set(targets))
        if extra:
            problems.append(f"non-target turn(s) changed: {extra}")
    if variant.operation == "metadata_header":
        if not variant.header:
            problems.append("metadata variant has no header")
    elif variant.header:
        problems.append("header set on a variant whose operation does not add one")

    orig_text = "\n".join(t.text for t in original.turns)
    var_text = "\n".join(t["text"] for t in variant.turns)
    missing, added = _diff(fact_tokens(orig_text), fact_tokens(var_text))
    if missing or added:
        problems.append(f"numbers/dates changed (missing {missing}, added {added})")
    facts = list(facts) if facts is not None else list(original.meta.get("facts", []) or [])
    for f in facts:
        if isinstance(f, str) and f and orig_text.count(f) != var_text.count(f):
            problems.append(f"fact {f!r} not preserved ({orig_text.count(f)} -> {var_text.count(f)})")
    # Declared additions (inserted turns, injected cue sentences) are the point of
    # the variant: the length and name guards look at the rest.
    injected = [c for c in variant.checks.get("injected", []) or [] if isinstance(c, str)]
    kept = []
    for t in base:
        here = [c for c in injected if c in t["text"]]
        kept.append(_remove_inserted(t["text"], here)[0])
    ratio = len("\n".join(kept)) / max(1, len(orig_text))
    if not (min_ratio <= ratio <= max_ratio):
        problems.append(f"length ratio {ratio:.2f} outside [{min_ratio}, {max_ratio}]")
    if variant.llm_made:
        for i, e in replaced.items():
            r = len(e["after"]) / max(1, len(e["before"]))
            if not (GuardSettings.llm_turn_min_ratio <= r <= GuardSettings.llm_turn_max_ratio):
                problems.append(f"turn {i} length ratio {r:.2f} out of bounds")
    problems += scope_problems(original, variant)
    scope = variant.checks.get("scope") or {}
    if scope.get("rewrite"):
        problems += rewrite_problems(original, variant, [int(i) for i in scope["rewrite"]])
    old = variant.checks.get("absent_name")
    if old:
        pat = re.compile(r"(?i)(?<![\w'’])" + re.escape(old.split()[0]) + r"(?!\w)")
        still = [k for k, t in enumerate(kept) if pat.search(t)]
        if still:
            problems.append(f"original agent name still present in turn(s) {still}")
    return problems


def rejection_table(variants: pd.DataFrame) -> pd.DataFrame:
    """Per-dimension rejection counts, like the seed's Table 9, by who rejected.

    Counts variants that were actually made (applicable, operation not
    ``none``). Columns: dimension, label, n_made, n_rejected,
    rejection_rate_pct (= rejected / made * 100), n_rejected_guard,
    n_rejected_llm, n_rejected_human (a variant is counted once, by the first
    check that rejected it: guards, then the LLM validator, then human review),
    n_not_applicable, top_reason.
    """
    rows = []
    df = variants[variants["dimension"] != "original"]
    by = df["rejected_by"] if "rejected_by" in df.columns else None
    for dim, g in df.groupby("dimension", sort=False):
        made = g[g["applicable"].astype(bool) & (g["operation"] != "none")]
        rej = made[~made["valid"].astype(bool)]
        who = (by.loc[rej.index] if by is not None else pd.Series("guard", index=rej.index)).replace("", "guard")
        reasons = Counter(str(r).split(";")[0].split(" (")[0].split(": ")[0] for r in rej["rejection_reason"] if r)
        rows.append({
            "dimension": dim,
            "label": DIMENSIONS[dim].label if dim in DIMENSIONS else dim,
            "n_made": int(len(made)),
            "n_rejected": int(len(rej)),
            "rejection_rate_pct": round(100.0 * len(rej) / len(made), 2) if len(made) else float("nan"),
            "n_rejected_guard": int((who == "guard").sum()),
            "n_rejected_llm": int((who == "llm").sum()),
            "n_rejected_human": int((who == "human").sum()),
            "n_not_applicable": int((~g["applicable"].astype(bool)).sum()),
            "top_reason": reasons.most_common(1)[0][0] if reasons else "",
        })
    return pd.DataFrame(rows, columns=REJECTION_COLUMNS)


REJECTION_COLUMNS = ["dimension", "label", "n_made", "n_rejected", "rejection_rate_pct", "n_rejected_guard",
                     "n_rejected_llm", "n_rejected_human", "n_not_applicable", "top_reason"]
