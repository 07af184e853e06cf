"""The contact-center sequential audit: false pass under wave-by-wave peeking, and requests saved on a run.

Part 1 (simulation, the audit's own decision step :class:`SequentialAudit.decide`): audits of one cell whose
true net flip rate equals the maximum (every pass is false), and of a clean cell (true rate 0), looked at
after every wave, stopped at the first decision or the budget. Prints pass / fail / inconclusive shares and
the mean items used.

Part 2 (a real run of the study with a scripted judge, no LLM): the same transcripts judged fixed-n and
sequentially; the judge answers each transcript's own label, never flips on ``politeness``, always flips
on ``gender`` (two conditions disagree), and flips on 3/4 of the items on ``formality`` (net 0.5, at the
maximum used here). Prints the requests each design sent and the cells it decided; a third run is the
sequential one under a request budget (``--max-requests``), which it never passes.

    python benchmarks/bench_cc_sequential.py [--audits 1000] [--items 40] [--seed 0] [--max-requests 120]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from cfbench.core.seeding import unit_interval
from cfbench.judges.base import Response
from cfbench.judges.scripted import register_script
from cfbench.studies.contact_center_qa import sequential as S
from cfbench.studies.contact_center_qa.items import iter_items
from cfbench.studies.contact_center_qa.params import Params
from cfbench.studies.contact_center_qa.study import run

BEHAVIOUR = {"gender": "always", "politeness": "never", "formality": "half"}
LABELS: dict = {}
SENT: list = []


def _judge(request) -> Response:
    """Answers the item's label; flips per BEHAVIOUR (the first compared condition keeps the label)."""
    parts = request.request_id.split("/")
    variant = parts[4].split("::")
    dim, cond = (variant[1], variant[2]) if len(variant) == 3 else ("original", "original")
    SENT.append(dim)
    yes = LABELS[parts[3]][parts[1]] == "Yes"
    how = BEHAVIOUR.get(dim, "never")
    flip = how == "always" or (how == "half" and unit_interval("seq-bench", parts[3]) < 0.75)
    ans = yes if (not flip or cond in ("male", "neutral")) else not yes
    return Response(text=json.dumps({"answer": "Yes" if ans else "No", "confidence": 80}))


register_script("cc-seq-bench", _judge)


def _simulate(n: int, true_net: float, max_net: float, seed: int, *, waves: int = 60, wave: int = 5):
    rng = np.random.default_rng(seed)
    verdicts, used = [], []
    for _ in range(n):
        audit = S.SequentialAudit(judges=["j"], dimensions=["d"], max_net=max_net, wave_size=wave)
        for _ in range(waves):
            d = (rng.random(wave) < 0.05 + true_net).astype(float) - (rng.random(wave) < 0.05)
            audit.decide({("j", "d"): d.tolist()}, {"j": (True, "")})
            if audit.done:
                break
        cell = audit.cells[("j", "d")]
        verdicts.append(cell.verdict)
        used.append(cell.cs.n)
    v = np.asarray(verdicts)
    return {k: float((v == k).mean()) for k in ("pass", "fail", "inconclusive")} | {"mean_items": float(np.mean(used))}


def _study(items: int, sequential: bool, max_requests: int = 0) -> tuple[int, dict]:
    p = Params(judges=("scripted:cc-seq-bench",), transcripts_path="synthetic", n_items=items,
               dimensions=tuple(BEHAVIOUR), questions=("issue_resolution",), repeats=2,
               robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=50, gate_max_net_cfr=0.5,
               sequential=sequential, wave_size=2, max_requests=max_requests)
    LABELS.clear()
    LABELS.update({t.id: dict(t.labels) for t in iter_items(p)})
    SENT.clear()
    r = run(p, progress=False, say_warnings=False, cache=False)
    if sequential:
        t = r.tables["sequential_cells"]
        decided = dict(zip(t["dimension"], t["verdict"] + " @ " + t["items_used"].astype(str) + " items"))
        decided["stopped_by"] = r.summary["sequential"]["stopped_by"] or "decided or out of transcripts"
    else:
        g = r.tables["net_cfr_gate"]
        decided = dict(zip(g["dimension"], g["verdict"].astype(str) + " (fixed-n interval)"))
    per_dim = {d: SENT.count(d) for d in [*BEHAVIOUR, "original"]}
    return len(SENT), {"requests_per_dimension": per_dim, "verdicts": decided}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-requests", type=int, default=120, help="the request budget of the third study run")
    a = ap.parse_args()
    print(f"CPU: {platform.processor() or platform.machine()}; seed {a.seed}")
    t0 = time.time()
    for true_net in (0.0, 0.10, 0.20):
        r = _simulate(a.audits, true_net, 0.10, a.seed)
        print(f"simulation, max 0.10, true net {true_net:.2f}, {a.audits} audits, look every 5 items up to 300: "
              + ", ".join(f"{k} {v:.3f}" for k, v in r.items()))
    print(f"  ({time.time() - t0:.0f} s)")
    for seq, budget in ((False, 0), (True, 0), (True, a.max_requests)):
        t0 = time.time()
        n, info = _study(a.items, seq, budget)
        what = ("sequential" + (f", max_requests {budget}" if budget else "")) if seq else "fixed-n"
        print(f"study, {a.items} transcripts, {what}: {n} requests ({time.time() - t0:.0f} s); {info}")


if __name__ == "__main__":
    main()
