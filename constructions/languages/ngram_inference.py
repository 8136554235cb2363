"""Exact, batched inference on n-gram languages straight from their tables (Section 4.1 of the paper).

An n-gram over |V| = V tokens with k = n-1 has C = V^k contexts; its equivalent HMM
(:meth:`~mdmt.constructions.languages.ngram.NGram.to_hmm`) has C hidden states and a dense
C x C transition matrix -- 8.6 GB for a 4-gram over 32 tokens.  The routines here never build
it.  They carry the *frontier*: the contexts x_{t-k+1..t} still possible given the revealed
tokens, with their forward weights.  A revealed token keeps one successor per context, a
masked one V, and contexts that agree on their last k-1 tokens merge (a dense accumulator of
C entries), so the frontier at position t has at most min(C, V^M_t) entries, M_t the number of
masked positions among x_{t-k+1..t}.  A fully revealed sequence costs O(L) (one context per
position: the chain rule log init(x_1..x_k) + sum_t log P(x_t | x_{t-k..t-1})); a masked run
costs what the equivalent HMM's sparse recursion costs.  Positions before k are handled by
the initial law: the first frontier is every context consistent with x_1..x_min(L,k), tokens
beyond L being summed out (so L < k is exact too).

* :func:`log_likelihood` -- log q(x_U), the frontier renormalised at every position (no
  underflow at any L), ``-inf`` off the support (settled exactly by :func:`support`);
* :func:`support` -- q(x_U) > 0 by boolean propagation of the frontier (no floating point);
* :func:`posterior_marginals` -- the oracle denoiser q(x_i = v | x_U) by forward-backward over
  the stored frontiers;
* :func:`sample` -- ancestral sampling that consumes the random stream exactly as the HMM
  sampler does on the equivalent HMM, so a seed gives the same sequences on either path.

Each routine's memory and work are estimated first (:mod:`mdmt.constructions.resources`).
The tests check every routine against the equivalent HMM and against brute-force
enumeration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from ..resources import check_memory, check_work, threads
from .inference import _cdf, _draw, sample_by_uniforms, settle_underflow

_BLOCKS_PER_THREAD = 4


@dataclass(frozen=True)
class NGramTables:
    """The arrays of one n-gram laid out for the kernels (built once per n-gram)."""

    init: np.ndarray  # (C,) law of the first k tokens, big-endian context index
    T: np.ndarray  # (C, V) P(next | context)
    cdf_init: np.ndarray  # (C,)
    cdf_T: np.ndarray  # (C, V)
    k: int  # n - 1

    @classmethod
    def from_arrays(cls, init: np.ndarray, T: np.ndarray, k: int) -> "NGramTables":
        init = np.ascontiguousarray(init, dtype=np.float64)
        T = np.ascontiguousarray(T, dtype=np.float64)
        return cls(init=init, T=T, cdf_init=_cdf(init[None, :])[0], cdf_T=_cdf(T), k=int(k))

    @property
    def n_contexts(self) -> int:
        return self.T.shape[0]

    @property
    def n_symbols(self) -> int:
        return self.T.shape[1]


# ----------------------------------------------------------------------------- sizes
@nb.njit(cache=True)
def frontier_capacity(X, V, k):
    """Upper bound on the number of stored frontier entries of each sequence, int64 (n,).

    Slot s (positions s..s+k-1; one slot when L < k) holds at most V^(masked positions among
    them) contexts, positions beyond L counting as masked: the sum over the slots.
    """
    n, L = X.shape
    slots = max(L - k + 1, 1)
    out = np.zeros(n, dtype=np.int64)
    for b in range(n):
        masked = 0
        for j in range(k):  # slot 0
            if j >= L or X[b, j] < 0:
                masked += 1
        total = V ** masked
        for s in range(1, slots):
            if X[b, s - 1] < 0:
                masked -= 1
            if X[b, s + k - 1] < 0:
                masked += 1
            total += V ** masked
        out[b] = total
    return out


def _guard(what: str, tables: NGramTables, X: np.ndarray, *, stored: bool, out_bytes: int = 0) -> None:
    """Refuse before allocating when ``what`` on X would exceed the memory or work limits."""
    n, L = X.shape
    C, V = tables.T.shape
    if n == 0 or L == 0:
        return
    per_seq = frontier_capacity(X, V, tables.k)
    scratch = 6 * 8 * C  # frontier lists, accumulator, marks, dense backward vector
    per_thread = scratch + (16 * int(per_seq.max()) if stored else 0)
    alt = "mask fewer positions, use shorter or fewer sequences, or a smaller n-gram"
    check_memory(f"{what} of {n} sequence(s) of length {L} under an n-gram with {C} contexts",
                 per_thread * min(threads(), n) + out_bytes, alt)
    check_work(f"{what} of {n} sequence(s) of length {L} under an n-gram with {C} contexts",
               int(per_seq.sum()) * V * (2 if stored else 1) + n * L, alt)


# ----------------------------------------------------------------------------- frontier steps
@nb.njit(cache=True, nogil=True)
def _initial_frontier(init, V, k, x, L, idx, w):
    """Contexts of the first k positions consistent with x (positions >= L free), weights init[c]; returns m."""
    m = 1
    idx[0] = 0
    for j in range(k):
        tok = x[j] if j < L else -1
        if tok >= 0:
            for i in range(m):
                idx[i] = idx[i] * V + tok
        else:
            for i in range(m - 1, -1, -1):  # in place, from the end
                c = idx[i] * V
                for b in range(V - 1, -1, -1):
                    idx[i * V + b] = c + b
            m *= V
    out = 0
    for i in range(m):
        p = init[idx[i]]
        if p > 0.0:
            idx[out] = idx[i]
            w[out] = p
            out += 1
    return out


@nb.njit(cache=True, nogil=True)
def _step(T, x, idx, w, m, idx2, w2, acc, mark):
    """Advance the weighted frontier (idx, w, m) by one position with token x (-1 = masked); returns m2."""
    C, V = T.shape
    m2 = 0
    for i in range(m):
        c = idx[i]
        base = (c * V) % C
        wi = w[i]
        lo = 0 if x < 0 else x
        hi = V if x < 0 else x + 1
        for b in range(lo, hi):
            p = T[c, b]
            if p > 0.0:
                c2 = base + b
                if not mark[c2]:
                    mark[c2] = True
                    acc[c2] = 0.0
                    idx2[m2] = c2
                    m2 += 1
                acc[c2] += wi * p
    for j in range(m2):
        c2 = idx2[j]
        w2[j] = acc[c2]
        mark[c2] = False
    return m2


@nb.njit(cache=True, nogil=True)
def _normalise(w, m):
    """Divide w[:m] by its sum; returns the sum (0 when the frontier is empty or underflowed)."""
    s = 0.0
    for i in range(m):
        s += w[i]
    if s > 0.0:
        inv = 1.0 / s
        for i in range(m):
            w[i] *= inv
    return s


@nb.njit(cache=True, nogil=True)
def _step_support(T, x, idx, m, idx2, mark):
    """Advance the frontier (idx, m) as a set (T > 0, no arithmetic on probabilities); returns m2."""
    C, V = T.shape
    lo = 0 if x < 0 else x
    hi = V if x < 0 else x + 1
    m2 = 0
    for i in range(m):
        c = idx[i]
        base = (c * V) % C
        for v in range(lo, hi):
            if T[c, v] > 0.0:
                c2 = base + v
                if not mark[c2]:
                    mark[c2] = True
                    idx2[m2] = c2
                    m2 += 1
    for j in range(m2):
        mark[idx2[j]] = False
    return m2


# ----------------------------------------------------------------------------- likelihood and support
@nb.njit(parallel=True, cache=True)
def _forward_kernel(init, T, k, X, n_blocks, boolean, out):
    """out[b] = log q(x_U) (-inf off the support), or with ``boolean`` 1.0 / 0.0 for q(x_U) > 0 decided exactly."""
    n = X.shape[0]
    C = T.shape[0]
    for blk in nb.prange(n_blocks):
        idx = np.empty(C, dtype=np.int64)
        w = np.empty(C)
        idx2 = np.empty(C, dtype=np.int64)
        w2 = np.empty(C)
        acc = np.zeros(C)
        mark = np.zeros(C, dtype=np.bool_)
        for b in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            out[b] = _forward_one(init, T, k, X[b], boolean, idx, w, idx2, w2, acc, mark)


@nb.njit(cache=True, nogil=True)
def _forward_one(init, T, k, x_row, boolean, idx, w, idx2, w2, acc, mark):
    """One sequence of :func:`_forward_kernel` (the scratch arrays are the block's)."""
    C, V = T.shape
    L = x_row.shape[0]
    m = _initial_frontier(init, V, k, x_row, L, idx, w)  # the contexts with init > 0
    s = _normalise(w, m)
    ll = math.log(s) if s > 0.0 else -np.inf
    prod = 1.0  # product of the one-context steps not yet added to ll (one log per ~600 steps)
    t = k
    while m > 0 and t < L:
        x = x_row[t]
        if m == 1 and x >= 0:  # one possible context and a revealed token: the chain rule, O(1)
            c = idx[0]
            p = T[c, x]
            if p > 0.0:
                idx[0] = (c * V) % C + x
                prod *= p
                if prod < 1e-280:
                    ll += math.log(prod)
                    prod = 1.0
            else:
                m = 0
        elif boolean:
            m = _step_support(T, x, idx, m, idx2, mark)
            idx, idx2 = idx2, idx
        else:
            m = _step(T, x, idx, w, m, idx2, w2, acc, mark)
            idx, idx2 = idx2, idx
            w, w2 = w2, w
            s = _normalise(w, m)
            if s > 0.0:
                ll += math.log(s)
            else:
                m = 0
        t += 1
    if boolean:
        return 1.0 if m > 0 else 0.0
    return ll + math.log(prod) if m > 0 else -np.inf


def _blocks(n: int) -> int:
    return max(1, min(n, threads() * _BLOCKS_PER_THREAD))


def log_likelihood(tables: NGramTables, X: np.ndarray) -> np.ndarray:
    """log q(x_U) for every row of X (int64 (n, L), MASK = summed out); -inf off the support."""
    n, L = X.shape
    out = np.zeros(n)
    if n == 0 or L == 0:
        return out  # the empty sequence has probability 1
    _guard("scoring", tables, X, stored=False)
    _forward_kernel(tables.init, tables.T, tables.k, X, _blocks(n), False, out)
    return settle_underflow(out, X, lambda Y: support(tables, Y))


def support(tables: NGramTables, X: np.ndarray) -> np.ndarray:
    """q(x_U) > 0 for every row of X, by exact propagation of the frontier as a set."""
    n, L = X.shape
    if n == 0 or L == 0:
        return np.ones(n, dtype=np.bool_)
    _guard("the support check", tables, X, stored=False)
    out = np.empty(n)
    _forward_kernel(tables.init, tables.T, tables.k, X, _blocks(n), True, out)
    return out > 0.0


# ----------------------------------------------------------------------------- posteriors
@nb.njit(parallel=True, cache=True)
def _posterior_kernel(init, T, k, X, capacity, n_blocks, out, failed):
    """Forward over stored frontiers, then backward; out (n, L, V) gets the marginals."""
    n = X.shape[0]
    C = T.shape[0]
    for blk in nb.prange(n_blocks):
        acc = np.zeros(C)
        mark = np.zeros(C, dtype=np.bool_)
        dense_beta = np.zeros(C)
        scratch_idx = np.empty(C, dtype=np.int64)
        scratch_w = np.empty(C)
        for b in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            failed[b] = not _posterior_one(init, T, k, X[b], capacity[b], out[b], acc, mark, dense_beta,
                                           scratch_idx, scratch_w)


@nb.njit(cache=True, nogil=True)
def _posterior_one(init, T, k, x_row, cap, out_row, acc, mark, dense_beta, scratch_idx, scratch_w):
    """One sequence of :func:`_posterior_kernel`; False when q(x_U) = 0 (out_row is then left as is)."""
    C, V = T.shape
    L = x_row.shape[0]
    slots = max(L - k + 1, 1)
    idx = np.empty(cap, dtype=np.int64)  # the frontier of every slot, one after the other
    alpha = np.empty(cap)
    beta = np.empty(cap)
    offs = np.zeros(slots + 1, dtype=np.int64)
    m = _initial_frontier(init, V, k, x_row, L, scratch_idx, scratch_w)
    if _normalise(scratch_w, m) <= 0.0:
        return False
    idx[:m] = scratch_idx[:m]
    alpha[:m] = scratch_w[:m]
    offs[1] = m
    for s in range(1, slots):
        o0 = offs[s - 1]
        o1 = offs[s]
        m = _step(T, x_row[k - 1 + s], idx[o0:o1], alpha[o0:o1], o1 - o0, scratch_idx, scratch_w, acc, mark)
        if _normalise(scratch_w, m) <= 0.0:
            return False
        idx[o1:o1 + m] = scratch_idx[:m]
        alpha[o1:o1 + m] = scratch_w[:m]
        offs[s + 1] = o1 + m
    # backward: beta on the stored frontier of each slot, from the last slot down.  Slot 0 covers
    # positions 0..min(L, k)-1 (digit j of its contexts); slot s > 0 adds position s+k-1.
    beta[offs[slots - 1]:offs[slots]] = 1.0
    for s in range(slots - 1, -1, -1):
        o0 = offs[s]
        o1 = offs[s + 1]
        z = 0.0
        for i in range(o0, o1):
            z += alpha[i] * beta[i]
        inv = 1.0 / z if z > 0.0 else 0.0
        if s == 0:
            for j in range(min(L, k)):
                _marginal(out_row[j], x_row[j], idx, alpha, beta, o0, o1, inv, V ** (k - 1 - j), V)
            break
        t = s + k - 1
        _marginal(out_row[t], x_row[t], idx, alpha, beta, o0, o1, inv, 1, V)
        # beta of slot s-1: beta(c) = sum_{v matching x_t} T[c, v] beta_s(next(c, v)), max-normalised
        for i in range(o0, o1):
            dense_beta[idx[i]] = beta[i]
        x = x_row[t]
        lo = 0 if x < 0 else x
        hi = V if x < 0 else x + 1
        mx = 0.0
        for i in range(offs[s - 1], o0):
            c = idx[i]
            base = (c * V) % C
            a = 0.0
            for v in range(lo, hi):
                a += T[c, v] * dense_beta[base + v]
            beta[i] = a
            if a > mx:
                mx = a
        for i in range(o0, o1):
            dense_beta[idx[i]] = 0.0
        if mx > 0.0:
            inv_mx = 1.0 / mx
            for i in range(offs[s - 1], o0):
                beta[i] *= inv_mx
    return True


@nb.njit(cache=True, nogil=True)
def _marginal(out_t, x, idx, alpha, beta, o0, o1, inv, div, V):
    """out_t = one-hot of x if revealed, else the law of the context digit (idx // div) % V over the slot o0:o1."""
    for v in range(V):
        out_t[v] = 0.0
    if x >= 0:
        out_t[x] = 1.0
        return
    for i in range(o0, o1):
        g = alpha[i] * beta[i] * inv
        if g != 0.0:
            out_t[(idx[i] // div) % V] += g


def posterior_marginals(tables: NGramTables, X: np.ndarray, off_support: str = "raise") -> np.ndarray:
    """The oracle denoiser q(x_i = v | x_U): float64 (n, L, V); one-hot at revealed positions.

    Same conventions as :func:`mdmt.constructions.languages.inference.posterior_marginals`.
    """
    n, L = X.shape
    C, V = tables.T.shape
    out_bytes = 8 * n * L * V
    if n == 0 or L == 0:
        return np.empty((n, L, V))
    _guard("the posterior marginals", tables, X, stored=True, out_bytes=out_bytes)
    capacity = frontier_capacity(X, V, tables.k)
    out = np.empty((n, L, V))
    failed = np.zeros(n, dtype=np.bool_)
    _posterior_kernel(tables.init, tables.T, tables.k, X, capacity, _blocks(n), out, failed)
    if failed.any():
        if off_support != "uniform":
            i = int(np.flatnonzero(failed)[0])
            raise ValueError(
                f"sequence {i} has probability 0 under the language (q(x_U) = 0), so its posterior is undefined")
        rows = np.flatnonzero(failed)
        Xf = X[rows]
        out[rows] = np.where((Xf < 0)[:, :, None], 1.0 / V, np.eye(V)[np.maximum(Xf, 0)])
    return out


# ----------------------------------------------------------------------------- sampling
@nb.njit(parallel=True, cache=True)
def _sample_kernel(cdf_init, cdf_T, k, U, out):
    """Token t+k-1 is drawn with U[b, t, 0] (t >= 1), the first window with U[b, 0, 0]: the HMM sampler's stream."""
    n, L, _ = U.shape
    C, V = cdf_T.shape
    for b in nb.prange(n):
        c = _draw(cdf_init, U[b, 0, 0])
        for j in range(min(k, L)):
            out[b, j] = (c // V ** (k - 1 - j)) % V
        for t in range(1, L - k + 1):
            v = _draw(cdf_T[c], U[b, t, 0])
            out[b, t + k - 1] = v
            c = (c * V) % C + v


def sample(tables: NGramTables, n: int, length: int, rng: np.random.Generator, chunk: int = 4096) -> np.ndarray:
    """Ancestral sampling; the same random stream (and so the same sequences) as the equivalent HMM's sampler."""
    return sample_by_uniforms(lambda U, out: _sample_kernel(tables.cdf_init, tables.cdf_T, tables.k, U, out),
                              n, length, rng, chunk)
