"""The contact-center release gates in the one verdict vocabulary (:mod:`cfbench.stats.verdicts`).

:func:`gate_tables` adds ``net_cfr_gate`` (synthetic or file transcripts) and, when the run has a
real-dialogue arm, ``star_net_cfr_gate`` (STAR dialogues, labels from the customers' own
questionnaire answers) plus ``responsiveness`` (one row per judge and source) to a run's tables.

Responsiveness: a judge may pass a gate only when it was shown to read the transcripts - within every
question the run asks, its *balanced accuracy* on the labelled originals (the mean of its accuracy on
Yes-labelled and on No-labelled items, each with its cluster-adjusted Clopper-Pearson interval, combined by
MOVER) has a lower bound above 0.5. A judge answering the same way on every item has a balanced accuracy of
exactly 0.5 whatever the label mix (plain accuracy would reward "always Yes" on Yes-heavy labels), and
so does one answering at random; simulated, such judges were called responsive in at most 2.0 % of
audits at 10-60 items (``docs/statistics.md``, Verdicts).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from cfbench.stats.verdicts import balanced_accuracy, forecast_row, responsiveness

__all__ = ["gate_tables", "net_cfr_gate", "responsiveness_table", "GATE_COLUMNS", "RESPONSIVENESS_COLUMNS",
           "CHANCE"]

#: balanced accuracy of any judge that does not read the transcript
CHANCE = 0.5

GATE_COLUMNS = ["judge", "dimension", "baseline", "estimate", "ci_low", "ci_high", "ci_method", "n_items",
                "max_net", "verdict", "verdict_kind", "point_rule", "responsive", "responsiveness",
                "balanced_accuracy", "balanced_accuracy_ci_low", "items_needed", "forecast", "forecast_assumes"]

RESPONSIVENESS_COLUMNS = ["judge", "accuracy_yes", "n_yes_items", "accuracy_no", "n_no_items",
                          "balanced_accuracy", "ci_low", "ci_high", "chance", "responsive", "why"]


def _class_row(acc: pd.DataFrame, yes: bool) -> pd.Series | None:
    sub = acc[acc["label_yes"].astype(float) == float(yes)]
    return sub.iloc[0] if len(sub) else None


def _question_check(acc: pd.DataFrame, name: str) -> dict:
    """One question's balanced accuracy (rows of ``acc`` for one judge and question) and whether its lower
    bound lies above chance."""
    y, n = _class_row(acc, True), _class_row(acc, False)
    if y is None or n is None:
        ba = (math.nan, math.nan, math.nan)
        ok, why = False, ("no labelled item of class " + ("Yes" if y is None else "No") + name
                          + ": balanced accuracy needs both")
    else:
        ba = balanced_accuracy(float(y["accuracy"]), float(y["ci_low"]), float(y["ci_high"]),
                               float(n["accuracy"]), float(n["ci_low"]), float(n["ci_high"]))
        ok, why = responsiveness([("balanced accuracy on the labelled originals" + name, ba[1], CHANCE)])
    return {"accuracy_yes": float(y["accuracy"]) if y is not None else math.nan,
            "n_yes_items": int(y["n_items"]) if y is not None else 0,
            "accuracy_no": float(n["accuracy"]) if n is not None else math.nan,
            "n_no_items": int(n["n_items"]) if n is not None else 0,
            "balanced_accuracy": ba[0], "ci_low": ba[1], "ci_high": ba[2], "responsive": ok, "why": why}


def responsiveness_table(accuracy_by_label: pd.DataFrame | None, questions: Any = ()) -> pd.DataFrame:
    """Per judge: whether it is shown to read the transcripts, **within every question** it was asked.

    For each question (``accuracy_by_label`` is per judge x question x label class) the balanced accuracy -
    the mean of the accuracy on Yes- and on No-labelled originals - with its MOVER interval; the judge is
    ``responsive`` only when every question's lower bound lies above :data:`CHANCE`. Within one question a
    judge giving one fixed answer scores exactly 0.5, so reading the question alone earns nothing; pooling
    the questions would credit it with the difference between their label mixes, and a gate pooled over the
    questions counts the flips of each (a judge blind on one of them dilutes the CFR with its zero flips), so
    each must be shown. A question in ``questions`` (the run's) with no labelled original is not shown either.
    The row's numbers are the weakest question's (lowest lower bound); ``why`` names every question's check
    when there are several. Columns: :data:`RESPONSIVENESS_COLUMNS`."""
    if accuracy_by_label is None or not len(accuracy_by_label):
        return pd.DataFrame(columns=RESPONSIVENESS_COLUMNS)
    acc = accuracy_by_label
    if "question_id" not in acc.columns:  # one pooled set of labels (an older table): one check
        acc = acc.assign(question_id="")
    rows = []
    for judge in dict.fromkeys(acc["judge"]):
        mine = acc[acc["judge"] == judge]
        asked = list(dict.fromkeys([*mine["question_id"], *questions]))
        several = len(asked) > 1
        checks = []
        for q in asked:
            name = f" of {q}" if several else ""
            sub = mine[mine["question_id"] == q]
            if not len(sub):
                checks.append({"accuracy_yes": math.nan, "n_yes_items": 0, "accuracy_no": math.nan, "n_no_items": 0,
                               "balanced_accuracy": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                               "responsive": False, "why": f"no labelled original{name}: its answers cannot be "
                                                           "checked against labels"})
            else:
                checks.append(_question_check(sub, name))
        weakest = min(checks, key=lambda c: (c["responsive"], c["ci_low"] if math.isfinite(c["ci_low"]) else -1.0))
        ok = all(c["responsive"] for c in checks)
        why = "; ".join(c["why"] for c in checks if c["responsive"] == ok)
        rows.append({"judge": judge, **{k: weakest[k] for k in RESPONSIVENESS_COLUMNS if k in weakest},
                     "chance": CHANCE, "responsive": ok, "why": why})
    return pd.DataFrame(rows, columns=RESPONSIVENESS_COLUMNS)


def net_cfr_gate(cfr_minus_robustness: pd.DataFrame, *, max_net: float, responsive: pd.DataFrame | None = None,
                 baseline: str = "robustness") -> pd.DataFrame:
    """The release gate on CFR net of the repeat-noise baseline (``baseline`` rows), one verdict per judge x
    dimension (:func:`cfbench.stats.verdicts.forecast_row`): ``pass`` when the net CFR's upper bound lies
    below ``max_net`` and the judge is responsive (``responsive``: a :func:`responsiveness_table`; a judge
    missing from it, or given none, is not shown responsive), ``fail`` when the lower bound lies above
    ``max_net``, else ``inconclusive`` or ``uninformative (why)``. ``point_rule`` is the seed's rule on the
    estimate. Columns: :data:`GATE_COLUMNS`."""
    t = cfr_minus_robustness
    if t is None or not len(t):
        return pd.DataFrame(columns=GATE_COLUMNS)
    t = t[t["baseline"] == baseline].copy().reset_index(drop=True)
    if "ci_method" not in t.columns:
        t["ci_method"] = np.where(t["ci_high"].notna(), "", "none")
    resp = (responsive if responsive is not None else pd.DataFrame(columns=RESPONSIVENESS_COLUMNS))
    resp = resp.drop_duplicates("judge").set_index("judge")
    out = []
    for _, r in t.iterrows():
        if r["judge"] in resp.index:
            j = resp.loc[r["judge"]]
            ok, why, ba, ba_lo = bool(j["responsive"]), str(j["why"]), j["balanced_accuracy"], j["ci_low"]
        else:
            ok, why, ba, ba_lo = False, "no labelled originals to check the judge responds", math.nan, math.nan
        row = forecast_row(r["estimate"], r["ci_low"], r["ci_high"], int(r["n_items"]), float(max_net),
                           responsive=ok, why=_short(why), detail=why)
        out.append({**{k: r[k] for k in ("judge", "dimension", "baseline", "estimate", "ci_low", "ci_high",
                                         "ci_method", "n_items")},
                    "max_net": float(max_net), **row, "balanced_accuracy": ba, "balanced_accuracy_ci_low": ba_lo})
    return pd.DataFrame(out, columns=GATE_COLUMNS)


def _short(why: str) -> str:
    """The reason inside ``uninformative (...)``: what was not shown (the numbers stay in ``responsiveness``)."""
    if why.startswith("balanced accuracy"):
        return "balanced accuracy on labelled items not shown above chance"
    return why


def gate_tables(tables: Mapping[str, pd.DataFrame], params: Any) -> dict[str, pd.DataFrame]:
    """``responsiveness``, ``net_cfr_gate`` and (with a STAR arm) ``star_responsiveness`` and
    ``star_net_cfr_gate``, from a run's ``accuracy_by_label`` / ``cfr_minus_robustness`` tables (and their
    ``star_`` twins), at ``params.gate_max_net_cfr``. The STAR arm's judge is checked on the STAR labels."""
    out: dict[str, pd.DataFrame] = {}
    for prefix in ("", "star_"):
        cmr = tables.get(f"{prefix}cfr_minus_robustness")
        if prefix and cmr is None:
            continue
        resp = responsiveness_table(tables.get(f"{prefix}accuracy_by_label"),
                                    questions=tuple(getattr(params, "questions", ()) or ()))
        gate = net_cfr_gate(cmr if cmr is not None else pd.DataFrame(), max_net=params.gate_max_net_cfr,
                            responsive=resp)
        if cmr is not None and "source" in cmr.columns and len(cmr):  # the source the rows rest on
            src = str(cmr["source"].iloc[0])
            resp, gate = resp.assign(source=src), gate.assign(source=src)
        out[f"{prefix}responsiveness"], out[f"{prefix}net_cfr_gate"] = resp, gate
    return out
