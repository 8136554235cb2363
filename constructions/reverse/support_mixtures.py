"""The output law on an explicit law's support of the processes with uniformly random positions and random step
sizes: the paper's i.i.d. reveal steps (Section 3.2, Eq. 3) and mdmt's random step sizes, as one chain.

Both reveal, at each step, a uniformly random subset of the masked positions whose size is drawn from a law that
depends only on a small *size state* a and the number u of positions revealed so far, and both draw the tokens
from the oracle marginals.  For a target x (as in :mod:`.support_exact`) the chain on (a, U) moves by

    (a, U) -> (a', U + S)   with probability  K[a, u, |S|, a'] / C(L - u, |S|) * prod_{i in S} c_x(U + i) / c_x(U),

for every subset S of the masked positions (enumerated in increasing order, so that the product of a subset is
that of the subset without its lowest position times one factor: O(1) per pair, 3^L pairs per step), with

``IID(pi)``
    a = the step j: K[j, u, s, j + 1] = C(L - u, s) r_j^s (1 - r_j)^(L - u - s), r_j the reveal rate of step j;
``RandomSizes(N, law)``
    a = the number r of the N - 1 boundary draws used so far (:class:`~.policies.RandomSizes`): given that the
    r smallest draws lie at or below u, the others are i.i.d. on {u + 1, ..., L - 1} with the weights w renormalised,
    so the next boundary is at u' with n draws there with probability
    C(D - r, n) (w_{u'} / W_{>u})^n (W_{>u'} / W_{>u})^(D - r - n) (D = N - 1); once r = D the last step
    reveals every position left.  The law of the step-size vectors is that of
    :meth:`~.policies.RandomSizes.compositions` (the same draws, sorted and merged).

This is the law :func:`.support_exact.support_law` computes plan by plan (one chain per step-size vector for random
sizes, O(|S|) per subset for the rates), in one pass; the two are tested equal.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.resources import check_memory, check_work

from .policies import IID, RandomSizes, cut_weights
from .schedules import reveal_rates
from .support_exact import MAX_LENGTH, SupportLaw, _weights_for_floats
from .support_symmetry import orbits, symmetry_generators
from .support_zeta import superset_sums

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


def size_kernel(policy, L: int) -> np.ndarray:
    """K[a, u, s, a'] of the module docstring for ``IID`` or ``RandomSizes`` at length L."""
    if isinstance(policy, IID):
        rates = reveal_rates(policy.pi)
        n = len(rates)
        K = np.zeros((n + 1, L + 1, L + 1, n + 1))
        for j, r in enumerate(rates):
            for u in range(L):
                m = L - u
                for s in range(m + 1):
                    K[j, u, s, j + 1] = math.comb(m, s) * r ** s * (1.0 - r) ** (m - s)
        return K
    if isinstance(policy, RandomSizes):
        D = policy.N - 1 if L > 1 else 0
        K = np.zeros((D + 1, L + 1, L + 1, D + 1))
        for u in range(L):
            K[D, u, L - u, D] = 1.0  # every draw used: the last step reveals the rest
        if D == 0:
            return K
        w = np.concatenate([[0.0], cut_weights(L, policy.law), [0.0]])  # w[v], v = 0..L
        tail = np.cumsum(w[::-1])[::-1]  # tail[v] = W_{>=v}
        for r in range(D):
            k = D - r
            for u in range(L - 1):
                W = tail[u + 1]
                if W <= 0:
                    continue
                for v in range(u + 1, L):
                    after = tail[v + 1] / W if v + 1 <= L else 0.0
                    for n in range(1, k + 1):
                        K[r, u, v - u, r + n] += math.comb(k, n) * (w[v] / W) ** n * after ** (k - n)
        return K
    raise ValueError(f"policy {policy.spec!r}: the mixture chain takes i.i.d. steps and random step sizes only")


@nb.njit(cache=True)
def _law_one(C, L, K):
    """p(x) of one target (C = its superset sums) and the mass left unfinished."""
    n = 1 << L
    full = n - 1
    A = K.shape[0]
    F = np.zeros((A, n))
    F[0, 0] = 1.0
    fac = np.zeros(n)  # fac[1 << i] = q(x_i | x_U)
    prod = np.zeros(n)
    cnt = np.zeros(n, dtype=np.int64)
    inv = np.zeros((L + 1, L + 1))  # 1 / C(m, s)
    for m in range(L + 1):
        c = 1.0
        for s in range(m + 1):
            inv[m, s] = 1.0 / c
            c = c * (m - s) / (s + 1)
    active = np.empty(A, dtype=np.int64)
    done = 0.0
    for _ in range(L + A + 1):
        G = np.zeros((A, n))
        live = False
        for U in range(full):
            na = 0
            for a in range(A):
                if F[a, U] != 0.0:
                    active[na] = a
                    na += 1
            if na == 0:
                continue
            live = True
            u = 0
            masked = full & ~U
            for i in range(L):
                if (U >> i) & 1:
                    u += 1
                else:
                    fac[1 << i] = C[U | (1 << i)] / C[U]
            m = L - u
            prod[0] = 1.0
            cnt[0] = 0
            S = 0
            while True:
                if S != 0:
                    prev = S & (S - 1)
                    prod[S] = prod[prev] * fac[S & ~prev]
                    cnt[S] = cnt[prev] + 1
                s = cnt[S]
                base = prod[S] * inv[m, s]
                if base != 0.0:
                    for t in range(na):
                        a = active[t]
                        f = F[a, U] * base
                        for a2 in range(a, A):
                            k = K[a, u, s, a2]
                            if k != 0.0:
                                if s == m:
                                    done += f * k
                                else:
                                    G[a2, U | S] += f * k
                if S == masked:
                    break
                S = (S - masked) & masked
        F = G
        if not live:
            break
    return done, F.sum()


@nb.njit(cache=True, parallel=True)
def _laws(reps, support, w, L, K):
    R = reps.shape[0]
    out = np.zeros(R)
    left = np.zeros(R)
    for r in nb.prange(R):
        C = superset_sums(reps[r], support, w)
        out[r], left[r] = _law_one(C, L, K)
    return out, left


def mixture_law(lang: ExplicitLanguage, policy, generators=None) -> SupportLaw:
    """The output law on the support of ``lang`` (a :class:`~.support_exact.SupportLaw`: p, KL, SER) of ``IID`` or
    ``RandomSizes`` with the oracle and sampled tokens (module docstring).  ``generators``: the support's
    symmetries (None: found here); both processes treat positions and tokens alike."""
    L = lang.length
    if L > MAX_LENGTH:
        raise ValueError(f"the exact law on the support tracks 2^L revealed sets per sequence; L = {L} exceeds "
                         f"mdmt's limit of {MAX_LENGTH}")
    K = size_kernel(policy, L)
    A = K.shape[0]
    gens = symmetry_generators(lang) if generators is None else generators
    labels = orbits(lang.n_sequences, gens)
    reps_idx = np.unique(labels)
    check_memory(f"the exact law on the support (2^{L} revealed sets per sequence, {A} size states)",
                 (3 * A + 3) * (1 << L) * 8, "use a shorter length")
    check_work(f"the exact law of {len(reps_idx)} representative sequence(s) on the support",
               len(reps_idx) * 3 ** L * A, "use a smaller support or a shorter length")
    w = _weights_for_floats(lang)
    reps = np.ascontiguousarray(lang.support_[reps_idx])
    vals, left = _laws(reps, lang.support_, w, L, np.ascontiguousarray(K))
    if np.any(np.abs(left) > 1e-9):
        raise ValueError(f"policy {policy.spec!r} left positions masked after its last step")
    rep_val = dict(zip(reps_idx.tolist(), vals.tolist()))
    p = np.array([rep_val[int(k)] for k in labels])
    return SupportLaw(lang.support_, np.asarray(lang.weights_), p, labels, "sample", list(gens))
