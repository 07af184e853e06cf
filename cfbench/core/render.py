"""One way to turn a transcript into text, and one tokenizer-free length estimate."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .errors import InputError

__all__ = ["render_transcript", "approx_tokens", "SPEAKER_LABELS"]

#: How each speaker is written in a rendered transcript.
SPEAKER_LABELS = {"agent": "Agent", "customer": "Customer"}


def render_transcript(turns: Sequence[Mapping[str, Any]], header: Any = None, *,
                      record: object = None) -> str:
    """Render turns (``{"speaker": "agent"|"customer", "text": ...}``) as plain text.

    ``header`` (metadata shown above the dialogue) is a string as is, a mapping
    as ``key: value`` lines, ``None`` or empty for no header; a blank line
    separates it from the dialogue. Runs of white space inside a turn become
    one space. A turn with an unknown speaker or no text is an
    :class:`~cfbench.core.errors.InputError` naming ``record``.

    >>> print(render_transcript([{"speaker": "agent", "text": "Hi, I'm Ana."},
    ...                          {"speaker": "customer", "text": "Hello."}], header="Agent role: Trainee."))
    Agent role: Trainee.
    <BLANKLINE>
    Agent: Hi, I'm Ana.
    Customer: Hello.
    """
    if turns is None or len(turns) == 0:
        raise InputError("transcript has no turns", record=record, field="turns")
    lines = []
    if header is not None and not (isinstance(header, float) and math.isnan(header)):
        if isinstance(header, Mapping):
            lines.extend(f"{k}: {v}" for k, v in header.items())
        elif isinstance(header, str):
            if header.strip():
                lines.append(header.strip())
        else:
            raise InputError(f"header must be a string or mapping, got {type(header).__name__}",
                             record=record, field="header")
        if lines:
            lines.append("")
    for i, t in enumerate(turns):
        speaker = str(t.get("speaker", "")).strip().lower()
        if speaker not in SPEAKER_LABELS:
            raise InputError(f"turn {i}: unknown speaker {t.get('speaker')!r}", record=record,
                             field="turns")
        text = t.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"turn {i}: empty text", record=record, field="turns")
        lines.append(f"{SPEAKER_LABELS[speaker]}: {' '.join(text.split())}")
    return "\n".join(lines)


def approx_tokens(text: str) -> int:
    """Whitespace words times 1.3, rounded up: a tokenizer-free token estimate for English.

    >>> approx_tokens("one two three")
    4
    """
    return int(math.ceil(len(text.split()) * 1.3))
