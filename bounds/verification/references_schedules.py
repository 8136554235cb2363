"""Exact references for the schedules of :mod:`.references`: dependencies, P_distinct, rho and the
interval HMM's oracle SER, by other code paths than the library.

* E[D_j] per step exactly (Definition B.5, Lemmas B.10-B.12): transfer matrices, as integer fmpz_mat
  powers over a common denominator or arb_mat at high precision; and D_j of given assignments by
  labelling their segments (:func:`dependencies_by_segments`);
* P_distinct = L! e_L(pi_1..pi_N), the probability that no step reveals two positions (Lemma C.1,
  Theorem 4.3), exactly;
* rho, the probability that no two positions of one interval are revealed together, weighted as in the
  interval HMM (Definition C.4, Lemmas C.5-C.6), and the oracle SER 1 - rho^(L/l) of Theorem 4.4
  (:class:`IntervalLaw`);
* the reveal probabilities of the named schedules (linear, the warm start of Theorem 4.2, log-linear,
  cosine), exactly.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .references_law import frac


# ----------------------------------------------------------------------------- dependencies

def _geometric_block(T, one, zero) -> list:
    """[[T, I], [0, I]] (row-major, flat): its L-th power holds I + T + ... + T^(L-1) in the top-right block."""
    d = len(T)
    big = [[zero] * (2 * d) for _ in range(2 * d)]
    for r in range(d):
        for s in range(d):
            big[r][s] = T[r][s]
        big[r][d + r] = one
        big[d + r][d + r] = one
    return [e for row in big for e in row]


def _dependencies_rational(n: int, L: int, pi) -> list[Fraction]:
    """E[D_j] per step in exact rationals (Fractions; floats in ``pi`` are the rationals they represent).

    With D the common denominator of a_j and pi_j, D [[T, I], [0, I]] has integer entries (T's entries are
    sums of a_j, pi_j and 1 - a_j - pi_j), so its L-th power is an integer matrix power (fmpz_mat: no
    gcd at any product) divided by D^L once.
    """
    import flint

    from ..theorems.dependencies import transfer_matrix

    d = 2 * n
    out, a = [], Fraction(0)
    for p in (frac(v) for v in pi):
        D = math.lcm(a.denominator, p.denominator)
        T, c = transfer_matrix((a * D).numerator, (p * D).numerator, n, D, 0)
        G = flint.fmpz_mat(2 * d, 2 * d, _geometric_block(T, D, 0)) ** int(L)
        count = Fraction(sum(int(G[0, d + s]) for s in range(d) if c[s]), D ** int(L))
        out.append(L * p - p * count)
        a = a + p
    return out


def expected_dependencies_exact(n: int, L: int, pi, exact: bool = True, prec: int = 256):
    """E[D_j] per step: L pi_j - p_j e_0 (I + T + ... + T^(L-1)) c, with exact integer matrices or arb matrices.

    ``pi``: Fractions (exact) or floats taken as rationals.  Returns a list of Fractions (exact) or arb balls.
    """
    if exact:
        return _dependencies_rational(n, L, pi)
    import flint

    from ..theorems.dependencies import transfer_matrix

    d = 2 * n
    old = flint.ctx.prec
    flint.ctx.prec = prec
    one, zero = flint.arb(1), flint.arb(0)
    conv = lambda v: v if isinstance(v, flint.arb) else flint.arb(flint.fmpq(frac(v).numerator, frac(v).denominator))  # noqa: E731
    try:
        pis = [conv(p) for p in pi]
        out, a = [], zero
        for p in pis:
            T, c = transfer_matrix(a, p, n, one, zero)
            G = flint.arb_mat(2 * d, 2 * d, _geometric_block(T, one, zero)) ** int(L)
            count = zero
            for s in range(d):
                count += G[0, d + s] * c[s]
            out.append(L * p - p * count)
            a = a + p
        return out
    finally:
        flint.ctx.prec = old


def dependencies_by_segments(n: int, taus: np.ndarray) -> np.ndarray:
    """D_j for many assignments at once (int (A, L) -> (A, N)): segments by labelling, from Definition B.5.

    A position is cut away when it lies in a run of >= n-1 positions revealed before step j;
    the remaining positions get the label of the number of cut runs before them, and D_j is the
    number of new positions minus the number of distinct labels among them.
    """
    taus = np.asarray(taus)
    A, L = taus.shape
    N = int(taus.max())
    out = np.zeros((A, N), dtype=np.int64)
    for j in range(1, N + 1):
        rev = taus < j
        # length of the maximal revealed run through each position
        run_id = np.cumsum(np.concatenate([np.zeros((A, 1), dtype=np.int64), (rev[:, 1:] != rev[:, :-1])], axis=1), axis=1)
        lengths = np.zeros((A, L), dtype=np.int64)
        for a in range(A):
            lengths[a] = np.bincount(run_id[a], minlength=L)[run_id[a]]
        cut = rev & (lengths >= max(n - 1, 1))
        starts = cut & ~np.concatenate([np.zeros((A, 1), dtype=bool), cut[:, :-1]], axis=1)
        label = np.cumsum(starts, axis=1)
        new = taus == j
        for a in range(A):
            labs = label[a][new[a]]
            out[a, j - 1] = int(new[a].sum()) - len(set(labs.tolist()))
    return out


# ----------------------------------------------------------------------------- schedules and the interval HMM

def _groups(pi) -> list[tuple[Fraction, int]]:
    """A schedule as (value, multiplicity) pairs: a list of such pairs, or of reveal probabilities."""
    if pi and isinstance(pi[0], tuple):
        return [(frac(v), int(c)) for v, c in pi]
    counts: dict = {}  # in order of first appearance; runs of equal values (schedules) are counted at once
    for v, run in itertools.groupby(pi):
        f = frac(v)
        counts[f] = counts.get(f, 0) + sum(1 for _ in run)
    return list(counts.items())


def p_distinct_exact(pi, L: int) -> Fraction:
    """L! e_L(pi_1..pi_N) in exact rationals: prod over groups of (1 + p x)^m = sum_k C(m, k) p^k x^k, to degree L."""
    e = [Fraction(1)] + [Fraction(0)] * L
    for p, m in _groups(pi):
        poly = [math.comb(m, k) * p ** k for k in range(min(m, L) + 1)]
        new = [Fraction(0)] * (L + 1)
        for i, ei in enumerate(e):
            if ei:
                for k, ck in enumerate(poly[: L + 1 - i]):
                    new[i + k] += ei * ck
        e = new
    return math.factorial(L) * e[L]


def rho_exact(l: int, pi) -> Fraction:
    """rho = E[2^(-#same-step pairs of one interval)] = l! [x^l] prod_j sum_k pi_j^k 2^(-C(k,2)) x^k / k!, exactly."""
    def mul(a, b):
        c = [Fraction(0)] * (l + 1)
        for i, ai in enumerate(a):
            if ai:
                for k, bk in enumerate(b[: l + 1 - i]):
                    c[i + k] += ai * bk
        return c

    g = [Fraction(1)] + [Fraction(0)] * l
    for p, m in _groups(pi):
        base = [p ** k / (2 ** (k * (k - 1) // 2) * math.factorial(k)) for k in range(l + 1)]
        power = [Fraction(1)] + [Fraction(0)] * l
        while m:
            if m & 1:
                power = mul(power, base)
            m >>= 1
            if m:
                base = mul(base, base)
        g = mul(g, power)
    return math.factorial(l) * g[l]


def schedule_exact(name: str, N: int, param=None) -> list:
    """The reveal probabilities of a named schedule exactly (rationals; cosine as arb balls)."""
    if name == "linear":
        return [Fraction(1, N)] * N
    if name == "warmstart":
        first = frac(param)
        return [Fraction(1)] if N == 1 else [first] + [(1 - first) / (N - 1)] * (N - 1)
    if name == "loglinear":
        eps = frac(param)
        t = [Fraction(0)] + [eps + (1 - eps) * Fraction(k, N) for k in range(1, N + 1)]
        return [t[N - j + 1] - t[N - j] for j in range(1, N + 1)]
    if name == "cosine":
        import flint

        old = flint.ctx.prec
        flint.ctx.prec = 128
        try:
            a = [flint.arb(flint.fmpq(k, 2 * N)).cos_pi() if k < N else flint.arb(0) for k in range(N + 1)]
            return [a[N - j] - a[N - j + 1] for j in range(1, N + 1)]
        finally:
            flint.ctx.prec = old
    raise ValueError(f"no exact form for schedule {name!r}")


@dataclass
class IntervalLaw:
    """Exact oracle SER of the interval HMM: 1 - rho^(L/l), compared through rho (monotone in it)."""

    l: int
    L: int
    pi: list  # reveal probabilities, or (value, multiplicity) pairs
    rho: Fraction = field(init=False)

    def __post_init__(self):
        self.rho = rho_exact(self.l, self.pi)

    @property
    def K(self) -> int:
        return self.L // self.l

    def ser_arb(self, prec: int = 256):
        import flint

        old = flint.ctx.prec
        flint.ctx.prec = prec
        try:
            r = flint.arb(flint.fmpq(self.rho.numerator, self.rho.denominator))
            return 1 - (self.K * r.log()).exp()
        finally:
            flint.ctx.prec = old

