"""Former name of :mod:`cfbench.studies.identity_tone.prompts` (kept so existing imports keep working)."""

from .prompts import *  # noqa: F401,F403
from .prompts import __all__  # noqa: F401
