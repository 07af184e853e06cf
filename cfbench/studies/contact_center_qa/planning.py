"""Planning the contact-center study: the variants and request plan of a parameter set (nothing is called).

:func:`plan_for` is the dry run of :func:`.study.run` (which re-exports it) and, applied to one
transcript at a time, what :func:`.stream.iter_requests` streams.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.seeding import rng_for
from cfbench.studies.contact_center_qa import design as _design
from cfbench.studies.contact_center_qa.prompts import load_rubric

__all__ = ["plan_for", "sample_conditions"]


def _dims(params: Any) -> list[str]:
    from cfbench.perturb import DIMENSIONS, TABLE_DIMENSIONS
    from cfbench.perturb.base import load_plugins

    load_plugins()  # dimensions of plugin packages (entry points, CFBENCH_PLUGINS)
    dims = list(params.dimensions) or list(TABLE_DIMENSIONS)
    unknown = [d for d in dims if d not in DIMENSIONS]
    if unknown:
        raise InputError(f"unknown dimension (valid: {', '.join(sorted(DIMENSIONS))})", source="parameters",
                         record=unknown[0], field="dimensions")
    return dims


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
    others' conditions. Only usable conditions (applicable, not rejected) are drawn;
    an (item, dimension) with nothing usable is left out (listed by the plan as not judged).
    """
    if k < 1:
        raise InputError(f"must be 0 (all) or at least 1, got {k}", field="conditions_per_dimension")
    usable = variants
    if "applicable" in usable.columns:
        usable = usable[usable["applicable"].fillna(True).astype(bool)]
    if "valid" in usable.columns:
        usable = usable[usable["valid"].map(lambda v: True if v is None or v != v else bool(v))]
    out: dict[tuple[str, str], list[str]] = {}
    for (item, dim), grp in usable.groupby(["item_id", "dimension"], sort=True):
        if dim not in compared:
            continue
        made = set(grp["condition"])
        pool = [c for c in compared[dim] if c in made and (k >= 2 or c != "original")]
        if not pool:
            continue
        take = min(k, len(pool))
        pick = sorted(rng_for("cc-conditions", seed, item, dim).choice(len(pool), size=take, replace=False))
        out[(item, dim)] = (["original"] if k == 1 else []) + [pool[i] for i in pick]
    return out


def plan_for(params: Any, transcripts: Sequence[Any], *, rubric: pd.DataFrame | None = None,
             progress: bool = True, request_key: Any = None) -> tuple[pd.DataFrame, Any]:
    """Variants and the request plan of ``params`` on ``transcripts`` (nothing is called): the dry run.

    ``request_key`` is passed to :func:`.design.plan_evaluation` (how identical requests are merged).
    """
    from cfbench.judges import GenerationConfig
    from cfbench.perturb import DIMENSIONS, make_variants

    dims = _dims(params)
    items = [t.id for t in transcripts]
    variants = make_variants(list(transcripts), dimensions=dims, seed=params.seed,
                             identify_judge=_perturb_judge(params.identify_judge, "identify", params.seed),
                             rewrite_judge=_perturb_judge(params.rewrite_judge, "rewrite", params.seed),
                             validate_judge=_perturb_judge(params.validate_judge, "validate", params.seed),
                             llm_check_all=bool(params.validate_judge),  # the seed checks every Op-1/2 variant
                             decisions=params.decisions_path or None, progress=progress)
    compared: dict[str, Sequence[str]] = {d: DIMENSIONS[d].compared for d in dims}
    per_item = None
    if params.conditions_per_dimension:
        per_item = sample_conditions(variants, compared=compared, k=params.conditions_per_dimension,
                                     seed=params.seed)
    gen = GenerationConfig(temperature=params.temperature, top_p=1.0, max_tokens=params.max_tokens,
                           seed=params.seed)
    plan = _design.plan_evaluation(
        variants, judges=list(params.judges), questions=list(params.questions),
        rubric=rubric if rubric is not None else load_rubric(), qa_mode=params.qa_mode,
        evidence_chars=params.evidence_chars, config=gen, compared=compared, compared_per_item=per_item,
        repeats=params.repeats, robustness_temperature=list(params.robustness_temperatures),
        paraphrases=params.paraphrases,
        fairness=params.fairness, fairness_dimensions=list(params.fairness_dimensions) or None,
        coaching=params.coaching, coaching_items=items[:params.coaching_items],
        coaching_dimensions=list(params.coaching_dimensions) or None, analysis_chars=params.analysis_chars,
        request_key=request_key)
    return variants, plan
