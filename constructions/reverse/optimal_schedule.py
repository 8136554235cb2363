"""The optimal fixed-size schedule: the step sizes s_1..s_N minimising the expected KL, by dynamic programming.

For the oracle and a schedule of fixed step sizes whose positions are uniformly random (the
``Sizes`` policies, Li & Cai's process), the expected KL is exact in the *information profile*
f(u) = average of H(X_W) over the subsets W of size u (docs/atlas.md):

    E_tau KL(q || p_tau) = sum_j c(u_j, s_j),   c(u, s) = s (f(u+1) - f(u)) - (f(u+s) - f(u)),

u_j = s_1 + ... + s_{j-1} (the expected total correlation of the step, Lemma B.3's per-step
term; tau = the positions drawn).  This is the quantity the paper's chain bounds (Lemma B.2:
KL(q || p) <= E_tau KL(q || p_tau)) and the atlas's ``assignment_kl``.  Minimising it over the
compositions of L into N positive parts is a shortest path over (j, u): O(N L^2)
(:func:`optimal_sizes`); the same decomposition of the expected KL along the information profile
is used by Lavenant & Zanella (arXiv 2510.25544) to derive optimal unmasking schedules.

The same step cost gives the paper's i.i.d. process at any L (:func:`iid_profile_kl`): given the
number u revealed before step j, the step reveals Binomial(L - u, r_j) uniformly random positions,
so E KL = sum_j sum_u P(U_j = u) sum_s Bin(s; L - u, r_j) c(u, s) -- e.g. Theorem 4.2's schedule
(Lemma B.12, ``warmstart``).

The profile (:func:`profile`) is exact from the joint tables at small L (``exact``), exact at any
L for a first-order chain (``markov``: H(X_W) = H(X_{w_1}) + sum_k H(X_{w_{k+1}} | X_{w_k}), and the
number of u-subsets in which a < b are consecutive is C(a + L - 1 - b, u - 2)), and a Monte Carlo
estimate for any HMM (``monte_carlo``: one uniformly random order and x ~ q per sample,
g(u) = -log q(x_W) on its first u positions with the exact masked likelihood; every schedule's
KL is a linear functional of f, so its per-sample values give a Student-t interval).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

from mdmt.runtime.validation import as_rng, positive_int

from ..languages.ngram import NGram
from .confidence import mean_interval

PROFILE_METHODS = ("auto", "exact", "markov", "monte_carlo")
EXACT_PROFILE_MAX_L = 12  # 2^L subset entropies from (V+1)^L partial assignments
MAX_DP_WORK = 1 << 31  # N L^2 / 2 step costs


def step_cost(profile, u: int, s: int) -> float:
    """c(u, s) = s (f(u+1) - f(u)) - (f(u+s) - f(u)): E TC of a uniform s-subset after a uniform u-subset."""
    f = np.asarray(profile, dtype=np.float64)
    return float(s * (f[u + 1] - f[u]) - (f[u + s] - f[u]))


def sizes_kl(profile, sizes) -> float:
    """E_tau KL of the oracle with fixed step sizes ``sizes`` (uniform positions): sum_j c(u_j, s_j)."""
    f = np.asarray(profile, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.int64)
    if int(s.sum()) != len(f) - 1:
        raise ValueError(f"step sizes {s.tolist()} sum to {int(s.sum())}, not L = {len(f) - 1}")
    u = np.concatenate([[0], np.cumsum(s)[:-1]])
    return float(np.sum(s * (f[u + 1] - f[u]) - (f[u + s] - f[u])))


def optimal_sizes(profile: np.ndarray, N: int) -> tuple[np.ndarray, float]:
    """The sizes s_1..s_N (positive, summing to L) minimising :func:`sizes_kl`, and the minimum (module docstring).

    Dynamic programming over (steps taken j, positions revealed u): g(j, u) = min_s g(j-1, u-s) + c(u-s, s),
    O(N L^2).  Among equal minima (to 1e-12) the one with the largest last step is kept, deterministically.
    """
    f = np.asarray(profile, dtype=np.float64)
    L = len(f) - 1
    L = positive_int("L", L)
    N = positive_int("number of steps N", N)
    if N > L:
        raise ValueError(f"N = {N} steps > L = {L}: a fixed-size schedule reveals at least one position per step")
    if N * L * L // 2 > MAX_DP_WORK:
        raise ValueError(f"the optimal schedule at L = {L}, N = {N} needs about {N * L * L // 2} step costs; at most "
                         f"{MAX_DP_WORK} are supported")
    d = np.diff(f)
    # C[u, s] = c(u, s) for u + s <= L, s >= 1
    u = np.arange(L + 1)[:, None]
    s = np.arange(L + 1)[None, :]
    ok = (s >= 1) & (u + s <= L)
    us = np.where(ok, u + s, 0)
    C = np.where(ok, s * np.append(d, 0.0)[u] - (f[us] - f[u]), np.inf)
    g = np.full(L + 1, np.inf)
    g[0] = 0.0
    back = np.zeros((N + 1, L + 1), dtype=np.int64)
    for j in range(1, N + 1):
        new = np.full(L + 1, np.inf)
        for v in range(j, L - (N - j) + 1):
            prev = np.arange(j - 1, v)  # u before the step
            tot = g[prev] + C[prev, v - prev]
            best = tot.min()
            k = np.flatnonzero(tot <= best + 1e-12)[0]  # smallest u before: the largest last step
            new[v] = best
            back[j, v] = prev[k]
        g = new
    sizes = np.empty(N, dtype=np.int64)
    v = L
    for j in range(N, 0, -1):
        sizes[j - 1] = v - back[j, v]
        v = back[j, v]
    return sizes, float(g[L])


def kl_by_steps(profile, N_max: int, stop_at: float | None = None) -> np.ndarray:
    """min over compositions of L into j parts of :func:`sizes_kl`, for j = 1..N_max (the optimal KL against N).

    Non-increasing in j for a concave profile (splitting a step never costs more, Han's inequality); the
    smallest N reaching a target is the first j at or below it.  O(N_max L^2); with ``stop_at`` the values
    end at the first j whose optimum is at most ``stop_at``.
    """
    f = np.asarray(profile, dtype=np.float64)
    L = positive_int("L", len(f) - 1)
    N_max = min(positive_int("N_max", N_max), L)
    d = np.append(np.diff(f), 0.0)
    g = np.full(L + 1, np.inf)
    g[0] = 0.0
    out = np.empty(N_max)
    for j in range(1, N_max + 1):
        new = np.full(L + 1, np.inf)
        for v in range(j, L + 1):
            prev = np.arange(j - 1, v)
            new[v] = np.min(g[prev] + (v - prev) * d[prev] - (f[v] - f[prev]))
        g = new
        out[j - 1] = g[L]
        if stop_at is not None and g[L] <= stop_at:
            return out[:j]
    return out


def compositions(L: int, N: int):
    """Every composition of L into N positive parts (C(L-1, N-1) of them), as tuples."""
    for cuts in itertools.combinations(range(1, L), N - 1):
        b = (0,) + cuts + (L,)
        yield tuple(b[i + 1] - b[i] for i in range(N))


def _binomial_pmf(s: np.ndarray, n: int, r: float) -> np.ndarray:
    """Bin(s; n, r) for s = 0..n (0 log 0 = 0 at r = 0 or 1)."""
    return np.exp(gammaln(n + 1) - gammaln(s + 1) - gammaln(n - s + 1) + xlogy(s, r) + xlog1py(n - s, -r))


def iid_profile_kl(profile, pi) -> float:
    """E_tau KL of the paper's i.i.d. process with reveal probabilities pi (module docstring), any L."""
    from .schedules import as_pi, reveal_rates

    f = np.asarray(profile, dtype=np.float64)
    L = len(f) - 1
    rates = reveal_rates(as_pi(pi))
    d = np.diff(f)
    law = np.zeros(L + 1)
    law[0] = 1.0
    total = 0.0
    for r in rates:
        new = np.zeros(L + 1)
        for u in np.flatnonzero(law > 0):
            s = np.arange(L - u + 1)
            w = _binomial_pmf(s, L - u, min(max(float(r), 0.0), 1.0))
            c = s * (d[u] if u < L else 0.0) - (f[u + s] - f[u])
            total += law[u] * float(np.dot(w, c))
            new[u + s] += law[u] * w
        law = new
    return float(total)


# ----------------------------------------------------------------------------- the information profile

def _markov_profile(ng: NGram, L: int) -> np.ndarray:
    """f(u), u = 0..L, of a first-order chain, exactly (module docstring): O(L^2 V^2)."""
    V = ng.n_symbols
    T = np.asarray(ng.transition_, dtype=np.float64).reshape(V, V)
    p = np.empty((L, V))
    p[0] = np.asarray(ng.initial_, dtype=np.float64).reshape(V)
    for i in range(1, L):
        p[i] = p[i - 1] @ T

    def ent(x, axis):
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0).sum(axis=axis)

    Hm = ent(p, 1)  # H(X_a)
    Hc = np.zeros((L, L))  # Hc[a, b] = H(X_b | X_a), a < b
    Td = np.eye(V)
    for dist in range(1, L):
        Td = Td @ T
        J = p[: L - dist, :, None] * Td[None]
        a = np.arange(L - dist)
        Hc[a, a + dist] = ent(J.reshape(L - dist, -1), 1) - Hm[: L - dist]
    f = np.zeros(L + 1)
    a_idx = np.arange(L)
    A, B = np.meshgrid(a_idx, a_idx, indexing="ij")
    pair = A < B
    gap = (A + L - 1 - B)[pair]
    hc = Hc[pair]
    for u in range(1, L + 1):
        lc = gammaln(L + 1) - gammaln(u + 1) - gammaln(L - u + 1)  # log C(L, u)
        first = L - 1 - a_idx  # C(L-1-a, u-1): a is the first of W
        m1 = first >= u - 1
        w1 = np.exp(gammaln(first[m1] + 1) - gammaln(u) - gammaln(first[m1] - u + 2) - lc)
        val = float(np.dot(w1, Hm[m1]))
        if u >= 2:
            m2 = gap >= u - 2
            w2 = np.exp(gammaln(gap[m2] + 1) - gammaln(u - 1) - gammaln(gap[m2] - u + 3) - lc)
            val += float(np.dot(w2, hc[m2]))
        f[u] = val
    return f


def _monte_carlo_samples(language, L: int, num: int, seed) -> np.ndarray:
    """g_n(u) = -log q(x_n on the first u positions of a uniformly random order), (num, L + 1) (module docstring)."""
    from mdmt.runtime.validation import MASK

    rng = as_rng(seed)
    x = language.sample_sequences(num, L, rng)
    order = np.argsort(rng.random((num, L)), axis=1)
    g = np.zeros((num, L + 1))
    X = np.full((num, L), MASK, dtype=np.int64)
    rows = np.arange(num)
    for u in range(1, L + 1):
        X[rows, order[:, u - 1]] = x[rows, order[:, u - 1]]
        g[:, u] = -np.asarray(language.log_likelihood(X), dtype=np.float64)
    return g


def profile(language, L: int, method: str = "auto", num: int = 2000, seed=0) -> dict:
    """The information profile f(u), u = 0..L (nats), of ``language`` at length L (module docstring).

    Returns ``{"method", "profile"}`` and, for ``monte_carlo``, ``samples`` (num, L + 1): the per-sample
    values whose mean is the profile (a schedule's KL interval is taken over them).  ``auto``: ``exact`` for
    L <= 12 when the joint tables fit, ``markov`` for a first-order n-gram, otherwise ``monte_carlo``.
    """
    L = positive_int("L", L)
    if method not in PROFILE_METHODS:
        raise ValueError(f"profile method must be one of {', '.join(PROFILE_METHODS)}, got {method!r}")
    markov_ok = isinstance(language, NGram) and language.n == 2
    if method == "auto":
        small = L <= EXACT_PROFILE_MAX_L and (language.n_symbols + 1) ** L <= (1 << 22)
        method = "exact" if small else ("markov" if markov_ok else "monte_carlo")
    if method == "exact":
        from .information import information_profile
        from .tables import build_tables

        if L > EXACT_PROFILE_MAX_L:
            raise ValueError(f"the exact information profile needs 2^L subset entropies; at most L = "
                             f"{EXACT_PROFILE_MAX_L} is supported (use markov for a bigram or monte_carlo)")
        return {"method": "exact", "profile": information_profile(build_tables(language, L))}
    if method == "markov":
        if not markov_ok:
            raise ValueError("the markov profile needs a first-order chain (an n-gram with n = 2)")
        return {"method": "markov", "profile": _markov_profile(language, L)}
    num = positive_int("num", num, minimum=2)
    g = _monte_carlo_samples(language, L, num, seed)
    return {"method": "monte_carlo", "profile": g.mean(axis=0), "samples": g}


def schedule_kl(prof: dict, sizes, level: float = 0.95) -> tuple[float, list | None]:
    """(E KL, interval) of fixed sizes under a :func:`profile` result; the interval is None for exact profiles."""
    kl = sizes_kl(prof["profile"], sizes)
    if "samples" not in prof:
        return kl, None
    vals = np.array([sizes_kl(g, sizes) for g in prof["samples"]])
    _, a, b = mean_interval(vals, level)
    return kl, [a, b]
