"""Exact HMM inference: mdmt against hmmlearn's CategoricalHMM (both implementations), in one run.

    python benchmarks/bench_inference.py [--num 2000] [--lengths 512,2048]

Times log-likelihood scoring, oracle posteriors (forward-backward) and support
checks on sequences from the `hmm` preset, prints the ratios, the achieved
GFLOP/s of the forward pass (2 L S^2 flops per sequence) and the fraction of the
machine's measured float64 peak (a large numpy matrix product).
"""

import argparse
import platform
import time

import numpy as np

from constructions import preset, to_hmmlearn


def best_of(f, k=3):
    best = np.inf
    for _ in range(k):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--num", type=int, default=2000)
    ap.add_argument("--lengths", default="512,2048")
    ap.add_argument("--hmmlearn-fraction", type=float, default=0.1,
                    help="time hmmlearn on this fraction of the sequences and scale (it is slow)")
    args = ap.parse_args()
    q = preset("hmm", seed=0)
    S = q.n_states
    a = np.random.default_rng(0).random((3000, 3000))
    peak = 2 * 3000**3 / best_of(lambda: a @ a) / 1e9
    print(f"machine: {platform.processor() or platform.machine()}, measured float64 peak {peak:.1f} GFLOP/s")
    print(f"{'L':>5} {'task':<22} {'mdmt s':>9} {'peer':<26} {'peer s':>9} {'ratio':>7}  notes")
    for L in [int(x) for x in args.lengths.split(",")]:
        X = q.sample(args.num, L, seed=1)
        q.score(X[:4]), q.posterior_marginals(X[:4, :8]), q.in_support(X[:4])  # compile
        t_score = best_of(lambda: q.score(X))
        t_post = best_of(lambda: q.posterior_marginals(X), k=2)
        t_supp = best_of(lambda: q.in_support(X))
        m = max(1, int(args.num * args.hmmlearn_fraction))
        scale = args.num / m
        Xc, lengths = X[:m].reshape(-1, 1), [L] * m
        peers = {}
        for impl in ("scaling", "log"):
            model = to_hmmlearn(q)
            model.implementation = impl
            peers[f"score ({impl})"] = best_of(lambda: model.score(Xc, lengths), k=1) * scale
            peers[f"score_samples ({impl})"] = best_of(lambda: model.score_samples(Xc, lengths), k=1) * scale
        fastest_score = min(v for k, v in peers.items() if k.startswith("score ("))
        fastest_post = min(v for k, v in peers.items() if k.startswith("score_samples"))
        gflops = 2 * L * S * S * args.num / t_score / 1e9
        print(f"{L:>5} {'score':<22} {t_score:>9.3f} {'hmmlearn fastest score':<26} {fastest_score:>9.3f} "
              f"{fastest_score / t_score:>6.1f}x  {gflops:.1f} GFLOP/s = {100 * gflops / peak:.0f}% of peak")
        print(f"{L:>5} {'posterior marginals':<22} {t_post:>9.3f} {'hmmlearn score_samples':<26} {fastest_post:>9.3f} "
              f"{fastest_post / t_post:>6.1f}x")
        print(f"{L:>5} {'support check':<22} {t_supp:>9.3f} {'-':<26} {'-':>9} {'-':>7}  "
              f"{args.num / t_supp:,.0f} sequences/s")
        for k, v in peers.items():
            print(f"{L:>5}   hmmlearn {k:<30} {v:>9.3f} s (extrapolated from {m} sequences)")


if __name__ == "__main__":
    main()
