"""The oracle denoiser of the interval HMM in closed form (Theorem 4.4, Example C.7 of the paper).

Under q every pair (a, b) of an interval carries an independent fair bit that both ends
repeat.  Given the revealed tokens x_U, a masked position a therefore knows the bit it shares
with each revealed partner b (read off b's token) and nothing about the bits it shares with
masked partners: q(x_a | x_U) is uniform over the 2^f tokens that carry the known bits, f = the
number of masked partners.  If two revealed ends of a pair disagree, q(x_U) = 0 and, as
``posterior_marginals(..., off_support="uniform")`` does, every masked position of that sequence
gets the uniform law.  Revealed positions get the one-hot vector of their token.

This is the same function as the generic ``HMM.posterior_marginals`` on ``interval_hmm(l)``
(tested), at O(B L l |V|) cost instead of a forward-backward pass over the HMM's hidden states,
so policies that read the oracle's marginals at every step run at L in the thousands.
"""

from __future__ import annotations

import numpy as np

from ..languages.interval import MAX_INTERVAL_LENGTH, partners
from mdmt.runtime.validation import MASK, positive_int, token_array


class IntervalOracle:
    """q(x_i | x_U) of the interval HMM with interval length ``l`` (module docstring); the denoiser protocol."""

    def __init__(self, l: int):
        l = positive_int("interval length l", l, minimum=2)
        if l > MAX_INTERVAL_LENGTH:
            raise ValueError(f"interval length l={l} is too large (at most {MAX_INTERVAL_LENGTH})")
        self.l, self.V = l, 2 ** (l - 1)
        # shift[a, b]: position of the (a, b) pair bit inside a's token
        self.shift = np.zeros((l, l), dtype=np.int64)
        for a in range(l):
            for k, b in enumerate(partners(a, l)):
                self.shift[a, b] = l - 2 - k

    def __call__(self, X) -> np.ndarray:
        X = token_array(X, self.V, allow_mask=True)
        n, L = X.shape
        l, V = self.l, self.V
        if L % l:
            raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
        Y = X.reshape(n, L // l, l)
        rev = Y != MASK
        Yc = np.where(rev, Y, 0)
        tokens = np.arange(V)
        ok = np.ones(n, dtype=bool)
        P = np.ones((n, L // l, l, V))
        for a in range(l):
            for b in range(l):
                if a == b:
                    continue
                bit_b = (Yc[:, :, b] >> self.shift[b, a]) & 1  # the (a, b) bit as b carries it
                if a < b:
                    bit_a = (Yc[:, :, a] >> self.shift[a, b]) & 1
                    ok &= ~np.any(rev[:, :, a] & rev[:, :, b] & (bit_a != bit_b), axis=1)
                match = ((tokens >> self.shift[a, b]) & 1)[None, None, :] == bit_b[:, :, None]
                P[:, :, a, :] *= np.where(rev[:, :, b, None], match, 1.0)
        P /= P.sum(axis=-1, keepdims=True)
        P = P.reshape(n, L, V)
        P[~ok] = 1.0 / V
        r, c = np.nonzero(X != MASK)
        P[r, c, :] = 0.0
        P[r, c, X[r, c]] = 1.0
        return P

    def __repr__(self) -> str:
        return f"IntervalOracle(l={self.l})"
