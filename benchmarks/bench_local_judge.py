"""The embedded local judge on the shipped synthetic transcripts: speed and KV-prefix reuse.

Part A (tokenizer only, no model compute): the whole contact-center plan
(every table dimension, two QA questions, fairness arm, coaching notes,
robustness repeats) is tokenized exactly as the local backend does (chat
template, special tokens) and its KV reuse is replayed: a prompt re-evaluates
everything after the longest prefix it shares with the previous prompt,
rounded down to whole ``n_batch`` blocks (the backend's history-independent
rule). Reported: prompt tokens sent vs evaluated in the runner's order, in a
seeded random order and without reuse; and per dimension the predicted cost
of a variant judged right after its original, relative to the original judged
after another transcript.

Part B (the real model, a few minutes): for ``--dimensions`` on ``--items``
transcripts and one QA question, each original is judged after an unrelated
transcript and its variants right after it. Reported: judgments per minute,
prompt tokens evaluated vs sent (checked against Part A's replay), and
variant cost ÷ original cost over the dimension, in wall time and in
evaluated tokens. Target: <= 0.40.

Usage: ``python benchmarks/bench_local_judge.py [--items 2] [--dimensions gender politeness]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
from _common import REPO, contact_center_plan, header

SPEC = "local:qwen2.5-coder-1.5b"


class Tokenizer:
    """The local backend's prompt tokens, from a vocab-only load of the same GGUF."""

    def __init__(self, n_batch: int = 128):
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from cfbench.judges.llama_cpu import load_cpu_backend
        from cfbench.judges.local import ensure_embedded_model

        load_cpu_backend()  # a `make install` build has no CPU backend until one is loaded
        self.llm = Llama(model_path=str(ensure_embedded_model()), vocab_only=True, verbose=False)
        meta = self.llm.metadata
        eos = self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos_id = self.llm.token_bos()
        bos = self.llm.detokenize([bos_id], special=True).decode("utf-8", errors="ignore") if bos_id >= 0 else ""
        self.fmt = Jinja2ChatFormatter(template=meta["tokenizer.chat_template"], eos_token=eos, bos_token=bos)
        self.n_batch = n_batch

    def tokens(self, request) -> list[int]:
        prompt = self.fmt(messages=list(request.messages)).prompt
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def evaluated(self, prev: list[int] | None, cur: list[int]) -> int:
        """Tokens the backend computes for ``cur`` right after ``prev`` (mirror of LocalJudge._eval_prompt)."""
        if not prev:
            return len(cur)
        shared = 0
        for a, b in zip(prev, cur):
            if a != b:
                break
            shared += 1
        shared = min(shared, len(cur) - 1)
        shared -= shared % self.n_batch
        return len(cur) - shared


def replay_order(tok: Tokenizer, toks: list[list[int]]) -> int:
    total, prev = 0, None
    for t in toks:
        total += tok.evaluated(prev, t)
        prev = t
    return total


def part_a(tok: Tokenizer, n_items: int | None) -> pd.DataFrame:
    from cfbench.judges.base import Judge

    plan, transcripts, variants = contact_center_plan(SPEC, n_items=n_items)
    reqs = plan.requests[SPEC]
    t0 = time.perf_counter()
    toks = {r.request_id: tok.tokens(r) for r in reqs}
    t_tok = time.perf_counter() - t0
    sent = sum(len(t) for t in toks.values())
    runner_order = sorted(reqs, key=Judge().order_key)  # what run_requests does for the local backend
    rng = np.random.default_rng(0)
    shuffled = [reqs[i] for i in rng.permutation(len(reqs))]
    ev_runner = replay_order(tok, [toks[r.request_id] for r in runner_order])
    ev_random = replay_order(tok, [toks[r.request_id] for r in shuffled])
    print(f"Part A: contact-center plan, {len(transcripts)} transcripts, {len(reqs)} distinct prompts "
          f"(tokenized in {t_tok:.1f} s)")
    print(f"  prompt tokens sent:                      {sent:>10,}")
    print(f"  evaluated, runner order (prefix-sorted): {ev_runner:>10,}   EVALUATED/SENT = {ev_runner / sent:.3f}")
    print(f"  evaluated, seeded random order:          {ev_random:>10,}   evaluated/sent = {ev_random / sent:.3f}")
    print(f"  at ~70 prompt tok/s: {sent / 70 / 3600:.1f} h without reuse, {ev_runner / 70 / 3600:.1f} h in runner order")

    # per dimension: variant right after its original vs original right after another transcript
    rows = plan.rows
    qa = rows[(rows["task"] == "qa") & (rows["arm"] == "baseline") & (rows["repeat"] == 0)]
    originals = qa[qa["condition"] == "original"].drop_duplicates(["item_id", "question_id"])
    orig_id = {(r.item_id, r.question_id): r.request_id for r in originals.itertuples()}
    items = sorted(originals["item_id"].unique())
    other = {it: items[(k + 1) % len(items)] for k, it in enumerate(items)}
    out = []
    for r in qa[(qa["condition"] != "original") & ~qa["dimension"].isin(["original"])
                & ~qa["dimension"].str.startswith("robustness")].itertuples():
        o = orig_id.get((r.item_id, r.question_id))
        o_prev = orig_id.get((other[r.item_id], r.question_id))
        if o is None or o_prev is None or o == r.request_id:
            continue
        cost_o = tok.evaluated(toks[o_prev], toks[o])
        cost_v = tok.evaluated(toks[o], toks[r.request_id])
        # what-if: the same rule with finer blocks, and token-exact reuse (the bound for prefix reuse)
        whatif = {}
        for nb in (32, 1):
            saved, tok.n_batch = tok.n_batch, nb
            whatif[nb] = (tok.evaluated(toks[o_prev], toks[o]), tok.evaluated(toks[o], toks[r.request_id]))
            tok.n_batch = saved
        shared = next((i for i, (a, b) in enumerate(zip(toks[o], toks[r.request_id])) if a != b),
                      min(len(toks[o]), len(toks[r.request_id])))
        out.append({"dimension": r.dimension, "item_id": r.item_id, "variant": r.variant_id,
                    "len": len(toks[r.request_id]), "first_diff": shared, "orig_cost": cost_o, "var_cost": cost_v,
                    "orig_32": whatif[32][0], "var_32": whatif[32][1], "orig_1": whatif[1][0], "var_1": whatif[1][1]})
    per = pd.DataFrame(out)
    table = per.groupby("dimension").agg(n=("variant", "size"), first_diff=("first_diff", "mean"),
                                         prompt_len=("len", "mean"), orig_cost=("orig_cost", "sum"),
                                         var_cost=("var_cost", "sum"), orig_32=("orig_32", "sum"),
                                         var_32=("var_32", "sum"), orig_1=("orig_1", "sum"), var_1=("var_1", "sum"))
    table["predicted_ratio"] = table["var_cost"] / table["orig_cost"]
    table["ratio_if_block_32"] = table["var_32"] / table["orig_32"]
    table["ratio_if_token_exact"] = table["var_1"] / table["orig_1"]
    total = table[["var_cost", "orig_cost", "var_32", "orig_32", "var_1", "orig_1"]].sum()
    table = table.drop(columns=["orig_32", "var_32", "orig_1", "var_1"])
    table = table.join(_header_last_ratios(tok, variants, qa, orig_id, other, toks))
    print("  predicted prompt cost of a variant after its original, relative to the original (QA, baseline arm):")
    with pd.option_context("display.width", 250):
        print(table.sort_values("predicted_ratio").to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"  all dimensions: VARIANT/ORIGINAL = {total['var_cost'] / total['orig_cost']:.2f} with the backend's "
          f"{tok.n_batch}-token blocks, {total['var_32'] / total['orig_32']:.2f} with 32-token blocks, "
          f"{total['var_1'] / total['orig_1']:.2f} with token-exact reuse (the limit of prefix reuse for this layout)")
    return table


def _header_last_ratios(tok: Tokenizer, variants: pd.DataFrame, qa: pd.DataFrame, orig_id: dict, other: dict,
                        toks: dict) -> pd.Series:
    """What-if for the metadata dimensions: the header placed after the dialogue instead of above it
    (seed 000 allows "before or after the transcript" for contextual metadata; Operation 3 prepends)."""
    from cfbench.studies.contact_center_qa.qa import format_transcript, load_rubric, qa_messages

    from cfbench.judges import Request

    rubric = load_rubric().set_index("question_id")
    vrow = variants.set_index("variant_id")
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in qa[(qa["condition"] != "original") & ~qa["dimension"].str.startswith("robustness")].itertuples():
        v = vrow.loc[r.variant_id]
        if v["header"] is None or (isinstance(v["header"], float) and np.isnan(v["header"])):
            continue
        head = format_transcript([{"speaker": "agent", "text": "x"}], v["header"]).rsplit("\n", 1)[0].strip()
        text = format_transcript(list(v["turns"]), None) + "\n\n" + head
        q = dict(rubric.loc[r.question_id]) | {"question_id": r.question_id}
        var = tok.tokens(Request("w", qa_messages(text, q, mode="compact")))
        o, o_prev = orig_id.get((r.item_id, r.question_id)), orig_id.get((other[r.item_id], r.question_id))
        if o is None or o_prev is None:
            continue
        acc = out[r.dimension]
        acc[0] += tok.evaluated(toks[o], var)
        acc[1] += tok.evaluated(toks[o_prev], toks[o])
        saved, tok.n_batch = tok.n_batch, 1
        acc[2] += tok.evaluated(toks[o], var)
        acc[3] += tok.evaluated(toks[o_prev], toks[o])
        tok.n_batch = saved
    return pd.DataFrame({d: {"ratio_if_header_last": a / b, "ratio_if_header_last_token_exact": c / e}
                         for d, (a, b, c, e) in out.items()}).T


def part_b(tok: Tokenizer, dims: list[str], n_items: int, question: str) -> pd.DataFrame:
    from cfbench.judges import judge_for
    from cfbench.judges.base import GenerationConfig
    from cfbench.perturb import DIMENSIONS
    from cfbench.studies.contact_center_qa.qa import format_transcript, load_rubric, qa_config, qa_request

    plan, transcripts, variants = contact_center_plan("scripted:cc-qa", n_items=n_items + 1, dimensions=dims,
                                                      fairness=False, coaching=False, repeats=0)
    rubric = load_rubric().set_index("question_id")
    q = dict(rubric.loc[question]) | {"question_id": question}
    cfg = qa_config("compact", GenerationConfig(temperature=0.0, max_tokens=10, seed=0))
    judge = judge_for(SPEC)
    v = variants[variants["applicable"].astype(bool) & variants["valid"].fillna(True).astype(bool)]
    items = [t.id for t in transcripts]
    spare, audited = items[-1], items[:-1]

    def req(row, tag):
        text = format_transcript(list(row.turns), row.header, record=row.variant_id)
        return qa_request(f"{tag}/{row.variant_id}", text, q, mode="compact", config=cfg)

    spare_row = next(v[(v["item_id"] == spare) & (v["condition"] == "original")].itertuples())
    records = []
    t_all = time.perf_counter()
    n_done = 0
    for dim in dims:
        compared = DIMENSIONS[dim].compared
        for item in audited:
            sub = v[(v["item_id"] == item) & (v["dimension"] == dim)]
            orig = next(v[(v["item_id"] == item) & (v["condition"] == "original")].itertuples())
            seq = [("spare", req(spare_row, f"spare-{dim}-{item}"))]
            seq.append(("original", req(orig, dim)))
            seq += [("variant", req(r, dim)) for r in sub.itertuples()
                    if r.condition != "original" and r.condition in compared]
            prev = None
            for kind, r in seq:
                expected = tok.evaluated(prev, tok.tokens(r)) if prev is not None else None
                t0 = time.perf_counter()
                resp = judge.complete(r)
                wall = time.perf_counter() - t0
                prev = tok.tokens(r)
                if kind != "spare":
                    n_done += 1
                    records.append({"dimension": dim, "item_id": item, "kind": kind, "request_id": r.request_id,
                                    "wall_s": wall, "prompt_tokens": resp.prompt_tokens,
                                    "evaluated": resp.prompt_tokens_evaluated, "expected": expected,
                                    "completion_tokens": resp.completion_tokens, "text": resp.text.strip()})
                    print(f"    {dim:<18} {item} {kind:<8} {wall:6.2f} s  {resp.prompt_tokens_evaluated:>5} of "
                          f"{resp.prompt_tokens:>5} prompt tokens evaluated  -> {resp.text.strip()[:20]!r}",
                          flush=True)
    t_total = time.perf_counter() - t_all
    df = pd.DataFrame(records)
    print(f"Part B: {SPEC}, question {question!r}, compact contract, items {audited}")
    print(f"  {n_done} judgments in {t_total:.0f} s (plus {len(dims) * len(audited)} unrelated warm-up prompts): "
          f"JUDGMENTS/MINUTE = {n_done / (df['wall_s'].sum() / 60):.1f} (judged prompts only)")
    print(f"  prompt tokens sent {int(df['prompt_tokens'].sum()):,}, evaluated {int(df['evaluated'].sum()):,} "
          f"(EVALUATED/SENT = {df['evaluated'].sum() / df['prompt_tokens'].sum():.3f}); "
          f"matches the Part A replay: {bool((df['evaluated'] == df['expected']).all())}")
    for dim, g in df.groupby("dimension", sort=False):
        o, va = g[g["kind"] == "original"], g[g["kind"] == "variant"]
        r_time = va["wall_s"].mean() / o["wall_s"].mean()
        r_tok = va["evaluated"].mean() / o["evaluated"].mean()
        print(f"  {dim}: {len(va)} variants of {len(o)} originals; VARIANT/ORIGINAL cost = {r_time:.2f} (wall time), "
              f"{r_tok:.2f} (evaluated prompt tokens)   (target <= 0.40: {'met' if r_time <= 0.40 else 'NOT met'})")
    return df


def reproduce_times() -> None:
    print("default reproduce wall time per study (from results/<study>/default/run_info.json, if run here):")
    for study in ("shopflow", "identity_tone", "contact_center_qa"):
        p = REPO / "results" / study / "default" / "run_info.json"
        if p.exists():
            info = json.loads(p.read_text())
            stamp = time.strftime("%H:%M UTC", time.gmtime(p.stat().st_mtime))
            print(f"  {study:<18} {info['wall_s']:>7.0f} s  (replay={info.get('replay')}, written {stamp})")
        else:
            print(f"  {study:<18} not run on this checkout yet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=2, help="transcripts judged with the real model (Part B)")
    ap.add_argument("--plan-items", type=int, default=None, help="transcripts in the Part A replay (default all)")
    ap.add_argument("--dimensions", nargs="+", default=["politeness", "gender"])
    ap.add_argument("--question", default="issue_resolution")
    ap.add_argument("--skip-model", action="store_true", help="Part A only")
    ap.add_argument("--save", type=Path, default=None, help="write Part B's per-request rows to this CSV")
    args = ap.parse_args()
    header("local judge")
    tok = Tokenizer()
    part_a(tok, args.plan_items)
    if not args.skip_model:
        df = part_b(tok, args.dimensions, args.items, args.question)
        if args.save:
            df.to_csv(args.save, index=False)
    reproduce_times()


if __name__ == "__main__":
    main()
