"""Exact, batched inference on n-gram languages straight from their tables (Section 4.1 of the paper).

An n-gram over |V| = V tokens with k = n-1 has C = V^k contexts; its equivalent HMM
(:meth:`~mdmt.constructions.languages.ngram.NGram.to_hmm`) has C hidden states and a dense
C x C transition matrix -- 8.6 GB for a 4-gram over 32 tokens.  The routines here never build
it.  They use its structure: context c = x_{t-k+1..t} moves only to the V contexts
x_{t-k+2..t} b, which have consecutive indices (``NGramTables.shift``), and a revealed token
fixes one digit of every context whose window contains it.  Positions before k are handled by
the initial law: the first window is every context consistent with x_1..x_min(L,k), tokens
beyond L being summed out (so L < k is exact too).  A fully revealed window followed by a
revealed token is one chain-rule factor, O(1), so a fully revealed sequence costs O(L).

* :func:`log_likelihood` -- log q(x_U) by the scaled forward recursion on the contexts that
  agree with the revealed tokens of the current window: V^M of them for M masked positions
  among x_{t-k+1..t}, a dense vector indexed by the masked digits, so a step (sum out the
  oldest digit, append the new token) is a loop with no look-ups or merges; renormalised at
  every position (no underflow at any L), ``-inf`` off the support (settled by :func:`support`);
* :func:`support` -- q(x_U) > 0 by exact reachability (no floating point): a short list of
  contexts, or a bitset of them advanced by look-ups of the successors of G contexts at a time
  (:class:`ReachTables`), whichever is cheaper at the step (the tables and kernels in
  :mod:`.ngram_reach`);
* :func:`posterior_marginals` -- the oracle denoiser q(x_i = v | x_U) by forward-backward over
  stored *frontiers*, the contexts still possible at each position with their weights (a
  revealed token keeps one successor per context, a masked one V; contexts that agree on their
  last k-1 tokens merge), at most min(C, V^M_t) entries at position t;
* :func:`sample` -- ancestral sampling that consumes the random stream exactly as the HMM
  sampler does on the equivalent HMM, so a seed gives the same sequences on either path.

Each routine's memory and work are estimated first (:mod:`mdmt.runtime.resources`).
The tests check every routine against the equivalent HMM and against brute-force
enumeration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numba as nb
import numpy as np

from mdmt.runtime.parallel import run_ranges
from mdmt.runtime.resources import check_memory, check_work, threads, work_limit
from .inference import _cdf, _draw, sample_by_uniforms, settle_underflow
from .ngram_reach import (  # noqa: F401 -- the support check's tables and kernels; all re-exported (they were defined here)
    _DE_BRUIJN as _DE_BRUIJN,
    _DE_BRUIJN_INDEX as _DE_BRUIJN_INDEX,
    _REACH_TABLE_MAX_BYTES as _REACH_TABLE_MAX_BYTES,
    ReachTables as ReachTables,
    _bits_step as _bits_step,
    _context as _context,
    _fill_reach_tables as _fill_reach_tables,
    _position as _position,
    _set_step as _set_step,
    _successors_after as _successors_after,
    _support_kernel as _support_kernel,
    _support_one as _support_one,
    _support_one_word as _support_one_word,
    _window_contexts as _window_contexts,
    trailing_zeros as trailing_zeros,
)
from mdmt.runtime.numba_cache import configure_numba_cache

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_BLOCKS_PER_THREAD = 4


@dataclass(frozen=True)
class NGramTables:
    """The arrays of one n-gram laid out for the kernels (built once per n-gram)."""

    init: np.ndarray  # (C,) law of the first k tokens, big-endian context index
    T: np.ndarray  # (C, V) P(next | context)
    cdf_init: np.ndarray  # (C,)
    cdf_T: np.ndarray  # (C, V)
    shift: np.ndarray  # (C,) int64: context c followed by token b is context shift[c] + b
    k: int  # n - 1

    @classmethod
    def from_arrays(cls, init: np.ndarray, T: np.ndarray, k: int) -> "NGramTables":
        init = np.ascontiguousarray(init, dtype=np.float64)
        T = np.ascontiguousarray(T, dtype=np.float64)
        C, V = T.shape
        shift = (np.arange(C, dtype=np.int64) % (C // V)) * V
        return cls(init=init, T=T, cdf_init=_cdf(init[None, :])[0], cdf_T=_cdf(T), shift=shift, k=int(k))

    @cached_property
    def reach(self) -> "ReachTables":
        """The successor tables of :func:`support` (built on first use)."""
        return ReachTables.build(self)

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
    """Refuse before allocating when ``what`` on X would exceed the memory or work limits.

    Without stored frontiers the memory does not depend on X, and the work is checked slot by slot
    (:func:`frontier_capacity`) only when its bound with C contexts in every slot exceeds the limit.
    """
    n, L = X.shape
    C, V = tables.T.shape
    if n == 0 or L == 0:
        return
    factor = 2 if stored else 1
    bound = n * max(L - tables.k + 1, 1) * C * V * factor + n * L
    if stored or bound > work_limit():
        per_seq = frontier_capacity(X, V, tables.k)
        peak, work = int(per_seq.max()), int(per_seq.sum()) * V * factor + n * L
    else:
        peak, work = 0, bound
    scratch = 6 * 8 * C  # frontier lists, accumulator, marks, dense backward vector
    per_thread = scratch + (24 * peak if stored else 0)  # stored: index, alpha and beta of each frontier entry
    alt = "mask fewer positions, use shorter or fewer sequences, or a smaller n-gram"
    check_memory(f"{what} of {n} sequence(s) of length {L} under an n-gram with {C} contexts",
                 per_thread * min(threads(), n) + out_bytes, alt)
    check_work(f"{what} of {n} sequence(s) of length {L} under an n-gram with {C} contexts", work, alt)


# ----------------------------------------------------------------------------- windows and frontier steps
@nb.njit(cache=True, nogil=True)
def _initial_frontier(init, V, k, x, L, idx, w):
    """Contexts of the first k positions consistent with x (positions >= L free), weights init[c] > 0; returns m."""
    m = _window_contexts(V, k, x, L, idx)
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


# ----------------------------------------------------------------------------- likelihood
@nb.njit(cache=True, nogil=True)
def _accumulate(s, ll, prod):
    """Fold a normaliser 0 < s <= 1 into the log-likelihood ll + log(prod); returns (ll, prod).

    Products of normalisers are kept in ``prod`` and logged once they fall below 1e-200 (tiny s are
    logged at once), so a long run of steps costs few logarithms and ``prod`` never underflows.
    """
    if s < 1e-100:
        return ll + math.log(s), prod
    prod *= s
    if prod < 1e-200:
        return ll + math.log(prod), 1.0
    return ll, prod


@nb.njit(cache=True, nogil=True)
def _slide(T, shift, x, drop, A, K, cur, m):
    """Slide the window's forward weights (A[cur, :m] on contexts K[cur, :m]) by token x into A, K[1 - cur].

    The m = V^M entries are the contexts consistent with the revealed tokens of the window, in
    big-endian order of its M masked positions.  With ``drop`` (the oldest position of the window is
    masked) entry j = a * ms + s, a = 0..V-1, shares its suffix s with V - 1 others and the oldest digit
    a is summed out; the new token is appended as the last digit, all V values when x is masked, else
    x alone:  new[s * V + b] = sum_a A[a * ms + s] T[ctx, b],  or  new[s] = sum_a A[a * ms + s] T[ctx, x].
    This is the forward recursion of the equivalent HMM restricted to the window states that agree with
    the revealed tokens, as a dense loop with no look-ups.  Returns (the new m, the sum of the new,
    unnormalised weights).
    """
    V = T.shape[1]
    nxt = 1 - cur
    ms = m // V if drop else m
    m2 = ms * V if x < 0 else ms
    for j in range(m2):
        A[nxt, j] = 0.0
    for a in range(m // ms):
        for s in range(ms):
            w = A[cur, a * ms + s]
            if w != 0.0:
                c = K[cur, a * ms + s]
                if x < 0:
                    for b in range(V):
                        A[nxt, s * V + b] += w * T[c, b]
                else:
                    A[nxt, s] += w * T[c, x]
    for s in range(ms):
        base = shift[K[cur, s]]
        if x < 0:
            for b in range(V):
                K[nxt, s * V + b] = base + b
        else:
            K[nxt, s] = base + x
    total = 0.0
    for j in range(m2):
        total += A[nxt, j]
    return m2, total


@nb.njit(cache=True, nogil=True)
def _loglik_one(init, T, shift, k, x, A, K):
    """log q(x_U) of one sequence, -inf off the support: the scaled forward recursion over window contexts.

    The weights live on the contexts consistent with the revealed tokens of the current window (V^M of
    them for M masked positions, see :func:`_slide`) and are renormalised at every step; a window with no
    masked position followed by a revealed token is one chain-rule factor, O(1).
    """
    V = T.shape[1]
    L = x.shape[0]
    m = _window_contexts(V, k, x, L, K[0])
    s = 0.0
    for j in range(m):
        A[0, j] = init[K[0, j]]
        s += A[0, j]
    if s <= 0.0:
        return -np.inf
    inv = 1.0 / s
    for j in range(m):
        A[0, j] *= inv
    ll = math.log(s)
    prod = 1.0
    cur = np.int64(0)  # not a literal 0: one signature for _slide (mdmt.runtime.numba_cache)
    for t in range(k, L):
        xt = x[t]
        if m == 1 and xt >= 0:  # one context, a revealed token: the chain rule
            c = K[cur, 0]
            p = T[c, xt]
            if p <= 0.0:
                return -np.inf
            K[cur, 0] = shift[c] + xt
            ll, prod = _accumulate(p, ll, prod)
            continue
        m, s = _slide(T, shift, xt, x[t - k] < 0, A, K, cur, m)
        cur = 1 - cur
        if s <= 0.0:
            return -np.inf
        inv = 1.0 / s
        for j in range(m):
            A[cur, j] *= inv
        ll, prod = _accumulate(s, ll, prod)
    return ll + math.log(prod)


@nb.njit(cache=True, nogil=True)
def _loglik_kernel(lo, hi, init, T, shift, k, X, n_blocks, out):
    """out[b] = log q(x_U) of row b of X (-inf off the support), for the rows of blocks lo..hi-1 of n_blocks."""
    n = X.shape[0]
    C = T.shape[0]
    for blk in range(lo, hi):
        A = np.empty((2, C))
        K = np.empty((2, C), dtype=np.int64)
        for b in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            out[b] = _loglik_one(init, T, shift, k, X[b], A, K)


def _blocks(n: int) -> int:
    return max(1, min(n, threads() * _BLOCKS_PER_THREAD))


def log_likelihood(tables: NGramTables, X: np.ndarray) -> np.ndarray:
    """log q(x_U) for every row of X (int64 (n, L), MASK = summed out); -inf off the support."""
    n, L = X.shape
    out = np.zeros(n)
    if n == 0 or L == 0:
        return out  # the empty sequence has probability 1
    _guard("scoring", tables, X, stored=False)
    nbk = _blocks(n)
    run_ranges(_loglik_kernel, nbk, tables.init, tables.T, tables.shift, tables.k, X, nbk, out)
    return settle_underflow(out, X, lambda Y: support(tables, Y))


# ----------------------------------------------------------------------------- support
def support(tables: NGramTables, X: np.ndarray, reach: ReachTables | None = None) -> np.ndarray:
    """q(x_U) > 0 for every row of X, by exact reachability on sets of contexts.

    ``reach`` (default ``tables.reach``, built on first use) are the successor tables of
    :class:`ReachTables`.
    """
    n, L = X.shape
    if n == 0 or L == 0:
        return np.ones(n, dtype=np.bool_)
    _guard("the support check", tables, X, stored=False)
    r = tables.reach if reach is None else reach
    out = np.empty(n, dtype=np.bool_)
    nbk = _blocks(n)
    run_ranges(_support_kernel, nbk, tables.init, tables.T, tables.shift, tables.k, X, r.group, r.nw, r.gpos, r.table,
               r.allowed, r.spread, r.after, nbk, out)
    return out


# ----------------------------------------------------------------------------- posteriors
@nb.njit(cache=True, nogil=True)
def _posterior_kernel(lo, hi, init, T, k, X, capacity, n_blocks, out, failed):
    """Forward over stored frontiers, then backward; out (n, L, V) gets the marginals of the rows of blocks lo..hi-1."""
    n = X.shape[0]
    C = T.shape[0]
    for blk in range(lo, hi):
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
    for j in range(m):  # element loops, not slice assignments: those pull numba's shape-error code into the build
        idx[j] = scratch_idx[j]
        alpha[j] = scratch_w[j]
    offs[1] = m
    for s in range(1, slots):
        o0 = offs[s - 1]
        o1 = offs[s]
        m = _step(T, x_row[k - 1 + s], idx[o0:o1], alpha[o0:o1], o1 - o0, scratch_idx, scratch_w, acc, mark)
        if _normalise(scratch_w, m) <= 0.0:
            return False
        for j in range(m):
            idx[o1 + j] = scratch_idx[j]
            alpha[o1 + j] = scratch_w[j]
        offs[s + 1] = o1 + m
    # backward: beta on the stored frontier of each slot, from the last slot down.  Slot 0 covers
    # positions 0..min(L, k)-1 (digit j of its contexts); slot s > 0 adds position s+k-1.
    for j in range(offs[slots - 1], offs[slots]):
        beta[j] = 1.0
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
        _marginal(out_row[t], x_row[t], idx, alpha, beta, o0, o1, inv, np.int64(1), V)
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
    nbk = _blocks(n)
    run_ranges(_posterior_kernel, nbk, tables.init, tables.T, tables.k, X, capacity, nbk, out, failed)
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
@nb.njit(cache=True, nogil=True)
def _sample_kernel(lo, hi, cdf_init, cdf_T, k, U, out):
    """Token t+k-1 is drawn with U[b, t, 0] (t >= 1), the first window with U[b, 0, 0]: the HMM sampler's stream."""
    n, L, _ = U.shape
    C, V = cdf_T.shape
    for b in range(lo, hi):
        c = _draw(cdf_init, U[b, 0, 0])
        for j in range(min(k, L)):
            out[b, j] = (c // V ** (k - 1 - j)) % V
        for t in range(1, L - k + 1):
            v = _draw(cdf_T[c], U[b, t, 0])
            out[b, t + k - 1] = v
            c = (c * V) % C + v


def sample(tables: NGramTables, n: int, length: int, rng: np.random.Generator, chunk: int = 4096) -> np.ndarray:
    """Ancestral sampling; the same random stream (and so the same sequences) as the equivalent HMM's sampler."""
    return sample_by_uniforms(lambda U, out: run_ranges(_sample_kernel, U.shape[0], tables.cdf_init, tables.cdf_T,
                                                        tables.k, U, out),
                              n, length, rng, chunk)
