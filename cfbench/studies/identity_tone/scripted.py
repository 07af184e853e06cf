"""``scripted:identity-advice``: a deterministic test double for the identity-tone study.

It writes varied, contract-shaped career advice so unit tests and smoke runs
exercise every step without a model. It is never a source of reported numbers.
Registered when :mod:`cfbench.studies.identity_tone` is imported.
"""

from __future__ import annotations

from typing import Sequence

from cfbench.core.seeding import unit_interval as stable_unit
from cfbench.judges.base import Request, Response
from cfbench.judges.scripted import register_script

__all__ = ["identity_advice"]


_ACTIONS = [
    "Write down three results you delivered this quarter with numbers attached.",
    "Book a short check-in with your manager and bring an agenda.",
    "Ask a trusted colleague which of your strengths they notice most.",
    "Pick one recurring meeting where you could share a brief update.",
    "Block thirty minutes each morning for the task that matters most.",
    "Keep a running list of questions to raise at the right moment.",
    "Offer to help on a cross-team task that is visible but contained.",
    "Review the job description of the role you want and note the gaps.",
]
_PHRASES = [
    "\"Could we spend ten minutes on my priorities for next month?\"",
    "\"I would appreciate your view on where I can add the most value.\"",
    "\"Here is what I delivered and what I plan to take on next.\"",
    "\"I suggest we agree on one measurable goal for this project.\"",
    "\"Thank you for the feedback; here is how I will act on it.\"",
    "\"Please let me know if this plan matches your expectations.\"",
]
_MISTAKES = [
    "Waiting for others to notice your work instead of reporting it plainly.",
    "Agreeing to every request, which can simply spread your effort too thin.",
    "Treating feedback as a verdict rather than as information you might use.",
    "Bringing problems without a proposed next step.",
]
_DAYS = [
    "List your recent results.", "Draft a one-paragraph summary.", "Share it with a peer for comments.",
    "Schedule the conversation.", "Hold the conversation and take notes.", "Send a short follow-up email.",
    "Reflect on what worked and adjust.",
]


def _pick(bank: Sequence[str], k: int, *parts: object) -> list[str]:
    order = sorted(range(len(bank)), key=lambda i: stable_unit(*parts, i))
    return [bank[i] for i in order[:k]]


def identity_advice(request: Request) -> Response:
    """A contract-shaped reply chosen from fixed banks by (request id, user text, seed)."""
    user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    key = (request.request_id, user, request.config.seed)
    lines = ["1) Three actions:"] + [f"- {a}" for a in _pick(_ACTIONS, 3, *key, "a")]
    lines += ["2) Two phrases:"] + [f"- {p}" for p in _pick(_PHRASES, 2, *key, "p")]
    lines += ["3) One mistake:", f"- {_pick(_MISTAKES, 1, *key, 'm')[0]}"]
    lines += ["4) Plan:"] + [f"- Day {i + 1}: {d}" for i, d in enumerate(_pick(_DAYS, 3, *key, "d"))]
    text = "\n".join(lines)
    u = stable_unit(*key, "extra")
    if u < 0.04:  # a rare disclaimer, so smoke runs exercise the partial-refusal path
        text = "I am not a certified career coach, but here is some general guidance.\n" + text
    elif u < 0.5:
        text += "\nThis may take a few weeks, and results often depend on timing."
    return Response(text=text, prompt_tokens=sum(len(m["content"].split()) for m in request.messages),
                    completion_tokens=len(text.split()), finish_reason="stop")


register_script("identity-advice", identity_advice)
