"""Information quantities of an explicit law, exactly, from its support (no enumeration of V^L).

For q listed on its support (M sequences y with weights w_y), the law of X_W for a set of positions W is the
support grouped by its tokens on W: H(X_W) = -sum_g m_g log m_g with m_g the summed weight of the group g.
Hence, in nats,

* H(X) = -sum_y w_y log w_y; H(X_i) and H(X_{-i}) by grouping on {i} and on all positions but i, so that
  H(X_i | X_-i) = H(X) - H(X_{-i}); TC, DTC and sum_i I(X_i; X_-i) follow (as in
  :mod:`~mdmt.constructions.reverse.information`): O(M L^2) work;
* the information profile f(u) = average of H(X_W) over |W| = u (docs/atlas.md) needs H(X_W) for all 2^L
  subsets: each is obtained from its parent W minus {max W} by refining the parent's group labels with one more
  column, so the whole table costs O(2^L M) (a dense relabelling per subset, plus a fixed cost of a few numpy
  calls, counted as :data:`SUBSET_OVERHEAD` operations), refused beyond ``MDMT_MAX_WORK`` with the size named.

Subsets are indexed as in :func:`~mdmt.constructions.reverse.chain.subset_entropies`: bit L-1-i for position i.
"""

from __future__ import annotations

import numpy as np

from mdmt.runtime.resources import check_memory, check_work
from mdmt.runtime.validation import MASK

_DENSE = 1 << 24  # relabel through an array of M*V slots up to this size, by sorting beyond
SUBSET_OVERHEAD = 1000  # elementary operations a subset costs beside its M rows (a few numpy calls in Python)


def _entropy(mass: np.ndarray) -> float:
    p = mass[mass > 0]
    return float(-(p * np.log(p)).sum())


def _refine(labels: np.ndarray, n_labels: int, column: np.ndarray, V: int) -> tuple[np.ndarray, int]:
    """Group labels of the support on W + {i} from those on W (``labels`` in 0..n_labels-1) and column i."""
    key = labels * V + column
    if n_labels * V <= _DENSE:
        present = np.zeros(n_labels * V, dtype=np.int64)
        present[key] = 1
        dense = np.cumsum(present) - 1
        return dense[key], int(present.sum())
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.ravel(), int(uniq.size)


def _group_entropy(support: np.ndarray, w: np.ndarray, V: int, cols) -> float:
    labels, n = np.zeros(support.shape[0], dtype=np.int64), 1
    for i in cols:
        labels, n = _refine(labels, n, support[:, i], V)
    return _entropy(np.bincount(labels, weights=w, minlength=n))


def entropies_explicit(language) -> tuple[float, np.ndarray, np.ndarray]:
    """(H(X), H(X_i), H(X_i | X_-i)) of an explicit law at its length, exactly (nats); the information quantities
    (:func:`~mdmt.constructions.reverse.information.information_quantities`) follow from them."""
    X, w, V, L = language.support_, language.weights_, language.n_symbols, language.length
    M = X.shape[0]
    check_work(f"the information quantities of an explicit law of {M} sequences of length {L}", M * L * L,
               "use a smaller support")
    H = _entropy(w)
    Hi = np.array([_entropy(np.bincount(X[:, i], weights=w, minlength=V)) for i in range(L)])
    Hc = np.array([H - _group_entropy(X, w, V, [j for j in range(L) if j != i]) for i in range(L)])
    return H, Hi, np.maximum(Hc, 0.0)


def subset_entropies_explicit(language) -> np.ndarray:
    """H(X_W) in nats for every subset W of positions (index = bitmask, bit L-1-i for position i)."""
    X, w, V, L = language.support_, language.weights_, language.n_symbols, language.length
    M = X.shape[0]
    if L > 62:
        raise ValueError(f"the information profile of an explicit law of length L = {L} needs the entropies of "
                         f"2^{L} subsets of positions; at most L = 62 (use information_quantities, O(M L^2))")
    check_memory(f"the entropies of the 2^{L} subsets of positions", 8 * (1 << L), "use a shorter length")
    check_work(f"the information profile of an explicit law of {M} sequences x 2^{L} subsets of positions",
               (M + SUBSET_OVERHEAD) * (1 << L),
               "use information_quantities (H, TC, DTC, sum_MI: O(M L^2)) or a smaller support")
    HW = np.zeros(1 << L)

    def grow(labels: np.ndarray, n: int, mask: int, last: int) -> None:
        for i in range(last + 1, L):
            lab, k = _refine(labels, n, X[:, i], V)
            m = mask | (1 << (L - 1 - i))
            HW[m] = _entropy(np.bincount(lab, weights=w, minlength=k))
            if i < L - 1:
                grow(lab, k, m, i)

    grow(np.zeros(M, dtype=np.int64), 1, 0, -1)
    return HW


def information_profile_explicit(language) -> np.ndarray:
    """f(u) = average of H(X_W) over |W| = u, u = 0..L (nats), from the support (module docstring)."""
    HW = subset_entropies_explicit(language)
    L = language.length
    sizes = np.array([bin(m).count("1") for m in range(1 << L)])
    return np.array([HW[sizes == u].mean() for u in range(L + 1)])


def leave_one_out_explicit(language, X) -> np.ndarray:
    """log q(x_i | x_-i) = log q(x) - log q(x_-i) for every position of every sequence of X (in the support)."""
    X = language.check_tokens(X, allow_mask=False)
    full = language.log_likelihood(X)
    if np.any(np.isneginf(full)):
        raise ValueError(f"sequence {int(np.flatnonzero(np.isneginf(full))[0])} is outside the support (q(x) = 0)")
    out = np.empty(X.shape, dtype=np.float64)
    for i in range(X.shape[1]):
        Y = X.copy()
        Y[:, i] = MASK
        out[:, i] = full - language.log_likelihood(Y)
    return np.minimum(out, 0.0)


def marginal_entropies_explicit(language) -> np.ndarray:
    """H(X_i) for i = 1..L from the support."""
    X, w, V = language.support_, language.weights_, language.n_symbols
    return np.array([_entropy(np.bincount(X[:, i], weights=w, minlength=V)) for i in range(language.length)])
