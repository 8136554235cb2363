"""The learning error of a denoiser (Assumption 4.1): one definition, computed exactly or by Monte Carlo.

The learning error of a denoiser p at a context x_U (q(x_U) > 0) and a masked position i is
KL(q(. | x_U) || p(. | x_U)) in nats.  Assumption 4.1 bounds it by eps_learning; the paper
uses it in two forms, and :func:`learning_error` reports both:

``max``
    the "for every x_U" form: the largest per-token KL over every context with q(x_U) > 0 and
    every masked position -- what Theorems 4.3 and 4.4 assume.  Exact: the supremum itself
    (``argmax`` names a context attaining it).  Monte Carlo: the largest value seen, a lower
    estimate of the supremum.
``mean``
    an average form, over the *masking law* M of MDM training: t ~ U(0, 1), each position masked
    independently with probability t (if none is masked, one position chosen uniformly is), x ~ q;
    per sequence the average of the KL over its masked positions, then the average over
    sequences.  Exact: Sum_U P_M(U) (1/|M_U|) Sum_{i masked} E_q KL, with
    P_M(U) = m! (L - m)! / (L + 1)! for a pattern with m >= 1 masked positions (plus 1/((L + 1) L)
    when m = 1, the all-revealed draws).  Monte Carlo: the sample mean with a Student-t interval.
``token_mean``, ``q90``, ``q99`` (one key per requested quantile)
    the mean and quantiles of the per-token KL over the masked tokens of M (each masked token of
    each draw weighted equally), exactly (weighted quantiles over every context) or empirically.
``schedule_mean`` (exact, when ``pi`` is given)
    E_tau Sum_j Sum_{i in S_j} E_q KL / L, the average the reverse process with reveal
    probabilities pi actually meets: the learning term of C2 (Lemma B.3) divided by L, the form
    Theorem 4.2 needs.

``method="exact"`` enumerates every context (small L; the tables of :mod:`.tables`);
``"monte_carlo"`` draws ``num`` sequences; ``"auto"`` is exact when (V+1)^L <= 2^16.
The two agree within the Monte Carlo interval (tested).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from mdmt.constructions.types import Denoiser, Language, RevealProbabilities, Seed

from mdmt.runtime.validation import MASK, as_rng, positive_int
from .chain import _log_pred_terms, chain_quantities
from .tables import Tables, build_tables, denoiser_table


AUTO_EXACT_STATES = 1 << 16
METHODS = ("auto", "exact", "monte_carlo")


def _kl_rows(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """KL(q || p) along the last axis; terms with q = 0 are 0; p = 0 where q > 0 gives inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1.0)) - np.log(p)), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value v with P(X <= v) >= q under the discrete law (values, weights)."""
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(weights[order])
    k = int(np.searchsorted(cdf, q * cdf[-1] * (1 - 1e-12), side="left"))
    return float(values[order][min(k, len(order) - 1)])


def masking_law(L: int) -> np.ndarray:
    """P_M(m masked positions in one given pattern), m = 0..L, for the masking law of the module docstring.

    The all-revealed draw (probability 1/(L + 1)) is moved to the L patterns with one masked position.
    """
    m = np.arange(L + 1)
    w = np.exp([math.lgamma(k + 1) + math.lgamma(L - k + 1) - math.lgamma(L + 2) for k in m])
    w[1] += 1.0 / ((L + 1) * L)
    w[0] = 0.0
    return w


def _exact(language, denoiser, L: int, tables: Tables | None, pi, quantiles) -> dict:
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    V = tables.V
    live = np.flatnonzero(tables.q_ext > 0)
    D = denoiser_table(tables, denoiser, states=live)
    Q = denoiser_table(tables, None)
    masked = tables.digits[live] == V  # (n_live, L)
    kl = _kl_rows(Q[live], D[live])  # (n_live, L)
    kl = np.where(masked, kl, -1.0)
    flat = int(np.argmax(kl))
    s, i = divmod(flat, L)
    n_masked = masked.sum(axis=1)
    # weight of each (context, masked position) as a token of the masking law
    w_pattern = masking_law(L)[n_masked] * tables.q_ext[live]  # P_M(U) q(x_U)
    tok_w = np.where(masked, w_pattern[:, None], 0.0)
    out = {"method": "exact", "max": float(max(kl.max(), 0.0)) if kl.size else 0.0,
           "argmax": {"context": tables.partial_sequences(live[s:s + 1])[0].tolist(), "position": int(i)}}
    with np.errstate(invalid="ignore"):
        per_seq = np.where(n_masked > 0, np.where(masked, kl, 0.0).sum(axis=1) / np.maximum(n_masked, 1), 0.0)
    mean = float(np.sum(w_pattern * per_seq))
    out["mean"] = mean
    out["ci"] = [mean, mean]
    vals, wts = kl[masked], tok_w[masked]
    out["token_mean"] = float(np.sum(vals * wts) / np.sum(wts))
    for qv in quantiles:
        out[f"q{round(100 * qv):d}"] = _weighted_quantile(vals, wts, qv)
    out["num_contexts"] = int(len(live))
    if pi is not None:
        out["schedule_mean"] = chain_quantities(language, L, pi, tables=tables, table=D)["expected_learning_term"] / L
    # the average over (U, i) pairs with x_U ~ q, each pair equally likely (kept for reference)
    G, Hc, _ = _log_pred_terms(tables, D)
    per_pair = (-Hc - G)[~np.isnan(G)]
    out["pair_mean"] = float(max(0.0, per_pair.mean())) if np.all(np.isfinite(per_pair)) else math.inf
    return out


def _monte_carlo(language, denoiser, L: int, num: int, seed, batch: int, quantiles, level: float) -> dict:
    from .confidence import mean_interval  # scipy.stats: imported by the Monte Carlo method only

    num = positive_int("num", num)
    batch = positive_int("batch", batch)
    rng = as_rng(seed)
    x = language.sample_sequences(num, L, rng)
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
    m, lo, hi = mean_interval(per_seq, level)
    out = {"method": "monte_carlo", "mean": m, "ci": [lo, hi], "token_mean": float(tok.mean()), "max": float(tok.max()),
           "num_sequences": num, "num_tokens": int(tok.size)}
    for qv in quantiles:
        out[f"q{round(100 * qv):d}"] = float(np.quantile(tok, qv))
    return out


def learning_error(language: Language, denoiser: Denoiser, L: int, *, method: str = "auto", num: int = 256, seed: Seed = 0, batch: int = 128,
                   quantiles: Sequence[float] = (0.9, 0.99), level: float = 0.95, pi: RevealProbabilities = None, tables: Tables | None = None) -> dict:
    """The learning error of ``denoiser`` against the oracle of ``language`` at length ``L`` (module docstring).

    ``denoiser`` follows the denoiser protocol (a trained MDM wrapped in
    :class:`mdmt.empirical.sampling.MDMDenoiser`, an oracle transform, ...).  Keys: ``method``,
    ``mean``, ``ci``, ``token_mean``, ``max``, ``q90``/``q99`` (per requested quantile); exact only:
    ``argmax``, ``num_contexts``, ``pair_mean`` and, with ``pi``, ``schedule_mean``; Monte Carlo only:
    ``num_sequences``, ``num_tokens``.
    """
    L = positive_int("L", L)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "auto":
        small = L * math.log2(language.n_symbols + 1) <= math.log2(AUTO_EXACT_STATES)  # no huge integer
        method = "exact" if small or tables is not None else "monte_carlo"
    if method == "exact":
        return _exact(language, denoiser, L, tables, pi, quantiles)
    if pi is not None:
        raise ValueError("schedule_mean (pi) is computed by the exact method only")
    return _monte_carlo(language, denoiser, L, num, seed, batch, quantiles, level)
