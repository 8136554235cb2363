"""Brute-force references used by the tests, gathered in one place.

Each function computes a quantity from its definition by enumeration -- every hidden path,
every sequence, every reveal assignment -- sharing no recursion with mdmt's own algorithms, so
that a test comparing the two compares two independent code paths.
"""

import itertools

import numpy as np

from mdmt.bounds.brute_force import (all_sequences, cut_subsets, entropy, information_by_enumeration,  # noqa: F401
                                     marginal_scores, oracle_from_joint, policy_law_by_trajectories,
                                     posterior_by_enumeration, random_size_law, reference_rule)




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




def assignments(N: int, L: int):
    """Every reveal assignment tau in [N]^L, as int arrays (steps numbered from 1)."""
    for tau in itertools.product(range(1, N + 1), repeat=L):
        yield np.array(tau)


def sampler_law_by_assignments(q: np.ndarray, X: np.ndarray, pi: np.ndarray, denoise):
    """p_N and E_tau KL(q || p_tau) by enumerating every reveal assignment tau in [N]^L.

    ``denoise(partial)`` returns the (L, V) table p(. | x_U) for one partial sequence (MASK = -1).
    p_tau(x) = prod_j prod_{i in S_j} p(x_i | x_{U_j}), straight from Eq. 3.
    """
    L = X.shape[1]
    cache = {}

    def den(partial):
        key = partial.tobytes()
        if key not in cache:
            cache[key] = denoise(partial)
        return cache[key]

    pN = np.zeros(len(X))
    ekl = 0.0
    m = q > 0
    for tau in assignments(len(pi), L):
        w = float(np.prod(pi[tau - 1]))
        if w == 0:
            continue
        pt = np.ones(len(X))
        for r, x in enumerate(X):
            for j in np.unique(tau):
                partial = np.where(tau < j, x, -1)
                D = den(partial)
                for i in np.flatnonzero(tau == j):
                    pt[r] *= D[i, x[i]]
        pN += w * pt
        with np.errstate(divide="ignore"):
            ekl += w * float(np.sum(q[m] * (np.log(q[m]) - np.log(pt[m]))))
    return pN, ekl


def dependencies_by_definition(n: int, tau: np.ndarray) -> np.ndarray:
    """D_j = |S_j| - #segments holding a position of S_j (Definitions B.4/B.5), by listing the segments.

    A separator is a maximal run of >= n-1 consecutive positions revealed before step j; cutting
    the sequence at every separator leaves the segments.
    """
    tau = np.asarray(tau)
    L, N = len(tau), int(tau.max())
    out = np.zeros(N, dtype=np.int64)
    for j in range(1, N + 1):
        revealed = tau < j
        runs = []  # maximal runs of revealed positions: (start, end)
        i = 0
        while i < L:
            if revealed[i]:
                k = i
                while k < L and revealed[k]:
                    k += 1
                runs.append((i, k))
                i = k
            else:
                i += 1
        cut = np.zeros(L, dtype=bool)
        for a, b in runs:
            if b - a >= max(n - 1, 1):
                cut[a:b] = True
        segment_id, seg, inside = np.full(L, -1), -1, False
        for i in range(L):
            if cut[i]:
                inside = False
                continue
            if not inside:
                seg += 1
                inside = True
            segment_id[i] = seg
        new = np.flatnonzero(tau == j)
        out[j - 1] = len(new) - len({int(segment_id[i]) for i in new})
    return out


# ----------------------------------------------------------------------------- information quantities



def leave_one_out_by_enumeration(X: np.ndarray, q: np.ndarray, x) -> np.ndarray:
    """log q(x_i | x_-i) for one sequence x, from the joint table."""
    x = np.asarray(x)
    out = []
    for i in range(len(x)):
        others = np.all(np.delete(X, i, axis=1) == np.delete(x, i), axis=1)
        out.append(np.log(q[others & (X[:, i] == x[i])].sum() / q[others].sum()))
    return np.array(out)

