"""ParallelBench's printed Table 1 and Figure 2 beside mdmt's exact values (docs/tasks.md, "ParallelBench Table 1,
row by row").

    python benchmarks/parallelbench_table1.py [--n-max 8] [--shuffle-n10] [--out docs/results/parallelbench]

Writes table1.md (per cell of Table 1: mdmt's exact value for n = 2..n_max, the printed entry where it differs,
'*' outside the paper's stated condition), table1.csv, figure2.csv and figure2.png (the five panels of Figure 2
from mdmt's exact values: closed forms, checked against mdmt's exact laws where ``source`` is ``law``).  With
``--shuffle-n10`` the Shuffle thresholds of panel (e) are also computed from the exact law of task:shuffle:n=10
(3,628,800 sequences, one orbit; about 6 GB and 30 s per threshold on two cores, after a minute to find the
symmetries).  Fails if a law disagrees with its closed form.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from fractions import Fraction
from pathlib import Path

from mdmt.bounds.studies.parallelbench_table1 import (figure2_curves, fmt, plot_figure2, table1_values,
                                                      values_markdown)

CELLS = ("Replace Random / Acc. (Greedy, Top-k)", "Replace Random / Acc. (Greedy, Threshold)",
         "Shuffle / Acc. (Greedy, Top-k)", "Shuffle / Acc. (Greedy, Threshold)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-max", type=int, default=8, help="largest list length of the Table 1 values (default 8)")
    ap.add_argument("--shuffle-n10", action="store_true", help="panel (e): Shuffle's law at n = 10 too")
    ap.add_argument("--out", default="docs/results/parallelbench", help="output folder")
    args = ap.parse_args(argv)
    if not 2 <= args.n_max <= 9:
        ap.error(f"--n-max must be in 2..9, got {args.n_max}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ns = list(range(2, args.n_max + 1))
    rows = table1_values(ns)
    with open(out / "table1.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cell", "n", "k_or_gamma", "printed", "exact", "stated", "agree"])
        for r in rows:
            w.writerow([r["cell"], r["n"], fmt(r["arg"]) if r["arg"] is not None else "", fmt(r["printed"]),
                        fmt(r["exact"]), r["stated"], r["agree"]])
    parts = [f"# ParallelBench Table 1: mdmt's exact values, n = 2..{args.n_max}\n",
             "Each entry is mdmt's exact value; `(printed x)` where the printed entry differs, `*` outside the "
             "paper's stated condition (k | n; n > 2; gamma > 0.5).  `python benchmarks/parallelbench_table1.py`.\n"]
    for c in ("Copy & Replace Index / C(Y|X)", "Replace Random / C(Y|X)", "Shuffle / C(Y|X)"):
        vals = [r for r in rows if r["cell"] == c]
        parts.append(f"## {c} (bits)\n\n| n | " + " | ".join(str(r["n"]) for r in vals) + " |\n|" +
                     "---|" * (len(vals) + 1) + "\n| exact | " + " | ".join(fmt(r["exact"]) for r in vals) +
                     " |\n| printed | " + " | ".join(fmt(r["printed"]) for r in vals) + " |\n")
    for c in CELLS:
        parts.append(f"## {c}\n\n" + values_markdown(rows, c, ns) + "\n")
    bad = [r for r in rows if r["stated"] and not r["agree"] and r["printed"] is not None]
    parts.append(f"Inside the stated conditions: {sum(r['stated'] for r in rows)} entries, "
                 f"{len(bad)} differ from the printed entry.\n")
    (out / "table1.md").write_text("\n".join(parts))
    print(f"table 1: {len(rows)} entries, {len(bad)} differ inside the stated conditions ({time.time() - t0:.1f} s)")
    t0 = time.time()
    gam = (Fraction(3, 10), Fraction(1, 2), Fraction(9, 10)) if args.shuffle_n10 else ()
    curves = figure2_curves(shuffle_law_gammas=gam)
    with open(out / "figure2.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["panel", "task", "decode", "n", "curve", "x", "accuracy", "accuracy_float", "source"])
        for r in curves:
            w.writerow([r["panel"], r["task"], r["decode"], r["n"], r["curve"], fmt(r["x"]) if r["panel"] == "e"
                        else r["x"], fmt(r["accuracy"]), f"{float(r['accuracy']):.6f}", r["source"]])
    plot_figure2(curves, out / "figure2.png")
    print(f"figure 2: {len(curves)} points, {sum(r['source'] == 'law' for r in curves)} from exact laws "
          f"({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
