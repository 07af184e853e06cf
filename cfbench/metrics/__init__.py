"""Metrics: pure functions on tidy frames. Never imports judges or tasks.

- counterfactual: flip rates (CFR), mean absolute score differences (MASD), robustness
- groups: per-slice selection/TPR/FPR, gaps, Wilson and Newcombe intervals, calibration, intersections
- lexicon, sentiment, refusal: text measures of a reply's tone and access
- state: per-item statistics as mergeable state (``ItemState``: update / merge / compute), the one way a
  study's tables are made whatever the run's size
"""

from .counterfactual import *  # noqa: F401,F403
from .groups import *  # noqa: F401,F403
from .lexicon import *  # noqa: F401,F403
from .refusal import *  # noqa: F401,F403
from .sentiment import *  # noqa: F401,F403
from .state import *  # noqa: F401,F403
from . import counterfactual, groups, lexicon, refusal, sentiment, state

__all__ = (
    counterfactual.__all__ + groups.__all__ + lexicon.__all__
    + refusal.__all__ + sentiment.__all__ + state.__all__
)
