"""Independent evaluations for ``mdmt verify``: exact or certified, by other code paths than the library.

Everything here is computed from definitions, without the library's algorithms
(constructions/reverse/*, bounds/dependencies.py's scan):

* the law q of a small language, exactly (rational forward recursion with python-flint's
  fmpq matrices; a float parameter is the rational number it represents), normalised exactly;
* its partial-assignment table, the subset entropies H(X_W), the posterior rows q(v | x_U);
* every *ordered partition* of the positions (the reveal order of an assignment tau: blocks
  S_1 < S_2 < ...), its probability under a schedule (a DP over steps, for each composition of L),
  and, per partition, KL(q || p_tau) from the factors of p_tau (the expected log of each factor
  over the support, once per position and revealed set), the total correlation of every block from
  entropies and the learning term from row-wise KL divergences;
* p_N as the mixture of the p_tau (Eq. 3 by enumeration), its SER and KL(q || p_N);
* the learning error (max over contexts) of a denoiser table;
* E[D_j] exactly (transfer matrices: integer fmpz_mat powers over a common denominator, or
  arb_mat at high precision);
* rho, P_distinct and the reveal probabilities of the named schedules, exactly.

Two arithmetic back ends share the code: certified float intervals (:class:`~.intervals.Iv`)
and exact rationals (numpy object arrays of Fraction; logarithms as
:class:`~.intervals.LogSum`) for the small instances where a bound is attained and only an
exact comparison can decide.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from .intervals import Iv, LogSum, exact_log


def frac(x) -> Fraction:
    """A float (or int, fmpq) as the exact rational it represents."""
    if hasattr(x, "p") and hasattr(x, "q"):
        return Fraction(int(x.p), int(x.q))
    return Fraction(float(x)) if isinstance(x, (float, np.floating)) else Fraction(x)


def frac_array(a) -> np.ndarray:
    a = np.asarray(a)
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for k, v in enumerate(a.reshape(-1)):
        flat[k] = frac(v)
    return out


# ----------------------------------------------------------------------------- back ends

class Exact:
    """Exact rationals: object arrays of Fraction, logarithms as LogSum."""

    exact = True

    @staticmethod
    def array(values) -> np.ndarray:
        return frac_array(values) if not (isinstance(values, np.ndarray) and values.dtype == object) else values

    @staticmethod
    def zeros(shape) -> np.ndarray:
        out = np.empty(shape, dtype=object)
        out.reshape(-1)[:] = [Fraction(0)] * out.size
        return out

    @staticmethod
    def log(a):
        return exact_log(a)

    @staticmethod
    def prod(a, axis):
        return np.prod(a, axis=axis)

    @staticmethod
    def is_zero(a) -> np.ndarray:
        return np.vectorize(lambda v: v == 0, otypes=[bool])(a)


class Cert:
    """Certified float intervals."""

    exact = False

    @staticmethod
    def array(values) -> Iv:
        if isinstance(values, Iv):
            return values
        values = np.asarray(values)
        return Iv.from_fractions(values) if values.dtype == object else Iv.exact(values)

    @staticmethod
    def zeros(shape) -> Iv:
        return Iv(np.zeros(shape))

    @staticmethod
    def log(a: Iv) -> Iv:
        return a.log()

    @staticmethod
    def prod(a: Iv, axis):
        return a.prod(axis)

    @staticmethod
    def is_zero(a: Iv) -> np.ndarray:
        return (a.lo == 0) & (a.hi == 0)


def backend(exact: bool):
    return Exact if exact else Cert


def bsum(a, axis=None):
    """Sum for either back end (object arrays sum exactly)."""
    return a.sum(axis=axis)


# ----------------------------------------------------------------------------- the law q

def exact_q(language, L: int) -> np.ndarray:
    """q on V^L (lexicographic order) as exact Fractions: a rational forward recursion, normalised exactly."""
    import flint

    from mdmt.constructions.languages.ngram import as_hmm

    h = as_hmm(language)
    S, V = h.emissionprob_.shape

    def fq(x):
        f = frac(x)
        return flint.fmpq(f.numerator, f.denominator)

    A = flint.fmpq_mat(S, S, [fq(v) for v in h.transmat_.reshape(-1)])
    emit = [fq(v) for v in h.emissionprob_.reshape(-1)]  # (S, V) row-major
    Bmat = flint.fmpq_mat(S, V, emit)
    B = [[emit[s * V + v] for s in range(S)] for v in range(V)]
    # alpha_t(x_1..x_t, h_t) = sum_{h_{t-1}} alpha_{t-1}(x_1..x_{t-1}, h_{t-1}) A[h_{t-1}, h_t] B[h_t, x_t], one row
    # per prefix; the last level sums over h_L at once: q(x_1..x_L) = (alpha_{L-1} A B)[x_1..x_{L-1}, x_L]
    prev = [[fq(v) for v in h.startprob_]]  # the empty prefix: "alpha_0 A" is the start law
    for t in range(1, L + 1):
        M = flint.fmpq_mat(len(prev), S, [e for r in prev for e in r])
        if t == L:
            q = (M * Bmat).entries()  # row k = prefix, column v = x_L: lexicographic order
            break
        rows = [[r[s] * B[v][s] for s in range(S)] for r in prev for v in range(V)]
        prev = (flint.fmpq_mat(len(rows), S, [e for r in rows for e in r]) * A).tolist()
    total = sum(q, flint.fmpq(0))
    out = np.empty(len(q), dtype=object)
    for k, v in enumerate(q):
        out[k] = frac(v / total)
    return out


# ----------------------------------------------------------------------------- partial assignments

@dataclass
class Layout:
    """Index arithmetic of partial assignments: base-(V+1) digits, V = masked, position 0 most significant."""

    V: int
    L: int

    @cached_property
    def strides(self) -> np.ndarray:
        return (self.V + 1) ** np.arange(self.L - 1, -1, -1, dtype=np.int64)

    @cached_property
    def digits(self) -> np.ndarray:
        return np.indices((self.V + 1,) * self.L).reshape(self.L, -1).T

    @cached_property
    def pattern(self) -> np.ndarray:
        """Bitmask of the revealed positions of every state (bit L-1-i for position i)."""
        return ((self.digits < self.V) * (1 << np.arange(self.L - 1, -1, -1))).sum(axis=1)

    @cached_property
    def sequences(self) -> np.ndarray:
        return np.indices((self.V,) * self.L).reshape(self.L, -1).T

    def bit(self, i: int) -> int:
        return 1 << (self.L - 1 - i)

    def state_of(self, X: np.ndarray, U: np.ndarray) -> np.ndarray:
        """State index of x restricted to U (bitmasks, broadcast): digits of x on U, V elsewhere."""
        bits = (1 << np.arange(self.L - 1, -1, -1))
        keep = (np.asarray(U)[..., None] & bits) != 0
        return (np.where(keep, X, self.V) * self.strides).sum(axis=-1)


def extend(q_full: np.ndarray, V: int, L: int) -> np.ndarray:
    """q(x_U) for every partial assignment: along each axis append the sum over it (any dtype)."""
    ext = q_full.reshape((V,) * L)
    for axis in range(L):
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    return ext.reshape(-1)


def extend_integers(q_frac: np.ndarray, V: int, L: int) -> tuple[np.ndarray, int]:
    """:func:`extend` of an object array of Fractions on the integers over their common denominator D
    (no gcd at any addition): (n, D) with q(x_U) = n[U-state] / D."""
    D = math.lcm(*(v.denominator for v in q_frac)) if len(q_frac) else 1
    nums = np.empty(len(q_frac), dtype=object)
    nums[:] = [v.numerator * (D // v.denominator) for v in q_frac]
    return extend(nums, V, L), D


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
    from .intervals import gamma

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

    from .dependencies import transfer_matrix

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

    from .dependencies import transfer_matrix

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


__all__ = ["Reference", "Partitions", "ChainEval", "Exact", "Cert", "IntervalLaw", "composition_probabilities",
           "dependencies_by_segments", "expected_dependencies_exact", "exact_q", "extend", "kl_from",
           "p_distinct_exact", "partition_probabilities", "rho_exact", "schedule_exact", "ser_from"]
