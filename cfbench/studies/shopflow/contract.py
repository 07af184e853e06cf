"""The release contract of a routing audit, and a YAML reader that refuses duplicate keys.

A contract says which gap matters (``primary_metric``), how large each gap may
be, how much support each slice needs, how gap intervals are computed
(``gap_interval``) and what must hold before release
(``release_requirements``). See ``data/contract.yaml`` for the seed's contract.

Two ways to hold a gap to its maximum, both always reported:

- **point rule** (the seed's): the observed gap is at most the maximum. Right
  for a regression check on fixed fixtures (did this judge change route
  anything it should not?), where the cases are the whole population of interest.
- **interval rule** (equivalence style): the whole confidence interval of the
  signed gap (computed on the matched pairs of the gap's own stratum) lies
  inside [−maximum, +maximum], so "the gap is small" is shown by the data
  rather than assumed from a noisy point. Right for a release claim
  about a population the pairs sample; with few pairs it fails by design,
  which is the honest answer. It gates a release only when the contract lists
  a requirement with ``source: interval_checks``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from cfbench.core.errors import InputError
from cfbench.core.files import read_yaml

__all__ = ["ReleaseRequirement", "GapInterval", "FairnessContract"]


@dataclass(frozen=True)
class ReleaseRequirement:
    """One line of a release gate.

    ``source`` is ``metric_checks`` (the point rule on the gaps),
    ``interval_checks`` (the interval rule), ``minimum_support`` (slice sizes)
    or ``attested`` (a person's sign-off, recorded in ``attested``).
    """

    name: str
    source: str
    attested: bool | None = None

    SOURCES = ("metric_checks", "interval_checks", "minimum_support", "attested")

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError("requirement needs a name", source="contract", field="release_requirements")
        if self.source not in self.SOURCES:
            raise InputError(f"source must be one of {list(self.SOURCES)}, got {self.source!r}",
                             source="contract", record=self.name, field="source")
        if self.source == "attested" and not isinstance(self.attested, bool):
            raise InputError("an attested requirement needs attested: true or false",
                             source="contract", record=self.name, field="attested")
        if self.source != "attested" and self.attested is not None:
            raise InputError("only attested requirements carry a value; computed ones are measured",
                             source="contract", record=self.name, field="attested")


@dataclass(frozen=True)
class GapInterval:
    """How the interval rule computes a gap's interval (always on the matched pairs of the gap's stratum).

    ``tango`` (the default): Tango's score interval for a difference of
    paired proportions, its bound between 0 and the estimate moved half a pair
    towards 0 (``cfbench.stats.matched.tango_interval``). It uses the pairing
    and never collapses to [0, 0]; its exact coverage at 4–200 pairs is at
    least 95.0 % (nominal 95 %) on the grid of gaps and discordance rates of
    ``benchmarks/bench_gate_shopflow.py`` (at least 94.5 % over every pair of
    rates on a 0.01 grid, ``benchmarks/bench_tango_exact.py``) and the gate
    built on it passes a true gap equal to the limit at most 2.5 % of the time
    there (2.61 % on the finer grid).
    ``exact``: the exact unconditional interval on Tango's statistic
    (``cfbench.stats.matched.exact_interval``), each bound missing at most
    2.5 % at every pair of cell rates (Tango's far bound misses up to 5 % at 8
    pairs when one kind of discordant pair is impossible), for about the same
    width from 20 pairs on and 36 pairs before anything can pass at 0.10 (35);
    at most 200 pairs per stratum (``benchmarks/bench_tango_exact.py``). Methods that failed those
    checks are refused with the reason: ``newcombe`` (two independent samples:
    ignores the pairing), ``paired_bootstrap`` (percentile: [0, 0] with no
    discordant pair, so it passed a gate on no evidence) and
    ``newcombe_paired`` (Newcombe's paired method 10: coverage down to 84–90 %
    at 4–44 pairs, false-pass up to 9 %).
    """

    method: str = "tango"
    confidence: float = 0.95

    METHODS = ("tango", "exact")
    REMOVED = {"newcombe": "it treats the two wordings as independent samples although they are the same requests",
               "paired_bootstrap": "its percentile interval is [0, 0] when no pair is discordant, so the gate "
                                   "passed on no evidence",
               "newcombe_paired": "Newcombe's paired method 10 covers as little as 84-90 % at 4-44 pairs and its "
                                  "gate passes a true gap at the limit up to 9 % of the time; see "
                                  "benchmarks/bench_gate_shopflow.py"}

    def __post_init__(self) -> None:
        if self.method in self.REMOVED:
            raise InputError(f"{self.method!r} is no longer a gap interval ({self.REMOVED[self.method]}); use "
                             f"one of {list(self.METHODS)}", source="contract", record="gap_interval",
                             field="method")
        if self.method not in self.METHODS:
            raise InputError(f"must be one of {list(self.METHODS)}, got {self.method!r}", source="contract",
                             record="gap_interval", field="method")
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or math.isnan(c) or not 0.5 <= c < 1:
            raise InputError(f"must be a number in [0.5, 1), got {c!r}", source="contract",
                             record="gap_interval", field="confidence")


_KEYS = ("primary_metric", "max_tpr_gap", "max_fpr_gap", "min_positive_per_slice", "min_negative_per_slice")
_OPTIONAL = ("release_requirements", "gap_interval")


@dataclass(frozen=True)
class FairnessContract:
    """A release contract: which gap matters, how much is tolerated, how much support, what else must hold.

    ``primary_metric`` is ``equal_opportunity`` (TPR gap primary, FPR gap a
    guardrail) or ``equalized_odds`` (both primary). Both gaps are checked
    either way; the role is reported.
    """

    primary_metric: str
    max_tpr_gap: float
    max_fpr_gap: float
    min_positive_per_slice: int
    min_negative_per_slice: int
    release_requirements: tuple[ReleaseRequirement, ...] = field(default=())
    gap_interval: GapInterval = field(default_factory=GapInterval)

    PRIMARY = ("equal_opportunity", "equalized_odds")

    def __post_init__(self) -> None:
        src = "contract"
        if self.primary_metric not in self.PRIMARY:
            raise InputError(f"must be one of {list(self.PRIMARY)}, got {self.primary_metric!r}",
                             source=src, field="primary_metric")
        for name in ("max_tpr_gap", "max_fpr_gap"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or not 0 <= v <= 1:
                raise InputError(f"must be a number in [0, 1], got {v!r}", source=src, field=name)
        for name in ("min_positive_per_slice", "min_negative_per_slice"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"must be a non-negative integer, got {v!r}", source=src, field=name)
        reqs = tuple(self.release_requirements)
        names = [r.name for r in reqs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError("requirement listed twice", source=src, record=dup, field="release_requirements")
        object.__setattr__(self, "release_requirements", reqs)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "contract") -> "FairnessContract":
        """Build a contract from a parsed mapping; every problem is an InputError naming the key."""
        if not isinstance(data, Mapping):
            raise InputError(f"expected a mapping, got {type(data).__name__}", source=source)
        known = set(_KEYS) | set(_OPTIONAL)
        unknown = sorted(set(data) - known, key=str)
        if unknown:
            raise InputError(f"unknown key (known: {sorted(known)})", source=source, field=str(unknown[0]))
        missing = [k for k in _KEYS if k not in data]
        if missing:
            raise InputError("missing", source=source, field=missing[0])
        try:
            return cls(**{k: data[k] for k in _KEYS},
                       release_requirements=_requirements(data, source),
                       gap_interval=_gap_interval(data.get("gap_interval"), source))
        except InputError as exc:
            raise InputError(exc.problem, source=source, record=exc.record, field=exc.field) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> "FairnessContract":
        """Load a contract from YAML (duplicate keys are errors), e.g. the shipped ``data/contract.yaml``."""
        return cls.from_mapping(read_yaml(path), source=str(path))


def _requirements(data: Mapping[str, Any], source: str) -> tuple[ReleaseRequirement, ...]:
    if "release_requirements" not in data:
        return ()
    items = data["release_requirements"]
    if not isinstance(items, list) or not items:
        raise InputError("must list at least one requirement (leave the key out to gate on the computed "
                         f"checks alone), got {items!r}", source=source, field="release_requirements")
    reqs = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or set(item) - {"name", "source", "attested"}:
            raise InputError("each requirement is a mapping with name, source and (if attested) attested",
                             source=source, record=f"release_requirements[{i}]", field="release_requirements")
        reqs.append(ReleaseRequirement(name=item.get("name", ""), source=item.get("source", ""),
                                       attested=item.get("attested")))
    return tuple(reqs)


def _gap_interval(value: Any, source: str) -> GapInterval:
    if value is None:
        return GapInterval()
    if not isinstance(value, Mapping) or set(value) - {"method", "confidence"}:
        raise InputError("expected a mapping with method and confidence", source=source, field="gap_interval")
    return GapInterval(**value)
