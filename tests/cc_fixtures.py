"""Hand-built inputs for the contact-center tests (no dependency on the perturbers)."""

from __future__ import annotations

import pandas as pd

from cfbench.schema import VARIANT_COLUMNS

BASE_TURNS = [
    {"speaker": "agent", "text": "Thanks for calling Northwind Energy, this is Maria. How can I help?"},
    {"speaker": "customer", "text": "My bill doubled this month and I do not know why."},
    {"speaker": "agent", "text": "I can look into that. Could you confirm your account number?"},
    {"speaker": "customer", "text": "It is 4471-22."},
    {"speaker": "agent", "text": "Thank you. I see an estimated reading; I have corrected it and issued a credit of $42."},
    {"speaker": "customer", "text": "Great, thanks."},
]


def _swap(turns, old, new):
    return [{"speaker": t["speaker"], "text": t["text"].replace(old, new)} for t in turns]


def variants_frame(items=("c1", "c2", "c3")) -> pd.DataFrame:
    """Original + gender (2 conditions incl. original) + past_performance (2 headers)
    + one not-applicable row, for each item."""
    rows = []
    for it in items:
        base = [{"speaker": t["speaker"], "text": t["text"] + ("" if i else f" (ref {it})")}
                for i, t in enumerate(BASE_TURNS)]
        common = dict(item_id=it, edits=[], seed=0, reason="", valid=True, rejection_reason="")
        rows.append(common | dict(dimension="original", condition="original", variant_id=f"{it}/original",
                                  operation="none", turns=base, header=None, applicable=True))
        rows.append(common | dict(dimension="gender", condition="original", variant_id=f"{it}/original",
                                  operation="none", turns=base, header=None, applicable=True))
        rows.append(common | dict(dimension="gender", condition="male", variant_id=f"{it}/gender/male",
                                  operation="turn_transformation", turns=_swap(base, "Maria", "Marco"),
                                  header=None, applicable=True))
        for cond, hdr in (("improving", "Past QA scores: 65 -> 80"), ("declining", "Past QA scores: 90 -> 75")):
            rows.append(common | dict(dimension="past_performance", condition=cond,
                                      variant_id=f"{it}/past_performance/{cond}", operation="metadata_header",
                                      turns=base, header=hdr, applicable=True))
        rows.append(common | dict(dimension="disability", condition="disabled", variant_id=f"{it}/disability/x",
                                  operation="context_injection", turns=None, header=None, applicable=False,
                                  reason="no agent turn to inject into", valid=None))
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)
