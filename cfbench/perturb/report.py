"""Measure the perturbers on a corpus: applicability, guard catch rate, gold agreement.

``python -m cfbench.perturb.report STAR_DIR [--gold tests/gold/star_variants.csv]
[--sample-out sample.csv] [--seed 0]`` prints three tables:

* applicability: per dimension, the share of dialogues with at least one
  applicable variant, and the counts of made / valid variants;
* guard catch: every valid variant that edits turns (and a sample of header
  variants) is corrupted in each applicable way (see :func:`corruptions`), the
  corruption *declared* as an ordinary edit so that only the content and
  edit-scope guards can catch it; the table counts how many the guards reject;
* gold: for the hand-annotated sample, per dimension the share of valid variants
  that change anything beyond the intended edit (target 0). Gold rows carry a
  hash of the variant, so a stale annotation is reported, never silently reused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from cfbench.core.seeding import rng_for
from cfbench.core.text import csv_text
from cfbench.io.transcripts import Transcript

from .base import Variant
from .validate import check_variant

__all__ = ["applicability_table", "corruptions", "guard_catch_table", "variant_hash", "gold_sample",
           "gold_table", "GOLD_COLUMNS", "main"]

GOLD_COLUMNS = ["variant_id", "dimension", "condition", "variant_hash", "changes_beyond_intended", "note"]


def variant_hash(row: Any) -> str:
    """A short hash of what a variant row says (turns, header), to pin a gold annotation to it."""
    payload = json.dumps({"turns": row["turns"], "header": row["header"]}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def applicability_table(variants: pd.DataFrame) -> pd.DataFrame:
    """Per dimension: dialogues, share with an applicable variant, variants made / valid."""
    df = variants[variants["dimension"] != "original"]
    n_items = variants["item_id"].nunique()
    rows = []
    for dim, g in df.groupby("dimension", sort=False):
        made = g[g["applicable"].astype(bool) & (g["operation"] != "none")]
        rows.append({"dimension": dim, "n_dialogues": n_items,
                     "applies_pct": round(100.0 * made["item_id"].nunique() / n_items, 1) if n_items else float("nan"),
                     "n_made": len(made), "n_valid": int(made["valid"].astype(bool).sum())})
    return pd.DataFrame(rows)


_WORD = re.compile(r"\b[a-z]{4,}\b")


def _edited_turns(row: Any) -> list[int]:
    return sorted({int(e["turn"]) for e in row["edits"] if e.get("op", "replace") == "replace"})


def _replace_in_turn(turns: list[dict[str, str]], i: int, new_text: str) -> list[dict[str, str]]:
    out = [dict(t) for t in turns]
    out[i]["text"] = new_text
    return out


def corruptions(original: Transcript, row: Any, rng: np.random.Generator) -> list[tuple[str, Variant]]:
    """Corrupted copies of a valid variant row, each declared as an ordinary edit.

    Kinds: ``word_swapped`` (a lower-case word of an edited turn replaced by
    another word), ``word_dropped`` (one dropped), ``number_changed`` (a number of
    an edited turn bumped), ``question_lost`` ("?" -> "."), ``other_turn`` (a word
    changed in a turn the variant did not touch).
    """
    turns = row["turns"]
    edited = _edited_turns(row)
    inserted = {int(e["turn"]) for e in row["edits"] if e.get("op") == "insert"}
    checks = dict(row["checks"]) if "checks" in row else {}
    out: list[tuple[str, Variant]] = []
    original_index = [k for k in range(len(turns)) if k not in inserted]

    def make(kind: str, i: int, new_text: str) -> None:
        new_turns = _replace_in_turn(turns, i, new_text)
        oi = original_index.index(i)
        edits = [e for e in row["edits"] if not (e.get("op", "replace") == "replace" and int(e["turn"]) == oi)]
        edits.append({"turn": oi, "op": "replace", "speaker": turns[i]["speaker"], "before": original.turns[oi].text,
                      "after": new_text})
        # a corruption inside a declared turn keeps the variant's declared targets; one elsewhere declares its turn
        ch = dict(checks)
        if kind == "other_turn" and ch.get("target_turns") is not None:
            ch["target_turns"] = sorted(set(ch["target_turns"]) | {oi})
        out.append((kind, Variant(new_turns, header=row["header"], edits=edits, operation=row["operation"],
                                  checks=ch)))

    def vidx(oi: int) -> int:
        return original_index[oi]

    for i in edited:
        text = turns[vidx(i)]["text"]
        words = [m for m in _WORD.finditer(text)]
        if words:
            m = words[int(rng.integers(len(words)))]
            make("word_swapped", vidx(i), text[:m.start()] + ("blue" if m.group(0) != "blue" else "green") + text[m.end():])
            m = words[int(rng.integers(len(words)))]
            make("word_dropped", vidx(i), re.sub(r"\s{2,}", " ", text[:m.start()] + text[m.end():]).strip())
        num = re.search(r"\d+", text)
        if num:
            make("number_changed", vidx(i), text[:num.start()] + str(int(num.group(0)) + 7) + text[num.end():])
        if "?" in text:
            make("question_lost", vidx(i), text.replace("?", ".", 1))
        break  # one edited turn per variant
    untouched = [k for k in range(len(original.turns)) if k not in edited and _WORD.search(original.turns[k].text)]
    if untouched:
        k = untouched[int(rng.integers(len(untouched)))]
        text = original.turns[k].text
        m = list(_WORD.finditer(text))
        m = m[int(rng.integers(len(m)))]
        make("other_turn", vidx(k), text[:m.start()] + ("blue" if m.group(0) != "blue" else "green") + text[m.end():])
    return out


def guard_catch_table(transcripts: Iterable[Transcript], variants: pd.DataFrame, checks: dict[str, dict],
                      *, seed: int = 0, max_per_dimension: int = 400) -> pd.DataFrame:
    """Per (dimension, corruption kind): how many corrupted variants the guards reject."""
    by_id = {t.id: t for t in transcripts}
    rows = []
    valid = variants[variants["valid"].astype(bool) & (variants["operation"] != "none")
                     & (variants["dimension"] != "original")]
    for dim, g in valid.groupby("dimension", sort=False):
        rng = rng_for(seed, "corrupt", dim)
        take = g if len(g) <= max_per_dimension else g.iloc[np.sort(rng.choice(len(g), max_per_dimension, replace=False))]
        for _, r in take.iterrows():
            row = dict(r)
            row["checks"] = checks.get(r["variant_id"], {})
            for kind, v in corruptions(by_id[r["item_id"]], row, rng):
                problems = check_variant(by_id[r["item_id"]], v)
                rows.append({"dimension": dim, "kind": kind, "rejected": bool(problems)})
    df = pd.DataFrame(rows, columns=["dimension", "kind", "rejected"])
    tab = df.groupby(["dimension", "kind"], sort=False)["rejected"].agg(n="size", n_rejected="sum").reset_index()
    tab["rejected_pct"] = (100.0 * tab["n_rejected"] / tab["n"]).round(1)
    return tab


def gold_sample(variants: pd.DataFrame, *, per_dimension: dict[str, int], seed: int = 0) -> pd.DataFrame:
    """A seeded sample of valid variants to annotate: ``GOLD_COLUMNS`` with the judgement left empty."""
    parts = []
    for dim, n in per_dimension.items():
        g = variants[(variants["dimension"] == dim) & variants["valid"].astype(bool)
                     & (variants["operation"] != "none")]
        if g.empty:
            continue
        rng = rng_for(seed, "gold", dim)
        idx = np.sort(rng.choice(len(g), min(n, len(g)), replace=False))
        parts.append(g.iloc[idx])
    s = pd.concat(parts) if parts else variants.iloc[:0]
    out = pd.DataFrame({"variant_id": s["variant_id"], "dimension": s["dimension"], "condition": s["condition"],
                        "variant_hash": [variant_hash(r) for _, r in s.iterrows()],
                        "changes_beyond_intended": "", "note": ""})
    return out.reset_index(drop=True)


def gold_table(gold: pd.DataFrame, variants: pd.DataFrame) -> pd.DataFrame:
    """Per dimension: annotated valid variants, how many change anything beyond the intended edit, and stale rows."""
    cur = variants.set_index("variant_id")
    rows = []
    for dim, g in gold.groupby("dimension", sort=False):
        stale = [v for v, h in zip(g["variant_id"], g["variant_hash"])
                 if v not in cur.index or variant_hash(cur.loc[v]) != h]
        ok = g[~g["variant_id"].isin(stale)]
        beyond = (ok["changes_beyond_intended"].str.lower() == "yes").sum()
        rows.append({"dimension": dim, "n_annotated": len(ok), "n_beyond_intended": int(beyond),
                     "beyond_pct": round(100.0 * beyond / len(ok), 1) if len(ok) else float("nan"),
                     "n_stale": len(stale)})
    return pd.DataFrame(rows)


def _checks_of(transcripts: list[Transcript], variants: pd.DataFrame, seed: int) -> dict[str, dict]:
    """Re-run the perturbers to get each variant's ``checks`` (they are not frame columns)."""
    from .base import get_perturber
    from .identify import identify_turns

    out: dict[str, dict] = {}
    dims = [d for d in variants["dimension"].unique() if d != "original"]
    for t in transcripts:
        ident = identify_turns(t)
        for d in dims:
            p = get_perturber(d)
            for c in p.dimension.conditions:
                out[f"{t.id}::{d}::{c}"] = p.perturb(t, ident, c, seed=seed).checks
    return out


def main(argv: list[str] | None = None) -> int:
    from cfbench.io.star import load_star

    from ._variants import make_variants

    ap = argparse.ArgumentParser(prog="python -m cfbench.perturb.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("star_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gold", help="annotated gold CSV (GOLD_COLUMNS)")
    ap.add_argument("--sample-out", help="write a fresh sample to annotate here")
    ap.add_argument("--per-dimension", type=int, default=12)
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ts = load_star(args.star_dir, skip_empty=True)
    v = make_variants(ts, seed=args.seed, progress=False)
    pd.set_option("display.width", 200)
    print(f"# {len(ts)} dialogues, {len(v)} variant rows (seed {args.seed})\n")
    print("## Applicability\n")
    print(applicability_table(v).to_markdown(index=False))
    print("\n## Guard catch (corrupted valid variants)\n")
    catch = guard_catch_table(ts, v, _checks_of(ts, v, args.seed), seed=args.seed)
    print(catch.to_markdown(index=False))
    tot = catch[["n", "n_rejected"]].sum()
    print(f"\nall corruptions: {int(tot['n_rejected'])} of {int(tot['n'])} rejected "
          f"({100.0 * tot['n_rejected'] / max(1, tot['n']):.1f} %)")
    if args.sample_out:
        dims = [d for d in v["dimension"].unique() if d != "original"]
        sample = gold_sample(v, per_dimension={d: args.per_dimension for d in dims}, seed=args.seed)
        Path(args.sample_out).write_text(csv_text(sample), encoding="utf-8")
        print(f"\nsample to annotate written to {args.sample_out}")
    if args.gold:
        gold = pd.read_csv(args.gold, dtype=str, keep_default_na=False)
        print("\n## Gold: valid variants that change anything beyond the intended edit\n")
        gt = gold_table(gold, v)
        print(gt.to_markdown(index=False))
        print(f"\ntotal: {int(gt['n_beyond_intended'].sum())} of {int(gt['n_annotated'].sum())} annotated; "
              f"stale: {int(gt['n_stale'].sum())}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
