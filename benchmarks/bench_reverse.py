"""The exact evaluator, the oracle sampler and the dependency counts against their goals.

    python benchmarks/bench_reverse.py            # everything
    python benchmarks/bench_reverse.py sampler    # the oracle samplers only
    python benchmarks/bench_reverse.py other      # everything but the oracle samplers

Goals: exact p_N for |V| = 2, L = 12 and |V| = 4, L = 8 (N = L) under 60 s; 2000 oracle
samples at L = 512, N = 64 on the `hmm` preset under 30 s; E[sum_j D_j] for L = 4096,
n = 4, N = 1024 under 1 s (all on 2 cores).  The brute-force peer for the exact law is
enumeration over the N^L reveal assignments, timed on one assignment and extrapolated.

The oracle sampler: 1000 samples at L = 2048, N = 2048 on the `3gram` preset with the segment
kernel (``method="segments"``: only the segments between separators that a reveal can change
are recomputed) >= 10x faster than the full message kernel it replaced (``method="kernel"``,
kept as the reference), timed side by side in one run, wall and CPU (user + system) time,
with the samples compared: identical for the same seed.  The interval counterexample
(separators at every interval end) and ``hmm-sparse`` (no separators: the full kernel) are
timed the same way.
"""

import time

import numpy as np

from mdmt.bounds.theorems.dependencies import expected_dependencies
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


def timed_cpu(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - w, time.process_time() - c


def samplers():
    from mdmt.constructions.languages import interval_hmm

    cases = [("3gram preset", preset("3gram", seed=0), 2048, 2048, 1000),
             ("interval:4", interval_hmm(4), 2048, 2048, 1000),
             ("hmm-sparse preset", preset("hmm-sparse", seed=0), 512, 512, 200)]
    for name, q, L, N, num in cases:
        pi = np.full(N, 1.0 / N)
        for method in ("segments", "kernel"):
            sample_mdm(q, 16, np.full(4, 0.25), 2, seed=0, method=method)  # compile
        (seg, w_s, c_s) = timed_cpu(lambda: sample_mdm(q, L, pi, num, seed=0, method="segments"))
        (ref, w_r, c_r) = timed_cpu(lambda: sample_mdm(q, L, pi, num, seed=0, method="kernel"))
        same = np.array_equal(seg.samples, ref.samples)
        m = sample_metrics(q, seg.samples)
        print(f"oracle sampler {name}, {num} x L={L}, N={N} (mean NFE {seg.nfe.mean():.0f}): segments {w_s:.1f} s "
              f"wall / {c_s:.1f} s CPU, full message kernel {w_r:.1f} s wall / {c_r:.1f} s CPU; ratio "
              f"{w_r / w_s:.1f}x wall, {c_r / c_s:.1f}x CPU (goal >= 10x on 3gram); identical samples: {same}; "
              f"SER {m['ser']:.4g}", flush=True)


def main():
    import sys

    if sys.argv[1:] != ["other"]:
        samplers()
    if sys.argv[1:] == ["sampler"]:
        return
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
