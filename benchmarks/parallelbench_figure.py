"""The ParallelBench Section 4 table and figure of docs/tasks.md, from mdmt's exact laws.

    python benchmarks/parallelbench_figure.py [--n 8] [--out docs/results/parallelbench]

Writes parallelbench.png (accuracy against tokens per step, per task and decoding rule) and parallelbench.csv,
and prints the Markdown table of exact accuracies; every value is checked against its closed form
(mdmt.bounds.theorems.parallelbench) and the script fails if one disagrees.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from mdmt.bounds.studies.parallelbench import accuracy_rows, markdown_table, plot


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="list length n (default 8)")
    ap.add_argument("--out", default="docs/results/parallelbench", help="output folder")
    args = ap.parse_args(argv)
    rows = accuracy_rows(args.n)
    bad = [r for r in rows if not r["agree"]]
    if bad:
        print(f"closed form and exact law disagree: {bad[0]}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(rows, out / "parallelbench.png")
    with open(out / "parallelbench.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "n", "k", "sizes", "decode", "accuracy", "kl_nats"])
        for r in rows:
            w.writerow([r["task"], r["n"], r["k"], "+".join(map(str, r["sizes"])), r["decode"], str(r["accuracy"]),
                        f"{r['kl_nats']:.12g}"])
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
