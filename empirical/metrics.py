"""Evaluation of trained models against the true language q (THEORY §3, Assumption 4.1, (C4)).

* ``entropy_rate``: H(X_1..X_L)/L in nats, exact for an n-gram (``NGram.sequence_entropy``),
  a Monte Carlo estimate E_q[-ln q(x)]/L with a confidence interval for an HMM.  The
  validation NLL of a perfect model equals it.
* ``generation_metrics``: the paper's empirical TER, generative perplexity exp(E_p[-ln q(x)]/L)
  (infinite once a sample leaves the support), and SER = P_p(q(x) = 0) by support check, each
  with a confidence interval (Wilson for SER).
* ``learning_error``: the measured learning error of a denoiser, per-token
  KL(q(.|x_U) || p_theta(.|x_U)) at masked positions, x ~ q, every position masked
  independently with probability t, t ~ U(0,1) per sequence.  ``mean`` averages each
  sequence's masked positions first and then the sequences: that is the average form of
  Assumption 4.1 that enters (C2)/(C4) for the linear schedule (a position revealed at a
  uniform time sees every other position masked with the same probability).  The
  quantiles and the maximum over individual masked tokens approximate the "for every x_U"
  form from below.
* ``c4_bound``: (C4) with the measured error, KL(q || p_N)/L <= eps + log|V| E[sum_j D_j]/L,
  i.e. log TER(p) <= log TER(q) + that (nats per token); n-grams only.
* ``ar_kl``: KL(q || p_AR)/L = E_q[log q(x) - log p_AR(x)]/L for the AR baseline (Monte Carlo).
"""

from __future__ import annotations

import math

import numpy as np

from constructions.sampler import mean_interval, sample_metrics
from constructions.validation import MASK, as_rng, positive_int


def entropy_rate(language, L: int, num: int = 4000, seed=0) -> dict:
    """{'value', 'ci', 'exact'}: H(X_1..X_L)/L in nats per token."""
    L = positive_int("L", L)
    if hasattr(language, "sequence_entropy"):
        h = language.sequence_entropy(L) / L
        return {"value": h, "ci": [h, h], "exact": True}
    x = language.sample(num, L, as_rng(seed))
    m, lo, hi = mean_interval(-language.score(x) / L)
    return {"value": m, "ci": [lo, hi], "exact": False, "num": num}


def generation_metrics(language, samples: np.ndarray) -> dict:
    """SER with a Wilson CI, generative perplexity with a CI, and mean -ln q(x)/L of the samples."""
    samples = np.asarray(samples)
    out = sample_metrics(language, samples)
    L = samples.shape[1]
    with np.errstate(invalid="ignore"):
        nll = -language.score(samples) / L
    out["gen_nll_per_token"] = float(nll.mean()) if np.all(np.isfinite(nll)) else math.inf
    return out


def _kl_rows(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """KL(q || p) along the last axis; terms with q = 0 are 0; p = 0 where q > 0 gives inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1.0)) - np.log(p)), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def learning_error(language, denoiser, L: int, num: int = 256, seed=0, batch: int = 128, quantiles=(0.9, 0.99)) -> dict:
    """Measured per-token KL(q(.|x_U) || p_theta(.|x_U)) over x ~ q and random masks (nats).

    ``denoiser`` follows the denoiser protocol (int (B, L) with MASK -> probabilities (B, L, V)).
    Returns mean (sequence-averaged, with CI), token_mean (token-weighted), the requested
    quantiles over masked tokens, max, and the counts.
    """
    L = positive_int("L", L)
    num = positive_int("num", num)
    rng = as_rng(seed)
    x = language.sample(num, L, rng)
    t = rng.random(num)
    masked = rng.random((num, L)) < t[:, None]
    empty = ~masked.any(axis=1)  # a sequence with nothing masked measures nothing: mask one position
    masked[np.flatnonzero(empty), rng.integers(0, L, size=int(empty.sum()))] = True
    X = np.where(masked, MASK, x)
    per_seq = np.empty(num)
    tokens = []
    for s in range(0, num, batch):
        xb, mb = X[s:s + batch], masked[s:s + batch]
        q = np.asarray(language.posterior_marginals(xb), dtype=np.float64)
        p = np.asarray(denoiser(xb), dtype=np.float64)
        kl = _kl_rows(q, p)  # (b, L)
        per_seq[s:s + batch] = np.where(mb, kl, 0.0).sum(axis=1) / mb.sum(axis=1)
        tokens.append(kl[mb])
    tok = np.concatenate(tokens)
    m, lo, hi = mean_interval(per_seq)
    out = {"mean": m, "ci": [lo, hi], "token_mean": float(tok.mean()), "max": float(tok.max()),
           "num_sequences": num, "num_tokens": int(tok.size)}
    for qv in quantiles:
        out[f"q{round(100 * qv):d}"] = float(np.quantile(tok, qv))
    return out


def c4_bound(language, L: int, pi, eps_learning: float) -> dict | None:
    """(C4) per token with the measured learning error; None for a language that is not an n-gram."""
    if getattr(language, "kind", None) != "ngram":
        return None
    from bounds.dependencies import expected_dependencies

    ed = expected_dependencies(language.n, L, pi)
    logv = math.log(language.n_symbols)
    return {"expected_dependencies": ed, "dependency_term": logv * ed / L, "eps_learning": eps_learning,
            "kl_per_token_bound": eps_learning + logv * ed / L}


def ar_kl(language, model_nll_fn, L: int, num: int = 256, seed=0) -> dict:
    """KL(q || p_AR)/L by Monte Carlo: x ~ q, mean of (ln q(x) - ln p_AR(x))/L, with CI.

    ``model_nll_fn(x) -> -ln p_AR(x)`` per sequence (nats).
    """
    x = language.sample(num, L, as_rng(seed))
    vals = (language.score(x) + np.asarray(model_nll_fn(x), dtype=np.float64)) / L
    m, lo, hi = mean_interval(vals)
    return {"mean": m, "ci": [lo, hi], "num": num}
