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

For long sequences the same chain is summed in closed form: with T_j its transition
matrix (``transfer_matrix``), the expected count is p_j e_0 (I + T_j + ... + T_j^(L-1)) c,
and the geometric sum is the top-right block of [[T, I], [0, I]]^L, a matrix power by
repeated squaring: O(N n^3 log L), so L = 10^9 takes milliseconds.  ``expected_dependencies``
scans for L <= SCAN_MAX_LENGTH and uses the matrix power above it; both paths are tested
against each other and against enumeration.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.constructions.reverse.schedules import as_pi, revealed_before
from mdmt.runtime.validation import positive_int
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.constructions.types import RevealProbabilities

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

SCAN_MAX_LENGTH = 1 << 16  # the O(N L n) scan up to here; the O(N n^3 log L) matrix power beyond
MAX_WORK = 4e9  # elementary operations one call may take (about a minute); larger requests are refused


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


def transfer_matrix(a, p, n: int, one=1.0, zero=0.0) -> list[list]:
    """The scan's transition matrix for one step (revealed before: a, new: p, masked: 1 - a - p).

    States (r, h) with index 2r + h: r the length of the current revealed run (capped at n-1),
    h whether the current segment already holds a new position.  Generic in the number type
    (floats, or exact rationals for :mod:`.references`).  Returns (T, c): T as nested lists and
    c the states at which a new position opens a segment (the run just ended was a separator
    or the segment holds no new position yet).
    """
    cap = n - 1
    m = one - a - p
    d = 2 * (cap + 1)
    T = [[zero] * d for _ in range(d)]
    c = [zero] * d
    for r in range(cap + 1):
        for h in range(2):
            s = 2 * r + h
            T[s][2 * min(r + 1, cap) + h] = T[s][2 * min(r + 1, cap) + h] + a
            hh = 0 if r >= cap else h
            if hh == 0:
                c[s] = one
            T[s][1] = T[s][1] + p
            T[s][hh] = T[s][hh] + m
    return T, c


def _expected_segments_power(a, p, L: int, n: int) -> np.ndarray:
    """E[#segments holding a new position] per step by the matrix power of the module docstring."""
    N = len(a)
    d = 2 * n
    M = np.zeros((N, 2 * d, 2 * d))
    cvec = None
    for j in range(N):
        T, c = transfer_matrix(float(a[j]), float(p[j]), n)
        M[j, :d, :d] = np.maximum(np.array(T), 0.0)  # 1 - a - p >= 0 up to rounding, as in the scan
        cvec = np.array(c)
    M[:, :d, d:] = np.eye(d)
    M[:, d:, d:] = np.eye(d)
    R = np.broadcast_to(np.eye(2 * d), M.shape).copy()
    B, k = M, int(L)
    while k:
        if k & 1:
            R = R @ B
        k >>= 1
        if k:
            B = B @ B
    G = R[:, 0, d:]  # e_0 (I + T + ... + T^(L-1)): the start state (0, 0) has index 0
    return np.asarray(p, dtype=np.float64) * (G @ cvec)


def dependency_work(n: int, L: int, N: int) -> float:
    """Elementary operations ``expected_dependencies_per_step`` takes for (n, L, N)."""
    if L <= SCAN_MAX_LENGTH:
        return 4.0 * N * L * n
    return 2.0 * N * (4 * n) ** 3 * max(1, int(L).bit_length())


def check_dependency_work(n: int, L: int, N: int, what: str = "E[sum_j D_j]") -> None:
    """Refuse, with a message naming the sizes and the limit, a request above MAX_WORK operations."""
    work = dependency_work(n, L, N)
    if work > MAX_WORK:
        raise ValueError(f"{what} for n = {n}, L = {L}, N = {N} steps needs about {work:.2g} operations, above "
                         f"mdmt's limit of {MAX_WORK:.0e}; use fewer steps N or a smaller n")


def expected_dependencies_per_step(n: int, L: int, pi) -> np.ndarray:
    """E[D_j] for j = 1..N (exact up to rounding; the scan, or the matrix power for L > SCAN_MAX_LENGTH)."""
    n = positive_int("n", n, minimum=2)
    L = positive_int("L", L)
    pi = as_pi(pi)
    check_dependency_work(n, L, len(pi))
    a = revealed_before(pi)
    segments = _expected_segments(a, pi, L, n) if L <= SCAN_MAX_LENGTH else _expected_segments_power(a, pi, L, n)
    return L * pi - segments


def expected_dependencies(n: int, L: int, pi: RevealProbabilities) -> float:
    """E[sum_j D_j] (exact), the quantity of (C4)."""
    return float(expected_dependencies_per_step(n, L, pi).sum())


def chain_bound(n: int, L: int, pi: RevealProbabilities, V: int, eps_learning: float = 0.0) -> float:
    """The (C4) bound on KL(q || p_N)/L in nats per token: eps_learning + log|V| E[sum_j D_j] / L.

    For an n-gram over V tokens and reveal probabilities pi (Lemmas B.8-B.9 with the exact
    E[sum_j D_j]); ``eps_learning`` is the learning error in the averaged form (the learning
    term of C2 over L).  The formula is the statement :data:`.statements.CHAIN_BOUND`.
    """
    from .statements import CHAIN_BOUND

    return CHAIN_BOUND.evaluate(epsilon_learning=eps_learning, V=V, E_D=expected_dependencies(n, L, pi), L=L)
