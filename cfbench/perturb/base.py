"""Perturber base class, the variant record, and the dimension registry.

A *dimension* (one row of the seed's tables) has a fixed set of conditions,
an operation (turn transformation, context injection, metadata header) and a
*compared set*: the conditions whose pairwise differences a metric averages.
A :class:`Perturber` makes the variant of one transcript for one condition.

Randomness: every random choice draws from :func:`item_rng`, seeded by
``(seed, item_id, *parts)``, so the same (seed, item) always gives the same
variant regardless of what else is in the batch.
"""

from __future__ import annotations

import functools
from types import ModuleType
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import yaml

from cfbench.core.paths import package_text
from cfbench.core.seeding import rng_for

__all__ = ["Dimension", "Description", "Variant", "Perturber", "register", "DIMENSIONS", "TABLE_DIMENSIONS",
           "get_perturber", "perturbers", "load_plugins", "dimension_ids", "count_sentence", "dimension", "item_rng", "load_data", "OPERATIONS"]

#: Operation ids (the seed's three operations, plus "none" for an untouched condition).
OPERATIONS = ("turn_transformation", "context_injection", "metadata_header", "none")


@dataclass(frozen=True)
class Dimension:
    """One counterfactual dimension.

    ``conditions`` lists every condition a variant is made for; ``compared``
    the ones metrics compare pairwise (for the style dimensions that is all
    three of neutral / original / marked, as in the seed's Table 4).
    """

    id: str
    label: str
    category: str  # "identity" | "context" | "style" | "extra"
    operation: str
    conditions: tuple[str, ...]
    compared: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Description:
    """What a perturber does, frozen: recorded (as ``name@version``) on every
    variant row it makes, so a row says which code and data produced it.

    ``parameters`` are the settings that shape its output (data-file versions
    included); bump ``version`` whenever the behaviour changes.
    """

    name: str
    version: int
    does: str
    parameters: tuple[tuple[str, Any], ...] = ()

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "does": self.does,
                "parameters": dict(self.parameters)}


@dataclass
class Variant:
    """What a perturber returns for one (transcript, condition).

    ``turns`` is a list of ``{"speaker", "text"}`` dicts (``None`` when not
    applicable); ``edits`` a list of ``{"turn", "op", "speaker", "before",
    "after"}`` with ``op`` "replace" (``turn`` indexes both versions) or
    "insert" (``turn`` indexes the variant). ``checks`` carries extra guard
    inputs (e.g. a name that must no longer appear).
    """

    turns: list[dict[str, str]] | None
    header: str | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    operation: str = "turn_transformation"
    applicable: bool = True
    reason: str = ""
    llm_made: bool = False
    checks: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def not_applicable(cls, reason: str, operation: str) -> "Variant":
        return cls(turns=None, header=None, edits=[], operation=operation, applicable=False, reason=reason)


class Perturber:
    """Base class: subclasses set ``dimension`` and ``version`` and implement :meth:`perturb`.

    ``perturb(transcript, ident, condition, seed=...)`` takes a
    :class:`cfbench.io.transcripts.Transcript` and the turn identification
    (:class:`cfbench.perturb.identify.TurnIdentification`) and returns a :class:`Variant`.
    """

    dimension: Dimension
    version: int = 1

    def parameters(self) -> Mapping[str, Any]:
        """Settings that shape the output (override to add data versions etc.)."""
        return {}

    @property
    def description(self) -> Description:
        return Description(name=self.dimension.id, version=self.version, does=self.dimension.description,
                           parameters=tuple(sorted(self.parameters().items())))

    def perturb(self, transcript: Any, ident: Any, condition: str,
                *, seed: int) -> Variant:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dimension.id!r})"


_REGISTRY: dict[str, Perturber] = {}
#: Dimension id -> :class:`Dimension`, in table order.
DIMENSIONS: dict[str, Dimension] = {}

#: The 15 table rows (seed Tables 2 and 10), in the seed's order.
TABLE_DIMENSIONS: tuple[str, ...] = (
    "gender", "ethnicity_name", "ethnicity_cues", "religion_name", "religion_cues", "disability",
    "past_performance", "agent_profile", "customer_profile", "priming", "contextual_metadata",
    "directness", "politeness", "formality", "emotional_labor",
)


def register(perturber: "Perturber | type[Perturber]") -> Perturber:
    """Add a perturber (and its dimension) to the registry; a class is instantiated.

    A plugin package calls this when imported, or names the perturber under the
    ``cfbench.perturbers`` entry-point group (see :mod:`cfbench.plugins`).
    """
    if isinstance(perturber, type) and issubclass(perturber, Perturber):
        perturber = perturber()
    if not isinstance(perturber, Perturber) or not isinstance(getattr(perturber, "dimension", None), Dimension):
        raise TypeError(f"register() takes a Perturber with a Dimension, got {perturber!r}")
    dim = perturber.dimension
    if dim.operation not in OPERATIONS:
        raise ValueError(f"dimension {dim.id!r}: operation {dim.operation!r} is not one of {OPERATIONS}")
    if not set(dim.compared) <= set(dim.conditions):
        raise ValueError(f"dimension {dim.id!r}: compared {dim.compared} not within conditions {dim.conditions}")
    _REGISTRY[dim.id] = perturber
    DIMENSIONS[dim.id] = dim
    return perturber


_PLUGINS_LOADED = False


def load_plugins() -> None:
    """Register the dimensions of installed plugins (entry-point group ``cfbench.perturbers``) and
    import the modules ``CFBENCH_PLUGINS`` names; once per process, on first use of the registry.

    An entry point may name a :class:`Perturber` (instance or class), a list of them, or a module
    that registers its perturbers when imported.
    """
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from cfbench import plugins

    builtin = set(_REGISTRY)  # cfbench's own dimensions: a plugin never replaces one
    plugins.load_env_plugins()
    owners: dict[str, list[tuple[Any, Perturber]]] = {}
    for ep, obj in plugins.load_entry_points("cfbench.perturbers", builtin=builtin):
        items = obj if isinstance(obj, (list, tuple)) else [obj]
        try:
            made = [item() if isinstance(item, type) and issubclass(item, Perturber) else item for item in items]
        except Exception as exc:  # noqa: BLE001 - a plugin's constructor
            plugins.disable(ep, f"its perturber cannot be made: {type(exc).__name__}: {exc}")
            continue
        bad = [m for m in made if not isinstance(m, (Perturber, ModuleType))
               or (isinstance(m, Perturber) and not isinstance(getattr(m, "dimension", None), Dimension))]
        if bad:
            plugins.disable(ep, f"{ep.value!r} is a {type(bad[0]).__name__}, not a Perturber or a module")
            continue
        for m in made:
            if isinstance(m, Perturber):
                owners.setdefault(m.dimension.id, []).append((ep, m))
    for dim_id, entries in owners.items():
        eps = {(ep.name, ep.value) for ep, _ in entries}
        for ep, m in entries:
            if dim_id in builtin:
                plugins.disable(ep, f"its dimension {dim_id!r} is built into cfbench and is not replaced; "
                                    "give it another id")
            elif len(eps) > 1:
                plugins.disable(ep, f"its dimension {dim_id!r} is also defined by another plugin entry point; "
                                    "neither is used until one is renamed")
            else:
                try:
                    register(m)
                except (TypeError, ValueError) as exc:
                    plugins.disable(ep, str(exc))


def get_perturber(dimension_id: str) -> Perturber:
    load_plugins()
    if dimension_id not in _REGISTRY:
        raise KeyError(f"unknown dimension {dimension_id!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[dimension_id]


def perturbers() -> dict[str, Perturber]:
    """Dimension id -> registered perturber (a copy), plugins included."""
    load_plugins()
    return dict(_REGISTRY)


def dimension_ids(*, table_only: bool = False) -> list[str]:
    """Registered dimension ids (plugins included): the table rows first in table order, then the rest
    in registration order; ``table_only`` gives the table rows alone."""
    load_plugins()
    rows = [d for d in TABLE_DIMENSIONS if d in _REGISTRY]
    return rows if table_only else rows + [d for d in _REGISTRY if d not in TABLE_DIMENSIONS]


def count_sentence() -> str:
    """How README and the docs say how many dimensions there are, from the registry: e.g.
    "13 dimensions (15 rows)" - identity dimensions with a name and a cue variant share a dimension."""
    rows = dimension_ids(table_only=True)
    families = {r.removesuffix("_name").removesuffix("_cues") for r in rows}
    return f"{len(families)} dimensions ({len(rows)} rows)"


def dimension(dimension_id: str) -> Dimension:
    return get_perturber(dimension_id).dimension


def item_rng(seed: int, item_id: str, *parts: object) -> np.random.Generator:
    """A generator seeded by ``(seed, item_id, *parts)`` through SHA-256 (no global state)."""
    return rng_for(int(seed), item_id, *parts)


@functools.lru_cache(maxsize=None)
def load_data(name: str) -> Any:
    """Parse ``cfbench/data/perturb/<name>`` (YAML), cached."""
    text = package_text(f"data/perturb/{name}")
    return yaml.safe_load(text)


def pick(rng: np.random.Generator, seq: list[Any] | tuple[Any, ...]) -> Any:
    return seq[int(rng.integers(len(seq)))]


PerturbFn = Callable[..., Variant]
