"""Compiled forward-backward of the n-gram layer on the CPU, with its exact gradient (mdmt.empirical.ngram_layer).

The same recursion as ``NgramLayer._mdm_torch`` (windows of k = n - 1 symbols over W = V + 1
symbols, S = W^k windows, R = W^(k-1) windows of the last k - 1 symbols; window index big-endian,
so the window c = (a, r) moves to (r, d) = r W + d), run row by row in float64 where the row's
structure makes it cheap:

* forward: pred_t[r, d] = sum_a alpha_{t-1}[a R + r] P[a R + r, d] loops over the support of
  alpha_{t-1} only -- one window after n - 1 revealed tokens, W^j after j masked ones -- where
  alpha_{t-1}[r W + d] = pred_{t-1}[r, d] e_{t-1}(d) / z_{t-1} is read off pred (never stored);
* backward: beta_{t-1}[c] = sum_d P[c, d] e_t(d) beta_t[c mod R, d] / y_{t-1} is computed only where
  something reads it (the posterior at a masked t, a needed entry of beta_{t-2}), one term where
  x_t is revealed;
* the posterior q_t(d) is proportional to sum_r pred_t[r, d] beta_t[r, d] at every masked t (the
  layer adds nothing at a revealed input, where SUBS carries the token over).

A table under which the revealed tokens of a row are impossible (z_t = 0, as after a diverging
step) gives NaN for that row, as the tensor recursion does, and training stops on the non-finite
loss.  Only the live rows of pred (those not all zero) and the needed entries of beta are written: the
arrays are allocated uninitialised and the masks ``live`` and ``need`` say what holds a value.
``ngram_backward`` is the reverse-mode derivative of exactly these operations (written out by
hand), so a batch costs a few times its forward pass and no autograd graph of 2 T small tensor
operations is built.  tests/test_ngram_layer.py checks values and gradients against the tensor
recursion differentiated by autograd, and the values against the languages' exact posterior.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


@nb.njit(cache=True, error_model="numpy")
def _posterior_row(P, x_row, V, k, pred, beta, z, y, q, out, live, need):
    """The recursion of one sequence ``x_row`` (T,): fills pred, beta (T, R, V) where live / need say, the
    normalisers z, y (T,) (1 on entry), q and out (T, V) (0 on entry) at its masked positions."""
    W = V + 1
    R = W ** (k - 1)
    S = R * W
    T = x_row.shape[0]
    for t in range(T):
        x = x_row[t]
        pt = pred[t]
        if t == 0:  # the window (s, .., s) before position 0
            r = (S - 1) % R
            live[0, r] = True
            for d in range(V):
                pt[r, d] = P[S - 1, d]
        else:
            xp = x_row[t - 1]
            zp = z[t - 1]
            for rp in range(R):
                if not live[t - 1, rp]:
                    continue
                for dp in range(V):
                    if xp < V and dp != xp:
                        continue
                    w = pred[t - 1, rp, dp] / zp  # alpha_{t-1} at the window c = rp W + dp
                    c = rp * W + dp
                    r = c % R
                    if not live[t, r]:
                        live[t, r] = True
                        for d in range(V):
                            pt[r, d] = 0.0
                    for d in range(V):
                        pt[r, d] += w * P[c, d]
        tot = 0.0
        for r in range(R):
            if live[t, r]:
                if x == V:
                    for d in range(V):
                        tot += pt[r, d]
                else:
                    tot += pt[r, x]
        z[t] = tot
        if x == V:  # the posterior at t reads beta_t on the live rows
            for r in range(R):
                if live[t, r]:
                    for d in range(V):
                        need[t, r, d] = True
        if t > 0:  # a needed beta_{t-1}[r', d'] reads beta_t[(r' W + d') mod R, d] for d allowed at t
            for r2 in range(R):
                for d2 in range(V):
                    if need[t - 1, r2, d2]:
                        r = (r2 * W + d2) % R
                        if x == V:
                            for d in range(V):
                                need[t, r, d] = True
                        else:
                            need[t, r, x] = True
    for r in range(R):
        for d in range(V):
            if need[T - 1, r, d]:
                beta[T - 1, r, d] = 1.0
    for t in range(T - 1, 0, -1):
        x = x_row[t]
        nxt = beta[t]
        nb_ = beta[t - 1]
        tot = 0.0
        for r2 in range(R):
            for d2 in range(V):
                if need[t - 1, r2, d2]:
                    c = r2 * W + d2
                    r = c % R
                    if x < V:
                        acc = P[c, x] * nxt[r, x]
                    else:
                        acc = 0.0
                        for d in range(V):
                            acc += P[c, d] * nxt[r, d]
                    nb_[r2, d2] = acc
                    tot += acc
        if tot > 0.0:
            for r2 in range(R):
                for d2 in range(V):
                    if need[t - 1, r2, d2]:
                        nb_[r2, d2] /= tot
            y[t - 1] = tot
    for t in range(T):
        if x_row[t] < V:
            continue
        tot = 0.0
        for d in range(V):
            acc = 0.0
            for r in range(R):
                if live[t, r]:
                    acc += pred[t, r, d] * beta[t, r, d]
            q[t, d] = acc
            tot += acc
        for d in range(V):
            q[t, d] /= tot
            out[t, d] = np.log(q[t, d])  # -inf where q = 0; NaN where the table excludes the row


@nb.njit(cache=True, error_model="numpy")
def ngram_forward(P, ids, V, k):
    """Log posterior (B, T, V) at the masked inputs (id V) of the n-gram P (S, V) given the revealed ones
    (0 at revealed inputs), and what the gradient needs: pred (B, T, R, V), beta (B, T, R, V), z (B, T),
    y (B, T), q (B, T, V) (the normalised posterior), live (B, T, R), need (B, T, R, V)."""
    W = V + 1
    R = W ** (k - 1)
    B, T = ids.shape
    pred = np.empty((B, T, R, V))
    beta = np.empty((B, T, R, V))
    z = np.ones((B, T))
    y = np.ones((B, T))
    q = np.zeros((B, T, V))
    out = np.zeros((B, T, V))
    live = np.zeros((B, T, R), dtype=np.bool_)  # rows r of pred_t that hold values (the others are 0)
    need = np.zeros((B, T, R, V), dtype=np.bool_)  # entries of beta_t that are read
    for b in range(B):
        _posterior_row(P, ids[b], V, k, pred[b], beta[b], z[b], y[b], q[b], out[b], live[b], need[b])
    return out, pred, beta, z, y, q, live, need


@nb.njit(cache=True)
def _row_scratch(T, R, V):
    """Scratch arrays of one sequence's recursion: pred, beta (T, R, V), z, y (T,), q (T, V), live (T, R),
    need (T, R, V); :func:`_reset_row` readies them for the next row."""
    return (np.empty((T, R, V)), np.empty((T, R, V)), np.empty(T), np.empty(T), np.empty((T, V)),
            np.empty((T, R), dtype=np.bool_), np.empty((T, R, V), dtype=np.bool_))


@nb.njit(cache=True)
def _reset_row(z, y, q, live, need):
    """The entry state :func:`_posterior_row` expects: normalisers 1, posterior 0, nothing live or needed."""
    z[:] = 1.0
    y[:] = 1.0
    q[:] = 0.0
    live[:] = False
    need[:] = False


@nb.njit(cache=True, error_model="numpy")
def ngram_posterior(P, ids, V, k):
    """The log posterior of :func:`ngram_forward` alone (no gradient to come: sampling, evaluation), the same
    numbers bit for bit: the same row recursion on scratch arrays of one sequence, reused row after row,
    which stay in cache where the (B, T, R, V) arrays of the gradient's version do not."""
    R = (V + 1) ** (k - 1)
    B, T = ids.shape
    out = np.zeros((B, T, V))
    pred, beta, z, y, q, live, need = _row_scratch(T, R, V)
    for b in range(B):
        _reset_row(z, y, q, live, need)
        _posterior_row(P, ids[b], V, k, pred, beta, z, y, q, out[b], live, need)
    return out


@nb.njit(cache=True, error_model="numpy")
def _backward_row(G, P, x_row, V, k, pred, beta, z, y, q, live, need, gpred, gbeta, gP):
    """Add one sequence's share of dLoss/dP to gP (S, V), given G (T, V) and its row of the forward recursion;
    gpred, gbeta (T, R, V): scratch."""
    W = V + 1
    R = W ** (k - 1)
    S = R * W
    T = x_row.shape[0]
    for t in range(T):
        for r in range(R):
            for d in range(V):
                if live[t, r]:
                    gpred[t, r, d] = 0.0
                if need[t, r, d]:
                    gbeta[t, r, d] = 0.0
    # log q_t(d) = log p_t(d) - log sum_d p_t(d), p_t(d) = sum_r pred_t[r, d] beta_t[r, d]
    for t in range(T):
        if x_row[t] < V:
            continue  # the output at a revealed input is the constant 0
        gsum = 0.0
        norm = 0.0
        for d in range(V):
            gsum += G[t, d]
            for r in range(R):
                if live[t, r]:
                    norm += pred[t, r, d] * beta[t, r, d]
        for d in range(V):
            gp = (G[t, d] / q[t, d] - gsum) / norm if q[t, d] > 0 else 0.0
            if gp != 0.0:
                for r in range(R):
                    if live[t, r]:
                        gpred[t, r, d] += gp * beta[t, r, d]
                        gbeta[t, r, d] += gp * pred[t, r, d]
    # beta_{t-1}[c] = sum_d P[c, d] e_t(d) beta_t[c mod R, d] / y: adjoints in reverse order of computation
    for t in range(1, T):
        x = x_row[t]
        for r2 in range(R):
            for d2 in range(V):
                if not need[t - 1, r2, d2]:
                    continue
                gb = gbeta[t - 1, r2, d2]
                if gb == 0.0:
                    continue
                gb /= y[t - 1]
                c = r2 * W + d2
                r = c % R
                for d in range(V):
                    if x == V or d == x:
                        gP[c, d] += gb * beta[t, r, d]
                        gbeta[t, r, d] += gb * P[c, d]
    # alpha_t[r W + d] = pred_t[r, d] e_t(d) / z_t; pred_{t+1}[r', d'] = sum_a alpha_t[a R + r'] P[a R + r', d']
    for t in range(T - 2, -1, -1):
        x = x_row[t]
        zt = z[t]
        for rp in range(R):
            if not live[t, rp]:
                continue
            for dp in range(V):
                if x < V and dp != x:
                    continue
                w = pred[t, rp, dp] / zt
                c = rp * W + dp
                r = c % R
                acc = 0.0
                for d in range(V):
                    acc += gpred[t + 1, r, d] * P[c, d]
                    gP[c, d] += w * gpred[t + 1, r, d]
                gpred[t, rp, dp] += acc / zt
    r0 = (S - 1) % R  # pred_0 comes from the start window
    for d in range(V):
        gP[S - 1, d] += gpred[0, r0, d]


@nb.njit(cache=True, error_model="numpy")
def ngram_backward(G, P, ids, V, k, pred, beta, z, y, q, live, need):
    """dLoss/dP (S, V) given G = dLoss/d(log posterior) (B, T, V) and what ``ngram_forward`` returned.

    The normalisers z_t and y_t are held constant: the posterior at every t is invariant to a
    positive factor on any alpha_t or beta_t, so their derivatives cancel exactly, and without
    them every adjoint stays on the live rows of pred and the needed entries of beta.
    """
    W = V + 1
    R = W ** (k - 1)
    S = R * W
    B, T = ids.shape
    gP = np.zeros((S, V))
    gpred = np.empty((T, R, V))
    gbeta = np.empty((T, R, V))
    for b in range(B):
        _backward_row(G[b], P, ids[b], V, k, pred[b], beta[b], z[b], y[b], q[b], live[b], need[b], gpred, gbeta, gP)
    return gP


@nb.njit(cache=True, error_model="numpy")
def ngram_backward_recompute(G, P, ids, V, k):
    """:func:`ngram_backward` without the forward's (B, T, R, V) arrays: each sequence's forward recursion is
    recomputed on scratch arrays (the same numbers: the recursion is deterministic) just before its share of
    the gradient, so the gradient is the same bit for bit, at the cost of a second forward of one row at a
    time that stays in cache."""
    R = (V + 1) ** (k - 1)
    B, T = ids.shape
    gP = np.zeros((R * (V + 1), V))
    pred, beta, z, y, q, live, need = _row_scratch(T, R, V)
    out = np.empty((T, V))
    gpred = np.empty((T, R, V))
    gbeta = np.empty((T, R, V))
    for b in range(B):
        _reset_row(z, y, q, live, need)
        _posterior_row(P, ids[b], V, k, pred, beta, z, y, q, out, live, need)
        _backward_row(G[b], P, ids[b], V, k, pred, beta, z, y, q, live, need, gpred, gbeta, gP)
    return gP
