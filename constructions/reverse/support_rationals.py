"""The output law on an explicit law's support in exact rationals (:mod:`.support_exact`, "Rationals").

The chain of :func:`.support_exact._law_one` for one target x, with exact rational masses: the marginals
are ratios of integer weight sums (the exact weights times their common denominator), the reveal laws are
1/C(n, r) for the uniform choices, and the confidence threshold compares the exact marginal with the exact
rational of the float tau plus TIE_TOL (a confidence within TIE_TOL of tau does not exceed it, as in the float
chain: :mod:`.policies`, "Ties").  The chain multiplies ``flint.fmpq`` rationals (python-flint, a dependency of mdmt;
several times faster than ``fractions.Fraction``) and returns Fractions.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from flint import fmpq as Q  # exact rationals in C (python-flint): the chain's many products

from .policies import CONFIDENCE, FIXED, MARGIN, NEG_ENTROPY, NO_SCORE, SIZE, THRESHOLD, TIE_TOL, EntropySum, Policy
from .support_symmetry import integer_weights
from .support_zeta import agreement_sets, superset_sums
from mdmt.runtime.numba_cache import read_only

def rational_supported(policy: Policy, L: int) -> bool:
    """Rationals need rational reveal laws: no i.i.d. rates (real numbers), no entropy scores or sums
    (logarithms) and no mixtures of plans with real weights (random step sizes)."""
    from .policies import IID, RandomSizes

    if isinstance(policy, (EntropySum, IID, RandomSizes)):
        return False
    plans = policy.plans(L)
    return len(plans) == 1 and all(plan.score != NEG_ENTROPY for _, plan in plans)


def rational_cost(policy: Policy, L: int) -> int:
    """A rough count of the rational chain's transitions per representative."""
    return (1 << L) * L * 4


def exact_rationals(lang, policy: Policy, decode: str, reps_idx) -> dict:
    """p(x) as a Fraction for each representative support index (the chain of :func:`_law_one` in rationals)."""
    if not rational_supported(policy, lang.length):
        raise ValueError(f"policy {policy.spec!r}: its law involves real numbers (rates or entropies); exact "
                         "rationals are available for fixed sizes, top-k, thresholds and fixed orders")
    if lang.exact_weights is None:
        raise ValueError("the law's weights are floats; exact rationals need rational weights")
    W = [int(v) for v in integer_weights(lang)]
    X = lang.support_
    L, V = lang.length, lang.n_symbols
    plans = policy.plans(L)
    out = {}
    for k in reps_idx:
        x = X[int(k)]
        (_, plan), = plans  # one plan: rational_supported leaves out the mixtures (random sizes)
        out[int(k)] = _rational_one(x, X, W, V, plan, decode)
    return out


def _rational_one(x, X, W, V, plan, decode) -> Fraction:
    L = len(x)
    full_mask = (1 << L) - 1
    A = agreement_sets(x, X)
    small = sum(W) < 2 ** 53  # integer sums in float64 are then exact, whatever their order
    Warr = np.array(W, dtype=np.float64 if small else object)
    cache: dict[int, tuple] = {}
    greedy = decode == "greedy"
    need_full = greedy or (plan.score != NO_SCORE and np.any(plan.mode != SIZE))
    t = Fraction(plan.tau) + Fraction(TIE_TOL)  # exceeding tau: above tau + TIE_TOL (policies, "Ties")
    tau = Q(t.numerator, t.denominator)

    def total(ws) -> int:
        return int(ws.sum()) if small else int(sum(ws))

    counts = _superset_counts(x, X, A, W, small)  # counts[U]: the weight of the rows that agree with x on U

    def marg(U):
        got = cache.get(U)
        if got is None:
            rows = (A & U) == U
            wr = Warr[rows]
            c = total(wr)
            T = None
            if need_full:
                Y = X[rows]
                if small:
                    T = [[int(t) for t in np.bincount(Y[:, i], weights=wr, minlength=V)] for i in range(L)]
                else:
                    T = [[total(wr[Y[:, i] == v]) for v in range(V)] for i in range(L)]
            got = cache[U] = (c, T)
        return got

    def factor(U, i):
        if not greedy:
            return Q(counts[U | (1 << i)], counts[U])
        c, T = marg(U)
        row = T[i]
        best = max(row)
        if row[x[i]] != best:
            return Q(0)
        return Q(1, sum(1 for t in row if t == best))

    def score(U, i):
        c, T = marg(U)
        row = sorted(T[i], reverse=True)
        if plan.score == CONFIDENCE:
            return Q(row[0], c)
        if plan.score == MARGIN:
            return Q(row[0] - (row[1] if len(row) > 1 else 0), c)
        raise ValueError("exact rationals: the entropy score involves logarithms")

    F = {0: Q(1)}
    for j in range(plan.steps):
        mode = int(plan.mode[j])
        G: dict = {}
        for U, mass in F.items():
            pos = [i for i in range(L) if not (U >> i) & 1]
            m = len(pos)
            if m == 0:
                G[U] = G.get(U, 0) + mass
                continue
            fac = {i: factor(U, i) for i in pos}
            if mode == FIXED:
                S = [i for i in pos if plan.order[i] == j + 1]
                choices = [(S, Q(1))]
            else:
                if mode == SIZE:
                    cnt = min(int(plan.k[j]), m)
                    sure, tied, r = [], pos, cnt
                else:
                    sc = {i: score(U, i) for i in pos}
                    if mode == THRESHOLD:
                        cnt = sum(1 for i in pos if sc[i] > tau) or 1
                    else:  # TOPK
                        cnt = min(int(plan.k[j]), m)
                    if mode == SIZE or cnt >= m:
                        sure, tied, r = [], pos, min(cnt, m)
                    else:
                        thr = sorted(sc.values(), reverse=True)[cnt - 1]
                        sure = [i for i in pos if sc[i] > thr]
                        tied = [i for i in pos if sc[i] == thr]
                        r = cnt - len(sure)
                nc = math.comb(len(tied), r)
                choices = [(sure + list(c), Q(1, nc)) for c in itertools.combinations(tied, r)]
            for S, pw in choices:
                w = mass * pw
                for i in S:
                    w *= fac[i]
                    if not w:
                        break
                if w:
                    V2 = U
                    for i in S:
                        V2 |= 1 << i
                    G[V2] = G.get(V2, 0) + w
        F = G
    left = sum((v for U, v in F.items() if U != full_mask), Q(0))
    if left:
        raise ValueError(f"the plan left positions masked after its {plan.steps} steps")
    p = F.get(full_mask, Q(0))
    return Fraction(int(p.p), int(p.q))  # flint's exact rational, as a Fraction


def _superset_counts(x, X, A: np.ndarray, W: list[int], small: bool) -> list[int]:
    """c_x(U) for every U as exact integers: :func:`.support_zeta.superset_sums` in float64 while the integer
    weights sum below 2^53 (every partial sum is then an exact integer), Python's integers beyond."""
    if small:
        return [int(v) for v in superset_sums(x, X, read_only(np.asarray(W, dtype=np.float64))).tolist()]
    L = X.shape[1]
    h = np.zeros(1 << L, dtype=object)
    for a, w in zip(A.tolist(), W):
        h[a] += w
    idx = np.arange(1 << L)
    for b in range(L):
        low = idx[(idx >> b) & 1 == 0]
        h[low] += h[low | (1 << b)]
    return [int(v) for v in h.tolist()]
