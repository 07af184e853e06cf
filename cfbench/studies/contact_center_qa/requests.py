"""Step 3 of the contact-center study: the requests, one per distinct prompt (nothing is called).

:func:`plan_for` is the entry: the variants of ``params`` on some transcripts (:mod:`.variants`)
expanded by :func:`plan_evaluation` into one *row* per (judge, arm, task, question, variant, repeat)
and one :class:`~cfbench.judges.Request` per distinct prompt. Rows whose prompts are identical (the
original transcript appears under every dimension whose compared set contains it; repeat 0 of the
robustness baseline is the original itself) share a request and are judged once.

:func:`iter_requests` is :func:`plan_for` applied transcript by transcript to the items of
:mod:`.items`, yielding each transcript's requests before the next is read (memory flat in the
number of transcripts; what ``cfbench batch plan --study contact_center_qa -f CONFIG`` sends);
:func:`count_requests` counts them. :meth:`EvaluationPlan.summary` and :func:`estimate_cost` are
the dry run; running the requests is :mod:`.judging`.

Pseudo-dimensions used in the rows frame:

``original``    condition ``original``: one row per item (accuracy, direction)
``robustness``  condition ``repeat<r>``: k repeats of each original at the
                robustness temperature (CFR/MASD among repeats, kappa)

Variant rows that are not applicable or failed validation are not judged;
they are listed in ``plan.skipped`` with their reason, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.schema import VARIANT_COLUMNS
from cfbench.judges.base import GenerationConfig, Request, key_settings
from cfbench.studies.contact_center_qa import coaching as _coaching
from cfbench.studies.contact_center_qa import qa as _qa
from cfbench.studies.contact_center_qa.items import iter_items
from cfbench.studies.contact_center_qa.prompts import asks_for_evidence, load_rubric, prompt_parts
from cfbench.studies.contact_center_qa.variants import make_item_variants

__all__ = ["TASKS", "ROW_COLUMNS", "EvaluationPlan", "plan_for", "plan_evaluation", "iter_requests",
           "count_requests", "estimate_cost", "LOCAL_SPEED", "CALIBRATION", "OUTPUT_TOKENS"]

TASKS = ("qa", "positives", "improvement", "customer")
ROW_COLUMNS = ["row_id", "judge", "arm", "task", "question_id", "item_id", "dimension", "condition",
               "variant_id", "repeat", "temperature", "request_id", "key"]
_ARMS = ("baseline", "fairness")
#: transcripts a preview plans: a plan-only run's display frames, the per-row frames and plan a run keeps
#: in memory (``study.run``), and ``design_table``'s costs of a run that kept no plan
PREVIEW_ITEMS = 3


@dataclass
class EvaluationPlan:
    """What :func:`plan_evaluation` produced.

    ``rows``      one row per planned judgment (``ROW_COLUMNS``)
    ``requests``  judge spec -> list of distinct requests
    (coaching rows carry the task name, ``positives``/``improvement``, as
    their ``question_id`` so every row has a unit key)
    ``skipped``   variant rows not judged, with ``reason``
    ``settings``  the planning arguments (for the run's summary)
    """

    rows: pd.DataFrame
    requests: dict[str, list[Request]]
    skipped: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Dry-run counts per judge, arm and task: rows, distinct requests, shared."""
        r = self.rows
        g = r.groupby(["judge", "arm", "task"], sort=True)
        out = g.agg(n_rows=("row_id", "size"), n_requests=("key", "nunique")).reset_index()
        out["n_shared"] = out["n_rows"] - out["n_requests"]
        return out

    @property
    def n_requests(self) -> int:
        return sum(len(v) for v in self.requests.values())


def _turns_list(turns: Any, record: object) -> list[dict]:
    if turns is None or (isinstance(turns, float) and math.isnan(turns)):
        raise InputError("variant has no turns", record=record, field="turns")
    out = []
    for t in list(turns):
        if hasattr(t, "speaker"):
            out.append({"speaker": t.speaker, "text": t.text})
        elif isinstance(t, Mapping):
            out.append({"speaker": t.get("speaker"), "text": t.get("text")})
        else:
            raise InputError(f"turn of type {type(t).__name__} is not a mapping", record=record, field="turns")
    return out


def _truthy(v: Any) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return True  # not validated (e.g. header variants) counts as usable
    return bool(v)


def _key(judge: str, req: Request) -> str:
    return req.cache_key(judge)


def plan_for(params: Any, transcripts: Sequence[Any], *, rubric: pd.DataFrame | None = None,
             progress: bool = True, request_key: Any = None) -> tuple[pd.DataFrame, EvaluationPlan]:
    """Variants and the request plan of ``params`` on ``transcripts`` (nothing is called): the dry run.

    ``request_key`` is passed to :func:`plan_evaluation` (how identical requests are merged).
    """
    transcripts = list(transcripts)
    variants, compared, per_item = make_item_variants(params, transcripts, progress=progress)
    items = [t.id for t in transcripts]
    gen = GenerationConfig(temperature=params.temperature, top_p=1.0, max_tokens=params.max_tokens,
                           seed=params.seed)
    plan = plan_evaluation(
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


def plan_evaluation(variants: pd.DataFrame, *, judges: Sequence[str], questions: Sequence[str],
                    rubric: pd.DataFrame | None = None, qa_mode: str = "json",
                    evidence_chars: int = 0, config: GenerationConfig | None = None,
                    items: Sequence[str] | None = None, dimensions: Sequence[str] | None = None,
                    compared: Mapping[str, Sequence[str]] | None = None,
                    compared_per_item: Mapping[tuple[str, str], Sequence[str]] | None = None,
                    repeats: int = 3,
                    robustness_temperature: float | Sequence[float] | None = None,
                    fairness: bool = False, fairness_dimensions: Sequence[str] | None = None,
                    coaching: bool = False, coaching_items: Sequence[str] | None = None,
                    coaching_dimensions: Sequence[str] | None = None,
                    analysis_chars: int = 200, paraphrases: int = 0,
                    fairness_contract: str = "evidence",
                    request_key: Callable[[str, Request], Any] | None = None) -> EvaluationPlan:
    """Expand variants into judgment rows and distinct requests (nothing is called).

    Parameters
    ----------
    variants : DataFrame
        ``VARIANT_COLUMNS``; rows with condition ``"original"`` give each
        item's original transcript (every item needs one).
    judges : judge specs, e.g. ``["local:qwen2.5-coder-1.5b"]``
    questions : rubric question ids asked in the Auto-QA task
    compared : optional ``{dimension: [conditions]}``, the compared set of
        each dimension (e.g. whether "original" is one of its conditions);
        by default every judged condition of the dimension is compared.
    compared_per_item : optional ``{(item, dimension): [conditions]}`` that
        narrows the compared set per item (a sampled design, see
        :func:`.variants.sample_conditions`);
        an (item, dimension) absent from it is not judged on that dimension.
    repeats : k, repeats of each original for the robustness baseline
        (repeat index is part of the cache key; 0 disables the baseline)
    robustness_temperature : temperature(s) of the repeats; default the
        evaluation temperature (the seed's "same prompt and settings"; at 0 a
        deterministic backend repeats itself). Repeats at the evaluation
        temperature form pseudo-dimension ``robustness``; repeats at any other
        temperature ``t`` form ``robustness_t<t>`` (a sampling-noise reference).
    fairness : also plan the fairness-prompting arm, on
        ``fairness_dimensions`` (default all)
    fairness_contract : output contract of the fairness arm's Auto-QA requests:
        ``"evidence"`` (default; the seed's F.3 answer / rationale / evidence reply,
        :func:`.qa.parse_qa_evidence`) or ``"task"`` (the baseline's ``qa_mode``, so
        the two arms differ in the system prompt only)
    paraphrases : k > 0 also asks each question about each original in the
        rubric's first k paraphrases, as pseudo-dimension ``robustness_wording``
        (conditions ``wording0`` = the rubric text, ``wording1..k``; the
        ``repeat`` column holds the wording slot): wording sensitivity, to
        compare attribute sensitivity with
    coaching : also plan the coaching notes (``coaching.COACHING_KINDS``) on ``coaching_items``
        x ``coaching_dimensions`` (defaults: all)
    request_key : ``(judge, request) -> hashable`` that merges identical requests (default: the
        cache key, which the ``key`` column holds); a streamed plan that only needs the requests
        passes a cheaper exact equivalent
    """
    _check_inputs(variants, qa_mode, fairness_contract)
    rubric = rubric if rubric is not None else _qa.load_rubric()
    qdicts = _question_dicts(rubric, questions, paraphrases)
    cfg = _configs(config, qa_mode=qa_mode, evidence_chars=evidence_chars, fairness_contract=fairness_contract,
                   analysis_chars=analysis_chars, robustness_temperature=robustness_temperature)
    v, item_order, skipped = _usable_rows(variants, items)
    originals = _originals(v, item_order)
    cf, dims_all = _compared_rows(v, dimensions, compared, compared_per_item)

    fair_dims = set(fairness_dimensions) if fairness_dimensions is not None else set(dims_all)
    c_items = set(coaching_items) if coaching_items is not None else set(item_order)
    c_dims = set(coaching_dimensions) if coaching_dimensions is not None else set(dims_all)
    ex = _Expansion(cfg, qdicts, judges, request_key or _key, evidence_chars=evidence_chars,
                    paraphrases=paraphrases, repeats=repeats, fair_dims=fair_dims, coaching_dims=c_dims)
    task_list: list[tuple[str, str | None]] = [("qa", q) for q in questions]
    if coaching:
        task_list += [(kind, None) for kind in _coaching.COACHING_KINDS]
    # each item's original and compared variant rows, looked up once (not per judge, arm and task)
    orig_views = {item: _RowView(item, pd.Series(originals.loc[item]).rename(None)) for item in item_order}
    cf_rows: dict[Any, list] = {}
    for vrow in cf.itertuples(index=False):
        cf_rows.setdefault(vrow.item_id, []).append(vrow)
    for judge in judges:
        for arm in ["baseline"] + (["fairness"] if fairness else []):
            for task, qid in task_list:
                for item in item_order:
                    if task == "qa" or item in c_items:
                        ex.expand_item(judge, arm, task, qid, item, orig_views[item], cf_rows.get(item, ()))
    frame = pd.DataFrame(ex.rows)
    frame.insert(0, "row_id", np.arange(len(frame)))
    settings = dict(judges=list(judges), questions=list(questions), qa_mode=qa_mode,
                    evidence_chars=evidence_chars, repeats=repeats, robustness_temperatures=cfg.rob_ts,
                    temperature=cfg.base.temperature, fairness=fairness,
                    fairness_dimensions=sorted(fair_dims) if fairness else [],
                    fairness_contract=cfg.fair_mode if fairness else None, coaching=coaching,
                    coaching_items=sorted(c_items) if coaching else [],
                    coaching_dimensions=sorted(c_dims) if coaching else [], n_items=len(item_order),
                    dimensions=dims_all, rubric_version=rubric.attrs.get("version"),
                    sampled_conditions=compared_per_item is not None, paraphrases=paraphrases)
    return EvaluationPlan(rows=frame[ROW_COLUMNS], requests={j: list(d.values()) for j, d in ex.requests.items()},
                          skipped=skipped.reset_index(drop=True), settings=settings)


def _check_inputs(variants: pd.DataFrame, qa_mode: str, fairness_contract: str) -> None:
    for c in ("item_id", "dimension", "condition", "variant_id", "turns"):
        if c not in variants.columns:
            raise InputError("missing column", source="variants frame", field=c)
    if qa_mode not in _qa.QA_MODES:
        raise ValueError(f"qa_mode must be one of {_qa.QA_MODES}, got {qa_mode!r}")
    if fairness_contract not in ("evidence", "task"):
        raise InputError(f"must be 'evidence' or 'task', got {fairness_contract!r}", field="fairness_contract")


def _question_dicts(rubric: pd.DataFrame, questions: Sequence[str], paraphrases: int) -> dict[str, dict]:
    """Each asked question's rubric row as a dict; unknown ids and too few paraphrases raise."""
    qrows = rubric.set_index("question_id")
    for q in questions:
        if q not in qrows.index:
            raise InputError(f"unknown question id (valid: {', '.join(qrows.index)})", source="rubric", record=q,
                             field="question_id")
        if paraphrases > len(qrows.loc[q, "paraphrases"]):
            raise InputError(f"question has {len(qrows.loc[q, 'paraphrases'])} paraphrases, {paraphrases} asked",
                             source="rubric", record=q, field="paraphrases")
    return {q: qrows.loc[q].to_dict() | {"question_id": q} for q in questions}  # one lookup per question


@dataclass(frozen=True)
class _Configs:
    """The generation settings of each kind of request."""

    base: GenerationConfig
    qa_mode: str
    qa: GenerationConfig
    fair_mode: str
    fair_qa: GenerationConfig
    coach: GenerationConfig
    rob_ts: list[float]


def _configs(config: GenerationConfig | None, *, qa_mode: str, evidence_chars: int, fairness_contract: str,
             analysis_chars: int, robustness_temperature: float | Sequence[float] | None) -> _Configs:
    base = config or GenerationConfig(temperature=0.0, max_tokens=600, seed=0)
    fair_mode = "evidence" if fairness_contract == "evidence" else qa_mode
    if robustness_temperature is None:
        rob_ts = [base.temperature]
    elif isinstance(robustness_temperature, (int, float)):
        rob_ts = [float(robustness_temperature)]
    else:
        rob_ts = [float(t) for t in robustness_temperature]
    return _Configs(base=base, qa_mode=qa_mode, qa=_qa.qa_config(qa_mode, base, evidence_chars=evidence_chars),
                    fair_mode=fair_mode, fair_qa=_qa.qa_config(fair_mode, base, evidence_chars=evidence_chars),
                    coach=_coaching.coaching_config(base, constrained=(qa_mode != "free"),
                                                    analysis_chars=analysis_chars),
                    rob_ts=rob_ts)


def _usable_rows(variants: pd.DataFrame, items: Sequence[str] | None
                 ) -> tuple[pd.DataFrame, list[Any], pd.DataFrame]:
    """The variant rows of ``items`` that can be judged, the item order, and the skipped rows with a reason."""
    v = variants
    if items is not None:
        v = v[v["item_id"].isin(list(items))]
    unknown = set(items or []) - set(v["item_id"])
    if unknown:
        raise InputError("item not in the variants frame", source="variants frame",
                         record=sorted(unknown)[0], field="item_id")
    item_order = list(dict.fromkeys(v["item_id"]))
    usable = np.array([bool(a) if a is not None else True for a in v.get("applicable", pd.Series(True, index=v.index))]) \
        & np.array([_truthy(x) for x in v.get("valid", pd.Series(None, index=v.index))])
    skipped = v.loc[~usable, [c for c in VARIANT_COLUMNS if c in v.columns and c not in ("turns", "edits")]].copy()
    if len(skipped):
        skipped["skip_reason"] = [
            (f"not applicable: {r}" if not bool(a) else f"rejected: {j}")
            for a, r, j in zip(skipped.get("applicable", True), skipped.get("reason", None),
                               skipped.get("rejection_reason", None))]
    return v.loc[usable], item_order, skipped


def _originals(v: pd.DataFrame, item_order: Sequence[Any]) -> pd.DataFrame:
    """Each item's original row, indexed by item; an item without one raises."""
    originals = v[v["condition"] == "original"].drop_duplicates("item_id").set_index("item_id")
    for it in item_order:
        if it not in originals.index:
            raise InputError("no original (condition 'original') for this item", source="variants frame",
                             record=it, field="condition")
    return originals


def _compared_rows(v: pd.DataFrame, dimensions: Sequence[str] | None,
                   compared: Mapping[str, Sequence[str]] | None,
                   compared_per_item: Mapping[tuple[str, str], Sequence[str]] | None
                   ) -> tuple[pd.DataFrame, list[str]]:
    """The counterfactual rows to judge (the compared conditions of each dimension, per item when
    sampled) and the judged dimensions."""
    dims_all = [d for d in dict.fromkeys(v["dimension"]) if d != "original"]
    if dimensions is not None:
        missing = set(dimensions) - set(dims_all)
        if missing:
            raise InputError("dimension not in the variants frame", source="variants frame",
                             record=sorted(missing)[0], field="dimension")
        dims_all = [d for d in dims_all if d in set(dimensions)]
    cf = v[v["dimension"].isin(dims_all)]
    if compared:
        keep = np.array([(d not in compared) or (c in set(compared[d]))
                         for d, c in zip(cf["dimension"], cf["condition"])], dtype=bool)
        cf = cf.loc[keep]
    if compared_per_item is not None:
        keep = np.array([c in set(compared_per_item.get((i, d), ()))
                         for i, d, c in zip(cf["item_id"], cf["dimension"], cf["condition"])], dtype=bool)
        cf = cf.loc[keep]
        cf = pd.concat([cf, _originals_as_condition(v, cf, compared_per_item, dims_all)], ignore_index=True)
        cf = cf.sort_values(["item_id"], kind="stable")
    return cf, dims_all


class _Expansion:
    """The rows and distinct requests built so far; :meth:`expand_item` adds one item's part."""

    def __init__(self, cfg: _Configs, qdicts: Mapping[str, dict], judges: Sequence[str],
                 keyer: Callable[[str, Request], Any], *, evidence_chars: int, paraphrases: int, repeats: int,
                 fair_dims: set, coaching_dims: set):
        self.cfg, self.qdicts, self.keyer = cfg, qdicts, keyer
        self.evidence_chars, self.paraphrases, self.repeats = evidence_chars, paraphrases, repeats
        self.fair_dims, self.coaching_dims = fair_dims, coaching_dims
        self.rows: list[dict] = []
        self.requests: dict[str, dict[Any, Request]] = {j: {} for j in judges}
        self._text: dict[Any, str] = {}

    def expand_item(self, judge: str, arm: str, task: str, qid: str | None, item: str, orow: Any,
                    cf_rows: Iterable[Any]) -> None:
        """The rows of one (judge, arm, task, question, item): the original, the wording and repeat
        baselines (baseline arm), and the item's compared counterfactual variants."""
        t0 = self.cfg.base.temperature
        self.add(judge, arm, task, qid, item, "original", "original", orow, 0, t0)
        if arm == "baseline" and task == "qa" and self.paraphrases:
            # wording robustness: the same question in the rubric's other phrasings, on the
            # original; slot 0 is the rubric text (the original's own request)
            for i in range(1, self.paraphrases + 1):
                self.add(judge, arm, task, qid, item, "robustness_wording", f"wording{i}", orow, i, t0,
                         paraphrase=i - 1)
            self.add(judge, arm, task, qid, item, "robustness_wording", "wording0", orow, 0, t0)
        if arm == "baseline":
            for rob_t in self.cfg.rob_ts:
                rdim = "robustness" if rob_t == t0 else f"robustness_t{rob_t:g}"
                for r in range(self.repeats):
                    self.add(judge, arm, task, qid, item, rdim, f"repeat{r}", orow, r, rob_t)
        for vrow in cf_rows:
            if arm == "fairness" and vrow.dimension not in self.fair_dims:
                continue
            if task != "qa" and vrow.dimension not in self.coaching_dims:
                continue
            if vrow.condition == "placebo" and (arm != "baseline" or task != "qa"):
                continue  # placebo arm (issue 33): read on baseline Auto-QA only, so judged there only
            self.add(judge, arm, task, qid, item, vrow.dimension, vrow.condition, vrow, 0, t0)

    def add(self, judge: str, arm: str, task: str, qid: str | None, item: str, dim: str, cond: str,
            vrow: Any, repeat: int, temperature: float, paraphrase: int | None = None) -> None:
        """One row; its request joins the judge's distinct requests unless an identical one is there."""
        req = self.request(arm, task, qid, item, vrow, repeat, temperature, paraphrase)
        key = self.keyer(judge, req)
        mine = self.requests[judge]
        if key not in mine:
            mine[key] = req
        self.rows.append({"judge": judge, "arm": arm, "task": task, "question_id": qid or task, "item_id": item,
                          "dimension": dim, "condition": cond, "variant_id": vrow.variant_id, "repeat": repeat,
                          "temperature": temperature, "request_id": mine[key].request_id, "key": key})

    def request(self, arm: str, task: str, qid: str | None, item: str, vrow: Any, repeat: int,
                temperature: float, paraphrase: int | None) -> Request:
        """The request of one row: its id names task, question, arm, item, variant, repeat or wording, temperature."""
        text = self.transcript_text(vrow)
        fair = arm == "fairness"
        rid = f"{task}/{qid or '-'}/{arm}/{item}/{vrow.variant_id}/r{repeat}/t{temperature:g}"
        if paraphrase is not None:
            rid = f"{task}/{qid}/{arm}/{item}/{vrow.variant_id}/wording{paraphrase}/t{temperature:g}"
        cfg = self.cfg
        if task == "qa":
            mode, qcfg = (cfg.fair_mode, cfg.fair_qa) if fair else (cfg.qa_mode, cfg.qa)
            gen = qcfg if temperature == qcfg.temperature else qcfg.replace(temperature=temperature)
            return _qa.qa_request(rid, text, self.qdicts[qid], mode=mode,
                                  fairness=fair, evidence_chars=self.evidence_chars, config=gen,
                                  repeat=0 if paraphrase is not None else repeat, paraphrase=paraphrase)
        gen = cfg.coach if temperature == cfg.coach.temperature else cfg.coach.replace(temperature=temperature)
        return _coaching.coaching_request(rid, text, task, fairness=fair, config=gen, repeat=repeat)

    def transcript_text(self, row: Any) -> str:
        """The rendered transcript of a variant row, once per variant id."""
        vid = row.variant_id
        if vid not in self._text:
            header = getattr(row, "header", None)
            self._text[vid] = _qa.format_transcript(_turns_list(row.turns, vid), header, record=vid)
        return self._text[vid]




def _originals_as_condition(v: pd.DataFrame, cf: pd.DataFrame,
                            compared_per_item: Mapping[tuple[str, str], Sequence[str]],
                            dims: Sequence[str]) -> pd.DataFrame:
    """Original rows for the (item, dimension) pairs that compare the original but have no such row."""
    have = set(zip(cf["item_id"], cf["dimension"], cf["condition"]))
    orig = v[v["condition"] == "original"].drop_duplicates("item_id").set_index("item_id")
    add = []
    for (item, dim), conds in compared_per_item.items():
        if dim in dims and "original" in conds and (item, dim, "original") not in have and item in orig.index:
            add.append(orig.loc[item].to_dict() | {"item_id": item, "dimension": dim, "condition": "original"})
    return pd.DataFrame(add, columns=cf.columns)


class _RowView:
    """Attribute access to an original's row (variant_id, turns, header)."""

    def __init__(self, item: str, row: pd.Series):
        self.item_id = item
        self.variant_id = row.get("variant_id")
        self.turns = row.get("turns")
        self.header = row.get("header")


#: Local-judge speed fitted on an earlier default run (Qwen2.5-Coder-1.5B Q4_K_M, llama.cpp, 2 threads,
#: idle 2-core Intel Xeon; 186 requests, 1120 s of judge time): latency ~ 0.06 s + prompt tokens evaluated / 64
#: + generated tokens / 7.1 (generation includes sampling and grammar overhead). CALIBRATION scales that to
#: the slowest machine the default was measured on: a 2-core AMD EPYC without AVX-512 ran the 202 requests
#: of the next default in 1689 s where this model, with the Xeon's calibration 1.16, estimated 1185 s
#: (1.16 x 1689 / 1185 = 1.65). The prefix-reuse model counts whole shared prefixes, so it also
#: absorbs llama.cpp's block-aligned re-evaluation.
LOCAL_SPEED = {"prompt_tps": 64.0, "gen_tps": 7.1, "per_request_s": 0.06}
CALIBRATION = 1.65
#: typical generated tokens per task on the local judge (compact QA contract, JSON coaching notes)
OUTPUT_TOKENS = {"qa": 5, "positives": 34, "improvement": 38, "customer": 36}
#: typical generated tokens of the answer / rationale / evidence contract (fairness arm; a guess, not measured:
#: answer, confidence, one sentence and one or two quotes)
EVIDENCE_OUTPUT_TOKENS = 70


def estimate_cost(plan: EvaluationPlan, *, prompt_tps: float = LOCAL_SPEED["prompt_tps"],
                  gen_tps: float = LOCAL_SPEED["gen_tps"], per_request_s: float = LOCAL_SPEED["per_request_s"],
                  chars_per_token: float = 3.6, expected_output_tokens: Mapping[str, int] | None = None,
                  reuse_prefix: bool = True, calibration: float = CALIBRATION) -> pd.DataFrame:
    """Dry-run estimate of tokens and seconds per judge on a local-style backend.

    Requests are put in the runner's order (by message contents) and, with
    ``reuse_prefix``, only the part of each prompt after the prefix it shares
    with the previous one is counted. Characters are converted to tokens at
    ``chars_per_token``; output tokens per task default to :data:`OUTPUT_TOKENS`;
    the total is multiplied by ``calibration`` (see :data:`CALIBRATION`).
    A planning aid, not a measurement.
    """
    exp = dict(OUTPUT_TOKENS) | dict(expected_output_tokens or {})
    task_of = dict(zip(plan.rows["request_id"], plan.rows["task"]))
    exp.setdefault("qa_evidence", EVIDENCE_OUTPUT_TOKENS)
    rows = []
    for judge, reqs in plan.requests.items():
        texts = sorted(("\x00".join(m["content"] for m in r.messages), _cost_task(r, task_of)) for r in reqs)
        prev = ""
        total_chars = new_chars = 0
        out_tokens = 0
        for t, task in texts:
            total_chars += len(t)
            common = 0
            if reuse_prefix:
                n = min(len(t), len(prev))
                while common < n and t[common] == prev[common]:
                    common += 1
            new_chars += len(t) - common
            out_tokens += exp.get(task, 12)
            prev = t
        pt = new_chars / chars_per_token
        rows.append({"judge": judge, "n_requests": len(reqs), "prompt_tokens": int(total_chars / chars_per_token),
                     "prompt_tokens_after_reuse": int(pt), "output_tokens": out_tokens,
                     "est_seconds": calibration * (len(reqs) * per_request_s + pt / prompt_tps
                                                   + out_tokens / gen_tps)})
    return pd.DataFrame(rows)


def _cost_task(req: Request, task_of: Mapping[str, str]) -> str:
    task = task_of.get(req.request_id, "qa")
    if task == "qa" and asks_for_evidence(prompt_parts(req.messages)[1]):
        return "qa_evidence"
    return task


def iter_requests(params: Any, *, transcripts: Iterable[Any] | None = None) -> Iterator[Request]:
    """The distinct requests a run of ``params`` sends, transcript by transcript (nothing is called).

    The same requests for every judge of ``params.judges`` (a judge enters only the cache key),
    so this yields each once; key them with ``request.cache_key(judge)``. ``transcripts``
    replaces the selection from ``params.transcripts_path`` (all of them are used, as in ``run``).
    """
    rubric = load_rubric()
    one = dataclasses.replace(params, judges=tuple(params.judges[:1]) or ("scripted:cc-qa",))
    coached = dataclasses.replace(one, coaching_items=1)
    plain = dataclasses.replace(one, coaching_items=0)
    items = iter_items(params) if transcripts is None else iter(transcripts)
    for index, t in enumerate(items):
        # coaching notes go to the first `coaching_items` audited items, as in the whole-run plan
        p = coached if index < params.coaching_items else plain
        _, plan = plan_for(p, [t], rubric=rubric, progress=False, request_key=_merge_key)
        yield from plan.requests[one.judges[0]]


def _merge_key(judge: str, request: Request) -> tuple:
    """Equal exactly when the cache keys of the two requests for ``judge`` are equal (the same
    inputs: settings as the backend sees them, every message field, the repeat), without the
    JSON encoding and SHA-256 of a cache key, which ``plan_batch`` computes once per request."""
    return (_key_settings_json(_backend(judge), request.config),
            tuple((m["role"], m["content"]) if len(m) == 2 and "content" in m else tuple(sorted(m.items()))
                  for m in request.messages), request.repeat)


@functools.lru_cache(maxsize=64)
def _backend(judge: str) -> str:
    from cfbench.judges.registry import parse_spec

    return parse_spec(judge)[0]


_KEY_SETTINGS: dict[tuple[int, str], tuple[GenerationConfig, str]] = {}


def _key_settings_json(backend: str, config: GenerationConfig) -> str:
    """The settings part of the cache key (:func:`cfbench.judges.base.key_settings`), as JSON,
    remembered per config object (a config may hold a JSON schema, so it is not hashable)."""
    hit = _KEY_SETTINGS.get((id(config), backend))
    if hit is not None and hit[0] is config:
        return hit[1]
    if len(_KEY_SETTINGS) > 1024:
        _KEY_SETTINGS.clear()
    text = json.dumps(key_settings(backend, config), sort_keys=True)
    _KEY_SETTINGS[(id(config), backend)] = (config, text)  # the reference keeps the id from being reused
    return text


def count_requests(params: Any, *, transcripts: Iterable[Any] | None = None) -> dict[str, Any]:
    """Stream :func:`iter_requests` and count: distinct requests per judge, per task and arm, prompt
    characters and the output-token allowance (the sum of ``max_tokens``)."""
    by: Counter = Counter()
    chars = 0
    max_out = 0
    n = 0
    for r in iter_requests(params, transcripts=transcripts):
        parts = r.request_id.split("/")  # task/question/arm/item/variant/...
        by[(parts[0], parts[2] if len(parts) > 2 else "")] += 1
        chars += sum(len(m["content"]) for m in r.messages)
        max_out += r.config.max_tokens
        n += 1
    return {"n_requests_per_judge": n, "n_judges": len(params.judges), "n_requests": n * len(params.judges),
            "prompt_chars_per_judge": chars, "max_output_tokens_per_judge": max_out,
            "by_task_arm": {f"{t}/{a}": c for (t, a), c in sorted(by.items())}}
