"""Joint tables of a small language: q on V^L and on every partial assignment, and denoiser tables.

A *state* is a partial assignment (U, x_U) encoded as a base-(V+1) integer whose digit i is
x_i, or V when position i is still masked (position 0 is the most significant digit); there
are (V+1)^L states.  q is enumerated on V^L (exact scores) and extended to every partial
assignment by appending, along each axis, the sum over that axis, so q_ext[s] = q(x_U) and
the oracle q(x_i = v | x_U) = q_ext[s with digit i = v] / q_ext[s].  The exact output law
(:mod:`.exact`), the proof-chain quantities (:mod:`.chain`) and the exact learning error
(:mod:`.learning`) are all computed from these tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..languages.ngram import as_hmm
from ..validation import MASK, positive_int

MAX_STATES = 1 << 23  # (V+1)^L partial assignments held in memory
_CHUNKS = 4  # fixed work split of a step (results do not depend on the number of threads)


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


def check_exact_size(V: int, L: int) -> None:
    """Refuse an exact evaluation with more than MAX_STATES partial assignments, before any allocation.

    The size (V+1)^L is compared through its bit length (L log2(V+1)), so a huge L never builds a
    huge integer; the message names the size, the limit and the alternative.
    """
    bits = L * math.log2(V + 1)
    if bits > math.log2(MAX_STATES):
        size = f"{(V + 1) ** L}" if bits < 64 else f"about 10^{L * math.log10(V + 1):.0f}"
        raise ValueError(
            f"exact evaluation at L = {L} needs (V+1)^L = {V + 1}^{L} = {size} partial assignments; "
            f"at most {MAX_STATES} are supported (use the Monte Carlo sampler, mdmt sample, or a smaller L)"
        )


def build_tables(language, L: int) -> Tables:
    """Enumerate q on V^L (exact scores) and extend it to all (V+1)^L partial assignments."""
    L = positive_int("L", L)
    V = language.n_symbols
    check_exact_size(V, L)
    grid = np.indices((V,) * L).reshape(L, -1).T.astype(np.int64)
    q = np.exp(as_hmm(language).score(grid))
    ext = q.reshape((V,) * L)
    for axis in range(L):  # append the marginal over position `axis` as digit V
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    q_ext = np.ascontiguousarray(ext.reshape(-1))
    digits = np.indices((V + 1,) * L, dtype=np.int8).reshape(L, -1).T.copy()
    weights = 1 << np.arange(L - 1, -1, -1)
    pattern = ((digits < V).astype(np.int64) * weights).sum(axis=1)
    full_index = grid @ ((V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64))
    return Tables(V, L, grid, q, q_ext, digits, pattern, full_index)


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
    for s in range(0, len(idx), 8192):
        chunk = idx[s:s + 8192]
        out = np.asarray(denoiser(tables.partial_sequences(chunk)), dtype=np.float64)
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



def support_table(tables: Tables, denoiser) -> np.ndarray:
    """The denoiser table on the states with q(x_U) > 0 (all the exact evaluators need); oracle for None."""
    return denoiser_table(tables, denoiser, states=np.flatnonzero(tables.q_ext > 0) if denoiser is not None else None)
