"""The proof-chain quantities of Appendix B, exactly, on small instances (links C1-C2 of docs/theorems.md).

With a_j = sum_{k<j} pi_k the reveal steps are i.i.d., so for i not in U

    P(U_j = U, i in S_j) = a_j^|U| pi_j (1 - a_j)^(L-1-|U|),
    P(U_j = U, S_j = S)  = a_j^|U| pi_j^|S| (1 - a_j - pi_j)^(L-|U|-|S|),

and by linearity, with G(U, i) = E_q log p(X_i | X_U) and H(X_W) the joint entropies of
all 2^L marginals (from the partial-assignment table of :mod:`.tables`),

    E_tau sum_{i in S_j} E_q log p(X_i|X_{U_j})   = sum_U sum_{i notin U} P(U_j=U, i in S_j) G(U, i)
    E_tau sum_{i in S_j} H(X_i|X_{U_j})           = sum_u a_j^u pi_j (1-a_j)^(L-1-u) [(u+1) H_{u+1} - (L-u) H_u]
    E_tau H(X_{S_j}|X_{U_j})                      = sum_{u,s} a_j^u pi_j^s (1-a_j-pi_j)^(L-u-s)
                                                       [C(u+s, u) H_{u+s} - C(L-u, s) H_u]

where H_k = sum_{|W| = k} H(X_W).  Per step, E_q TC_j = (second) - (third) and the step's
share of KL(q || p_tau) is -(third) - (first); summed over j the third line telescopes to H(q).
The learning term is computed on its own, row by row, from its definition:

    E_tau sum_{i in S_j} E_q KL(q(.|X_{U_j}) || p(.|X_{U_j})) = sum_U sum_{i notin U} P(U_j=U, i in S_j) K(U, i),
    K(U, i) = sum_{x_U: q(x_U) > 0} q(x_U) sum_v q(v|x_U) log(q(v|x_U) / p(v|x_U))          (>= 0; 0 for the oracle)

so the two sides of

    E_tau KL(q || p_tau) = -H(q) - sum_j (first)_j                                  (C1's right side, Lemma B.2)
                         = E_tau sum_j E_q TC_j + E_tau sum_j sum_{i in S_j} E_q KL(q(.|X_U) || p(.|X_U))   (C2, Lemma B.3)

come from different formulas (log-predictions of the denoiser on one side; joint entropies and
row-wise KL divergences on the other), and a wrong term on either side shows.  The learning
term is checked to be >= 0, and it is exactly 0 for the oracle (the rows compared are the same
numbers).

For one fixed assignment tau, ``assignment_quantities`` computes KL(q || p_tau) from p_tau
sequence by sequence, and every TC_j and learning term from entropies and row-wise KL.
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.constructions.types import ArrayLike, Denoiser, Language, RevealProbabilities

from .schedules import as_pi, revealed_before
from .tables import Tables, build_tables, support_table


def subset_entropies(tables: Tables) -> np.ndarray:
    """H(X_W) in nats for every subset W of positions (index = bitmask, bit L-1-i for position i)."""
    q = tables.q_ext
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(q > 0, -q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    return np.bincount(tables.pattern, weights=h, minlength=1 << tables.L)


def _popcounts(L: int) -> np.ndarray:
    m = np.arange(1 << L)
    c = np.zeros(1 << L, dtype=np.int64)
    for b in range(L):
        c += (m >> b) & 1
    return c


def _log_pred_terms(tables: Tables, D: np.ndarray):
    """G[U, i] = E_q log p(X_i | X_U) and Hc[U, i] = H(X_i | X_U) for i not in U (nan where i in U)."""
    V, L = tables.V, tables.L
    n_sub = 1 << L
    G = np.full((n_sub, L), np.nan)
    Hc = np.full((n_sub, L), np.nan)
    HW = subset_entropies(tables)
    q = tables.q_ext
    subsets = np.arange(n_sub)
    for i in range(L):
        bit = 1 << (L - 1 - i)
        states = np.flatnonzero(tables.digits[:, i] == V)
        child = states[:, None] + (np.arange(V)[None, :] - V) * tables.stride(i)
        qc = q[child]  # q(x_U, x_i = v)
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(qc > 0, qc * np.log(D[states, i, :]), 0.0).sum(axis=1)
        free = (subsets & bit) == 0
        G[free, i] = np.bincount(tables.pattern[states], weights=term, minlength=n_sub)[free]
        Hc[free, i] = HW[subsets[free] | bit] - HW[subsets[free]]
    return G, Hc, HW


def _learning_terms(tables: Tables, D: np.ndarray) -> np.ndarray:
    """K[U, i] = sum_{x_U: q(x_U)>0} q(x_U) KL(q(.|x_U) || D(.|x_U) at i), row by row, for i not in U (nan where i in U)."""
    V, L = tables.V, tables.L
    n_sub = 1 << L
    K = np.full((n_sub, L), np.nan)
    q = tables.q_ext
    subsets = np.arange(n_sub)
    for i in range(L):
        bit = 1 << (L - 1 - i)
        states = np.flatnonzero((tables.digits[:, i] == V) & (q > 0))
        child = states[:, None] + (np.arange(V)[None, :] - V) * tables.stride(i)
        qc = q[child]  # q(x_U, x_i = v)
        post = qc / q[states][:, None]  # q(v | x_U): the same division as the oracle's table
        with np.errstate(divide="ignore", invalid="ignore"):
            rows = np.where(qc > 0, qc * (np.log(np.where(qc > 0, post, 1.0)) - np.log(D[states, i, :])), 0.0).sum(axis=1)
        free = (subsets & bit) == 0
        K[free, i] = np.bincount(tables.pattern[states], weights=rows, minlength=n_sub)[free]
    return K


def _check_learning(learning: float, oracle: bool) -> None:
    """The learning term is a KL divergence: >= 0, and exactly 0 for the oracle (an inconsistency is a bug)."""
    if oracle and learning != 0.0:
        raise RuntimeError(f"internal check failed: the oracle's learning term is {learning!r}, not 0")
    if not learning >= -1e-12:
        raise RuntimeError(f"internal check failed: a learning term (a KL divergence) is {learning!r} < 0")


def _powers(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """x[:, None] ** k[None, :] with 0^0 = 1."""
    return np.where(k[None, :] == 0, 1.0, np.asarray(x, dtype=np.float64)[:, None] ** np.maximum(k, 0)[None, :])


def chain_quantities(language: Language, L: int, pi: RevealProbabilities, denoiser: Denoiser | None = None, tables: Tables | None = None,
                     table: np.ndarray | None = None, per_step: bool = False) -> dict:
    """E_tau KL(q||p_tau), E_tau sum_j E_q TC_j and E_tau sum_j learning_j, by linearity (module docstring).

    Keys: ``entropy_nats`` H(q); ``expected_assignment_kl``; ``expected_total_correlation``;
    ``expected_learning_term``; with ``per_step`` also the arrays (N,) ``tc_per_step``,
    ``learning_per_step``, ``kl_per_step`` (the step's share of E_tau KL(q||p_tau)) and
    ``step_entropy`` (E H(X_{S_j} | X_{U_j}), which sums to H(q)).
    """
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    pi = as_pi(pi)
    D = table if table is not None else support_table(tables, denoiser)
    G, Hc, HW = _log_pred_terms(tables, D)
    K = _learning_terms(tables, D)
    Hq = float(HW[-1])
    pc = _popcounts(L)
    u = np.arange(L + 1)
    # sums over subsets of a given size
    Hsum = np.bincount(pc, weights=HW, minlength=L + 1)
    with np.errstate(invalid="ignore"):
        Gsum = np.bincount(pc, weights=np.where(np.isnan(G), 0.0, G).sum(axis=1), minlength=L + 1)[:L]
        Ksum = np.bincount(pc, weights=np.where(np.isnan(K), 0.0, K).sum(axis=1), minlength=L + 1)[:L]
    Hcsum = (u[:L] + 1) * Hsum[1:] - (L - u[:L]) * Hsum[:L]
    a = revealed_before(pi)
    k = np.arange(L)
    wsingle = _powers(a, k) * _powers(np.maximum(1.0 - a, 0.0), L - 1 - k) * pi[:, None]  # (N, L): size u of U
    with np.errstate(invalid="ignore"):
        first = np.where(wsingle > 0, wsingle * Gsum[None, :], 0.0).sum(axis=1)  # E sum_{i in S_j} log p
    second = (wsingle * Hcsum[None, :]).sum(axis=1)  # E sum_{i in S_j} H(X_i | X_U)
    with np.errstate(invalid="ignore"):
        learning = np.where(wsingle > 0, wsingle * Ksum[None, :], 0.0).sum(axis=1)  # E sum_{i in S_j} KL rows
    # E H(X_{S_j} | X_{U_j}) = sum_{u,s} a^u pi^s (1-a-pi)^(L-u-s) [C(u+s,u) H_{u+s} - C(L-u,s) H_u]
    third = np.zeros(len(pi))
    rest = np.maximum(1.0 - a - pi, 0.0)
    for uu in range(L + 1):
        s = np.arange(0, L - uu + 1)
        A = np.array([math.comb(uu + ss, uu) for ss in s]) * Hsum[uu + s] - np.array([math.comb(L - uu, ss) for ss in s]) * Hsum[uu]
        w = _powers(a, np.full(1, uu))[:, 0:1] * _powers(pi, s) * _powers(rest, L - uu - s)
        third += (w * A[None, :]).sum(axis=1)
    tc = second - third
    kl = -third - first
    _check_learning(float(learning.sum()), oracle=denoiser is None and table is None)
    out = {
        "entropy_nats": Hq,
        "expected_assignment_kl": float(-Hq - first.sum()),
        "expected_total_correlation": float(tc.sum()),
        "expected_learning_term": float(learning.sum()),
    }
    if per_step:
        out.update(tc_per_step=tc, learning_per_step=learning, kl_per_step=kl, step_entropy=third)
    return out


def assignment_quantities(language: Language, tau: ArrayLike, denoiser: Denoiser | None = None, tables: Tables | None = None,
                          table: np.ndarray | None = None) -> dict:
    """For one reveal assignment tau (int (L,), steps >= 1): KL(q||p_tau), TC_j and learning_j per step.

    Computed directly from the definitions: p_tau(x) = prod_j prod_{i in S_j} p(x_i | x_{U_j})
    on every x in the support, TC_j = sum_{i in S_j} H(X_i|X_{U_j}) - H(X_{S_j}|X_{U_j}) from
    joint entropies, learning_j = sum_{i in S_j} E_q KL(q(.|X_{U_j}) || p(.|X_{U_j})).  The C2
    identity says kl_nats = sum(total_correlation) + sum(learning).  Dicts are keyed by the
    steps that reveal something.
    """
    tau = np.asarray(tau)
    if tau.ndim != 1 or tau.size == 0 or not np.issubdtype(tau.dtype, np.integer):
        raise ValueError(f"a reveal assignment tau must be a non-empty vector of integer steps, got {tau!r}")
    tau = tau.astype(np.int64)
    L = tau.shape[0]
    if tau.min() < 1:
        k = int(np.argmin(tau))
        raise ValueError(f"reveal step of position {k} is {int(tau[k])}; steps are numbered from 1")
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    D = table if table is not None else support_table(tables, denoiser)
    V = tables.V
    HW = subset_entropies(tables)
    K = _learning_terms(tables, D)
    bit = 1 << (L - 1 - np.arange(L))
    supp = tables.q > 0
    X = tables.sequences[supp]
    q = tables.q[supp]
    logp = np.zeros(len(X))
    strides = tables.strides
    tc, learning = {}, {}
    for j in np.unique(tau):
        U = tau < j
        S = np.flatnonzero(tau == j)
        state = np.where(U[None, :], X, V) @ strides
        uB = int(bit[U].sum())
        cond_sum = 0.0
        for i in S:
            with np.errstate(divide="ignore"):
                logp += np.log(D[state, i, X[:, i]])
            cond_sum += HW[uB | int(bit[i])] - HW[uB]
        h_joint = HW[uB | int(bit[S].sum())] - HW[uB]
        tc[int(j)] = float(cond_sum - h_joint)
        learning[int(j)] = float(K[uB, S].sum())
        _check_learning(learning[int(j)], oracle=denoiser is None and table is None)
    kl = float(np.sum(q * (np.log(q) - logp)))
    return {"kl_nats": kl, "total_correlation": tc, "learning": learning}


