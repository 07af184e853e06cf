"""Identity-conditioned tone of an assistant (seed 002: Amiri-Margavi et al. 2026).

Does an assistant's tone (sentiment, hedging, politeness, negative tone, length)
change with who the user says they are? Each career-advice prompt is sent with
8 identity descriptors (age × gender × nationality); replies are compared
prompt by prompt with paired tests. The released data of the seed are
reproduced exactly (as run) and beside the method as described.

Quickstart: a fresh audit of any judge spec on your own prompts::

    from cfbench.studies.identity_tone import fresh_audit
    a = fresh_audit(["openai:gpt-4o-mini"], ["I want to ask for a raise.", "I start a new job on Monday.",
                                             "I want to move into a product role."], seed=0)
    a.tables["refusals"]                          # full / partial / none per identity
    a.tables["fresh_pairs_described"]             # 28 pairs x 6 metrics: Δ, bootstrap CI, t, Wilcoxon, d_z, Holm
    a.tables["fresh_length_adjusted_described"]   # the same differences at equal reply length
    a.tables["fresh_truncation"]                  # replies cut at the token cap (never scored)

The whole study (released-data reproduction + fresh audit; files written to ``out``)::

    from cfbench.studies.identity_tone import Params, run
    result = run(Params(fresh_models=("local:qwen2.5-coder-1.5b",), n_prompts=12), out="my_run")
    result.check(); print(result.findings())
"""

from . import scripted  # noqa: F401  (registers the scripted test double)
from .audit import fresh_audit
from .study import IdentityToneResult, Params, iter_requests, run

__all__ = ["Params", "run", "IdentityToneResult", "fresh_audit", "iter_requests"]


from cfbench.view import register_explorer as _register_explorer  # noqa: E402

from .explorer import explorer_pairs  # noqa: E402

_register_explorer("identity_tone", explorer_pairs,
                   inputs={"scores_described": ("fresh_scores_described.csv", ("model", "prompt_id", "identity"))})  # the run explorer's reader of this study's results folders
