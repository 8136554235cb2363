"""The factorised masked diffusion sampler for any L (Section 3.2, Eq. 3), with ddpm_cache NFE counting.

Every position's reveal step tau_i is drawn i.i.d. from pi; at step j the positions with
tau_i = j (the set S_j) are drawn independently from denoiser(x_{U_j}), U_j the positions
revealed before step j.  A step that reveals nothing in a sequence changes nothing, so
under ddpm_cache the denoiser is evaluated for a sequence only at the steps where it
reveals something: NFE = #{j : S_j != {}} per sequence (E[NFE] = sum_j 1 - (1 - pi_j)^L).
The output law is exactly p_N of :mod:`.exact`.

Randomness: sequences are processed in blocks of ``BLOCK`` rows; for each block the
reveal steps (inverse CDF of pi) and then one uniform per position are drawn from the
generator, and a token is the inverse-CDF draw of its uniform.  The result depends only
on the seed, not on the batch size or the method: every method draws the same samples for
the same seed wherever the denoiser laws agree to rounding (tested).

Methods:

* ``generic`` calls any denoiser (the protocol: ``denoiser(X (B, L)) -> (B, L, V)``) on
  every sequence that reveals something at a step, in batches, and refuses a law that is not
  a probability vector (NaN, a negative entry, a sum off 1), naming sequence, position and step.
* ``kernel`` -- the message kernel (the oracle of an HMM or n-gram language, and the oracle
  transforms :class:`.denoisers.TemperedOracle` / ``UniformMixture``): a numba kernel that
  needs q(x_i | x_U) only at the positions of S_j.  Forward messages are carried only
  through the revealed positions, across each masked run with a precomputed power A^g of
  the transition matrix, and the backward messages likewise, so a step costs
  O((|U_j| + |S_j|) S^2) instead of a full forward-backward pass O(L S^2).  Messages are
  renormalised at every revealed position (no underflow at any L); a context with
  q(x_U) = 0 is detected exactly (sums of non-negative products) and, like
  ``posterior_marginals(..., off_support="uniform")``, continued with the uniform law.
* ``segments`` -- the same messages, computed only where a reveal can change them.  A
  *separator* makes the two sides of the sequence conditionally independent given x_U:
  for an n-gram, a run of n - 1 revealed tokens fixes the hidden window state (the paper's
  separator, Definition B.4); for any HMM, a position after which the chain forgets (every
  state of the prior support has the same row of A; the interval HMM forgets at the end of
  every interval).  The law of a target needs only the evidence between its nearest
  separators, so a step costs the segments in which something is revealed, not all of U_j.
  Because q(x_U) is the product of the segments' probabilities, the exact "q(x_U) = 0" test
  is kept by re-checking, after each step, the segments that received two or more reveals
  (one token drawn from q(. | x_U), or a tempered q, cannot leave the support).  On the
  ``3gram`` preset at L = N = 2048 it is more than 10x faster than ``kernel``
  (benchmarks/bench_reverse.py); without separators it has nothing to skip.
* ``auto`` (the default): ``segments`` where the language has separators, else ``kernel``,
  for the oracle and its transforms; ``generic`` for any other denoiser.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba as nb
import numpy as np

from ..confidence import mean_interval
from ..languages.ngram import NGram, as_hmm
from ..resources import check_memory
from ..validation import MASK, as_rng, positive_int
from .denoisers import oracle_denoiser
from .schedules import as_pi
from ..numba_cache import configure_numba_cache
from mdmt.constructions.types import Denoiser, Language, RevealProbabilities, Seed

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

BLOCK = 4096  # rows per block of random draws (fixes the stream of random numbers)
KERNEL_MAX_STATES = 1024  # message kernel up to this many hidden states
_POWER_BUDGET = 128 << 20  # bytes for the tables of matrix powers A^g and their transposes


def draw_reveal_steps(pi: np.ndarray, num: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """tau (num, L) i.i.d. from pi, steps numbered 1..N (inverse CDF of one uniform each)."""
    pi = as_pi(pi)
    cdf = np.cumsum(pi)
    cdf[np.flatnonzero(pi > 0)[-1]:] = 1.0
    return np.searchsorted(cdf, rng.random((num, L)), side="right") + 1


def draw_tokens(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw from rows P (m, V) with uniforms u (m,): the first v with cdf[v] > u * total.

    A token of probability 0 is never drawn.
    """
    cdf = np.cumsum(P, axis=1)
    return np.minimum((cdf <= u[:, None] * cdf[:, -1:]).sum(axis=1), P.shape[1] - 1)


@dataclass
class SampleResult:
    """Samples of an N-step sampler (MDM, or AR with N = L) and what they cost.

    Returned by :func:`sample_mdm` here and by :func:`mdmt.empirical.sampling.ddpm_cache` and
    ``ar_sample`` for networks.
    """

    samples: np.ndarray  # int64 (num, L)
    nfe: np.ndarray  # int64 (num,): denoiser evaluations per sequence, #{j : S_j != {}} under ddpm_cache
    reveal_step: np.ndarray | None = None  # int64 (num, L): tau_i in 1..N (MDM samplers)
    seconds: float = 0.0  # wall-clock time of the sampling loop
    method: str = "generic"  # how the denoiser was evaluated: kernel, generic, torch, ar


# ----------------------------------------------------------------------------- HMM message kernel
@dataclass
class _KernelModel:
    prior_pred: np.ndarray  # (L, S): pi A^p, the law of h_p before any evidence
    P: np.ndarray  # (G+1, S, S): A^g
    PT: np.ndarray  # (G+1, S, S): (A^g)^T, contiguous
    B: np.ndarray  # (S, V)
    emit_idx: np.ndarray  # (V, S): the states with B[h, v] > 0, first emit_cnt[v] entries
    emit_cnt: np.ndarray  # (V,); all S when emissions are dense (then no restriction is used)
    transform: int  # 0 oracle, 1 temper, 2 uniform mixture
    param: float
    pin_run: int  # n - 1 for an n-gram (a run of n - 1 revealed tokens fixes the window state), else 0
    cut_state: np.ndarray  # (L,) int64: a state of h_c's prior support when the chain forgets at c -> c+1, else -1

    @property
    def has_separators(self) -> bool:
        return self.pin_run > 0 or bool((self.cut_state >= 0).any())


def _transform_of(language, denoiser):
    """(code, param) when ``denoiser`` is the oracle of ``language`` or a pointwise transform of it, else None."""
    if denoiser is None or denoiser is language:
        return (0, 0.0)
    spec = getattr(denoiser, "oracle_transform", None)
    if spec is None or getattr(denoiser, "language", None) is not language:
        return None
    kind, param = spec
    return {"oracle": (0, 0.0), "temper": (1, float(param)), "mix": (2, float(param))}.get(kind)


def _kernel_model(language, L: int, transform) -> _KernelModel | None:
    try:
        hmm = as_hmm(language)
    except (AttributeError, TypeError, ValueError):
        return None
    A, B, pi0 = hmm.transmat_, hmm.emissionprob_, hmm.startprob_
    S = A.shape[0]
    if S > KERNEL_MAX_STATES:
        return None
    G = int(max(1, min(L, _POWER_BUDGET // (2 * 8 * S * S))))
    P = np.empty((G + 1, S, S))
    P[0] = np.eye(S)
    for g in range(1, G + 1):
        P[g] = P[g - 1] @ A
    pred = np.empty((L, S))
    pred[0] = pi0
    for p in range(1, L):
        pred[p] = pred[p - 1] @ A
    V = B.shape[1]
    emit = B > 0
    emit_cnt = emit.sum(axis=0).astype(np.int64)
    emit_idx = np.zeros((V, S), dtype=np.int64)
    for v in range(V):
        emit_idx[v, :emit_cnt[v]] = np.flatnonzero(emit[:, v])
    if emit_cnt.mean() > S / 4:  # dense emissions: the contiguous full-output products are faster
        emit_cnt[:] = S
        emit_idx[:] = np.arange(S)[None, :]
    return _KernelModel(pred, P, np.ascontiguousarray(P.transpose(0, 2, 1)), np.ascontiguousarray(B),
                        emit_idx, emit_cnt, transform[0], transform[1],
                        language.n - 1 if isinstance(language, NGram) else 0, _cut_states(A, pred))


def _cut_states(A: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """cut[c] = a state of the prior support of h_c if every state there has the same row of A, else -1.

    Then h_{c+1} has the same law whatever h_c is, so everything up to c is independent of
    everything after it (the interval HMM forgets at every interval end): a separator that needs
    no revealed token.
    """
    _, row_id = np.unique(A, axis=0, return_inverse=True)
    row_id = row_id.reshape(-1)
    cut = np.full(pred.shape[0], -1, dtype=np.int64)
    for c in range(pred.shape[0] - 1):
        support = np.flatnonzero(pred[c] > 0)
        if support.size and np.all(row_id[support] == row_id[support[0]]):
            cut[c] = support[0]
    return cut


@nb.njit(cache=True, fastmath=True)
def _apply(vec, g, T, out, tmp):
    """out = vec @ T[1]^g using the table T[g'] (g' <= G), skipping zero entries (axpy form)."""
    S = vec.shape[0]
    G = T.shape[0] - 1
    for h in range(S):
        out[h] = vec[h]
    while g > 0:
        step = g if g <= G else G
        M = T[step]
        for k in range(S):
            tmp[k] = 0.0
        for h in range(S):
            c = out[h]
            if c != 0.0:
                for k in range(S):
                    tmp[k] += c * M[h, k]
        for k in range(S):
            out[k] = tmp[k]
        g -= step


@nb.njit(cache=True, fastmath=True)
def _apply_to(vec, g, T, TT, out, tmp, cols, ncols, nz):
    """Like ``_apply`` but only the entries ``cols[:ncols]`` of the result are computed (the rest are 0).

    Used when the next factor is an emission column with few non-zero states (n-gram
    windows, the interval HMM): out[k] = sum_h vec[h] T[g][h, k] = sum_h TT[g][k, h] vec[h]
    over the non-zero h only.
    """
    S = vec.shape[0]
    if ncols == S:
        _apply(vec, g, T, out, tmp)
        return
    G = T.shape[0] - 1
    src = vec
    if g > G:  # every factor but the last in full, the last (exactly G) restricted
        first = g - G * ((g - 1) // G)
        _apply(vec, first, T, out, tmp)
        rest = g - first
        while rest > G:
            _apply(out, G, T, out, tmp)
            rest -= G
        for h in range(S):
            tmp[h] = out[h]
        src = tmp
        g = rest
    m = 0
    for h in range(S):
        if src[h] != 0.0:
            nz[m] = h
            m += 1
    M = TT[g]
    for h in range(S):
        out[h] = 0.0
    for kk in range(ncols):
        k = cols[kk]
        acc = 0.0
        for t in range(m):
            h = nz[t]
            acc += M[k, h] * src[h]
        out[k] = acc


@nb.njit(cache=True)
def _normalise(vec):
    s = 0.0
    for h in range(vec.shape[0]):
        s += vec[h]
    if s > 0.0:
        for h in range(vec.shape[0]):
            vec[h] /= s
    return s


@nb.njit(cache=True)
def _draw(m, u):
    """First v with cdf[v] > u * total (the rule of ``draw_tokens``)."""
    V = m.shape[0]
    total = 0.0
    for v in range(V):
        total += m[v]
    thr = u * total
    c = 0.0
    cnt = 0
    for v in range(V):
        c += m[v]
        if c <= thr:
            cnt += 1
    return cnt if cnt < V else V - 1


_DEAD = -2  # returned by _forward when the evidence has probability 0


@nb.njit(cache=True)
def _forward(x, rev, tgt, start, last, p0, cur, prior_pred, P, PT, B, emit_idx, emit_cnt, pred_t, tmp, tmp2, nz):
    """Forward messages over positions start..last: pred_t[k] = law of h at the k-th target given the evidence before it.

    ``cur`` is the law of h at ``p0`` (the last conditioning position before ``start``; -1: none,
    use the prior).  Revealed positions multiply in their emission and renormalise (no underflow
    at any L); masked runs are crossed with powers of A.  Returns the new p0, or ``_DEAD`` when
    the evidence has probability 0.
    """
    S = B.shape[0]
    k = 0
    for p in range(start, last + 1):
        if tgt[p]:
            if p0 < 0:
                for h in range(S):
                    pred_t[k, h] = prior_pred[p, h]
            else:
                _apply(cur, p - p0, P, pred_t[k], tmp2)
            k += 1
        elif rev[p]:
            xp = x[p]
            if p0 < 0:
                for h in range(S):
                    tmp[h] = prior_pred[p, h]
            else:
                _apply_to(cur, p - p0, P, PT, tmp, tmp2, emit_idx[xp], emit_cnt[xp], nz)
            for h in range(S):
                cur[h] = tmp[h] * B[h, xp]
            if _normalise(cur) <= 0.0:
                return _DEAD
            p0 = p
    return p0


@nb.njit(cache=True)
def _backward(x, rev, tgt, end, first, p1, ones, cur, P, PT, B, emit_idx, emit_cnt, back_t, n_targets, tmp, tmp2,
              nz):
    """Backward messages over positions end-1 down to first: back_t[k] = likelihood of the later evidence given h.

    ``cur`` is the likelihood of the evidence at and after ``p1`` given h at p1, or, with
    ``ones``, there is no such evidence (all ones).  Returns False when the evidence has probability 0.
    """
    S = B.shape[0]
    k = n_targets - 1
    for p in range(end - 1, first - 1, -1):
        if tgt[p]:
            if ones:
                for h in range(S):
                    back_t[k, h] = 1.0
            else:
                _apply(cur, p1 - p, PT, back_t[k], tmp2)
            k -= 1
        elif rev[p]:
            xp = x[p]
            if ones:
                for h in range(S):
                    tmp[h] = 1.0
            else:
                _apply_to(cur, p1 - p, PT, P, tmp, tmp2, emit_idx[xp], emit_cnt[xp], nz)
            for h in range(S):
                cur[h] = tmp[h] * B[h, xp]
            if _normalise(cur) <= 0.0:
                return False
            p1 = p
            ones = False
    return True


@nb.njit(cache=True)
def _target_law(pred, back, B, transform, param, dead, m):
    """m = the denoiser's law of a target from its forward (pred) and backward (back) messages.

    The oracle q(x_i | x_U) is sum_h pred[h] back[h] B[h, :] normalised, then tempered or mixed
    (``transform``).  Returns False (and the uniform law) when q(x_U) = 0 or ``dead``.
    """
    S, V = B.shape
    tot = 0.0
    if not dead:
        for v in range(V):
            m[v] = 0.0
        for h in range(S):
            w = pred[h] * back[h]
            if w != 0.0:
                for v in range(V):
                    m[v] += w * B[h, v]
        for v in range(V):
            tot += m[v]
    if tot <= 0.0:
        for v in range(V):
            m[v] = 1.0 / V
        return False
    for v in range(V):
        m[v] /= tot
    if transform == 1:
        s2 = 0.0
        for v in range(V):
            m[v] = m[v] ** param if m[v] > 0.0 else 0.0
            s2 += m[v]
        for v in range(V):
            m[v] /= s2
    elif transform == 2:
        for v in range(V):
            m[v] = (1.0 - param) * m[v] + param / V
    return True


@nb.njit(cache=True, parallel=True)
def _kernel(prior_pred, P, PT, B, emit_idx, emit_cnt, transform, param, order, starts, maxgroup, U, X, score_mode,
            nfe, logp):
    """Run the sampler (score_mode = False: fill X) or score a fixed X along tau (score_mode = True).

    order[n] lists the positions sorted by (reveal step, position); starts[n, :] marks the
    group boundaries (starts[n, g] = first index of group g, -1 after the last group).
    """
    n_seq, L = order.shape
    S, V = B.shape
    for n in nb.prange(n_seq):
        x = X[n]
        rev = np.zeros(L, dtype=np.bool_)
        tgt = np.zeros(L, dtype=np.bool_)
        pred_t = np.empty((maxgroup, S))
        back_t = np.empty((maxgroup, S))
        cur = np.empty(S)
        tmp = np.empty(S)
        tmp2 = np.empty(S)
        nz = np.empty(S, dtype=np.int64)
        m = np.empty(V)
        dead = False
        total_logp = 0.0
        count = 0
        g = 0
        while g < starts.shape[1] and starts[n, g] >= 0:
            a = starts[n, g]
            b = starts[n, g + 1] if g + 1 < starts.shape[1] and starts[n, g + 1] >= 0 else L
            count += 1
            for t in range(a, b):
                tgt[order[n, t]] = True
            if not dead:
                p0 = _forward(x, rev, tgt, 0, order[n, b - 1], -1, cur, prior_pred, P, PT, B, emit_idx, emit_cnt,
                              pred_t, tmp, tmp2, nz)
                dead = p0 == _DEAD
            if not dead:
                dead = not _backward(x, rev, tgt, L, order[n, a], L, True, cur, P, PT, B, emit_idx, emit_cnt,
                                     back_t, b - a, tmp, tmp2, nz)
            # the targets, in increasing position (the order of order[n, a:b])
            for t in range(a, b):
                p = order[n, t]
                if not _target_law(pred_t[t - a], back_t[t - a], B, transform, param, dead, m):
                    dead = True
                if score_mode:
                    total_logp += np.log(m[x[p]])
                else:
                    x[p] = _draw(m, U[n, p])
            for t in range(a, b):
                p = order[n, t]
                tgt[p] = False
                rev[p] = True
            g += 1
        nfe[n] = count
        logp[n] = total_logp


@nb.njit(cache=True)
def _left_separator(i, pin, cut_state):
    """(a, kind) of the nearest separator left of position i: 1 = state pinned at a, 2 = cut after a, 0 = none."""
    p = i - 1
    while p >= 0:
        if pin[p] >= 0:
            return p, 1
        if cut_state[p] >= 0:
            return p, 2
        p -= 1
    return -1, 0


@nb.njit(cache=True)
def _right_separator(i, pin, cut_state, L):
    """(b, kind) of the nearest separator right of position i: 1 = state pinned at b, 2 = cut after b - 1, 0 = none (b = L)."""
    p = i + 1
    while p < L:
        if cut_state[p - 1] >= 0:
            return p, 2
        if pin[p] >= 0:
            return p, 1
        p += 1
    return L, 0


@nb.njit(cache=True)
def _start(a, kind, pin, cut_state, cur):
    """Set cur to the law of h at a left separator a; returns p0 for :func:`_forward` (-1: no separator, the prior)."""
    if kind == 0:
        return -1
    for h in range(cur.shape[0]):
        cur[h] = 0.0
    cur[pin[a] if kind == 1 else cut_state[a]] = 1.0  # after a cut every supported state has the same successors
    return a


@nb.njit(cache=True)
def _segment_alive(x, rev, tgt, a, ka, b, kb, pin, cut_state, prior_pred, P, PT, B, emit_idx, emit_cnt, scratch, cur,
                   tmp, tmp2, nz):
    """True when the evidence strictly between separators a and b has positive probability (given their states).

    Called between steps, when no position is a target (``scratch`` receives nothing).
    """
    p0 = _start(a, ka, pin, cut_state, cur)
    p0 = _forward(x, rev, tgt, a + 1, b - 1, p0, cur, prior_pred, P, PT, B, emit_idx, emit_cnt, scratch, tmp, tmp2,
                  nz)
    if p0 == _DEAD:
        return False
    if kb != 1:
        return True
    s_b = pin[b]
    if p0 < 0:
        return prior_pred[b, s_b] > 0.0
    _apply(cur, b - p0, P, tmp, tmp2)
    return tmp[s_b] > 0.0


@nb.njit(cache=True)
def _pin_after_reveal(x, rev, pin, r, run, V):
    """Pin the window states that the reveal at r completes: h_p = (x_p..x_{p+run-1}) once all are revealed."""
    L = x.shape[0]
    for p in range(max(0, r - run + 1), r + 1):
        if p + run > L or pin[p] >= 0:
            continue
        idx = 0
        for k in range(run):
            if not rev[p + k]:
                idx = -1
                break
            idx = idx * V + x[p + k]
        if idx >= 0:
            pin[p] = idx


@nb.njit(cache=True, parallel=True)
def _segment_kernel(prior_pred, P, PT, B, emit_idx, emit_cnt, transform, param, pin_run, cut_state, order, starts,
                    maxgroup, U, X, score_mode, nfe, logp):
    """The sampler (or scorer) of :func:`_kernel` that recomputes only what a reveal can change.

    Separators -- a state pinned by a run of ``pin_run`` revealed tokens (an n-gram window), or
    a cut where the chain forgets (``cut_state``) -- make the two sides conditionally
    independent given x_U, so the law of a target needs the evidence between its two nearest
    separators only.  Targets between the same separators share one forward and one backward
    pass.  q(x_U) is the product of the probabilities of the segments between separators, so
    "q(x_U) = 0" (then every later draw is uniform, as in :func:`_kernel`) is kept up to date by
    re-checking, after each step, the segments in which two or more tokens were revealed (one
    token drawn from a law with the support of q(. | x_U) cannot make it 0).
    """
    n_seq, L = order.shape
    S, V = B.shape
    for n in nb.prange(n_seq):
        x = X[n]
        rev = np.zeros(L, dtype=np.bool_)
        tgt = np.zeros(L, dtype=np.bool_)
        pin = np.full(L, -1, dtype=np.int64)
        pred_t = np.empty((maxgroup, S))
        back_t = np.empty((maxgroup, S))
        seg = np.empty((maxgroup, 5), dtype=np.int64)
        cur = np.empty(S)
        tmp = np.empty(S)
        tmp2 = np.empty(S)
        nz = np.empty(S, dtype=np.int64)
        m = np.empty(V)
        dead = False
        total_logp = 0.0
        count = 0
        g = 0
        while g < starts.shape[1] and starts[n, g] >= 0:
            a = starts[n, g]
            b = starts[n, g + 1] if g + 1 < starts.shape[1] and starts[n, g + 1] >= 0 else L
            count += 1
            for t in range(a, b):
                tgt[order[n, t]] = True
            n_seg = 0
            t = a
            while t < b:
                i = order[n, t]
                la, ka = _left_separator(i, pin, cut_state)
                rb, kb = _right_separator(i, pin, cut_state, L)
                e = t
                while e < b and order[n, e] < rb:
                    e += 1
                seg[n_seg, 0], seg[n_seg, 1], seg[n_seg, 2], seg[n_seg, 3], seg[n_seg, 4] = la, ka, rb, kb, e - t
                n_seg += 1
                if not dead:
                    p0 = _start(la, ka, pin, cut_state, cur)
                    dead = _forward(x, rev, tgt, la + 1, order[n, e - 1], p0, cur, prior_pred, P, PT, B, emit_idx,
                                    emit_cnt, pred_t, tmp, tmp2, nz) == _DEAD
                if not dead:
                    if kb == 1:  # h_rb is pinned: its likelihood vector is the indicator of the pinned state
                        for h in range(S):
                            cur[h] = 0.0
                        cur[pin[rb]] = 1.0
                    # after a cut (kb == 2) or the end the evidence is equally likely from every state: all ones
                    dead = not _backward(x, rev, tgt, rb, i, rb, kb != 1, cur, P, PT, B, emit_idx, emit_cnt, back_t,
                                         e - t, tmp, tmp2, nz)
                for tt in range(t, e):
                    p = order[n, tt]
                    if not _target_law(pred_t[tt - t], back_t[tt - t], B, transform, param, dead, m):
                        dead = True
                    if score_mode:
                        total_logp += np.log(m[x[p]])
                    else:
                        x[p] = _draw(m, U[n, p])
                t = e
            for t in range(a, b):
                p = order[n, t]
                tgt[p] = False
                rev[p] = True
            if pin_run > 0:
                for t in range(a, b):
                    _pin_after_reveal(x, rev, pin, order[n, t], pin_run, V)
            g += 1
            if not dead and g < starts.shape[1] and starts[n, g] >= 0:  # q(x_U) > 0 still?
                for k in range(n_seg):
                    if seg[k, 4] == 1 and not score_mode and transform != 2:
                        continue  # one token drawn from q(. | x_U) (or a tempered q: same support) keeps q(x_U) > 0
                    if not _segment_alive(x, rev, tgt, seg[k, 0], seg[k, 1], seg[k, 2], seg[k, 3], pin, cut_state,
                                          prior_pred, P, PT, B, emit_idx, emit_cnt, pred_t, cur, tmp, tmp2,
                                          nz):
                        dead = True
                        break
        nfe[n] = count
        logp[n] = total_logp


def _groups(tau: np.ndarray):
    """order (n, L): positions sorted by (tau, position); starts (n, N+1): first index of each group, -1 padded."""
    n, L = tau.shape
    key = tau.astype(np.int64) * L + np.arange(L)[None, :]
    order = np.argsort(key, axis=1, kind="stable")
    st = np.take_along_axis(tau, order, axis=1)
    is_start = np.ones((n, L), dtype=bool)
    is_start[:, 1:] = st[:, 1:] != st[:, :-1]
    counts = is_start.sum(axis=1)
    width = int(counts.max()) + 1 if n else 1
    starts = np.full((n, width), -1, dtype=np.int64)
    rows, cols = np.nonzero(is_start)
    rank = np.cumsum(is_start, axis=1)[rows, cols] - 1
    starts[rows, rank] = cols
    return order.astype(np.int64), starts


def _run_kernel(model: _KernelModel, tau, U, X, score_mode: bool, kind: str = "segments"):
    order, starts = _groups(tau)
    n = tau.shape[0]
    bounds = np.where(starts >= 0, starts, tau.shape[1])
    maxgroup = int(np.diff(np.concatenate([bounds, np.full((n, 1), tau.shape[1])], axis=1), axis=1).max()) if n else 1
    nfe = np.zeros(n, dtype=np.int64)
    logp = np.zeros(n)
    if kind == "segments":
        _segment_kernel(model.prior_pred, model.P, model.PT, model.B, model.emit_idx, model.emit_cnt, model.transform,
                        model.param, model.pin_run, model.cut_state, order, starts, max(maxgroup, 1), U, X, score_mode,
                        nfe, logp)
    else:
        _kernel(model.prior_pred, model.P, model.PT, model.B, model.emit_idx, model.emit_cnt, model.transform,
                model.param, order, starts, max(maxgroup, 1), U, X, score_mode, nfe, logp)
    return nfe, logp


PROB_TOL = 1e-3  # a denoiser's probability vector must sum to 1 within this


def invalid_law(p: np.ndarray) -> str | None:
    """Why ``p`` (V,) is not a probability vector (NaN/inf, a negative entry, a sum off 1 by more than PROB_TOL), or None."""
    if not np.all(np.isfinite(p)):
        return "it contains NaN or infinity"
    if np.any(p < 0):
        return f"it has a negative probability {float(p.min()):.3g}"
    if abs(float(p.sum()) - 1.0) > PROB_TOL:
        return f"its probabilities sum to {float(p.sum()):.6g}, not 1"
    return None


def check_denoiser_rows(P: np.ndarray, seqs, positions, step: int) -> None:
    """ValueError naming the first (sequence, position) whose row of P (m, V) is not a probability vector."""
    bad = ~np.isfinite(P).all(axis=1) | (P < 0).any(axis=1) | (np.abs(P.sum(axis=1) - 1.0) > PROB_TOL)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"the denoiser returned an invalid law at sequence {int(seqs[k])}, position {int(positions[k])} "
                         f"(step {step}): {invalid_law(P[k])}")


def _generic(den, tau, U, batch, X=None, V=None):
    """The sampler (X None) or the score of fixed X along tau (returns sum log p) with any denoiser."""
    n, L = tau.shape
    score = X is not None
    out = np.full((n, L), MASK, dtype=np.int64) if not score else None
    nfe = np.zeros(n, dtype=np.int64)
    logp = np.zeros(n)
    for j in np.unique(tau):
        new = tau == j
        rows = np.flatnonzero(new.any(axis=1))
        nfe[rows] += 1
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            ctx = np.where(tau[r] < j, X[r], MASK) if score else out[r]
            P = np.asarray(den(ctx), dtype=np.float64)
            if P.ndim != 3 or P.shape[:2] != (len(r), L) or (V is not None and P.shape[2] != V):
                raise ValueError(f"denoiser returned shape {P.shape}, expected ({len(r)}, {L}, {V or 'V'})")
            rr, cc = np.nonzero(new[r])
            check_denoiser_rows(P[rr, cc], r[rr], cc, int(j))
            if score:
                with np.errstate(divide="ignore"):
                    np.add.at(logp, r[rr], np.log(P[rr, cc, X[r[rr], cc]]))
            else:
                out[r[rr], cc] = draw_tokens(P[rr, cc], U[r[rr], cc])
    return (out if not score else X), nfe, logp


METHODS = ("auto", "segments", "kernel", "generic")


def _method(language, L, denoiser, method) -> tuple[str, _KernelModel | None]:
    """(kind, kernel model) of a run: ``segments`` or ``kernel`` (message kernels, the oracle and its transforms), else ``generic``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "generic":
        return "generic", None
    tr = _transform_of(language, denoiser)
    model = _kernel_model(language, L, tr) if tr is not None else None
    if model is None:
        if method != "auto":
            raise ValueError("the message kernels need the oracle (or an oracle transform) of an HMM/n-gram "
                             f"with at most {KERNEL_MAX_STATES} hidden states")
        return "generic", None
    if method == "auto":
        return ("segments" if model.has_separators else "kernel"), model
    return method, model


def check_sample_memory(num: int, L: int, alternative: str = "draw fewer or shorter samples") -> None:
    """Refuse (ResourceError) ``num`` samples of length L that :func:`sample_mdm` could not hold in memory:
    the samples and their reveal steps (int64), and one block of random draws and states."""
    check_memory(f"{num} samples of length {L} with their reveal steps",
                 8 * (2 * num * L + num) + 32 * min(num, BLOCK) * L, alternative)


def sample_mdm(language: Language, L: int, pi: RevealProbabilities, num: int, denoiser: Denoiser | None = None, seed: Seed = None, batch: int = 512,
               method: str = "auto") -> SampleResult:
    """Run the N-step sampler with the oracle (``denoiser=None``) or any denoiser; seeded, batched.

    ``pi`` is the reveal-probability vector (``reveal_probabilities(schedule, N)``).  The
    oracle is continued by the uniform law once a sample has left the support (the
    convention of :func:`.tables.denoiser_table`).  ``method`` (module docstring): ``auto``
    (``segments`` where the language has separators, else ``kernel``, for the oracle and its
    transforms; ``generic`` otherwise), ``segments``, ``kernel`` or ``generic``.  All draw the
    same samples for the same seed (up to rounding of the oracle marginals).
    """
    L = positive_int("L", L)
    num = positive_int("num", num, minimum=0)
    batch = positive_int("batch", batch)
    pi = as_pi(pi)
    rng = as_rng(seed)
    t0 = time.perf_counter()
    check_sample_memory(num, L)
    kind, model = _method(language, L, denoiser, method)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    samples = np.empty((num, L), dtype=np.int64)
    nfe = np.empty(num, dtype=np.int64)
    steps = np.empty((num, L), dtype=np.int64)
    for s in range(0, num, BLOCK):
        m = min(BLOCK, num - s)
        tau = draw_reveal_steps(pi, m, L, rng)
        steps[s:s + m] = tau
        U = rng.random((m, L))
        if model is not None:
            X = np.full((m, L), MASK, dtype=np.int64)
            nfe[s:s + m], _ = _run_kernel(model, tau, U, X, False, kind)
            samples[s:s + m] = X
        else:
            samples[s:s + m], nfe[s:s + m], _ = _generic(den, tau, U, batch, V=language.n_symbols)
    return SampleResult(samples, nfe, steps, time.perf_counter() - t0, kind)


def assignment_log_ratio(language, X, pi, denoiser=None, seed=None, batch: int = 512, method: str = "auto"):
    """For sequences X (n, L) and tau ~ pi: log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j}).

    With X ~ q this is an unbiased sample of E_tau KL(q || p_tau) (C1's right-hand side);
    returns float64 (n,).
    """
    X = language.check_tokens(X, allow_mask=False)
    n, L = X.shape
    pi = as_pi(pi)
    rng = as_rng(seed)
    kind, model = _method(language, L, denoiser, method)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    logp = np.empty(n)
    for s in range(0, n, BLOCK):
        m = min(BLOCK, n - s)
        tau = draw_reveal_steps(pi, m, L, rng)
        if model is not None:
            _, logp[s:s + m] = _run_kernel(model, tau, np.zeros((m, L)), np.ascontiguousarray(X[s:s + m]), True, kind)
        else:
            _, _, logp[s:s + m] = _generic(den, tau, None, batch, X=X[s:s + m], V=language.n_symbols)
    return language.log_likelihood(X) - logp


def assignment_kl_estimate(language: Language, L: int, pi: RevealProbabilities, num: int, denoiser: Denoiser | None = None, seed: Seed = None, level: float = 0.95,
                           batch: int = 512, method: str = "auto") -> dict:
    """Monte Carlo estimate of E_tau[KL(q || p_tau)] / L with a CI: an upper bound on the TER gap (C1, Lemma B.2).

    Draws x ~ q and tau ~ pi (one generator, ``seed``) and averages
    (log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j})) / L.  Keys: ``kl_per_token_nats``,
    ``ci``, ``kl_per_token_bits`` (the bound on log2 TER(p_N) - log2 TER(q)), ``ci_bits``, ``num``.
    """
    L = positive_int("L", L)
    num = positive_int("num", num)
    rng = as_rng(seed)
    x = language.sample_sequences(num, L, rng)
    vals = assignment_log_ratio(language, x, pi, denoiser, seed=rng, batch=batch, method=method) / L
    m, a, b = mean_interval(vals, level)
    ln2 = math.log(2)
    return {"kl_per_token_nats": m, "ci": [a, b], "kl_per_token_bits": m / ln2, "ci_bits": [a / ln2, b / ln2],
            "num": num}
