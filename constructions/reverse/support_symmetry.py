"""Symmetries of an explicit law's support: the token relabellings and position permutations that map the support
onto itself with equal weights, each verified exactly, and the orbits they generate
(:mod:`.support_exact`, "Symmetries").  The output law of a process that treats tokens alike (every process
of :mod:`.policies`) and, for a position permutation, positions alike (every one but fixed orders: ties are
broken uniformly) is constant on these orbits.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .policies import EntropySum, FixedOrder, Policy

POSITION_SYMMETRIC: tuple = ()  # filled below: the policies whose law commutes with position permutations

def _keys(X: np.ndarray, V: int) -> np.ndarray:
    """One int64 (or bytes) key per row, ordered like the lexicographic order of the rows."""
    L = X.shape[1]
    if V ** L < 2 ** 62:
        return X @ (V ** np.arange(L - 1, -1, -1, dtype=np.int64))
    return np.array([r.tobytes() for r in np.ascontiguousarray(X.astype(">i8"))], dtype=object)


_INT_WEIGHTS: dict = {}  # id(law) -> (weak reference, integer weights): one conversion per law


def integer_weights(lang) -> np.ndarray | None:
    """The exact weights times their common denominator (int64, or Python integers), or None for float weights."""
    if lang.exact_weights is None:
        return None
    got = _INT_WEIGHTS.get(id(lang))
    if got is not None and got[0]() is lang:
        return got[1]
    ew = lang.exact_weights
    if len(set(ew)) == 1:  # uniform: every weight 1
        W = np.ones(len(ew), dtype=np.int64)
    else:
        den = math.lcm(*{f.denominator for f in ew})
        ints = [f.numerator * (den // f.denominator) for f in ew]
        W = np.array(ints, dtype=np.int64 if max(ints) < 2 ** 62 else object)
    W.setflags(write=False)
    _INT_WEIGHTS.clear() if len(_INT_WEIGHTS) > 64 else None
    _INT_WEIGHTS[id(lang)] = (weakref.ref(lang), W)
    return W


def _image(lang, X2: np.ndarray, keys: np.ndarray, W) -> np.ndarray | None:
    """The support index of every row of X2 when X2 is the support permuted with equal weights, else None."""
    k2 = _keys(X2, lang.n_symbols)
    where = np.searchsorted(keys, k2)
    if np.any(where >= len(keys)) or np.any(keys[np.minimum(where, len(keys) - 1)] != k2):
        return None
    same = np.array_equal(W[where], W) if W is not None else np.array_equal(lang.weights_[where], lang.weights_)
    return where if same else None


def symmetry_generators(lang, positions: bool = True) -> list[tuple[str, np.ndarray]]:
    """The symmetries of the support found (module docstring), each ``(name, image)``: ``image[k]`` is the
    support index of the image of sequence k; every one is verified exactly (rows and weights)."""
    X, V, L = lang.support_, lang.n_symbols, lang.length
    keys = _keys(X, V)
    W = integer_weights(lang)
    gens = []
    present = np.unique(X)
    for a in range(len(present)):
        for b in range(a + 1, len(present)):
            va, vb = present[a], present[b]
            X2 = np.where(X == va, vb, np.where(X == vb, va, X))
            img = _image(lang, X2, keys, W)
            if img is not None:
                gens.append((f"tokens {va}<->{vb}", img))
    if positions:
        perms = []
        for i in range(L):
            for j in range(i + 1, L):
                p = np.arange(L)
                p[[i, j]] = p[[j, i]]
                perms.append((f"positions {i}<->{j}", p))
        n = math.isqrt(L)
        if n * n == L and n > 1:
            grid = np.arange(L).reshape(n, n)
            for r in range(n - 1):
                g = grid.copy()
                g[[r, r + 1]] = g[[r + 1, r]]
                perms.append((f"grid rows {r}<->{r + 1}", g.ravel()))
                g = grid.copy()
                g[:, [r, r + 1]] = g[:, [r + 1, r]]
                perms.append((f"grid columns {r}<->{r + 1}", g.ravel()))
            perms.append(("grid transpose", grid.T.ravel()))
        for name, p in perms:
            img = _image(lang, X[:, p], keys, W)
            if img is not None:
                gens.append((name, img))
    return gens


def orbits(M: int, generators) -> np.ndarray:
    """The orbit label of every support index (the smallest index of its orbit) under the generated group."""
    lab = np.arange(M)
    while True:
        old = lab
        for _, g in generators:
            lab = np.minimum(lab, lab[g])
            lab2 = np.full(M, M)
            np.minimum.at(lab2, g, lab)  # the image of k gets k's label too
            lab = np.minimum(lab, lab2)
        lab = lab[lab]
        if np.array_equal(lab, old):
            return lab


def position_symmetric(policy: Policy) -> bool:
    """Whether the policy's law commutes with permutations of the positions (ties are broken uniformly)."""
    return isinstance(policy, POSITION_SYMMETRIC) and not isinstance(policy, FixedOrder)



def _register():
    global POSITION_SYMMETRIC
    from .policies import IID, Balanced, RandomSizes, Sizes, Threshold, TopK

    POSITION_SYMMETRIC = (IID, Sizes, Balanced, RandomSizes, TopK, Threshold, EntropySum)


_register()
