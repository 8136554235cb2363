"""Information quantities of a language at length L: entropies, mutual information, TC and DTC.

For X = (X_1..X_L) ~ q (nats throughout):

* H(X), the marginal entropies H(X_i) and the conditional entropies H(X_i | X_-i);
* I(X_i; X_-i) = H(X_i) - H(X_i | X_-i) (Li & Cai's sum_i I(X_i; X_-i));
* total correlation TC = sum_i H(X_i) - H(X) and dual total correlation DTC = H(X) - sum_i H(X_i | X_-i)
  (Zhao & Cai's TC/K and DTC/K rates);
* the information profile f(u) = average of H(X_W) over the subsets W of size u (u = 0..L), with
  which the expected KL of every fixed-size schedule with uniformly random positions is exact
  (docs/atlas.md): sum_i I(X_i; X_-i) = L (f(1) - f(L) + f(L-1)), TC = L f(1) - f(L),
  DTC = f(L) - L (f(L) - f(L-1)).

Three ways, chosen by ``information_quantities(method="auto")``:

``exact`` (any HMM or n-gram, small L)
    q enumerated on V^L (exact scores) and marginalised along each axis.
``windowed`` (n-grams, any L)
    H(X) by the chain rule (``NGram.sequence_entropy``); H(X_i) from the propagated law of the
    context window; H(X_i | X_-i) = H(X_W) - H(X_{W minus i}) on the Markov blanket
    W = {i-n+1, ..., i+n-1} (clipped to the sequence), whose joint law is built from the context law
    at its first position and the transition table: O(L V^(2n-1)).
``exact`` on an explicit law (:class:`~mdmt.constructions.languages.explicit.ExplicitLanguage`, L its length)
    from the support, never V^L: H(X_W) is the entropy of the support grouped by its tokens on W
    (:mod:`~mdmt.constructions.reverse.information_explicit`); ``auto`` picks it.
``monte_carlo`` (any HMM or explicit law, any L)
    x ~ q; H(X) = E[-log q(X)] with the exact log-likelihood; H(X_i | X_-i) = E[-log q(X_i | X_-i)]
    with the exact leave-one-out conditional (one scaled forward-backward pass gives every
    q(x_i | x_-i)); H(X_i) exact (propagated hidden-state law).  TC, DTC and sum_i I are averages
    of per-sequence sums, reported with Student-t intervals.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mdmt.constructions.types import Language, Seed

from .confidence import mean_interval
from ..languages.explicit import ExplicitLanguage
from ..languages.ngram import NGram, as_hmm
from mdmt.runtime.validation import as_rng, positive_int
from .chain import subset_entropies
from .information_explicit import (entropies_explicit, information_profile_explicit, leave_one_out_explicit,
                                   marginal_entropies_explicit)
from .tables import Tables, log_q_on_grid

MAX_EXACT_SEQUENCES = 1 << 22  # V^L sequences enumerated by the exact method
AUTO_EXACT_SEQUENCES = 1 << 18
METHODS = ("auto", "exact", "windowed", "monte_carlo")


def _entropy(p: np.ndarray) -> float:
    p = np.asarray(p, dtype=np.float64).ravel()
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _summary(method: str, L: int, H: float, Hi: np.ndarray, Hc: np.ndarray) -> dict:
    I = Hi - Hc
    return {"method": method, "length": L, "entropy": H, "marginal_entropy": Hi, "conditional_entropy": Hc,
            "mutual_information": I, "sum_mutual_information": float(I.sum()),
            "total_correlation": float(Hi.sum() - H), "dual_total_correlation": float(H - Hc.sum())}


def _is_explicit(language) -> bool:
    return getattr(language, "kind", None) == "explicit"


def _check_explicit_length(language, L: int) -> None:
    if L != language.length:
        raise ValueError(f"L = {L}: this explicit law holds sequences of length {language.length} only")


def marginal_entropies(language, L: int) -> np.ndarray:
    """H(X_i) for i = 1..L, exactly, from the propagated hidden-state law pi A^(i-1) (any L), or from the support
    of an explicit law."""
    if _is_explicit(language):
        _check_explicit_length(language, L)
        return marginal_entropies_explicit(language)
    hmm = as_hmm(language)
    law = np.asarray(hmm.startprob_, dtype=np.float64)
    A = sp.csr_matrix(hmm.transmat_)
    out = np.empty(L)
    for i in range(L):
        out[i] = _entropy(law @ hmm.emissionprob_)
        law = A.T @ law
    return out


def information_exact(language, L: int) -> dict:
    """Every quantity by enumerating q on V^L (small L)."""
    L = positive_int("L", L)
    V = language.n_symbols
    if V ** L > MAX_EXACT_SEQUENCES:
        raise ValueError(f"exact information quantities at L = {L} enumerate V^L = {V}^{L} sequences; at most "
                         f"{MAX_EXACT_SEQUENCES} are supported (use method='windowed' for n-grams or 'monte_carlo')")
    grid = np.indices((V,) * L).reshape(L, -1).T.astype(np.int64)
    q = np.exp(log_q_on_grid(language, L, grid)).reshape((V,) * L)
    H = _entropy(q)
    Hi = np.array([_entropy(q.sum(axis=tuple(a for a in range(L) if a != i))) for i in range(L)])
    Hc = np.array([H - _entropy(q.sum(axis=i)) for i in range(L)])
    return _summary("exact", L, H, Hi, Hc)


def _context_laws(ng: NGram, L: int) -> list[np.ndarray]:
    """law of (x_a..x_{a+k-1}) as an array (V,)*k, a = 0..L-k (k = n - 1)."""
    V, k = ng.n_symbols, ng.n - 1
    T = ng.transition_.reshape((V,) * k + (V,))
    laws = [ng.initial_.reshape((V,) * k)]
    for _ in range(L - k):
        laws.append((laws[-1][..., None] * T).sum(axis=0))
    return laws


def information_ngram(ng: NGram, L: int) -> dict:
    """Every quantity of an n-gram, exactly, at any L, from its Markov structure (module docstring)."""
    L = positive_int("L", L)
    if not isinstance(ng, NGram):
        raise ValueError(f"the windowed method needs an n-gram, got {type(ng).__name__}")
    V, k = ng.n_symbols, ng.n - 1
    if L <= k:  # the whole sequence lies inside the initial law
        return {**information_exact(ng, L), "method": "windowed"}
    T = ng.transition_.reshape((V,) * k + (V,))
    laws = _context_laws(ng, L)
    H = ng.sequence_entropy(L)
    Hi = np.empty(L)
    Hc = np.empty(L)
    for i in range(L):
        a = min(i, L - k)
        Hi[i] = _entropy(laws[a].sum(axis=tuple(ax for ax in range(k) if ax != i - a)))
        a, b = max(0, i - k), min(L - 1, i + k)
        J = laws[a]
        for _ in range(a + k, b + 1):
            J = J[..., None] * T
        Hc[i] = _entropy(J) - _entropy(J.sum(axis=i - a))
    return _summary("windowed", L, H, Hi, Hc)


def leave_one_out_log_conditionals(language, X) -> np.ndarray:
    """log q(x_i | x_-i) for every position of every sequence of X (int (n, L), in the support): float (n, L).

    One scaled forward pass stores the predictive laws P(h_i | x_{<i}); a scaled backward pass gives
    P(x_{>i} | h_i); then q(x_i | x_-i) = sum_h pred_i(h) beta_i(h) B[h, x_i] / sum_h pred_i(h) beta_i(h).
    An explicit law gives log q(x) - log q(x_-i) from its support.
    """
    if _is_explicit(language):
        return leave_one_out_explicit(language, X)
    hmm = as_hmm(language)
    X = language.check_tokens(X, allow_mask=False)
    n, L = X.shape
    A = hmm.transmat_
    S = A.shape[0]
    dense = S < 64 or np.count_nonzero(A) > 0.25 * S * S
    At = A.T if dense else sp.csr_matrix(A.T)
    Am = A if dense else sp.csr_matrix(A)
    BT = hmm.emissionprob_.T  # (V, S)
    out = np.empty((n, L))
    for s in range(0, n, 256):
        x = X[s:s + 256]
        m = len(x)
        pred = np.empty((L, m, S))
        law = np.broadcast_to(hmm.startprob_, (m, S)).copy()
        for t in range(L):
            pred[t] = law
            a = law * BT[x[:, t]]
            z = a.sum(axis=1, keepdims=True)
            if np.any(z <= 0):
                raise ValueError(f"sequence {s + int(np.flatnonzero(z[:, 0] <= 0)[0])} is outside the support (q(x) = 0)")
            a /= z
            law = (At @ a.T).T if not dense else a @ A
        beta = np.ones((m, S))
        for t in range(L - 1, -1, -1):
            w = pred[t] * beta
            e = BT[x[:, t]]
            out[s:s + m, t] = np.log((w * e).sum(axis=1)) - np.log(w.sum(axis=1))
            if t > 0:
                nb_ = e * beta
                beta = (Am @ nb_.T).T if not dense else nb_ @ A.T
                beta /= beta.max(axis=1, keepdims=True)
    return out


def information_monte_carlo(language, L: int, num: int = 2000, seed=0, level: float = 0.95) -> dict:
    """Monte Carlo estimates with exact log-probabilities (module docstring); ``*_ci`` are Student-t intervals."""
    L = positive_int("L", L)
    num = positive_int("num", num, minimum=2)
    rng = as_rng(seed)
    x = language.sample_sequences(num, L, rng)
    nll = -language.log_likelihood(x)
    loo = leave_one_out_log_conditionals(language, x)
    Hi = marginal_entropies(language, L)
    H, Ha, Hb = mean_interval(nll, level)
    Hc = -loo.mean(axis=0)
    out = _summary("monte_carlo", L, H, Hi, Hc)
    _, da, db = mean_interval(nll + loo.sum(axis=1), level)
    _, ia, ib = mean_interval(Hi.sum() + loo.sum(axis=1), level)
    out.update(entropy_ci=[Ha, Hb], total_correlation_ci=[Hi.sum() - Hb, Hi.sum() - Ha],
               dual_total_correlation_ci=[da, db], sum_mutual_information_ci=[ia, ib], num=num, level=level)
    return out


def information_quantities(language: Language, L: int, method: str = "auto", num: int = 2000, seed: Seed = 0, level: float = 0.95) -> dict:
    """H(X), H(X_i), H(X_i | X_-i), I(X_i; X_-i), TC and DTC (module docstring for the methods).

    ``auto``: ``windowed`` for an n-gram, ``exact`` for an HMM with V^L <= 2^18 and for an explicit law (from its
    support, at its length L), else ``monte_carlo``.
    """
    L = positive_int("L", L)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if _is_explicit(language):
        _check_explicit_length(language, L)
        if method in ("auto", "exact"):
            return _summary("exact", L, *entropies_explicit(language))
    if method == "auto":
        if isinstance(language, NGram):
            method = "windowed"
        else:
            method = "exact" if language.n_symbols ** L <= AUTO_EXACT_SEQUENCES else "monte_carlo"
    if method == "exact":
        return information_exact(language, L)
    if method == "windowed":
        return information_ngram(language, L)
    return information_monte_carlo(language, L, num, seed, level)


def information_profile(tables: Tables | ExplicitLanguage) -> np.ndarray:
    """f(u) = average of H(X_W) over |W| = u, u = 0..L (nats), from the joint entropies of every subset: of the
    exact tables of an HMM or n-gram, or of an explicit law's support (O(M 2^L), refused beyond the work limit)."""
    if isinstance(tables, ExplicitLanguage):
        return information_profile_explicit(tables)
    HW = subset_entropies(tables)
    L = tables.L
    sizes = np.array([bin(w).count("1") for w in range(1 << L)])
    return np.array([HW[sizes == u].mean() for u in range(L + 1)])
