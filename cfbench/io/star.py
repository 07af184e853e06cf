"""Loader for dialogues in the STAR corpus format (raw JSON as published).

A STAR file holds one dialogue: ``{"DialogueID": 10, "Scenario": {...},
"Events": [{"Agent": "User"|"Wizard"|..., "Action": "utter"|..., "Text": ...}]}``.
The *Wizard* is the service side (our ``agent``), the *User* the ``customer``.
Turns are the events whose action is ``utter`` or ``pick_suggestion`` (the
message the wizard actually sent); everything else (``request_suggestions``
drafts, ``query``, knowledge-base returns, user-guide instructions,
``complete``) is skipped and counted in ``meta["star_skipped"]``.

Labels: the customer's own answer to the questionnaire's task-success question
(``UserQuestionnaire``, e.g. "Did the assistant book your flight?") becomes the
``issue_resolution`` label (True -> "Yes", False -> "No"); ``meta["label_question"]``
records the question it came from and ``meta["user_questionnaire"]`` keeps every
answer. The task-success question is the first one that is not about the
assistant's manner ("stay calm and helpful") or the worker's enjoyment ("Did you
enjoy this task?"); weather dialogues add "say something about rain?" after it,
which is kept in ``user_questionnaire`` but never used as the label. About a third
of STAR dialogues have such a question; the others get no label.

Nothing is coerced: a file that is not a STAR dialogue, an event without
``Agent``/``Action``, or a turn event without text raises
:class:`cfbench.core.errors.InputError` naming the file, the event and the field.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from cfbench.core.errors import InputError
from cfbench.core.files import read_text
from cfbench.core.text import find_unstorable

from .headers import loads_strict
from .transcripts import Transcript, Turn

__all__ = ["load_star", "star_dialogue", "TURN_ACTIONS", "SPEAKER_OF", "LABEL", "task_success"]

#: Event actions that become turns.
TURN_ACTIONS = ("utter", "pick_suggestion")
#: STAR agent -> our speaker.
SPEAKER_OF = {"Wizard": "agent", "User": "customer"}
#: The label the customer's task-success answer fills.
LABEL = "issue_resolution"
#: Questionnaire questions that are not about the task's success.
_NOT_TASK = re.compile(r"calm and helpful|enjoy this task", re.IGNORECASE)


def task_success(obj: dict, *, source: str, record: str) -> tuple[list[dict], dict | None]:
    """``(answers, task)``: every ``UserQuestionnaire`` answer, checked, and the task-success one
    (None when the dialogue has no questionnaire or no task question)."""
    uq = obj.get("UserQuestionnaire")
    if uq is None:
        return [], None
    if not isinstance(uq, list):
        raise InputError(f"must be a list of questions, got {type(uq).__name__}", source=source, record=record,
                         field="UserQuestionnaire")
    answers = []
    for k, q in enumerate(uq):
        where = f"UserQuestionnaire[{k}]"
        if not isinstance(q, dict):
            raise InputError("must be an object", source=source, record=record, field=where)
        if not isinstance(q.get("Question"), str) or not q["Question"].strip():
            raise InputError("is missing or not a string", source=source, record=record, field=f"{where}.Question")
        if not isinstance(q.get("Answer"), bool):
            raise InputError(f"must be true or false, got {q.get('Answer')!r}", source=source, record=record,
                             field=f"{where}.Answer")
        answers.append({"question": q["Question"].strip(), "answer": q["Answer"]})
    task = next((a for a in answers if not _NOT_TASK.search(a["question"])), None)
    return answers, task


def _checked_frame(obj: dict, source: str) -> tuple[Any, str, list, list[str]]:
    """What every STAR dialogue must have, turns or not: a DialogueID (a whole number or a non-empty string),
    a list of event objects each with string ``Agent`` and ``Action``, and a ``Scenario`` object (when given)
    whose ``Domains`` (when given) is a list of strings (a null entry, as in 12 STAR dialogues, names no domain:
    their ``domain`` is "", once the string "None"). Returns ``(DialogueID, record id, events, domains)``;
    anything else raises one line naming the field (nothing coerced: a string of domains once became its
    letters, a DialogueID of ``true`` the id ``star-True``)."""
    if "DialogueID" not in obj:
        raise InputError("is missing (not a STAR dialogue)", source=source, record="<file>", field="DialogueID")
    did = obj["DialogueID"]
    if isinstance(did, bool) or not (isinstance(did, int) or (isinstance(did, str) and did.strip())):
        raise InputError(f"must be a whole number or a non-empty string, got {did!r}", source=source,
                         record="<file>", field="DialogueID")
    rid = f"star-{did}"
    if bad := find_unstorable(obj):  # a lone surrogate (JSON "\ud800") would fail far later, unnamed
        raise InputError(f"{bad[1]}, which cannot be stored", source=source, record=rid, field=bad[0])
    events = obj.get("Events")
    if not isinstance(events, list):
        raise InputError("must be a list of events", source=source, record=rid, field="Events")
    for k, ev in enumerate(events):
        where = f"Events[{k}]"
        if not isinstance(ev, dict):
            raise InputError("must be an object", source=source, record=rid, field=where)
        for key in ("Agent", "Action"):
            if not isinstance(ev.get(key), str):
                raise InputError("is missing or not a string", source=source, record=rid, field=f"{where}.{key}")
    scenario = obj.get("Scenario")
    if scenario is not None and not isinstance(scenario, dict):
        raise InputError(f"must be an object, got {type(scenario).__name__}", source=source, record=rid,
                         field="Scenario")
    domains = (scenario or {}).get("Domains")
    if domains is None:
        domains = []
    if not isinstance(domains, list) or not all(d is None or (isinstance(d, str) and d.strip()) for d in domains):
        raise InputError(f"must be a list of domain names, got {domains!r}"[:200], source=source, record=rid,
                         field="Scenario.Domains")
    return did, rid, events, [d for d in domains if d is not None]  # a null entry names no domain


def star_dialogue(obj: Any, *, source: str) -> Transcript:
    """One parsed STAR JSON object as a :class:`Transcript` (id ``star-<DialogueID>``).

    ``meta`` keeps the scenario's domains and task, the completion level and
    the count of skipped events by ``"<Agent>:<Action>"``.
    """
    if not isinstance(obj, dict):
        raise InputError(f"must be a JSON object, got {type(obj).__name__}", source=source, record="<file>",
                         field=None)
    did, rid, events, domains = _checked_frame(obj, source)
    turns: list[Turn] = []
    skipped: Counter[str] = Counter()
    for k, ev in enumerate(events):
        where = f"Events[{k}]"
        agent, action = ev["Agent"], ev["Action"]
        if action not in TURN_ACTIONS or agent not in SPEAKER_OF:
            skipped[f"{agent}:{action}"] += 1
            continue
        text = ev.get("Text")
        if not isinstance(text, str) or not text.strip():
            raise InputError("is missing or empty on a turn event", source=source, record=rid, field=f"{where}.Text")
        turns.append(Turn(SPEAKER_OF[agent], text.strip()))
    if not turns:
        raise InputError("has no utter/pick_suggestion event (load_star(..., skip_empty=True) leaves such "
                         "dialogues out)", source=source, record=rid, field="Events")
    scenario = obj.get("Scenario") or {}
    answers, task = task_success(obj, source=source, record=rid)
    meta = {"source": "star", "dialogue_id": did, "completion": obj.get("CompletionLevel"),
            "domains": list(domains), "wizard_task": scenario.get("WizardTask"),
            "star_skipped": dict(sorted(skipped.items()))}
    labels = {}
    if answers:
        meta["user_questionnaire"] = answers
    if task is not None:
        labels[LABEL] = "Yes" if task["answer"] else "No"
        meta["label_question"] = {LABEL: task["question"]}
        meta["label_source"] = "customer questionnaire (STAR UserQuestionnaire)"
    return Transcript(id=rid, turns=tuple(turns), domain=str(domains[0]) if domains else "", labels=labels,
                      meta=meta)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
        if not files:
            raise InputError("no *.json file in the folder", source=str(path), record="<folder>", field=None)
        return files
    if not path.exists():
        raise InputError("does not exist", source=str(path), record="<file>", field=None)
    return [path]


def load_star(path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *,
              limit: int | None = None, skip_empty: bool = False) -> list[Transcript]:
    """Read STAR dialogues from a file, a folder of ``*.json`` files, or a list of files.

    Parameters
    ----------
    path : path, folder, or iterable of paths
    limit : int, optional
        Read only the first ``limit`` files (in DialogueID-like order: shorter names first).
    skip_empty : bool
        A dialogue with no turn event (STAR has a few, disconnected before the
        first message) raises :class:`InputError` by default; with ``True`` it
        is left out and named in a :class:`UserWarning`.

    Returns
    -------
    list of Transcript, ids ``star-<DialogueID>``; Wizard turns are ``agent``, User turns ``customer``.
    """
    if isinstance(path, (str, os.PathLike)):
        files = _files(Path(path))
    else:
        files = [Path(p) for p in path]
    if limit is not None:
        files = files[:limit]
    out: list[Transcript] = []
    seen: dict[str, str] = {}
    empty: list[str] = []
    for f in files:
        try:
            obj = loads_strict(read_text(f), source=str(f), record="<file>")
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg}, line {exc.lineno})", source=str(f), record="<file>",
                             field=None) from None
        if skip_empty and isinstance(obj, dict):
            _, _, events, _ = _checked_frame(obj, str(f))  # only a sound dialogue is left out for having no turn
            if not any(e["Action"] in TURN_ACTIONS and e["Agent"] in SPEAKER_OF for e in events):
                empty.append(f.name)
                continue
        t = star_dialogue(obj, source=str(f))
        if t.id in seen:
            raise InputError(f"duplicate DialogueID (also in {seen[t.id]})", source=str(f), record=t.id,
                             field="DialogueID")
        seen[t.id] = str(f)
        out.append(t)
    if empty:
        warnings.warn(f"load_star: {len(empty)} dialogue(s) without any turn left out: {', '.join(empty)}",
                      UserWarning, stacklevel=2)
    return out
