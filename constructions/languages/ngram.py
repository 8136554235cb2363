"""n-gram languages: order n-1 Markov chains on tokens (Section 4.1 of the paper).

q(x) = init(x_1..x_{n-1}) * prod_{i>=n} P(x_i | x_{i-n+1..i-1}).

Contexts (tuples of n-1 tokens) are indexed big-endian:
``index(a_1..a_{n-1}) = sum_k a_k V^(n-1-k)``.

Inference (``score``, ``in_support``, ``posterior_marginals``, ``sample``) works straight on
these tables (:mod:`mdmt.constructions.languages.ngram_inference`): O(L) per fully revealed
sequence, and never the V^(n-1) x V^(n-1) matrix of the equivalent HMM, so any n-gram whose
tables fit in memory can be scored.

An ``NGram`` is exactly an HMM whose hidden state at position i is the window
(x_i, ..., x_{i+n-2}) of the current and next n-2 tokens: the initial state law is
the law of the first n-1 tokens, the state emits its first token
deterministically, and the window slides by drawing the next token from the
n-gram conditional.  Tokens beyond position L are summed out, so the HMM's law
on V^L is the n-gram's for every L >= 1 (see :meth:`NGram.to_hmm`, which builds it
when its dense matrices fit the memory limit of :mod:`mdmt.runtime.resources`).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from mdmt.constructions.types import ArrayLike

from . import ngram_inference
from .hmm import HMM, check_sample_size, dense_hmm_bytes
from mdmt.runtime.resources import check_memory, check_work
from mdmt.runtime.validation import DEFAULT_ATOL, as_rng, positive_int, probability_array, token_array

MAX_ORDER = 64
"""Largest n-gram order accepted (contexts are int64 indices; with |V| >= 2 a larger table cannot exist)."""


def check_order(n) -> int:
    """``n`` as an int in 2..MAX_ORDER, else ``ValueError`` (checked before any V**(n-1) is computed)."""
    n = positive_int("n", n, minimum=2)
    if n > MAX_ORDER:
        raise ValueError(f"n = {n} is larger than the largest supported n-gram order {MAX_ORDER}")
    return n


class NGram:
    """An n-gram language over tokens ``0..n_symbols-1``.

    Parameters
    ----------
    n : order (n >= 2); the next token depends on the previous n-1.
    initial : law of the first n-1 tokens, shape (V,)*(n-1) or (V**(n-1),).
    transition : (V**(n-1), V); row c is P(next | context c).
    """

    kind = "ngram"

    def __init__(self, n: int, initial: ArrayLike, transition: ArrayLike, *, atol: float = DEFAULT_ATOL):
        n = check_order(n)
        T = probability_array("transition", transition, 2, atol=atol)
        V = T.shape[1]
        n_ctx = V ** (n - 1)  # n <= MAX_ORDER: a Python int of at most a few hundred digits
        if T.shape[0] != n_ctx:
            shown = n_ctx if n_ctx < 10**15 else f"about 10^{len(str(n_ctx)) - 1}"
            raise ValueError(
                f"transition must have V**(n-1) = {V}**{n - 1} = {shown} rows for n={n}, V={V}; got {T.shape[0]}"
            )
        init = np.asarray(initial, dtype=np.float64)
        if init.ndim == n - 1 and init.shape == (V,) * (n - 1):
            init = init.reshape(-1)
        init = probability_array("initial", init, 1, atol=atol)
        if init.shape[0] != n_ctx:
            raise ValueError(
                f"initial must be the law of the first n-1 tokens, shape ({V},)*{n - 1} or ({n_ctx},); got {init.shape}"
            )
        self.n = n
        self.initial_ = init
        self.transition_ = T
        self.atol = atol

    @property
    def n_symbols(self) -> int:
        return self.transition_.shape[1]

    @property
    def n_contexts(self) -> int:
        return self.transition_.shape[0]

    def __repr__(self) -> str:
        return f"NGram(n={self.n}, n_symbols={self.n_symbols})"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, NGram)
            and self.n == other.n
            and np.array_equal(self.initial_, other.initial_)
            and np.array_equal(self.transition_, other.transition_)
        )

    __hash__ = None  # type: ignore[assignment]  # arrays are compared by value

    @cached_property
    def _tables(self) -> ngram_inference.NGramTables:
        return ngram_inference.NGramTables.from_arrays(self.initial_, self.transition_, self.n - 1)

    @cached_property
    def _hmm(self) -> HMM:
        V, n_ctx = self.n_symbols, self.n_contexts
        check_memory(f"the HMM form of this {self.n}-gram ({n_ctx} hidden states, a {n_ctx} x {n_ctx} transition matrix)",
                     dense_hmm_bytes(n_ctx, V),
                     "score, in_support, posterior_marginals and sample work on the n-gram's own tables")
        # Window state w = (a_1..a_{n-1}) slides to (a_2..a_{n-1}, b) with prob P(b | w).
        shifted = (np.arange(n_ctx) * V) % n_ctx  # index of (a_2..a_{n-1}, 0)
        A = np.zeros((n_ctx, n_ctx))
        rows = np.repeat(np.arange(n_ctx), V)
        cols = (shifted[:, None] + np.arange(V)[None, :]).reshape(-1)
        A[rows, cols] = self.transition_.reshape(-1)
        B = np.zeros((n_ctx, V))
        B[np.arange(n_ctx), np.arange(n_ctx) // (n_ctx // V)] = 1.0  # emit the window's first token
        return HMM(self.initial_, A, B, atol=self.atol)

    def to_hmm(self) -> HMM:
        """The equivalent HMM (states = windows of n-1 tokens); same law on V^L for every L.

        Its transition matrix is dense, V^(n-1) x V^(n-1): a ``ResourceError`` (a ``ValueError``)
        refuses it when it would exceed the memory limit.  Inference on the n-gram itself never
        needs it.
        """
        return self._hmm

    def check_tokens(self, X, *, allow_mask: bool = True) -> np.ndarray:
        """Validate a batch of (partially revealed) sequences; returns int64 (n, L)."""
        return token_array(X, self.n_symbols, allow_mask=allow_mask)

    def log_likelihood(self, X) -> np.ndarray:
        """Natural-log probability of each sequence (masked positions summed out), shape (n,); see
        :meth:`HMM.log_likelihood`."""
        return ngram_inference.log_likelihood(self._tables, self.check_tokens(X))

    def in_support(self, X) -> np.ndarray:
        """Boolean (n,): q(x_U) > 0, decided exactly (no floating point)."""
        return ngram_inference.support(self._tables, self.check_tokens(X))

    def posterior_marginals(self, X, *, off_support: str = "raise") -> np.ndarray:
        """The oracle denoiser q(x_i = v | x_U), shape (n, L, V); see :meth:`HMM.posterior_marginals`."""
        if off_support not in ("raise", "uniform"):
            raise ValueError(f"off_support must be 'raise' or 'uniform', got {off_support!r}")
        return ngram_inference.posterior_marginals(self._tables, self.check_tokens(X), off_support)

    def sample_sequences(self, n: int, length: int, seed=None) -> np.ndarray:
        """Draw ``n`` i.i.d. sequences of ``length`` tokens; the same sequences as ``to_hmm().sample_sequences``
        for a seed."""
        n = positive_int("n", n, minimum=0)
        length = positive_int("length", length)
        check_sample_size(n, length)
        return ngram_inference.sample(self._tables, n, length, as_rng(seed))

    def __call__(self, X) -> np.ndarray:
        return self.posterior_marginals(X)

    def sequence_entropy(self, length: int) -> float:
        """Exact entropy H(X_1..X_L) in nats (chain rule over propagated context laws)."""
        length = positive_int("length", length)
        V, n = self.n_symbols, self.n
        k = n - 1
        check_work(f"the exact entropy of a {n}-gram with {self.n_contexts} contexts at L = {length}",
                   max(0, length - k) * (self.n_contexts * V + 10_000), "use a smaller L")
        if length <= k:
            # Entropy of the marginal of the first `length` tokens of the initial law.
            marg = self.initial_.reshape((V,) * k).sum(axis=tuple(range(length, k))).reshape(-1)
            return float(_entropy(marg))
        total = float(_entropy(self.initial_))
        row_h = np.array([_entropy(r) for r in self.transition_])
        ctx = self.initial_.copy()
        shifted = (np.arange(self.n_contexts) * V) % self.n_contexts
        for _ in range(length - k):
            total += float(ctx @ row_h)
            nxt = np.zeros_like(ctx)
            np.add.at(nxt, (shifted[:, None] + np.arange(V)[None, :]).reshape(-1), (ctx[:, None] * self.transition_).reshape(-1))
            ctx = nxt
        return total


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def check_language(language, name: str = "language"):
    """``language`` itself when it is an mdmt language (an HMM, an NGram, an explicit law, or anything with ``to_hmm()``); a
    ``TypeError`` naming ``name`` and what was given otherwise (``None``, a string, an array)."""
    if isinstance(language, HMM) or callable(getattr(language, "to_hmm", None)) or getattr(language, "kind", None) == "explicit":
        return language
    raise TypeError(f"{name} must be an mdmt language (an HMM or an NGram, mdmt.constructions.languages), got "
                    f"{type(language).__name__} {language!r:.60}")


def as_hmm(language) -> HMM:
    """The HMM form of any mdmt language (an HMM, an NGram, or anything with ``to_hmm()``)."""
    if isinstance(language, HMM):
        return language
    to_hmm = getattr(language, "to_hmm", None)
    if to_hmm is None:
        if getattr(language, "kind", None) == "explicit":
            raise ValueError(f"{language!r} is an explicit law, which has no HMM form; this computation needs an "
                             "n-gram or HMM language")
        raise ValueError(f"expected an mdmt language (HMM or NGram), got {type(language).__name__}")
    return to_hmm()
