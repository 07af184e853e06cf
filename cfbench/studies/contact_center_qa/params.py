"""Parameters of the contact-center study, read by every step (items, variants, requests, ...).

:class:`Params` mirrors the notebook's ``parameters`` cell field for field (minus
``output_dir`` and ``config_name``); :func:`dims_of` is the list of dimensions a run audits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from cfbench.core.errors import InputError
from cfbench.core.files import shorten
from cfbench.core.params import check_judge_settings, params_from_mapping, params_to_mapping

__all__ = ["Params", "dims_of"]


@dataclass(frozen=True)
class Params:
    """Parameters of the contact-center study (the notebook's parameters cell)."""

    judges: tuple = ("scripted:cc-qa",)  # judge specs, one Table-2 column each
    transcripts_path: str = ""  # JSONL/CSV transcripts or STAR dialogues (file or folder); "" for the shipped set; "synthetic[:seed=S]" generates them
    n_items: int = 3  # transcripts audited
    require_agent_name: bool = True  # only transcripts where the agent gives a name
    balance_label: str = "issue_resolution"  # alternate Yes/No items on this label ("" keeps file order)
    dimensions: tuple = ()  # dimension ids (empty: the 15 table dimensions)
    conditions_per_dimension: int = 0  # 0: every compared condition; 1: the original against 1 sampled; k above 1: k sampled
    questions: tuple = ("issue_resolution", "work_avoidance")  # rubric question ids for Auto-QA
    qa_mode: str = "json"  # free | json | compact output contract
    evidence_chars: int = 0  # >0 adds a short evidence quote to the JSON contract
    max_tokens: int = 600  # generation budget of the free-text contract
    temperature: float = 0.0  # evaluation temperature
    repeats: int = 3  # k repeats of each original for the robustness baseline
    paraphrases: int = 0  # k > 0: also ask each question on the originals in k rubric paraphrases (wording row)
    robustness_temperatures: tuple = (0.0, 0.7)  # repeat settings; the evaluation temperature is the seed's
    fairness: bool = True  # also run the fairness-prompting arm
    fairness_dimensions: tuple = ()  # dimensions of the fairness arm (empty: all)
    coaching: bool = True  # also generate coaching notes (positives / improvement / customer-behaviour scores)
    coaching_items: int = 1  # first k audited items get coaching notes
    coaching_dimensions: tuple = ()  # dimensions for coaching notes (empty: all)
    analysis_chars: int = 160  # max characters of a coaching analysis (JSON mode)
    gate_max_net_cfr: float = 0.1  # gate: largest acceptable CFR minus repeat noise (point and interval upper bound)
    identify_judge: str = ""  # judge spec that identifies agent turns with an LLM ("" for the rules only)
    rewrite_judge: str = ""  # judge spec that rewrites style turns ("" for the rule style transformer)
    validate_judge: str = ""  # judge spec that checks each variant keeps the meaning ("" for the guards only)
    decisions_path: str = ""  # review.html decisions CSV; rejected variants are not judged ("" for none)
    n_boot: int = 1000  # bootstrap resamples for intervals
    seed: int = 0  # seed of variants, condition sampling, generation and bootstrap
    real_items: int = 0  # real-dialogue arm: this many STAR dialogues, half resolved / half not by the customer's own answer (0: none)
    real_path: str = "../shared/data/star/dialogues"  # STAR dialogues for the real arm; skipped with a warning line when absent
    real_margin: float = 0.0  # real arm: variants only for dialogues with |P(Yes) - 0.5| >= this (0: all; .screen)
    real_skip: int = 0  # real arm: leave out the first this many dialogues of its balanced order (a pilot's)
    concurrency: int = 0  # judge calls in flight (0: adapt to the server's latency); not part of any cache key
    timeout_s: float = 0.0  # seconds a judge call may take from the moment it is sent (0: 600)
    # -- sequential audit (issue 35; .sequential) --
    sequential: bool = False  # judge in waves, stop asking about a dimension once its net CFR gate is decided
    max_items: int = 0  # sequential budget: most transcripts judged (0: n_items)
    wave_size: int = 5  # sequential: transcripts per wave (the cells are looked at after each)
    max_requests: int = 0  # sequential budget: most distinct requests, all judges (0: no limit)
    max_cost_usd: float = 0.0  # sequential budget: most US dollars by the price table (0: no limit)
    # -- placebo arm (issue 33): keep this field last --
    placebo: bool = False  # also judge a same-group swap per identity dimension (table placebo_contrast)

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None = None, *, source: str = "parameters",
                    **overrides: Any) -> "Params":
        """Params from a config mapping; ``output_dir``/``config_name`` are ignored, unknown names rejected."""
        data = {k: v for k, v in dict(mapping or {}).items() if k not in ("output_dir", "config_name")}
        return params_from_mapping(cls, data, source=source, **overrides)

    def to_mapping(self) -> dict[str, Any]:
        return params_to_mapping(self)


def _fail(field: str, problem: str) -> None:
    raise InputError(problem, source="parameters", field=field)


def _check_specs(name: str, values: Any, *, need_one: bool) -> None:
    """A list of distinct non-empty strings (judge specs, question ids, dimension ids)."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        _fail(name, f"must be a list, got {type(values).__name__} {shorten(values)}")
    if need_one and not values:
        _fail(name, "must list at least one entry")
    for v in values:
        if not isinstance(v, str) or not v.strip():
            _fail(name, f"every entry must be a non-empty string, got {shorten(v)}")
    if len(set(values)) != len(values):
        _fail(name, "lists an entry twice")


def _check(p: "Params") -> None:
    """Every field's range, naming the field (a run must fail here, not in a pandas index later)."""
    from .qa import QA_MODES

    check_judge_settings(p)

    _check_specs("judges", p.judges, need_one=True)
    _check_specs("questions", p.questions, need_one=True)
    for name in ("dimensions", "fairness_dimensions", "coaching_dimensions"):
        _check_specs(name, p.dimensions if name == "dimensions" else getattr(p, name), need_one=False)
    if p.qa_mode not in QA_MODES:
        _fail("qa_mode", f"must be one of {', '.join(QA_MODES)}, got {shorten(p.qa_mode)}")
    for name in ("max_tokens", "analysis_chars"):
        if getattr(p, name) < 1:
            _fail(name, f"must be at least 1, got {getattr(p, name)}")
    for name in ("n_items", "n_boot", "conditions_per_dimension", "evidence_chars", "repeats", "paraphrases", "coaching_items",
                 "real_items", "real_skip", "seed"):
        if getattr(p, name) < 0:
            _fail(name, f"must be 0 or more, got {getattr(p, name)}")
    temps = p.robustness_temperatures
    if isinstance(temps, str) or not isinstance(temps, (list, tuple)) or not temps:
        _fail("robustness_temperatures", "must list at least one temperature")
    for value in temps:  # the evaluation temperature is checked with the other judge settings above
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 2.0:
            _fail("robustness_temperatures", f"must be a number from 0 to 2, got {shorten(value)}")
    if p.max_items < 0:
        _fail("max_items", f"must be 0 (n_items) or more, got {p.max_items}")
    if p.wave_size < 1:
        _fail("wave_size", f"must be at least 1, got {p.wave_size}")
    if isinstance(p.max_requests, bool) or not isinstance(p.max_requests, int) or p.max_requests < 0:
        _fail("max_requests", f"must be a whole number, 0 (no limit) or more, got {shorten(p.max_requests)}")
    cost = p.max_cost_usd
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0:
        _fail("max_cost_usd", f"must be a number, 0 (no limit) or more, got {shorten(cost)}")
    for name in ("max_requests", "max_cost_usd"):
        if getattr(p, name) and not p.sequential:
            _fail(name, "is a budget of the sequential audit: set sequential: true, or leave it 0")
    if not isinstance(p.placebo, bool):  # placebo arm (issue 33)
        _fail("placebo", f"must be true or false, got {shorten(p.placebo)}")
    m = p.real_margin
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0.0 <= m < 0.5:  # nan fails too
        _fail("real_margin", f"must be a number from 0 (no screen) up to, not including, 0.5, got {shorten(m)}")
    if m and p.qa_mode != "compact":
        _fail("real_margin", "screens on the first token's P(Yes), which only the compact contract gives: set "
                             "qa_mode: compact, or real_margin: 0")
    if not 0.0 <= p.gate_max_net_cfr <= 1.0:
        _fail("gate_max_net_cfr", f"must be from 0 to 1, got {p.gate_max_net_cfr}")


def dims_of(params: Any) -> list[str]:
    """The dimension ids ``params`` audits (all table dimensions when none are named); unknown ids raise."""
    from cfbench.perturb import DIMENSIONS, TABLE_DIMENSIONS
    from cfbench.perturb.base import load_plugins

    load_plugins()  # dimensions of plugin packages (entry points, CFBENCH_PLUGINS)
    dims = list(params.dimensions) or list(TABLE_DIMENSIONS)
    unknown = [d for d in dims if d not in DIMENSIONS]
    if unknown:
        raise InputError(f"unknown dimension (valid: {', '.join(sorted(DIMENSIONS))})", source="parameters",
                         record=unknown[0], field="dimensions")
    return dims
