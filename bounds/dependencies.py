"""Separators and dependencies (Definitions B.4/B.5, Example B.6; links C4-C5 of docs/theorems.md).

For an n-gram, a *separator* of the revealed set U_j is a maximal run of at least
n-1 consecutive revealed positions: given it, the tokens on its two sides are
independent.  The separators cut the sequence into *segments*; the
*dependencies* of step j are D_j = |S_j| - #(segments holding a position of S_j),
and TC(X_{S_j} | x_{U_j}) <= D_j log|V|.

Exact expectations: at step j every position is independently revealed-before
(probability a_j = sum_{k<j} pi_k), new (pi_j) or still masked.  Scanning the
sequence with a Markov chain whose state is (length of the current run of revealed
positions, capped at n-1; whether the current segment already holds a new
position) counts each segment at its first new position, in O(N L n).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mdmt.constructions.reverse.schedules import as_pi, revealed_before
from mdmt.constructions.validation import positive_int


def dependencies_for_assignment(n: int, tau) -> np.ndarray:
    """D_j for j = 1..max(tau) for one reveal assignment tau (int (L,), steps >= 1)."""
    n = positive_int("n", n, minimum=2)
    tau = np.asarray(tau, dtype=np.int64)
    if tau.ndim != 1 or tau.size == 0 or tau.min() < 1:
        raise ValueError("tau must be a non-empty vector of reveal steps >= 1")
    N = int(tau.max())
    out = np.zeros(N, dtype=np.int64)
    for j in range(1, N + 1):
        new = tau == j
        if not new.any():
            continue
        revealed = tau < j
        segments, has_new, run = 0, False, 0
        for i in range(len(tau)):
            if revealed[i]:
                run += 1
                continue
            if run >= n - 1 and run > 0:
                has_new = False  # the run just ended was a separator
            run = 0
            if new[i] and not has_new:
                segments += 1
                has_new = True
        out[j - 1] = int(new.sum()) - segments
    return out


@nb.njit(cache=True)
def _expected_segments(a, p, L, n):
    """E[#segments holding a new position] for each step (a_j, p_j)."""
    N = a.shape[0]
    cap = n - 1
    out = np.zeros(N)
    for j in range(N):
        aj, pj = a[j], p[j]
        mj = 1.0 - aj - pj
        if mj < 0.0:
            mj = 0.0
        P = np.zeros((cap + 1, 2))  # P[r, h]
        P[0, 0] = 1.0
        count = 0.0
        for _ in range(L):
            Q = np.zeros((cap + 1, 2))
            for r in range(cap + 1):
                for h in range(2):
                    w = P[r, h]
                    if w == 0.0:
                        continue
                    # revealed before step j: the run grows
                    Q[min(r + 1, cap), h] += w * aj
                    # not revealed: a run of >= n-1 revealed positions just ended -> new segment
                    hh = 0 if (r >= cap and r > 0) else h
                    if hh == 0:
                        count += w * pj
                    Q[0, 1] += w * pj
                    Q[0, hh] += w * mj
            P = Q
        out[j] = count
    return out


def expected_dependencies_per_step(n: int, L: int, pi) -> np.ndarray:
    """E[D_j] for j = 1..N (exact)."""
    n = positive_int("n", n, minimum=2)
    L = positive_int("L", L)
    pi = as_pi(pi)
    return L * pi - _expected_segments(revealed_before(pi), pi, L, n)


def expected_dependencies(n: int, L: int, pi) -> float:
    """E[sum_j D_j] (exact), the quantity of (C4)."""
    return float(expected_dependencies_per_step(n, L, pi).sum())


def chain_bound(n: int, L: int, pi, V: int, eps_learning: float = 0.0) -> float:
    """The (C4) bound on KL(q || p_N)/L in nats per token: eps_learning + log|V| E[sum_j D_j] / L.

    For an n-gram over V tokens and reveal probabilities pi (Lemmas B.8-B.9 with the exact
    E[sum_j D_j]); ``eps_learning`` is the learning error in the averaged form (the learning
    term of C2 over L).
    """
    return eps_learning + math.log(V) * expected_dependencies(n, L, pi) / L
