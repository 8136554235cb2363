"""Exact, batched inference on HMM languages (Section 4.1; the oracle denoiser of Section 3.2).

* ``log_likelihood`` — log q(x_U) by the scaled forward recursion: the forward
  vector is renormalised at every position and the logs of the normalisers are
  summed, so L = 4096 (or any L) cannot underflow.  Masked positions have
  emission 1, which sums them out.
* ``support`` — q(x_U) > 0 decided by boolean reachability on bitsets of hidden
  states (no floating point at all, hence no underflow).
* ``posterior_marginals`` — the oracle denoiser q(x_i | x_U) (the optimum of the
  ELBO) by scaled forward-backward.
* ``sample`` — ancestral sampling by inverse CDF from pre-drawn uniforms, so the
  result depends only on the seed.

Dense transition matrices use a register-friendly numba loop over a block of
sequences; large, sparse ones (the n-gram window HMMs) use CSR loops whose cost
is proportional to the number of non-zero transitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.parallel import run_ranges

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_SPARSE_MIN_STATES = 64
_SPARSE_MAX_DENSITY = 0.25
_SUPPORT_TABLE_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class KernelParams:
    """Arrays of one HMM laid out for the kernels (built once per HMM)."""

    pi: np.ndarray  # (S,)
    A: np.ndarray  # (S, S)
    BT: np.ndarray  # (V, S): emission column of each token, contiguous
    B: np.ndarray  # (S, V)
    sparse: bool
    indptr: np.ndarray  # CSR of A (rows = from-state)
    indices: np.ndarray
    data: np.ndarray
    AT: np.ndarray  # (S, S) transpose of A, contiguous
    start_bits: np.ndarray  # (W,) uint64
    emit_bits: np.ndarray  # (V + 1, W) uint64; row V = all states (masked position)
    succ_bits: np.ndarray  # (S, W) uint64
    succ_table: np.ndarray  # (C, 256, W) uint64 or empty
    cdf_start: np.ndarray
    cdf_trans: np.ndarray
    cdf_emit: np.ndarray

    @classmethod
    def from_arrays(cls, pi: np.ndarray, A: np.ndarray, B: np.ndarray) -> "KernelParams":
        S, V = B.shape
        pi = np.ascontiguousarray(pi, dtype=np.float64)
        A = np.ascontiguousarray(A, dtype=np.float64)
        B = np.ascontiguousarray(B, dtype=np.float64)
        nnz = int(np.count_nonzero(A))
        sparse = S >= _SPARSE_MIN_STATES and nnz <= _SPARSE_MAX_DENSITY * S * S
        indptr, indices, data = _csr(A)
        W = (S + 63) // 64
        succ_bits = _bits(A > 0)
        emit_bits = np.empty((V + 1, W), dtype=np.uint64)
        emit_bits[:V] = _bits(B.T > 0)
        emit_bits[V] = _bits(np.ones((1, S), dtype=bool))[0]
        start_bits = _bits((pi > 0)[None, :])[0]
        C = (S + 7) // 8
        if C * 256 * W * 8 <= _SUPPORT_TABLE_MAX_BYTES:
            succ_table = _byte_table(succ_bits, C)
        else:
            succ_table = np.zeros((0, 256, W), dtype=np.uint64)
        return cls(
            pi=_frozen(pi), A=_frozen(A), BT=_frozen(B.T), B=_frozen(B), sparse=sparse,
            indptr=_frozen(indptr), indices=_frozen(indices), data=_frozen(data),
            AT=_frozen(A.T),
            start_bits=_frozen(start_bits), emit_bits=_frozen(emit_bits), succ_bits=_frozen(succ_bits),
            succ_table=_frozen(succ_table),
            # the CDFs stay writable: :func:`_draw` also takes rows of arrays a kernel builds (one signature)
            cdf_start=_cdf(pi[None, :])[0], cdf_trans=_cdf(A), cdf_emit=_cdf(B),
        )


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only C-contiguous copy of ``a``.  Every array a kernel reads from :class:`KernelParams` is read-only, so
    each kernel is compiled for one signature: numba types a read-only array apart from a writable one, and the
    caller's arrays (an HMM's frozen ``transmat_`` or a fresh product) would otherwise give both."""
    out = np.array(a, order="C", copy=True)
    out.setflags(write=False)
    return out


def _csr(M: np.ndarray):
    rows, cols = np.nonzero(M)
    indptr = np.zeros(M.shape[0] + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols.astype(np.int64), np.ascontiguousarray(M[rows, cols])


def _bits(mask: np.ndarray) -> np.ndarray:
    """Pack a boolean (R, S) matrix into (R, ceil(S/64)) uint64 bitsets (bit k of word w = state 64w+k)."""
    R, S = mask.shape
    W = (S + 63) // 64
    out = np.zeros((R, W), dtype=np.uint64)
    for s in np.flatnonzero(mask.any(axis=0)):
        out[mask[:, s], s // 64] |= np.uint64(1) << np.uint64(s % 64)
    return out


def _byte_table(succ_bits: np.ndarray, C: int) -> np.ndarray:
    """table[c, b] = OR of the successor sets of the states 8c+k whose bit k is set in byte b."""
    S, W = succ_bits.shape
    table = np.zeros((C, 256, W), dtype=np.uint64)
    for c in range(C):
        for k in range(8):
            s = 8 * c + k
            if s >= S:
                break
            has = (np.arange(256) >> k) & 1 == 1
            table[c, has] |= succ_bits[s]
    return table


def _cdf(P: np.ndarray) -> np.ndarray:
    """Row-wise CDFs whose last positive entry is exactly 1 (so u in [0,1) never selects a zero-probability entry)."""
    cdf = np.cumsum(P, axis=1)
    for r in range(P.shape[0]):
        last = np.flatnonzero(P[r] > 0)[-1]
        cdf[r, last:] = 1.0
    return np.ascontiguousarray(cdf)


# --------------------------------------------------------------------------- forward
_BLOCK = 128  # sequences advanced together by one BLAS matrix product in the forward kernel
_POST_BLOCK = 32  # the same for forward-backward (which stores L forward vectors per sequence)


@nb.njit(cache=True, nogil=True)
def _emission_row(BT, ones, x):
    return ones if x < 0 else BT[x]


@nb.njit(cache=True, nogil=True)
def _emit_and_normalise(new, BT, ones, x, alpha, ll, dead):
    """alpha[r] = new[r] * e(x[r]) / c_r and ll[r] += log c_r; a zero normaliser marks r dead."""
    m, S = new.shape
    for r in range(m):
        if dead[r]:
            continue
        e = _emission_row(BT, ones, x[r])
        c = 0.0
        for j in range(S):
            v = new[r, j] * e[j]
            alpha[r, j] = v
            c += v
        if c > 0.0:
            ll[r] += math.log(c)
            inv = 1.0 / c
            for j in range(S):
                alpha[r, j] *= inv
        else:
            dead[r] = True
            for j in range(S):
                alpha[r, j] = 0.0


@nb.njit(cache=True, nogil=True)
def _loglik_dense(lo, hi, pi, A, BT, XT, out):
    """Scaled forward on the blocks lo..hi-1 of _BLOCK sequences; XT is X transposed, int64 (L, n)."""
    L, n = XT.shape
    S = pi.shape[0]
    ones = np.ones(S)
    for blk in range(lo, hi):
        b0 = blk * _BLOCK
        b1 = min(n, b0 + _BLOCK)
        m = b1 - b0
        alpha = np.empty((m, S))
        ll = np.zeros(m)
        dead = np.zeros(m, dtype=np.bool_)
        init = np.empty((m, S))
        for r in range(m):
            for s in range(S):
                init[r, s] = pi[s]
        _emit_and_normalise(init, BT, ones, XT[0, b0:b1], alpha, ll, dead)
        for t in range(1, L):
            new = np.dot(alpha, A)
            _emit_and_normalise(new, BT, ones, XT[t, b0:b1], alpha, ll, dead)
        for r in range(m):
            out[b0 + r] = -np.inf if dead[r] else ll[r]


@nb.njit(cache=True, nogil=True)
def _loglik_sparse(lo, hi, pi, indptr, indices, data, BT, X, out):
    n, L = X.shape
    S = pi.shape[0]
    ones = np.ones(S)
    for b in range(lo, hi):
        alpha = np.empty(S)
        new = np.empty(S)
        e = _emission_row(BT, ones, X[b, 0])
        c = 0.0
        for s in range(S):
            alpha[s] = pi[s] * e[s]
            c += alpha[s]
        if c <= 0.0:
            out[b] = -np.inf
            continue
        ll = math.log(c)
        alpha /= c
        ok = True
        for t in range(1, L):
            new[:] = 0.0
            for i in range(S):
                a = alpha[i]
                if a != 0.0:
                    for k in range(indptr[i], indptr[i + 1]):
                        new[indices[k]] += a * data[k]
            e = _emission_row(BT, ones, X[b, t])
            c = 0.0
            for j in range(S):
                alpha[j] = new[j] * e[j]
                c += alpha[j]
            if c <= 0.0:
                ok = False
                break
            ll += math.log(c)
            alpha /= c
        out[b] = ll if ok else -np.inf


def log_likelihood(p: KernelParams, X: np.ndarray) -> np.ndarray:
    """log q(x_U) for every row of X (int64 (n, L), MASK = summed out); -inf off the support.

    The empty sequence (L = 0) has probability 1: log-likelihood 0.
    """
    out = np.zeros(X.shape[0])
    if X.shape[0] == 0 or X.shape[1] == 0:  # the kernels read position 0: never call them on L = 0
        return out
    if p.sparse:
        run_ranges(_loglik_sparse, X.shape[0], p.pi, p.indptr, p.indices, p.data, p.BT, X, out)
    else:
        run_ranges(_loglik_dense, -(-X.shape[0] // _BLOCK), p.pi, p.A, p.BT, np.ascontiguousarray(X.T), out)
    return settle_underflow(out, X, lambda Y: support(p, Y))


def settle_underflow(out: np.ndarray, X: np.ndarray, support) -> np.ndarray:
    """Return the log-likelihoods ``out`` after checking each -inf with the exact ``support`` of its sequence.

    Scaled recursions can only reach 0 by exact zeros or by underflow of a normaliser below
    ~1e-308; a -inf of a sequence in the support is the latter, an error rather than a wrong -inf.
    """
    suspicious = np.isneginf(out)
    if suspicious.any() and support(X[suspicious]).any():
        raise ValueError("log-likelihood underflowed for a sequence in the support "
                         "(some per-position probability is below 1e-308)")
    return out


# --------------------------------------------------------------------------- support
@nb.njit(cache=True, nogil=True)
def _support_kernel(lo, hi, start_bits, emit_bits, succ_bits, succ_table, X, out):
    n, L = X.shape
    W = start_bits.shape[0]
    S = succ_bits.shape[0]
    V = emit_bits.shape[0] - 1
    use_table = succ_table.shape[0] > 0
    C = succ_table.shape[0]
    for b in range(lo, hi):
        reach = np.empty(W, dtype=np.uint64)
        new = np.empty(W, dtype=np.uint64)
        x = X[b, 0]
        row = V if x < 0 else x
        alive = False
        for w in range(W):
            reach[w] = start_bits[w] & emit_bits[row, w]
            if reach[w] != 0:
                alive = True
        t = 1
        while alive and t < L:
            new[:] = 0
            if use_table:
                for c in range(C):
                    byte = (reach[c >> 3] >> np.uint64((c & 7) * 8)) & np.uint64(0xFF)
                    if byte != 0:
                        tb = succ_table[c, byte]
                        for w in range(W):
                            new[w] |= tb[w]
            else:
                for s in range(S):
                    if (reach[s >> 6] >> np.uint64(s & 63)) & np.uint64(1):
                        for w in range(W):
                            new[w] |= succ_bits[s, w]
            x = X[b, t]
            row = V if x < 0 else x
            alive = False
            for w in range(W):
                reach[w] = new[w] & emit_bits[row, w]
                if reach[w] != 0:
                    alive = True
            t += 1
        out[b] = alive


@nb.njit(cache=True, nogil=True)
def _support_kernel_1word(lo, hi, start, emit, table, X, out):
    """Reachability for S <= 64 states: the reachable set is one uint64 word."""
    n, L = X.shape
    V = emit.shape[0] - 1
    C = table.shape[0]
    for b in range(lo, hi):
        x = X[b, 0]
        reach = start & emit[V if x < 0 else x]
        t = 1
        while reach != 0 and t < L:
            new = np.uint64(0)
            for c in range(C):
                new |= table[c, (reach >> np.uint64(8 * c)) & np.uint64(0xFF)]
            x = X[b, t]
            reach = new & emit[V if x < 0 else x]
            t += 1
        out[b] = reach != 0


def support(p: KernelParams, X: np.ndarray) -> np.ndarray:
    """q(x_U) > 0 for every row of X, by exact boolean reachability (the empty sequence is in the support)."""
    out = np.ones(X.shape[0], dtype=np.bool_)
    if X.shape[1] == 0:  # the kernels read position 0: never call them on L = 0
        return out
    if X.shape[0] and p.start_bits.shape[0] == 1 and p.succ_table.shape[0] > 0:
        run_ranges(_support_kernel_1word, X.shape[0], p.start_bits[0], p.emit_bits[:, 0].copy(),
                   p.succ_table[:, :, 0].copy(), X, out)
    elif X.shape[0]:
        run_ranges(_support_kernel, X.shape[0], p.start_bits, p.emit_bits, p.succ_bits, p.succ_table, X, out)
    return out


# --------------------------------------------------------------------------- posteriors
@nb.njit(cache=True, nogil=True)
def _posterior_sparse(lo, hi, pi, indptr, indices, data, B, BT, X, out, failed):
    """Scaled forward-backward per sequence (rows lo..hi-1) with CSR transitions."""
    n, L = X.shape
    S, V = B.shape
    ones = np.ones(S)
    for b in range(lo, hi):
        alpha = np.empty((L, S))
        beta = np.empty(S)
        tmp = np.empty(S)
        gamma = np.empty(S)
        e = _emission_row(BT, ones, X[b, 0])
        c = 0.0
        for s in range(S):
            alpha[0, s] = pi[s] * e[s]
            c += alpha[0, s]
        if c <= 0.0:
            failed[b] = True
            continue
        for s in range(S):
            alpha[0, s] /= c
        ok = True
        for t in range(1, L):
            for j in range(S):
                tmp[j] = 0.0
            for i in range(S):
                a = alpha[t - 1, i]
                if a != 0.0:
                    for k in range(indptr[i], indptr[i + 1]):
                        tmp[indices[k]] += a * data[k]
            e = _emission_row(BT, ones, X[b, t])
            c = 0.0
            for j in range(S):
                v = tmp[j] * e[j]
                alpha[t, j] = v
                c += v
            if c <= 0.0:
                ok = False
                break
            inv = 1.0 / c
            for j in range(S):
                alpha[t, j] *= inv
        if not ok:
            failed[b] = True
            continue
        for s in range(S):
            beta[s] = 1.0
        for t in range(L - 1, -1, -1):
            # gamma_t ∝ alpha_t * beta_t (alpha_t includes the emission at t)
            if X[b, t] < 0:
                z = 0.0
                for s in range(S):
                    gamma[s] = alpha[t, s] * beta[s]
                    z += gamma[s]
                for v in range(V):
                    out[b, t, v] = 0.0
                for s in range(S):
                    g = gamma[s] / z
                    if g != 0.0:
                        for v in range(V):
                            out[b, t, v] += g * B[s, v]
            else:
                for v in range(V):
                    out[b, t, v] = 0.0
                out[b, t, X[b, t]] = 1.0
            if t > 0:
                # beta_{t-1}(i) = sum_j A[i, j] e_t(j) beta_t(j), renormalised
                e = _emission_row(BT, ones, X[b, t])
                for j in range(S):
                    tmp[j] = e[j] * beta[j]
                m = 0.0
                for i in range(S):
                    acc = 0.0
                    for k in range(indptr[i], indptr[i + 1]):
                        acc += data[k] * tmp[indices[k]]
                    beta[i] = acc
                    if acc > m:
                        m = acc
                inv = 1.0 / m
                for i in range(S):
                    beta[i] *= inv


@nb.njit(cache=True, nogil=True)
def _posterior_dense(lo, hi, pi, A, AT, B, BT, XT, out, failed):
    """Scaled forward-backward on the blocks lo..hi-1 of _POST_BLOCK sequences with BLAS products; XT is int64
    (L, n)."""
    L, n = XT.shape
    S, V = B.shape
    ones = np.ones(S)
    for blk in range(lo, hi):
        b0 = blk * _POST_BLOCK
        b1 = min(n, b0 + _POST_BLOCK)
        m = b1 - b0
        alphas = np.empty((L, m, S))
        ll = np.zeros(m)
        dead = np.zeros(m, dtype=np.bool_)
        init = np.empty((m, S))
        for r in range(m):
            for s in range(S):
                init[r, s] = pi[s]
        _emit_and_normalise(init, BT, ones, XT[0, b0:b1], alphas[0], ll, dead)
        for t in range(1, L):
            _emit_and_normalise(np.dot(alphas[t - 1], A), BT, ones, XT[t, b0:b1], alphas[t], ll, dead)
        for r in range(m):
            if dead[r]:  # q(x_U) = 0: flagged; the block's other sequences go on
                failed[b0 + r] = True
                for t in range(L):
                    for s in range(S):
                        alphas[t, r, s] = 1.0
        beta = np.ones((m, S))
        gamma = np.empty((m, S))
        tmp = np.empty((m, S))
        for t in range(L - 1, -1, -1):
            for r in range(m):
                z = 0.0
                for s in range(S):
                    g = alphas[t, r, s] * beta[r, s]
                    gamma[r, s] = g
                    z += g
                inv = 1.0 / z if z > 0.0 else 0.0
                for s in range(S):
                    gamma[r, s] *= inv
            marg = np.dot(gamma, B)
            for r in range(m):
                x = XT[t, b0 + r]
                for v in range(V):
                    out[b0 + r, t, v] = marg[r, v] if x < 0 else 0.0
                if x >= 0:
                    out[b0 + r, t, x] = 1.0
            if t > 0:
                for r in range(m):
                    e = _emission_row(BT, ones, XT[t, b0 + r])
                    for s in range(S):
                        tmp[r, s] = e[s] * beta[r, s]
                beta = np.dot(tmp, AT)
                for r in range(m):
                    mx = 0.0
                    for s in range(S):
                        if beta[r, s] > mx:
                            mx = beta[r, s]
                    inv = 1.0 / mx if mx > 0.0 else 1.0
                    for s in range(S):
                        beta[r, s] = beta[r, s] * inv if mx > 0.0 else 1.0


def posterior_marginals(p: KernelParams, X: np.ndarray, off_support: str = "raise") -> np.ndarray:
    """The oracle denoiser q(x_i = v | x_U): float64 (n, L, V); one-hot at revealed positions.

    Where q(x_U) = 0 the posterior is undefined: ``off_support="raise"`` raises a
    ``ValueError``; ``"uniform"`` returns the uniform law at the masked positions
    (the convention of the oracle sampler once a sample has left the support).
    """
    n, L = X.shape
    V = p.B.shape[1]
    out = np.empty((n, L, V))
    if n == 0 or L == 0:  # the kernels read position 0: never call them on L = 0
        return out
    failed = np.zeros(n, dtype=np.bool_)
    if p.sparse:
        run_ranges(_posterior_sparse, n, p.pi, p.indptr, p.indices, p.data, p.B, p.BT, X, out, failed)
    else:
        run_ranges(_posterior_dense, -(-n // _POST_BLOCK), p.pi, p.A, p.AT, p.B, p.BT, np.ascontiguousarray(X.T),
                   out, failed)
    if failed.any():
        if off_support != "uniform":
            i = int(np.flatnonzero(failed)[0])
            raise ValueError(
                f"sequence {i} has probability 0 under the language (q(x_U) = 0), so its posterior is undefined"
            )
        rows = np.flatnonzero(failed)
        Xf = X[rows]
        out[rows] = np.where((Xf < 0)[:, :, None], 1.0 / V, np.eye(V)[np.maximum(Xf, 0)])
    return out


# --------------------------------------------------------------------------- sampling
@nb.njit(cache=True)
def _draw(cdf_row, u):
    lo = 0
    hi = cdf_row.shape[0] - 1
    while lo < hi:  # first index with cdf > u
        mid = (lo + hi) >> 1
        if cdf_row[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@nb.njit(cache=True, nogil=True)
def _sample_kernel(lo, hi, cdf_start, cdf_trans, cdf_emit, U, out):
    n, L, _ = U.shape
    for b in range(lo, hi):
        h = _draw(cdf_start, U[b, 0, 0])
        for t in range(L):
            if t > 0:
                h = _draw(cdf_trans[h], U[b, t, 0])
            out[b, t] = _draw(cdf_emit[h], U[b, t, 1])


def sample(p: KernelParams, n: int, length: int, rng: np.random.Generator, chunk: int = 4096) -> np.ndarray:
    """Ancestral sampling; uniforms are drawn in sequence order so the result depends only on the seed."""
    return sample_by_uniforms(lambda U, out: run_ranges(_sample_kernel, U.shape[0], p.cdf_start, p.cdf_trans,
                                                        p.cdf_emit, U, out),
                              n, length, rng, chunk)


def sample_by_uniforms(kernel, n: int, length: int, rng: np.random.Generator, chunk: int = 4096) -> np.ndarray:
    """int64 (n, length) filled block by block by ``kernel(U, out_block)``, U (rows, length, 2) uniforms.

    The uniforms are drawn in sequence order, so the result depends only on the seed (not on
    ``chunk``); the HMM and the n-gram samplers share this stream.  L = 0 never reaches a kernel.
    """
    out = np.empty((n, length), dtype=np.int64)
    if length == 0:  # the kernels read position 0
        return out
    rows = max(1, min(chunk, (1 << 24) // max(1, 2 * length)))
    for s in range(0, n, rows):
        e = min(n, s + rows)
        kernel(rng.random((e - s, length, 2)), out[s:e])
    return out
