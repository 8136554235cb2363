"""Exact output law p_N of the N-step masked diffusion sampler, and the proof-chain quantities (THEORY §2-4).

The factorised reverse process (Eq. 3) is a Markov chain on *partial assignments*
(U, x_U).  A state is a base-(V+1) integer whose digit i is x_i, or V when
position i is still masked (position 0 is the most significant digit).  At step
j every masked position independently stays masked with probability 1 - r_j or
takes the value v with probability r_j p(v | x_U): a product measure over the
masked positions, whose successors are enumerated depth-first with running
products.  The denoiser is evaluated once per state, so the cost is
O((2V+1)^L) per step and no reveal order is ever enumerated.

With ``support_only`` the chain is continued only from states with q(x_U) > 0
(a state outside the support can never finish inside it); the mass it loses is
exactly the SER (Eq. 5).

The proof-chain quantities need no assignment enumeration either.  With
a_j = sum_{k<j} pi_k, P(U_j = U, i in S_j) = a_j^|U| (1-a_j)^(L-1-|U|) pi_j for
i not in U, so by linearity

    E_tau KL(q || p_tau)       = -H(q) - sum_U sum_{i not in U} c(|U|) E_q log p(X_i | X_U)
    E_tau sum_j E_q TC_j       =  sum_U sum_{i not in U} c(|U|) H(X_i | X_U) - H(q)
    E_tau sum_j learning_j     =  sum_U sum_{i not in U} c(|U|) E_q KL(q(.|X_U) || p(.|X_U))

with c(k) = sum_j a_j^k (1-a_j)^(L-1-k) pi_j; the TC line uses that
sum_j E[H(X_{U_{j+1}}) - H(X_{U_j})] telescopes to H(q).  The joint entropies
H(X_W) of all 2^L marginals come from the table of q on every partial assignment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from .ngram import as_hmm
from .schedules import reveal_probabilities, reveal_rates
from .validation import MASK, positive_int

MAX_STATES = 1 << 23  # (V+1)^L partial assignments held in memory


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

    def partial_sequences(self, idx) -> np.ndarray:
        """The partial sequences of states ``idx`` with MASK at masked positions, int64 (m, L)."""
        d = self.digits[idx].astype(np.int64)
        d[d == self.V] = MASK
        return d

    def stride(self, i: int) -> int:
        return (self.V + 1) ** (self.L - 1 - i)


def build_tables(language, L: int) -> Tables:
    """Enumerate q on V^L (exact scores) and extend it to all (V+1)^L partial assignments."""
    L = positive_int("L", L)
    V = language.n_symbols
    if (V + 1) ** L > MAX_STATES:
        raise ValueError(f"exact evaluation needs (V+1)^L = {V + 1}^{L} partial assignments; at most {MAX_STATES} are supported")
    grid = np.indices((V,) * L).reshape(L, -1).T.astype(np.int64)
    logq = as_hmm(language).score(grid)
    q = np.exp(logq)
    ext = q.reshape((V,) * L)
    for axis in range(L):  # append the marginal over position `axis` as digit V
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    q_ext = np.ascontiguousarray(ext.reshape(-1))
    digits = np.indices((V + 1,) * L, dtype=np.int8).reshape(L, -1).T.copy()
    weights = 1 << np.arange(L - 1, -1, -1)
    pattern = ((digits < V).astype(np.int64) * weights).sum(axis=1)
    full_index = (grid * (V + 1) ** np.arange(L - 1, -1, -1)).sum(axis=1)
    return Tables(V, L, grid, q, q_ext, digits, pattern, full_index)


def denoiser_table(tables: Tables, denoiser=None, states=None) -> np.ndarray:
    """D[s, i, v] = p(v | x_U) for every state s (rows of revealed positions are unused).

    ``denoiser=None`` is the oracle q(v | x_U), read off the partial-assignment table;
    at states with q(x_U) = 0, where the oracle is undefined, it is uniform.
    Otherwise ``denoiser`` follows the denoiser protocol and is called on the
    states in ``states`` (default: all), in batches.
    """
    V, L = tables.V, tables.L
    S = tables.n_states
    D = np.full((S, L, V), 1.0 / V)
    if denoiser is None:
        shape = (V + 1,) * L
        ext = tables.q_ext.reshape(shape)
        for i in range(L):
            masked = np.take(ext, [V], axis=i)  # q(x_U) at states with i masked
            child = np.take(ext, range(V), axis=i)  # q(x_U, x_i = v)
            with np.errstate(invalid="ignore", divide="ignore"):
                cond = np.where(masked > 0, child / np.where(masked > 0, masked, 1.0), 1.0 / V)
            # cond has digit i in 0..V-1 standing for v; place it at the states with digit i = V
            cond = np.moveaxis(cond, i, -1)  # (..., V) over the other digits
            sel = [slice(None)] * L
            sel[i] = V
            idx = np.arange(S).reshape(shape)[tuple(sel)]
            D[idx.reshape(-1), i, :] = cond.reshape(-1, V)
        return D
    idx = np.arange(S) if states is None else np.asarray(states)
    for s in range(0, len(idx), 4096):
        chunk = idx[s:s + 4096]
        out = np.asarray(denoiser(tables.partial_sequences(chunk)), dtype=np.float64)
        if out.shape != (len(chunk), L, V):
            raise ValueError(f"denoiser returned shape {out.shape}, expected {(len(chunk), L, V)}")
        D[chunk] = out
    masked = tables.digits == V
    rows = D[masked]
    if np.any(~np.isfinite(rows)) or np.any(rows < 0) or np.any(np.abs(rows.sum(axis=1) - 1) > 1e-6):
        raise ValueError("denoiser output at a masked position is not a probability vector")
    return D


@nb.njit(cache=True)
def _step(f, digits, D, r, V, strides, live, out):
    """One reverse step: push the mass of every live state through the product measure."""
    S, L = digits.shape
    pos = np.empty(L, dtype=np.int64)
    choice = np.empty(L, dtype=np.int64)
    pp = np.empty(L + 1)
    cp = np.empty(L + 1, dtype=np.int64)
    stay = 1.0 - r
    for s in range(S):
        mass = f[s]
        if mass == 0.0 or not live[s]:
            continue
        k = 0
        for i in range(L):
            if digits[s, i] == V:
                pos[k] = i
                k += 1
        if k == 0:
            out[s] += mass
            continue
        pp[0] = mass
        cp[0] = s
        d = 0
        choice[0] = -1
        while d >= 0:
            choice[d] += 1
            c = choice[d]
            if c > V:
                d -= 1
                continue
            w = stay if c == V else r * D[s, pos[d], c]
            if w == 0.0:
                continue
            pp[d + 1] = pp[d] * w
            cp[d + 1] = cp[d] + (c - V) * strides[pos[d]]
            if d + 1 == k:
                out[cp[d + 1]] += pp[d + 1]
            else:
                d += 1
                choice[d] = -1


@dataclass
class ExactResult:
    """The exact output law of the sampler on V^L and the metrics derived from it."""

    sequences: np.ndarray  # (V^L, L)
    q: np.ndarray
    p: np.ndarray  # p_N on V^L (only its values on supp q are meaningful with support_only)
    pi: np.ndarray
    support_only: bool

    @property
    def ser(self) -> float:
        """SER(p_N) = 1 - sum_{x: q(x) > 0} p_N(x) (Eq. 5)."""
        return float(max(0.0, 1.0 - self.p[self.q > 0].sum()))

    @property
    def kl_nats(self) -> float:
        """KL(q || p_N) in nats (inf if p_N misses part of the support)."""
        m = self.q > 0
        if np.any(self.p[m] <= 0):
            return math.inf
        return float(np.sum(self.q[m] * (np.log(self.q[m]) - np.log(self.p[m]))))

    @property
    def kl_bits_per_token(self) -> float:
        """log2 TER(p_N) - log2 TER(q) = KL(q || p_N) / (L ln 2) (Eq. 4)."""
        return self.kl_nats / (self.sequences.shape[1] * math.log(2))


def exact_output_law(language, L: int, pi, denoiser=None, support_only: bool = True, tables: Tables | None = None) -> ExactResult:
    """p_N on V^L for the oracle (``denoiser=None``) or any denoiser, by DP over partial assignments."""
    tables = tables or build_tables(language, L)
    pi = reveal_probabilities(pi, len(np.atleast_1d(pi))) if not isinstance(pi, np.ndarray) else reveal_probabilities(pi, len(pi))
    live = tables.q_ext > 0 if support_only else np.ones(tables.n_states, dtype=bool)
    D = denoiser_table(tables, denoiser, states=np.flatnonzero(live) if denoiser is not None else None)
    V = tables.V
    strides = np.array([tables.stride(i) for i in range(tables.L)], dtype=np.int64)
    f = np.zeros(tables.n_states)
    f[-1] = 1.0  # the all-masked state (every digit V) is the last index
    for j, r in enumerate(reveal_rates(pi)):
        if pi[j] == 0.0:
            continue
        out = np.zeros_like(f)
        _step(f, tables.digits, D, float(r), V, strides, live, out)
        f = out
    return ExactResult(tables.sequences, tables.q, f[tables.full_index], pi, support_only)


def exact_metrics(language, L: int, pi, denoiser=None) -> dict:
    """Exact KL(q || p_N), the log2 TER gap and SER, with the proof-chain expectations (C1, C2)."""
    tables = build_tables(language, L)
    res = exact_output_law(language, L, pi, denoiser, tables=tables)
    chain = chain_quantities(language, L, res.pi, denoiser, tables=tables)
    return {"kl_nats": res.kl_nats, "kl_bits_per_token": res.kl_bits_per_token, "ser": res.ser, **chain}


# ----------------------------------------------------------------------------- proof chain
def subset_entropies(tables: Tables) -> np.ndarray:
    """H(X_W) in nats for every subset W of positions (index = bitmask, bit L-1-i for position i)."""
    q = tables.q_ext
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(q > 0, -q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    return np.bincount(tables.pattern, weights=h, minlength=1 << tables.L)


def _log_pred_terms(tables: Tables, D: np.ndarray):
    """G[U, i] = E_q log p(X_i | X_U) and H[U, i] = H(X_i | X_U) for i not in U (nan where i in U)."""
    V, L = tables.V, tables.L
    n_sub = 1 << L
    G = np.full((n_sub, L), np.nan)
    Hc = np.full((n_sub, L), np.nan)
    HW = subset_entropies(tables)
    q = tables.q_ext
    for i in range(L):
        bit = 1 << (L - 1 - i)
        states = np.flatnonzero(tables.digits[:, i] == V)
        child = states[:, None] + (np.arange(V)[None, :] - V) * tables.stride(i)
        qc = q[child]  # q(x_U, x_i = v)
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = np.log(D[states, i, :])
            term = np.where(qc > 0, qc * logp, 0.0).sum(axis=1)
        G[:, i] = np.bincount(tables.pattern[states], weights=term, minlength=n_sub)
        subsets = np.arange(n_sub)
        free = (subsets & bit) == 0
        Hc[free, i] = HW[subsets[free] | bit] - HW[subsets[free]]
        G[~free, i] = np.nan
    return G, Hc, HW


def _size_weights(pi: np.ndarray, L: int) -> np.ndarray:
    """c(k) = sum_j a_j^k (1 - a_j)^(L-1-k) pi_j, k = 0..L-1."""
    a = np.concatenate([[0.0], np.cumsum(pi)[:-1]])
    k = np.arange(L)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(k[None, :] == 0, 1.0, a[:, None] ** k[None, :]) * np.where(
            (L - 1 - k)[None, :] == 0, 1.0, (1 - a[:, None]) ** (L - 1 - k)[None, :]
        )
    return (term * pi[:, None]).sum(axis=0)


def chain_quantities(language, L: int, pi, denoiser=None, tables: Tables | None = None) -> dict:
    """E_tau KL(q||p_tau), E_tau sum_j E_q TC_j and E_tau sum_j learning_j, by linearity (module docstring)."""
    tables = tables or build_tables(language, L)
    pi = reveal_probabilities(np.asarray(pi, dtype=np.float64), len(pi))
    D = denoiser_table(tables, denoiser, states=np.flatnonzero(tables.q_ext > 0) if denoiser is not None else None)
    G, Hc, HW = _log_pred_terms(tables, D)
    Hq = HW[-1]
    sizes = np.array([bin(u).count("1") for u in range(1 << L)])
    c = _size_weights(pi, L)[np.minimum(sizes, L - 1)]
    c[sizes == L] = 0.0
    free = ~np.isnan(G)
    exp_logp = np.sum((c[:, None] * np.where(free, G, 0.0)))
    exp_cond_h = np.sum((c[:, None] * np.where(free, Hc, 0.0)))
    kl_assign = -Hq - exp_logp
    tc = exp_cond_h - Hq
    learning = -exp_cond_h - exp_logp
    return {
        "entropy_nats": float(Hq),
        "expected_assignment_kl": float(kl_assign),
        "expected_total_correlation": float(tc),
        "expected_learning_term": float(learning),
    }


def assignment_quantities(language, tau, denoiser=None, tables: Tables | None = None) -> dict:
    """For one reveal assignment tau (int (L,), steps 1..N): KL(q||p_tau), TC_j and learning_j per step.

    Computed directly from the definitions: p_tau(x) = prod_j prod_{i in S_j} p(x_i | x_{U_j})
    by enumerating x in the support, and TC_j = sum_{i in S_j} H(X_i|X_{U_j}) - H(X_{S_j}|X_{U_j})
    from joint entropies.  The C2 identity says kl = sum(tc) + sum(learning).
    """
    tau = np.asarray(tau, dtype=np.int64)
    L = tau.shape[0]
    tables = tables or build_tables(language, L)
    if tau.min() < 1:
        raise ValueError(f"reveal steps must be >= 1, got {tau.min()}")
    D = denoiser_table(tables, denoiser, states=np.flatnonzero(tables.q_ext > 0) if denoiser is not None else None)
    V = tables.V
    HW = subset_entropies(tables)
    steps = np.unique(tau)
    mask_of = lambda pos: int(sum(1 << (L - 1 - i) for i in pos))  # noqa: E731
    supp = tables.q > 0
    X = tables.sequences[supp]
    q = tables.q[supp]
    logp = np.zeros(len(X))
    strides = np.array([tables.stride(i) for i in range(L)])
    tc, learning = [], []
    for j in steps:
        U = np.flatnonzero(tau < j)
        S = np.flatnonzero(tau == j)
        digits = np.full((len(X), L), V)
        digits[:, U] = X[:, U]
        state = (digits * strides).sum(axis=1)
        uB = mask_of(U)
        cond_sum = 0.0
        for i in S:
            p_i = D[state, i, X[:, i]]
            with np.errstate(divide="ignore"):
                logp += np.log(p_i)
            h_i = HW[uB | (1 << (L - 1 - i))] - HW[uB]
            cond_sum += h_i
            with np.errstate(divide="ignore"):
                lp = np.log(p_i)
            # E_q KL(q(.|x_U)||p(.|x_U)) = -H(X_i|X_U) - E_q log p(X_i|X_U)
            learning.append((int(j), float(-h_i - np.sum(q * lp))))
        h_joint = HW[uB | mask_of(S)] - HW[uB]
        tc.append((int(j), float(cond_sum - h_joint)))
    kl = float(np.sum(q * (np.log(q) - logp)))
    per_step_learning = {}
    for j, v in learning:
        per_step_learning[j] = per_step_learning.get(j, 0.0) + v
    return {
        "kl_nats": kl,
        "total_correlation": dict(tc),
        "learning": per_step_learning,
    }


def learning_error(language, L: int, denoiser, tables: Tables | None = None) -> dict:
    """Per-token epsilon_learning of a denoiser: KL(q(.|x_U) || p(.|x_U)) over every context with q(x_U) > 0.

    ``max`` is the "for every x_U" form of Assumption 4.1 (what Theorems 4.3/4.4 need);
    ``mean`` averages over subsets U (uniformly), positions i not in U and x_U ~ q.
    """
    tables = tables or build_tables(language, L)
    live = np.flatnonzero(tables.q_ext > 0)
    D = denoiser_table(tables, denoiser, states=live)
    Q = denoiser_table(tables, None)
    V = tables.V
    masked = tables.digits[live] == V
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(Q[live] > 0, Q[live] * (np.log(Q[live]) - np.log(D[live])), 0.0).sum(axis=2)
    kl = np.where(masked, kl, 0.0)
    eps_max = float(kl.max()) if kl.size else 0.0
    G, Hc, _ = _log_pred_terms(tables, D)
    per_pair = -Hc - G  # E_{x_U~q} KL at (U, i)
    mean = max(0.0, float(np.nanmean(per_pair))) if np.isfinite(np.nanmax(per_pair)) else math.inf
    return {"max": eps_max, "mean": mean}
