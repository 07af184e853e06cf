"""Judge-bias battery: does a judge move when a construct-irrelevant cue changes?

Position, verbosity padding, authority, source attribution and bandwagon cues
(:mod:`cfbench.perturb.judge_cues`) applied to candidate agent replies from
real STAR dialogues (or the shipped synthetic calls), in a pairwise (A/B) and a
pointwise (1-10) task, with paired item-level intervals, Holm/BH across cues,
a reworded-prompt noise reference and a gate on the net flip rate.

Quickstart on your own pairs::

    from cfbench.studies import judge_bias
    pairs = [{"id": "t1", "context": [{"speaker": "customer", "text": "My parcel never arrived."}],
              "reply": "Sorry about that - can you give me the order number?",
              "alternative": "Have a nice day!", "kind": "control"}, ...]
    results = judge_bias.audit(pairs, judges=["local:qwen2.5-coder-1.5b"], cues=["position", "authority"])
    print(results["local:qwen2.5-coder-1.5b"].findings())

On STAR (or the shipped synthetic calls)::

    from cfbench.studies.judge_bias import Params, run
    result = run(Params(judges=("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-0.5b"), n_draft=4, n_control=4), out="results/my_bias")
    result.tables["cues"]        # per judge and cue: shift toward the cued reply, net flips, adjusted p, gate
    print(result.findings())
    result.check()
"""

from . import tasks  # noqa: F401  (registers the scripted test doubles)
from .items import Item, items_from_pairs, load_items

__all__ = ["Params", "run", "audit", "JudgeBiasResult", "iter_requests", "plan", "Item", "load_items", "items_from_pairs",
           "run_batch"]


def __getattr__(name: str):
    if name in ("Params", "run", "audit", "JudgeBiasResult", "iter_requests", "plan", "n_requests", "estimate_seconds"):
        from . import study

        return getattr(study, name)
    if name == "run_batch":  # the sequential audit through the Batch API (``cfbench batch sequential``)
        from .batch_waves import run_batch

        return run_batch
    raise AttributeError(name)


from cfbench.view import register_explorer as _register_explorer  # noqa: E402

from .explorer import explorer_pairs  # noqa: E402

_register_explorer("judge_bias", explorer_pairs)  # the run explorer's reader of this study's results folders
