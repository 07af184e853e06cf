"""Step 2 of the contact-center study: the counterfactual variants of the items and what is compared.

:func:`make_item_variants` is the one entry: the variants frame of ``params`` on a list of transcripts
(:func:`cfbench.perturb.make_variants`, with the LLM identify / rewrite / validate steps when their judge
specs are set), each dimension's compared set of conditions, and, for a sampled design
(``conditions_per_dimension``), the conditions each item compares (:func:`sample_conditions`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.seeding import rng_for
from cfbench.studies.contact_center_qa.params import dims_of

__all__ = ["make_item_variants", "sample_conditions", "add_placebo_rows", "with_placebo"]


def make_item_variants(params: Any, transcripts: Sequence[Any], *, progress: bool = True
                       ) -> tuple[pd.DataFrame, dict[str, Sequence[str]], dict[tuple[str, str], list[str]] | None]:
    """``(variants, compared, per_item)`` of ``params`` on ``transcripts`` (nothing is judged).

    ``compared`` maps each dimension to its compared conditions; ``per_item`` maps (item, dimension) to
    the sampled conditions, or is None when every compared condition is judged.
    """
    from cfbench.perturb import DIMENSIONS, make_variants

    dims = dims_of(params)
    variants = make_variants(list(transcripts), dimensions=dims, seed=params.seed,
                             identify_judge=_perturb_judge(params.identify_judge, "identify", params.seed),
                             rewrite_judge=_perturb_judge(params.rewrite_judge, "rewrite", params.seed),
                             validate_judge=_perturb_judge(params.validate_judge, "validate", params.seed),
                             llm_check_all=bool(params.validate_judge),  # the seed checks every Op-1/2 variant
                             progress=progress)
    placebo = bool(getattr(params, "placebo", False))  # placebo arm (issue 33, opt-in)
    if placebo:
        variants = add_placebo_rows(variants, transcripts, dims, seed=params.seed)
    if params.decisions_path:  # after the placebo rows, so a review of them applies too
        from cfbench.perturb import apply_decisions

        variants = apply_decisions(variants, params.decisions_path)
    compared: dict[str, Sequence[str]] = {d: DIMENSIONS[d].compared for d in dims}
    per_item = None
    if params.conditions_per_dimension:
        per_item = sample_conditions(variants, compared=compared, k=params.conditions_per_dimension,
                                     seed=params.seed)
    if placebo:  # judged beside the design, never one of its sampled conditions
        compared, per_item = with_placebo(variants, compared, per_item)
    return variants, compared, per_item


def add_placebo_rows(variants: pd.DataFrame, transcripts: Sequence[Any], dims: Sequence[str], *,
                     seed: int) -> pd.DataFrame:
    """``variants`` with one placebo row (condition ``"placebo"``, :func:`cfbench.perturb.placebo.placebo_rows`)
    per item and identity dimension of ``dims``. The placebo's turns are identified by the rules (or the
    synthetic plan) and checked by the guards; the LLM identify / validate steps are not run on it."""
    from cfbench.perturb.placebo import placebo_rows

    rows = placebo_rows(transcripts, dims, seed=seed)
    return pd.concat([variants, rows], ignore_index=True) if len(rows) else variants


def with_placebo(variants: pd.DataFrame, compared: dict[str, Sequence[str]],
                 per_item: dict[tuple[str, str], list[str]] | None
                 ) -> tuple[dict[str, Sequence[str]], dict[tuple[str, str], list[str]] | None]:
    """The placebo added to the compared set of every dimension with placebo rows and, in a sampled design,
    to every sampled (item, dimension) whose placebo is usable. The placebo is never one of the sampled
    conditions, so the counterfactual pairs of the design are the same with or without it."""
    from cfbench.perturb.placebo import PLACEBO

    pl = variants[variants["condition"] == PLACEBO]
    dims = set(pl["dimension"])
    compared = {d: tuple(c) + ((PLACEBO,) if d in dims else ()) for d, c in compared.items()}
    if per_item is not None:
        usable = pl[pl["applicable"].astype(bool) & pl["valid"].astype(bool)]
        per_item = {k: list(v) for k, v in per_item.items()}
        for item, dim in zip(usable["item_id"], usable["dimension"]):
            if (item, dim) in per_item:
                per_item[(item, dim)].append(PLACEBO)
    return compared, per_item


def _perturb_judge(spec: str, task: str, seed: int):
    """The LLM step ``task`` of the perturbers as a chat function of ``spec`` (None: rules only).

    Deterministic decoding (T = 0, a fixed seed), so a rerun makes the same variants from the cache.
    """
    if not spec:
        return None
    from cfbench.judges import GenerationConfig, chat_function

    config = GenerationConfig(temperature=0.0, top_p=1.0, max_tokens=400, seed=seed, repeat_penalty=1.0)
    return chat_function(spec, config, name=f"perturb-{task}")


def sample_conditions(variants: pd.DataFrame, *, compared: Mapping[str, Sequence[str]], k: int,
                      seed: int) -> dict[tuple[str, str], list[str]]:
    """For each (item, dimension): the conditions a sampled design compares, drawn per item.

    ``k = 1``: the item's original transcript against one counterfactual condition
    drawn from the dimension's compared set (its ``"original"`` excluded) - one
    pair per unit, the original's request shared by every dimension.
    ``k >= 2``: ``k`` conditions drawn from the compared set - ``k (k - 1) / 2`` pairs.
    The draw for an item and dimension depends only on ``(seed, item, dimension)``
    (:func:`cfbench.core.seeding.rng_for`), so adding items does not change the
    others' conditions. Only usable conditions (applicable, not rejected) are drawn,
    and with ``k = 1`` only those whose text differs from the original's (a condition
    that leaves the transcript as it was, such as ``disability: normal``, would make a
    pair that cannot flip and dilute the CFR); an (item, dimension) with nothing usable
    is left out (listed by the plan as not judged).
    """
    if k < 1:
        raise InputError(f"must be 0 (all) or at least 1, got {k}", field="conditions_per_dimension")
    usable = variants
    if "applicable" in usable.columns:
        usable = usable[usable["applicable"].fillna(True).astype(bool)]
    if "valid" in usable.columns:
        usable = usable[usable["valid"].map(lambda v: True if v is None or v != v else bool(v))]
    out: dict[tuple[str, str], list[str]] = {}
    same = _same_as_original(variants) if k == 1 else set()
    for (item, dim), grp in usable.groupby(["item_id", "dimension"], sort=True):
        if dim not in compared:
            continue
        made = set(grp["condition"]) - {c for c in grp["condition"] if (item, dim, c) in same}
        pool = [c for c in compared[dim] if c in made and (k >= 2 or c != "original")]
        if not pool:
            continue
        take = min(k, len(pool))
        pick = sorted(rng_for("cc-conditions", seed, item, dim).choice(len(pool), size=take, replace=False))
        out[(item, dim)] = (["original"] if k == 1 else []) + [pool[i] for i in pick]
    return out


def _same_as_original(variants: pd.DataFrame) -> set[tuple[str, str, str]]:
    """``(item, dimension, condition)`` of the variants whose turns and header are the item's original's."""
    if not {"turns", "condition", "item_id", "dimension"} <= set(variants.columns):
        return set()
    def text(r: Any) -> str:
        return repr((list(map(str, r.turns)) if r.turns is not None else None,
                     getattr(r, "header", None) or ""))
    originals = {r.item_id: text(r) for r in variants.itertuples() if r.condition == "original"}
    return {(r.item_id, r.dimension, r.condition) for r in variants.itertuples()
            if r.condition != "original" and r.item_id in originals and text(r) == originals[r.item_id]}
