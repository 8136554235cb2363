"""SER and generative perplexity of samples, with confidence intervals (Eqs. 4-5 of the paper; Section 5.1).

:func:`sample_metrics` is the one place where samples are scored against the true language q,
for the oracle sampler, trained MDMs and AR models alike:

* SER (Eq. 5) by an exact support check of every sample (``language.in_support``), with a
  Wilson score or Clopper-Pearson (exact binomial) interval.
* Generative perplexity exp(E_{x~p}[-ln q(x)] / L), the paper's empirical TER proxy, with
  the interval of the mean per-token negative log-likelihood (Student t) mapped through
  exp.  It is infinite as soon as one sample leaves the support (printed as ``inf``, ``null``
  in JSON); ``off_support`` counts those samples, and the perplexity of the in-support samples
  alone is given separately as ``in_support_perplexity`` (it is not the generative perplexity).
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.constructions.types import ArrayLike, Language

from .confidence import binomial_interval, mean_interval

KEYS = ("num", "length", "ser", "ser_ci", "ser_interval", "off_support", "gen_nll_per_token", "gen_nll_ci",
        "gen_perplexity", "gen_perplexity_ci", "in_support_perplexity")


def _exp(v: float) -> float:
    if math.isnan(v):
        return math.nan
    return math.inf if v > 700 else math.exp(v)


def sample_metrics(language: Language, samples: ArrayLike, level: float = 0.95, method: str = "wilson") -> dict:
    """SER by support check (binomial CI) and generative perplexity exp(E_p[-ln q(x)]/L) (CI on the mean).

    Keys (:data:`KEYS`): ``num``, ``length``, ``ser``, ``ser_ci``, ``ser_interval`` (the interval's
    method), ``off_support`` (count), ``gen_nll_per_token`` (nats) with ``gen_nll_ci``,
    ``gen_perplexity`` with ``gen_perplexity_ci`` (inf when a sample is off the support), and
    ``in_support_perplexity`` (exp of the mean over the in-support samples only; None when no sample is
    in the support).
    """
    samples = language.check_tokens(samples, allow_mask=False)
    n, L = samples.shape
    if n == 0:
        raise ValueError("sample_metrics needs at least one sample")
    ins = language.in_support(samples)
    bad = int((~ins).sum())
    lo, hi = binomial_interval(bad, n, level, method)
    out = {"num": n, "length": L, "ser": bad / n, "ser_ci": [lo, hi], "ser_interval": method, "off_support": bad}
    nll = np.full(n, math.inf)
    if np.any(ins):
        nll[ins] = -language.log_likelihood(samples[ins]) / L
    m, a, b = mean_interval(nll, level)
    out.update(gen_nll_per_token=m, gen_nll_ci=[a, b], gen_perplexity=_exp(m), gen_perplexity_ci=[_exp(a), _exp(b)])
    out["in_support_perplexity"] = _exp(float(nll[ins].mean())) if np.any(ins) else None
    return out


def perplexity_note(metrics: dict) -> str | None:
    """Why the generative perplexity of ``metrics`` is infinite, or None when it is finite."""
    if metrics["off_support"] == 0:
        return None
    return (f"generative perplexity is infinite: {metrics['off_support']} of {metrics['num']} samples lie outside "
            f"the support of q (q(x) = 0); see ser and in_support_perplexity")
