"""Judge callables for the perturb tests (unit-test doubles, never used by studies).

A judge callable maps a batch of chats (lists of ``{"role", "content"}``) to one
reply text per chat (``None`` for a failed call), as
:data:`cfbench.perturb.llm_tasks.Complete` says.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Sequence

from cfbench.perturb.llm_tasks import IDENTIFY_LIST_KEYS

Chat = list[dict[str, str]]


def _user(chat: Chat) -> str:
    return next((m["content"] for m in reversed(chat) if m["role"] == "user"), "")


def _system(chat: Chat) -> str:
    return next((m["content"] for m in chat if m["role"] == "system"), "")


def _target_line(chat: Chat) -> tuple[str, str]:
    user = _user(chat)
    m = re.search(r"^Target line \(Agent\): (.*)$", user, flags=re.M)
    style = re.search(r"^Style to produce: ([^-]+?) --", user, flags=re.M)
    return (m.group(1) if m else ""), (style.group(1).strip() if style else "")


def _attempt(chat: Chat) -> int:
    m = re.search(r"Attempt (\d+):", _system(chat))
    return int(m.group(1)) - 1 if m else 0


def each(fn: Callable[[Chat], Any]) -> Callable[[Sequence[Chat]], list[Any]]:
    """A batch callable from a per-chat function; ``calls`` records every batch."""
    def complete(chats: Sequence[Chat]) -> list[Any]:
        complete.calls.append(list(chats))  # type: ignore[attr-defined]
        return [fn(c) for c in chats]
    complete.calls = []  # type: ignore[attr-defined]
    return complete


def rewrite_tag(chat: Chat) -> str:
    """The target line with a style tag prepended."""
    target, style = _target_line(chat)
    return json.dumps({"trans_turn": f"[{style}] {target}"})


def rewrite_flaky(chat: Chat) -> str:
    """First attempt adds a number (fails the guards); later attempts as :func:`rewrite_tag`."""
    if _attempt(chat) == 0:
        target, _ = _target_line(chat)
        return json.dumps({"trans_turn": f"{target} Ref 999."})
    return rewrite_tag(chat)


def rewrite_drops_name(chat: Chat) -> str:
    """Rewrites "May I ..." lines into a bare name, like the small model on STAR did."""
    return json.dumps({"trans_turn": "Sarah Brown"})


def rewrite_negates(chat: Chat) -> str:
    """Turns "only able" into "not able", as the small model did on STAR."""
    target, _ = _target_line(chat)
    return json.dumps({"trans_turn": target.replace("only able", "not able")})


def identify_name_after_this_is(chat: Chat) -> str:
    """The name after "this is" in turn 1, nothing else."""
    obj: dict[str, Any] = {k: "" for k in ("agent_name", "agent_gender", "agent_race", "agent_religion")}
    obj.update({k: [] for k in IDENTIFY_LIST_KEYS})
    obj["agent_pronouns"] = []
    m = re.search(r"^\[1\] Agent: .*?\bthis is (\w+)", _user(chat), flags=re.M | re.I)
    if m:
        obj["agent_name"] = m.group(1)
        obj["name_turns"] = [1]
    return json.dumps(obj)


def validate_yes(chat: Chat) -> str:
    return json.dumps({"equivalent": True, "reason": "same facts and outcome"})


def validate_no(chat: Chat) -> str:
    return json.dumps({"equivalent": False, "reason": "outcome differs"})


def garbage(chat: Chat) -> str:
    return "Not sure, sorry."


def failed(chat: Chat) -> None:
    return None


def from_spec(spec: str) -> Callable[[Sequence[Chat]], list[str | None]]:
    """A judge callable on a real judge spec through :func:`cfbench.judges.run_requests` (local-model tests)."""
    from cfbench.judges import run_requests
    from cfbench.judges.base import GenerationConfig, Request

    def complete(chats: Sequence[Chat]) -> list[str | None]:
        reqs = [Request(f"perturb-test-{k}", tuple(c), config=GenerationConfig(temperature=0.0, max_tokens=200, seed=0))
                for k, c in enumerate(chats)]
        res = run_requests(spec, reqs, progress=False).judgments
        return [r["text"] if r["ok"] else None for _, r in res.iterrows()]

    return complete


def validate_no_request(request: Any) -> str:
    """``validate_no`` as a scripted judge (``scripted:perturb_doubles:validate_no_request``)."""
    return validate_no(list(request.messages))
