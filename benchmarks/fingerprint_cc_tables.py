"""Contact-center tables recomputed from a results folder's judged rows, compared with its CSVs.

Two uses, both printing one line per table (``same`` / ``DIFFERENT``) and exiting non-zero on a difference:

``python benchmarks/fingerprint_cc_tables.py results/contact_center_qa/default``
    reads ``rows.parquet`` and ``judgments.parquet`` of a committed live run (the variants are made again
    from its parameters and checked against ``variants.parquet``),
    recomputes every main-arm table (the ``star_*`` tables rest on STAR rows the folder does not keep, and
    the warnings' STAR rows likewise) and compares each CSV byte for byte with the committed one.

``python benchmarks/fingerprint_cc_tables.py --smoke OUT``
    runs the smoke config with the scripted judge into ``OUT`` (no model), then does the same on ``OUT``:
    run twice, on two commits, and ``diff -r`` the two folders' CSVs to compare the code paths.

The recomputation uses whichever table code the checkout has: the item-statistics state
(``tables.new_state``) when it exists, else the older in-memory ``tables.study_tables``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _tables(rows, judgments, variants, params):
    import cfbench.studies.contact_center_qa.study as S
    import cfbench.studies.contact_center_qa.tables as T
    from cfbench.perturb import DIMENSIONS, rejection_table
    from cfbench.studies.contact_center_qa import figures as F
    from cfbench.studies.contact_center_qa.params import dims_of

    dims = dims_of(params)
    if hasattr(T, "new_state"):  # one implementation: item statistics -> tables
        state = T.new_state().update(rows, judgments, variants)
        tables = state.compute(n_boot=params.n_boot, seed=params.seed)
        return S.finish_tables(tables, params, state.stats.flags, state.stats.frame("variants"))
    tables = S._order_columns(T.study_tables(rows, n_boot=params.n_boot, seed=params.seed))
    labels = {d: DIMENSIONS[d].label for d in dims}
    tables["judge_means"] = T.judge_means(rows, n_boot=params.n_boot, seed=params.seed)
    tables["net_cfr_gate"] = T.net_cfr_gate(tables["cfr_minus_robustness"], max_net=params.gate_max_net_cfr)
    tables["variant_rejections"] = rejection_table(variants)
    tables["parse_rates"] = S._parse_rates(judgments)
    tables["table2"] = F.table2(tables["cfr"], tables["masd"], tables["robustness"], tables["accuracy"],
                                dimensions=dims, labels=labels).reset_index()
    tables = S._in_judge_order(tables, list(params.judges))
    tables["warnings"] = S.drop_warnings(params, dims, variants, rows, tables)
    return tables


def compare(folder: Path) -> int:
    import pandas as pd

    import cfbench.studies.contact_center_qa.study as S
    from cfbench.studies.contact_center_qa import Params

    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    params = Params.from_config(summary["params"])
    rows = pd.read_parquet(folder / "rows.parquet")
    judgments = pd.read_parquet(folder / "judgments.parquet")
    # the folder's variants.parquet is the explorer's copy (no applicable/valid columns): make the variants
    # again from the parameters (seeded, no model) for the rejection table and the warnings
    from cfbench.studies.contact_center_qa.items import load_items
    from cfbench.studies.contact_center_qa.requests import plan_for

    variants = plan_for(params, load_items(params), progress=False)[0]
    kept = (pd.read_parquet(folder / "variants.parquet", columns=["variant_id"]) if
            (folder / "variants.parquet").is_file() else variants)
    if sorted(kept["variant_id"]) != sorted(variants["variant_id"]):
        print("the variants made again differ from the folder's variants.parquet")
        return 1
    tables = S._with_source(_tables(rows, judgments, variants, params), summary.get("source", "synthetic"))
    bad = 0
    for name, tab in sorted(tables.items()):
        path = folder / f"{name}.csv"
        if not path.exists():
            print(f"{name:28s} not in the folder")
            continue
        committed = path.read_bytes()
        if name == "warnings":  # keep the main arm's rows (the STAR arm's come from rows not kept here)
            w = pd.read_csv(path, keep_default_na=False)
            n_main = int((~w["message"].astype(str).str.startswith(("STAR arm:", "real-dialogue arm"))).sum())
            committed = b"".join(committed.splitlines(keepends=True)[: n_main + 1])
        buf = io.StringIO()
        tab.to_csv(buf, index=False)
        same = buf.getvalue().encode() == committed
        bad += not same
        print(f"{name:28s} {'same' if same else 'DIFFERENT'}")
    print(f"{len(tables)} tables recomputed, {bad} different")
    return 1 if bad else 0


def smoke(out: Path) -> int:
    """The smoke config, two scripted judges, into ``out`` (fresh cache under ``out``)."""
    import yaml

    os.environ["CFBENCH_CACHE_DIR"] = str(out / "cache")
    from cfbench.studies.contact_center_qa import Params, run

    m = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "smoke.yaml").read_text())
    m["judges"] = ["scripted:cc-qa", "scripted:cc-coach"]  # two judges: judge_differences has rows
    params = Params.from_config(m)
    run(params, out / "run", progress=False, say_warnings=False, config_name="smoke")
    print(f"wrote {out / 'run'}")
    return compare(out / "run")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--smoke", type=Path, help="run the smoke config (scripted judge) into this folder first")
    a = ap.parse_args()
    sys.exit(smoke(a.smoke) if a.smoke else compare(a.folder))


if __name__ == "__main__":
    main()
