"""Denoisers with controlled learning error (Assumption 4.1; THEORY §2).

Each is built from a language's oracle denoiser q(x_i | x_U) (uniform where q(x_U) = 0,
as in the sampler) and follows the
denoiser protocol: ``denoiser(X (B, L) with MASK) -> (B, L, V)``.  Their exact
per-token learning error KL(q(.|x_U) || p(.|x_U)) is measured by
``constructions.exact.learning_error`` (small L) — the ``max`` is the
"for every x_U" form that Theorems 4.3/4.4 use, the ``mean`` the averaged form.
"""

from __future__ import annotations

import numpy as np

from .interval import partners
from .validation import MASK


class TemperedOracle:
    """p(v | x_U) proportional to q(v | x_U)^beta (beta = 1 is the oracle)."""

    def __init__(self, language, beta: float):
        if not np.isfinite(beta) or beta <= 0:
            raise ValueError(f"beta must be a positive number, got {beta!r}")
        self.language, self.beta = language, float(beta)

    def __call__(self, X):
        q = self.language.posterior_marginals(X, off_support="uniform")
        with np.errstate(divide="ignore"):
            p = np.where(q > 0, np.exp(self.beta * np.log(np.where(q > 0, q, 1.0))), 0.0)
        return p / p.sum(axis=-1, keepdims=True)


class UniformMixture:
    """p = (1 - lam) q(. | x_U) + lam / |V|: every token gets probability >= lam / |V|."""

    def __init__(self, language, lam: float):
        if not 0 <= lam <= 1:
            raise ValueError(f"mixture weight lam must be in [0, 1], got {lam!r}")
        self.language, self.lam = language, float(lam)

    def __call__(self, X):
        q = self.language.posterior_marginals(X, off_support="uniform")
        return (1 - self.lam) * q + self.lam / q.shape[-1]


class BitBiasedInterval:
    """The adversarial denoiser for the interval HMM: every still-free pair bit is 1 with probability u.

    A bit whose partner is revealed is copied as the oracle does; a bit whose partner
    is masked is fair under the oracle and Bernoulli(u) here.  The per-token learning
    error is (#free bits) * KL(Bern(1/2) || Bern(u)) = -(#free bits)/2 * log(4u(1-u)).
    """

    def __init__(self, language, l: int, u: float):
        if not 0 < u < 1:
            raise ValueError(f"bit bias u must be in (0, 1), got {u!r}")
        self.language, self.l, self.u = language, int(l), float(u)

    def __call__(self, X):
        X = self.language.check_tokens(X)
        q = self.language.posterior_marginals(X, off_support="uniform")
        n, L, V = q.shape
        l = self.l
        if L % l:
            raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
        tokens = np.arange(V)
        tilt = np.ones((n, L, V))
        for a in range(l):
            for k, b in enumerate(partners(a, l)):
                bit = (tokens >> (l - 2 - k)) & 1  # (V,)
                free = X[:, b::l] == MASK  # partner masked -> this bit is free, (n, K)
                factor = np.where(bit == 1, 2 * self.u, 2 * (1 - self.u))  # (V,)
                tilt[:, a::l, :] *= np.where(free[:, :, None], factor[None, None, :], 1.0)
        p = q * tilt
        return p / p.sum(axis=-1, keepdims=True)
