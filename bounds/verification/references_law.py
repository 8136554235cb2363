"""The exact law of a small language and the arithmetic of :mod:`.references`: exact or certified,
by other code paths than the library.

* the law q on V^L exactly (rational forward recursion with python-flint's fmpq matrices; a float
  parameter is the rational number it represents), normalised exactly -- the law whose KL to the
  reverse process p_N (Eq. 3) the chain bound of Lemma B.9 controls;
* the index arithmetic of partial assignments x_U (:class:`Layout`) and q(x_U) for every one of them
  (:func:`extend`, :func:`extend_integers`), from which :class:`.references.Reference` takes the
  subset entropies of Lemma A.1 and the posterior rows of the learning error;
* the two arithmetic back ends: certified float intervals (:class:`Cert`, :class:`~.intervals.Iv`)
  and exact rationals (:class:`Exact`: numpy object arrays of Fraction; logarithms as
  :class:`~.intervals.LogSum`), for the small instances where a bound is attained and only an
  exact comparison can decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..theorems.intervals import Iv, exact_log


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
    """q on V^L (lexicographic order) as exact Fractions: a rational forward recursion, normalised exactly (an
    explicit law: its exact weights, or the rationals its float weights hold divided by their sum, at its support)."""
    if getattr(language, "kind", None) == "explicit":
        return _explicit_q(language, L)
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


def _explicit_q(language, L: int) -> np.ndarray:
    """q on V^L as Fractions for an explicit law of length L (zero off its support)."""
    if language.length != L:
        raise ValueError(f"L = {L}: this explicit law holds sequences of length {language.length} only")
    V = language.n_symbols
    w = language.exact_weights
    if w is None:
        w = [Fraction(float(v)) for v in language.weights_]
        total = sum(w, Fraction(0))
        w = [v / total for v in w]
    q = np.empty(V ** L, dtype=object)
    q[:] = [Fraction(0)] * (V ** L)
    for k, idx in enumerate((language.support_ @ (V ** np.arange(L - 1, -1, -1, dtype=np.int64))).tolist()):
        q[idx] = w[k]
    return q
