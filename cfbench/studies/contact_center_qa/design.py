"""Design of the contact-center study: which items, which requests, what it costs.

Running the plan is :mod:`.judging`; the analysis tables are :mod:`.tables`
(``run_plan`` and ``study_tables`` are re-exported here for older callers).

Evaluation planning, variants x tasks x judges x repeats: :func:`plan_evaluation` expands a ``variants`` frame (``cfbench.core.schema.VARIANT_COLUMNS``)
into one *row* per (judge, arm, task, question, variant, repeat) and one
:class:`~cfbench.judges.Request` per distinct prompt: rows whose prompts are
identical (the original transcript appears under every dimension whose
compared set contains it; repeat 0 of the robustness baseline is the
original itself) share a request and are judged once. Nothing is called
while planning; :meth:`EvaluationPlan.summary` and :func:`estimate_cost` are
the dry run. :func:`run_plan` runs the requests through
:func:`cfbench.judges.run_requests` (cached, merged, ordered for KV reuse)
and parses every reply.

Pseudo-dimensions used in the rows frame:

``original``    condition ``original``: one row per item (accuracy, direction)
``robustness``  condition ``repeat<r>``: k repeats of each original at the
                robustness temperature (CFR/MASD among repeats, kappa)

Variant rows that are not applicable or failed validation are not judged;
they are listed in ``plan.skipped`` with their reason, never dropped silently.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.judges.base import GenerationConfig, Request
from cfbench.studies.contact_center_qa import coaching as _coaching
from cfbench.studies.contact_center_qa import qa as _qa
from cfbench.studies.contact_center_qa.prompts import asks_for_evidence, prompt_parts
from cfbench.studies.contact_center_qa.judging import run_plan  # noqa: F401  (one import for callers)
from cfbench.studies.contact_center_qa.tables import study_tables  # noqa: F401

__all__ = ["TASKS", "EvaluationPlan", "plan_evaluation", "estimate_cost", "labels_frame", "ROW_COLUMNS",
           "select_items", "run_plan", "study_tables"]

TASKS = ("qa", "positives", "improvement", "customer")
ROW_COLUMNS = ["row_id", "judge", "arm", "task", "question_id", "item_id", "dimension", "condition",
               "variant_id", "repeat", "temperature", "request_id", "key"]
_ARMS = ("baseline", "fairness")


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
        :func:`cfbench.studies.contact_center_qa.planning.sample_conditions`);
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
    from cfbench.core.schema import VARIANT_COLUMNS

    for c in ("item_id", "dimension", "condition", "variant_id", "turns"):
        if c not in variants.columns:
            raise InputError("missing column", source="variants frame", field=c)
    if qa_mode not in _qa.QA_MODES:
        raise ValueError(f"qa_mode must be one of {_qa.QA_MODES}, got {qa_mode!r}")
    if fairness_contract not in ("evidence", "task"):
        raise InputError(f"must be 'evidence' or 'task', got {fairness_contract!r}", field="fairness_contract")
    rubric = rubric if rubric is not None else _qa.load_rubric()
    qrows = rubric.set_index("question_id")
    for q in questions:
        if q not in qrows.index:
            raise InputError(f"unknown question id (valid: {', '.join(qrows.index)})", source="rubric", record=q,
                             field="question_id")
        if paraphrases > len(qrows.loc[q, "paraphrases"]):
            raise InputError(f"question has {len(qrows.loc[q, 'paraphrases'])} paraphrases, {paraphrases} asked",
                             source="rubric", record=q, field="paraphrases")
    base_cfg = config or GenerationConfig(temperature=0.0, max_tokens=600, seed=0)
    qa_cfg = _qa.qa_config(qa_mode, base_cfg, evidence_chars=evidence_chars)
    fair_mode = "evidence" if fairness_contract == "evidence" else qa_mode
    fair_qa_cfg = _qa.qa_config(fair_mode, base_cfg, evidence_chars=evidence_chars)
    coach_cfg = _coaching.coaching_config(base_cfg, constrained=(qa_mode != "free"),
                                          analysis_chars=analysis_chars)
    if robustness_temperature is None:
        rob_ts = [base_cfg.temperature]
    elif isinstance(robustness_temperature, (int, float)):
        rob_ts = [float(robustness_temperature)]
    else:
        rob_ts = [float(t) for t in robustness_temperature]

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
    v = v.loc[usable]

    originals = v[v["condition"] == "original"].drop_duplicates("item_id").set_index("item_id")
    for it in item_order:
        if it not in originals.index:
            raise InputError("no original (condition 'original') for this item", source="variants frame",
                             record=it, field="condition")

    text_cache: dict[Any, str] = {}

    def transcript_text(row: Any) -> str:
        vid = row.variant_id
        if vid not in text_cache:
            header = getattr(row, "header", None)
            text_cache[vid] = _qa.format_transcript(_turns_list(row.turns, vid), header, record=vid)
        return text_cache[vid]

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

    rows: list[dict] = []
    requests: dict[str, dict[Any, Request]] = {j: {} for j in judges}
    keyer = request_key or _key
    qdicts = {q: qrows.loc[q].to_dict() | {"question_id": q} for q in questions}  # one lookup per question

    def add(judge: str, arm: str, task: str, qid: str | None, item: str, dim: str, cond: str,
            vrow: Any, repeat: int, temperature: float, paraphrase: int | None = None) -> None:
        text = transcript_text(vrow)
        fair = arm == "fairness"
        rid = f"{task}/{qid or '-'}/{arm}/{item}/{vrow.variant_id}/r{repeat}/t{temperature:g}"
        if paraphrase is not None:
            rid = f"{task}/{qid}/{arm}/{item}/{vrow.variant_id}/wording{paraphrase}/t{temperature:g}"
        if task == "qa":
            mode, qcfg = (fair_mode, fair_qa_cfg) if fair else (qa_mode, qa_cfg)
            cfg = qcfg if temperature == qcfg.temperature else qcfg.replace(temperature=temperature)
            req = _qa.qa_request(rid, text, qdicts[qid], mode=mode,
                                 fairness=fair, evidence_chars=evidence_chars, config=cfg,
                                 repeat=0 if paraphrase is not None else repeat, paraphrase=paraphrase)
        else:
            cfg = coach_cfg if temperature == coach_cfg.temperature else coach_cfg.replace(temperature=temperature)
            req = _coaching.coaching_request(rid, text, task, fairness=fair, config=cfg, repeat=repeat)
        key = keyer(judge, req)
        if key not in requests[judge]:
            requests[judge][key] = req
        rows.append({"judge": judge, "arm": arm, "task": task, "question_id": qid or task, "item_id": item,
                     "dimension": dim, "condition": cond, "variant_id": vrow.variant_id, "repeat": repeat,
                     "temperature": temperature, "request_id": requests[judge][key].request_id, "key": key})

    arms = ["baseline"] + (["fairness"] if fairness else [])
    fair_dims = set(fairness_dimensions) if fairness_dimensions is not None else set(dims_all)
    c_items = set(coaching_items) if coaching_items is not None else set(item_order)
    c_dims = set(coaching_dimensions) if coaching_dimensions is not None else set(dims_all)
    task_list: list[tuple[str, str | None]] = [("qa", q) for q in questions]
    if coaching:
        task_list += [(kind, None) for kind in _coaching.COACHING_KINDS]

    # each item's original and compared variant rows, looked up once (not per judge, arm and task)
    orig_views = {item: _RowView(item, pd.Series(originals.loc[item]).rename(None)) for item in item_order}
    cf_rows: dict[Any, list] = {}
    for vrow in cf.itertuples(index=False):
        cf_rows.setdefault(vrow.item_id, []).append(vrow)
    for judge in judges:
        for arm in arms:
            for task, qid in task_list:
                for item in item_order:
                    if task != "qa" and item not in c_items:
                        continue
                    orow_t = orig_views[item]
                    add(judge, arm, task, qid, item, "original", "original", orow_t, 0, base_cfg.temperature)
                    if arm == "baseline" and task == "qa" and paraphrases:
                        # wording robustness: the same question in the rubric's other phrasings, on the
                        # original; slot 0 is the rubric text (the original's own request)
                        for i in range(1, paraphrases + 1):
                            add(judge, arm, task, qid, item, "robustness_wording", f"wording{i}", orow_t, i,
                                base_cfg.temperature, paraphrase=i - 1)
                        add(judge, arm, task, qid, item, "robustness_wording", "wording0", orow_t, 0,
                            base_cfg.temperature)
                    if arm == "baseline":
                        for rob_t in rob_ts:
                            rdim = ("robustness" if rob_t == base_cfg.temperature
                                    else f"robustness_t{rob_t:g}")
                            for r in range(repeats):
                                add(judge, arm, task, qid, item, rdim, f"repeat{r}", orow_t, r, rob_t)
                    for vrow in cf_rows.get(item, ()):
                        if arm == "fairness" and vrow.dimension not in fair_dims:
                            continue
                        if task != "qa" and vrow.dimension not in c_dims:
                            continue
                        add(judge, arm, task, qid, item, vrow.dimension, vrow.condition, vrow, 0,
                            base_cfg.temperature)
    frame = pd.DataFrame(rows)
    frame.insert(0, "row_id", np.arange(len(frame)))
    settings = dict(judges=list(judges), questions=list(questions), qa_mode=qa_mode,
                    evidence_chars=evidence_chars, repeats=repeats, robustness_temperatures=rob_ts,
                    temperature=base_cfg.temperature, fairness=fairness,
                    fairness_dimensions=sorted(fair_dims) if fairness else [],
                    fairness_contract=fair_mode if fairness else None, coaching=coaching,
                    coaching_items=sorted(c_items) if coaching else [],
                    coaching_dimensions=sorted(c_dims) if coaching else [], n_items=len(item_order),
                    dimensions=dims_all, rubric_version=rubric.attrs.get("version"),
                    sampled_conditions=compared_per_item is not None, paraphrases=paraphrases)
    return EvaluationPlan(rows=frame[ROW_COLUMNS], requests={j: list(d.values()) for j, d in requests.items()},
                          skipped=skipped.reset_index(drop=True), settings=settings)


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


def iter_selected(transcripts: Iterable[Any], n: int, *, require_agent_name: bool = True,
                  balance_label: str | None = None) -> Iterator[Any]:
    """The transcripts :func:`select_items` picks, in its order, read lazily from ``transcripts``.

    Alternating Yes and No items on ``balance_label`` only buffers the surplus of one class
    (never more than ``n``). Raises :class:`InputError` when fewer than ``n`` qualify (after
    the items before the shortfall were yielded).
    """
    pool = (t for t in transcripts if not require_agent_name or getattr(t, "agent_name", None))
    emitted = 0
    if not balance_label:
        for t in pool:
            if emitted == n:
                return
            yield t
            emitted += 1
    else:
        # yes[0], no[0], yes[1], no[1], ... then the rest of the longer class, then unlabelled items
        # (an item without the label is neither class: it never stands in for a No)
        yes: deque = deque()
        no: deque = deque()
        unlabelled: deque = deque()
        seen = {True: 0, False: 0}
        for t in pool:
            if emitted >= n:
                return
            label = dict(getattr(t, "labels", {}) or {}).get(balance_label)
            if label not in ("Yes", "No"):
                if len(unlabelled) < n:
                    unlabelled.append(t)
                continue
            is_yes = label == "Yes"
            seen[is_yes] += 1
            if seen[is_yes] <= n:  # the (n+1)-th of a class and later ones are never selected
                (yes if is_yes else no).append(t)
            while yes and no and emitted < n:
                yield yes.popleft()
                emitted += 1
                if emitted < n:
                    yield no.popleft()
                    emitted += 1
        for rest in (yes, no, unlabelled):
            while rest and emitted < n:
                yield rest.popleft()
                emitted += 1
    if emitted < n:
        raise InputError(f"only {emitted} transcripts qualify, {n} requested", source="transcripts",
                         field="agent_name" if require_agent_name else "id")


def select_items(transcripts: Sequence[Any], n: int, *, require_agent_name: bool = True,
                 balance_label: str | None = None) -> list[Any]:
    """The first ``n`` transcripts (in file order) that suit the study.

    ``require_agent_name`` keeps only transcripts where the agent is named,
    so the name-based dimensions (gender, ethnicity, religion) apply to every
    item. ``balance_label`` (a label id such as ``issue_resolution``)
    alternates Yes and No items as far as the set allows, so accuracy is not
    computed on one class only. Raises :class:`InputError` when fewer than
    ``n`` transcripts qualify.
    """
    return list(iter_selected(transcripts, n, require_agent_name=require_agent_name, balance_label=balance_label))


def labels_frame(transcripts: Sequence[Any]) -> pd.DataFrame:
    """Ground-truth labels as ``item_id, question_id, label`` (from ``Transcript.labels``)."""
    rows = []
    for t in transcripts:
        tid = getattr(t, "id", None) if not isinstance(t, Mapping) else t.get("id")
        labels = getattr(t, "labels", None) if not isinstance(t, Mapping) else t.get("labels")
        for q, lab in dict(labels or {}).items():
            if lab not in ("Yes", "No"):
                raise InputError(f"label must be 'Yes' or 'No', got {lab!r}", record=tid, field=f"labels.{q}")
            rows.append({"item_id": tid, "question_id": q, "label": lab})
    return pd.DataFrame(rows, columns=["item_id", "question_id", "label"])
