"""ReMDM's remasking sampler with the oracle denoiser (SPEC ``remdm:SCHEDULE[:ETA]``): exact law and Monte Carlo.

ReMDM (Wang et al., "Remasking discrete diffusion models with inference-time scaling", arXiv
2503.00307) generalises the reverse step from time t to s < t of a masked diffusion with schedule
alpha (alpha_1 = 0, alpha_0 = 1) by a remasking probability sigma_t: every position independently

* revealed at t (z_t = x): stays w.p. 1 - sigma_t, is masked again w.p. sigma_t;
* masked at t: is revealed w.p. (alpha_s - (1 - sigma_t) alpha_t) / (1 - alpha_t), with a token drawn
  from the denoiser x_theta(z_t) (here the oracle q(x_i | x_U) of the current partial assignment);
  stays masked otherwise.

These are probabilities exactly when 0 <= sigma_t <= sigma_max(t) = min(1, (1 - alpha_s) / alpha_t),
ReMDM's constraint; sigma_t = 0 is the paper's i.i.d. process (Section 3.2) with the same grid.
mdmt's grid is uniform, t_k = k / N (N steps), with alpha_t = 1 - t, and the schedules are ReMDM's:

``cap[:ETA]``      sigma_t = min(ETA, sigma_max(t))                        (ReMDM-cap; default ETA 0.008)
``rescale[:ETA]``  sigma_t = ETA sigma_max(t), ETA in [0, 1]               (ReMDM-rescale; default 0.015)
``loop[:ETA]``     alpha rises linearly from 0 to alpha_on = 0.9 while t goes from 1 to t_on = 0.55, stays at
                   alpha_on until t_off = 0.05 with sigma_t = min(ETA, sigma_max) -- revealing at rate
                   sigma alpha / (1 - alpha) and remasking at rate sigma, a corrector at a fixed noise
                   level -- and rises linearly to 1 at t = 0, without remasking (ReMDM-loop; default ETA 0.02;
                   t_on, t_off, alpha_on are the defaults of ReMDM's released scripts).
``conf[:ETA]``     ReMDM-conf: a decoded token is remasked with probability ETA sigma_max(t) times a softmax
                   weight of minus the probability it was decoded with (default ETA 1); the state carries
                   those probabilities, so its exact law is a chain on (partial assignment, confidences):
                   :mod:`.remdm_conf`.

**Network calls.**  Which positions are revealed at a step does not read the network (the
probabilities above depend on t only), so a step needs a call exactly when it reveals at least
one position: NFE = #{steps revealing something}, every such call counted (remasked positions are
revealed again by later calls).

**The exact law** (:func:`remdm_law`) is a Markov chain on partial assignments ((V+1)^L states),
started at the all-masked state: at each step, for every state with mass, every way of revealing
its masked positions is enumerated depth-first (numba) into an intermediate table that tells a
token revealed before the step from one revealed at it ((2V+1)^L entries), then the remasking of
the former, a product over positions, is applied axis by axis -- sum_s (V+1)^(masked in s) =
(2V+1)^L successors per step instead of (V+1)^L per state.  The oracle is continued by the uniform
law off the support (``denoiser_table``), since remasking can bring an off-support state back.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.validation import MASK, positive_int

from .process_base import LawProcess

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

SCHEDULES = {"cap": 0.008, "rescale": 0.015, "loop": 0.02}  # ReMDM's scripts' default eta per schedule
LOOP_T_ON, LOOP_T_OFF, LOOP_ALPHA_ON = 0.55, 0.05, 0.9
MAX_EXACT_ENTRIES = 1 << 22  # (2V+1)^L intermediate entries of the exact chain
SIGMA_TOL = 1e-12


def _loop_alpha(t: np.ndarray) -> np.ndarray:
    t = np.asarray(t, dtype=np.float64)
    up = LOOP_ALPHA_ON * (1.0 - t) / (1.0 - LOOP_T_ON)
    down = LOOP_ALPHA_ON + (1.0 - LOOP_ALPHA_ON) * (LOOP_T_OFF - t) / LOOP_T_OFF
    return np.where(t >= LOOP_T_ON, up, np.where(t > LOOP_T_OFF, LOOP_ALPHA_ON, down))


def remdm_steps(kind: str, eta: float, N: int) -> tuple[np.ndarray, np.ndarray]:
    """(reveal probability of a masked position, remasking probability sigma) of each of the N steps, in order."""
    N = positive_int("number of steps N", N)
    t = np.arange(N, -1, -1) / N  # 1 = t_N > ... > t_0 = 0
    alpha = 1.0 - t if kind != "loop" else _loop_alpha(t)
    a_t, a_s = alpha[:-1], alpha[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        smax = np.where(a_t > 0, np.minimum(1.0, (1.0 - a_s) / np.where(a_t > 0, a_t, 1.0)), 1.0)
    if kind == "cap":
        sigma = np.minimum(eta, smax)
    elif kind == "rescale":
        sigma = eta * smax
    elif kind == "loop":
        sigma = np.where(np.abs(a_s - a_t) < 1e-15, np.minimum(eta, smax), 0.0)
    else:
        raise ValueError(f"ReMDM schedule {kind!r} is not one of {', '.join(SCHEDULES)}")
    return reveal_probability(a_t, a_s, sigma), sigma


def reveal_probability(a_t, a_s, sigma) -> np.ndarray:
    """(alpha_s - (1 - sigma) alpha_t) / (1 - alpha_t), after checking ReMDM's bound sigma <= sigma_max (module docstring)."""
    a_t, a_s, sigma = (np.asarray(v, dtype=np.float64) for v in (a_t, a_s, sigma))
    with np.errstate(divide="ignore", invalid="ignore"):
        smax = np.where(a_t > 0, np.minimum(1.0, (1.0 - a_s) / np.where(a_t > 0, a_t, 1.0)), 1.0)
    bad = np.flatnonzero((sigma > smax + SIGMA_TOL) | (sigma < 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"ReMDM step {k + 1}: sigma_t = {sigma[k]:.6g} is outside [0, sigma_max] = "
                         f"[0, min(1, (1 - alpha_s)/alpha_t)] = [0, {smax[k]:.6g}]")
    return np.where(a_t < 1, (a_s - (1.0 - sigma) * a_t) / np.where(a_t < 1, 1.0 - a_t, 1.0), 0.0)


@nb.njit(cache=True)
def _reveal_step(f, digits, D, pu, V):
    """Every way of revealing the masked positions of every state: the intermediate table (base 2V+1; digit v < V a
    token revealed before, V masked, V+1+v a token revealed now) and the mass of the states revealing something."""
    S, L = digits.shape
    W = 2 * V + 1
    g = np.zeros(W ** L)
    ostr = np.empty(L, dtype=np.int64)
    acc = 1
    for i in range(L - 1, -1, -1):
        ostr[i] = acc
        acc *= W
    pos = np.empty(L, dtype=np.int64)
    choice = np.empty(L + 1, dtype=np.int64)
    idx = np.empty(L + 1, dtype=np.int64)
    pr = np.empty(L + 1)
    nfe = 0.0
    for s in range(S):
        mass = f[s]
        if mass == 0.0:
            continue
        base = 0
        m = 0
        for i in range(L):
            dg = digits[s, i]
            base += dg * ostr[i]
            if dg == V:
                pos[m] = i
                m += 1
        if m == 0:
            g[base] += mass
            continue
        nfe += mass * (1.0 - (1.0 - pu) ** m)
        d = 0
        choice[0] = -1
        idx[0] = base
        pr[0] = mass
        while d >= 0:
            choice[d] += 1
            c = choice[d]
            if c > V:
                d -= 1
                continue
            p = pos[d]
            if c == 0:
                w = pr[d] * (1.0 - pu)
                t = idx[d]
            else:
                w = pr[d] * pu * D[s, p, c - 1]
                t = idx[d] + (c) * ostr[p]  # digit V -> V + c = V + 1 + (c - 1)
            if w == 0.0:
                continue
            if d + 1 == m:
                g[t] += w
            else:
                d += 1
                choice[d] = -1
                idx[d] = t
                pr[d] = w
    return g, nfe


def _remask(g: np.ndarray, V: int, L: int, sigma: float) -> np.ndarray:
    """Apply the remasking of the tokens revealed before the step, position by position (module docstring)."""
    W = 2 * V + 1
    M = np.zeros((W, V + 1))
    for v in range(V):
        M[v, v] = 1.0 - sigma
        M[v, V] = sigma
        M[V + 1 + v, v] = 1.0
    M[V, V] = 1.0
    T = g.reshape((W,) * L)
    for i in range(L):
        T = np.moveaxis(np.tensordot(T, M, axes=([i], [0])), -1, i)
    return T.reshape(-1)


def remdm_law(language, L: int, kind: str, eta: float, N: int, tables=None):
    """(p on V^L in the tables' order, E[NFE], tables): the exact chain (module docstring)."""
    from .tables import build_tables, denoiser_table

    L = positive_int("L", L)
    pu, sigma = remdm_steps(kind, eta, N)
    tables = tables or build_tables(language, L)
    V = tables.V
    if L * math.log2(2 * V + 1) > math.log2(MAX_EXACT_ENTRIES):
        raise ValueError(f"the exact ReMDM law at L = {L}, V = {V} needs (2V+1)^L = {2 * V + 1}^{L} entries; at most "
                         f"{MAX_EXACT_ENTRIES} are supported (use the Monte Carlo sampler)")
    D = denoiser_table(tables, None)
    digits = tables.digits.astype(np.int64)
    f = np.zeros(tables.n_states)
    f[-1] = 1.0
    nfe = 0.0
    for j in range(len(pu)):
        g, a = _reveal_step(f, digits, D, float(pu[j]), V)
        nfe += a
        f = _remask(g, V, L, float(sigma[j]))
    masked = np.any(tables.digits == V, axis=1)
    if np.any(f[masked] > 1e-12):  # the last step reveals every position (alpha_0 = 1, sigma = 0)
        raise AssertionError("ReMDM chain left masked positions")
    return f[tables.full_index], float(nfe), tables


def sample_remdm(language, L: int, kind: str, eta: float, N: int, num: int, rng, batch: int = 512):
    """(samples (num, L), NFE (num,)) of ReMDM with the oracle at any L (module docstring)."""
    L = positive_int("L", L)
    pu, sigma = remdm_steps(kind, eta, N)
    X = np.full((num, L), MASK, dtype=np.int64)
    nfe = np.zeros(num, dtype=np.int64)
    for j in range(len(pu)):
        masked = X == MASK
        reveal = masked & (rng.random((num, L)) < pu[j])
        remask = ~masked & (rng.random((num, L)) < sigma[j])
        u = rng.random((num, L))
        rows = np.flatnonzero(reveal.any(axis=1))
        nfe[rows] += 1
        oracle_reveal(language, X, reveal, u, rows, batch)
        X[remask] = MASK
    return X, nfe


def oracle_reveal(language, X, reveal, u, rows, batch: int, psi=None) -> None:
    """Reveal the positions ``reveal`` of the rows ``rows`` of X in place, each token drawn from the oracle marginal
    of its row (continued by the uniform law off the support) by the inverse CDF of its uniform in ``u``, ``batch``
    rows per call of the oracle; with ``psi``, also the probability each drawn token had (ReMDM-conf's confidence)."""
    from .sampler import draw_tokens

    for s in range(0, len(rows), batch):
        r = rows[s:s + batch]
        P = np.asarray(language.posterior_marginals(X[r], off_support="uniform"), dtype=np.float64)
        rr, cc = np.nonzero(reveal[r])
        tok = draw_tokens(P[rr, cc], u[r[rr], cc])
        X[r[rr], cc] = tok
        if psi is not None:
            psi[r[rr], cc] = P[rr, cc, tok]


class ReMDM(LawProcess):
    """ReMDM's remasking sampler (SPEC ``remdm:SCHEDULE[:ETA]``, N steps; module docstring)."""

    def __init__(self, kind: str, N: int, eta: float | None = None):
        if kind not in SCHEDULES:
            raise ValueError(f"ReMDM schedule {kind!r} is not one of {', '.join(SCHEDULES)}")
        self.kind, self.N = kind, positive_int("number of steps N", N)
        e = SCHEDULES[kind] if eta is None else eta
        if not (isinstance(e, (int, float)) and math.isfinite(e) and 0 <= e <= 1):
            raise ValueError(f"ReMDM eta must be a number in [0, 1], got {eta!r}")
        self.eta = float(e)
        self.spec = f"remdm:{kind}:{self.eta:g}"
        remdm_steps(kind, self.eta, self.N)  # the bound is checked now

    method = "remdm"
    oracle_only = "runs with the oracle denoiser only (mdmt's ReMDM)"

    def _law(self, language, L, tables):
        return remdm_law(language, L, self.kind, self.eta, self.N, tables)

    def _draw(self, language, L, num, rng):
        return sample_remdm(language, L, self.kind, self.eta, self.N, num, rng)

    def expected_nfe(self, L):
        return None


def parse_remdm(text: str, N: int | None) -> tuple[str, int, float | None]:
    """(SCHEDULE, N, ETA or None for the default) of ``remdm:SCHEDULE[:ETA]`` (module docstring), SCHEDULE one of
    cap, rescale, loop (:class:`ReMDM`) and conf (:class:`.remdm_conf.ReMDMConf`, which imports this module: the
    grammar, :mod:`.policies_beyond`, builds the process)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[1] not in (*SCHEDULES, "conf"):
        raise ValueError(f"policy {text!r}: expected remdm:SCHEDULE[:ETA], SCHEDULE one of {', '.join(SCHEDULES)}, conf")
    if N is None:
        raise ValueError(f"policy {text!r} needs the number of steps N")
    eta = None
    if len(parts) == 3:
        try:
            eta = float(parts[2])
        except ValueError:
            raise ValueError(f"policy {text!r}: ETA {parts[2]!r} is not a number") from None
        if not (math.isfinite(eta) and 0 <= eta <= 1):
            raise ValueError(f"policy {text!r}: ETA must be in [0, 1], got {parts[2]!r}")
    return parts[1], N, eta
