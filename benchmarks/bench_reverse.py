"""The exact evaluator, the oracle sampler and the dependency counts against their goals.

    python benchmarks/bench_reverse.py

Goals: exact p_N for |V| = 2, L = 12 and |V| = 4, L = 8 (N = L) under 60 s; 2000 oracle
samples at L = 512, N = 64 on the `hmm` preset under 30 s; E[sum_j D_j] for L = 4096,
n = 4, N = 1024 under 1 s (all on 2 cores).  The brute-force peer for the exact law is
enumeration over the N^L reveal assignments, timed on one assignment and extrapolated.
"""

import time

import numpy as np

from mdmt.bounds.dependencies import expected_dependencies
from mdmt.constructions.languages import preset, random_ngram
from mdmt.constructions.reverse.chain import assignment_quantities
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.tables import build_tables
from mdmt.constructions.reverse.metrics import sample_metrics
from mdmt.constructions.reverse.sampler import sample_mdm


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def main():
    for V, L in [(2, 12), (4, 8)]:
        lang = random_ngram(3, V, 2.0, 0.05, seed=0)
        pi = np.full(L, 1.0 / L)
        exact_output_law(lang, 3, np.full(3, 1 / 3))  # compile
        res, t = timed(lambda: exact_output_law(lang, L, pi))
        tables = build_tables(lang, L)
        _, t1 = timed(lambda: assignment_quantities(lang, np.arange(L) % L + 1, tables=tables))
        print(f"exact p_N |V|={V} L={L} N={L}: {t:.1f} s (goal < 60 s); KL={res.kl_nats:.4g} nats, SER={res.ser:.4g}; "
              f"enumerating the {L}^{L} = {float(L)**L:.2g} assignments would take ~{t1 * float(L)**L:.2g} s")
    q = preset("hmm", seed=0)
    sample_mdm(q, 16, np.full(4, 0.25), 4, seed=0)
    res, t = timed(lambda: sample_mdm(q, 512, np.full(64, 1 / 64), 2000, seed=0))
    m = sample_metrics(q, res.samples)
    print(f"oracle sampler hmm preset, 2000 x L=512, N=64: {t:.1f} s (goal < 30 s); SER={m['ser']:.4g} "
          f"CI {m['ser_ci'][0]:.3g}..{m['ser_ci'][1]:.3g}, mean NFE {res.nfe.mean():.2f}")
    expected_dependencies(4, 64, np.full(8, 1 / 8))
    val, t = timed(lambda: expected_dependencies(4, 4096, np.full(1024, 1 / 1024)))
    print(f"E[sum_j D_j] n=4 L=4096 N=1024: {val:.6g} in {t:.2f} s (goal < 1 s)")


if __name__ == "__main__":
    main()
