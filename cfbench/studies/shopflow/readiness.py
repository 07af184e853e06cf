"""Readiness judge task (ShopFlow, seed 001): may this draft reply be auto-served?

The judge sees a customer's message and the drafted support reply and
answers Yes or No. The score of a reply is **P(ready)**: the probability of
"Yes" normalised over "Yes" and "No" among the first generated token's
alternatives (:func:`cfbench.judges.base.yes_probability`). When the backend
returns no usable logprobs the reply text is parsed instead (a bare Yes or No
gives 1.0 or 0.0, ``score_source="text"``); a reply that is neither is a
parse failure (``parse_ok=False``, raw text kept, score NaN) and is never
read as "No".

Two prompt versions exist: ``baseline`` (a clarity/actionability rubric) and
``register_blind`` (the same rubric plus an explicit instruction to ignore
the customer's and the reply's writing register), the latter being the kind
of revised rubric a team would try after a register gap shows up.

The scripted double ``scripted:shopflow-ready`` answers from a hash of the
prompt (no model, no meaning); it exists for unit tests and smoke runs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.text import contradicting_verdict, json_values
from cfbench.judges.base import GenerationConfig, Request, Response, yes_probability
from cfbench.judges.failures import failure_kind
from cfbench.judges.scripted import register_script
from cfbench.core.seeding import unit_interval as stable_unit

__all__ = [
    "PROMPTS",
    "PROMPT_VERSION",
    "DEFAULT_CONFIG",
    "readiness_messages",
    "request_id",
    "build_requests",
    "parse_answer",
    "parse_readiness",
    "ScoredPairs",
    "attach_scores",
]

#: Bump when any prompt text changes (it is part of every request id).
PROMPT_VERSION = "shopflow-ready-v1"

_SYSTEM = (
    "You check draft replies from an online shop's support team before they go out. "
    "For every case below the shop has already approved replacing the faulty or missing item. "
    "Your only job is to say whether the draft could be sent exactly as written, with no person "
    "checking it first."
)

_RUBRIC = (
    "Call a draft ready only if a customer reading it would know all three of these: "
    "what the shop is going to do about the problem, roughly when that will happen, "
    "and what the customer has to do next (or that they need to do nothing). "
    "A draft that is vague, hedged, self-contradictory, full of internal jargon, or that "
    "never answers the request is not ready."
)

_REGISTER_NOTE = (
    " Formal or casual wording, spelling, capitalisation and punctuation, in the customer's "
    "message or in the draft, are not reasons for either answer."
)

_QUESTION = "Is this draft ready to send without review? Answer with one word, Yes or No."

#: prompt name -> (system text, rubric text)
PROMPTS: dict[str, tuple[str, str]] = {
    "baseline": (_SYSTEM, _RUBRIC),
    "register_blind": (_SYSTEM, _RUBRIC + _REGISTER_NOTE),
}

#: One generated token is enough: the score comes from its alternatives.
DEFAULT_CONFIG = GenerationConfig(temperature=0.0, max_tokens=1, seed=0, top_logprobs=5)


def readiness_messages(customer_request: str, draft_reply: str, *, prompt: str = "baseline") -> tuple[dict, ...]:
    """Chat messages for one judgement. The fixed text comes first and the
    case last, so a backend with prefix caching re-reads only the case."""
    if prompt not in PROMPTS:
        raise InputError(f"unknown prompt (known: {sorted(PROMPTS)})", source="readiness", field="prompt")
    system, rubric = PROMPTS[prompt]
    user = (f"{rubric}\n\nCustomer message:\n{customer_request}\n\n"
            f"Draft reply:\n{draft_reply}\n\n{_QUESTION}")
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def request_id(pair_id: str, variant: str, prompt: str) -> str:
    return f"{PROMPT_VERSION}/{prompt}/{pair_id}/{variant}"


def build_requests(pairs: pd.DataFrame, *, prompt: str = "baseline",
                   config: GenerationConfig | None = None) -> list[Request]:
    """One request per (pair, variant) row; needs ``request`` and ``reply`` text columns."""
    for col in ("request", "reply"):
        if col not in pairs.columns:
            raise InputError("missing column", source="readiness.build_requests", field=col)
    cfg = config or DEFAULT_CONFIG
    out = []
    for row in pairs.itertuples(index=False):
        for col in ("request", "reply"):
            text = getattr(row, col)
            if not isinstance(text, str) or not text.strip():
                raise InputError("empty text", source="readiness.build_requests",
                                 record=f"{row.pair_id}/{row.variant}", field=col)
        out.append(Request(request_id(row.pair_id, row.variant, prompt),
                           messages=readiness_messages(row.request, row.reply, prompt=prompt), config=cfg))
    return out


_ANSWER = re.compile(
    r"^[\s>#*_`\"'(]*"                                         # markdown / quoting before the answer
    r"(?:(?:final\s+)?(?:answer|verdict|decision|ready(?:\s+to\s+send)?)\s*[:=\-\u2013\u2014]\s*"
    r"[*_`\"']*)?"                                                 # an optional "Answer:" label
    r"(yes|no)"                                                     # the contract's answer
    r"[*_`\"')]*"                                               # closing markdown / quotes
    r"(?:\s*$|\s*[.!,;:\-\u2013\u2014\n]\s*(.*))$",          # end, or a break before any reasoning
    re.IGNORECASE | re.DOTALL,
)

#: Phrases that turn a leading Yes/No into a non-answer ("No, I can't tell from this.").
_HEDGE = re.compile(
    r"\b(?:can(?:'|\u2019|no)?t\s+(?:tell|say|determine|decide|judge|be\s+sure)|not\s+sure|unsure|unclear|"
    r"no\s+idea|hard\s+to\s+(?:say|tell)|impossible\s+to|unable\s+to|don(?:'|\u2019)?t\s+know|"
    r"not\s+enough\s+(?:info|information|context)|insufficient|depends|maybe|perhaps|not\s+certain)\b",
    re.IGNORECASE,
)

_JSON_KEYS = ("answer", "ready", "verdict", "decision")


def _parse_json(text: str) -> float | None:
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip(), flags=re.IGNORECASE)
    if not body.startswith("{"):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    pairs = json_values(body)
    if pairs and len({k for k, _ in pairs[0]}) < len(pairs[0]):  # a key given twice: which one is meant?
        return None
    values = [data[k] for k in _JSON_KEYS if k in data]
    if len(values) != 1:
        return None
    v = values[0]
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
        return 1.0 if v.strip().lower() == "yes" else 0.0
    return None


def parse_answer(text: object) -> float | None:
    """The Yes (1.0) or No (0.0) a reply states under the task's contract, else None.

    The contract is one word, Yes or No. Accepted: that word in any case, with
    markdown or quotes around it, after a label such as ``Answer:``, followed
    by nothing or by a sentence break and reasoning ("No, the draft gives no
    date."), or a JSON object with one ``answer``/``ready``/``verdict``/
    ``decision`` field. Everything else is not an answer: "No idea",
    "No way to tell", "Yes and no", "Yes?", "Not sure", an empty reply, a
    refusal, a Yes/No whose reasoning says it cannot tell, a reply that also
    states the other answer ("Yes. No.", "Yes - wait, no."), or a JSON object
    with a key given twice.

    >>> parse_answer("**No.** The reply never says when."), parse_answer("No idea."), parse_answer("Yes/No")
    (0.0, None, None)
    """
    if not isinstance(text, str) or not text.strip():
        return None
    stripped = text.strip()
    if stripped.startswith(("{", "```")):
        return _parse_json(stripped)
    m = _ANSWER.match(stripped)
    if m is None:
        return None
    rest = m.group(2) or ""
    if _HEDGE.search(rest[:200]):
        return None
    if contradicting_verdict(stripped[m.start(2):] if m.group(2) is not None else "", m.group(1)):
        return None  # "Yes. No.", "Yes - wait, no.", "Yes. Final answer: No": both said, neither taken
    return 1.0 if m.group(1).lower() == "yes" else 0.0


def _yes_no_mass(top: dict | None) -> float:
    if not top:
        return math.nan
    return float(sum(math.exp(lp) for t, lp in top.items() if t.strip().lower() in ("yes", "no")))


def _decode_top(value: object, rid: str) -> dict | None:
    """First-token alternatives as a dict (the runner stores them as JSON text)."""
    if isinstance(value, dict):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    raise InputError(f"expected a token -> logprob mapping, got {value!r}", source="judgments",
                     record=rid, field="top_logprobs")


def parse_readiness(judgments: pd.DataFrame) -> pd.DataFrame:
    """Scores from a judgments frame (``request_id, text, top_logprobs, ok, error``).

    A reply counts only if it states Yes or No under the contract
    (:func:`parse_answer`); its score is then P(Yes) from the first token's
    alternatives when they hold a Yes or No, else the stated answer (1.0/0.0).
    A reply that is not an answer ("No idea.") is a parse failure even when its
    first token is "No". With ``max_tokens=1`` the reply is that first token,
    so a model that would have gone on to hedge cannot be caught here.

    Columns added: ``score``, ``score_source`` (``logprobs``/``text``/``None``),
    ``parse_ok``, ``yes_no_mass`` (P(Yes)+P(No) before normalising: how much
    of the first token the two answers cover), ``error`` (the call's) and
    ``failure`` (why there is no score: a kind of
    :data:`cfbench.judges.failures.FAILURE_KINDS`, None for a scored reply).
    """
    rows = []
    for r in judgments.itertuples(index=False):
        ok = bool(getattr(r, "ok", True))
        text = r.text if isinstance(r.text, str) else ""
        top = _decode_top(r.top_logprobs, r.request_id)
        score, source = math.nan, None
        answer = parse_answer(text) if ok else None
        if answer is not None:  # the reply states an answer; its first token's alternatives refine it
            p = yes_probability(top)
            score, source = (p, "logprobs") if not math.isnan(p) else (answer, "text")
        error = getattr(r, "error", None)
        rows.append({"request_id": r.request_id, "raw": text, "score": score, "score_source": source,
                     "parse_ok": source is not None, "yes_no_mass": _yes_no_mass(top), "error": error,
                     "failure": failure_kind(None if ok else (error if isinstance(error, str) and error
                                                              else "no reply"), parse_ok=source is not None,
                                             text=text)})
    return pd.DataFrame(rows)


@dataclass
class ScoredPairs:
    """Pairs with judge scores, plus what had to be left out and why."""

    frame: pd.DataFrame     # complete pairs only, validated, ``score`` filled
    parsed: pd.DataFrame    # one row per (pair, variant) request with its parse outcome
    excluded: pd.DataFrame  # pair_id, variant, reason: pairs with any unscored variant


def attach_scores(pairs: pd.DataFrame, parsed: pd.DataFrame, *, prompt: str = "baseline",
                  variants: Sequence[str] | None = None) -> ScoredPairs:
    """Put parsed scores onto the pair frame.

    A pair with a variant that failed to parse (or whose call failed) cannot
    be compared within the pair, so the whole pair is excluded and listed in
    ``excluded`` with the reason; it is never scored as "No".
    """
    from cfbench.io.pairs import validate_pairs

    ids = pairs.apply(lambda r: request_id(r["pair_id"], r["variant"], prompt), axis=1)
    index = pd.DataFrame({"request_id": ids, "pair_id": pairs["pair_id"], "variant": pairs["variant"]})
    merged = index.merge(parsed, on="request_id", how="left", validate="one_to_one", indicator=True)
    absent = merged["_merge"] == "left_only"
    if absent.any():
        row = merged.loc[absent].iloc[0]
        raise InputError("no judgment for this request", source="readiness.attach_scores",
                         record=f"{row['pair_id']}/{row['variant']}", field="request_id")
    merged = merged.drop(columns="_merge")
    bad = merged.loc[~merged["parse_ok"].astype(bool)]
    reasons = bad.apply(lambda r: f"judge error: {r['error']}" if isinstance(r["error"], str) and r["error"]
                        else f"unparseable reply {r['raw']!r}", axis=1) if len(bad) else pd.Series(dtype=str)
    excluded = pd.DataFrame({"pair_id": bad["pair_id"], "variant": bad["variant"], "reason": reasons,
                             "failure": bad["failure"] if "failure" in bad.columns else None})
    keep = ~pairs["pair_id"].isin(set(excluded["pair_id"]))
    if not keep.any():
        raise InputError("no pair has every variant scored", source="readiness.attach_scores", field="score")
    scored = pairs.loc[keep].drop(columns=["score"]).merge(
        merged[["pair_id", "variant", "score"]], on=["pair_id", "variant"], how="left")
    frame = validate_pairs(scored, source="readiness scores", variants=variants, require_score=True)
    return ScoredPairs(frame=frame, parsed=merged, excluded=excluded.reset_index(drop=True))


# --------------------------------------------------------------------------- scripted double


def _scripted_ready(request: Request) -> Response:
    """Deterministic stand-in: P(Yes) from a hash of the prompt. About one
    call in 25 answers with neither Yes nor No, to exercise parse failures."""
    user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    u = stable_unit("shopflow-ready", user)
    if u < 0.04:
        return Response(text="Perhaps", top_logprobs={"Perhaps": math.log(0.7), "Maybe": math.log(0.2)},
                        prompt_tokens=len(user.split()), completion_tokens=1)
    p = 0.03 + 0.94 * stable_unit("shopflow-ready/p", user)
    return Response(text="Yes" if p >= 0.5 else "No",
                    top_logprobs={"Yes": math.log(p), "No": math.log(1 - p)},
                    prompt_tokens=len(user.split()), completion_tokens=1)


register_script("shopflow-ready", _scripted_ready)
