"""Hidden Markov model languages q = (pi, A, B) (Section 4.1 of the paper).

q(x) = sum_h pi[h_1] B[h_1, x_1] prod_{i>=2} A[h_{i-1}, h_i] B[h_i, x_i].

The class is immutable and validated on construction.  Attribute names follow
hmmlearn (``startprob_``, ``transmat_``, ``emissionprob_``), and so do the two methods it shares
with hmmlearn's ``CategoricalHMM``: ``score(X, lengths)`` is the total log-likelihood of the
sequences concatenated in X, and ``sample(n_samples, random_state)`` returns one sequence with its
hidden states as ``(X, Z)``.  mdmt's batch forms are ``log_likelihood`` (one value per row of an
(n, L) array, masked positions summed out) and ``sample_sequences(n, L, seed)``; tests/test_io.py
states the correspondence.  Unlike hmmlearn, every malformed input is rejected with a ``ValueError``
naming the row or entry.
All inference is exact (scaled forward-backward, boolean reachability) and
batched; see :mod:`mdmt.constructions.languages.inference`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from mdmt.constructions.types import ArrayLike

from . import inference
from mdmt.runtime.resources import check_memory, check_work, threads
from mdmt.runtime.validation import DEFAULT_ATOL, as_rng, positive_int, probability_array, token_array


def dense_hmm_bytes(n_states: int, n_symbols: int) -> int:
    """Peak bytes of a dense HMM with its inference tables: about six S x S float64 arrays
    (the matrix, its transpose, its CDF, the compressed rows, the successor bitsets) and four S x V."""
    S, V = int(n_states), int(n_symbols)
    return 8 * (6 * S * S + 4 * S * V)


def check_sample_size(n: int, length: int) -> None:
    """Refuse to draw n sequences of ``length`` tokens whose int64 array would not fit the memory limit."""
    check_memory(f"{n} sequences of length {length}", 8 * int(n) * int(length), "draw fewer or shorter sequences")


class HMM:
    """A hidden Markov model over tokens ``0..n_symbols-1``.

    Parameters
    ----------
    startprob : (S,) initial state law pi.
    transmat : (S, S) transition matrix A, rows summing to 1.
    emissionprob : (S, V) emission matrix B, rows summing to 1.
    atol : tolerance on every row sum.
    """

    kind = "hmm"

    def __init__(self, startprob: ArrayLike, transmat: ArrayLike, emissionprob: ArrayLike, *, atol: float = DEFAULT_ATOL):
        pi = probability_array("startprob", startprob, 1, atol=atol)
        A = probability_array("transmat", transmat, 2, atol=atol)
        B = probability_array("emissionprob", emissionprob, 2, atol=atol)
        S = pi.shape[0]
        check_memory(f"an HMM with {S} hidden states and {B.shape[1]} symbols", dense_hmm_bytes(S, B.shape[1]),
                     "use fewer hidden states (an n-gram language needs no HMM: NGram works on its own tables)")
        if A.shape != (S, S):
            raise ValueError(f"transmat must have shape ({S}, {S}) to match startprob, got {A.shape}")
        if B.shape[0] != S:
            raise ValueError(f"emissionprob must have {S} rows (one per state), got {B.shape[0]}")
        self.startprob_ = pi
        self.transmat_ = A
        self.emissionprob_ = B
        self.atol = atol

    # ------------------------------------------------------------------ basics
    @property
    def n_states(self) -> int:
        return self.startprob_.shape[0]

    @property
    def n_symbols(self) -> int:
        """Vocabulary size |V|."""
        return self.emissionprob_.shape[1]

    def to_hmm(self) -> "HMM":
        return self

    def __repr__(self) -> str:
        return f"HMM(n_states={self.n_states}, n_symbols={self.n_symbols})"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, HMM)
            and np.array_equal(self.startprob_, other.startprob_)
            and np.array_equal(self.transmat_, other.transmat_)
            and np.array_equal(self.emissionprob_, other.emissionprob_)
        )

    __hash__ = None  # type: ignore[assignment]  # arrays are compared by value

    def check_tokens(self, X, *, allow_mask: bool = True) -> np.ndarray:
        """Validate a batch of (partially revealed) sequences; returns int64 (n, L)."""
        return token_array(X, self.n_symbols, allow_mask=allow_mask)

    @cached_property
    def _kernel_params(self) -> inference.KernelParams:
        return inference.KernelParams.from_arrays(self.startprob_, self.transmat_, self.emissionprob_)

    # --------------------------------------------------------------- inference
    def log_likelihood(self, X) -> np.ndarray:
        """Natural-log probability of each sequence of a batch (n, L), shape (n,).

        Masked positions (``MASK``) are summed out, so a partially revealed
        sequence gets the marginal log q(x_U).  Sequences outside the support
        get ``-inf`` (decided exactly, without floating underflow).
        """
        X = self.check_tokens(X)
        self._check_work("scoring", X, 1)
        return inference.log_likelihood(self._kernel_params, X)

    def in_support(self, X) -> np.ndarray:
        """Boolean (n,): q(x_U) > 0, decided by boolean reachability (no floating point)."""
        X = self.check_tokens(X)
        self._check_work("the support check", X, 1)
        return inference.support(self._kernel_params, X)

    def posterior_marginals(self, X, *, off_support: str = "raise") -> np.ndarray:
        """The oracle denoiser: q(x_i = v | x_U) for every position, shape (n, L, V).

        Revealed positions get the one-hot vector of their token.  If some sequence
        has q(x_U) = 0 no posterior exists: ``off_support="raise"`` (default) raises
        ``ValueError``, ``"uniform"`` returns the uniform law at its masked positions.
        """
        if off_support not in ("raise", "uniform"):
            raise ValueError(f"off_support must be 'raise' or 'uniform', got {off_support!r}")
        X = self.check_tokens(X)
        self._check_work("the posterior marginals", X, 2)
        n, L = X.shape
        per_thread = 8 * L * self.n_states * (1 if self._kernel_params.sparse else inference._POST_BLOCK)
        check_memory(f"the posterior marginals of {n} sequence(s) of length {L} under an HMM with {self.n_states} states",
                     8 * n * L * self.n_symbols + (per_thread * min(n, threads()) if n and L else 0),
                     "pass fewer or shorter sequences at a time")
        return inference.posterior_marginals(self._kernel_params, X, off_support)

    def sample_sequences(self, n: int, length: int, seed=None) -> np.ndarray:
        """Draw ``n`` i.i.d. sequences of ``length`` tokens from q; int64 (n, length)."""
        n = positive_int("n", n, minimum=0)
        length = positive_int("length", length)
        check_sample_size(n, length)
        rng = as_rng(seed)
        return inference.sample(self._kernel_params, n, length, rng)

    # --------------------------------------------------------------- hmmlearn's meaning
    def score(self, X, lengths=None) -> float:
        """hmmlearn's ``score``: the total natural-log likelihood of the sequences concatenated in ``X``.

        ``X`` is hmmlearn's ``CategoricalHMM`` input: integer symbols of shape (n_samples, 1) (or
        (n_samples,)), and ``lengths`` the lengths of the sequences one after another (default: one
        sequence).  No masks.  The batch form, one log-likelihood per row of an (n, L) array with
        masked positions summed out, is :meth:`log_likelihood`.
        """
        X = np.asarray(X)
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        if X.ndim != 1:
            raise ValueError(f"score: X must have shape (n_samples, 1) as in hmmlearn, got {X.shape}; "
                             "for a batch of sequences (n, L) use log_likelihood")
        lengths = [X.shape[0]] if lengths is None else [positive_int("lengths", int(n)) for n in lengths]
        if sum(lengths) != X.shape[0]:
            raise ValueError(f"score: lengths sum to {sum(lengths)}, but X holds {X.shape[0]} samples")
        X = self.check_tokens(X[None, :], allow_mask=False)[0]  # every symbol checked once, no masks
        starts = np.cumsum([0] + lengths[:-1])
        total = 0.0
        for n in sorted(set(lengths)):  # the sequences of each length scored as one batch
            batch = np.stack([X[s:s + n] for s, m in zip(starts, lengths) if m == n])
            total += float(self.log_likelihood(batch).sum())
        return total

    def sample(self, n_samples: int = 1, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        """hmmlearn's ``sample``: one sequence of ``n_samples`` symbols with its hidden states, as
        ``(X, Z)`` -- X int64 of shape (n_samples, 1), Z int64 of shape (n_samples,).

        ``random_state``: a seed or a ``numpy.random.Generator``.  For many sequences at once, use
        :meth:`sample_sequences`.
        """
        n = positive_int("n_samples", n_samples)
        check_sample_size(1, n)
        rng = as_rng(random_state)
        A, B = self.transmat_, self.emissionprob_
        cA, cB = np.cumsum(A, axis=1), np.cumsum(B, axis=1)
        cA, cB = cA / cA[:, -1:], cB / cB[:, -1:]  # last entry exactly 1: a draw u < 1 always lands in a row
        c0 = np.cumsum(self.startprob_)
        c0 = c0 / c0[-1]
        u = rng.random((n, 2))
        Z = np.empty(n, dtype=np.int64)
        X = np.empty(n, dtype=np.int64)
        z = int(np.searchsorted(c0, u[0, 0], side="right"))
        for t in range(n):
            if t:
                z = int(np.searchsorted(cA[z], u[t, 0], side="right"))
            Z[t] = z
            X[t] = int(np.searchsorted(cB[z], u[t, 1], side="right"))
        return X[:, None], Z

    def _check_work(self, what: str, X: np.ndarray, passes: int) -> None:
        """Refuse before a forward (or forward-backward) pass that would take more than the work limit."""
        n, L = X.shape
        p = self._kernel_params
        per_position = (int(p.indices.shape[0]) + 2 * self.n_states) if p.sparse else 2 * self.n_states**2
        check_work(f"{what} of {n} sequence(s) of length {L} under an HMM with {self.n_states} states",
                   passes * n * L * per_position, "pass fewer or shorter sequences at a time")

    def __call__(self, X) -> np.ndarray:
        """An HMM is its own oracle denoiser: ``hmm(X) == hmm.posterior_marginals(X)``."""
        return self.posterior_marginals(X)
