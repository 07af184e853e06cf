"""Judge-bias, ShopFlow and identity-tone tables recomputed from a results folder's saved rows, compared with
its CSVs byte for byte.

``python benchmarks/fingerprint_study_tables.py judge_bias results/judge_bias/default``
    the per-judge tables (parse failures, position, accuracy, noise, cues, pointwise) from ``answers.csv`` and
    ``items.csv``, parameters from ``configs/judge_bias/<config>.yaml`` (the config named in summary.json);
``python benchmarks/fingerprint_study_tables.py shopflow results/shopflow/default``
    the judged part's tables from the pairs file of the config and the scores of ``judged_rows.csv``, and the
    seed part's tables from the shipped seed observations;
``python benchmarks/fingerprint_study_tables.py identity_tone results/identity_tone/default``
    the fresh audit's tables (and per-reply scores) from ``fresh_responses.csv``, parameters from summary.json,
    and the reproduction's tables from the released workbook (``CFBENCH_AMIRI_PATH``) when it is found.

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


def _shopflow_scored(params, folder: Path):
    """The judged pairs of the folder's run with the scores of its ``judged_rows.csv`` (the parse outcome of
    each reply made again from its saved columns)."""
    import pandas as pd

    import cfbench.studies.shopflow.study as S
    from cfbench.studies.shopflow import readiness as R

    pairs = S._judged_pairs(params)
    jr = pd.read_csv(folder / "judged_rows.csv")
    if len(pd.read_csv(folder / "judged_excluded.csv")):
        raise SystemExit("the folder has excluded pairs, whose replies judged_rows.csv does not keep")
    parsed = pd.DataFrame({"request_id": [R.request_id(p, v, params.prompt) for p, v in zip(jr["pair_id"], jr["variant"])],
                           "raw": jr["raw"], "score": jr["score"], "score_source": jr["score_source"], "parse_ok": True,
                           "yes_no_mass": jr["yes_no_mass"], "error": None})
    return pairs, R.attach_scores(pairs, parsed, prompt=params.prompt, variants=list(params.variants))


def shopflow_tables(folder: Path) -> dict:
    import cfbench.studies.shopflow.study as S
    from cfbench.studies.shopflow import FairnessContract

    params = S.Params.from_config(_config("shopflow", folder))
    contract = FairnessContract.from_yaml(params.path("contract_path"))
    result = S.ShopflowResult(params=params)
    S._seed_part(params, contract, result)  # the seed part reads the shipped observations only
    pairs, scored = _shopflow_scored(params, folder)
    vs = list(params.variants)
    if hasattr(S, "judged_rows"):  # one implementation: per-pair statistics -> tables
        t = S._computed(contract, *S.judged_rows(pairs, scored), thresholds=params.sweep_thresholds(),
                        **S._audit_kw(params, "judged")).tables
        judged = {f"judged_{k}": t[k] for k in ("rows",) + S._PART_TABLES + (
            "threshold_sweep", "pairwise_gaps", "excluded", "score_by_variant")}
    else:  # the table lines of the older _judged_part
        from cfbench.studies.shopflow.gate import audit_pairs
        from cfbench.studies.shopflow.policy import threshold_sweep

        audit = audit_pairs(scored.frame, contract, threshold=params.judged_threshold, variants=vs,
                            calibration_edges=params.judged_calibration_edges,
                            calibration_min_support=params.calibration_min_support)
        rows = audit.routed.merge(scored.parsed[["pair_id", "variant", "score_source", "yes_no_mass", "raw"]],
                                  on=["pair_id", "variant"], how="left")
        cols = ["pair_id", "variant", "expected_ready", "channel", "score", "score_source", "yes_no_mass", "route",
                "raw"]
        rows = rows[cols + [c for c in ("review_note",) if c in rows.columns]]
        judged = {"judged_rows": rows, "judged_rates": audit.rates.reset_index(), "judged_flips": audit.flips,
                  "judged_rate_intervals": audit.rate_intervals(), "judged_checks": audit.checks,
                  "judged_interval_checks": audit.interval_checks, "judged_stratum_tests": audit.stratum_tests,
                  "judged_support": audit.support.reset_index(), "judged_calibration": audit.calibration,
                  "judged_intersections": audit.intersections, "judged_attribution": audit.attribution,
                  "judged_threshold_sweep": threshold_sweep(scored.frame, params.sweep_thresholds(), variants=vs),
                  "judged_pairwise_gaps": audit.gaps, "judged_excluded": scored.excluded,
                  "judged_score_by_variant": rows.groupby(["variant", "expected_ready"])["score"].describe().reset_index()}
    return {**result.tables, **judged}


def identity_tone_tables(folder: Path) -> dict:
    """The fresh audit's tables from the folder's ``fresh_responses.csv``, and the released-data reproduction's
    from the seed's workbook (it reads no row of the folder) when the workbook is found."""
    import pandas as pd

    from cfbench.studies.identity_tone import audit as A
    from cfbench.studies.identity_tone import prompts as P
    from cfbench.studies.identity_tone.study import Params

    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    params = Params.from_config(summary["params"])
    responses = pd.read_csv(folder / "fresh_responses.csv", keep_default_na=False, na_values=[""])
    responses["truncated"] = pd.array(responses["truncated"], dtype="boolean")
    audit = A.analyse_responses(responses, lexicons={"described": P.load_lexicons(), "as_run": P.load_as_run_terms()},
                                seed=params.seed, n_resamples=params.n_resamples, cap=params.completion_cap)
    out = {**audit.tables, **{f"fresh_{k}": v for k, v in audit.frames.items()}}
    if summary.get("released_data_available"):  # the reproduction, from the seed's workbook when it is here
        from cfbench.io import amiri
        from cfbench.studies.identity_tone.reproduction import reproduce_released

        try:
            wb = amiri.load_amiri(params.amiri_path or None)
        except FileNotFoundError as exc:
            print(f"reproduction not recomputed: {exc}")
        else:
            out.update(reproduce_released(wb, as_run_terms=P.load_as_run_terms(), described_lexicons=P.load_lexicons(),
                                          seed=params.seed, n_resamples=params.n_resamples).tables)
    return out


STUDIES = {"judge_bias": judge_bias_tables, "shopflow": shopflow_tables, "identity_tone": identity_tone_tables}


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
