"""Exact batched inference on an explicit law: an index per (position, token), intersected instead of scanned.

For every position i and token v the index holds the ids of the support sequences y with y_i = v, ascending
(``order[i, starts[i, v]:starts[i, v + 1]]``, one stable argsort per position).  A partially revealed x selects
the support sequences that agree with it on its revealed set U; their weights give q(x_U) and, by position and
token, the numerators of the oracle denoiser of Section 3.2 of the paper,

    q(x_i = v | x_U) = sum_{y in supp, y_U = x_U, y_i = v} w_y / sum_{y in supp, y_U = x_U} w_y.

The kernel walks only the shortest list among the revealed (position, token) pairs and checks the other revealed
positions of each candidate, so a query costs |shortest list| * L operations, not M * L.  Complete sequences are
looked up by a 64-bit hash of the whole row (sorted hashes, binary search, then a token-by-token comparison).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.parallel import run_ranges
from mdmt.runtime.validation import MASK

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


class ExplicitIndex:
    """The (position, token) index of a support (see the module docstring), and the row hashes."""

    def __init__(self, support: np.ndarray, n_symbols: int):
        M, L = support.shape
        dtype = np.int32 if M < 2**31 else np.int64
        self.order = np.empty((L, M), dtype=dtype)
        self.starts = np.empty((L, n_symbols + 1), dtype=np.int64)
        for i in range(L):
            col = support[:, i]
            o = np.argsort(col, kind="stable")
            self.order[i] = o
            self.starts[i] = np.searchsorted(col[o], np.arange(n_symbols + 1), side="left")
        h = row_hashes(support)
        self.hash_order = np.argsort(h, kind="stable")
        self.hashes = h[self.hash_order]

    @staticmethod
    def bytes(n_sequences: int, length: int, n_symbols: int) -> int:
        """Bytes of the index: the per-position row ids, the list offsets, the row hashes and their order."""
        M, L = int(n_sequences), int(length)
        return M * L * (4 if M < 2**31 else 8) + 8 * L * (int(n_symbols) + 1) + 16 * M

    def shortest(self, X: np.ndarray) -> np.ndarray:
        """For each row of X, the length of the shortest (position, token) list among its revealed positions
        (M when nothing is revealed): the candidates the kernel walks."""
        M = self.order.shape[1]
        n, L = X.shape
        out = np.full(n, M, dtype=np.int64)
        for i in range(L):
            v = X[:, i]
            rev = v != MASK
            if rev.any():
                lens = self.starts[i, v[rev] + 1] - self.starts[i, v[rev]]
                out[rev] = np.minimum(out[rev], lens)
        return out


_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)


def row_hashes(X: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of an int64 array (a multiply-xorshift mix of the tokens in order)."""
    h = np.full(X.shape[0], np.uint64(0x2545F4914F6CDD1D), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(X.shape[1]):
            h = (h ^ X[:, i].astype(np.uint64)) * _K1
            h ^= h >> np.uint64(31)
            h *= _K2
    return h


def lookup(index: ExplicitIndex, support: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The row id of each complete sequence of X in the support, -1 where it is not there (int64 (n,))."""
    h = row_hashes(X)
    lo = np.searchsorted(index.hashes, h, side="left")
    hi = np.searchsorted(index.hashes, h, side="right")
    out = np.full(X.shape[0], -1, dtype=np.int64)
    one = np.flatnonzero(hi - lo == 1)  # the usual case: one support row with this hash, compared token by token
    rows = index.hash_order[lo[one]].astype(np.int64)
    same = np.all(support[rows] == X[one], axis=1)
    out[one[same]] = rows[same]
    for r in np.flatnonzero(hi - lo > 1):  # a hash collision (two rows, one hash) is resolved by comparing tokens
        for k in range(lo[r], hi[r]):
            row = int(index.hash_order[k])
            if np.array_equal(support[row], X[r]):
                out[r] = row
                break
    return out


def filter_sums(X, support, weights, order, starts, marginals, mass, count) -> None:
    """For each row r of X: mass[r] = the summed weight of the support sequences agreeing with X[r] on its
    revealed positions, count[r] = their number, and (when ``marginals`` has n rows) marginals[r, i, v] += the
    weight of those with token v at position i.  Walks the shortest (position, token) list of each row; the rows
    are shared among mdmt's kernel threads (:func:`mdmt.runtime.parallel.run_ranges`)."""
    run_ranges(_filter_sums, X.shape[0], X, support, weights, order, starts, marginals, mass, count)


@nb.njit(cache=True, nogil=True)
def _filter_sums(lo, hi, X, support, weights, order, starts, marginals, mass, count):
    """:func:`filter_sums` on the rows lo..hi-1."""
    n, L = X.shape
    M = support.shape[0]
    want = marginals.shape[0] == n
    for r in range(lo, hi):
        best_i = -1
        best_len = M + 1
        for i in range(L):
            v = X[r, i]
            if v != MASK:
                ln = starts[i, v + 1] - starts[i, v]
                if ln < best_len:
                    best_len = ln
                    best_i = i
        if best_i == -1:
            lo = 0
            hi = M
        else:
            lo = starts[best_i, X[r, best_i]]
            hi = starts[best_i, X[r, best_i] + 1]
        total = 0.0
        k = 0
        for j in range(lo, hi):
            c = j if best_i == -1 else order[best_i, j]
            ok = True
            for i in range(L):
                v = X[r, i]
                if v != MASK and support[c, i] != v:
                    ok = False
                    break
            if not ok:
                continue
            w = weights[c]
            total += w
            k += 1
            if want:
                for i in range(L):
                    marginals[r, i, support[c, i]] += w
        mass[r] = total
        count[r] = k
