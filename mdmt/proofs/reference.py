"""Brute-force references of the proof check: each quantity from its definition, by enumerating every reveal
assignment tau in [N]^L, sharing no recursion with mdmt's own algorithms, so that a test comparing the two
compares two independent code paths.  (The repository's tests use them too, through tests/reference.py.)"""

import itertools

import numpy as np

from mdmt.bounds.verification.brute_force import all_sequences


def assignments(N: int, L: int):
    """Every reveal assignment tau in [N]^L, as int arrays (steps numbered from 1)."""
    for tau in itertools.product(range(1, N + 1), repeat=L):
        yield np.array(tau)


def sampler_law_by_assignments(q: np.ndarray, X: np.ndarray, pi: np.ndarray, denoise):
    """p_N and E_tau KL(q || p_tau) by enumerating every reveal assignment tau in [N]^L.

    ``denoise(partial)`` returns the (L, V) table p(. | x_U) for one partial sequence (MASK = -1).
    p_tau(x) = prod_j prod_{i in S_j} p(x_i | x_{U_j}), straight from Eq. 3.
    """
    L = X.shape[1]
    cache = {}

    def den(partial):
        key = partial.tobytes()
        if key not in cache:
            cache[key] = denoise(partial)
        return cache[key]

    pN = np.zeros(len(X))
    ekl = 0.0
    m = q > 0
    for tau in assignments(len(pi), L):
        w = float(np.prod(pi[tau - 1]))
        if w == 0:
            continue
        pt = np.ones(len(X))
        for r, x in enumerate(X):
            for j in np.unique(tau):
                partial = np.where(tau < j, x, -1)
                D = den(partial)
                for i in np.flatnonzero(tau == j):
                    pt[r] *= D[i, x[i]]
        pN += w * pt
        with np.errstate(divide="ignore"):
            ekl += w * float(np.sum(q[m] * (np.log(q[m]) - np.log(pt[m]))))
    return pN, ekl


def dependencies_by_definition(n: int, tau: np.ndarray) -> np.ndarray:
    """D_j = |S_j| - #segments holding a position of S_j (Definitions B.4/B.5), by listing the segments.

    A separator is a maximal run of >= n-1 consecutive positions revealed before step j; cutting
    the sequence at every separator leaves the segments.
    """
    tau = np.asarray(tau)
    L, N = len(tau), int(tau.max())
    out = np.zeros(N, dtype=np.int64)
    for j in range(1, N + 1):
        revealed = tau < j
        runs = []  # maximal runs of revealed positions: (start, end)
        i = 0
        while i < L:
            if revealed[i]:
                k = i
                while k < L and revealed[k]:
                    k += 1
                runs.append((i, k))
                i = k
            else:
                i += 1
        cut = np.zeros(L, dtype=bool)
        for a, b in runs:
            if b - a >= max(n - 1, 1):
                cut[a:b] = True
        segment_id, seg, inside = np.full(L, -1), -1, False
        for i in range(L):
            if cut[i]:
                inside = False
                continue
            if not inside:
                seg += 1
                inside = True
            segment_id[i] = seg
        new = np.flatnonzero(tau == j)
        out[j - 1] = len(new) - len({int(segment_id[i]) for i in new})
    return out


def law_by_assignments(lang, L: int, pi, denoiser=None):
    """(q, p_N, E_tau KL(q || p_tau)) on every x in V^L: q from the language's scores, p_N and the expectation by
    enumerating every reveal assignment (:func:`sampler_law_by_assignments`), with the oracle denoiser
    (forward-backward) where ``denoiser`` is None."""
    from mdmt.constructions.reverse.denoisers import oracle_denoiser

    X = all_sequences(lang.n_symbols, L)
    with np.errstate(divide="ignore"):
        q = np.exp(lang.log_likelihood(X))
    denoise = denoiser if denoiser is not None else oracle_denoiser(lang)
    pN, ekl = sampler_law_by_assignments(q, X, np.asarray(pi), lambda partial: denoise(partial[None])[0])
    return q, pN, ekl
