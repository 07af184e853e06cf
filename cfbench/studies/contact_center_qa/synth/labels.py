"""Ground-truth label ids shared with the QA rubric.

The synthetic generator labels each transcript for the rubric questions that
are objectively decidable by construction. The QA task module uses the same
ids for its rubric questions, so labels and judge answers join on them.
A label is ``"Yes"`` or ``"No"``; the meaning of *Yes* is given below.
"""

from __future__ import annotations

__all__ = ["LABEL_QUESTIONS", "LABEL_MEANINGS", "ISSUE_RESOLUTION", "GREETING_NAME",
           "PII_DISCLOSURE", "WORK_AVOIDANCE"]

ISSUE_RESOLUTION = "issue_resolution"
GREETING_NAME = "greeting_name"
PII_DISCLOSURE = "pii_disclosure"
WORK_AVOIDANCE = "work_avoidance"

#: Question ids with ground truth in the synthetic set, in a fixed order.
LABEL_QUESTIONS: tuple[str, ...] = (ISSUE_RESOLUTION, GREETING_NAME, PII_DISCLOSURE, WORK_AVOIDANCE)

#: What a "Yes" means for each id (how the generator decides the label).
LABEL_MEANINGS: dict[str, str] = {
    ISSUE_RESOLUTION: "the agent fixes the customer's problem during the call and the customer accepts it",
    GREETING_NAME: "the agent's opening turn gives the agent's own name",
    PII_DISCLOSURE: ("the agent states a piece of the customer's personal data (date of birth, phone, "
                     "address, member or policy number) before the customer has provided it"),
    WORK_AVOIDANCE: "the agent declines to look into the problem at all and sends the customer elsewhere",
}
