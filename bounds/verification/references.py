"""Independent evaluations for ``mdmt verify``: exact or certified, by other code paths than the library.

Everything here is computed from definitions, without the library's algorithms
(constructions/reverse/*, bounds/theorems/dependencies.py's scan):

* the law q of a small language, exactly, and its partial-assignment table (:mod:`.references_law`,
  with the two arithmetic back ends); from them the subset entropies H(X_W) and the posterior rows
  q(v | x_U);
* every *ordered partition* of the positions (the reveal order of an assignment tau: blocks
  S_1 < S_2 < ...), its probability under a schedule (a DP over steps, for each composition of L),
  and, per partition, KL(q || p_tau) from the factors of p_tau (the expected log of each factor
  over the support, once per position and revealed set), the total correlation of every block from
  entropies (Lemma A.1) and the learning term from row-wise KL divergences (the chain of Lemma B.9);
* p_N as the mixture of the p_tau (Eq. 3 by enumeration), its SER and KL(q || p_N);
* the learning error (max over contexts) of a denoiser table;
* E[D_j], rho, P_distinct and the reveal probabilities of the named schedules, exactly
  (:mod:`.references_schedules`).

Two arithmetic back ends share the code: certified float intervals (:class:`~.intervals.Iv`)
and exact rationals (numpy object arrays of Fraction; logarithms as
:class:`~.intervals.LogSum`) for the small instances where a bound is attained and only an
exact comparison can decide.  The names of :mod:`.references_law` and :mod:`.references_schedules`
are importable from here as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..theorems.intervals import Iv, LogSum
from ..theorems.intervals import exact_log as exact_log
from .references_law import Cert as Cert
from .references_law import Exact as Exact
from .references_law import Layout as Layout
from .references_law import backend as backend
from .references_law import bsum as bsum
from .references_law import exact_q as exact_q
from .references_law import extend as extend
from .references_law import extend_integers as extend_integers
from .references_law import frac as frac
from .references_law import frac_array as frac_array
from .references_schedules import IntervalLaw as IntervalLaw
from .references_schedules import _dependencies_rational as _dependencies_rational
from .references_schedules import _geometric_block as _geometric_block
from .references_schedules import _groups as _groups
from .references_schedules import dependencies_by_segments as dependencies_by_segments
from .references_schedules import expected_dependencies_exact as expected_dependencies_exact
from .references_schedules import p_distinct_exact as p_distinct_exact
from .references_schedules import rho_exact as rho_exact
from .references_schedules import schedule_exact as schedule_exact


# ----------------------------------------------------------------------------- one small instance

@dataclass
class Reference:
    """The exact law of a language at length L and everything verify computes from it, in one back end."""

    language: object
    L: int
    exact: bool = False
    q_override: np.ndarray | None = None  # use this law on V^L (e.g. the library's float table) instead
    law: np.ndarray | None = None  # the exact law (Fractions on V^L) when another Reference computed it already
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # results shared by the chains on this law

    def __post_init__(self):
        self.V = int(self.language.n_symbols)
        self.lay = Layout(self.V, self.L)
        self.B = backend(self.exact)

    # --- the law
    @cached_property
    def q_frac(self) -> np.ndarray:
        if self.q_override is not None:
            return frac_array(self.q_override)
        if self.law is not None:
            return self.law
        return exact_q(self.language, self.L)

    @cached_property
    def _q_ext_int(self) -> tuple[np.ndarray, int]:
        return extend_integers(self.q_frac, self.V, self.L)

    @cached_property
    def q_ext_num(self) -> np.ndarray:
        """q(x_U) times the common denominator of the law: Python integers (object array)."""
        return self._q_ext_int[0]

    @cached_property
    def q_ext_frac(self) -> np.ndarray:
        """q(x_U) for every state as Fractions."""
        num, D = self._q_ext_int
        out = np.empty(num.shape, dtype=object)
        out[:] = [Fraction(n, D) for n in num.tolist()]
        return out

    @cached_property
    def q_ext(self):
        """q(x_U) for every state, in the back end."""
        return self.B.array(self.q_ext_frac)

    @cached_property
    def live(self) -> np.ndarray:
        return np.array([n > 0 for n in self.q_ext_num.tolist()], dtype=bool)

    @cached_property
    def support(self) -> np.ndarray:
        """Indices (into V^L) of the sequences with q(x) > 0."""
        return np.flatnonzero([v.numerator > 0 for v in self.q_frac])

    @cached_property
    def X(self) -> np.ndarray:
        return self.lay.sequences[self.support]

    @cached_property
    def qx(self):
        return self.B.array(self.q_frac[self.support])

    # --- entropies
    @cached_property
    def log_q_ext(self):
        """log q(x_U) at live states (0 elsewhere; never used there)."""
        out = self.B.zeros(len(self.live))
        live = np.flatnonzero(self.live)
        out[live] = self.B.log(self.q_ext[live])
        return out

    @cached_property
    def HW(self):
        """H(X_W) for every subset W (bitmask): -sum over the states of pattern W of q log q."""
        live = np.flatnonzero(self.live)
        terms = -(self.q_ext[live] * self.log_q_ext[live])
        pat = self.lay.pattern[live]
        n_sub = 1 << self.L
        if self.exact:
            out = np.empty(n_sub, dtype=object)
            for w in range(n_sub):
                out[w] = sum(terms[pat == w], LogSum())
            return out
        return _group_sum(terms, pat, n_sub)

    def total_correlations(self, U: np.ndarray, S: np.ndarray):
        """TC(X_S | X_U) for arrays of disjoint bitmasks U, S: sum_{i in S} H(X_i|X_U) - H(X_S|X_U)."""
        U = np.asarray(U, dtype=np.int64)
        S = np.asarray(S, dtype=np.int64)
        tc = self.B.zeros(U.shape)
        for i in range(self.L):
            b = self.lay.bit(i)
            m = (S & b) != 0
            if np.any(m):
                tc[m] = tc[m] + (self.HW[U[m] | b] - self.HW[U[m]])
        return tc - (self.HW[U | S] - self.HW[U])

    # --- denoisers: None is the oracle q(v | x_U), computed where needed; otherwise a table in the back end
    def table(self, D_float):
        """A denoiser's float table D[state, i, v] (the library's), taken as exact numbers."""
        return self.B.array(np.asarray(D_float, dtype=np.float64))

    def gather(self, D, states, i: int, v):
        """D(x_U; i, v) at ``states`` (broadcast with v): the oracle's q(x_U, v)/q(x_U), or the table."""
        if D is None:
            child = states + (np.asarray(v) - self.V) * self.lay.strides[i]
            return self.q_ext[child] / self.q_ext[states]
        return D[states, i, v]

    def learning_rows(self, D):
        """KL(q(.|x_U) || D(.|x_U)) at every live state and masked position (0 elsewhere), row by row."""
        V, L = self.V, self.L
        out = self.B.zeros((len(self.live), L))
        if D is None:
            return out  # the oracle: each row is compared with itself
        for i in range(L):
            states = np.flatnonzero((self.lay.digits[:, i] == V) & self.live)
            child = states[:, None] + (np.arange(V)[None, :] - V) * self.lay.strides[i]
            qc = self.q_ext[child]
            post = qc / self.q_ext[states][:, None]
            pos = ~self.B.is_zero(qc)
            row = self.B.zeros(qc.shape)
            row[pos] = post[pos] * (self.B.log(post[pos]) - self.B.log(D[states, i, :][pos]))
            out[states, i] = bsum(row, axis=1)
        return out

    def learning_terms(self, D, rows=None):
        """K[U, i] = sum_{x_U} q(x_U) KL(q(.|x_U) || D(.|x_U)) at position i, for i not in U."""
        rows = self.learning_rows(D) if rows is None else rows
        n_sub = 1 << self.L
        live = np.flatnonzero(self.live)
        pat = self.lay.pattern[live]
        w = rows[live] * self.q_ext[live][:, None]
        K = self.B.zeros((n_sub, self.L))
        for i in range(self.L):
            col = w[:, i]
            if self.exact:
                for u in range(n_sub):
                    K[u, i] = sum(col[pat == u], Fraction(0))
            else:
                K[:, i] = _group_sum(col, pat, n_sub)
        return K

    def max_learning_error(self, D, rows=None):
        """max over live states and masked positions of the row KL (an enclosure, or exact)."""
        rows = self.learning_rows(D) if rows is None else rows
        live = np.flatnonzero(self.live)
        masked = self.lay.digits[live] == self.V
        vals = rows[live][masked]
        if self.exact:
            vals = [LogSum.of(v) for v in vals]
            best = max(vals, key=float)
            if any((v - best).sign() > 0 for v in vals):
                raise AssertionError("exact maximum not found")
            return best
        return vals.max()

    # --- reveal orders
    def _gather_all(self, D, log: bool):
        M, L = len(self.support), self.L
        n_sub = 1 << L
        U = np.arange(n_sub)
        states = self.lay.state_of(self.X[:, None, :], U[None, :])  # (M, n_sub)
        out = self.B.zeros((M, L, n_sub))
        for i in range(L):
            free = (U & self.lay.bit(i)) == 0
            vals = self.gather(D, states[:, free], i, self.X[:, i][:, None])
            out[:, i, free] = self.B.log(vals) if log else vals
        return out

    def log_D_at(self, D):
        """LD[m, i, U] = log D(x_U; i, x_i) for every support sequence m, position i, subset U without i."""
        return self._gather_all(D, log=True)

    def D_at(self, D):
        """PD[m, i, U] = D(x_U; i, x_i) (the same gather, without the log)."""
        return self._gather_all(D, log=False)


def _group_sum(terms: Iv, groups: np.ndarray, n: int) -> Iv:
    """Enclosures of the sums of ``terms`` within each group (bincount with the gamma(n_g) widening)."""
    from ..theorems.intervals import gamma

    counts = np.bincount(groups, minlength=n)
    g = np.array([gamma(c + 2) for c in counts])
    lo = np.bincount(groups, weights=terms.lo, minlength=n)
    hi = np.bincount(groups, weights=terms.hi, minlength=n)
    elo = g * np.bincount(groups, weights=np.abs(terms.lo), minlength=n)
    ehi = g * np.bincount(groups, weights=np.abs(terms.hi), minlength=n)
    return Iv(np.nextafter(lo - np.nextafter(elo, np.inf), -np.inf), np.nextafter(hi + np.nextafter(ehi, np.inf), np.inf))


# ----------------------------------------------------------------------------- ordered partitions

@dataclass
class Partitions:
    """Every ordered partition of L positions into at most ``max_blocks`` blocks (reveal orders)."""

    L: int
    max_blocks: int

    @cached_property
    def blocks(self) -> np.ndarray:
        """(P, L): the block of each position, blocks numbered 0..k-1 in reveal order."""
        k = min(self.max_blocks, self.L)
        b = np.indices((k,) * self.L).reshape(self.L, -1).T  # every assignment to blocks, lexicographic
        used = (b[:, :, None] == np.arange(k)).any(axis=1)  # (k^L, k): which blocks are non-empty
        keep = used.sum(axis=1) == b.max(axis=1) + 1  # the blocks used are exactly 0..max
        return np.ascontiguousarray(b[keep], dtype=np.int64)

    @cached_property
    def before(self) -> np.ndarray:
        """(P, L): bitmask of the positions revealed before position i (U_i)."""
        bits = 1 << np.arange(self.L - 1, -1, -1)
        b = self.blocks
        return ((b[:, None, :] < b[:, :, None]) * bits[None, None, :]).sum(axis=2)

    @cached_property
    def compositions(self) -> tuple[list, np.ndarray]:
        """(the distinct block-size sequences, index of each partition's)."""
        keys = {}
        idx = np.empty(len(self.blocks), dtype=np.int64)
        for p, b in enumerate(self.blocks):
            comp = tuple(np.bincount(b).tolist())
            idx[p] = keys.setdefault(comp, len(keys))
        return list(keys), idx

    @cached_property
    def block_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """(U, S), each (P, k_max): the positions before block k and the block itself (bitmasks; S = 0 past
        the last block)."""
        bits = 1 << np.arange(self.L - 1, -1, -1)
        k = np.arange(int(self.blocks.max()) + 1)
        lt = self.blocks[:, None, :] < k[None, :, None]
        eq = self.blocks[:, None, :] == k[None, :, None]
        return (lt * bits).sum(axis=2), (eq * bits).sum(axis=2)


def composition_probabilities(comps: list, pi) -> list:
    """P(the reveal order is a given ordered partition with block sizes c) = sum_{j_1<..<j_k} prod_m pi_{j_m}^{c_m},
    by a DP over steps, in exact rationals (or arb balls when pi holds balls)."""
    if all(isinstance(p, Fraction) for p in pi):
        return _composition_probabilities_rational(comps, pi)
    one = pi[0] * 0 + 1
    out = []
    for c in comps:
        k = len(c)
        f = [one] + [one * 0] * k
        for p in pi:
            powers = [p ** cm for cm in c]
            for m in range(k, 0, -1):
                f[m] = f[m] + f[m - 1] * powers[m - 1]
        out.append(f[k])
    return out


def _composition_probabilities_rational(comps: list, pi: list) -> list[Fraction]:
    """:func:`composition_probabilities` for rational pi: with D the common denominator, pi_j = n_j / D and
    prod_m pi_{j_m}^{c_m} = prod_m n_{j_m}^{c_m} / D^(sum c), so the DP runs on integers and divides once."""
    D = math.lcm(*(p.denominator for p in pi))
    nums = [p.numerator * (D // p.denominator) for p in pi]
    out = []
    for c in comps:
        k = len(c)
        f = [1] + [0] * k
        powers: dict = {}
        for n in nums:
            if n not in powers:
                powers[n] = [n ** cm for cm in c]
            pw = powers[n]
            for m in range(k, 0, -1):
                f[m] += f[m - 1] * pw[m - 1]
        out.append(Fraction(f[k], D ** sum(c)))
    return out


def partition_probabilities(parts: Partitions, pi, B):
    """The probability of every ordered partition under pi (Fractions, floats taken exactly, or arb balls)."""
    comps, idx = parts.compositions
    pi = [p if type(p).__name__ == "arb" else frac(p) for p in pi]
    probs = composition_probabilities(comps, pi)
    if B.exact:
        arr = np.empty(len(comps), dtype=object)
        arr[:] = probs
        return arr[idx]
    arr = np.empty(len(comps), dtype=object)
    arr[:] = probs
    enc = Iv.from_arb(arr) if type(probs[0]).__name__ == "arb" else Iv.from_fractions(arr)
    return enc[idx]


# ----------------------------------------------------------------------------- the chain on one instance

@dataclass
class ChainEval:
    """Per reveal order: KL(q||p_tau) (left), sum_j TC_j + sum_j learning_j (right), p_tau on the support."""

    ref: Reference
    D: object  # a denoiser table in the back end, or None for the oracle
    parts: Partitions

    @cached_property
    def learning_rows(self):
        """The row-wise KL of the denoiser at every live state and masked position (Reference.learning_rows)."""
        return self.ref.learning_rows(self.D)

    @cached_property
    def learning(self):
        """K[U, i] (identically 0 for the oracle, whose rows are the posterior rows themselves)."""
        return self.ref.learning_terms(self.D, self.learning_rows)

    @cached_property
    def max_learning_error(self):
        """The learning error in the max form (Reference.max_learning_error), from the same rows."""
        return self.ref.max_learning_error(self.D, self.learning_rows)

    @cached_property
    def left(self):
        """KL(q || p_tau) = sum_x q(x) log q(x) - sum_i sum_x q(x) log D(x_{U_i}; i, x_i) per reveal order, from
        the definition of p_tau (Eq. 3: p_tau(x) = prod_i D(x_{U_i}; i, x_i)) on every support sequence.

        The expected log of the factor of position i depends on the order only through U_i, so it is
        summed over the support once per (i, U) and then gathered for each order.
        """
        ref = self.ref
        LD = ref.log_D_at(self.D)  # (M, L, n_sub)
        W = bsum(ref.qx[:, None, None] * LD, axis=0)  # (L, n_sub): sum_x q(x) log D(x_U; i, x_i)
        pos = np.arange(ref.L)
        cross = bsum(W[pos[None, :], self.parts.before], axis=1)  # (P,)
        neg_entropy = bsum(ref.qx * ref.B.log(ref.qx))
        return -(cross - neg_entropy)

    @cached_property
    def p_tau(self):
        """p_tau(x) = prod_i D(x_{U_i}; i, x_i) on the support, (M, P): one factor per position, in order."""
        PD = self.ref.D_at(self.D)  # (M, L, n_sub)
        U = self.parts.before
        if self.ref.exact:
            pos = np.arange(self.ref.L)
            return np.prod(PD[:, pos[None, :], U], axis=2)
        # the product as Iv.prod forms it, 1 * D_0 * D_1 * ..., each order's partial products shared with the
        # orders that have the same U_0..U_i (the same floats: each order sees the same sequence of products);
        # rows are partial products, columns sequences
        PDt = Iv(PD.lo.transpose(1, 2, 0).copy(), PD.hi.transpose(1, 2, 0).copy())  # (L, n_sub, M)
        prefix = np.zeros(U.shape[0], dtype=np.int64)  # every order starts from the empty product
        part = Iv(np.ones((1, PD.shape[0])))
        n_sub = PDt.shape[1]
        for i in range(self.ref.L):
            keys, prefix = np.unique(prefix * n_sub + U[:, i], return_inverse=True)  # (prefix so far, U_i)
            prefix = prefix.reshape(-1)
            part = part[keys // n_sub] * PDt[i, keys % n_sub]
        return Iv(np.ascontiguousarray(part.lo[prefix].T), np.ascontiguousarray(part.hi[prefix].T))

    @cached_property
    def block_tc(self):
        """TC of every block of every reveal order, (P, k_max), from entropies (0 for empty and single blocks).

        It depends on the law and the orders only (not on the denoiser): computed once per Reference."""
        key = ("block_tc", self.parts.L, self.parts.max_blocks)
        if key not in self.ref.memo:
            self.ref.memo[key] = self._block_tc()
        return self.ref.memo[key]

    def _block_tc(self):
        U, S = self.parts.block_masks
        pairs, inv = np.unique(np.stack([U.ravel(), S.ravel()], axis=1), axis=0, return_inverse=True)
        many = np.array([bin(int(s)).count("1") > 1 for s in pairs[:, 1]])
        tc = self.ref.B.zeros(len(pairs))
        if np.any(many):
            tc[many] = self.ref.total_correlations(pairs[many, 0], pairs[many, 1])
        return tc[inv.reshape(U.shape)]

    @cached_property
    def tc(self):
        """sum_j TC_j per reveal order."""
        return bsum(self.block_tc, axis=1)

    @cached_property
    def learning_sum(self):
        """sum_j sum_{i in S_j} learning(U_j, i) per reveal order (row-wise KL)."""
        pos = np.arange(self.ref.L)
        return bsum(self.learning[self.parts.before, pos[None, :]], axis=1)

    @cached_property
    def right(self):
        """sum over blocks of TC (entropies) + sum over positions of the learning term (row-wise KL)."""
        return self.tc + self.learning_sum

    def expected(self, probs):
        """(E_tau KL(q||p_tau), p_N on the support) for partition probabilities ``probs``."""
        ekl = bsum(probs * self.left)
        pN = bsum(self.p_tau * probs[None, :], axis=1)
        return ekl, pN


def kl_from(ref: Reference, pN):
    """KL(q || p_N) = sum q (log q - log p_N) over the support."""
    return bsum(ref.qx * (ref.B.log(ref.qx) - ref.B.log(pN)))


def ser_from(pN):
    return 1 - bsum(pN)


__all__ = ["Reference", "Partitions", "ChainEval", "Exact", "Cert", "IntervalLaw", "composition_probabilities",
           "dependencies_by_segments", "expected_dependencies_exact", "exact_q", "extend", "kl_from",
           "p_distinct_exact", "partition_probabilities", "rho_exact", "schedule_exact", "ser_from"]
