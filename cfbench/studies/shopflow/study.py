"""The ShopFlow study as one call: ``run(Params(...), out=...) -> ShopflowResult``.

Part 1 ("seed") recomputes every figure the seed prints from its ten labelled
synthetic pairs; part 2 ("judged") runs the same audit on a real judge's
P(ready) for cfbench's matched pairs, with McNemar and Tango's matched-pair
interval per stratum, the interval rule and a threshold sweep. The notebook ``notebooks/shopflow.ipynb``
is this call plus display.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from cfbench.core.text import md_safe
from cfbench.core.errors import InputError
from cfbench.core.files import shorten
from cfbench.core.params import check_judge_settings, params_from_mapping
from cfbench.io.pairs import load_pairs
from cfbench.judges.failures import describe_kinds
from cfbench.judges.runner import uses_judge_settings
from cfbench.report import RunOutput, StudyResult, released
from cfbench.stats.sequential_cells import check_sequential_params

from . import findings as F
from . import readiness as R
from .contract import FairnessContract
from .gate import ORDER, ROW_EXTRAS, AuditTables, PairAudit, compare_candidate, new_state, paired_mcnemar
from .policy import check_threshold

__all__ = ["Params", "ShopflowResult", "run", "iter_requests"]

_DATA = Path(__file__).resolve().parent / "data"
#: McNemar per stratum: the TPR question is the ready pairs', the FPR question the needs-review pairs';
#: "all" (pooled) is an extra that mixes both.
_STRATA = (("ready", True), ("needs_review", False), ("all", None))
#: the tables both parts write, ``<part>_<name>`` (besides the sweep and the pairwise gaps)
_PART_TABLES = ("rates", "flips", "rate_intervals", "checks", "interval_checks", "stratum_tests", "support",
                "calibration", "intersections", "attribution")


@dataclass(frozen=True)
class Params:
    """Parameters of a ShopFlow run (the notebook's ``parameters`` cell, minus output_dir/config_name)."""

    seed_observations_path: str = ""  # the seed's 10 pairs with scores ("" = shipped file)
    contract_path: str = ""  # release contract ("" = shipped seed contract)
    pairs_path: str = ""  # matched pairs to judge, CSV or JSONL with request/reply text ("" = shipped 44 pairs)
    seed_threshold: float = 0.70  # the seed's routing threshold
    judge: str = "scripted:shopflow-ready"  # judge spec for part 2
    prompt: str = "baseline"  # readiness prompt (baseline / register_blind)
    candidate_prompt: str = ""  # a second prompt audited as a candidate ("" skips it)
    judged_threshold: float = 0.5  # routing threshold on P(ready) in part 2
    max_pairs: int = 0  # only the first N pairs of pairs_path (0 = all)
    variants: tuple = ("formal", "conversational")  # the two wording conditions, reference first
    seed_calibration_edges: tuple = (0.70, 0.90)  # score-band cut points, seed part
    judged_calibration_edges: tuple = (0.30, 0.50, 0.70)  # score-band cut points, judged part
    calibration_min_support: int = 10  # rows a calibration cell needs to be read
    sweep_start: float = 0.05  # threshold sweep: first threshold
    sweep_stop: float = 0.95  # threshold sweep: last threshold
    sweep_step: float = 0.01  # threshold sweep: step
    # n_boot and seed: unused since ShopFlow dropped its descriptive percentile bootstrap (every interval
    # it reports is exact or computed exactly: Clopper-Pearson rates, Tango gaps); still accepted so the
    # configs and notebooks that set them load
    n_boot: int = 2000  # unused (see above)
    seed: int = 20260001  # unused (see above)
    concurrency: int = 0  # judge calls in flight (0: adapt to the server's latency); not part of any cache key
    timeout_s: float = 0.0  # seconds a judge call may take from the moment it is sent (0: 600)
    # -- sequential audit (issue 35; .sequential) --
    sequential: bool = False  # judge pairs in waves, stop sending a stratum's pairs once its gap gate is decided
    max_items: int = 0  # sequential budget: most pairs judged (0: all)
    wave_size: int = 4  # sequential: pairs per wave (the cells are looked at after each)
    max_requests: int = 0  # sequential budget: most requests under the audited prompt (0: no limit)
    max_cost_usd: float = 0.0  # sequential budget: most US dollars by the price table, audited prompt (0: no limit)

    def __post_init__(self) -> None:
        check_judge_settings(self)
        check_sequential_params(self, priced=True)
        for name in ("variants", "seed_calibration_edges", "judged_calibration_edges"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if len(self.variants) != 2 or len(set(self.variants)) != 2:
            raise InputError(f"need exactly two distinct variants, got {shorten(list(self.variants))}", source="parameters",
                             field="variants")
        check_threshold(self.seed_threshold, name="seed_threshold")
        check_threshold(self.judged_threshold, name="judged_threshold")
        if self.max_pairs < 0:
            raise InputError("must be 0 (all) or positive", source="parameters", field="max_pairs")
        if self.n_boot < 1:
            raise InputError("must be positive", source="parameters", field="n_boot")
        if not (0 < self.sweep_step and self.sweep_start <= self.sweep_stop):
            raise InputError("sweep needs step > 0 and start <= stop", source="parameters", field="sweep_step")

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None = None, *, source: str = "parameters",
                    **overrides: Any) -> "Params":
        """Params from a config mapping (unknown names and wrong types are InputErrors)."""
        data = {k: v for k, v in dict(mapping or {}).items() if k not in ("output_dir", "config_name")}
        return params_from_mapping(cls, data, source=source, **overrides)

    def path(self, name: str) -> Path:
        """The file a path parameter points to ("" means the shipped one)."""
        value = getattr(self, name)
        default = {"seed_observations_path": "seed_observations.csv", "contract_path": "contract.yaml",
                   "pairs_path": "pairs.jsonl"}[name]
        return Path(value) if value else _DATA / default

    def sweep_thresholds(self) -> np.ndarray:
        grid = np.arange(self.sweep_start, self.sweep_stop + self.sweep_step / 2, self.sweep_step)
        return np.round(np.clip(grid, 0.0, 1.0), 4)


@dataclass
class ShopflowResult(StudyResult):
    """Every table, figure and number of a ShopFlow run; ``audits`` holds the :class:`PairAudit` objects."""

    audits: dict[str, PairAudit] = field(default_factory=dict)
    seed_lines: list[str] = field(default_factory=list)
    judged_error: str | None = None

    def invariants(self) -> dict[str, bool]:
        return F.invariants(self)

    def findings(self) -> str:
        return md_safe(F.findings_markdown(self))  # no raw tag from a name, whatever it held

    def header(self) -> str:
        """One Markdown paragraph saying what this run did (judge, pairs, calls), from its numbers."""
        return md_safe(F.run_header(self))


def _audit_kw(params: Params, part: str) -> dict[str, Any]:
    """The options of :func:`.gate.tables_from_stats` for the ``seed`` or ``judged`` part."""
    return dict(threshold=params.seed_threshold if part == "seed" else params.judged_threshold,
                variants=list(params.variants), calibration_min_support=params.calibration_min_support,
                calibration_edges=params.seed_calibration_edges if part == "seed" else params.judged_calibration_edges)


def _computed(contract: FairnessContract, rows: pd.DataFrame, excluded: pd.DataFrame | None = None, *,
              thresholds: Any = None, **kw: Any) -> AuditTables:
    """Every table of one audit through the per-pair state (:func:`.gate.new_state`)."""
    return new_state().update(rows, excluded).compute(contract=contract, thresholds=thresholds, **kw)


def _seed_part(params: Params, contract: FairnessContract, result: ShopflowResult) -> None:
    vs = list(params.variants)
    path = params.path("seed_observations_path")
    kw = _audit_kw(params, "seed")

    def load(column: str) -> pd.DataFrame:
        f = load_pairs(path, score_column=column, variants=vs)
        return f.assign(**{ORDER: np.arange(len(f))})

    at = _computed(contract, load("score"), thresholds=params.sweep_thresholds(), **kw)
    base, t = at.audit, at.tables
    cand = _computed(contract, load("candidate_score"), **kw).audit
    result.audits.update(seed=base, seed_candidate=cand)
    comparison = compare_candidate(base, cand)
    mcnemar = {k: vars(paired_mcnemar(base.routed, vs, ready=r)) for k, r in _STRATA}
    result.tables.update({f"seed_{k}": t[k] for k in _PART_TABLES})
    result.tables.update({"seed_candidate_comparison": comparison, "seed_candidate_interval_checks": cand.interval_checks,
                          "seed_threshold_sweep": t["threshold_sweep"], "seed_pairwise_gaps": t["pairwise_gaps"]})
    summary = base.summary()
    summary.update({
        "baseline_checks": summary.pop("checks"),
        "candidate": {"tpr_gap": cand.tpr_gap, "fpr_gap": cand.fpr_gap, "checks": cand.summary()["checks"],
                      "interval_checks": cand.summary()["interval_checks"], "flips": cand.summary()["flips"]},
        # the release gate is evaluated on the candidate, as in the seed
        "decision": cand.release.decision, "missing": list(cand.release.missing),
        "requirements": cand.release.requirements,
        "mcnemar": mcnemar,
        "source": _shown_path(path), "shipped_fixture": not params.seed_observations_path,
    })
    result.summary["seed"] = summary
    result.seed_lines = F.seed_lines(base, cand, fixture=not params.seed_observations_path, variants=vs)


def _judge(params: Params, pairs: pd.DataFrame, prompt: str, *, progress: bool, cache: Any = None,
           mode: str | None = None) -> tuple[Any, pd.DataFrame, R.ScoredPairs]:
    from cfbench.judges import run_requests

    requests = R.build_requests(pairs, prompt=prompt)
    run_ = run_requests(params.judge, requests, cache=cache, mode=mode, desc=f"readiness {prompt}", progress=progress)
    if (mode or os.environ.get("CFBENCH_MODE")) == "plan" and not run_.judgments["ok"].astype(bool).any():
        _stop_plan_only(params, pairs, run_, progress=progress, cache=cache, mode=mode)
    parsed = R.parse_readiness(run_.judgments)
    if not parsed["parse_ok"].any():
        failed = int((~run_.judgments["ok"].astype(bool)).sum()) if "ok" in run_.judgments else 0
        example = parsed["error"].dropna().iloc[0] if failed else parsed["raw"].iloc[0]
        kinds = describe_kinds(parsed["failure"].value_counts().to_dict())
        raise InputError(f"no pair has every variant scored: none of the {len(parsed)} replies from {params.judge} "
                         f"could be read ({kinds}; e.g. {str(example)[:80]!r}); no rate or gap "
                         "is computed", source="shopflow judged audit", field="score")
    scored = R.attach_scores(pairs, parsed, prompt=prompt, variants=list(params.variants))
    return run_, parsed, scored


def _judged_pairs(params: Params) -> pd.DataFrame:
    """The matched pairs the judged part scores (``pairs_path``, the first ``max_pairs``)."""
    pairs = load_pairs(params.path("pairs_path"), score_column=None, variants=list(params.variants))
    if params.max_pairs:
        keep = list(dict.fromkeys(pairs["pair_id"]))[: params.max_pairs]
        pairs = pairs[pairs["pair_id"].isin(keep)].reset_index(drop=True)
    return pairs


def iter_requests(params: Params) -> Iterator[Any]:
    """The requests a run of ``params`` sends to ``params.judge`` (nothing is called): each pair x
    variant under ``prompt``, then under ``candidate_prompt`` when set. For ``cfbench batch plan``."""
    pairs = _judged_pairs(params)
    for prompt in [params.prompt] + ([params.candidate_prompt] if params.candidate_prompt else []):
        for start in range(0, len(pairs), 1000):  # built a slice of pairs at a time
            yield from R.build_requests(pairs.iloc[start:start + 1000], prompt=prompt)


def _stop_plan_only(params: Params, pairs: pd.DataFrame, run_: Any, *, progress: bool, cache: Any = None,
                    mode: str | None = None) -> None:
    """Plan-only mode with no cached reply: record the candidate prompt's requests too, then stop the
    judged part with what to do next (the seed part's files are already written)."""
    from cfbench.judges import run_requests

    n = int(run_.stats.get("n_unique", len(run_.judgments)))
    if params.candidate_prompt:
        cand = run_requests(params.judge, R.build_requests(pairs, prompt=params.candidate_prompt), cache=cache,
                            mode=mode, desc=f"readiness {params.candidate_prompt}", progress=progress)
        n += int(cand.stats.get("n_unique", len(cand.judgments)))
    raise InputError(f"plan only: {n} requests recorded for {params.judge} and none answered, so the judged part "
                     "(rates, gaps, release decision) cannot be computed. Send them with `cfbench cache export` "
                     "or `cfbench batch plan --study shopflow -f CONFIG`, then rerun with --replay",
                     source="shopflow judged audit", field="judge")


def judged_rows(pairs: pd.DataFrame, scored: R.ScoredPairs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-pair state's two frames from a judged run: the scored rows of the complete pairs (without the
    request and reply texts, with how each reply was scored) and the excluded rows, each row with its
    position in ``pairs`` (:data:`.gate.ORDER`)."""
    pos = pairs[["pair_id", "variant"]].assign(**{ORDER: np.arange(len(pairs))})
    rows = scored.frame.drop(columns=[c for c in ("request", "reply") if c in scored.frame.columns]).merge(
        scored.parsed[["pair_id", "variant", *ROW_EXTRAS]], on=["pair_id", "variant"], how="left")
    return rows.merge(pos, on=["pair_id", "variant"], how="left"), scored.excluded.merge(pos, on=["pair_id", "variant"],
                                                                                         how="left")


def _judged_part(params: Params, contract: FairnessContract, result: ShopflowResult, *, progress: bool,
                 cache: Any = None, mode: str | None = None, wave: Any = None) -> None:
    vs = list(params.variants)
    pairs = _judged_pairs(params)
    if params.sequential:  # issue 35: waves; the tables below read the pairs the walk judged
        pairs, run_, parsed, scored = _sequential(params, contract, pairs, result, progress=progress, cache=cache,
                                                  mode=mode, wave=wave)
    else:
        run_, parsed, scored = _judge(params, pairs, params.prompt, progress=progress, cache=cache, mode=mode)
    result.frames["pairs"] = pairs
    kw = _audit_kw(params, "judged")
    at = _computed(contract, *judged_rows(pairs, scored), thresholds=params.sweep_thresholds(), **kw)
    audit, t = at.audit, at.tables
    result.audits["judged"] = audit
    mcn = {k: paired_mcnemar(audit.routed, vs, ready=r) for k, r in _STRATA}
    rows = t["rows"]
    result.frames.update(requests_parsed=parsed, judgments=run_.judgments)
    result.tables.update({f"judged_{k}": t[k] for k in ("rows",) + _PART_TABLES + (
        "threshold_sweep", "pairwise_gaps", "excluded", "score_by_variant")})
    summary = audit.summary()
    summary.update({
        "judge": params.judge, "prompt": params.prompt, "prompt_version": R.PROMPT_VERSION,
        "judge_is_test_double": params.judge.startswith("scripted:"),
        "score": "P(ready) from first-token logprobs",
        "n_pairs_loaded": int(pairs["pair_id"].nunique()), "n_pairs_excluded": int(scored.excluded["pair_id"].nunique()),
        "excluded": scored.excluded.to_dict(orient="records"),
        "score_sources": parsed["score_source"].fillna("not read").value_counts().to_dict(),
        "failures_by_kind": {k: int(n) for k, n in parsed["failure"].dropna().value_counts().sort_index().items()},
        "min_yes_no_mass": float(parsed["yes_no_mass"].min()),
        "mean_score": rows.groupby("variant")["score"].mean().to_dict(),
        "mcnemar": {k: vars(v) for k, v in mcn.items()},
        "judge_stats": run_.stats,
    })
    if params.candidate_prompt:
        summary["candidate"] = _candidate(params, contract, pairs, scored, result, kw, progress=progress,
                                          cache=cache, mode=mode)
    result.summary["judged"] = summary


def _sequential(params: Params, contract: FairnessContract, pairs: pd.DataFrame, result: ShopflowResult, *,
                progress: bool, cache: Any = None, mode: str | None = None, wave: Any = None
                ) -> tuple[pd.DataFrame, Any, pd.DataFrame, R.ScoredPairs]:
    """The sequential walk (:mod:`.sequential`): its tables and summary, and the judged pairs with their run,
    parsed replies and scores for the fixed-n tables."""
    from types import SimpleNamespace

    from .sequential import judge_in_waves

    walk = judge_in_waves(params, pairs, contract, progress=progress, cache=cache, mode=mode, wave=wave)
    result.tables["judged_sequential_cells"] = walk.cells.table(stopped_by=walk.stopped_by)
    result.tables["judged_sequential_waves"] = walk.cells.waves_table()
    result.summary["sequential"] = walk.summary()
    if not len(walk.pairs):
        raise InputError(f"the sequential walk judged no pair ({walk.stopped_by or 'no pair to judge'})",
                         source="shopflow judged audit",
                         field="max_cost_usd" if "max_cost_usd" in walk.stopped_by else "max_requests")
    parsed = R.parse_readiness(walk.judgments)
    scored = R.attach_scores(walk.pairs, parsed, prompt=params.prompt, variants=list(params.variants))
    return walk.pairs, SimpleNamespace(judgments=walk.judgments, stats=walk.stats), parsed, scored


def _candidate(params: Params, contract: FairnessContract, pairs: pd.DataFrame, scored: R.ScoredPairs,
               result: ShopflowResult, kw: dict, *, progress: bool, cache: Any = None, mode: str | None = None) -> dict:
    _, _, cand_scored = _judge(params, pairs, params.candidate_prompt, progress=progress, cache=cache, mode=mode)
    common = sorted(set(cand_scored.frame["pair_id"]) & set(scored.frame["pair_id"]))
    base_rows, cand_rows = judged_rows(pairs, scored)[0], judged_rows(pairs, cand_scored)[0]
    base = _computed(contract, base_rows[base_rows["pair_id"].isin(common)], **kw).audit
    cand = _computed(contract, cand_rows[cand_rows["pair_id"].isin(common)], **kw).audit
    result.audits["judged_candidate"] = cand
    result.tables["judged_candidate_comparison"] = compare_candidate(base, cand)
    s = cand.summary()
    return {"prompt": params.candidate_prompt, **{k: s[k] for k in ("tpr_gap", "fpr_gap", "flips", "rates",
                                                                   "decision", "missing", "interval_checks")},
            "n_pairs_excluded": int(cand_scored.excluded["pair_id"].nunique())}


def _figures(result: ShopflowResult, params: Params, part: str) -> None:
    from . import figures as P

    audit = result.audits[part]
    who = "seed fixture" if part == "seed" else params.judge
    n_pairs = audit.routed["pair_id"].nunique()
    result.figures[f"{part}_rates"] = P.plot_slice_rates(
        audit.rate_intervals(), title=f"{who}: auto-serve rates by wording ({n_pairs} pairs)")  # method: caption
    result.figures[f"{part}_threshold_sweep"] = P.plot_threshold_sweep(
        result.tables[f"{part}_threshold_sweep"], threshold=audit.threshold, variants=audit.variants,
        tpr_limit=audit.contract.max_tpr_gap, fpr_limit=audit.contract.max_fpr_gap, n_pairs=n_pairs,
        intervals=audit.interval_checks,
        title=f"{who}: signed gaps vs routing threshold ({n_pairs} pairs; same pairs at every threshold)")
    result.figures[f"{part}_calibration"] = P.plot_calibration(
        audit.calibration, title=f"{who}: share ready by score band (hatched: n < {params.calibration_min_support})")
    waves = result.tables.get(f"{part}_sequential_waves")
    if waves is not None and len(waves):
        from cfbench.report import plot_sequences

        result.figures[f"{part}_sequential_sequences"] = plot_sequences(
            waves, result.tables[f"{part}_sequential_cells"], key_names=["gap"], unit="pairs",
            ylabel="matched-pair gap (pp)", title=f"{who}: sequential audit of the gap gates")
    result.figures.update(released({k: v for k, v in result.figures.items() if k.startswith(f"{part}_")}))


@uses_judge_settings
def run(params: Params, out: "RunOutput | str | os.PathLike[str] | None" = None, *,
        config_name: str | None = None, progress: bool = True, cache: Any = None, mode: str | None = None,
        wave: Any = None) -> ShopflowResult:
    """Run both parts of the ShopFlow audit; write tables, figures and summary.json under ``out`` when given.

    The seed part is written before the judge is called, so a judge that
    yields nothing usable leaves the seed's files and an error that says so
    (no judged rate or gap is written). ``config_name`` is recorded in the
    summary as ``config`` (e.g. ``smoke``). ``cache``, ``mode``: the judge runner's response cache and mode
    (None: its defaults, ``$CFBENCH_MODE``). ``wave``: with ``sequential``, called with each admitted wave
    before it is judged (the Batch-API path, :func:`.batch_waves.run_batch`).
    """
    if not isinstance(params, Params):
        raise InputError(f"expected shopflow Params, got {type(params).__name__}", source="shopflow.run")
    contract = FairnessContract.from_yaml(params.path("contract_path"))
    result = ShopflowResult(params=params)
    if config_name is not None:
        result.summary["config"] = config_name
    result.frames["contract"] = pd.DataFrame([{"key": k, "value": v} for k, v in vars(contract).items()])
    _seed_part(params, contract, result)
    _figures(result, params, "seed")
    writer = None
    if out is not None:
        writer = out if isinstance(out, RunOutput) else RunOutput(out)
        result.save(writer)
    _judged_part(params, contract, result, progress=progress, cache=cache, mode=mode, wave=wave)
    _figures(result, params, "judged")
    if writer is not None:
        result.save(writer)
    return result


def _shown_path(path: Path) -> str:
    """``path`` relative to the project when it lies inside it (so results hold no machine's paths)."""
    root = Path(__file__).resolve().parents[3]
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
