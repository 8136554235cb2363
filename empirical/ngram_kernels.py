"""Compiled forward-backward of the n-gram layer on the CPU, with its exact gradient (mdmt.empirical.ngram_layer).

The same recursion as ``NgramLayer._mdm_torch`` (windows of k = n - 1 symbols over W = V + 1
symbols, S = W^k windows, R = W^(k-1) windows of the last k - 1 symbols; window index big-endian,
so the window c = (a, r) moves to (r, d) = r W + d), run row by row in float64 where the row's
structure makes it cheap:

* forward: pred_t[r, d] = sum_a alpha_{t-1}[a R + r] P[a R + r, d] loops over the support of
  alpha_{t-1} only -- one window after n - 1 revealed tokens, W^j after j masked ones;
* backward: beta_{t-1}[c] = sum_d P[c, d] e_t(d) beta_t[c mod R, d] is one term where x_t is revealed;
* the posterior q_t(d) is proportional to sum_r pred_t[r, d] beta_t[r, d] (leave-one-out at t).

``ngram_backward`` is the reverse-mode derivative of exactly these operations (written out by hand:
normalisations included), so a batch costs a few times its forward pass and no autograd graph of
2 T small tensor operations is built.  tests/test_ngram_layer.py checks values and gradients
against the torch recursion (autograd) and the values against the languages' exact posterior.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def ngram_forward(P, ids, V, k):
    """Log posterior (B, T, V) at the masked inputs (id V) of the n-gram P (S, V) given the revealed ones
    (0 at revealed inputs), and the messages the gradient needs: alpha (B, T, S), pred (B, T, R, V),
    beta (B, T, R, V), z (B, T), y (B, T), q (B, T, V) (the normalised posterior).

    beta_t is computed only where something reads it: at the rows r of a masked t whose pred_t is
    not all zero (the posterior there), and where a needed beta_{t-1} entry reads it.
    """
    W = V + 1
    R = W ** (k - 1)
    S = R * W
    B, T = ids.shape
    alpha = np.zeros((B, T, S))
    pred = np.zeros((B, T, R, V))
    beta = np.zeros((B, T, R, V))
    z = np.ones((B, T))
    y = np.ones((B, T))
    q = np.zeros((B, T, V))
    out = np.zeros((B, T, V))
    start = np.zeros(S)
    start[S - 1] = 1.0  # the window (s, .., s) before position 0
    live = np.zeros((T, R), dtype=np.bool_)  # rows r of pred_t that are not all zero
    need = np.zeros((T, R, V), dtype=np.bool_)  # entries of beta_t that are read
    for b in range(B):
        live[:] = False
        need[:] = False
        prev = start
        for t in range(T):
            x = ids[b, t]
            pt = pred[b, t]
            for c in range(S):
                w = prev[c]
                if w != 0.0:
                    r = c % R
                    live[t, r] = True
                    for d in range(V):
                        pt[r, d] += w * P[c, d]
            at = alpha[b, t]
            tot = 0.0
            for r in range(R):
                if live[t, r]:
                    for d in range(V):
                        if x == V or d == x:
                            at[r * W + d] = pt[r, d]
                            tot += pt[r, d]
            for r in range(R):
                if live[t, r]:
                    for d in range(V):
                        at[r * W + d] /= tot
            z[b, t] = tot
            prev = at
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
                    beta[b, T - 1, r, d] = 1.0
        for t in range(T - 1, 0, -1):
            x = ids[b, t]
            nxt = beta[b, t]
            nb_ = beta[b, t - 1]
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
                y[b, t - 1] = tot
        for t in range(T):
            if ids[b, t] < V:
                continue
            tot = 0.0
            for d in range(V):
                acc = 0.0
                for r in range(R):
                    if live[t, r]:
                        acc += pred[b, t, r, d] * beta[b, t, r, d]
                q[b, t, d] = acc
                tot += acc
            for d in range(V):
                q[b, t, d] /= tot
                out[b, t, d] = np.log(q[b, t, d]) if q[b, t, d] > 0 else -np.inf
    return out, alpha, pred, beta, z, y, q


@nb.njit(cache=True)
def ngram_backward(G, P, ids, V, k, alpha, pred, beta, z, y, q):
    """dLoss/dP (S, V) given G = dLoss/d(log posterior) (B, T, V) and the messages of ``ngram_forward``.

    The normalisers z_t and y_t are held constant: the posterior at every t is invariant to a
    positive factor on any alpha_t or beta_t, so their derivatives cancel exactly, and without
    them every adjoint stays on the support of the forward messages (the rows r of pred_t that
    are not all zero), which is where the loops run.
    """
    W = V + 1
    R = W ** (k - 1)
    S = R * W
    B, T = ids.shape
    gP = np.zeros((S, V))
    gpred = np.zeros((T, R, V))
    gbeta = np.zeros((T, R, V))
    live = np.zeros((T, R), dtype=np.bool_)
    for b in range(B):
        gpred[:] = 0.0
        gbeta[:] = 0.0
        for t in range(T):
            for r in range(R):
                live[t, r] = False
                for d in range(V):
                    if pred[b, t, r, d] != 0.0:
                        live[t, r] = True
                        break
        # log q_t(d) = log p_t(d) - log sum_d p_t(d), p_t(d) = sum_r pred_t[r, d] beta_t[r, d]
        for t in range(T):
            if ids[b, t] < V:
                continue  # the output at a revealed input is the constant 0
            gsum = 0.0
            norm = 0.0
            for d in range(V):
                gsum += G[b, t, d]
                for r in range(R):
                    if live[t, r]:
                        norm += pred[b, t, r, d] * beta[b, t, r, d]
            for d in range(V):
                gp = (G[b, t, d] / q[b, t, d] - gsum) / norm if q[b, t, d] > 0 else 0.0
                if gp != 0.0:
                    for r in range(R):
                        if live[t, r]:
                            gpred[t, r, d] += gp * beta[b, t, r, d]
                            gbeta[t, r, d] += gp * pred[b, t, r, d]
        # beta_{t-1}[c] = sum_d P[c, d] e_t(d) beta_t[c mod R, d] / y: adjoints in reverse order of computation
        for t in range(1, T):
            x = ids[b, t]
            gnb = gbeta[t - 1]
            for c in range(S):
                last = c % W
                if last == V:
                    continue
                gb = gnb[c // W, last]
                if gb == 0.0:
                    continue
                gb /= y[b, t - 1]
                r = c % R
                for d in range(V):
                    if x == V or d == x:
                        gP[c, d] += gb * beta[b, t, r, d]
                        gbeta[t, r, d] += gb * P[c, d]
        # alpha_t[r W + d] = pred_t[r, d] e_t(d) / z_t; pred_{t+1}[r, d] = sum_a alpha_t[a R + r] P[a R + r, d]
        for t in range(T - 2, -1, -1):
            x = ids[b, t]
            at = alpha[b, t]
            gn = gpred[t + 1]
            for c in range(S):
                w = at[c]
                if w != 0.0:
                    r = c % R
                    acc = 0.0
                    for d in range(V):
                        acc += gn[r, d] * P[c, d]
                        gP[c, d] += w * gn[r, d]
                    gpred[t, c // W, c % W] += acc / z[b, t]  # c = r' W + d' with e_t(d') = 1 (alpha_t[c] != 0)
        r0 = (S - 1) % R  # pred_0 comes from the start window
        for d in range(V):
            gP[S - 1, d] += gpred[0, r0, d]
    return gP
