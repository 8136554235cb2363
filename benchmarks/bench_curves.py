"""The SER curve's linear schedule: grouped (one value, N times) against the vector pi it stands for.

    python benchmarks/bench_curves.py [--l 5] [--steps 10000,1000000,4000000,10000000,16000000] [--repeats 3]

For each N, times the two quantities of ``mdmt curve ser`` that the linear schedule enters (Section 4.2 of the
paper: the oracle SER 1 - rho^(L/l), and P_distinct of Theorem 4.3), on the interval HMM of length l, L = 200 l:

* mdmt: :func:`mdmt.bounds.studies.curves.oracle_ser_lin` and ``p_distinct_linear``, which take the schedule as
  one reveal probability with multiplicity N (an O(N) float sum, nothing sorted);
* the previous algorithm: the same closed forms given the validated vector ``np.full(N, 1/N)`` (built, checked
  and grouped by ``np.unique``, as ``oracle_ser`` and ``p_distinct`` do with any pi).

Both give the same floats, bit for bit (checked here).  Each figure is the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mdmt.bounds.studies.curves import oracle_ser_lin, p_distinct_linear
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.schedules import p_distinct


def best_of(f, k: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(k):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l", type=int, default=5)
    ap.add_argument("--steps", default="10000,1000000,4000000,10000000,16000000")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    l, L = a.l, 200 * a.l
    print("| N | grouped (s) | vector pi (s) | ratio |\n| ---: | ---: | ---: | ---: |")
    for N in (int(s) for s in a.steps.split(",")):
        grouped = lambda: (oracle_ser_lin(l, L, N), p_distinct_linear(N, l))  # noqa: E731
        vector = lambda: (oracle_ser(l, L, np.full(N, 1.0 / N)), p_distinct(np.full(N, 1.0 / N), l))  # noqa: E731
        t_new, new = best_of(grouped, a.repeats)
        t_old, old = best_of(vector, a.repeats)
        if new != old:
            raise SystemExit(f"N = {N}: grouped {new} differs from the vector's {old}")
        print(f"| {N} | {t_new:.4f} | {t_old:.4f} | {t_old / t_new:.1f}× |")


if __name__ == "__main__":
    main()
