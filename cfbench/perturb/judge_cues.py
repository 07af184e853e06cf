"""Registers every judge-bias cue (one module each) and lists them in battery order."""

from __future__ import annotations

from . import judge_cue_agent_identity, judge_cue_authority, judge_cue_bandwagon, judge_cue_position, judge_cue_source, judge_cue_verbosity  # noqa: F401
from .judge_cue_base import CandidateCue, CandidatePair, CueGuardError, content_guard, cue_phrases, cues, get_cue

__all__ = ["BATTERY", "CandidateCue", "CandidatePair", "CueGuardError", "content_guard", "cue_phrases", "cues", "get_cue"]

#: The cues in table order.
BATTERY = ("position", "verbosity", "authority", "source", "bandwagon", "agent_identity")
