"""ReMDM's confidence-based schedule with the oracle denoiser (SPEC ``remdm:conf[:ETA]``): exact law and Monte Carlo.

ReMDM (Wang et al., arXiv 2503.00307, the sigma_t schedules, "Confidence-based schedule") gives every decoded
token its own remasking probability.  A token keeps the probability psi it had under the denoiser
when it was (last) decoded -- here the oracle q(x_i = v | x_U) of the partial assignment of that step;
a masked position has psi = +infinity.  At a step from t to s < t (the grid and alpha of :mod:`.remdm`,
alpha_t = 1 - t, t_k = k / N), every position independently

* decoded (psi finite): is masked again with probability sigma^(l) = eta_conf^(l) * ETA * sigma_max(t),
  eta_conf^(l) = exp(-psi^(l)) / sum_{l' decoded} exp(-psi^(l')) (a softmax of minus the confidences over
  the decoded positions: the less confident a token, the likelier it is remasked), stays otherwise;
* masked: its sigma is eta_conf * ... = 0 (psi = infinity), so it is revealed with ReMDM's probability at
  sigma = 0, (alpha_s - alpha_t) / (1 - alpha_t), its token drawn from the oracle at the current state,
  and its confidence set to the probability of the drawn token.

This is the variant of ReMDM's released sampler (``remdm-conf``): the confidence weight rescales
sigma_max (ReMDM-rescale with eta_rescale = ETA, default 1 as released), and the confidences are those
of the decoding draw (released in bfloat16; here exact in float64).  ReMDM's constraint
0 <= sigma^(l) <= sigma_max(t) = min(1, (1 - alpha_s) / alpha_t) holds since eta_conf^(l) <= 1 and
ETA <= 1; it is checked at every step (:func:`token_sigmas`).  The expected number of tokens remasked at a
step is at most ETA * sigma_max (the weights sum to 1).  ETA = 0 is the paper's i.i.d. process with the
linear schedule on the same grid (Section 3.2).

**Network calls** as in :mod:`.remdm`: which positions a step reveals does not read the network, and the
remasking probabilities read the stored confidences only, so a step needs a call exactly when it reveals
at least one position.

**The exact law** (:func:`conf_law`): the process is a Markov chain on (partial assignment, confidence of
each decoded token).  With the oracle a confidence is an entry of the oracle table, so the chain has
finitely many states; they are enumerated step by step in a dictionary (state -> mass), each state's
successors a product over positions ((V+1) outcomes for a masked one, 2 for a decoded one).  The number
of states grows with L, V and N, and with the number of distinct oracle probabilities: measured on the
interval HMM (V = 2), L = 4 in 3 s at N = 64, L = 5 in 2 s at N = 12 and 10 s at N = 48, L = 6 in 15 s at
N = 6; on a full-support 3-gram with V = 3, L = 3 in 2 s at N = 8, while L = 4 passes 10^5 states at the third
step.  (V+1)^L <= ``MAX_ASSIGNMENTS`` and ``MAX_CONF_STATES`` states at a step bound it, with a clear error
beyond (:class:`TooManyStates` for the latter).  :func:`sample_conf` is the Monte Carlo sampler
at any L.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mdmt.runtime.validation import MASK, positive_int

from .process_base import LawProcess
from .remdm import SIGMA_TOL, oracle_reveal, remdm_steps

DEFAULT_ETA = 1.0  # ReMDM's released remdm-conf: sigma^(l) = eta_conf^(l) * sigma_max
MAX_ASSIGNMENTS = 4096  # (V+1)^L partial assignments under the exact chain's states
MAX_CONF_STATES = 50_000  # (partial assignment, confidences) states held by the exact chain at one step


class TooManyStates(ValueError):
    """The exact ReMDM-conf chain would hold more than ``MAX_CONF_STATES`` states (use the Monte Carlo sampler)."""


def conf_steps(eta: float, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reveal probability of a masked position, ETA * sigma_max, sigma_max) of each of the N steps (module docstring)."""
    pu, _ = remdm_steps("rescale", 0.0, N)  # a masked position has sigma = 0
    _, smax = remdm_steps("rescale", 1.0, N)
    return pu, eta * smax, smax


def remask_weights(psi: np.ndarray) -> np.ndarray:
    """eta_conf = softmax(-psi) over the decoded positions along the last axis (NaN = masked: weight 0).

    A row with nothing decoded has all weights 0."""
    psi = np.asarray(psi, dtype=np.float64)
    decoded = ~np.isnan(psi)
    e = np.where(decoded, np.exp(-np.where(decoded, psi, 0.0)), 0.0)
    z = e.sum(axis=-1, keepdims=True)
    return np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)


def token_sigmas(psi: np.ndarray, sigma: float, smax: float) -> np.ndarray:
    """sigma^(l) = eta_conf^(l) * sigma of every position, after checking ReMDM's bound 0 <= sigma^(l) <= sigma_max."""
    s = sigma * remask_weights(psi)
    if s.size and (s.max() > smax + SIGMA_TOL or s.min() < 0):
        bad = float(s.max() if s.max() > smax + SIGMA_TOL else s.min())
        raise ValueError(f"ReMDM-conf: a token's sigma_t = {bad:.6g} is outside [0, sigma_max] = [0, {smax:.6g}]")
    return s


def conf_law(language, L: int, eta: float, N: int, tables=None):
    """(p on V^L in the tables' order, E[NFE], tables): the exact augmented chain (module docstring)."""
    from .tables import build_tables, denoiser_table

    L = positive_int("L", L)
    pu, sigma, smax = conf_steps(eta, N)
    V = language.n_symbols
    if L * math.log2(V + 1) > math.log2(MAX_ASSIGNMENTS):
        raise ValueError(f"the exact ReMDM-conf law at L = {L}, V = {V} has more than (V+1)^L = {V + 1}^{L} states; at "
                         f"most {MAX_ASSIGNMENTS} partial assignments are supported (use the Monte Carlo sampler)")
    tables = tables or build_tables(language, L)
    D = denoiser_table(tables, None)
    strides = tables.strides
    law = {(tables.n_states - 1, (-1.0,) * L): 1.0}  # all masked (a masked position's psi is stored as -1: keys merge)
    nfe = 0.0
    for j in range(N):
        new: dict = {}
        for (idx, psi), w in law.items():
            digits = tables.digits[idx]
            masked = digits == V
            m = int(masked.sum())
            if m:
                nfe += w * (1.0 - (1.0 - pu[j]) ** m)
            sig = token_sigmas(np.where(masked, np.nan, psi), float(sigma[j]), float(smax[j]))
            opts = []
            for i in range(L):
                if masked[i]:  # (digit, psi, probability)
                    o = [(V, -1.0, 1.0 - pu[j])] + [(v, float(D[idx, i, v]), pu[j] * D[idx, i, v]) for v in range(V)]
                else:
                    o = [(int(digits[i]), psi[i], 1.0 - sig[i]), (V, -1.0, sig[i])]
                opts.append([c for c in o if c[2] > 0.0])
            for combo in itertools.product(*opts):
                pr = w * math.prod(c[2] for c in combo)
                key = (int(sum(c[0] * int(strides[i]) for i, c in enumerate(combo))), tuple(c[1] for c in combo))
                new[key] = new.get(key, 0.0) + pr
        if len(new) > MAX_CONF_STATES:
            raise TooManyStates(f"the exact ReMDM-conf law at L = {L}, N = {N} reached {len(new)} states at step {j + 1}; at "
                             f"most {MAX_CONF_STATES} are supported (use the Monte Carlo sampler)")
        law = new
    f = np.zeros(tables.n_states)
    for (idx, _), w in law.items():
        f[idx] += w
    masked = np.any(tables.digits == V, axis=1)
    if np.any(f[masked] > 1e-12):  # the last step reveals every position (alpha_0 = 1, sigma_max = 0)
        raise AssertionError("ReMDM-conf chain left masked positions")
    return f[tables.full_index], float(nfe), tables


def sample_conf(language, L: int, eta: float, N: int, num: int, rng, batch: int = 512):
    """(samples (num, L), NFE (num,)) of ReMDM-conf with the oracle at any L (module docstring)."""
    L = positive_int("L", L)
    pu, sigma, smax = conf_steps(eta, N)
    X = np.full((num, L), MASK, dtype=np.int64)
    psi = np.full((num, L), np.nan)
    nfe = np.zeros(num, dtype=np.int64)
    for j in range(N):
        masked = X == MASK
        reveal = masked & (rng.random((num, L)) < pu[j])
        remask = ~masked & (rng.random((num, L)) < token_sigmas(psi, float(sigma[j]), float(smax[j])))
        u = rng.random((num, L))
        rows = np.flatnonzero(reveal.any(axis=1))
        nfe[rows] += 1
        oracle_reveal(language, X, reveal, u, rows, batch, psi)
        X[remask] = MASK
        psi[remask] = np.nan
    return X, nfe


class ReMDMConf(LawProcess):
    """ReMDM's confidence-based schedule (SPEC ``remdm:conf[:ETA]``, N steps; module docstring)."""

    method = "remdm"
    oracle_only = "runs with the oracle denoiser only (mdmt's ReMDM)"
    kind = "conf"

    def __init__(self, N: int, eta: float | None = None):
        self.N = positive_int("number of steps N", N)
        e = DEFAULT_ETA if eta is None else eta
        if isinstance(e, bool) or not (isinstance(e, (int, float)) and math.isfinite(e) and 0 <= e <= 1):
            raise ValueError(f"ReMDM eta must be a number in [0, 1], got {eta!r}")
        self.eta = float(e)
        self.spec = f"remdm:conf:{self.eta:g}"

    def _law(self, language, L, tables):
        return conf_law(language, L, self.eta, self.N, tables)

    def _draw(self, language, L, num, rng):
        return sample_conf(language, L, self.eta, self.N, num, rng)
