"""The marginals of an explicit law at every revealed set of one target x, by superset sums (:mod:`.support_exact`).

For a target x, the support sequences agreeing with x on U are those whose agreement set with x contains U, so
c_x(U) = sum_y w_y [U within A(x, y)] for all 2^L sets U is the superset sum (zeta transform) of the weights of the
agreement sets: L passes over 2^L entries.  Shared by the float64 chain (:mod:`.support_exact`) and the exact
rationals (:mod:`.support_rationals`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


@nb.njit(cache=True)
def agreement_sets(x, support):
    """The agreement set of x with each support sequence, as a bitmask of positions (bit i: y_i = x_i)."""
    M, L = support.shape
    A = np.zeros(M, dtype=np.int64)
    for k in range(M):
        a = 0
        for i in range(L):
            if support[k, i] == x[i]:
                a |= 1 << i
        A[k] = a
    return A


@nb.njit(cache=True)
def superset_sums(x, support, w):
    """c_x(U) for every U: the weight of the support sequences agreeing with x on U."""
    L = support.shape[1]
    n = 1 << L
    C = np.zeros(n)
    A = agreement_sets(x, support)
    for k in range(A.shape[0]):
        C[A[k]] += w[k]
    for b in range(L):
        bit = 1 << b
        for U in range(n):
            if not U & bit:
                C[U] += C[U | bit]
    return C


@nb.njit(cache=True)
def superset_tables(x, support, w, V):
    """T_x(U)[i, v] for every U: the weight of the support sequences agreeing with x on U whose token at i is v."""
    M, L = support.shape
    n = 1 << L
    T = np.zeros((n, L, V))
    A = agreement_sets(x, support)
    for k in range(M):
        for i in range(L):
            T[A[k], i, support[k, i]] += w[k]
    for b in range(L):
        bit = 1 << b
        for U in range(n):
            if not U & bit:
                for i in range(L):  # element loops: an array += pulls numba's ufunc and shape-error code into the build
                    for v in range(V):
                        T[U, i, v] += T[U | bit, i, v]
    return T
