"""Counterfactual perturbers and stimulus designs.

The contact-center perturbers (seed 000) turn transcripts into a tidy
``variants`` frame (:data:`cfbench.core.schema.VARIANT_COLUMNS`)::

    >>> from cfbench.studies.contact_center_qa.synth import generate_transcripts
    >>> from cfbench.perturb import make_variants
    >>> v = make_variants(generate_transcripts(2, seed=0), dimensions=["gender"], seed=0)
    >>> sorted(v["condition"].unique())
    ['female', 'male', 'original']

One row per (item, dimension, condition), plus one ``original`` row per item
(dimension ``"original"``, condition ``"original"``), each with the perturber
that made it (``name@version``). One perturber per module (``gender``, ``names``,
``cues``, ``disability``, ``header``, ``style``, ``disfluency``); shared text
operations in ``turns``, the rule style transformer in ``style_rules``, guards
in ``validate`` and ``scope``, LLM tasks (judge callables) in ``llm_tasks`` and
``llm``, the review page in ``review``, corpus measurements in ``report``.
``stimuli.py`` (identity x prompt designs for the other studies) lives beside them.
"""

from ._variants import (DEFAULT_DIMENSIONS, PROVENANCE_COLUMNS, apply_decisions, make_variants, original_variant_id,
                        read_decisions, render_transcript, side_by_side, variant_id)
from .base import DIMENSIONS, TABLE_DIMENSIONS, Description, Dimension, Perturber, Variant, get_perturber, item_rng
from .identify import TurnIdentification, identify_turns
from .turns import clean_disfluencies, replace_name, swap_gender_words
from .validate import check_variant, rejection_table

__all__ = [
    "make_variants", "render_transcript", "side_by_side", "rejection_table", "check_variant",
    "identify_turns", "TurnIdentification", "swap_gender_words", "replace_name", "clean_disfluencies",
    "DIMENSIONS", "TABLE_DIMENSIONS", "DEFAULT_DIMENSIONS", "Dimension", "Perturber", "Variant",
    "get_perturber", "item_rng", "variant_id", "original_variant_id", "Description", "PROVENANCE_COLUMNS",
    "apply_decisions", "read_decisions",
]
