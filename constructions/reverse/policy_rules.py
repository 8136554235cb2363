"""The rule a step of a policy applies (:mod:`.policies`): the scores of a marginal, how many masked positions
a step reveals, and the cut among tied scores (the module docstring of :mod:`.policies`, "Ties").

Shared by the exact law (:mod:`.policy_exact`, :mod:`.support_exact`) and the sampler (:mod:`.policy_sampler`), so
that both apply one rule.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

TIE_TOL = 1e-9

# kernel codes of a step's rule
RATE, SIZE, TOPK, THRESHOLD, ENTROPY_SUM, FIXED = range(6)
# score codes (higher = revealed first)
NO_SCORE, CONFIDENCE, MARGIN, NEG_ENTROPY = -1, 0, 1, 2
SCORES = {"confidence": CONFIDENCE, "margin": MARGIN, "entropy": NEG_ENTROPY}


def score_table(P: np.ndarray, score: int) -> np.ndarray:
    """The score of each marginal along the last axis of P (..., V): higher is revealed first.

    ``CONFIDENCE``: max_v p(v); ``MARGIN``: top-1 minus top-2 probability; ``NEG_ENTROPY``: sum_v p log p
    (minus the entropy in nats, 0 log 0 = 0).
    """
    P = np.asarray(P, dtype=np.float64)
    if score == CONFIDENCE:
        return P.max(axis=-1)
    if score == MARGIN:
        if P.shape[-1] < 2:
            raise ValueError("the margin score needs a vocabulary of at least 2 tokens")
        top = np.partition(P, P.shape[-1] - 2, axis=-1)
        return top[..., -1] - top[..., -2]
    if score == NEG_ENTROPY:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(axis=-1)
    raise ValueError(f"unknown score code {score!r}")


@nb.njit(cache=True)
def _sift_down(a, root, end):
    """Restore the max-heap below ``root`` in a[:end] (:func:`sort_prefix`)."""
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and a[child + 1] > a[child]:
            child += 1
        if a[root] >= a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@nb.njit(cache=True)
def sort_prefix(a, n):
    """Sort a[:n] in place, ascending (heapsort, O(n log n)).  Written out rather than ``ndarray.sort``: numba's
    generic quicksort costs more than a second of compilation in every process with an empty cache."""
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(a, root, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, np.int64(0), end)  # not a literal 0: one signature (mdmt.runtime.numba_cache)


@nb.njit(cache=True)
def step_count(mode, k, score_row, pos, m, tau, gamma):
    """How many of the m masked positions pos[:m] a step reveals (before the cut picks which)."""
    if mode == THRESHOLD:
        c = 0
        for t in range(m):
            if score_row[pos[t]] > tau + TIE_TOL:  # within TIE_TOL of tau is a tie: not above it
                c += 1
        return c if c > 0 else 1
    if mode == ENTROPY_SUM:
        h = np.empty(m)
        for t in range(m):
            h[t] = -score_row[pos[t]]
        sort_prefix(h, m)
        cum = 0.0
        for t in range(m):
            cum += h[t]
            if cum > gamma:
                return t + 1
        return m
    return k if k < m else m


@nb.njit(cache=True)
def step_cut(uniform, score_row, pos, m, c, sure, tied):
    """The cut of a step revealing c of the masked positions pos[:m] (module docstring, "Ties").

    Fills ``sure`` (revealed for certain) and ``tied`` (a uniformly random r of them are revealed);
    returns (n_sure, n_tied, r).  ``uniform``: every masked position is tied (a uniform c-subset).
    """
    if c <= 0:
        return 0, 0, 0
    if uniform or c >= m:
        for t in range(m):
            tied[t] = pos[t]
        return 0, m, (c if c < m else m)
    vals = np.empty(m)
    for t in range(m):
        vals[t] = score_row[pos[t]]
    sort_prefix(vals, m)
    thr = vals[m - c]  # the c-th largest score
    ns = 0
    nt = 0
    for t in range(m):
        s = score_row[pos[t]]
        if s > thr + TIE_TOL:
            sure[ns] = pos[t]
            ns += 1
        elif s >= thr - TIE_TOL:
            tied[nt] = pos[t]
            nt += 1
    return ns, nt, c - ns


@nb.njit(cache=True)
def next_combination(idx, r, n):
    """Advance idx[:r], an r-subset of range(n) in increasing order, to the next one in lexicographic order; False
    (idx unchanged) after the last.  The enumeration of the uniform choices of a step's tied positions."""
    u = r - 1
    while u >= 0 and idx[u] == n - r + u:
        u -= 1
    if u < 0:
        return False
    idx[u] += 1
    for t in range(u + 1, r):
        idx[t] = idx[t - 1] + 1
    return True
