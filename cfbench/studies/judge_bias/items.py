"""Items of the judge-bias battery: a conversation up to a customer turn and two candidate agent replies.

From STAR (raw JSON, read through :func:`cfbench.io.star.star_dialogue` for
the turns): the reply the wizard actually sent (``pick_suggestion``) against

* ``draft``   - the wizard's own typed draft for that turn (``request_suggestions``
  text), a real human alternative; drafts equal to the sent reply after
  normalising (case, punctuation, spacing) are skipped;
* ``control`` - an agent reply from another point of the same dialogue (at
  least two agent turns away, different text), a known-worse candidate: the
  judge should prefer the real reply.

Without STAR the shipped synthetic contact-center calls give ``control`` items
only (the actual next agent turn vs an agent turn from elsewhere in the call; one
point per call, then further points of the same calls when more items are asked).
Selection is seeded: dialogues are shuffled by ``(seed, "dialogues")`` and one
point per dialogue is drawn by ``(seed, dialogue id, kind)``; an item whose
context and replies repeat an earlier one (STAR has templated openings) is skipped.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cfbench.core.errors import InputError
from cfbench.core.files import read_text
from cfbench.core.seeding import rng_for
from cfbench.io.star import SPEAKER_OF, TURN_ACTIONS, star_dialogue
from cfbench.io.transcripts import load_transcripts

__all__ = ["Item", "items_from_pairs", "normalise", "star_points", "star_items", "synthetic_items", "load_items", "SYNTHETIC_PATH",
           "default_star_dir"]

#: The synthetic contact-center calls shipped with cfbench (read by path; no study import).
SYNTHETIC_PATH = Path(__file__).resolve().parents[1] / "contact_center_qa" / "data" / "synthetic_transcripts.jsonl"
KINDS = ("draft", "control")


@dataclass(frozen=True)
class Item:
    item_id: str
    source: str  # "star" | "synthetic"
    dialogue_id: str
    kind: str  # "draft" | "control"
    context: tuple[tuple[str, str], ...]  # (speaker, text), ends with a customer turn
    real: str  # the reply actually sent
    alt: str  # the draft or the control reply

    def to_row(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "source": self.source, "dialogue_id": self.dialogue_id, "kind": self.kind,
                "n_context_turns": len(self.context), "last_customer_turn": self.context[-1][1],
                "real": self.real, "alt": self.alt}


def normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces (used to compare a draft with the sent reply)."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def default_star_dir() -> Path:
    """``$CFBENCH_STAR_DIR`` if set, else ``<project>/../shared/data/star/dialogues``."""
    env = os.environ.get("CFBENCH_STAR_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3].parent / "shared" / "data" / "star" / "dialogues"


def star_points(obj: dict[str, Any], *, source: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Turns of one STAR dialogue and its candidate points.

    A point is an agent ``pick_suggestion`` turn that follows a customer turn:
    ``{"turn": index of the sent reply, "draft": the wizard's typed draft or None}``.
    """
    star_dialogue(obj, source=source)  # validates every event (InputError names file, event, field)
    turns: list[tuple[str, str]] = []
    points: list[dict[str, Any]] = []
    draft: str | None = None
    for ev in obj["Events"]:
        agent, action = ev["Agent"], ev["Action"]
        if agent == "Wizard" and action == "request_suggestions":
            text = ev.get("Text")
            draft = text.strip() if isinstance(text, str) and text.strip() else None
            continue
        if action not in TURN_ACTIONS or agent not in SPEAKER_OF:
            continue
        speaker, text = SPEAKER_OF[agent], ev["Text"].strip()
        if action == "pick_suggestion" and turns and turns[-1][0] == "customer":
            points.append({"turn": len(turns), "draft": draft})
        if speaker == "customer":
            draft = None
        turns.append((speaker, text))
    return turns, points


def _control(turns: list[tuple[str, str]], at: int, rng: np.random.Generator) -> str | None:
    """An agent reply at least two agent turns away from ``at`` whose text differs from the real one."""
    agent_idx = [i for i, (s, _) in enumerate(turns) if s == "agent"]
    pos = agent_idx.index(at)
    real = normalise(turns[at][1])
    far = [i for k, i in enumerate(agent_idx) if abs(k - pos) >= 2 and normalise(turns[i][1]) != real
           and normalise(turns[i][1])]
    if not far:
        return None
    return turns[far[int(rng.integers(len(far)))]][1]


def _context(turns: list[tuple[str, str]], at: int, context_turns: int) -> tuple[tuple[str, str], ...]:
    return tuple(turns[max(0, at - context_turns):at])


def star_items(star_dir: str | os.PathLike[str], *, n_draft: int, n_control: int, seed: int,
               context_turns: int = 6) -> list[Item]:
    """``n_draft`` draft items and ``n_control`` control items from distinct STAR dialogues (seeded)."""
    files = sorted(Path(star_dir).glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise InputError("no *.json STAR dialogue in the folder", source=str(star_dir), record="<folder>")
    order = rng_for(seed, "dialogues").permutation(len(files))
    need = {"draft": n_draft, "control": n_control}
    out: list[Item] = []
    seen: set[tuple] = set()  # the same context and replies in two dialogues would be the same prompt twice
    for j in order:
        if all(v == 0 for v in need.values()):
            break
        f = files[int(j)]
        try:
            obj = json.loads(read_text(f))
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg}, line {exc.lineno})", source=str(f), record="<file>") from None
        if not any(isinstance(e, dict) and e.get("Action") in TURN_ACTIONS for e in obj.get("Events") or []):
            continue  # a dialogue without turns (load_star skips these too)
        turns, points = star_points(obj, source=str(f))
        did = f"star-{obj['DialogueID']}"
        # one item per dialogue: the kind still most needed (draft first), then a seeded point
        for kind in sorted(need, key=lambda k: -need[k]):
            if need[kind] == 0:
                continue
            rng = rng_for(seed, did, kind)
            if kind == "draft":
                ok = [p for p in points if p["draft"] and normalise(p["draft"]) != normalise(turns[p["turn"]][1])
                      and normalise(p["draft"])]
                if not ok:
                    continue
                p = ok[int(rng.integers(len(ok)))]
                alt = p["draft"]
            else:
                if not points:
                    continue
                p = points[int(rng.integers(len(points)))]
                alt = _control(turns, p["turn"], rng)
                if alt is None:
                    continue
            item = Item(f"{did}-{kind}", "star", did, kind, _context(turns, p["turn"], context_turns),
                        turns[p["turn"]][1], alt)
            key = (tuple((sp, normalise(t)) for sp, t in item.context), normalise(item.real), normalise(item.alt))
            if key in seen:
                continue
            seen.add(key)
            out.append(item)
            need[kind] -= 1
            break
    if any(need.values()):
        raise InputError(f"only {n_draft - need['draft']} draft and {n_control - need['control']} control items "
                         f"found (asked {n_draft} and {n_control})", source=str(star_dir), record="<folder>",
                         field="n_draft/n_control")
    return out


def synthetic_items(path: str | os.PathLike[str] = SYNTHETIC_PATH, *, n_control: int, seed: int,
                    context_turns: int = 6) -> list[Item]:
    """``n_control`` control items from the synthetic calls (they have no drafts), seeded: one point per call
    first; when more items are asked than there are calls, further rounds take another point of each call
    (ids ``<call>-control``, then ``<call>-control2``, ...)."""
    calls = load_transcripts(path)
    order = rng_for(seed, "dialogues").permutation(len(calls))
    out: list[Item] = []
    used: dict[str, set[int]] = {}
    for rnd in range(1, 100):
        added = 0
        for j in order:
            if len(out) == n_control:
                break
            t = calls[int(j)]
            turns = [(turn.speaker, turn.text) for turn in t.turns]
            pts = [i for i in range(1, len(turns)) if turns[i][0] == "agent" and turns[i - 1][0] == "customer"
                   and i not in used.get(t.id, set())]
            rng = rng_for(seed, t.id, "control") if rnd == 1 else rng_for(seed, t.id, "control", rnd)
            if not pts:
                continue
            at = pts[int(rng.integers(len(pts)))]
            used.setdefault(t.id, set()).add(at)
            alt = _control(turns, at, rng)
            if alt is None:
                continue
            out.append(Item(f"{t.id}-control" + (f"{rnd}" if rnd > 1 else ""), "synthetic", t.id, "control",
                            _context(turns, at, context_turns), turns[at][1], alt))
            added += 1
        if len(out) == n_control or not added:
            break
    if len(out) < n_control:
        raise InputError(f"only {len(out)} control items found (asked {n_control})", source=str(path),
                         record="<file>", field="n_control")
    return out


def load_items(star_path: str, *, n_draft: int, n_control: int, seed: int, context_turns: int
               ) -> tuple[list[Item], str, str]:
    """Items and which source ran: ``(items, "star" | "synthetic", why)``.

    ``star_path``: "" = :func:`default_star_dir` when it exists, else the synthetic calls;
    "none" = the synthetic calls; any other value must be a STAR folder (missing is an error).
    """
    if star_path == "none":
        return (synthetic_items(n_control=n_draft + n_control, seed=seed, context_turns=context_turns),
                "synthetic", "star_path is 'none'")
    folder = Path(star_path) if star_path else default_star_dir()
    if folder.is_dir():
        return (star_items(folder, n_draft=n_draft, n_control=n_control, seed=seed, context_turns=context_turns),
                "star", f"STAR dialogues found ({folder.name}/)")
    if star_path:
        raise InputError("is not a folder of STAR dialogues", source="parameters", field="star_path")
    return (synthetic_items(n_control=n_draft + n_control, seed=seed, context_turns=context_turns), "synthetic",
            "no STAR folder beside the project; the synthetic calls have no drafts, so every item is a control")


def items_from_pairs(pairs: Any, *, source: str = "pairs") -> list[Item]:
    """Items from the caller's own pairs (see :func:`cfbench.studies.judge_bias.study.audit`); every
    problem is an InputError naming the record and field."""
    out: list[Item] = []
    seen: set[str] = set()
    for k, rec in enumerate(pairs):
        rid = str(rec.get("id", f"pair{k}")) if isinstance(rec, dict) else f"pair{k}"
        if not isinstance(rec, dict):
            raise InputError("must be a mapping", source=source, record=rid)
        if not re.fullmatch(r"[A-Za-z0-9_.:-]+", rid) or rid in seen:
            raise InputError("must be unique and use only letters, digits and _ . : -", source=source, record=rid,
                             field="id")
        seen.add(rid)
        ctx = rec.get("context")
        if not isinstance(ctx, list) or not ctx:
            raise InputError("must be a non-empty list of {speaker, text} turns", source=source, record=rid,
                             field="context")
        turns = []
        for j, t in enumerate(ctx):
            if not (isinstance(t, dict) and t.get("speaker") in ("agent", "customer") and isinstance(t.get("text"), str)
                    and t["text"].strip()):
                raise InputError("must be {speaker: agent|customer, text: non-empty}", source=source, record=rid,
                                 field=f"context[{j}]")
            turns.append((t["speaker"], t["text"].strip()))
        if turns[-1][0] != "customer":
            raise InputError("must end with a customer turn", source=source, record=rid, field="context")
        for f in ("reply", "alternative"):
            if not isinstance(rec.get(f), str) or not rec[f].strip():
                raise InputError("is missing or empty", source=source, record=rid, field=f)
        if normalise(rec["reply"]) == normalise(rec["alternative"]):
            raise InputError("is the same text as reply (after normalising)", source=source, record=rid,
                             field="alternative")
        kind = rec.get("kind", "alternative")
        if not isinstance(kind, str):
            raise InputError("must be a string", source=source, record=rid, field="kind")
        out.append(Item(rid, "user", rid, kind, tuple(turns), rec["reply"].strip(), rec["alternative"].strip()))
    if len(out) < 2:
        raise InputError(f"needs at least 2 pairs, got {len(out)}", source=source, record="<all>")
    return out
