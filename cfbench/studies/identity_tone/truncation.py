"""Which replies stopped at the token cap (cut) rather than on their own (complete).

A reply is cut when the backend says so (``finish_reason == "length"``, as the
OpenAI-style APIs, llama-cpp-python and cfbench's batch engine report it). When
a backend reports no finish reason (``None``; e.g. a reply cached before the
reason was stored), a reply is taken as cut when its completion tokens reached
the cap. When neither is known the answer is unknown (``<NA>``), counted apart
and never taken as complete.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["reply_truncated", "TRUNCATION_RULE"]

#: One line for tables and findings.
TRUNCATION_RULE = ("cut = the backend's finish reason is 'length'; without a finish reason, "
                   "completion tokens >= the cap")


def reply_truncated(finish_reason: Any, completion_tokens: Any, *, cap: int) -> pd.Series:
    """Nullable boolean per reply: True = stopped at the cap, False = finished, <NA> = unknown.

    >>> reply_truncated(["stop", "length", None, None], [112, 112, 112, 80], cap=112).tolist()
    [False, True, True, False]
    """
    reason = pd.Series(finish_reason, dtype=object).reset_index(drop=True)
    tokens = pd.to_numeric(pd.Series(completion_tokens).reset_index(drop=True), errors="coerce")
    if len(reason) != len(tokens):
        raise ValueError(f"finish_reason has {len(reason)} entries, completion_tokens {len(tokens)}")
    known = reason.map(lambda r: isinstance(r, str) and r != "")
    out = pd.Series(pd.NA, index=reason.index, dtype="boolean")
    out[known] = reason[known].eq("length")
    by_tokens = ~known & tokens.notna()
    out[by_tokens] = (tokens[by_tokens] >= cap).to_numpy(dtype=bool)
    return out
