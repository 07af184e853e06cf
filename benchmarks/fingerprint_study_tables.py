"""Judge-bias, ShopFlow and identity-tone tables recomputed from a results folder's saved rows, compared with
its CSVs byte for byte.

``python benchmarks/fingerprint_study_tables.py judge_bias results/judge_bias/default``
    the per-judge tables (parse failures, position, accuracy, noise, cues, pointwise) from ``answers.csv`` and
    ``items.csv``, parameters from ``configs/judge_bias/<config>.yaml`` (the config named in summary.json);
``python benchmarks/fingerprint_study_tables.py shopflow results/shopflow/default``
    the judged part's tables from the pairs file of the config and the scores of ``judged_rows.csv``, and the
    seed part's tables from the shipped seed observations;

One line per table (``same`` / ``DIFFERENT`` / ``not in the folder``), exit status 1 on a difference. The
recomputation uses whichever table code the checkout has (the item-statistics state when the study has
``new_state``, else the older whole-frame functions), so running it on two commits compares the two paths.
Nothing is written to the folder.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _config(study: str, folder: Path) -> dict:
    import yaml

    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    name = summary.get("config", "default")
    return yaml.safe_load((REPO / "configs" / study / f"{name}.yaml").read_text(encoding="utf-8"))


def judge_bias_tables(folder: Path) -> dict:
    import pandas as pd

    from cfbench.studies.judge_bias import metrics as M
    from cfbench.studies.judge_bias.study import Params

    params = Params.from_config(_config("judge_bias", folder))
    parsed = pd.read_csv(folder / "answers.csv")
    items = pd.read_csv(folder / "items.csv")
    opts = dict(n_boot=params.n_boot, seed=params.seed)
    if hasattr(M, "new_state"):  # one implementation: item statistics -> tables
        state = M.new_state().update(parsed, items)
        return state.compute(judges=params.judges, cues=params.cues, pointwise_cues=params.pointwise_cues,
                             gate_max_net_flip=params.gate_max_net_flip,
                             gate_max_score_shift=params.gate_max_score_shift, alpha=params.alpha,
                             multiplicity=params.multiplicity, **opts)
    targets = items.set_index("item_id")["cued_candidate"]
    per = {}
    for judge in params.judges:  # the loop of the older study.run
        p = parsed[parsed["judge"] == judge].drop(columns=["judge"]).reset_index(drop=True)
        ch = M.choices(p)
        position, accuracy = M.position_table(ch, **opts), M.accuracy_table(ch, items)
        responsive = M.responsiveness_of(position, accuracy)
        t = {"parse_failures": (p.groupby(["task", "condition"])["parse_ok"].agg(n="size", parsed="sum")
                                .reset_index().assign(failures=lambda d: d["n"] - d["parsed"])),
             "position": position, "accuracy": accuracy, "noise": M.noise_table(ch),
             "cues": M.cue_table(ch, targets, params.cues, gate_max=params.gate_max_net_flip, alpha=params.alpha,
                                 multiplicity=params.multiplicity, responsive=responsive, **opts)}
        if params.pointwise_cues:
            t["pointwise"] = M.pointwise_table(p, params.pointwise_cues, alpha=params.alpha,
                                               multiplicity=params.multiplicity, gate_max=params.gate_max_score_shift,
                                               responsive=responsive, **opts)
        per[judge] = t
    out = {}
    for name in per[params.judges[0]]:
        out[name] = pd.concat([per[j][name].assign(judge=j) for j in params.judges], ignore_index=True)
        out[name] = out[name][["judge"] + [c for c in out[name].columns if c != "judge"]]
    return out


STUDIES = {"judge_bias": judge_bias_tables}


def compare(study: str, folder: Path) -> int:
    tables = STUDIES[study](folder)
    bad = 0
    for name, tab in sorted(tables.items()):
        path = folder / f"{name}.csv"
        if not path.exists():
            print(f"{name:32s} not in the folder")
            continue
        buf = io.StringIO()
        tab.to_csv(buf, index=False)
        same = buf.getvalue().encode() == path.read_bytes()
        bad += not same
        print(f"{name:32s} {'same' if same else 'DIFFERENT'}")
    print(f"{study}: {len(tables)} tables recomputed, {bad} different")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", choices=sorted(STUDIES))
    ap.add_argument("folder", type=Path)
    a = ap.parse_args()
    sys.exit(compare(a.study, a.folder))


if __name__ == "__main__":
    main()
