"""Explicit laws: a language given by its support, a finite list of sequences of one length, and their weights.

q(x) = w_k when x is the k-th sequence of the support, 0 otherwise.  The n-gram and HMM languages of Section 4.1
of the paper describe q by a generative recursion; an explicit law lists it.  Every exact quantity of mdmt is
then a filtered sum over the support: the oracle denoiser of Section 3.2 is

    q(x_i = v | x_U) = sum_{y in supp, y_U = x_U, y_i = v} w_y  /  sum_{y in supp, y_U = x_U} w_y,

and the output law of a sampler is needed only on the support (SER = 1 - sum_{x in supp} p(x), Eq. 5 of the
paper; KL(q || p) = sum_{x in supp} q(x) log(q(x) / p(x)), Eq. 4), so the cost scales with the number of
sequences M, not with V^L.

Weights may be exact rationals (``fractions.Fraction``, integers, or strings such as ``"1/576"``); they are then
kept as :attr:`ExplicitLanguage.exact_weights` beside their float64 values, so that exact laws can be computed in
rationals.  Without weights the law is uniform on the support (exactly 1/M).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from fractions import Fraction
from numbers import Rational

import numpy as np

from mdmt.constructions.types import ArrayLike
from mdmt.runtime.numba_cache import read_only
from mdmt.runtime.resources import check_memory, check_work
from mdmt.runtime.validation import DEFAULT_ATOL, MASK, as_rng, positive_int, token_array

from .explicit_inference import ExplicitIndex, filter_sums, lookup

# Bytes per sequence of the support held in memory: the int64 tokens (8 L), the float64 weight, the sort order
# and an exact weight (a Fraction, about 100 bytes) -- used by :func:`explicit_bytes` before allocating.
_FRACTION_BYTES = 112
_EXACT_SUM_ROWS = 256  # log q(x_U) of a law with exact weights sums at most this many agreeing weights in rationals


def explicit_bytes(n_sequences: int, length: int, exact: bool = False, n_symbols: int = 0) -> int:
    """Bytes an explicit law of ``n_sequences`` sequences of ``length`` tokens holds: the support, its weights
    (and exact weights), the sort order while it is built, and the (position, token) index with the row hashes
    (:class:`~.explicit_inference.ExplicitIndex`; ``n_symbols`` sizes its list offsets)."""
    M, L = int(n_sequences), int(length)
    return M * (8 * L + 8 + 8 + (_FRACTION_BYTES if exact else 0)) + ExplicitIndex.bytes(M, L, n_symbols)


def _exact_weight(value, k: int) -> Fraction | None:
    """The exact rational of one weight, or None when it is a float (then the law is float only)."""
    if isinstance(value, bool):
        raise ValueError(f"weight {k} is a boolean ({value!r}); expected a number")
    if isinstance(value, Rational):
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"weight {k} = {value!r} is not a number (write a decimal or a rational such as 1/576)") from None
    return None


def _weights(weights, M: int, normalise: bool, atol: float) -> tuple[np.ndarray, tuple[Fraction, ...] | None]:
    """Validated float64 weights (summing to 1) and, when every weight was given exactly, the exact ones."""
    if weights is None:
        return np.full(M, 1.0 / M), (Fraction(1, M),) * M
    raw = list(weights) if not isinstance(weights, np.ndarray) else weights.tolist()
    if len(raw) != M:
        raise ValueError(f"weights: {len(raw)} given for {M} sequences of the support")
    given = [_exact_weight(v, k) for k, v in enumerate(raw)]
    exact_list: list[Fraction] = [e for e in given if e is not None]
    if len(exact_list) == M:
        for k, e in enumerate(exact_list):
            if e <= 0:
                raise ValueError(f"weight {k} = {e} is not positive (an explicit law lists its support only)")
        total = sum(exact_list, Fraction(0))
        if total != 1:
            if not normalise:
                raise ValueError(f"weights sum to {total} (= {float(total):.17g}), not 1; pass normalise=True "
                                 "(mdmt language --normalise) to divide them by their sum")
            exact_list = [e / total for e in exact_list]
        exact = tuple(exact_list)
        w = np.array([float(e) for e in exact], dtype=np.float64)
        return w, exact
    try:
        w = np.asarray([float(v) for v in raw], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("weights must be numbers (decimals or rationals such as 1/576)") from None
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"weight {k} = {float(w[k])!r} is not a positive finite number (an explicit law lists its support only)")
    ftotal = float(w.sum())
    if abs(ftotal - 1.0) > atol:
        if not normalise:
            raise ValueError(f"weights sum to {ftotal!r}, not 1 (tolerance {atol}); pass normalise=True "
                             "(mdmt language --normalise) to divide them by their sum")
    return w / ftotal, None


class ExplicitLanguage:
    """A law listed on its support: sequences of one length over tokens ``0..n_symbols-1`` with positive weights.

    Parameters
    ----------
    support : (M, L) integer array (or list of sequences), the distinct sequences of positive probability.
    weights : (M,) positive weights summing to 1 (floats, or exact rationals: ``Fraction``, ints, ``"1/576"``);
        default uniform, exactly 1/M.
    n_symbols : the vocabulary size V (default: the largest token + 1).
    normalise : divide the weights by their sum instead of refusing weights that do not sum to 1.
    atol : tolerance on the sum of float weights.

    The support is stored sorted lexicographically (:attr:`support_`, with :attr:`weights_` and
    :attr:`exact_weights` in the same order), so that two listings of the same law are equal.
    """

    kind = "explicit"

    def __init__(self, support: ArrayLike, weights: ArrayLike | Sequence[object] | None = None, *, n_symbols: int | None = None, normalise: bool = False,
                 atol: float = DEFAULT_ATOL):
        X = token_array(support, np.iinfo(np.int64).max if n_symbols is None else positive_int("n_symbols", n_symbols),
                        allow_mask=False, name="support sequence")
        M, L = X.shape
        if M == 0:
            raise ValueError("support: an explicit law needs at least one sequence")
        if L == 0:
            raise ValueError("support: sequences of length 0")
        V = int(X.max()) + 1 if n_symbols is None else int(n_symbols)
        check_memory(f"an explicit law of {M} sequences of length {L}", explicit_bytes(M, L, exact=True, n_symbols=V),
                     "use a smaller support")
        w, exact = _weights(weights, M, normalise, atol)
        order = np.lexsort(X.T[::-1])
        X = np.ascontiguousarray(X[order])
        if M > 1:
            same = np.all(X[1:] == X[:-1], axis=1)
            if same.any():
                k = int(np.flatnonzero(same)[0])
                raise ValueError(f"support: the sequence {X[k].tolist()} is listed twice (each sequence once, "
                                 "with its total weight)")
        self.support_ = X
        self.support_.setflags(write=False)
        self.weights_ = np.ascontiguousarray(w[order])
        self.weights_.setflags(write=False)
        self.exact_weights = None if exact is None else tuple(exact[int(k)] for k in order)
        self._n_symbols = V
        self.atol = atol

    # ------------------------------------------------------------------ basics
    @property
    def n_symbols(self) -> int:
        """Vocabulary size |V|."""
        return self._n_symbols

    @property
    def length(self) -> int:
        """L, the one length of every sequence of the support."""
        return int(self.support_.shape[1])

    @property
    def n_sequences(self) -> int:
        """M, the size of the support."""
        return int(self.support_.shape[0])

    def __repr__(self) -> str:
        return f"ExplicitLanguage(n_sequences={self.n_sequences}, length={self.length}, n_symbols={self.n_symbols})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ExplicitLanguage) and self.n_symbols == other.n_symbols
                and np.array_equal(self.support_, other.support_) and np.array_equal(self.weights_, other.weights_))

    __hash__ = None  # type: ignore[assignment]  # arrays are compared by value

    def check_tokens(self, X, *, allow_mask: bool = True) -> np.ndarray:
        """Validate a batch of (partially revealed) sequences of length L; returns int64 (n, L)."""
        X = token_array(X, self.n_symbols, allow_mask=allow_mask)
        if X.shape[1] != self.length and X.size:
            raise ValueError(f"sequences of length {X.shape[1]} given; this explicit law holds sequences of length "
                             f"{self.length} only")
        return X

    # ------------------------------------------------------------------ the index
    @cached_property
    def _index(self) -> ExplicitIndex:
        """The (position, token) index and the row hashes (:mod:`.explicit_inference`), built on first use."""
        check_memory(f"the index of an explicit law of {self.n_sequences} sequences of length {self.length}",
                     ExplicitIndex.bytes(self.n_sequences, self.length, self.n_symbols), "use a smaller support")
        return ExplicitIndex(self.support_, self.n_symbols)

    @cached_property
    def _uniform(self) -> bool:
        """All weights equal (exactly, when they are exact): the kernel then counts sequences (exact integers) and
        scales by the one weight."""
        if not np.all(self.weights_ == self.weights_[0]):
            return False
        return self.exact_weights is None or len(set(self.exact_weights)) == 1

    def _sums(self, X: np.ndarray, what: str, marginals: bool):
        """(mass, count, numerators) of each row: the weight and number of the support sequences agreeing with it
        on its revealed positions, and (when asked) their weight by position and token, shape (n, L, V)."""
        n, L = X.shape
        idx = self._index
        check_work(f"{what} of {n} sequence(s) against a support of {self.n_sequences} sequences",
                   int(idx.shortest(X).sum()) * L + n * L, "pass fewer sequences at a time")
        V = self.n_symbols
        if marginals:
            check_memory(f"{what} of {n} sequence(s) of length {L}", 8 * n * L * V, "pass fewer sequences at a time")
        num = np.zeros((n, L, V) if marginals else (0, 1, 1))
        mass = np.zeros(n)
        count = np.zeros(n, dtype=np.int64)
        w = read_only(np.ones(self.n_sequences) if self._uniform else self.weights_)
        none = np.all(X == MASK, axis=1)  # nothing revealed: the prior, computed once
        if none.any():
            prior_mass, prior_num = self._prior
            mass[none], count[none] = prior_mass, self.n_sequences
            if marginals:
                num[none] = prior_num
        some = np.flatnonzero(~none)
        if some.size:
            Xs = X[some]
            num_s = np.zeros((some.size, L, V) if marginals else (0, 1, 1))
            mass_s, count_s = np.zeros(some.size), np.zeros(some.size, dtype=np.int64)
            filter_sums(Xs, self.support_, w, idx.order, idx.starts, num_s, mass_s, count_s)
            mass[some], count[some] = mass_s, count_s
            if marginals:
                num[some] = num_s
        return mass, count, num

    @cached_property
    def _prior(self) -> tuple[float, np.ndarray]:
        """(total weight, weight by position and token) of the whole support, in the kernel's units."""
        w = read_only(np.ones(self.n_sequences) if self._uniform else self.weights_)
        num = np.stack([np.bincount(self.support_[:, i], weights=w, minlength=self.n_symbols)
                        for i in range(self.length)])
        return float(w.sum()), num

    def _mass(self, mass: np.ndarray, count: np.ndarray) -> np.ndarray:
        """q(x_U) of each row as float64: a count times the one weight for a uniform law (1/M exactly when the
        weights are exact), the summed weight otherwise."""
        if self._uniform:
            if self.exact_weights is not None:
                w0 = self.exact_weights[0]
                if w0.numerator == 1:  # k / M: one correctly rounded division of two exact integers
                    return count / float(w0.denominator)
                return np.array([float(int(k) * w0) for k in count])
            return count * self.weights_[0]
        return mass

    # --------------------------------------------------------------- inference
    def log_likelihood(self, X) -> np.ndarray:
        """Natural-log probability q(x_U) of each (partially revealed) sequence, shape (n,); -inf off the support.

        Complete sequences are looked up by their hash; partial ones sum the weights of the agreeing support
        sequences (the shortest index list, not the whole support).  Exact weights are summed in rationals when
        the law is uniform (a count times 1/M) or when at most 256 sequences agree, so q(x_U) is then correctly
        rounded before its log.  Values are clamped to <= 0.
        """
        X = self.check_tokens(X)
        n = X.shape[0]
        out = np.full(n, -np.inf)
        full = np.all(X != MASK, axis=1)
        if full.any():
            rows = lookup(self._index, self.support_, X[full])
            lp = np.full(rows.shape[0], -np.inf)
            hit = rows >= 0
            lp[hit] = np.log(self.weights_[rows[hit]])
            out[full] = lp
        part = ~full
        if part.any():
            Xp = X[part]
            mass, count, _ = self._sums(Xp, "scoring", marginals=False)
            q = self._mass(mass, count)
            if self.exact_weights is not None and not self._uniform:  # few agreeing rows: their sum in rationals
                for r in np.flatnonzero((count > 0) & (count <= _EXACT_SUM_ROWS)):
                    rows = _agreeing_rows(self._index, self.support_, Xp[r])
                    q[r] = float(sum((self.exact_weights[int(k)] for k in rows), Fraction(0)))
            with np.errstate(divide="ignore"):
                out[part] = np.where(count > 0, np.log(np.where(count > 0, q, 1.0)), -np.inf)
        return np.minimum(out, 0.0)

    def probability(self, x) -> Fraction | float:
        """q(x_U) of one (partially revealed) sequence: an exact ``Fraction`` when the weights are exact, else
        a float (``math.fsum`` of the agreeing weights)."""
        X = self.check_tokens(np.asarray(x)[None, :] if np.ndim(x) == 1 else x)
        if X.shape[0] != 1:
            raise ValueError(f"probability takes one sequence, got {X.shape[0]}")
        idx = self._index
        rows = _agreeing_rows(idx, self.support_, X[0])
        if self.exact_weights is None:
            return math.fsum(self.weights_[rows].tolist())
        if self._uniform:
            return len(rows) * self.exact_weights[0]
        return sum((self.exact_weights[int(r)] for r in rows), Fraction(0))

    def in_support(self, X) -> np.ndarray:
        """Boolean (n,): q(x_U) > 0, decided by matching tokens (no floating point): complete sequences by hash."""
        X = self.check_tokens(X)
        out = np.zeros(X.shape[0], dtype=bool)
        full = np.all(X != MASK, axis=1)
        if full.any():
            out[full] = lookup(self._index, self.support_, X[full]) >= 0
        if (~full).any():
            _, count, _ = self._sums(X[~full], "the support check", marginals=False)
            out[~full] = count > 0
        return out

    def posterior_marginals(self, X, *, off_support: str = "raise") -> np.ndarray:
        """The oracle denoiser: q(x_i = v | x_U) for every position, shape (n, L, V) (Section 3.2).

        Revealed positions get the one-hot vector of their token.  Where q(x_U) = 0 no posterior exists:
        ``off_support="raise"`` raises ``ValueError``, ``"uniform"`` returns the uniform law at masked positions.
        For a uniform law each entry is a ratio of two integer counts, correctly rounded.
        """
        if off_support not in ("raise", "uniform"):
            raise ValueError(f"off_support must be 'raise' or 'uniform', got {off_support!r}")
        X = self.check_tokens(X)
        n, L = X.shape
        V = self.n_symbols
        mass, count, num = self._sums(X, "the posterior marginals", marginals=True)
        empty = count == 0
        if empty.any() and off_support == "raise":
            r = int(np.flatnonzero(empty)[0])
            raise ValueError(f"sequence {r} has probability 0 under the language: no posterior exists")
        total = np.where(empty, 1.0, count if self._uniform else mass)
        out = num / total[:, None, None]
        out[empty] = 1.0 / V
        rr, ii = np.nonzero(X != MASK)
        out[rr, ii, :] = 0.0
        out[rr, ii, X[rr, ii]] = 1.0
        return out

    def sequence_entropy(self, length: int | None = None) -> float:
        """H(X_1..X_L) in nats, exactly from the weights: -sum_y w_y log w_y.  ``length``, if given, must be L."""
        if length is not None and positive_int("length", length) != self.length:
            raise ValueError(f"length {length}: this explicit law holds sequences of length {self.length} only")
        w = self.weights_
        return float(-(w * np.log(w)).sum())

    def sample_sequences(self, n: int, length: int | None = None, seed=None) -> np.ndarray:
        """Draw ``n`` i.i.d. sequences from q; int64 (n, L).  ``length``, if given, must be L."""
        n = positive_int("n", n, minimum=0)
        if length is not None and positive_int("length", length) != self.length:
            raise ValueError(f"length {length}: this explicit law holds sequences of length {self.length} only")
        check_memory(f"{n} sequences of length {self.length}", 8 * n * self.length, "draw fewer sequences")
        rng = as_rng(seed)
        cdf = np.cumsum(self.weights_)
        cdf /= cdf[-1]
        k = np.searchsorted(cdf, rng.random(n), side="right")
        return self.support_[np.minimum(k, self.n_sequences - 1)].copy()

    def __call__(self, X) -> np.ndarray:
        """An explicit law is its own oracle denoiser: ``lang(X) == lang.posterior_marginals(X)``."""
        return self.posterior_marginals(X)


def _agreeing_rows(index: ExplicitIndex, support: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The ids of the support sequences agreeing with x on its revealed positions (the shortest list, filtered)."""
    U = np.flatnonzero(x != MASK)
    if U.size == 0:
        return np.arange(support.shape[0])
    lens = index.starts[U, x[U] + 1] - index.starts[U, x[U]]
    i = int(U[np.argmin(lens)])
    cand = index.order[i, index.starts[i, x[i]]:index.starts[i, x[i] + 1]].astype(np.int64)
    keep = np.all(support[np.ix_(cand, U)] == x[U], axis=1)
    return cand[keep]
