"""Scripted test doubles of the contact-center judges (unit tests and smoke runs only).

Registered with :func:`cfbench.judges.scripted.register_script` when the study
package is imported: ``scripted:cc-qa`` and ``scripted:cc-coach`` answer both
tasks (each dispatches on the prompt), so one spec can run the whole study.
Their numbers exercise the pipeline; they say nothing about any model.
"""

from __future__ import annotations

import json
import math

from cfbench.core.seeding import unit_interval as stable_unit
from cfbench.judges.base import Request, Response
from cfbench.judges.scripted import register_script
from cfbench.studies.contact_center_qa.prompts import asks_for_evidence, prompt_parts

__all__ = ["scripted_judge"]


def _is_coaching(task: str) -> bool:
    return "Coaching task:" in task


def scripted_judge(request: Request) -> Response:
    """Answer an Auto-QA or a coaching request, whichever the prompt asks."""
    _, task, _, _ = prompt_parts(request.messages)
    return _scripted_coach(request) if _is_coaching(task) else _scripted_qa(request)


def _scripted_qa(request: Request) -> Response:
    """Deterministic stand-in for an Auto-QA judge.

    The base answer depends on the question and the customer's turns (which
    no perturbation touches); a fixed fraction of variants is "flipped" by a
    hash of the whole prompt (less often under the fairness system prompt);
    sampled repeats (temperature > 0) add repeat noise; ~3% of prompts get an
    unparseable reply so the parse-failure path is exercised.
    """
    transcript, task, user, fair = prompt_parts(request.messages)
    qline = next((ln for ln in task.splitlines() if ln.startswith("Quality question:")), task[:80])
    customer = "\n".join(ln for ln in transcript.splitlines() if ln.startswith("Customer:"))
    yes = stable_unit("cc-qa", qline, customer) < 0.6
    if stable_unit("cc-qa-flip", user, fair) < (0.06 if fair else 0.15):
        yes = not yes
    if request.config.temperature > 0 and stable_unit("cc-qa-rep", user, request.repeat) < 0.1:
        yes = not yes
    conf = 55 + int(40 * stable_unit("cc-qa-conf", user, fair))
    answer = "Yes" if yes else "No"
    lp = {answer: math.log(0.8), ("No" if yes else "Yes"): math.log(0.2)}
    if stable_unit("cc-qa-garbage", user) < 0.03:
        return Response(text="The transcript does not give me enough to decide.", prompt_tokens=len(user.split()),
                        completion_tokens=10)
    if request.config.json_schema is not None:
        text = json.dumps({"answer": answer, "confidence": conf})
        return Response(text=text, top_logprobs={"{": 0.0}, prompt_tokens=len(user.split()), completion_tokens=12)
    if "final answer" in task:
        text = ("To answer the given question, let's think step by step:\nEvidences:\n- (scripted)\n"
                f"Synthesis:\nScripted judgment.\nConfidence: {conf}\nHence, the final answer is: {answer}")
        return Response(text=text, prompt_tokens=len(user.split()), completion_tokens=30)
    if asks_for_evidence(task):
        return Response(text=_evidence_reply(transcript, answer, conf, user), top_logprobs=lp,
                        prompt_tokens=len(user.split()), completion_tokens=40)
    return Response(text=f"{answer} {conf}", top_logprobs=lp, prompt_tokens=len(user.split()),
                    completion_tokens=3)


def _evidence_reply(transcript: str, answer: str, conf: int, user: str) -> str:
    """The answer / rationale / evidence reply: a Yes quotes one of the call's own agent lines, except
    that ~10% of Yes replies quote a line that is not in the call and ~5% cite no evidence (so the
    evidence checks have something to find); a No cites no evidence."""
    agent_lines = [ln for ln in transcript.splitlines() if ln.startswith("Agent:")]
    head = f"{answer}\nConfidence: {conf}\n"
    u = stable_unit("cc-qa-evidence", user)
    if answer == "No" or not agent_lines or u < 0.05:
        return head + "Rationale: (scripted) nothing in the call settles the question.\nEvidence: none"
    if u < 0.15:
        quote = "Agent: I have escalated this to my supervisor personally."  # not a line of any shipped call
    else:
        line = agent_lines[int(stable_unit("cc-qa-quote", user) * len(agent_lines))]
        quote = "Agent: " + " ".join(line.split(":", 1)[1].split()[:12])
    speaker, words = quote.split(": ", 1)
    return head + f'Rationale: (scripted) the agent says so.\nEvidence:\n- {speaker}: "{words}"'


def _scripted_coach(request: Request) -> Response:
    """Deterministic stand-in for a coaching judge.

    Base score from the customer's turns; a prompt hash shifts it by a few
    points (smaller under the fairness prompt); a header mentioning past
    coaching lowers it, to give the smoke run a visible priming effect.
    """
    transcript, task, user, fair = prompt_parts(request.messages)
    customer = "\n".join(ln for ln in transcript.splitlines() if ln.startswith("Customer:"))
    kind = "positives" if "strengths" in task else ("customer" if "customer's behaviour" in task else "improvement")
    base = 50 + 40 * stable_unit("cc-coach", kind, customer)
    shift = (stable_unit("cc-coach-shift", user, fair) - 0.5) * (4 if fair else 10)
    if "coaching" in transcript.lower() and not fair:
        shift -= 8
    if request.config.temperature > 0:
        shift += (stable_unit("cc-coach-rep", user, request.repeat) - 0.5) * 4
    score = int(round(min(100, max(0, base + shift))))
    if stable_unit("cc-coach-garbage", user) < 0.03:
        return Response(text='{"analysis": "- (scripted) no score given"}', prompt_tokens=len(user.split()),
                        completion_tokens=10)
    text = json.dumps({"score": score, "analysis": f"- (scripted {kind} note)"})
    return Response(text=text, prompt_tokens=len(user.split()), completion_tokens=15)


register_script("cc-qa", scripted_judge)
register_script("cc-coach", scripted_judge)
