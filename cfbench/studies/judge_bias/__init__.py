"""Judge-bias battery: does a judge move when a construct-irrelevant cue changes?

Position, verbosity padding, authority, source attribution and bandwagon cues
(:mod:`cfbench.perturb.judge_cues`) applied to candidate agent replies from
real STAR dialogues (or the shipped synthetic calls), in a pairwise (A/B) and a
pointwise (1-10) task, with paired item-level intervals, Holm/BH across cues,
a reworded-prompt noise reference and a gate on the net flip rate.

Quickstart::

    from cfbench.studies.judge_bias import Params, run
    result = run(Params(judge="local:qwen2.5-coder-1.5b", n_draft=4, n_control=4), out="results/my_bias")
    result.tables["cues"]        # shift toward the cued reply, net flips, adjusted p, gate
    print(result.findings())
    result.check()
"""

from . import tasks  # noqa: F401  (registers the scripted test doubles)
from .items import Item, load_items

__all__ = ["Params", "run", "JudgeBiasResult", "iter_requests", "plan", "Item", "load_items"]


def __getattr__(name: str):
    if name in ("Params", "run", "JudgeBiasResult", "iter_requests", "plan", "n_requests"):
        from . import study

        return getattr(study, name)
    raise AttributeError(name)
