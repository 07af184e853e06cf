"""Contact-center Auto-QA fairness (seed 000): counterfactual flip rates of LLM quality judges.

Quickstart - your transcripts, any judge spec, CFR and MASD with item-bootstrap intervals::

    from cfbench.studies.contact_center_qa import audit
    r = audit("my_calls.jsonl",                      # JSONL/CSV transcripts (cfbench.io.transcripts)
              judges=["openai:gpt-4o-mini"],         # or "local:qwen2.5-coder-1.5b", "hf:...", ...
              questions=["issue_resolution"],        # rubric ids (load_rubric())
              dimensions=["gender", "priming"],      # counterfactual dimensions (cfbench.perturb.DIMENSIONS)
              conditions_per_dimension=2)            # 2 sampled conditions per item: one pair each
    r.tables["cfr"]                   # CFR per judge x dimension: estimate, n, ci_low/ci_high
    r.tables["cfr_minus_robustness"]  # the same net of the judge's own repeat noise
    r.tables["masd"]                  # MASD of confidence / P(Yes)
    print(r.findings()); r.check()    # what is distinguishable from noise; invariants

The whole study (the notebook's steps): ``run(Params(...), out="results/dir")``.

Modules: :mod:`.prompts` (rubric, prompt files, shared reply helpers), :mod:`.qa` and
:mod:`.coaching` (task prompts and strict reply parsers), :mod:`.params` (``Params``),
:mod:`.scripted` (test doubles ``scripted:cc-qa`` / ``scripted:cc-coach``). The study's path,
one module per step, each importing only the steps before it: :mod:`.items` (the selected
transcripts), :mod:`.variants` (counterfactual variants, compared conditions), :mod:`.requests`
(the plan of rows and distinct requests, its cost; ``iter_requests``: the run's requests
transcript by transcript, for ``cfbench batch plan --study contact_center_qa -f CONFIG``),
:mod:`.calculator` (designs), :mod:`.judging` (run a plan; ``iter_judged`` transcript by transcript),
:mod:`.tables` (item statistics as mergeable state and every analysis table from them), :mod:`.streamed`
(the Parquet row writer), :mod:`.figures`, :mod:`.findings`, :mod:`.explorer` (the run explorer's
pairs, both arms), :mod:`.study` (``run``, ``audit``,
``ContactCenterResult``), :mod:`.batch_waves` (``run_batch``: the sequential audit with each wave sent as
a Batch-API job, resumable).
"""

from cfbench.view import register_explorer as _register_explorer

from . import scripted  # noqa: F401  (registers the scripted test doubles)
from .prompts import load_rubric
from .requests import iter_requests
from .explorer import explorer_pairs
from .study import ContactCenterResult, Params, audit, run
from .batch_waves import run_batch

__all__ = ["Params", "run", "audit", "ContactCenterResult", "load_rubric", "iter_requests", "explorer_pairs",
           "run_batch"]

_register_explorer("contact_center_qa", explorer_pairs,
                   inputs={"variants": ("variants.parquet", ("variant_id", "item_id", "dimension", "condition", "turns"))})  # the run explorer's reader of this study's folders
