"""LLM paths of the perturbers: style rewriting of user transcripts, with
validation and regeneration, and an optional LLM turn identifier.

Both call a *judge callable* supplied by the caller
(:data:`cfbench.perturb.llm_tasks.Complete`: a batch of chat message lists in,
one reply text or ``None`` per chat out), so this layer never imports the judge
code; a study builds the callable on its judge runner (which caches and records
every call). Prompts and parsers live in :mod:`cfbench.perturb.llm_tasks`.

Style rewriting: each identified turn of the dimension (rule-based markers,
see :mod:`cfbench.perturb.identify`) is rewritten on its own, with the turns
before and after as context. The variant then passes the deterministic guards
and, when ``validate_judge`` is given, an LLM equivalence check. A failure
triggers a new generation (sampled, a separate cache entry), up to
``max_regenerations`` after the first (the seed retried 3 times); the last
attempt is kept with ``valid=False`` and the reasons if none passed.

:func:`llm_check_variants` runs the same equivalence check on variants made
without an LLM (name swaps, cue injection, inserted turns), as the seed did
for all Operation 1 and 2 variants; those are not regenerated.
"""

from __future__ import annotations

from typing import Any, Sequence

from cfbench.io.transcripts import Transcript

from .base import Variant
from .identify import TurnIdentification
from .llm_tasks import (Complete, Messages, identify_messages, parse_identify, parse_rewrite, parse_validate,
                        rewrite_messages, validate_messages)
from .turns import apply_turn_edits
from .validate import check_variant

__all__ = ["ask", "llm_style_variants", "identify_turns_llm", "llm_check_variants", "validator_calibration"]


def ask(complete: Complete, chats: Sequence[Messages], *, desc: str = "",
        progress: bool = False) -> list[dict[str, Any]]:
    """Send ``chats`` through the judge callable: one ``{"ok", "text", "error"}`` per chat.

    A ``None`` (or non-string) reply is a failed call; a callable that returns the
    wrong number of replies raises ``ValueError``.
    """
    if not callable(complete):
        raise TypeError(f"expected a judge callable (chats -> reply texts), got {type(complete).__name__}; "
                        "a study turns a judge spec into one (see cfbench.perturb.llm_tasks.Complete)")
    if not chats:
        return []
    replies = list(complete([list(c) for c in chats]))
    if len(replies) != len(chats):
        raise ValueError(f"judge callable returned {len(replies)} replies for {len(chats)} chats ({desc})")
    return [{"ok": isinstance(r, str), "text": r if isinstance(r, str) else None,
             "error": None if isinstance(r, str) else "no reply (call failed)"} for r in replies]


def _render(turns: Sequence[dict[str, str]]) -> str:
    return "\n".join(f"{t['speaker'].capitalize()}: {t['text']}" for t in turns)


def llm_style_variants(jobs: Sequence[tuple[Transcript, TurnIdentification, str, str]], *, seed: int,
                       rewrite_judge: Complete, validate_judge: Complete | None = None, max_regenerations: int = 3,
                       progress: bool = True) -> list[tuple[Variant, list[str]]]:
    """One (variant, failed checks) per job ``(transcript, identification, dimension, condition)``.

    Each rewritten turn passes :func:`check_variant` with a ``rewrite`` edit
    scope (only the identified turns; numbers, names and questions survive; no
    copied neighbour) and, with ``validate_judge``, an LLM equivalence check.
    """
    if max_regenerations < 0:
        raise ValueError("max_regenerations must be >= 0")
    max_attempts = 1 + max_regenerations
    results: list[tuple[Variant, list[str]] | None] = [None] * len(jobs)
    pending: list[int] = []
    for k, (t, ident, dim, cond) in enumerate(jobs):
        targets = [i for i in ident.style_turns(dim) if t.turns[i].speaker == "agent"]
        if not targets:
            results[k] = (Variant.not_applicable(f"no agent turn with {dim} markers to rewrite",
                                                 "turn_transformation"), [])
        else:
            pending.append(k)
    history: dict[int, list[str]] = {k: [] for k in pending}
    for attempt in range(max_attempts):
        if not pending:
            break
        reqs, index = [], []
        for k in pending:
            t, ident, dim, cond = jobs[k]
            for i in ident.style_turns(dim):
                if t.turns[i].speaker != "agent":
                    continue
                left = t.turns[i - 1].text if i > 0 else ""
                right = t.turns[i + 1].text if i + 1 < len(t.turns) else ""
                reqs.append(rewrite_messages(dimension=dim, condition=cond, target=t.turns[i].text, left=left,
                                             right=right, attempt=attempt))
                index.append((k, i))
        res = ask(rewrite_judge, reqs, desc=f"style rewrite (attempt {attempt + 1})", progress=progress)
        new_texts: dict[int, dict[int, str]] = {k: {} for k in pending}
        errors: dict[int, list[str]] = {k: [] for k in pending}
        for (k, i), row in zip(index, res):
            if not row["ok"]:
                errors[k].append(f"rewrite call failed for turn {i}: {row['error']}")
                continue
            parsed = parse_rewrite(row["text"])
            if not parsed["parse_ok"]:
                errors[k].append(f"rewrite reply for turn {i} unparseable: {parsed['parse_error']}")
            else:
                new_texts[k][i] = parsed["text"]
        candidates: dict[int, Variant] = {}
        for k in pending:
            t, ident, dim, cond = jobs[k]
            turns, edits = apply_turn_edits(t, new_texts[k])
            targets = [i for i in ident.style_turns(dim) if t.turns[i].speaker == "agent"]
            v = Variant(turns, edits=edits, operation="turn_transformation", llm_made=True,
                        checks={"target_turns": targets,
                                "scope": {"swaps": [], "inserted": [], "rewrite": targets}})
            problems = list(errors[k]) or check_variant(t, v)
            if not errors[k] and not edits:
                problems.append("rewrite changed nothing")
            candidates[k] = v
            history[k] = problems
        to_validate = [k for k in pending if not history[k]] if validate_judge else []
        if to_validate:
            vreqs = [validate_messages(_render([x.to_dict() for x in jobs[k][0].turns]),
                                       _render(candidates[k].turns or []))
                     for k in to_validate]
            vres = ask(validate_judge, vreqs, desc=f"equivalence check (attempt {attempt + 1})", progress=progress)
            for k, row in zip(to_validate, vres):
                if not row["ok"]:
                    history[k] = [f"validator call failed: {row['error']}"]
                    continue
                parsed = parse_validate(row["text"])
                if not parsed["parse_ok"]:
                    history[k] = [f"validator reply unparseable: {parsed['parse_error']}"]
                elif not parsed["equivalent"]:
                    history[k] = [f"validator: not equivalent ({parsed['reason']})"]
        still = []
        for k in pending:
            if history[k] and attempt + 1 < max_attempts:
                still.append(k)
            else:
                v = candidates[k]
                problems = history[k]
                if problems:
                    problems = problems + [f"rejected after {attempt + 1} attempt(s)"]
                v.reason = f"LLM rewrite, attempt {attempt + 1}"
                results[k] = (v, problems)
        pending = still
    return [r for r in results if r is not None]


def identify_turns_llm(transcripts: Sequence[Transcript], judge: Complete, *, progress: bool = True
                       ) -> list[dict[str, Any]]:
    """LLM identification of each transcript: ``{"item_id", "parse_ok", "parse_error",
    "identification", "raw"}`` (0-based turns; ``identification`` is None on a parse failure)."""
    reqs = [identify_messages([x.to_dict() for x in t.turns]) for t in transcripts]
    res = ask(judge, reqs, desc="identify turns", progress=progress)
    out = []
    for t, row in zip(transcripts, res):
        if not row["ok"]:
            out.append({"item_id": t.id, "parse_ok": False, "parse_error": f"call failed: {row['error']}",
                        "identification": None, "raw": None})
            continue
        parsed = parse_identify(row["text"], len(t.turns))
        out.append({"item_id": t.id, **parsed, "raw": row["text"]})
    return out


def llm_check_variants(originals: Sequence[Transcript], variants: Sequence[Variant], *,
                       validate_judge: Complete, progress: bool = True) -> list[list[str]]:
    """LLM equivalence check of already-made variants: one list of problems per variant
    (empty = judged equivalent). ``originals[k]`` is the transcript ``variants[k]`` came from."""
    reqs = [validate_messages(_render([x.to_dict() for x in t.turns]), _render(v.turns or []))
            for t, v in zip(originals, variants)]
    if not reqs:
        return []
    res = ask(validate_judge, reqs, desc="equivalence check", progress=progress)
    out: list[list[str]] = []
    for row in res:
        if not row["ok"]:
            out.append([f"validator call failed: {row['error']}"])
            continue
        parsed = parse_validate(row["text"])
        if not parsed["parse_ok"]:
            out.append([f"validator reply unparseable: {parsed['parse_error']}"])
        elif not parsed["equivalent"]:
            out.append([f"validator: not equivalent ({parsed['reason']})"])
        else:
            out.append([])
    return out


def _bump_number(text: str) -> str | None:
    import re

    m = re.search(r"\d+", text)
    if not m:
        return None
    digits = m.group(0)
    bumped = str(int(digits) + 7).zfill(len(digits))
    return text[:m.start()] + bumped + text[m.end():]


def validator_calibration(transcripts: Sequence[Transcript], validate_judge: Complete, *, seed: int = 0,
                          progress: bool = True):
    """How well a validator separates meaning-preserving from meaning-changing variants.

    For each transcript: two *preserving* variants (the gender swap to the
    other gender, and the ``ethnicity_name`` swap to the first group) and two
    *corrupted* ones (the first number in an agent turn changed; the longest
    agent turn that carries a number dropped). Returns one row per pair:
    ``item_id, kind ("preserving"|"corrupted"), variant, parse_ok, equivalent, reason,
    guards_pass, guard_failures`` (the deterministic guards' verdict on the same pair,
    for comparison). A useful validator says equivalent for preserving and not for
    corrupted; read its rejection rates only after checking this.
    """
    import pandas as pd

    from .base import get_perturber
    from .identify import identify_turns

    pairs: list[tuple[str, str, str, list[dict[str, str]]]] = []
    guards: list[list[str]] = []
    for t in transcripts:
        ident = identify_turns(t)
        orig = [x.to_dict() for x in t.turns]
        target = "male" if ident.agent_gender == "female" else "female"
        for dim, cond in (("gender", target), ("ethnicity_name", get_perturber("ethnicity_name").dimension.conditions[0])):
            v = get_perturber(dim).perturb(t, ident, cond, seed=seed)
            if v.applicable and v.edits:
                pairs.append((t.id, "preserving", f"{dim}:{cond}", v.turns or []))
                guards.append(check_variant(t, v))
        agent_num = [i for i, x in enumerate(orig) if x["speaker"] == "agent" and _bump_number(x["text"])]
        if agent_num:
            i = agent_num[0]
            changed = [dict(x) for x in orig]
            changed[i]["text"] = _bump_number(changed[i]["text"]) or changed[i]["text"]
            pairs.append((t.id, "corrupted", f"number_changed:turn{i}", changed))
            # declared as an ordinary edit, so only the content guards can catch it
            edit = {"turn": i, "op": "replace", "speaker": "agent", "before": orig[i]["text"], "after": changed[i]["text"]}
            guards.append(check_variant(t, Variant(changed, edits=[edit], checks={"target_turns": [i]})))
            j = max(agent_num, key=lambda k: len(orig[k]["text"]))
            dropped = orig[:j] + orig[j + 1:]
            pairs.append((t.id, "corrupted", f"turn_dropped:turn{j}", dropped))
            guards.append(check_variant(t, Variant(dropped)))
    by_id = {t.id: t for t in transcripts}
    reqs = [validate_messages(_render([x.to_dict() for x in by_id[item].turns]), _render(turns))
            for item, _, name, turns in pairs]
    res = ask(validate_judge, reqs, desc="validator calibration", progress=progress)
    rows = []
    for (item, kind, name, _), row in zip(pairs, res):
        parsed = parse_validate(row["text"]) if row["ok"] else {"parse_ok": False, "equivalent": None, "reason": None}
        rows.append({"item_id": item, "kind": kind, "variant": name, "parse_ok": parsed["parse_ok"],
                     "equivalent": parsed["equivalent"], "reason": parsed.get("reason"),
                     "guards_pass": not guards[len(rows)], "guard_failures": "; ".join(guards[len(rows)])})
    return pd.DataFrame(rows, columns=["item_id", "kind", "variant", "parse_ok", "equivalent", "reason",
                                       "guards_pass", "guard_failures"])
