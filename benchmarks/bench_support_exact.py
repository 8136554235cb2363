"""Speed of the exact output law on an explicit law's support (mdmt.constructions.reverse.support_exact).

    python benchmarks/bench_support_exact.py [--plain]

Times the exact KL and SER of the random-order fixed-size sampler (balanced sizes, tokens sampled from the
marginals) for every N = 1..L on task:latin:4 (L = 16, 576 sequences) and task:shuffle:n=8 (L = 8, 40,320
sequences), float64 with the support's verified symmetries (one representative per orbit); with --plain also
without symmetries (every sequence of the support a target).  The first call compiles the kernels (numba
caches them on disk); it is timed apart.  Targets (issue 36): every N of each task in <= 60 s.
"""

from __future__ import annotations

import argparse
import time

from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.reverse.policies import Balanced
from mdmt.constructions.reverse.support_exact import support_law, symmetry_generators


def sweep(spec: str, symmetries: bool) -> tuple[float, float, list]:
    lang = language_from_spec(spec)
    t0 = time.perf_counter()
    gens = symmetry_generators(lang) if symmetries else False
    t_sym = time.perf_counter() - t0
    out = []
    for N in range(1, lang.length + 1):
        law = support_law(lang, Balanced(N), symmetries=gens, rationals=False)
        out.append((N, law.kl_nats, law.ser, law.n_orbits))
    return time.perf_counter() - t0, t_sym, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plain", action="store_true", help="also time the computation without symmetries")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    support_law(language_from_spec("task:shuffle:n=3"), Balanced(2))  # compile (or load) the kernels
    print(f"kernels compiled or loaded: {time.perf_counter() - t0:.2f} s")
    for spec in ("task:latin:4", "task:shuffle:n=8"):
        for sym in (True, False) if args.plain else (True,):
            total, t_sym, rows = sweep(spec, sym)
            what = "orbits" if sym else "plain"
            print(f"{spec} ({what}): every N = 1..{len(rows)} in {total:.2f} s "
                  f"(symmetries {t_sym:.2f} s, {rows[0][3]} representative(s))")
            for N, kl, ser, _ in rows:
                print(f"  N = {N:2d}  KL = {kl:.6f} nats  SER = {ser:.6f}")
    return 0


if __name__ == "__main__":
    main()
