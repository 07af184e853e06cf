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

from cfbench.core.text import md_safe
from cfbench.core.errors import InputError
from cfbench.core.files import shorten
from cfbench.core.params import check_judge_settings, params_from_mapping
from cfbench.core.seeding import rng_for
from cfbench.judges.failures import describe_kinds
from cfbench.judges.runner import uses_judge_settings
from cfbench.perturb.judge_cue_review import cue_variants
from cfbench.perturb.judge_cues import BATTERY, CandidatePair, get_cue
from cfbench.perturb.validate import rejection_table
from cfbench.report import RunOutput, StudyResult, released
from cfbench.stats.sequential_cells import check_sequential_params

from . import findings as F
from . import metrics as M
from .items import Item, items_from_pairs, load_items
from .tasks import PROMPT_VERSION, build_request, parse_judgments

__all__ = ["Params", "JudgeBiasResult", "run", "iter_requests", "plan", "audit"]

POINTWISE_CUES = tuple(c for c in BATTERY if "pointwise" in get_cue(c).tasks)
#: the identity-type cues with a placebo (a same-group swap: the same edit with no identity contrast)
PLACEBO_CUES = tuple(c for c in BATTERY if callable(getattr(get_cue(c), "placebo", None)))


@dataclass(frozen=True)
class Params:
    """Parameters of a judge-bias run (the notebook's ``parameters`` cell, minus output_dir/config_name)."""

    star_path: str = ""  # STAR dialogues folder ("" = beside the project if present, else synthetic; "none" = synthetic)
    n_draft: int = 4  # items: sent reply vs the agent's own typed draft (STAR only)
    n_control: int = 4  # items: sent reply vs a reply from elsewhere in the dialogue (known worse)
    context_turns: int = 6  # conversation turns shown before the reply
    judges: tuple = ("scripted:judge-bias-authority",)  # judge specs, one column each (the first is the headline)
    cues: tuple = ("all",)  # pairwise cues; "all" = every cue in cfbench.perturb.judge_cues.BATTERY
    pointwise_cues: tuple = ("all",)  # pointwise cues; "all" = every BATTERY cue with a pointwise form; () skips the task
    temperature: float = 0.0  # evaluation temperature
    repeats: int = 0  # extra draws of each baseline request at the evaluation temperature; 0 = 1 when temperature > 0, none at 0
    gate_max_net_flip: float = 0.10  # gate: a cue passes when its net flip rate's upper bound is below this
    gate_max_score_shift: float = 1.0  # pointwise gate: net |score shift| (points) upper bound must be below this
    alpha: float = 0.05  # family-wise level of the adjusted sign tests
    multiplicity: str = "holm"  # holm / fdr_bh, across the cues of one task
    n_boot: int = 1000  # bootstrap-t resamples of the mean intervals
    seed: int = 20260027  # item selection, cue targets, orders, padding
    placebo: bool = False  # per identity cue (agent_identity) one more pairwise request per item: its placebo pair
    concurrency: int = 0  # judge calls in flight (0: adapt to the server's latency); not part of any cache key
    timeout_s: float = 0.0  # seconds a judge call may take from the moment it is sent (0: 600)
    # -- sequential audit (issue 35; .sequential) --
    sequential: bool = False  # judge items in waves, stop sending a cue to a judge once its gate is decided
    max_items: int = 0  # sequential budget: most items judged (0: all)
    wave_size: int = 2  # sequential: items per wave (the cells are looked at after each)
    max_requests: int = 0  # sequential budget: most requests, all judges (0: no limit)
    max_cost_usd: float = 0.0  # sequential budget: most US dollars by the price table (0: no limit)

    def __post_init__(self) -> None:
        check_judge_settings(self)
        check_sequential_params(self, priced=True)
        for name in ("judges", "cues", "pointwise_cues"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name, every in (("cues", BATTERY), ("pointwise_cues", POINTWISE_CUES)):
            if "all" in getattr(self, name):  # resolved here, so a cue added to BATTERY joins every "all" run
                object.__setattr__(self, name, tuple(dict.fromkeys(
                    c for v in getattr(self, name) for c in (every if v == "all" else (v,)))))
        if not self.judges or len(set(self.judges)) != len(self.judges) or not all(
                isinstance(j, str) and j for j in self.judges):
            raise InputError("must list at least one judge spec, each once", source="parameters", field="judges")
        if self.repeats < 0:
            raise InputError("must be >= 0 (0 = one repeat when temperature > 0, none at 0)", source="parameters",
                             field="repeats")
        if not 0 < self.gate_max_score_shift < 9:
            raise InputError("must lie in (0, 9) points", source="parameters", field="gate_max_score_shift")
        for c in self.cues:
            if c not in BATTERY:
                raise InputError(f"unknown cue {shorten(c)} (known: {', '.join(BATTERY)})", source="parameters", field="cues")
        for c in self.pointwise_cues:
            if c not in POINTWISE_CUES:
                raise InputError(f"{shorten(c)} is not a pointwise cue (known: {', '.join(POINTWISE_CUES)})",
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
        if not isinstance(self.placebo, bool):
            raise InputError(f"must be true or false, got {shorten(repr(self.placebo))}", source="parameters",
                             field="placebo")
        if self.placebo and not self.placebo_cues:
            raise InputError(f"a placebo needs an identity cue among the cues (one of {', '.join(PLACEBO_CUES)})",
                             source="parameters", field="placebo")

    @property
    def placebo_cues(self) -> tuple:
        """The cues of this run that get a placebo arm (none without ``placebo``)."""
        return tuple(c for c in self.cues if c in PLACEBO_CUES) if self.placebo else ()

    @property
    def judge(self) -> str:
        """The headline judge (the first of ``judges``)."""
        return self.judges[0]

    @property
    def n_repeats(self) -> int:
        """Repeats actually sent: ``repeats`` when set, else 1 at a positive temperature and 0 at temperature 0
        (greedy decoding repeats itself by construction; the reworded prompt is then the only reference)."""
        return self.repeats if self.repeats > 0 else (1 if self.temperature > 0 else 0)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None = None, *, source: str = "parameters",
                    **overrides: Any) -> "Params":
        data = {k: v for k, v in dict(mapping or {}).items() if k not in ("output_dir", "config_name")}
        for d in (data, overrides):  # an older config's single `judge: spec`
            if "judge" in d and "judges" not in d and isinstance(d["judge"], str):
                d["judges"] = [d.pop("judge")]
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

        def add(pair: CandidatePair, task: str, prompt: str, condition: str, ordr: str, only: str | None = None,
                repeat: int = 0):
            reqs.append(build_request(it, pair, task=task, prompt=prompt, condition=condition, order=ordr,
                                      only=only, repeat=repeat, **kw))
            shown.append({"request_id": reqs[-1].request_id, "item_id": it.item_id, "task": task,
                          "condition": condition, "order": ordr, "cue": pair.cue, "target": pair.target or target,
                          "slot_a": pair.order[0], "labels": dict(pair.labels), "note": pair.note,
                          "stands_for": dict(pair.stands_for),
                          "text_a": pair.texts[pair.order[0]], "text_b": pair.texts[pair.order[1]]})

        for o in ("realA", "realB"):
            add(_pair(it, o), "pairwise", "base", "baseline", o)
            for r in range(1, params.n_repeats + 1):  # the same prompt drawn again (repeat index in the cache key)
                add(_pair(it, o), "pairwise", "base", f"repeat{r}", o, repeat=r)
        add(_pair(it, order), "pairwise", "reworded", "reworded", order)
        for cue in params.cues:
            if cue == "position":
                continue  # its comparison is the two baseline orders
            pair = get_cue(cue).apply(_pair(it, order), target, seed=params.seed, item_id=it.item_id)
            add(pair, "pairwise", "base", cue, order)
        for cue in params.placebo_cues:  # the same edit with no identity contrast; none when no name fits
            pair = get_cue(cue).placebo(_pair(it, order), target, seed=params.seed, item_id=it.item_id)
            if pair is not None:
                add(pair, "pairwise", "base", M.placebo_condition(cue), order)
        if params.pointwise_cues:
            plain = _pair(it, "realA")
            add(plain, "pointwise", "base", "baseline", target, only=target)
            for r in range(1, params.n_repeats + 1):
                add(plain, "pointwise", "base", f"repeat{r}", target, only=target, repeat=r)
            add(plain, "pointwise", "reworded", "reworded", target, only=target)
            if it.kind == "control":  # the other reply too: does the score tell the known-worse one apart?
                other = "alt" if target == "real" else "real"
                add(plain, "pointwise", "base", M.OTHER_REPLY, other, only=other)
            for cue in params.pointwise_cues:
                pair = get_cue(cue).apply(plain, target, seed=params.seed, item_id=it.item_id)
                add(pair, "pointwise", "base", cue, target, only=target)
    return Plan(items, source, why, targets, orders, reqs, shown)


def iter_requests(params: Params) -> Iterator[Any]:
    """The requests a run of ``params`` sends (nothing is called), for ``cfbench batch plan --study judge_bias``."""
    yield from plan(params).requests


def n_requests(params: Params) -> int:
    """Requests per judge (``iter_requests`` yields these once; each judge in ``judges`` is sent all of them; with
    pointwise cues a control item also has its other reply scored); with ``placebo`` an upper bound: an item whose identity has no placebo name of the length class sends one fewer."""
    k = params.n_repeats
    per_item = 2 * (1 + k) + 1 + sum(c != "position" for c in params.cues) + len(params.placebo_cues) + (
        2 + k + len(params.pointwise_cues) if params.pointwise_cues else 0)
    return per_item * (params.n_draft + params.n_control) + (params.n_control if params.pointwise_cues else 0)


#: Seconds per one-token pairwise call (~190 prompt tokens, requests of one item sharing their prefix) and
#: per model load, on the idle 2-core AMD EPYC. 1.5B: the two live default runs of 2026-11-24, 28 calls in
#: 59 s and 112 calls in 212.5 s of notebook, give 1.83 s per call and ~8 s fixed ((212.5 - 59) / 84 = 1.83).
#: 0.5B: 0.42 of the 1.5B's cost per judgment (docs/local_judge.md, run3: prompt and generation both 2.4x
#: faster), 0.77 s. On a loaded machine expect several times more.
SECONDS_PER_CALL = {"local:qwen2.5-coder-1.5b": 1.83, "local:qwen2.5-coder-0.5b": 0.77, "local": 1.83,
                    "scripted": 0.02}
MODEL_LOAD_S = {"local": 8.0}


def _rate(table: Mapping[str, float], judge: str, default: float) -> float:
    return table.get(judge, table.get(judge.split(":", 1)[0], default))


def estimate_seconds(params: "Params | Mapping[str, Any]") -> float:
    """Expected wall time of a live run with nothing cached (for ``cfbench reproduce``'s overall ETA):
    per judge, its model load plus its calls at the measured per-call rate."""
    if not isinstance(params, Params):
        params = Params.from_config(params)
    n = n_requests(params)
    return sum(_rate(MODEL_LOAD_S, j, 0.0) + n * _rate(SECONDS_PER_CALL, j, 1.0) for j in params.judges)


@dataclass
class JudgeBiasResult(StudyResult):
    """Every table, figure and number of a judge-bias run."""

    sent_ids: list[str] = field(default_factory=list)

    def invariants(self) -> dict[str, bool]:
        return F.invariants(self)

    def findings(self) -> str:
        return md_safe(F.findings_markdown(self))  # no raw tag from a name, whatever it held

    def header(self) -> str:
        return md_safe(F.run_header(self))


@uses_judge_settings
def run(params: Params, out: "RunOutput | str | os.PathLike[str] | None" = None, *,
        config_name: str | None = None, progress: bool = True, items: "list[Item] | None" = None,
        cache: Any = None, mode: str | None = None, wave: Any = None) -> JudgeBiasResult:
    """Build the items, judge every request, compute the tables and figures; write them under ``out``.

    ``cache``, ``mode``: the judge runner's response cache and mode (None: its defaults, ``$CFBENCH_MODE``).
    ``wave`` (a sequential run only): the Batch-API hook of :func:`.sequential.judge_in_waves`."""
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
    if params.sequential:  # issue 35: waves; a decided cue is no longer sent to its judge
        judgments, parsed, stats = _sequential(params, p, items, result, out, progress=progress, cache=cache,
                                               mode=mode, wave=wave)
    else:
        if wave is not None:
            raise InputError("a wave hook needs sequential: true", source="parameters", field="sequential")
        result.sent_ids = [r.request_id for r in p.requests]
        judgments, parsed, stats = _judge_all(params, p, items, out, progress=progress, cache=cache, mode=mode)
    result.frames.update(judgments=judgments, parsed=parsed)
    # every per-judge table from the item statistics of all judges' answers (metrics.new_state)
    per = M.new_state().update(parsed, items).compute(
        judges=params.judges, cues=params.cues, pointwise_cues=params.pointwise_cues,
        gate_max_net_flip=params.gate_max_net_flip, gate_max_score_shift=params.gate_max_score_shift,
        alpha=params.alpha, multiplicity=params.multiplicity, n_boot=params.n_boot, seed=params.seed,
        placebo_cues=params.placebo_cues)
    T = result.tables
    T["items"] = items
    # Table 9 for the cues: every cued presentation sent, as a variant row with its guard's verdict
    # (a pair failing its guard raises before it reaches a judge, so every row here passed; the count shows it)
    cue_rows = cue_variants(p.items, [c for c in params.cues if c != "position"] or ["position"], seed=params.seed,
                            targets=p.targets,
                            orders={i: ("real", "alt") if o == "realA" else ("alt", "real") for i, o in p.cue_order.items()})
    T["cue_guards"] = rejection_table(cue_rows)
    cols = ["judge"] + [c for c in parsed.columns if c not in ("judge", "raw")]
    T["answers"] = parsed[cols].assign(raw=parsed["raw"].astype(str).str.slice(0, 80))
    T.update(per)  # one table per quantity, a `judge` column first, judges in order
    k = params.n_repeats
    pw_base = parsed[(parsed["task"] == "pairwise") & (parsed["condition"] == "baseline")]
    result.summary.update({
        "judge": params.judge, "judges": list(params.judges),
        "judge_is_test_double": params.judge.startswith("scripted:"),
        "test_double_judges": [j for j in params.judges if j.startswith("scripted:")],
        "prompt_version": PROMPT_VERSION, "source": p.source, "source_note": p.why,
        "n_items": len(p.items), "items_by_kind": items["kind"].value_counts().to_dict(),
        "n_requests": len(p.requests), "n_requests_all_judges": len(p.requests) * len(params.judges),
        "n_requests_sent_all_judges": len(judgments),
        "n_not_read": int((~parsed["parse_ok"]).sum()),
        "n_not_read_by_judge": {j: int((~parsed.loc[parsed["judge"] == j, "parse_ok"]).sum())
                                for j in params.judges},
        "failures_by_kind": {k: int(n) for k, n in parsed["failure"].dropna().value_counts().sort_index().items()},
        # descriptive: mean P(A) among the first token's alternatives, baseline prompt, both orders (NaN: no logprobs)
        "mean_p_a_baseline": {j: float(pw_base.loc[pw_base["judge"] == j, "p_a"].mean()) for j in params.judges},
        "cue_perturbers": {c: get_cue(c).description.to_dict() for c in params.cues},
        "repeats": k,
        "noise_reference": noise_reference_note(params),
        "judge_stats": stats,
    })
    from . import figures as P

    where = f"{len(p.items)} items, {p.source}"
    result.figures["cue_shifts"] = P.plot_cue_shifts(T["cues"], title=f"Shift toward the cued reply ({where})")
    result.figures["net_flips"] = P.plot_net_flips(T["cues"], gate_max=params.gate_max_net_flip,
                                                   title=f"Cue flip rate minus the judge's own noise ({where})")
    if "sequential_waves" in T and len(T["sequential_waves"]):
        from cfbench.report import plot_sequences

        W, C = T["sequential_waves"], T["sequential_cells"]
        result.figures["sequential_sequences"] = plot_sequences(
            W[W["task"] == "pairwise"], C[C["task"] == "pairwise"], key_names=["judge", "cue"], unit="items",
            ylabel="net flip share (pp)", title="Judge-bias cues")
        if (W["task"] == "pointwise").any():
            result.figures["sequential_pointwise_sequences"] = plot_sequences(
                W[W["task"] == "pointwise"], C[C["task"] == "pointwise"], key_names=["judge", "cue"], unit="items",
                ylabel="net |score shift| (points)", scale=1.0, lo=M.SCORE_NET_RANGE[0], hi=M.SCORE_NET_RANGE[1],
                title="Judge-bias cues, pointwise 1-10")
    if params.pointwise_cues and not T["pointwise"].empty:
        result.figures["pointwise_shifts"] = P.plot_pointwise(T["pointwise"], gate_max=params.gate_max_score_shift,
                                                              title=f"Score shift, 1-10 scale ({where})")
    result.figures = released(result.figures)
    if out is not None:
        result.save(out if isinstance(out, RunOutput) else RunOutput(out))
    return result


def _judge_all(params: Params, p: Plan, items: pd.DataFrame, out: Any, *, progress: bool, cache: Any = None,
               mode: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Every planned request for every judge (the fixed-n run): judgments and parsed answers with a ``judge``
    column, and each judge's run tallies."""
    from cfbench.judges import run_requests

    judgments, parsed_all, stats = [], [], {}
    for judge in params.judges:
        run_ = run_requests(judge, p.requests, cache=cache, mode=mode, desc=f"judge bias {judge}", progress=progress)
        if (mode or os.environ.get("CFBENCH_MODE")) == "plan" and not run_.judgments["ok"].astype(bool).any():
            raise InputError(f"plan only: {len(p.requests)} requests recorded for {judge} and none answered; "
                             "send them (`cfbench batch plan --study judge_bias -f CONFIG`), then rerun with --replay",
                             source="judge_bias", field="judges")
        parsed = parse_judgments(run_.judgments)
        judgments.append(run_.judgments.assign(judge=judge))
        parsed_all.append(parsed.assign(judge=judge))
        stats[judge] = run_.stats
        pw = parsed[parsed["task"] == "pairwise"]
        if not pw["parse_ok"].any():
            _stop_nothing_read(judge, pw, run_.judgments, items, parsed_all, out)
    return pd.concat(judgments, ignore_index=True), pd.concat(parsed_all, ignore_index=True), stats


def _sequential(params: Params, p: Plan, items: pd.DataFrame, result: "JudgeBiasResult", out: Any, *,
                progress: bool, cache: Any = None, mode: str | None = None, wave: Any = None
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The sequential walk (:mod:`.sequential`): its tables and summary, and what the fixed-n tables read."""
    from .sequential import judge_in_waves

    walk = judge_in_waves(params, p, items, progress=progress, cache=cache, mode=mode, wave=wave)
    result.tables["sequential_cells"] = walk.cells.table(stopped_by=walk.stopped_by)
    result.tables["sequential_waves"] = walk.cells.waves_table()
    result.summary["sequential"] = walk.summary()
    if not len(walk.parsed):
        raise InputError(f"the sequential walk judged no item ({walk.stopped_by or 'no item'})", source="judge_bias",
                         field="max_requests")
    result.sent_ids = list(dict.fromkeys(walk.judgments["request_id"]))
    for judge in params.judges:
        pw = walk.parsed[(walk.parsed["judge"] == judge) & (walk.parsed["task"] == "pairwise")]
        if not pw["parse_ok"].any():
            _stop_nothing_read(judge, pw, walk.judgments[walk.judgments["judge"] == judge], items, [walk.parsed], out)
    return walk.judgments, walk.parsed, walk.stats


def _stop_nothing_read(judge: str, pw: pd.DataFrame, judgments: pd.DataFrame, items: pd.DataFrame,
                       parsed_all: list, out: Any) -> None:
    """No pairwise answer of ``judge`` could be read: write the items and answers so far (with ``out``) and
    raise :class:`InputError` saying why, by kind (timeout, unparseable, ...)."""
    failed = int((~judgments["ok"].astype(bool)).sum())
    if out is not None:
        writer = out if isinstance(out, RunOutput) else RunOutput(out)
        writer.table("items", items)
        writer.table("answers", pd.concat(parsed_all, ignore_index=True))
    kinds = describe_kinds(pw["failure"].value_counts().to_dict())
    raise InputError(f"all {len(pw)} pairwise replies from {judge} are parse failures or failed calls "
                     f"({kinds}; {failed} failed calls; e.g. {str(pw['raw'].iloc[0])[:80]!r}); no position, "
                     "accuracy or cue number is computed", source="judge_bias", field="judges")


def noise_reference_note(params: Params) -> str:
    """One line: which noise references this run has, and why (repeats identical by construction at T = 0)."""
    k = params.n_repeats
    if k == 0:
        return (f"reworded prompt (same items, same order) at temperature {params.temperature:g}; no repeats: at "
                "temperature 0 a repeat of the same prompt is identical by construction (greedy decoding), so "
                "the rewording is the reference")
    zero = (" (at temperature 0 a local judge's repeats are identical by construction; an API judge's may not be)"
            if params.temperature == 0 else "")
    return (f"reworded prompt (same items, same order) and {k} repeat{'s' if k > 1 else ''} of each baseline "
            f"request at temperature {params.temperature:g}{zero}; a claim must hold against both references")


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
        p = Params(judges=(judge,), cues=tuple(cues), pointwise_cues=tuple(pointwise_cues), n_draft=0,
                   n_control=len(items), **params)
        where = None if out is None else os.path.join(os.fspath(out), "".join(c if c.isalnum() or c in "-_." else "_"
                                                                                for c in judge))
        results[judge] = run(p, out=where, progress=progress, items=items)
    return results
