"""Why a judgment is missing, in a few words a table can count.

Every request that yields no usable answer has one kind:

* ``not sent (plan only)`` - a plan-only run recorded it and never called the model;
* ``timeout`` - no complete reply within the attempt's time limit (measured from the moment the
  call was sent);
* ``http error`` - the server answered with an HTTP error status, or the connection failed;
* ``refusal`` - the model declined: an empty message cut by a content filter, or a reply that
  reads as a refusal instead of an answer;
* ``unparseable`` - a reply arrived but could not be read as an answer in the output contract;
* ``bad reply`` - a reply the runner would not trust (malformed body, echoed credential, far
  beyond ``max_tokens``) or could not store.

:func:`failure_kind` classifies one row; :func:`failure_counts` counts a judgments frame by judge
and kind. The runner's ``stats["failures_by_kind"]`` uses them; every study table that counts
unread replies has one count column per kind (:data:`KIND_COLUMNS`, ``n_not_sent`` ... ``n_bad_reply``,
made by :func:`kind_counts`), so a timeout is never counted as a parse failure.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["FAILURE_KINDS", "NOT_SENT", "KIND_COLUMNS", "count_column", "failure_kind", "failure_counts",
           "kind_column", "kind_counts", "describe_kinds"]

NOT_SENT = "not sent (plan only)"
FAILURE_KINDS = (NOT_SENT, "timeout", "http error", "refusal", "unparseable", "bad reply")


def count_column(kind: str) -> str:
    """The name of ``kind``'s count column in a study table: ``n_`` and the kind's words before any
    parenthesis, joined by ``_``.

    >>> [count_column(k) for k in FAILURE_KINDS]
    ['n_not_sent', 'n_timeout', 'n_http_error', 'n_refusal', 'n_unparseable', 'n_bad_reply']
    """
    if kind not in FAILURE_KINDS:
        raise ValueError(f"unknown failure kind {kind!r} (known: {', '.join(FAILURE_KINDS)})")
    return "n_" + "_".join(re.findall(r"[a-z]+", kind.split("(", 1)[0].lower()))


#: one count column per kind, in the order of :data:`FAILURE_KINDS` (the same names in every study)
KIND_COLUMNS = tuple(count_column(k) for k in FAILURE_KINDS)

_HTTP = re.compile(r"(?:^|: )(?:[1-5]\d\d)\b(?::| )|Client\w*Error|ServerDisconnected|Connection\w*Error|"
                   r"connect|redirected to")
_REFUSAL_TEXT = re.compile(r"^\W*(?:i(?:'m| am) sorry|sorry,|i can(?:no|')t|i cannot|i'm unable|i am unable|"
                           r"i won't|as an ai\b)", re.IGNORECASE)


def failure_kind(error: Any, *, parse_ok: Any = None, text: Any = None) -> str | None:
    """The kind (one of :data:`FAILURE_KINDS`) of a row with this ``error`` (the runner's reason, or
    None for a reply) and ``parse_ok``; None for a reply that was read.

    >>> failure_kind("RetryableError: timeout: no reply within timeout_s=600 s (gave up after 3 attempt(s))")
    'timeout'
    >>> failure_kind(None, parse_ok=False, text="The call was handled well.")
    'unparseable'
    """
    if isinstance(error, str) and error:
        if error.startswith(NOT_SENT) or error.startswith("not run: plan mode"):
            return NOT_SENT
        body = error.removeprefix("recorded failure: ")
        if "timeout" in body.split("(", 1)[0].lower() or "TimeoutError" in body:
            return "timeout"
        if "finish_reason=content_filter" in body or "refus" in body.lower():
            return "refusal"
        if "malformed response" in body or "echoed a credential" in body or "far beyond max_tokens" in body \
                or "cache write failed" in body:
            return "bad reply"
        if _HTTP.search(body):
            return "http error"
        return "bad reply"
    if parse_ok is None or bool(parse_ok):
        return None
    if isinstance(text, str) and _REFUSAL_TEXT.search(text):
        return "refusal"
    return "unparseable"


def kind_column(frame: Any) -> Any:
    """:func:`failure_kind` of every row of a judgments frame (``error`` and, where present,
    ``parse_ok`` and ``text`` columns); None where the row was read."""
    import pandas as pd

    err = frame["error"] if "error" in frame.columns else pd.Series([None] * len(frame), index=frame.index)
    ok = frame["parse_ok"] if "parse_ok" in frame.columns else frame.get("ok", pd.Series(True, index=frame.index))
    text = frame["text"] if "text" in frame.columns else pd.Series([None] * len(frame), index=frame.index)
    return pd.Series([failure_kind(e if isinstance(e, str) else None, parse_ok=p, text=t)
                      for e, p, t in zip(err, ok, text)], index=frame.index, dtype=object)


def failure_counts(frame: Any, by: str = "judge") -> dict[str, dict[str, int]]:
    """``{judge: {kind: n}}`` over a judgments frame, kinds with a count only."""
    kinds = kind_column(frame)
    out: dict[str, dict[str, int]] = {}
    for key, kind in zip(frame[by], kinds):
        if kind is not None:
            d = out.setdefault(str(key), {})
            d[kind] = d.get(kind, 0) + 1
    return out


def kind_counts(frame: Any, by: Any) -> Any:
    """Per group of ``by`` (a column name or list of them): ``n`` rows and one zero-filled count column per
    kind (:data:`KIND_COLUMNS`), from :func:`kind_column` of ``frame``. Groups in sorted order; every
    group of ``frame`` is a row, one with no failure too (all zeros).

    >>> import pandas as pd
    >>> f = pd.DataFrame({"judge": ["a", "a", "b"], "error": [None, "timeout: no reply", None],
    ...                   "parse_ok": [False, False, True], "text": ["hm", None, "Yes"]})
    >>> kind_counts(f, "judge")[["judge", "n", "n_timeout", "n_unparseable"]].to_dict("records")
    [{'judge': 'a', 'n': 2, 'n_timeout': 1, 'n_unparseable': 1}, {'judge': 'b', 'n': 1, 'n_timeout': 0, 'n_unparseable': 0}]
    """
    import pandas as pd

    by = [by] if isinstance(by, str) else list(by)
    kinds = kind_column(frame)
    wide = pd.DataFrame({col: (kinds == kind).astype(int) for kind, col in zip(FAILURE_KINDS, KIND_COLUMNS)},
                        index=frame.index)
    wide = pd.concat([frame[by], wide.assign(n=1)], axis=1)
    if not len(wide):
        return pd.DataFrame(columns=by + ["n", *KIND_COLUMNS])
    out = wide.groupby(by, sort=True)[["n", *KIND_COLUMNS]].sum().reset_index()
    return out.astype({c: int for c in ["n", *KIND_COLUMNS]})


def describe_kinds(counts: Any) -> str:
    """``counts`` (``{kind: n}``, or a row/mapping with the :data:`KIND_COLUMNS`) in words, kinds with a
    count only, in the order of :data:`FAILURE_KINDS`: ``"3 timeout, 1 unparseable"``; "" when none."""
    get = counts.get if hasattr(counts, "get") else (lambda k, d=0: d)
    parts = []
    for kind, col in zip(FAILURE_KINDS, KIND_COLUMNS):
        n = get(kind, None)
        n = get(col, 0) if n is None else n
        if n and n == n:  # NaN-safe
            parts.append(f"{int(n)} {kind}")
    return ", ".join(parts)
