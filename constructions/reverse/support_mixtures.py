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
sizes, O(|S|) per subset for the rates), in one pass over the revealed sets; the two are tested equal.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.runtime.numba_cache import configure_numba_cache, read_only
from mdmt.runtime.parallel import run_ranges
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


def size_chain_nfe(policy, L: int) -> float:
    """E[NFE] of ``IID`` or ``RandomSizes`` from the size chain alone: the expected number of steps that reveal at
    least one position, sum over the states (a, u) of P(a, u) * P(the step from (a, u) reveals something), in
    O(A^2 L^2) (the same number as the policy's own ``expected_nfe``, which sums over every step-size vector)."""
    K = size_kernel(policy, L)
    A = K.shape[0]
    P = np.zeros((A, L + 1))
    P[0, 0] = 1.0
    nfe = 0.0
    for u in range(L):  # a step revealing s >= 1 goes to a larger u; s = 0 to a larger a at the same u
        for a in range(A):
            if P[a, u] == 0.0:
                continue
            nfe += P[a, u] * K[a, u, 1:, :].sum()
            for s in range(L - u + 1):
                P[:, u + s] += P[a, u] * K[a, u, s, :]
    return float(nfe)


@nb.njit(cache=True)
def _law_one(C, L, K):
    """p(x) of one target (C = its superset sums) and the mass left unfinished.

    One pass over the revealed sets in increasing order (a successor U + S, S non-empty, is a larger integer; a
    step revealing nothing keeps U and moves to a larger size state, handled first): the mass of (a, U) is
    complete when U is reached.  Per U the size law is folded into one vector per subset size, so each pair
    (U, S) costs O(A)."""
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
    out = np.zeros((L + 1, A))  # out[s, a']: the mass of U leaving by a subset of size s into size state a'
    done = 0.0
    left = 0.0
    for U in range(full):
        live = False
        for a in range(A):
            if F[a, U] != 0.0:
                live = True
        if not live:
            continue
        u = 0
        masked = full & ~U
        for i in range(L):
            if (U >> i) & 1:
                u += 1
            else:
                fac[1 << i] = C[U | (1 << i)] / C[U]
        m = L - u
        for a in range(A):  # steps that reveal nothing (rates): to a larger size state, same U
            f = F[a, U]
            if f != 0.0:
                for a2 in range(a + 1, A):
                    F[a2, U] += f * K[a, u, 0, a2]
        out[:, :] = 0.0
        for a in range(A):
            f = F[a, U]
            if f == 0.0:
                continue
            way_out = 0.0
            for s in range(m + 1):
                for a2 in range(A):
                    k = K[a, u, s, a2]
                    way_out += k
                    if s > 0:
                        out[s, a2] += f * k
            if way_out == 0.0:
                left += f  # a size state with no step left while positions are masked
        prod[0] = 1.0
        cnt[0] = 0
        S = (0 - masked) & masked  # the smallest non-empty subset of the masked positions
        while True:
            prev = S & (S - 1)
            prod[S] = prod[prev] * fac[S & ~prev]
            cnt[S] = cnt[prev] + 1
            s = cnt[S]
            base = prod[S] * inv[m, s]
            if base != 0.0:
                if s == m:
                    for a2 in range(A):
                        done += base * out[s, a2]
                else:
                    for a2 in range(A):
                        if out[s, a2] != 0.0:
                            F[a2, U | S] += base * out[s, a2]
            if S == masked:
                break
            S = (S - masked) & masked
    return done, left


@nb.njit(cache=True, nogil=True)
def _laws(lo, hi, reps, support, w, L, K, out, left):
    """(p(x), mass left) of the representatives lo..hi-1 into out and left."""
    for r in range(lo, hi):
        C = superset_sums(reps[r], support, w)
        out[r], left[r] = _law_one(C, L, K)


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
                 (A + 3) * (1 << L) * 8, "use a shorter length")
    check_work(f"the exact law of {len(reps_idx)} representative sequence(s) on the support",
               len(reps_idx) * 3 ** L * A, "use a smaller support or a shorter length")
    w = _weights_for_floats(lang)
    reps = read_only(np.ascontiguousarray(lang.support_[reps_idx]))
    vals, left = np.zeros(len(reps_idx)), np.zeros(len(reps_idx))
    run_ranges(_laws, len(reps_idx), reps, lang.support_, w, L, np.ascontiguousarray(K), vals, left)
    if np.any(np.abs(left) > 1e-9):
        raise ValueError(f"policy {policy.spec!r} left positions masked after its last step")
    rep_val = dict(zip(reps_idx.tolist(), vals.tolist()))
    p = np.array([rep_val[int(k)] for k in labels])
    return SupportLaw(lang.support_, np.asarray(lang.weights_), p, labels, "sample", list(gens))
