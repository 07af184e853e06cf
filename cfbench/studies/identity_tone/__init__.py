"""Identity-conditioned tone of an assistant (seed 002)."""

from . import advice  # noqa: F401  (registers the scripted test double)
