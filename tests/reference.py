"""Brute-force references used by the tests, gathered in one place.

Each function computes a quantity from its definition by enumeration -- every hidden path,
every sequence, every reveal assignment -- sharing no recursion with mdmt's own algorithms, so
that a test comparing the two compares two independent code paths.
"""

import itertools

import numpy as np

from mdmt.bounds.verification.brute_force import (all_sequences, cut_subsets, entropy, information_by_enumeration,  # noqa: F401
                                     marginal_scores, oracle_from_joint, policy_law_by_trajectories,
                                     posterior_by_enumeration, random_size_law, reference_rule)
from mdmt.proofs.reference import assignments, dependencies_by_definition, sampler_law_by_assignments  # noqa: F401


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


def ngram_joint(ng, L: int) -> np.ndarray:
    """q(x) for every x in V^L of an n-gram straight from its tables (initial law times conditionals)."""
    V, k = ng.n_symbols, ng.n - 1
    X = all_sequences(V, L)
    init = ng.initial_.reshape((V,) * k)
    q = np.empty(len(X))
    for r, x in enumerate(X):
        if L <= k:
            q[r] = init[tuple(x)].sum()  # the marginal of the first L tokens
            continue
        p = init[tuple(x[:k])]
        for i in range(k, L):
            ctx = int(np.dot(x[i - k:i], V ** np.arange(k - 1, -1, -1)))
            p *= ng.transition_[ctx, x[i]]
        q[r] = p
    return q


def masked_marginal(X: np.ndarray, q: np.ndarray, partial: np.ndarray) -> float:
    """q(x_U) for a partial sequence (entries -1 are masked) by summing the joint table."""
    keep = partial >= 0
    match = np.all(X[:, keep] == partial[keep], axis=1)
    return float(q[match].sum())


# ----------------------------------------------------------------------------- information quantities


def leave_one_out_by_enumeration(X: np.ndarray, q: np.ndarray, x) -> np.ndarray:
    """log q(x_i | x_-i) for one sequence x, from the joint table."""
    x = np.asarray(x)
    out = []
    for i in range(len(x)):
        others = np.all(np.delete(X, i, axis=1) == np.delete(x, i), axis=1)
        out.append(np.log(q[others & (X[:, i] == x[i])].sum() / q[others].sum()))
    return np.array(out)

