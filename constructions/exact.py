"""Exact output law p_N of the N-step masked diffusion sampler and the proof-chain quantities (THEORY §2-4).

**Output law (Eq. 3).**  The factorised reverse process is a Markov chain on *partial
assignments* (U, x_U).  A state is a base-(V+1) integer whose digit i is x_i, or V when
position i is still masked (position 0 is the most significant digit); there are
(V+1)^L states.  At step j (rate r_j, see :mod:`constructions.schedules`) every masked
position independently stays masked with probability 1 - r_j or takes the value v with
probability r_j p(v | x_U): a product measure over the masked positions, whose
successors are enumerated depth-first with running products (numba).  The denoiser is
evaluated once per state (one batched call), steps with pi_j = 0 are skipped, and no
reveal order is ever enumerated: a step costs O((2V+1)^L).  For the oracle the
denoiser table comes from the joint table: q on V^L (``language.score``) extended to
every partial assignment by appending, along each axis, the sum over that axis, so
q_ext[s] = q(x_U) and q(x_i = v | x_U) = q_ext[s with digit i = v] / q_ext[s].

With ``support_only`` the chain is continued only from states with q(x_U) > 0 (a state
outside the support can never finish inside it); the mass it loses is exactly the SER
(Eq. 5).  From p_N: KL(q || p_N) in nats and bits per token (= the log2 TER gap, Eq. 4).

**Proof chain without enumerating assignments (C1, C2).**  With a_j = sum_{k<j} pi_k the
reveal steps are i.i.d., so for i not in U

    P(U_j = U, i in S_j) = a_j^|U| pi_j (1 - a_j)^(L-1-|U|),
    P(U_j = U, S_j = S)  = a_j^|U| pi_j^|S| (1 - a_j - pi_j)^(L-|U|-|S|),

and by linearity, with G(U, i) = E_q log p(X_i | X_U) and H(X_W) the joint entropies of
all 2^L marginals (from q_ext),

    E_tau sum_{i in S_j} E_q log p(X_i|X_{U_j})   = sum_U sum_{i notin U} P(U_j=U, i in S_j) G(U, i)
    E_tau sum_{i in S_j} H(X_i|X_{U_j})           = sum_u a_j^u pi_j (1-a_j)^(L-1-u) [(u+1) H_{u+1} - (L-u) H_u]
    E_tau H(X_{S_j}|X_{U_j})                      = sum_{u,s} a_j^u pi_j^s (1-a_j-pi_j)^(L-u-s)
                                                       [C(u+s, u) H_{u+s} - C(L-u, s) H_u]

where H_k = sum_{|W| = k} H(X_W).  Per step, E_q TC_j = (second) - (third), the learning
term is -(second) - (first), and the step's share of KL(q || p_tau) is -(third) - (first);
summed over j the third line telescopes to H(q).  So

    E_tau KL(q || p_tau) = -H(q) - sum_j (first)_j                                  (C1's right side)
                         = E_tau sum_j E_q TC_j + E_tau sum_j sum_{i in S_j} E_q KL(q(.|X_U) || p(.|X_U))   (C2)

For one fixed assignment tau, ``assignment_quantities`` computes KL(q || p_tau), every TC_j
and learning term directly from their definitions (for the C2 identity test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from .ngram import as_hmm
from .schedules import as_pi, expected_nfe, p_distinct, reveal_rates
from .validation import MASK, positive_int

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


def build_tables(language, L: int) -> Tables:
    """Enumerate q on V^L (exact scores) and extend it to all (V+1)^L partial assignments."""
    L = positive_int("L", L)
    V = language.n_symbols
    if (V + 1) ** L > MAX_STATES:
        raise ValueError(
            f"exact evaluation at L = {L} needs (V+1)^L = {V + 1}^{L} = {(V + 1) ** L} partial assignments; "
            f"at most {MAX_STATES} are supported (use the Monte Carlo sampler)"
        )
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


@nb.njit(cache=True, parallel=True)
def _step(f, digits, D, r, V, strides, live, nchunks):
    """One reverse step: push the mass of every live state through the product measure.

    The depth-first search assigns the masked positions of state s one by one; the
    partial successor after d choices is itself a state (the undecided positions still
    masked), so a subtree whose partial successor is not live is pruned.
    """
    S, L = digits.shape
    outs = np.zeros((nchunks, S))
    stay = 1.0 - r
    for c in nb.prange(nchunks):
        out = outs[c]
        pos = np.empty(L, dtype=np.int64)
        choice = np.empty(L + 1, dtype=np.int64)
        w = np.empty((L, V + 1))
        pp = np.empty(L + 1)
        cp = np.empty(L + 1, dtype=np.int64)
        lo = c * S // nchunks
        hi = (c + 1) * S // nchunks
        for s in range(lo, hi):
            mass = f[s]
            if mass == 0.0 or not live[s]:
                continue
            k = 0
            for i in range(L):
                if digits[s, i] == V:
                    pos[k] = i
                    for v in range(V):
                        w[k, v] = r * D[s, i, v]
                    w[k, V] = stay
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
                ch = choice[d]
                if ch > V:
                    d -= 1
                    continue
                wt = w[d, ch]
                if wt == 0.0:
                    continue
                t = cp[d] + (ch - V) * strides[pos[d]]
                if not live[t]:
                    continue  # q(x_U) = 0 here: no completion of it is in the support
                m = pp[d] * wt
                if d + 1 == k:
                    out[t] += m
                else:
                    pp[d + 1] = m
                    cp[d + 1] = t
                    d += 1
                    choice[d] = -1
    res = np.zeros(S)
    for c in range(nchunks):
        res += outs[c]
    return res


@dataclass
class ExactResult:
    """The exact output law p_N of the sampler on V^L and the metrics derived from it."""

    sequences: np.ndarray  # (V^L, L), lexicographic
    q: np.ndarray  # q on V^L
    p: np.ndarray  # p_N on V^L (with support_only, exact on supp q and 0 elsewhere)
    pi: np.ndarray
    support_only: bool

    @property
    def probs(self) -> np.ndarray:
        """p_N(x) for every x in ``sequences``."""
        return self.p

    @property
    def L(self) -> int:
        return int(self.sequences.shape[1])

    @property
    def support_mass(self) -> float:
        """sum_{x: q(x) > 0} p_N(x)."""
        return float(self.p[self.q > 0].sum())

    @property
    def ser(self) -> float:
        """SER(p_N) = 1 - sum_{x: q(x) > 0} p_N(x) (Eq. 5)."""
        return float(min(1.0, max(0.0, 1.0 - self.support_mass)))

    @property
    def kl_nats(self) -> float:
        """KL(q || p_N) in nats (inf if p_N misses part of the support)."""
        m = self.q > 0
        if np.any(self.p[m] <= 0):
            return math.inf
        return float(max(0.0, np.sum(self.q[m] * (np.log(self.q[m]) - np.log(self.p[m])))))

    @property
    def kl_bits_per_token(self) -> float:
        """log2 TER(p_N) - log2 TER(q) = KL(q || p_N) / (L ln 2) (Eq. 4)."""
        return self.kl_nats / (self.L * math.log(2))

    def prob(self, x) -> float:
        """p_N(x) of one sequence."""
        x = np.asarray(x, dtype=np.int64)
        V = int(round(len(self.q) ** (1.0 / self.L)))
        if x.shape != (self.L,) or x.min() < 0 or x.max() >= V:
            raise ValueError(f"{x.tolist()} is not a sequence of {self.L} tokens in 0..{V - 1}")
        return float(self.p[int(x @ (V ** np.arange(self.L - 1, -1, -1)))])


def _table_for(tables: Tables, denoiser, live) -> np.ndarray:
    return denoiser_table(tables, denoiser, states=np.flatnonzero(live) if denoiser is not None else None)


def exact_output_law(language, L: int, pi, denoiser=None, support_only: bool = True,
                     tables: Tables | None = None, table: np.ndarray | None = None) -> ExactResult:
    """p_N on V^L for the oracle (``denoiser=None``) or any denoiser, by the chain on partial assignments.

    ``pi`` is the reveal-probability vector (``reveal_probabilities(schedule, N)``).
    ``tables``/``table`` let callers reuse the joint table and the denoiser table.
    """
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    pi = as_pi(pi)
    live = tables.q_ext > 0 if support_only else np.ones(tables.n_states, dtype=bool)
    D = table if table is not None else _table_for(tables, denoiser, live)
    f = np.zeros(tables.n_states)
    f[-1] = 1.0  # the all-masked state (every digit V) is the last index
    for j, r in enumerate(reveal_rates(pi)):
        if pi[j] == 0.0:
            continue
        f = _step(f, tables.digits, D, float(r), tables.V, tables.strides, live, _CHUNKS)
    return ExactResult(tables.sequences, tables.q, f[tables.full_index], pi, support_only)


def exact_metrics(language, L: int, pi, denoiser=None) -> dict:
    """Exact KL(q || p_N) (nats, bits/token), SER, P_distinct, E[NFE] and the proof-chain expectations."""
    tables = build_tables(language, L)
    pi = as_pi(pi)
    D = _table_for(tables, denoiser, tables.q_ext > 0)
    res = exact_output_law(language, L, pi, tables=tables, table=D)
    chain = chain_quantities(language, L, pi, tables=tables, table=D)
    return {
        "kl_nats": res.kl_nats,
        "kl_bits_per_token": res.kl_bits_per_token,
        "ser": res.ser,
        "p_distinct": p_distinct(pi, L),
        "expected_nfe": expected_nfe(pi, L),
        **chain,
    }


# ----------------------------------------------------------------------------- proof chain
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


def _powers(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """x[:, None] ** k[None, :] with 0^0 = 1."""
    return np.where(k[None, :] == 0, 1.0, np.asarray(x, dtype=np.float64)[:, None] ** np.maximum(k, 0)[None, :])


def chain_quantities(language, L: int, pi, denoiser=None, tables: Tables | None = None,
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
    D = table if table is not None else _table_for(tables, denoiser, tables.q_ext > 0)
    G, Hc, HW = _log_pred_terms(tables, D)
    Hq = float(HW[-1])
    pc = _popcounts(L)
    u = np.arange(L + 1)
    # sums over subsets of a given size
    Hsum = np.bincount(pc, weights=HW, minlength=L + 1)
    with np.errstate(invalid="ignore"):
        Gsum = np.bincount(pc, weights=np.where(np.isnan(G), 0.0, G).sum(axis=1), minlength=L + 1)[:L]
    Hcsum = (u[:L] + 1) * Hsum[1:] - (L - u[:L]) * Hsum[:L]
    a = np.concatenate([[0.0], np.cumsum(pi)[:-1]])
    a = np.minimum(a, 1.0)
    k = np.arange(L)
    wsingle = _powers(a, k) * _powers(np.maximum(1.0 - a, 0.0), L - 1 - k) * pi[:, None]  # (N, L): size u of U
    with np.errstate(invalid="ignore"):
        first = np.where(wsingle > 0, wsingle * Gsum[None, :], 0.0).sum(axis=1)  # E sum_{i in S_j} log p
    second = (wsingle * Hcsum[None, :]).sum(axis=1)  # E sum_{i in S_j} H(X_i | X_U)
    # E H(X_{S_j} | X_{U_j}) = sum_{u,s} a^u pi^s (1-a-pi)^(L-u-s) [C(u+s,u) H_{u+s} - C(L-u,s) H_u]
    third = np.zeros(len(pi))
    rest = np.maximum(1.0 - a - pi, 0.0)
    for uu in range(L + 1):
        s = np.arange(0, L - uu + 1)
        A = np.array([math.comb(uu + ss, uu) for ss in s]) * Hsum[uu + s] - np.array([math.comb(L - uu, ss) for ss in s]) * Hsum[uu]
        w = _powers(a, np.full(1, uu))[:, 0:1] * _powers(pi, s) * _powers(rest, L - uu - s)
        third += (w * A[None, :]).sum(axis=1)
    tc = second - third
    learning = -second - first
    kl = -third - first
    out = {
        "entropy_nats": Hq,
        "expected_assignment_kl": float(-Hq - first.sum()),
        "expected_total_correlation": float(tc.sum()),
        "expected_learning_term": float(learning.sum()),
    }
    if per_step:
        out.update(tc_per_step=tc, learning_per_step=learning, kl_per_step=kl, step_entropy=third)
    return out


def assignment_quantities(language, tau, denoiser=None, tables: Tables | None = None,
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
    D = table if table is not None else _table_for(tables, denoiser, tables.q_ext > 0)
    V = tables.V
    HW = subset_entropies(tables)
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
        cond_sum, learn = 0.0, 0.0
        for i in S:
            with np.errstate(divide="ignore"):
                lp = np.log(D[state, i, X[:, i]])
            logp += lp
            h_i = HW[uB | int(bit[i])] - HW[uB]
            cond_sum += h_i
            learn += -h_i - float(np.sum(q * lp))  # E_q KL = -H(X_i|X_U) - E_q log p(X_i|X_U)
        h_joint = HW[uB | int(bit[S].sum())] - HW[uB]
        tc[int(j)] = float(cond_sum - h_joint)
        learning[int(j)] = float(learn)
    kl = float(np.sum(q * (np.log(q) - logp)))
    return {"kl_nats": kl, "total_correlation": tc, "learning": learning}


def learning_error(language, L: int, denoiser, tables: Tables | None = None, pi=None) -> dict:
    """Exact per-token learning error KL(q(.|x_U) || p(.|x_U)) of a denoiser (Assumption 4.1), small L.

    Every context x_U with q(x_U) > 0 and every masked position i is enumerated.
    ``max`` is the "for every x_U" form (what Theorems 4.3/4.4 need); ``mean`` the average
    over subsets U (uniformly), positions i not in U and x_U ~ q; with ``pi`` also
    ``schedule_mean`` = E_tau sum_j sum_{i in S_j} E_q KL / L, the average the reverse
    process actually meets (the learning term of C2 divided by L).  ``argmax`` is a
    context attaining the maximum (partial sequence, position).
    """
    tables = tables or build_tables(language, L)
    live = np.flatnonzero(tables.q_ext > 0)
    D = denoiser_table(tables, denoiser, states=live)
    Q = denoiser_table(tables, None)
    V = tables.V
    masked = tables.digits[live] == V
    Ql, Dl = Q[live], D[live]
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(Ql > 0, Ql * (np.log(np.where(Ql > 0, Ql, 1.0)) - np.log(Dl)), 0.0).sum(axis=2)
    kl = np.where(masked, np.maximum(kl, 0.0), -1.0)
    flat = int(np.argmax(kl))
    s, i = divmod(flat, L)
    eps_max = float(max(kl.max(), 0.0)) if kl.size else 0.0
    G, Hc, _ = _log_pred_terms(tables, D)
    per_pair = -Hc - G  # E_{x_U~q} KL at (U, i)
    vals = per_pair[~np.isnan(per_pair)]
    mean = float(max(0.0, vals.mean())) if np.all(np.isfinite(vals)) else math.inf
    out = {"max": eps_max, "mean": mean,
           "argmax": {"context": tables.partial_sequences(live[s:s + 1])[0].tolist(), "position": int(i)}}
    if pi is not None:
        chain = chain_quantities(language, L, pi, tables=tables, table=D)
        out["schedule_mean"] = chain["expected_learning_term"] / L
    return out
