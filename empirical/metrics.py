"""Model-side measurements against the true language q (Section 5; Assumption 4.1).

* :func:`entropy_rate`: H(X_1..X_L)/L in nats -- exact for an n-gram (``NGram.sequence_entropy``),
  a Monte Carlo mean of -ln q(x)/L with a confidence interval otherwise.  The validation NLL
  of a perfect model equals it.
* :func:`ar_kl`: KL(q || p_AR)/L by Monte Carlo for the AR baseline.

Samples are scored (SER, generative perplexity) by
:func:`mdmt.constructions.reverse.metrics.sample_metrics`, the learning error of a trained MDM is
:func:`mdmt.constructions.reverse.learning.learning_error`, and the chain bound evaluated with it
is :func:`mdmt.bounds.theorems.dependencies.chain_bound`: one function each, shared with the oracle side.
"""

from __future__ import annotations

import numpy as np

from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.runtime.validation import as_rng, positive_int
from mdmt.constructions.types import Language, Seed


def entropy_rate(language: Language, L: int, num: int = 4000, seed: Seed = 0) -> dict:
    """{'value', 'ci', 'exact'}: H(X_1..X_L)/L in nats per token."""
    L = positive_int("L", L)
    if hasattr(language, "sequence_entropy"):
        h = float(language.sequence_entropy(L)) / L
        return {"value": h, "ci": [h, h], "exact": True}
    x = language.sample_sequences(num, L, as_rng(seed))
    m, lo, hi = mean_interval(-language.log_likelihood(x) / L)
    return {"value": m, "ci": [lo, hi], "exact": False, "num": num}


def ar_kl(language, model_nll_fn, L: int, num: int = 256, seed=0) -> dict:
    """KL(q || p_AR)/L by Monte Carlo: x ~ q, mean of (ln q(x) - ln p_AR(x))/L, with CI.

    ``model_nll_fn(x) -> -ln p_AR(x)`` per sequence (nats), e.g. :func:`mdmt.empirical.sampling.ar_sequence_nll`.
    """
    x = language.sample_sequences(num, L, as_rng(seed))
    vals = (language.log_likelihood(x) + np.asarray(model_nll_fn(x), dtype=np.float64)) / L
    m, lo, hi = mean_interval(vals)
    return {"mean": m, "ci": [lo, hi], "num": num}
