"""The numba message kernels of the sampler's ``kernel`` and ``segments`` methods (Section 3.2, Eq. 3).

The compiled half of :mod:`.sampler` (which builds their inputs, :class:`~.sampler._KernelModel`,
and calls :func:`_kernel` or :func:`_segment_kernel`): the law q(x_i | x_U) of the positions of
S_j from forward and backward messages carried only through the revealed positions, across each
masked run with a precomputed power A^g of the transition matrix (:func:`_forward`,
:func:`_backward`, :func:`_target_law`), and

* :func:`_kernel` -- the sampler (or the scorer of a fixed X along tau) over the whole sequence;
* :func:`_segment_kernel` -- the same, recomputing only the segments between the separators
  around a reveal (a state pinned by a run of n - 1 revealed tokens, Definition B.4, or a cut
  where the chain forgets), with the exact "q(x_U) = 0" test kept by :func:`_segment_alive`.

Messages are renormalised at every revealed position (no underflow at any L); tokens are drawn
by the inverse-CDF rule of :func:`.sampler.draw_tokens` (:func:`_draw`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


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


@nb.njit(cache=True, nogil=True)
def _kernel(lo, hi, prior_pred, P, PT, B, emit_idx, emit_cnt, transform, param, order, starts, maxgroup, U, X, score_mode,
            nfe, logp):
    """Run the sampler (score_mode = False: fill X) or score a fixed X along tau (score_mode = True), on the
    sequences lo..hi-1 (:func:`mdmt.runtime.parallel.run_ranges` shares them among threads).

    order[n] lists the positions sorted by (reveal step, position); starts[n, :] marks the
    group boundaries (starts[n, g] = first index of group g, -1 after the last group).
    """
    n_seq, L = order.shape
    S, V = B.shape
    for n in range(lo, hi):
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
                p0 = _forward(x, rev, tgt, np.int64(0), order[n, b - 1], np.int64(-1), cur, prior_pred, P, PT, B, emit_idx, emit_cnt,
                              pred_t, tmp, tmp2, nz)
                dead = p0 == _DEAD
            if not dead:
                dead = not _backward(x, rev, tgt, L, order[n, a], L, np.bool_(True), cur, P, PT, B, emit_idx, emit_cnt,
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


@nb.njit(cache=True, nogil=True)
def _segment_kernel(lo, hi, prior_pred, P, PT, B, emit_idx, emit_cnt, transform, param, pin_run, cut_state, order, starts,
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
    for n in range(lo, hi):
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
