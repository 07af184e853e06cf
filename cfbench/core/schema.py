"""Column names of cfbench's tidy frames (one place, used everywhere).

``variants``   one row per counterfactual variant of an item
``judgments``  one row per judge request and repeat
``estimates``  one row per metric estimate
"""

from __future__ import annotations

__all__ = ["VARIANT_COLUMNS", "JUDGMENT_COLUMNS", "ESTIMATE_COLUMNS"]

#: item_id: the original item; variant_id: unique per variant (the original has
#: condition "original"); edits: list of {"turn": i, "before": str, "after": str};
#: applicable=False rows carry ``reason`` and no text, never silently dropped.
VARIANT_COLUMNS = [
    "item_id", "dimension", "condition", "variant_id", "operation",
    "turns", "header", "edits", "seed", "applicable", "reason",
    "valid", "rejection_reason",
]

JUDGMENT_COLUMNS = [
    "request_id", "judge", "repeat", "key", "text", "top_logprobs",
    "prompt_tokens", "completion_tokens", "prompt_tokens_evaluated",
    "latency_s", "cache_hit", "error", "ok", "finish_reason",
]

ESTIMATE_COLUMNS = [
    "metric", "judge", "dimension", "group", "estimate", "ci_low", "ci_high", "n", "method",
]
