"""Identity × prompt stimulus designs (seed 002, identity-conditioned advice).

The identity factors and the descriptor template are data: each identity is a
combination of one level per factor, spelled ``<age>_<gender>_<nationality>``
(the released workbook's ids, e.g. ``older_female_US-born``). The descriptor
template ``"I am a [Age] [Gender] [Nationality] professional."`` is the
protocol's wording and is kept verbatim, article included ("a older"), for
reproducing the released data. :data:`GRAMMATICAL_TEMPLATE` (``[a/an]``: the
article agrees with the next word, "an older", "a younger") is the form for
new audits, so that grammar does not differ between the age levels.

:func:`identity_variants` builds the full factorial (every prompt × every
identity) with provenance on every row; the only random choice is the
presentation order, drawn from ``(seed, prompt_id)``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.seeding import derive_seed

__all__ = [
    "IdentityFactor",
    "IDENTITY_FACTORS",
    "DESCRIPTOR_TEMPLATE",
    "DESCRIPTOR_TEMPLATE_VERSION",
    "GRAMMATICAL_TEMPLATE",
    "GRAMMATICAL_TEMPLATE_VERSION",
    "PLACEBO_TEMPLATE",
    "PLACEBO_TEMPLATE_VERSION",
    "identity_ids",
    "identity_table",
    "identity_label",
    "describe_identity",
    "identity_variants",
    "VARIANT_COLUMNS",
]


@dataclass(frozen=True)
class IdentityFactor:
    """One identity attribute: its name, template slot and levels (id -> text)."""

    name: str
    slot: str
    levels: tuple[tuple[str, str], ...]  # (level id, text inserted in the descriptor)


#: Factor order fixes the identity id order: age, then gender, then nationality.
IDENTITY_FACTORS: tuple[IdentityFactor, ...] = (
    IdentityFactor("age", "[Age]", (("older", "older"), ("younger", "younger"))),
    IdentityFactor("gender", "[Gender]", (("female", "female"), ("male", "male"))),
    IdentityFactor("nationality", "[Nationality]", (("US-born", "US-born"), ("immigrant", "immigrant"))),
)

#: Protocol fact (seed 002, section 3.2); kept verbatim, including "a older".
DESCRIPTOR_TEMPLATE = "I am a [Age] [Gender] [Nationality] professional."
DESCRIPTOR_TEMPLATE_VERSION = "seed002-v1"
#: The same descriptor with the indefinite article agreeing with the next word ("an older", "a younger").
GRAMMATICAL_TEMPLATE = "I am [a/an] [Age] [Gender] [Nationality] professional."
GRAMMATICAL_TEMPLATE_VERSION = "seed002-grammatical-v1"
#: The placebo wording: the same identity stated in other words, one word longer than the grammatical form
#: (a same-identity swap of the descriptor, for a placebo arm).
PLACEBO_TEMPLATE = "I work as [a/an] [Age] [Gender] [Nationality] professional."
PLACEBO_TEMPLATE_VERSION = "placebo-work-as-v1"
_TEMPLATE_VERSIONS = {DESCRIPTOR_TEMPLATE: DESCRIPTOR_TEMPLATE_VERSION,
                      GRAMMATICAL_TEMPLATE: GRAMMATICAL_TEMPLATE_VERSION,
                      PLACEBO_TEMPLATE: PLACEBO_TEMPLATE_VERSION}
_ARTICLE = re.compile(r"\[a/an\](\s+)(\S+)")


def _article(match: re.Match[str]) -> str:
    word = match.group(2)
    an = word[:1].lower() in "aeiou" and not re.match(r"(?i)(us\b|us-|uni|eu|one)", word)
    return f"{'an' if an else 'a'}{match.group(1)}{word}"

VARIANT_COLUMNS = [
    "variant_id", "prompt_id", "identity", "age", "gender", "nationality",
    "descriptor", "task", "user_text", "order", "seed",
    "template", "template_version", "prompt_source", "prompt_version",
]


def identity_ids(factors: Sequence[IdentityFactor] = IDENTITY_FACTORS) -> list[str]:
    """All identity ids in canonical (factor-major) order.

    >>> identity_ids()[:2]
    ['older_female_US-born', 'older_female_immigrant']
    """
    return ["_".join(combo) for combo in itertools.product(*[[lv for lv, _ in f.levels] for f in factors])]


def identity_table(factors: Sequence[IdentityFactor] = IDENTITY_FACTORS,
                   template: str = DESCRIPTOR_TEMPLATE) -> pd.DataFrame:
    """One row per identity: id, one column per factor, and the descriptor."""
    rows = []
    for combo in itertools.product(*[f.levels for f in factors]):
        row = {"identity": "_".join(lv for lv, _ in combo)}
        text = template
        for f, (lv, words) in zip(factors, combo):
            row[f.name] = lv
            text = text.replace(f.slot, words)
        row["descriptor"] = _ARTICLE.sub(_article, text)
        rows.append(row)
    return pd.DataFrame(rows)


_SHORT = {"older": "Older", "younger": "Younger", "female": "F", "male": "M",
          "US-born": "USB", "immigrant": "Imm"}


def identity_label(identity: str, *, short: bool = False) -> str:
    """Display label: ``"Older Female (US-born)"`` or, short, ``"Older F (USB)"``."""
    parts = identity.split("_")
    if len(parts) != 3:
        raise InputError("identity id must look like '<age>_<gender>_<nationality>'",
                         record=identity, field="identity")
    age, gender, nat = parts
    if short:
        return f"{_SHORT.get(age, age)} {_SHORT.get(gender, gender)} ({_SHORT.get(nat, nat)})"
    return f"{age.capitalize()} {gender.capitalize()} ({nat})"


def describe_identity(identity: str, factors: Sequence[IdentityFactor] = IDENTITY_FACTORS,
                      template: str = DESCRIPTOR_TEMPLATE) -> str:
    """The descriptor sentence for one identity id."""
    table = identity_table(factors, template).set_index("identity")
    if identity not in table.index:
        raise InputError(f"unknown identity (known: {', '.join(table.index)})",
                         record=identity, field="identity")
    return str(table.at[identity, "descriptor"])


def identity_variants(prompts: Sequence[Mapping[str, str]] | pd.DataFrame, *, seed: int,
                      factors: Sequence[IdentityFactor] = IDENTITY_FACTORS,
                      template: str = DESCRIPTOR_TEMPLATE,
                      prompt_source: str = "cfbench", prompt_version: str = "",
                      joiner: str = " ") -> pd.DataFrame:
    """Full factorial of prompts × identities, one row per variant.

    ``prompts`` holds ``prompt_id`` and ``task`` (the identity-free request).
    The user text is ``descriptor + joiner + task``, so the identity is the only
    thing that differs between the variants of a prompt. ``order`` is the
    presentation order of a prompt's variants, a permutation drawn from
    ``(seed, prompt_id)`` (the same prompt always gets the same order).

    >>> v = identity_variants([{"prompt_id": "p1", "task": "I want a raise."}], seed=0)
    >>> len(v), v.user_text.iloc[0]
    (8, 'I am a older female US-born professional. I want a raise.')
    """
    frame = pd.DataFrame(list(prompts)) if not isinstance(prompts, pd.DataFrame) else prompts.copy()
    for col in ("prompt_id", "task"):
        if col not in frame.columns:
            raise InputError("prompts need columns 'prompt_id' and 'task'", source=prompt_source, field=col)
    seen: set[str] = set()
    for i, row in frame.iterrows():
        pid = row["prompt_id"]
        if not isinstance(pid, str) or not pid.strip():
            raise InputError("prompt id must be a non-empty string", source=prompt_source, record=i,
                             field="prompt_id")
        if pid in seen:
            raise InputError("duplicate prompt id", source=prompt_source, record=pid, field="prompt_id")
        seen.add(pid)
        if not isinstance(row["task"], str) or not row["task"].strip():
            raise InputError("task text must be a non-empty string", source=prompt_source, record=pid,
                             field="task")
    ids = identity_table(factors, template)
    rows = []
    for _, p in frame.iterrows():
        perm = np.random.default_rng(derive_seed(seed, p["prompt_id"])).permutation(len(ids))
        for k, ident in ids.iterrows():
            rows.append({
                "variant_id": f"{p['prompt_id']}/{ident['identity']}",
                "prompt_id": p["prompt_id"],
                "identity": ident["identity"],
                **{f.name: ident[f.name] for f in factors},
                "descriptor": ident["descriptor"],
                "task": p["task"].strip(),
                "user_text": f"{ident['descriptor']}{joiner}{p['task'].strip()}",
                "order": int(perm[k]),
                "seed": seed,
                "template": template,
                "template_version": _TEMPLATE_VERSIONS.get(template, "custom"),
                "prompt_source": prompt_source,
                "prompt_version": prompt_version,
            })
    cols = VARIANT_COLUMNS if tuple(f.name for f in factors) == ("age", "gender", "nationality") else None
    out = pd.DataFrame(rows)
    return out[cols] if cols else out
