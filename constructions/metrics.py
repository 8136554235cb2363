"""Monte Carlo metrics of the sampler with confidence intervals (THEORY §3; Eqs. 4-5, chain step C1).

* SER (Eq. 5) by an exact support check of every sample (``language.in_support``), with a
  Wilson score or Clopper-Pearson (exact binomial) interval.
* Generative perplexity exp(E_{x~p}[-ln q(x)] / L), the paper's empirical TER proxy, with
  the interval of the mean per-token negative log-likelihood (Student t) mapped through
  exp.  It is infinite as soon as one sample leaves the support; the off-support fraction
  is reported, and the perplexity of the in-support samples alone is given separately
  (clearly labelled: it is not the generative perplexity).
* E_tau[KL(q || p_tau)] / L, an upper bound on the TER gap KL(q || p_N) / L (C1): for x ~ q
  and tau ~ pi, log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j}) is an unbiased
  sample (its mean over tau is KL(q || p_tau) averaged over x ~ q).  The denoiser is
  evaluated on x_{U_j} at every step with a reveal.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .validation import positive_int


def _check_level(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    return float(level)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n."""
    level = _check_level(level)
    if n == 0:
        return (0.0, 1.0)
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact, conservative) interval for a binomial proportion k/n."""
    level = _check_level(level)
    if n == 0:
        return (0.0, 1.0)
    a = 1 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return (lo, hi)


def binomial_interval(k: int, n: int, level: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """``wilson`` or ``clopper-pearson`` interval for k successes out of n."""
    if method == "wilson":
        return wilson_interval(k, n, level)
    if method in ("clopper-pearson", "exact"):
        return clopper_pearson_interval(k, n, level)
    raise ValueError(f"interval method must be 'wilson' or 'clopper-pearson', got {method!r}")


def mean_interval(x, level: float = 0.95) -> tuple[float, float, float]:
    """Sample mean and its Student-t confidence interval: (mean, low, high).

    An infinite value makes the mean infinite with an infinite interval; fewer than two
    values give (-inf, inf).
    """
    level = _check_level(level)
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value")
    if not np.all(np.isfinite(x)):
        m = float(np.sum(x))  # +inf, -inf or nan (mixed signs)
        return m, m, m
    m = float(x.mean())
    if len(x) < 2:
        return m, -math.inf, math.inf
    half = float(stats.t.ppf(0.5 + level / 2, len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def sample_metrics(language, samples, level: float = 0.95, method: str = "wilson") -> dict:
    """SER by support check (binomial CI) and generative perplexity exp(E_p[-ln q(x)]/L) (CI on the mean).

    Keys: ``num``, ``length``, ``ser``, ``ser_ci``, ``off_support`` (count),
    ``off_support_fraction``, ``gen_nll_per_token`` (nats) with ``gen_nll_ci``,
    ``gen_perplexity`` with ``gen_perplexity_ci`` (inf when a sample is off the support),
    and ``in_support_perplexity`` (exp of the mean over the in-support samples only).
    """
    samples = language.check_tokens(samples, allow_mask=False)
    n, L = samples.shape
    if n == 0:
        raise ValueError("sample_metrics needs at least one sample")
    ins = language.in_support(samples)
    bad = int((~ins).sum())
    lo, hi = binomial_interval(bad, n, level, method)
    out = {"num": n, "length": L, "ser": bad / n, "ser_ci": [lo, hi], "ser_interval": method,
           "off_support": bad, "off_support_fraction": bad / n}
    nll = np.full(n, math.inf)
    if np.any(ins):
        nll[ins] = -language.score(samples[ins]) / L
    m, a, b = mean_interval(nll, level)
    out.update(gen_nll_per_token=m, gen_nll_ci=[a, b], gen_perplexity=_exp(m), gen_perplexity_ci=[_exp(a), _exp(b)])
    out["in_support_perplexity"] = _exp(float(nll[ins].mean())) if np.any(ins) else math.nan
    return out


def _exp(v: float) -> float:
    if math.isnan(v):
        return math.nan
    return math.inf if v > 700 else math.exp(v)


def nfe_summary(nfe, level: float = 0.95) -> dict:
    """Mean (with CI), min and max of the per-sequence number of denoiser evaluations."""
    nfe = np.asarray(nfe)
    m, a, b = mean_interval(nfe, level)
    return {"nfe_mean": m, "nfe_ci": [a, b], "nfe_min": int(nfe.min()), "nfe_max": int(nfe.max())}


def assignment_kl_estimate(language, L: int, pi, num: int, denoiser=None, seed=None, level: float = 0.95,
                           batch: int = 512, method: str = "auto") -> dict:
    """Monte Carlo estimate of E_tau[KL(q || p_tau)] / L with a CI: an upper bound on the TER gap (C1).

    Draws x ~ q and tau ~ pi (one generator, ``seed``) and averages
    (log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j})) / L.  Keys: ``kl_per_token_nats``,
    ``ci``, ``kl_per_token_bits`` (the bound on log2 TER(p_N) - log2 TER(q)), ``ci_bits``, ``num``.
    """
    from .sampler import assignment_log_ratio  # the sampler module re-exports these metrics

    L = positive_int("L", L)
    num = positive_int("num", num)
    from .validation import as_rng

    rng = as_rng(seed)
    x = language.sample(num, L, rng)
    vals = assignment_log_ratio(language, x, pi, denoiser, seed=rng, batch=batch, method=method) / L
    m, a, b = mean_interval(vals, level)
    ln2 = math.log(2)
    return {"kl_per_token_nats": m, "ci": [a, b], "kl_per_token_bits": m / ln2, "ci_bits": [a / ln2, b / ln2],
            "num": num}
