"""The explorer's pair protocol: what a study hands to the page (see ``docs/view.md``).

A study that wants its runs browsable provides one function, ``explorer_pairs(folder) -> PairSet | None``,
reachable as an attribute of its package (``cfbench.studies.<name>.explorer_pairs``, or the module a
plugin's ``cfbench.studies`` entry point names). It reads the study's own files in a results folder and
says, for every compared pair:

``pair_id``
    a readable id, unique in the set (deep links are ``view.html#pair=<id>``);
``arm``
    the part of the study design the pair comes from (e.g. ``synthetic`` / ``STAR``, a task name);
``kind``
    what the comparison measures: ``counterfactual`` (the two inputs differ by the studied edit) or
    ``noise`` (the same question asked again: a repeat, another temperature or wording, the study's
    noise reference); a study may use other words;
``side_a`` / ``side_b``
    the two conditions' names (``original`` -> ``male``, ``formal`` -> ``conversational``);
``facets``
    name -> one categorical value per pair (the page's filters: judge, dimension, question, ...);
``diffs``
    :class:`Texts` shown as a word-level diff (the two inputs; a study may diff replies too);
``outputs``
    :class:`Texts` shown side by side (replies as the judge or model wrote them);
``metrics``
    :class:`Metric` per side (numbers get a Δ and a sort; words get same/differs);
``flags``
    :class:`Flag` booleans per pair, each with its own filter words (flipped, parse failure, cut reply);
``reasons``
    per pair, the words that explain its flags (``""`` for none): why a pair is flagged, where a reply was
    cut, which way a flip went;
``notes``
    page-level sentences: what the folder lacks and what the page therefore cannot show.

Every list has one entry per pair; :meth:`PairSet.check` says which field of which pair is wrong.
This module and the page know no study; the readers live with the studies.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from cfbench.core.errors import InputError

__all__ = ["PairSet", "Texts", "Metric", "Flag", "study_of", "final_name", "unique_ids", "read_csv",
           "read_parquet", "need", "folder_file", "missing"]


@dataclass
class Texts:
    """Two texts per pair under one label (``a`` and ``b`` have one entry per pair; None = not recorded)."""

    label: str
    a: list[Any]
    b: list[Any]


@dataclass
class Metric:
    """One quantity per side; ``kind`` is ``num`` (Δ and sort) or ``str`` (same / differs)."""

    name: str
    kind: str
    a: list[Any]
    b: list[Any]


@dataclass
class Flag:
    """A boolean per pair with the words its filter uses: ``label`` (the filter), ``yes`` and ``no``."""

    name: str
    values: list[bool]
    label: str = ""
    yes: str = ""
    no: str = ""

    def __post_init__(self) -> None:
        self.label = self.label or self.name.replace("_", " ")
        self.yes = self.yes or self.label
        self.no = self.no or f"not {self.label}"


@dataclass
class PairSet:
    """Every compared pair of one results folder, as a study describes them (one list entry per pair)."""

    pair_id: list[str]
    arm: list[Any]
    kind: list[Any]
    side_a: list[Any]
    side_b: list[Any]
    facets: dict[str, list[Any]] = field(default_factory=dict)
    diffs: list[Texts] = field(default_factory=list)
    outputs: list[Texts] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    reasons: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    #: said in a pair's detail when its two diffed inputs are the same text
    same_input_note: str = "the two inputs are identical"

    def __len__(self) -> int:
        return len(self.pair_id)

    def check(self, source: str = "explorer pairs") -> "PairSet":
        """Raise :class:`InputError` naming the first field whose length or kind is wrong; else return self."""
        n = len(self.pair_id)
        if self.reasons is None:
            self.reasons = [""] * n
        lists: list[tuple[str, Sequence[Any]]] = [("arm", self.arm), ("kind", self.kind), ("side_a", self.side_a),
                                                  ("side_b", self.side_b), ("reasons", self.reasons)]
        lists += [(f"facets.{k}", v) for k, v in self.facets.items()]
        for group, items in (("diffs", self.diffs), ("outputs", self.outputs), ("metrics", self.metrics)):
            for t in items:
                lists += [(f"{group}.{t.label if hasattr(t, 'label') else t.name}.a", t.a),
                          (f"{group}.{t.label if hasattr(t, 'label') else t.name}.b", t.b)]
        lists += [(f"flags.{f.name}", f.values) for f in self.flags]
        for name, values in lists:
            if len(values) != n:
                raise InputError(f"has {len(values)} entries for {n} pairs", source=source, field=name)
        for m in self.metrics:
            if m.kind not in ("num", "str"):
                raise InputError(f"kind must be num or str, got {m.kind!r}", source=source, field=f"metrics.{m.name}")
        if len(set(self.pair_id)) != n:
            dup = next(p for p in self.pair_id if self.pair_id.count(p) > 1)
            raise InputError("pair ids must be unique (use unique_ids)", source=source, record=str(dup),
                             field="pair_id")
        return self

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per pair (for reading, tests and export; the page packs the columns)."""
        self.check()
        out = []
        for i in range(len(self)):
            out.append({
                "pair_id": self.pair_id[i], "arm": self.arm[i], "kind": self.kind[i],
                "side_a": self.side_a[i], "side_b": self.side_b[i],
                "facets": {k: v[i] for k, v in self.facets.items()},
                "diffs": {t.label: [t.a[i], t.b[i]] for t in self.diffs},
                "outputs": {t.label: [t.a[i], t.b[i]] for t in self.outputs},
                "metrics": {m.name: [m.a[i], m.b[i]] for m in self.metrics},
                "flags": [f.name for f in self.flags if f.values[i]],
                "reasons": (self.reasons or [""] * len(self))[i]})
        return out

    @classmethod
    def concat(cls, sets: "Sequence[PairSet]") -> "PairSet":
        """One set of the pairs of ``sets`` (e.g. one per arm), in order: facets, texts, metrics and flags
        matched by name; a set without one gets None (False for a flag) on its pairs."""
        sets = [x.check() for x in sets]
        n = [len(x) for x in sets]

        def merged(attr: str, key: str, make: Any) -> list[Any]:
            names = list(dict.fromkeys(getattr(t, key) for x in sets for t in getattr(x, attr)))
            out = []
            for name in names:
                found = [next((t for t in getattr(x, attr) if getattr(t, key) == name), None) for x in sets]
                out.append(make(name, found))
            return out

        def side(found: list[Any], k: int, f: str, fill: Any) -> list[Any]:
            return [v for t, m in zip(found, n) for v in (getattr(t, f) if t is not None else [fill] * m)]

        first = lambda found: next(t for t in found if t is not None)  # noqa: E731
        return cls(
            pair_id=[v for x in sets for v in x.pair_id], arm=[v for x in sets for v in x.arm],
            kind=[v for x in sets for v in x.kind], side_a=[v for x in sets for v in x.side_a],
            side_b=[v for x in sets for v in x.side_b],
            facets={k: [v for x, m in zip(sets, n) for v in x.facets.get(k, [None] * m)]
                    for k in dict.fromkeys(k for x in sets for k in x.facets)},
            diffs=merged("diffs", "label", lambda name, f: Texts(name, side(f, 0, "a", None), side(f, 0, "b", None))),
            outputs=merged("outputs", "label", lambda name, f: Texts(name, side(f, 0, "a", None),
                                                                     side(f, 0, "b", None))),
            metrics=merged("metrics", "name", lambda name, f: Metric(name, first(f).kind, side(f, 0, "a", None),
                                                                     side(f, 0, "b", None))),
            flags=merged("flags", "name", lambda name, f: Flag(name, side(f, 0, "values", False), first(f).label,
                                                               first(f).yes, first(f).no)),
            reasons=[v for x in sets for v in (x.reasons or [""] * len(x))],
            notes=[v for x in sets for v in x.notes], same_input_note=sets[0].same_input_note if sets else "")

    def flag(self, name: str) -> list[bool]:
        """The values of flag ``name`` (KeyError when the set has no such flag)."""
        for f in self.flags:
            if f.name == name:
                return f.values
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# helpers a study's reader may use (files only)


_STAGING = re.compile(r"^\.(.+)\.(?:staging|old)-[A-Za-z0-9_]+$")


def final_name(name: str) -> str:
    """A results folder's name as its readers know it: ``.default.staging-obvk503_`` -> ``default``."""
    m = _STAGING.match(name)
    return m.group(1) if m else name


def folder_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` when it is a file that stays inside ``folder`` (a link out of it is not read)."""
    p = folder / name
    if not p.is_file():
        return None
    try:
        p.resolve().relative_to(folder.resolve())
    except ValueError:
        return None
    return p


def missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    return data if isinstance(data, dict) else {"value": data}


def study_of(folder: str | os.PathLike[str]) -> str:
    """The study that wrote ``folder``: ``run_info.json``'s ``study``, else ``summary.json``'s, else ""."""
    d = Path(folder)
    for name in ("run_info.json", "summary.json"):
        p = folder_file(d, name)
        if p is not None:
            s = read_json(p).get("study")
            if isinstance(s, str) and s:
                return s
    return ""


def read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=True)
    except Exception as exc:  # pandas' parser errors name no record; say the file
        raise InputError(f"cannot read as CSV: {' '.join(str(exc).split())[:200]}", source=str(path)) from None


def read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:
        raise InputError(f"cannot read as parquet: {' '.join(str(exc).split())[:200]}", source=str(path)) from None


def need(frame: pd.DataFrame, cols: Sequence[str], source: Path) -> None:
    """Raise :class:`InputError` naming the first column of ``cols`` that ``frame`` lacks."""
    miss = [c for c in cols if c not in frame.columns]
    if miss:
        raise InputError(f"missing column(s) {', '.join(miss)}", source=str(source), field=miss[0])


def unique_ids(ids: Sequence[str]) -> list[str]:
    """``ids`` with a ``#2``, ``#3`` ... suffix on repeats, so every id is unique."""
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        n = seen.get(i, 0)
        seen[i] = n + 1
        out.append(i if n == 0 else f"{i}#{n + 1}")
    return out
