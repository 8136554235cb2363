"""Exact HMM inference: mdmt against hmmlearn's CategoricalHMM (both implementations), in one run.

    python benchmarks/bench_inference.py [--num 2000] [--lengths 512,2048] [--repeats 3]
                                         [--hmmlearn-fraction 1.0] [--json results.json]

Draws ``--num`` sequences of each length from the ``hmm`` preset (Table 1: 32 hidden
states, |V| = 8) and times, on the same sequences:

* mdmt: ``score`` (scaled forward), ``posterior_marginals`` (scaled forward-backward, the
  oracle denoiser), ``in_support`` (boolean reachability), with all cores and with one;
* hmmlearn ``CategoricalHMM`` with ``implementation="log"`` and ``"scaling"``: ``score``
  (forward) and ``score_samples`` (forward-backward with state posteriors).

Numba is warmed up first and every figure is the best of ``--repeats`` runs (hmmlearn,
which is slow, is run once; ``--hmmlearn-fraction`` < 1 times it on that fraction of the
sequences and scales linearly, which the per-sequence loop of hmmlearn makes exact up to
noise).  The achieved GFLOP/s count 2·L·S² flops per sequence for a forward pass and
4·L·S² for forward-backward; the machine's float64 peak is measured as the rate of a large
NumPy matrix product (all cores).  The log-likelihoods of mdmt and hmmlearn are compared on
the timed sequences.

The goals checked at the end: scoring >= 10x hmmlearn's fastest ``score`` and >= 30 % of the
measured peak; posteriors >= 5x hmmlearn's fastest ``score_samples``; support checks
>= 100,000 sequences/s at L = 512.

Second table (``--ngrams``, default ``3gram,4gram,4gram:16``): n-grams scored straight from their
tables (:mod:`mdmt.constructions.languages.ngram_inference`, the path ``NGram`` uses) against the
same n-gram's equivalent HMM (``to_hmm()``, V^(n-1) hidden states, the path used before), on the
same sequences, fully revealed and with half the positions masked; ``NAME:V`` is a random n-gram
with the preset's parameters over V symbols.  Both give the same numbers (checked here to 1e-9 and
in tests/test_inference.py); the ratio is HMM time / table time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numba
import numpy as np

from mdmt.constructions.languages import preset, to_hmmlearn
from mdmt.runtime.parallel import set_threads as set_kernel_threads, threads as kernel_threads


def best_of(f, k: int) -> float:
    best = np.inf
    for _ in range(k):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def measured_peak(n: int = 4096, k: int = 3) -> float:
    """float64 GFLOP/s of an n x n matrix product (2 n^3 flops)."""
    a = np.random.default_rng(0).random((n, n))
    b = np.random.default_rng(1).random((n, n))
    a @ b
    return 2 * n**3 / best_of(lambda: a @ b, k) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num", type=int, default=2000, help="sequences per length (default 2000)")
    ap.add_argument("--lengths", default="512,2048", help="comma-separated sequence lengths (default 512,2048)")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs for mdmt (default 3)")
    ap.add_argument("--hmmlearn-fraction", type=float, default=1.0,
                    help="time hmmlearn on this fraction of the sequences and scale (default 1: all)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--ngrams", default="3gram,4gram,4gram:16",
                    help="n-grams for the table-vs-HMM comparison: preset names, NAME:V for V symbols ('' for none)")
    ap.add_argument("--ngram-length", type=int, default=512, help="L of the n-gram comparison (default 512)")
    args = ap.parse_args()

    import hmmlearn

    from mdmt.runtime.provenance import describe, record

    print(describe(record()).replace("Command: `", "Command: `python "), "\n")  # the command, commit and machine
    q = preset("hmm", seed=0)
    S = q.n_states
    threads = kernel_threads()
    peak = measured_peak()
    info = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "numba_threads": threads,
            "numpy": np.__version__, "numba": numba.__version__, "hmmlearn": hmmlearn.__version__,
            "peak_gflops": peak, "n_states": S, "n_symbols": q.n_symbols, "num": args.num}
    print(f"machine: {info['machine']}, {info['cpus']} CPUs, kernel threads {threads}; numpy {np.__version__}, "
          f"numba {numba.__version__}, hmmlearn {hmmlearn.__version__}")
    print(f"measured float64 peak (4096^2 matmul, all cores): {peak:.1f} GFLOP/s")
    print(f"language: hmm preset, seed 0 (S = {S}, |V| = {q.n_symbols}); {args.num} sequences per length\n")

    header = f"{'L':>5}  {'implementation':<34} {'seconds':>9} {'seq/s':>11} {'GFLOP/s':>8} {'% peak':>7} {'mdmt faster by':>15}"
    print(header)
    print("-" * len(header))
    results = []
    goals = []
    for L in [int(v) for v in args.lengths.split(",") if v]:  # --lengths '': the n-gram table alone
        X = q.sample_sequences(args.num, L, seed=1)
        q.log_likelihood(X[:8]), q.posterior_marginals(X[:8]), q.in_support(X[:8])  # compile / load the numba cache
        flops_fwd = 2.0 * L * S * S * args.num
        rows = {}
        rows["mdmt score"] = (best_of(lambda: q.log_likelihood(X), args.repeats), flops_fwd)
        rows["mdmt posterior_marginals"] = (best_of(lambda: q.posterior_marginals(X), args.repeats), 2 * flops_fwd)
        rows["mdmt in_support"] = (best_of(lambda: q.in_support(X), args.repeats), None)
        old = set_kernel_threads(1)
        try:
            rows["mdmt score (1 thread)"] = (best_of(lambda: q.log_likelihood(X), args.repeats), flops_fwd)
        finally:
            set_kernel_threads(old)

        m = max(1, int(round(args.num * args.hmmlearn_fraction)))
        scale = args.num / m
        Xc, lengths = X[:m].reshape(-1, 1), [L] * m
        ours = float(q.log_likelihood(X[:m]).sum())
        agreement = {}
        for impl in ("scaling", "log"):
            model = to_hmmlearn(q)
            model.implementation = impl
            t0 = time.perf_counter()
            theirs = model.score(Xc, lengths)
            rows[f"hmmlearn score ({impl})"] = ((time.perf_counter() - t0) * scale, flops_fwd)
            agreement[impl] = abs(theirs - ours) / abs(ours)
            t0 = time.perf_counter()
            model.score_samples(Xc, lengths)
            rows[f"hmmlearn score_samples ({impl})"] = ((time.perf_counter() - t0) * scale, 2 * flops_fwd)

        ref = {"score": rows["mdmt score"][0], "score_samples": rows["mdmt posterior_marginals"][0]}
        for name, (t, flops) in rows.items():
            gf = flops / t / 1e9 if flops else None
            ratio = ""
            if name.startswith("hmmlearn score_samples"):
                ratio = f"{t / ref['score_samples']:.1f}x"
            elif name.startswith("hmmlearn score"):
                ratio = f"{t / ref['score']:.1f}x"
            print(f"{L:>5}  {name:<34} {t:>9.3f} {args.num / t:>11,.0f} "
                  f"{(f'{gf:.2f}' if gf else '-'):>8} {(f'{100 * gf / peak:.1f}' if gf else '-'):>7} {ratio:>15}")
            results.append({"L": L, "implementation": name, "seconds": t, "sequences_per_s": args.num / t,
                            "gflops": gf, "percent_of_peak": 100 * gf / peak if gf else None})
        note = f" (extrapolated from {m} sequences)" if m < args.num else ""
        print(f"{L:>5}  log-likelihood agreement with hmmlearn: relative difference "
              f"{agreement['scaling']:.1e} (scaling), {agreement['log']:.1e} (log){note}")
        print()
        fastest_score = min(rows["hmmlearn score (scaling)"][0], rows["hmmlearn score (log)"][0])
        fastest_post = min(rows["hmmlearn score_samples (scaling)"][0], rows["hmmlearn score_samples (log)"][0])
        gf_score = flops_fwd / rows["mdmt score"][0] / 1e9
        goals.append((L, "scoring >= 10x hmmlearn's fastest score", fastest_score / rows["mdmt score"][0], 10.0))
        goals.append((L, "scoring >= 30% of measured peak", 100 * gf_score / peak, 30.0))
        goals.append((L, "posteriors >= 5x hmmlearn's fastest score_samples",
                      fastest_post / rows["mdmt posterior_marginals"][0], 5.0))
        if L == 512:
            goals.append((L, "support >= 100,000 sequences/s", args.num / rows["mdmt in_support"][0], 1e5))

    print("goals:")
    for L, what, value, target in goals:
        print(f"  L={L:<5} {what:<52} {value:>12,.1f}  {'met' if value >= target else 'NOT met'}")
    ngram_rows = ngram_comparison(args) if args.ngrams else []
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"info": info, "results": results, "ngrams": ngram_rows,
                       "goals": [{"L": L, "goal": w, "value": v, "target": t, "met": v >= t} for L, w, v, t in goals]},
                      fh, indent=1)


def ngram_comparison(args) -> list[dict]:
    """n-gram tables (ngram_inference) against the equivalent HMM (inference on to_hmm()), same sequences."""
    from mdmt.constructions.languages import PRESETS, random_ngram
    from mdmt.runtime.validation import MASK

    L = args.ngram_length
    print(f"\nn-grams: tables (NGram, ngram_inference) against the equivalent HMM (to_hmm()), L = {L}, "
          f"{args.num} sequences; ratio = HMM time / table time")
    header = f"{'language':<12} {'contexts':>8}  {'routine':<32} {'tables s':>9} {'HMM s':>9} {'ratio':>8}"
    print(header)
    print("-" * len(header))
    rows = []
    for name in [v for v in args.ngrams.split(",") if v]:
        base, _, vocab = name.partition(":")
        pr = PRESETS[base]
        q = random_ngram(pr.n, int(vocab) if vocab else pr.vocab_size, pr.temperature, pr.threshold, seed=0)
        h = q.to_hmm()
        X = q.sample_sequences(args.num, L, seed=1)
        M = X.copy()
        M[np.random.default_rng(2).random(M.shape) < 0.5] = MASK
        work = [("score", lambda lang: lang.log_likelihood(X)), ("score, half masked", lambda lang: lang.log_likelihood(M)),
                ("in_support", lambda lang: lang.in_support(X)),
                ("in_support, half masked", lambda lang: lang.in_support(M)),
                ("posterior_marginals, half masked", lambda lang: lang.posterior_marginals(M[: max(1, args.num // 10)])),
                ("sample", lambda lang: lang.sample_sequences(args.num, L, seed=3))]
        for routine, f in work:
            a, b = f(q), f(h)  # warm up (numba) and compare
            if a.dtype.kind == "f":
                with np.errstate(invalid="ignore"):
                    assert np.allclose(a, b, rtol=1e-9, atol=1e-12), f"{name} {routine}: paths differ"
            else:
                assert np.array_equal(a, b), f"{name} {routine}: paths differ"
            t_tab = best_of(lambda: f(q), args.repeats)
            t_hmm = best_of(lambda: f(h), args.repeats)
            print(f"{name:<12} {q.n_contexts:>8}  {routine:<32} {t_tab:>9.4f} {t_hmm:>9.4f} {t_hmm / t_tab:>7.1f}x")
            rows.append({"language": name, "contexts": q.n_contexts, "routine": routine, "tables_s": t_tab,
                         "hmm_s": t_hmm, "ratio": t_hmm / t_tab})
    return rows


if __name__ == "__main__":
    main()
