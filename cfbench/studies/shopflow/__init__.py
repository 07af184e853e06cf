"""ShopFlow matched-pair routing audit (seed 001)."""

from . import readiness  # noqa: F401  (registers the scripted test double)


def shipped(name: str):
    """Path of a file shipped with the study (``pairs.jsonl``, ``contract.yaml``, ``seed_observations.csv``)."""
    from pathlib import Path

    return Path(__file__).resolve().parent / "data" / name
