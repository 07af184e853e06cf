"""Contact-center Auto-QA fairness (seed 000)."""

from . import coaching, qa  # noqa: F401  (register the scripted test doubles)
