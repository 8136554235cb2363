"""Evaluation of models against the true language q (THEORY §3, Assumption 4.1, Theorems 4.2-4.3).

* :func:`entropy_rate`: H(X_1..X_L)/L in nats -- exact for an n-gram (``NGram.sequence_entropy``),
  a Monte Carlo mean of -ln q(x)/L with a confidence interval otherwise.  The validation NLL
  of a perfect model equals it.
* :func:`generative_perplexity`: exp(E_p[-ln q(x)]/L) over samples x ~ p (the empirical TER
  proxy); infinite once a sample leaves the support of q.
* :func:`ser`: sequence error rate P_p(q(x) = 0) by exact support check, with a Wilson interval.
* :func:`learning_error`: the measured learning error of a denoiser, the per-token
  KL(q(.|x_U) || p_theta(.|x_U)) at masked positions, x ~ q, each position masked independently
  with probability t, t ~ U(0,1) per sequence.  ``mean`` averages each sequence's masked
  positions and then the sequences (the average form of Assumption 4.1 for the linear
  schedule); the quantiles (0.9, 0.99) and the maximum over individual masked tokens
  approximate its "for every x_U" form from below.
* :func:`c4_bound`: KL(q || p_N)/L <= eps + log|V| E[sum_j D_j]/L with the measured eps (n-grams).
* :func:`ar_kl`: KL(q || p_AR)/L by Monte Carlo for the AR baseline.
"""

from __future__ import annotations

import math

import numpy as np

from constructions.sampler import mean_interval, wilson_interval
from constructions.validation import MASK, as_rng, positive_int


def entropy_rate(language, L: int, num: int = 4000, seed=0) -> dict:
    """{'value', 'ci', 'exact'}: H(X_1..X_L)/L in nats per token."""
    L = positive_int("L", L)
    if hasattr(language, "sequence_entropy"):
        h = float(language.sequence_entropy(L)) / L
        return {"value": h, "ci": [h, h], "exact": True}
    x = language.sample(num, L, as_rng(seed))
    m, lo, hi = mean_interval(-language.score(x) / L)
    return {"value": m, "ci": [lo, hi], "exact": False, "num": num}


def ser(language, samples: np.ndarray, level: float = 0.95) -> dict:
    """SER = fraction of samples with q(x) = 0 (exact support check), with a Wilson interval."""
    samples = np.atleast_2d(np.asarray(samples))
    n = samples.shape[0]
    bad = int((~np.asarray(language.in_support(samples), dtype=bool)).sum())
    lo, hi = wilson_interval(bad, n, level)
    return {"ser": bad / n, "ci": [lo, hi], "off_support": bad, "num": n}


def generative_perplexity(language, samples: np.ndarray, level: float = 0.95) -> dict:
    """exp(mean -ln q(x)/L) under the true language q, with a CI (inf if a sample is off the support)."""
    samples = np.atleast_2d(np.asarray(samples))
    L = samples.shape[1]
    with np.errstate(invalid="ignore"):
        nll = -np.asarray(language.score(samples), dtype=np.float64) / L
    if not np.all(np.isfinite(nll)):
        return {"gen_perplexity": math.inf, "ci": [math.inf, math.inf], "nll_per_token": math.inf}
    m, lo, hi = mean_interval(nll, level)
    return {"gen_perplexity": math.exp(m), "ci": [math.exp(lo), math.exp(hi)], "nll_per_token": m}


def generation_metrics(language, samples: np.ndarray) -> dict:
    """SER (Wilson CI) and generative perplexity (CI) of a batch of samples."""
    s, g = ser(language, samples), generative_perplexity(language, samples)
    return {"num": s["num"], "ser": s["ser"], "ser_ci": s["ci"], "off_support": s["off_support"],
            "gen_perplexity": g["gen_perplexity"], "gen_perplexity_ci": g["ci"], "gen_nll_per_token": g["nll_per_token"]}


def _kl_rows(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """KL(q || p) along the last axis; terms with q = 0 are 0; p = 0 where q > 0 gives inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1.0)) - np.log(p)), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def learning_error(language, denoiser, L: int, num: int = 256, seed=0, batch: int = 128,
                   quantiles=(0.9, 0.99)) -> dict:
    """Measured per-token KL(q(.|x_U) || p_theta(.|x_U)) over x ~ q and random masks (nats).

    ``denoiser`` follows the denoiser protocol (int (B, L) with MASK -> probabilities (B, L, V));
    wrap a trained MDM in :class:`empirical.sampling.MDMDenoiser`.  Returns ``mean`` (with ``ci``),
    ``token_mean``, ``q90``/``q99`` (one key per requested quantile), ``max`` and the counts.
    """
    L = positive_int("L", L)
    num = positive_int("num", num)
    rng = as_rng(seed)
    x = language.sample(num, L, rng)
    t = rng.random(num)  # t ~ U(0, 1) per sequence
    masked = rng.random((num, L)) < t[:, None]
    empty = ~masked.any(axis=1)  # nothing masked measures nothing: mask one position there
    masked[np.flatnonzero(empty), rng.integers(0, L, size=int(empty.sum()))] = True
    X = np.where(masked, MASK, x)
    per_seq = np.empty(num)
    tokens = []
    for s in range(0, num, batch):
        xb, mb = X[s:s + batch], masked[s:s + batch]
        q = np.asarray(language.posterior_marginals(xb), dtype=np.float64)  # (b, L, V)
        p = np.asarray(denoiser(xb), dtype=np.float64)  # (b, L, V)
        if p.shape != q.shape:
            raise ValueError(f"denoiser returned shape {p.shape}, expected {q.shape}")
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
    """KL(q || p_N)/L bound with the measured learning error; None for a language that is not an n-gram."""
    if getattr(language, "kind", None) != "ngram":
        return None
    from bounds.dependencies import expected_dependencies

    ed = expected_dependencies(language.n, L, pi)
    logv = math.log(language.n_symbols)
    return {"expected_dependencies": ed, "dependency_term": logv * ed / L, "eps_learning": eps_learning,
            "kl_per_token_bound": eps_learning + logv * ed / L}


def ar_kl(language, model_nll_fn, L: int, num: int = 256, seed=0) -> dict:
    """KL(q || p_AR)/L by Monte Carlo: x ~ q, mean of (ln q(x) - ln p_AR(x))/L, with CI.

    ``model_nll_fn(x) -> -ln p_AR(x)`` per sequence (nats), e.g. :func:`empirical.sampling.ar_sequence_nll`.
    """
    x = language.sample(num, L, as_rng(seed))
    vals = (language.score(x) + np.asarray(model_nll_fn(x), dtype=np.float64)) / L
    m, lo, hi = mean_interval(vals)
    return {"mean": m, "ci": [lo, hi], "num": num}
