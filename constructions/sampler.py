"""The factorised MDM sampler for any L (Eq. 3) with ddpm_cache NFE counting, and its metrics (THEORY §2-3).

Every position's reveal step tau_i is drawn i.i.d. from pi; at step j the positions
with tau_i = j are drawn independently from denoiser(x_{U_j}).  A step that reveals
nothing in a sequence changes nothing, so (ddpm_cache) the denoiser is evaluated
for a sequence only at the steps where it reveals something: NFE = #{j : S_j != {}}.
The output law is exactly p_N of :mod:`constructions.exact`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .schedules import reveal_probabilities
from .validation import MASK, as_rng, positive_int


def draw_reveal_steps(pi: np.ndarray, num: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """tau (num, L) i.i.d. from pi, steps numbered 1..N."""
    cdf = np.cumsum(pi)
    cdf[np.flatnonzero(pi > 0)[-1]:] = 1.0
    return np.searchsorted(cdf, rng.random((num, L)), side="right") + 1


def _draw_tokens(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw from rows P (m, V) with uniforms u (m,)."""
    cdf = np.cumsum(P, axis=1)
    cdf[:, -1] = np.maximum(cdf[:, -1], 1.0)
    return np.minimum((cdf <= u[:, None] * cdf[:, -1:]).sum(axis=1), P.shape[1] - 1)


@dataclass
class SampleResult:
    samples: np.ndarray  # int64 (num, L)
    nfe: np.ndarray  # int64 (num,)


def oracle_denoiser(language):
    """The oracle denoiser q(x_i | x_U), uniform where q(x_U) = 0 (a sample that already left the support)."""

    def denoise(X):
        return language.posterior_marginals(X, off_support="uniform")

    return denoise


def sample_mdm(language, L: int, pi, num: int, denoiser=None, seed=None, batch: int = 512) -> SampleResult:
    """Run the N-step sampler with the oracle (``denoiser=None``) or any denoiser; seeded, batched.

    The oracle is continued by the uniform law once a sample has left the support,
    the same convention as :func:`constructions.exact.denoiser_table`.
    """
    L = positive_int("L", L)
    num = positive_int("num", num, minimum=0)
    pi = reveal_probabilities(np.asarray(pi, dtype=np.float64), len(pi))
    rng = as_rng(seed)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    tau = draw_reveal_steps(pi, num, L, rng)
    U = rng.random((num, L))
    X = np.full((num, L), MASK, dtype=np.int64)
    nfe = np.zeros(num, dtype=np.int64)
    for j in np.unique(tau):
        new = tau == j
        rows = np.flatnonzero(new.any(axis=1))
        nfe[rows] += 1
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            P = np.asarray(den(X[r]))
            rr, cc = np.nonzero(new[r])
            X[r[rr], cc] = _draw_tokens(P[rr, cc], U[r[rr], cc])
    return SampleResult(X, nfe)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n."""
    if n == 0:
        return (0.0, 1.0)
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its normal-approximation confidence interval."""
    x = np.asarray(x, dtype=np.float64)
    m = float(x.mean())
    if len(x) < 2:
        return m, -math.inf, math.inf
    half = stats.norm.ppf(0.5 + level / 2) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def sample_metrics(language, samples: np.ndarray, level: float = 0.95) -> dict:
    """SER by support check (Wilson CI) and generative perplexity exp(E_p[-ln q(x)]/L) (CI on the mean)."""
    n, L = samples.shape
    ins = language.in_support(samples)
    bad = int((~ins).sum())
    lo, hi = wilson_interval(bad, n, level)
    out = {"num": n, "ser": bad / n, "ser_ci": [lo, hi], "off_support": bad}
    if bad:
        out.update(gen_perplexity=math.inf, gen_perplexity_ci=[math.inf, math.inf])
    else:
        m, a, b = mean_interval(-language.score(samples) / L, level)
        out.update(gen_perplexity=math.exp(m), gen_perplexity_ci=[math.exp(a), math.exp(b)])
    return out


def assignment_kl_estimate(language, L: int, pi, num: int, denoiser=None, seed=None, level: float = 0.95, batch: int = 512) -> dict:
    """Monte Carlo estimate of E_tau[KL(q || p_tau)] / L with a CI: an upper bound on the TER gap (C1).

    For x ~ q and tau ~ pi, log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j}) is an
    unbiased sample of E_tau KL(q || p_tau).
    """
    L = positive_int("L", L)
    pi = reveal_probabilities(np.asarray(pi, dtype=np.float64), len(pi))
    rng = as_rng(seed)
    den = denoiser if denoiser is not None else language.posterior_marginals
    x = language.sample(num, L, rng)
    tau = draw_reveal_steps(pi, num, L, rng)
    logp = np.zeros(num)
    for j in np.unique(tau):
        new = tau == j
        rows = np.flatnonzero(new.any(axis=1))
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            partial = np.where(tau[r] < j, x[r], MASK)
            P = np.asarray(den(partial))
            rr, cc = np.nonzero(new[r])
            with np.errstate(divide="ignore"):
                np.add.at(logp, r[rr], np.log(P[rr, cc, x[r[rr], cc]]))
    vals = (language.score(x) - logp) / L
    m, a, b = mean_interval(vals, level)
    return {"kl_per_token_nats": m, "ci": [a, b], "num": num}
