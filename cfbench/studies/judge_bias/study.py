"""The judge-bias battery as one call: ``run(Params(...), out=...) -> JudgeBiasResult``.

Items (a conversation up to a customer turn, the reply actually sent and an
alternative) come from STAR when the folder is there, else from the shipped
synthetic calls (:mod:`.items`). Each item is judged pairwise in both orders
under the base prompt, once under the reworded prompt (the noise reference) and
once per cue; pointwise, the seeded target reply is scored under the base and
reworded prompts and per pointwise cue. :mod:`.metrics` turns the answers into
position consistency / bias, accuracy on the known-worse controls, each cue's
shift toward the cued reply and its net flip rate beyond the noise, with
intervals, adjusted p-values and a gate. ``notebooks/judge_bias.ipynb`` is this
call plus display.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.params import params_from_mapping
from cfbench.core.seeding import rng_for
from cfbench.perturb.judge_cues import BATTERY, CandidatePair, get_cue
from cfbench.report import RunOutput, StudyResult

from . import findings as F
from . import metrics as M
from .items import Item, items_from_pairs, load_items
from .tasks import PROMPT_VERSION, build_request, parse_judgments

__all__ = ["Params", "JudgeBiasResult", "run", "iter_requests", "plan", "audit"]

POINTWISE_CUES = tuple(c for c in BATTERY if "pointwise" in get_cue(c).tasks)


@dataclass(frozen=True)
class Params:
    """Parameters of a judge-bias run (the notebook's ``parameters`` cell, minus output_dir/config_name)."""

    star_path: str = ""  # STAR dialogues folder ("" = beside the project if present, else synthetic; "none" = synthetic)
    n_draft: int = 4  # items: sent reply vs the agent's own typed draft (STAR only)
    n_control: int = 4  # items: sent reply vs a reply from elsewhere in the dialogue (known worse)
    context_turns: int = 6  # conversation turns shown before the reply
    judge: str = "scripted:judge-bias-authority"  # judge spec
    cues: tuple = BATTERY  # pairwise cues (position, verbosity, authority, source, bandwagon)
    pointwise_cues: tuple = POINTWISE_CUES  # pointwise cues (() skips the pointwise task)
    temperature: float = 0.0  # evaluation temperature
    gate_max_net_flip: float = 0.10  # gate: a cue passes when its net flip rate's upper bound is below this
    alpha: float = 0.05  # family-wise level of the adjusted sign tests
    multiplicity: str = "holm"  # holm / fdr_bh, across the cues of one task
    n_boot: int = 1000  # bootstrap-t resamples of the mean intervals
    seed: int = 20260027  # item selection, cue targets, orders, padding

    def __post_init__(self) -> None:
        for name in ("cues", "pointwise_cues"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for c in self.cues:
            if c not in BATTERY:
                raise InputError(f"unknown cue {c!r} (known: {', '.join(BATTERY)})", source="parameters", field="cues")
        for c in self.pointwise_cues:
            if c not in POINTWISE_CUES:
                raise InputError(f"{c!r} is not a pointwise cue (known: {', '.join(POINTWISE_CUES)})",
                                 source="parameters", field="pointwise_cues")
        if self.n_draft < 0 or self.n_control < 0 or self.n_draft + self.n_control < 2:
            raise InputError("need n_draft, n_control >= 0 and at least 2 items in all", source="parameters",
                             field="n_draft/n_control")
        if self.context_turns < 1:
            raise InputError("must be at least 1", source="parameters", field="context_turns")
        if not 0 < self.gate_max_net_flip < 1:
            raise InputError("must lie in (0, 1)", source="parameters", field="gate_max_net_flip")
        if not 0 < self.alpha < 1:
            raise InputError("must lie in (0, 1)", source="parameters", field="alpha")
        if self.multiplicity not in ("holm", "fdr_bh"):
            raise InputError("must be holm or fdr_bh", source="parameters", field="multiplicity")
        if self.n_boot < 1:
            raise InputError("must be positive", source="parameters", field="n_boot")

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None = None, *, source: str = "parameters",
                    **overrides: Any) -> "Params":
        data = {k: v for k, v in dict(mapping or {}).items() if k not in ("output_dir", "config_name")}
        return params_from_mapping(cls, data, source=source, **overrides)


@dataclass
class Plan:
    items: list[Item]
    source: str
    why: str
    targets: dict[str, str]  # item -> cued candidate ("real"/"alt")
    cue_order: dict[str, str]  # item -> order of the single-order requests ("realA"/"realB")
    requests: list[Any]
    cued: list[dict[str, Any]]  # one row per request: what was shown


def _pair(item: Item, order: str) -> CandidatePair:
    base = CandidatePair({"real": item.real, "alt": item.alt}, ("real", "alt"))
    return base if order == "realA" else get_cue("position").apply(base, "alt")


def plan(params: Params, items: "list[Item] | None" = None) -> Plan:
    """Items and every request ``run(params)`` sends, in item order (requests of one item share a prefix).
    ``items`` (e.g. from :func:`items_from_pairs`) replaces the STAR/synthetic selection."""
    if items is None:
        items, source, why = load_items(params.star_path, n_draft=params.n_draft, n_control=params.n_control,
                                        seed=params.seed, context_turns=params.context_turns)
    else:
        source, why = "user", f"{len(items)} pairs given by the caller"
    targets, orders, reqs, shown = {}, {}, [], []
    kw = dict(temperature=params.temperature, seed=params.seed)
    for it in items:
        rng = rng_for(params.seed, it.item_id, "design")
        target = "real" if rng.random() < 0.5 else "alt"
        order = "realA" if rng.random() < 0.5 else "realB"
        targets[it.item_id], orders[it.item_id] = target, order

        def add(pair: CandidatePair, task: str, prompt: str, condition: str, ordr: str, only: str | None = None):
            reqs.append(build_request(it, pair, task=task, prompt=prompt, condition=condition, order=ordr,
                                      only=only, **kw))
            shown.append({"request_id": reqs[-1].request_id, "item_id": it.item_id, "task": task,
                          "condition": condition, "order": ordr, "cue": pair.cue, "target": pair.target or target,
                          "slot_a": pair.order[0], "labels": dict(pair.labels), "note": pair.note,
                          "text_a": pair.texts[pair.order[0]], "text_b": pair.texts[pair.order[1]]})

        for o in ("realA", "realB"):
            add(_pair(it, o), "pairwise", "base", "baseline", o)
        add(_pair(it, order), "pairwise", "reworded", "reworded", order)
        for cue in params.cues:
            if cue == "position":
                continue  # its comparison is the two baseline orders
            pair = get_cue(cue).apply(_pair(it, order), target, seed=params.seed, item_id=it.item_id)
            add(pair, "pairwise", "base", cue, order)
        if params.pointwise_cues:
            plain = _pair(it, "realA")
            add(plain, "pointwise", "base", "baseline", target, only=target)
            add(plain, "pointwise", "reworded", "reworded", target, only=target)
            for cue in params.pointwise_cues:
                pair = get_cue(cue).apply(plain, target, seed=params.seed, item_id=it.item_id)
                add(pair, "pointwise", "base", cue, target, only=target)
    return Plan(items, source, why, targets, orders, reqs, shown)


def iter_requests(params: Params) -> Iterator[Any]:
    """The requests a run of ``params`` sends (nothing is called), for ``cfbench batch plan --study judge_bias``."""
    yield from plan(params).requests


def n_requests(params: Params) -> int:
    per_item = 3 + sum(c != "position" for c in params.cues) + (2 + len(params.pointwise_cues)
                                                                 if params.pointwise_cues else 0)
    return per_item * (params.n_draft + params.n_control)


#: Seconds per pairwise call and for loading the model, from the live default run of 2026-11-24 on the idle
#: 2-core AMD EPYC (28 calls of local:qwen2.5-coder-1.5b, ~210 prompt tokens, max_tokens 1: 59 s of notebook
#: with the model load); on a loaded machine expect several times more.
SECONDS_PER_CALL = {"local": 2.0, "scripted": 0.02}
MODEL_LOAD_S = {"local": 15.0}


def estimate_seconds(params: "Params | Mapping[str, Any]") -> float:
    """Expected wall time of a live run with nothing cached (for ``cfbench reproduce``'s overall ETA)."""
    if not isinstance(params, Params):
        params = Params.from_config(params)
    backend = params.judge.split(":", 1)[0]
    return MODEL_LOAD_S.get(backend, 0.0) + n_requests(params) * SECONDS_PER_CALL.get(backend, 1.0)


@dataclass
class JudgeBiasResult(StudyResult):
    """Every table, figure and number of a judge-bias run."""

    sent_ids: list[str] = field(default_factory=list)

    def invariants(self) -> dict[str, bool]:
        return F.invariants(self)

    def findings(self) -> str:
        return F.findings_markdown(self)

    def header(self) -> str:
        return F.run_header(self)


def run(params: Params, out: "RunOutput | str | os.PathLike[str] | None" = None, *,
        config_name: str | None = None, progress: bool = True, items: "list[Item] | None" = None) -> JudgeBiasResult:
    """Build the items, judge every request, compute the tables and figures; write them under ``out``."""
    from cfbench.judges import run_requests

    if not isinstance(params, Params):
        raise InputError(f"expected judge_bias Params, got {type(params).__name__}", source="judge_bias.run")
    p = plan(params, items)
    result = JudgeBiasResult(params=params)
    if config_name is not None:
        result.summary["config"] = config_name
    items = pd.DataFrame([it.to_row() for it in p.items])
    items["cued_candidate"] = items["item_id"].map(p.targets)
    items["single_order"] = items["item_id"].map(p.cue_order)
    result.frames.update(items=items, shown=pd.DataFrame(p.cued))
    result.sent_ids = [r.request_id for r in p.requests]
    run_ = run_requests(params.judge, p.requests, desc="judge bias", progress=progress)
    if os.environ.get("CFBENCH_MODE") == "plan" and not run_.judgments["ok"].astype(bool).any():
        raise InputError(f"plan only: {len(p.requests)} requests recorded for {params.judge} and none answered; "
                         "send them (`cfbench batch plan --study judge_bias -f CONFIG`), then rerun with --replay",
                         source="judge_bias", field="judge")
    parsed = parse_judgments(run_.judgments)
    result.frames.update(judgments=run_.judgments, parsed=parsed)
    pw = parsed[parsed["task"] == "pairwise"]
    if not pw["parse_ok"].any():
        failed = int((~run_.judgments["ok"].astype(bool)).sum())
        if out is not None:
            writer = out if isinstance(out, RunOutput) else RunOutput(out)
            writer.table("items", items)
            writer.table("answers", parsed)
        raise InputError(f"all {len(pw)} pairwise replies from {params.judge} are parse failures ({failed} failed "
                         f"calls; e.g. {str(pw['raw'].iloc[0])[:80]!r}); no position, accuracy or cue number is "
                         "computed", source="judge_bias", field="judge")
    ch = M.choices(parsed)
    targets = pd.Series(p.targets)
    T = result.tables
    T["items"] = items
    T["answers"] = parsed.drop(columns=["raw"]).assign(raw=parsed["raw"].astype(str).str.slice(0, 80))
    T["parse_failures"] = (parsed.groupby(["task", "condition"])["parse_ok"]
                           .agg(n="size", parsed="sum").reset_index()
                           .assign(failures=lambda d: d["n"] - d["parsed"]))
    T["position"] = M.position_table(ch, n_boot=params.n_boot, seed=params.seed)
    T["accuracy"] = M.accuracy_table(ch, items)
    T["noise"] = M.noise_table(ch)
    T["cues"] = M.cue_table(ch, targets, params.cues, gate_max=params.gate_max_net_flip, alpha=params.alpha,
                            multiplicity=params.multiplicity, n_boot=params.n_boot, seed=params.seed)
    if params.pointwise_cues:
        T["pointwise"] = M.pointwise_table(parsed, params.pointwise_cues, alpha=params.alpha,
                                           multiplicity=params.multiplicity, n_boot=params.n_boot, seed=params.seed)
    result.summary.update({
        "judge": params.judge, "judge_is_test_double": params.judge.startswith("scripted:"),
        "prompt_version": PROMPT_VERSION, "source": p.source, "source_note": p.why,
        "n_items": len(p.items), "items_by_kind": items["kind"].value_counts().to_dict(),
        "n_requests": len(p.requests), "n_parse_failures": int((~parsed["parse_ok"]).sum()),
        # descriptive: mean P(A) among the first token's alternatives, baseline prompt, both orders (NaN: no logprobs)
        "mean_p_a_baseline": float(parsed.loc[(parsed["task"] == "pairwise") & (parsed["condition"] == "baseline"),
                                              "p_a"].mean()),
        "cue_perturbers": {c: get_cue(c).description.to_dict() for c in params.cues},
        "noise_reference": "reworded prompt (same items, same order), temperature "
                           f"{params.temperature:g}",
        "judge_stats": run_.stats,
    })
    from . import figures as P

    result.figures["cue_shifts"] = P.plot_cue_shifts(T["cues"], title=f"{params.judge}: shift toward the cued reply "
                                                     f"({len(p.items)} items, {p.source})")
    result.figures["net_flips"] = P.plot_net_flips(T["cues"], gate_max=params.gate_max_net_flip,
                                                   title=f"{params.judge}: cue flip rate minus reworded-prompt flips")
    if params.pointwise_cues and not T["pointwise"].empty:
        result.figures["pointwise_shifts"] = P.plot_pointwise(T["pointwise"],
                                                              title=f"{params.judge}: score shift (1-10 scale)")
    if out is not None:
        result.save(out if isinstance(out, RunOutput) else RunOutput(out))
    return result


def audit(pairs: Any, judges: "list[str] | tuple[str, ...]", cues: "tuple[str, ...] | list[str]" = BATTERY, *,
          pointwise_cues: "tuple[str, ...] | list[str]" = (), out: "str | os.PathLike[str] | None" = None,
          progress: bool = True, **params: Any) -> dict[str, JudgeBiasResult]:
    """The battery on your own pairs, once per judge: ``{judge: JudgeBiasResult}``.

    ``pairs``: mappings with ``context`` (a list of ``{"speaker": "agent"|"customer", "text"}`` ending with a
    customer turn), ``reply`` (the reference reply), ``alternative``, and optionally ``id`` and ``kind``
    (``control`` when the alternative is known worse: accuracy is reported on those). Other keyword
    arguments are :class:`Params` fields. With ``out`` each judge writes to ``out/<judge spec, sanitised>``.
    """
    items = items_from_pairs(pairs)
    results = {}
    for judge in judges:
        p = Params(judge=judge, cues=tuple(cues), pointwise_cues=tuple(pointwise_cues), n_draft=0,
                   n_control=len(items), **params)
        where = None if out is None else os.path.join(os.fspath(out), "".join(c if c.isalnum() or c in "-_." else "_"
                                                                                for c in judge))
        results[judge] = run(p, out=where, progress=progress, items=items)
    return results
