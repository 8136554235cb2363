"""Joint tables of a small language: q on V^L and on every partial assignment, and denoiser tables.

A *state* is a partial assignment (U, x_U) encoded as a base-(V+1) integer whose digit i is
x_i, or V when position i is still masked (position 0 is the most significant digit); there
are (V+1)^L states.  q is enumerated on V^L (the forward recursion over prefixes, or the
language's own scores for large tables; the support exactly in both) and extended to every partial
assignment by appending, along each axis, the sum over that axis, so q_ext[s] = q(x_U) and
the oracle q(x_i = v | x_U) = q_ext[s with digit i = v] / q_ext[s].  Denoisers that transform the
oracle (:mod:`.denoisers`) are applied to this oracle.  The exact output law (:mod:`.exact`), the
proof-chain quantities (:mod:`.chain`) and the exact learning error (:mod:`.learning`) are all
computed from these tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..languages.ngram import as_hmm, check_language
from mdmt.runtime.validation import MASK, positive_int

MAX_STATES = 1 << 23  # (V+1)^L partial assignments held in memory
_CHUNKS = 4  # fixed work split of a step (results do not depend on the number of threads)
PREFIX_TREE_MAX = 1 << 20  # q by the forward recursion over prefixes while V^L * (hidden states) is at most this


@dataclass
class Tables:
    """q on V^L and on every partial assignment of one language at one length."""

    V: int
    L: int
    sequences: np.ndarray  # (V^L, L) lexicographic
    q: np.ndarray  # (V^L,)
    q_ext: np.ndarray  # ((V+1)^L,) q(x_U) for every partial assignment
    digits: np.ndarray  # ((V+1)^L, L) int8 digits (V = masked)
    pattern: np.ndarray  # ((V+1)^L,) bitmask of revealed positions (bit L-1-i for position i)
    full_index: np.ndarray  # (V^L,) state index of each full sequence
    language: object = None  # the language q is the law of (its oracle is read off q_ext)

    @property
    def n_states(self) -> int:
        return self.q_ext.shape[0]

    @property
    def strides(self) -> np.ndarray:
        return (self.V + 1) ** np.arange(self.L - 1, -1, -1, dtype=np.int64)

    def partial_sequences(self, idx) -> np.ndarray:
        """The partial sequences of states ``idx`` with MASK at masked positions, int64 (m, L)."""
        d = self.digits[idx].astype(np.int64)
        d[d == self.V] = MASK
        return d

    def state_index(self, X) -> np.ndarray:
        """State index of partial sequences X (int (m, L), MASK = masked)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.int64))
        d = np.where(X == MASK, self.V, X)
        return d @ self.strides

    def stride(self, i: int) -> int:
        return (self.V + 1) ** (self.L - 1 - i)


def check_exact_size(V: int, L: int, language=None) -> None:
    """Refuse an exact evaluation with more than MAX_STATES partial assignments, before any allocation.

    The size (V+1)^L is compared through its bit length (L log2(V+1)), so a huge L never builds a
    huge integer; the message names the size, the limit and the alternatives: for the interval HMM
    (``language``, Theorem 4.4) the closed form of its oracle SER at any L (``oracle_ser``, ``mdmt curve
    ser``), for every language the Monte Carlo sampler.
    """
    bits = L * math.log2(V + 1)
    if bits > math.log2(MAX_STATES):
        size = f"{(V + 1) ** L}" if bits < 64 else f"about 10^{L * math.log10(V + 1):.0f}"
        instead = "use the Monte Carlo sampler, mdmt sample, or a smaller L"
        l = _interval_length(language)
        if l is not None and L % l == 0:
            instead = (f"the interval HMM's oracle SER has a closed form at any L: oracle_ser({l}, {L}, pi) "
                       f"(Theorem 4.4), mdmt curve ser -l {l} -L {L} for the linear schedule; else {instead}")
        raise ValueError(
            f"exact evaluation at L = {L} needs (V+1)^L = {V + 1}^{L} = {size} partial assignments; "
            f"at most {MAX_STATES} are supported ({instead})"
        )


def _interval_length(language) -> int | None:
    """l where ``language`` is the interval HMM of interval length l, else None."""
    if language is None:
        return None
    from ..languages.interval import interval_length_of

    return interval_length_of(language)


def prefix_log_likelihoods(hmm, L: int) -> np.ndarray:
    """log q(x) for every x in V^L (lexicographic order), -inf off the support: the scaled forward recursion
    (Section 4.1, q(x) = sum_h pi[h_1] B[h_1, x_1] prod_i A[h_{i-1}, h_i] B[h_i, x_i]) run once per prefix.

    Level t holds, for every prefix x_1..x_t, the normalised forward vector alpha_t(.) and log q(x_1..x_t);
    a child multiplies its parent's alpha by A and by B[:, x_{t+1}] and adds the log of the normaliser.
    Sequences sharing a prefix share its work: about V^L S^2 operations in all, against L V^L S^2 for
    scoring every sequence on its own.  A normaliser that is 0 on a sequence of the support (an
    underflow, not a zero of q; decided by :func:`_support_mask`) is an error.
    """
    pi, A, B = (np.asarray(a, dtype=np.float64) for a in (hmm.startprob_, hmm.transmat_, hmm.emissionprob_))
    S = B.shape[0]
    BT = B.T
    alpha = pi[None, :]  # the empty prefix: its "alpha A" is the start law
    ll = np.zeros(1)
    for t in range(L):
        e = (alpha if t == 0 else alpha @ A)[:, None, :] * BT[None, :, :]  # (K, V, S): child (prefix, x_{t+1})
        c = e.sum(axis=2)
        zero = c <= 0
        c[zero] = 1.0  # e is 0 there: the child's alpha stays 0
        alpha = (e / c[..., None]).reshape(-1, S)
        ll = (ll[:, None] + np.log(c)).reshape(-1)
        ll[zero.reshape(-1)] = -np.inf
    dead = np.isneginf(ll)
    if dead.any() and np.any(dead & _support_mask(pi, A, B, L)):
        raise ValueError("log-likelihood underflowed for a sequence in the support "
                         "(some per-position probability is below 1e-308)")
    return ll


def _support_mask(pi, A, B, L: int) -> np.ndarray:
    """q(x) > 0 for every x in V^L (lexicographic), by boolean reachability over the prefixes (no rounding)."""
    S = B.shape[0]
    emits, A_pos = B.T > 0, (A > 0).astype(np.float64)
    reach = (pi > 0)[None, :]
    for t in range(L):
        new = reach if t == 0 else (reach.astype(np.float64) @ A_pos) > 0  # counts of paths are exact
        reach = (new[:, None, :] & emits[None, :, :]).reshape(-1, S)
    return reach.any(axis=1)


def log_q_on_grid(language, L: int, grid: np.ndarray) -> np.ndarray:
    """log q on the lexicographic grid V^L: by prefixes while small, else the language's own scoring; an explicit
    law places its weights at its support's grid indices (-inf elsewhere)."""
    if getattr(language, "kind", None) == "explicit":
        if language.length != L:
            raise ValueError(f"L = {L}: this explicit law holds sequences of length {language.length} only")
        out = np.full(grid.shape[0], -np.inf)
        V = language.n_symbols
        out[language.support_ @ (V ** np.arange(L - 1, -1, -1, dtype=np.int64))] = np.log(language.weights_)
        return out
    hmm = as_hmm(language)
    if grid.shape[0] * hmm.n_states <= PREFIX_TREE_MAX:
        return prefix_log_likelihoods(hmm, L)
    return hmm.log_likelihood(grid)


def build_tables(language, L: int) -> Tables:
    """Enumerate q on V^L (exact support) and extend it to all (V+1)^L partial assignments."""
    L = positive_int("L", L)
    V = check_language(language).n_symbols
    check_exact_size(V, L)
    grid = np.indices((V,) * L).reshape(L, -1).T.astype(np.int64)
    q = np.exp(log_q_on_grid(language, L, grid))
    ext = q.reshape((V,) * L)
    for axis in range(L):  # append the marginal over position `axis` as digit V
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    q_ext = np.ascontiguousarray(ext.reshape(-1))
    digits = np.indices((V + 1,) * L, dtype=np.int8).reshape(L, -1).T.copy()
    weights = 1 << np.arange(L - 1, -1, -1)
    pattern = ((digits < V).astype(np.int64) * weights).sum(axis=1)
    full_index = grid @ ((V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64))
    return Tables(V, L, grid, q, q_ext, digits, pattern, full_index, language)


def denoiser_table(tables: Tables, denoiser=None, states=None) -> np.ndarray:
    """D[s, i, v] = p(v | x_U) for every state s (rows at revealed positions are unused).

    ``denoiser=None`` is the oracle q(v | x_U), read off the partial-assignment table;
    at states with q(x_U) = 0, where the oracle is undefined, it is uniform (the same
    convention as ``posterior_marginals(..., off_support="uniform")``).  Otherwise
    ``denoiser`` follows the denoiser protocol and is called on the states ``states``
    (default: all) in batches; its rows at masked positions must be probability vectors.
    """
    V, L = tables.V, tables.L
    S = tables.n_states
    D = np.full((S, L, V), 1.0 / V)
    if denoiser is None:
        shape = (V + 1,) * L
        ext = tables.q_ext.reshape(shape)
        index = np.arange(S).reshape(shape)
        for i in range(L):
            masked = np.take(ext, [V], axis=i)  # q(x_U) at the states with i masked
            child = np.take(ext, range(V), axis=i)  # q(x_U, x_i = v)
            with np.errstate(invalid="ignore", divide="ignore"):
                cond = np.where(masked > 0, child / np.where(masked > 0, masked, 1.0), 1.0 / V)
            cond = np.moveaxis(cond, i, -1)  # (..., V): v is the last axis, the other digits in order
            idx = np.take(index, V, axis=i)
            D[idx.reshape(-1), i, :] = cond.reshape(-1, V)
        return D
    idx = np.arange(S) if states is None else np.asarray(states, dtype=np.int64)
    rows_at = _evaluator(tables, denoiser)
    for s in range(0, len(idx), 8192):
        chunk = idx[s:s + 8192]
        out = np.asarray(rows_at(chunk), dtype=np.float64)
        if out.shape != (len(chunk), L, V):
            raise ValueError(f"denoiser returned shape {out.shape}, expected {(len(chunk), L, V)}")
        masked = tables.digits[chunk] == V
        rows = out[masked]
        bad = ~np.all(np.isfinite(rows), axis=1) | np.any(rows < 0, axis=1) | (np.abs(rows.sum(axis=1) - 1) > 1e-6)
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            seq, pos = np.argwhere(masked)[k]
            raise ValueError(
                f"denoiser output at masked position {pos} of {tables.partial_sequences(chunk[seq:seq + 1])[0].tolist()} "
                f"is not a probability vector: {rows[k].tolist()}"
            )
        D[chunk] = out
    return D


def _evaluator(tables: Tables, denoiser):
    """chunk of states -> the denoiser's rows there.  A transform of the oracle of the tables' own language
    (:class:`.denoisers._FromOracle`) is applied to the oracle read off the tables (the rows of
    ``denoiser_table(tables, None)``, one-hot at revealed positions as ``posterior_marginals`` gives them);
    any other denoiser is called on the partial sequences."""
    from .denoisers import _FromOracle

    if (isinstance(denoiser, _FromOracle) and type(denoiser).from_oracle is not _FromOracle.from_oracle
            and tables.language is not None and denoiser.language is tables.language):
        Q = denoiser_table(tables, None)
        eye = np.eye(tables.V)

        def rows_at(chunk):
            q = Q[chunk]
            d = tables.digits[chunk]
            revealed = d < tables.V
            q[revealed] = eye[d[revealed]]
            return denoiser.from_oracle(tables.partial_sequences(chunk), q)
        return rows_at
    return lambda chunk: denoiser(tables.partial_sequences(chunk))


def support_table(tables: Tables, denoiser) -> np.ndarray:
    """The denoiser table on the states with q(x_U) > 0 (all the exact evaluators need); oracle for None."""
    return denoiser_table(tables, denoiser, states=np.flatnonzero(tables.q_ext > 0) if denoiser is not None else None)
