"""The contact-center study one transcript at a time: items and requests as streams.

:func:`iter_requests` yields the distinct requests a run of ``params`` would send,
transcript by transcript: the transcript's variants are made, its part of the plan is
built (:func:`cfbench.studies.contact_center_qa.planning.plan_for` on that transcript alone)
and its requests are yielded and dropped before the next transcript is read. Requests of
different transcripts never share a prompt (every prompt holds its transcript's text), so
de-duplicating within a transcript gives exactly the run's request set, with memory flat
in the number of transcripts. ``cfbench batch plan --study contact_center_qa -f CONFIG``
feeds it to :func:`cfbench.judges.batch.plan_batch`.

``transcripts_path: synthetic`` (optionally ``synthetic:seed=S,min_turns=A,max_turns=B``)
streams the seeded synthetic generator instead of reading a file: transcript ``i`` depends
only on the seed and ``i``, and with the default settings the first 24 are the shipped set.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from collections import Counter
from typing import Any, Iterable, Iterator

from cfbench.core.errors import InputError
from cfbench.judges.base import GenerationConfig, Request, key_settings
from cfbench.studies.contact_center_qa import design as _design

__all__ = ["SYNTHETIC", "synthetic_settings", "iter_transcripts", "iter_items", "iter_requests",
           "count_requests"]

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
    """The transcripts ``params`` selects, produced lazily (:func:`.design.iter_selected` over its source)."""
    n = params.n_items
    source = iter_transcripts(params) if transcripts is None else transcripts
    synth = transcripts is None and synthetic_settings(params.transcripts_path) is not None
    if synth:  # the synthetic stream has no end: a filter that nothing passes must not loop forever
        source = itertools.islice(source, _MAX_DRAWS_PER_ITEM * max(n, 1))
    yield from _design.iter_selected(source, n, require_agent_name=params.require_agent_name,
                                     balance_label=params.balance_label or None)


def iter_requests(params: Any, *, transcripts: Iterable[Any] | None = None) -> Iterator[Request]:
    """The distinct requests a run of ``params`` sends, transcript by transcript (nothing is called).

    The same requests for every judge of ``params.judges`` (a judge enters only the cache key),
    so this yields each once; key them with ``request.cache_key(judge)``. ``transcripts``
    replaces the selection from ``params.transcripts_path`` (all of them are used, as in ``run``).
    """
    from cfbench.studies.contact_center_qa.prompts import load_rubric
    from cfbench.studies.contact_center_qa.planning import plan_for

    rubric = load_rubric()
    one = dataclasses.replace(params, judges=tuple(params.judges[:1]) or ("scripted:cc-qa",))
    coached = dataclasses.replace(one, coaching_items=1)
    plain = dataclasses.replace(one, coaching_items=0)
    items = iter_items(params) if transcripts is None else iter(transcripts)
    for index, t in enumerate(items):
        # coaching notes go to the first `coaching_items` audited items, as in the whole-run plan
        p = coached if index < params.coaching_items else plain
        _, plan = plan_for(p, [t], rubric=rubric, progress=False, request_key=_merge_key)
        yield from plan.requests[one.judges[0]]


def _merge_key(judge: str, request: Request) -> tuple:
    """Equal exactly when the cache keys of the two requests for ``judge`` are equal (the same
    inputs: settings as the backend sees them, every message field, the repeat), without the
    JSON encoding and SHA-256 of a cache key, which ``plan_batch`` computes once per request."""
    return (_settings(_backend(judge), request.config),
            tuple((m["role"], m["content"]) if len(m) == 2 and "content" in m else tuple(sorted(m.items()))
                  for m in request.messages), request.repeat)


@functools.lru_cache(maxsize=64)
def _backend(judge: str) -> str:
    from cfbench.judges.registry import parse_spec

    return parse_spec(judge)[0]


_SETTINGS: dict[tuple[int, str], tuple[GenerationConfig, str]] = {}


def _settings(backend: str, config: GenerationConfig) -> str:
    """The settings part of the cache key (:func:`cfbench.judges.base.key_settings`), as JSON,
    remembered per config object (a config may hold a JSON schema, so it is not hashable)."""
    hit = _SETTINGS.get((id(config), backend))
    if hit is not None and hit[0] is config:
        return hit[1]
    if len(_SETTINGS) > 1024:
        _SETTINGS.clear()
    text = json.dumps(key_settings(backend, config), sort_keys=True)
    _SETTINGS[(id(config), backend)] = (config, text)  # the reference keeps the id from being reused
    return text


def count_requests(params: Any, *, transcripts: Iterable[Any] | None = None) -> dict[str, Any]:
    """Stream :func:`iter_requests` and count: distinct requests per judge, per task and arm, prompt
    characters and the output-token allowance (the sum of ``max_tokens``)."""
    by: Counter = Counter()
    chars = 0
    max_out = 0
    n = 0
    for r in iter_requests(params, transcripts=transcripts):
        parts = r.request_id.split("/")  # task/question/arm/item/variant/...
        by[(parts[0], parts[2] if len(parts) > 2 else "")] += 1
        chars += sum(len(m["content"]) for m in r.messages)
        max_out += r.config.max_tokens
        n += 1
    return {"n_requests_per_judge": n, "n_judges": len(params.judges), "n_requests": n * len(params.judges),
            "prompt_chars_per_judge": chars, "max_output_tokens_per_judge": max_out,
            "by_task_arm": {f"{t}/{a}": c for (t, a), c in sorted(by.items())}}
