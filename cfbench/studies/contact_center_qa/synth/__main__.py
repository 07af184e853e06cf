"""``python -m cfbench.studies.contact_center_qa.synth --out DIR [--n N --seed S --min-turns A --max-turns B]``"""

from __future__ import annotations

import argparse

from .generator import write_synthetic_set


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cfbench.studies.contact_center_qa.synth", description=__doc__)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-turns", type=int, default=10)
    ap.add_argument("--max-turns", type=int, default=14)
    a = ap.parse_args(argv)
    j, s = write_synthetic_set(a.out, n=a.n, seed=a.seed, min_turns=a.min_turns, max_turns=a.max_turns)
    print(f"wrote {j} and {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
