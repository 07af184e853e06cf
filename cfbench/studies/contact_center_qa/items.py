"""Step 1 of the contact-center study: the items (transcripts) a run audits.

:func:`iter_items` is the one entry: the transcripts ``params`` selects, read lazily from their
source - a file or folder, the shipped set, or the seeded synthetic stream
(``transcripts_path: synthetic[:seed=S,min_turns=A,max_turns=B]``; transcript ``i`` depends only on
the seed and ``i``, and with the default settings the first 24 are the shipped set). The selection
keeps named agents and alternates Yes and No on ``balance_label`` (:func:`iter_selected`).
:func:`load_items` is the same as a list; :func:`labels_frame` gives their ground-truth labels.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pandas as pd

from cfbench.core.errors import InputError

__all__ = ["SYNTHETIC", "synthetic_settings", "iter_transcripts", "iter_items", "load_items", "iter_selected",
           "select_items", "labels_frame"]

#: ``transcripts_path`` value (or prefix, ``synthetic:key=value,...``) of the streamed synthetic set
SYNTHETIC = "synthetic"
_SYNTH_KEYS = {"seed": 0, "min_turns": 10, "max_turns": 14}
#: a synthetic stream gives up after this many transcripts per requested item (a filter nothing passes)
_MAX_DRAWS_PER_ITEM = 50


def synthetic_settings(source: str) -> dict[str, int] | None:
    """``{"seed", "min_turns", "max_turns"}`` of a ``synthetic[:k=v,...]`` source; None for a path.

    >>> synthetic_settings("synthetic:seed=3")
    {'seed': 3, 'min_turns': 10, 'max_turns': 14}
    >>> synthetic_settings("calls.jsonl") is None
    True
    """
    head, sep, rest = str(source).partition(":")
    if head != SYNTHETIC or (not sep and rest):
        return None
    out = dict(_SYNTH_KEYS)
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in _SYNTH_KEYS:
            raise InputError(f"expected key=value with key one of {', '.join(_SYNTH_KEYS)}", source=source,
                             record=part, field="transcripts_path")
        try:
            out[key] = int(value)
        except ValueError:
            raise InputError(f"{key} must be an integer, got {value.strip()!r}", source=source, record=part,
                             field="transcripts_path") from None
    return out


def iter_transcripts(params: Any) -> Iterable[Any]:
    """The candidate transcripts of ``params``: a file or folder (loaded), the shipped set, or the
    synthetic stream (generated lazily, without end)."""
    from cfbench.io.dialogues import load_dialogues
    from cfbench.studies.contact_center_qa.synth import iter_synthetic, shipped_transcripts_path

    synth = synthetic_settings(params.transcripts_path)
    if synth is not None:
        try:
            return iter_synthetic(**synth)
        except ValueError as exc:  # pragma: no cover - iter_synthetic checks lazily
            raise InputError(str(exc), source=params.transcripts_path, field="transcripts_path") from None
    return load_dialogues(params.transcripts_path or shipped_transcripts_path())


def iter_items(params: Any, transcripts: Iterable[Any] | None = None) -> Iterator[Any]:
    """The transcripts ``params`` selects, produced lazily (:func:`iter_selected` over its source)."""
    n = params.n_items
    source = iter_transcripts(params) if transcripts is None else transcripts
    synth = transcripts is None and synthetic_settings(params.transcripts_path) is not None
    if synth:  # the synthetic stream has no end: a filter that nothing passes must not loop forever
        source = itertools.islice(source, _MAX_DRAWS_PER_ITEM * max(n, 1))
    yield from iter_selected(source, n, require_agent_name=params.require_agent_name,
                                     balance_label=params.balance_label or None)


def load_items(params: Any) -> list[Any]:
    """:func:`iter_items` as a list: the transcripts ``params`` selects (path, shipped set or ``synthetic``
    stream, ``n_items``, name and label rules)."""
    return list(iter_items(params))


def iter_selected(transcripts: Iterable[Any], n: int, *, require_agent_name: bool = True,
                  balance_label: str | None = None) -> Iterator[Any]:
    """The transcripts :func:`select_items` picks, in its order, read lazily from ``transcripts``.

    Alternating Yes and No items on ``balance_label`` only buffers the surplus of one class
    (never more than ``n``). Raises :class:`InputError` when fewer than ``n`` qualify (after
    the items before the shortfall were yielded).
    """
    pool = (t for t in transcripts if not require_agent_name or getattr(t, "agent_name", None))
    emitted = 0
    if not balance_label:
        for t in pool:
            if emitted == n:
                return
            yield t
            emitted += 1
    else:
        # yes[0], no[0], yes[1], no[1], ... then the rest of the longer class, then unlabelled items
        # (an item without the label is neither class: it never stands in for a No)
        yes: deque = deque()
        no: deque = deque()
        unlabelled: deque = deque()
        seen = {True: 0, False: 0}
        for t in pool:
            if emitted >= n:
                return
            label = dict(getattr(t, "labels", {}) or {}).get(balance_label)
            if label not in ("Yes", "No"):
                if len(unlabelled) < n:
                    unlabelled.append(t)
                continue
            is_yes = label == "Yes"
            seen[is_yes] += 1
            if seen[is_yes] <= n:  # the (n+1)-th of a class and later ones are never selected
                (yes if is_yes else no).append(t)
            while yes and no and emitted < n:
                yield yes.popleft()
                emitted += 1
                if emitted < n:
                    yield no.popleft()
                    emitted += 1
        for rest in (yes, no, unlabelled):
            while rest and emitted < n:
                yield rest.popleft()
                emitted += 1
    if emitted < n:
        why = " (require_agent_name keeps only transcripts that name the agent)" if require_agent_name else ""
        raise InputError(f"only {emitted} transcripts qualify, {n} requested{why}", source="transcripts",
                         field="n_items")


def select_items(transcripts: Sequence[Any], n: int, *, require_agent_name: bool = True,
                 balance_label: str | None = None) -> list[Any]:
    """The first ``n`` transcripts (in file order) that suit the study.

    ``require_agent_name`` keeps only transcripts where the agent is named,
    so the name-based dimensions (gender, ethnicity, religion) apply to every
    item. ``balance_label`` (a label id such as ``issue_resolution``)
    alternates Yes and No items as far as the set allows, so accuracy is not
    computed on one class only. Raises :class:`InputError` when fewer than
    ``n`` transcripts qualify.
    """
    return list(iter_selected(transcripts, n, require_agent_name=require_agent_name, balance_label=balance_label))


def labels_frame(transcripts: Sequence[Any]) -> pd.DataFrame:
    """Ground-truth labels as ``item_id, question_id, label`` (from ``Transcript.labels``)."""
    rows = []
    for t in transcripts:
        tid = getattr(t, "id", None) if not isinstance(t, Mapping) else t.get("id")
        labels = getattr(t, "labels", None) if not isinstance(t, Mapping) else t.get("labels")
        for q, lab in dict(labels or {}).items():
            if lab not in ("Yes", "No"):
                raise InputError(f"label must be 'Yes' or 'No', got {lab!r}", record=tid, field=f"labels.{q}")
            rows.append({"item_id": tid, "question_id": q, "label": lab})
    return pd.DataFrame(rows, columns=["item_id", "question_id", "label"])
