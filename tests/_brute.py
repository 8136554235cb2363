"""Brute-force references used by the tests: sums over every hidden path and every sequence."""

import itertools

import numpy as np


def all_sequences(V: int, L: int) -> np.ndarray:
    """Every sequence of V^L in lexicographic order, int64 (V**L, L)."""
    return np.array(list(itertools.product(range(V), repeat=L)), dtype=np.int64).reshape(-1, L)


def hmm_joint(pi, A, B, L: int) -> np.ndarray:
    """q(x) for every x in V^L by summing over every hidden path (no recursion shared with mdmt)."""
    S, V = B.shape
    X = all_sequences(V, L)
    q = np.zeros(len(X))
    for hs in itertools.product(range(S), repeat=L):
        w = pi[hs[0]] * B[hs[0], X[:, 0]]
        for t in range(1, L):
            w = w * A[hs[t - 1], hs[t]] * B[hs[t], X[:, t]]
        q += w
    return q


def masked_marginal(X: np.ndarray, q: np.ndarray, partial: np.ndarray) -> float:
    """q(x_U) for a partial sequence (entries -1 are masked) by summing the joint table."""
    keep = partial >= 0
    match = np.all(X[:, keep] == partial[keep], axis=1)
    return float(q[match].sum())
