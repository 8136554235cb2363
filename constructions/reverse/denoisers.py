"""Denoisers: the oracle q(x_i | x_U) and denoisers with a controlled learning error (Assumption 4.1).

Every denoiser follows the *denoiser protocol*: ``denoiser(X)`` with ``X`` int (B, L), ``MASK``
at masked positions, returns float (B, L, V) with a probability vector at every masked position
(revealed positions are not read).

* :func:`oracle_denoiser` -- the optimum of the ELBO (Section 3.2): the exact posterior marginal
  q(x_i | x_U), continued by the uniform law where q(x_U) = 0 (a sample that already left the
  support; the convention of the sampler and of the exact evaluator alike).
* ``TemperedOracle`` and ``UniformMixture`` -- pointwise transforms of the oracle marginal, so the
  sampler's message kernel runs them at any L (``oracle_transform``).
* ``BitBiasedInterval`` -- the adversarial denoiser of Theorem 4.4 on the interval HMM.

The learning error of a denoiser (the per-token KL(q(.|x_U) || p(.|x_U)) of Assumption 4.1) is
measured by :func:`mdmt.constructions.reverse.learning.learning_error`, exactly by enumeration
or by Monte Carlo.
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.constructions.types import Language

from ..languages.interval import partners
from mdmt.runtime.validation import MASK


class _FromOracle:
    """A denoiser computed from the oracle rows of its language: ``from_oracle(X, q)`` maps the oracle's
    rows q (n, L, V) at the partial sequences X to the denoiser's rows, so whoever holds the oracle
    already (the exact tables of :mod:`.tables`) applies the denoiser without recomputing it."""

    language = None

    def _oracle(self, X):
        return self.language.posterior_marginals(X, off_support="uniform")

    def __call__(self, X):
        return self.from_oracle(X, self._oracle(X))

    def from_oracle(self, X, q):
        raise NotImplementedError


class OracleDenoiser(_FromOracle):
    """q(x_i | x_U) of a language (HMM or n-gram), uniform where q(x_U) = 0."""

    oracle_transform = ("oracle", 0.0)

    def __init__(self, language):
        if not hasattr(language, "posterior_marginals"):
            raise ValueError(f"the oracle denoiser needs an mdmt language, got {type(language).__name__}")
        self.language = language

    def from_oracle(self, X, q):
        """The oracle rows themselves."""
        return q

    def __repr__(self) -> str:
        return f"OracleDenoiser({self.language!r})"


def oracle_denoiser(language: Language) -> OracleDenoiser:
    """The oracle denoiser of ``language`` (an :class:`OracleDenoiser`); see the module docstring."""
    return OracleDenoiser(language)


class TemperedOracle(_FromOracle):
    """p(v | x_U) proportional to q(v | x_U)^beta (beta = 1 is the oracle; beta < 1 flattens, > 1 sharpens).

    The support of p(.|x_U) equals that of q(.|x_U), so the learning error is finite for
    every beta > 0 and 0 only at beta = 1.
    """

    def __init__(self, language: Language, beta: float):
        try:
            b = float(beta)
        except (TypeError, ValueError):
            raise ValueError(f"beta must be a positive number, got {beta!r}") from None
        if not math.isfinite(b) or b <= 0:
            raise ValueError(f"beta must be a positive number, got {beta!r}")
        self.language, self.beta = language, b

    @property
    def oracle_transform(self):
        return ("temper", self.beta)

    def from_oracle(self, X, q):
        """q(v | x_U)^beta, renormalised over v."""
        with np.errstate(divide="ignore"):
            p = np.where(q > 0, np.exp(self.beta * np.log(np.where(q > 0, q, 1.0))), 0.0)
        return p / p.sum(axis=-1, keepdims=True)

    def __repr__(self) -> str:
        return f"TemperedOracle(beta={self.beta!r})"


class UniformMixture(_FromOracle):
    """p = (1 - lam) q(. | x_U) + lam / |V|.

    Every token gets probability >= lam/|V|, so the learning error is at most
    -log(1 - lam) (p >= (1 - lam) q pointwise) whatever the context.
    """

    def __init__(self, language: Language, lam: float):
        try:
            lm = float(lam)
        except (TypeError, ValueError):
            raise ValueError(f"mixture weight lam must be in [0, 1], got {lam!r}") from None
        if not 0 <= lm <= 1:
            raise ValueError(f"mixture weight lam must be in [0, 1], got {lam!r}")
        self.language, self.lam = language, lm

    @property
    def oracle_transform(self):
        return ("mix", self.lam)

    def learning_error_bound(self) -> float:
        """-log(1 - lam): an upper bound on the learning error for every context."""
        return math.inf if self.lam == 1 else -math.log1p(-self.lam)

    def from_oracle(self, X, q):
        """(1 - lam) q(v | x_U) + lam / |V|."""
        return (1 - self.lam) * q + self.lam / q.shape[-1]

    def __repr__(self) -> str:
        return f"UniformMixture(lam={self.lam!r})"


def bernoulli_kl_from_half(u: float) -> float:
    """KL(Bern(1/2) || Bern(u)) = -1/2 log(4 u (1 - u)) in nats."""
    if not 0 < u < 1:
        raise ValueError(f"bit bias u must be in (0, 1), got {u!r}")
    return -0.5 * math.log(4.0 * u * (1.0 - u))


class BitBiasedInterval(_FromOracle):
    """The adversarial denoiser for the interval HMM (Theorem 4.4): every free pair bit is 1 with probability u.

    A bit whose partner is already revealed is copied, as the oracle does; a bit whose
    partner is still masked is a fair coin under the oracle (it is independent of
    everything revealed) and Bernoulli(u) here, independently across bits.  Given x_U the
    oracle law of a token is uniform over its free bits, so the per-token learning error
    is exactly (#free bits) * KL(Bern(1/2) || Bern(u)) = -(#free bits)/2 * log(4u(1-u)),
    at most (l - 1) * KL(Bern(1/2) || Bern(u)) (the all-masked context).  Two ends of a
    pair revealed in the same step then disagree with probability 2u(1-u).
    """

    def __init__(self, language: Language, l: int, u: float):
        try:
            uu = float(u)
        except (TypeError, ValueError):
            raise ValueError(f"bit bias u must be in (0, 1), got {u!r}") from None
        if not 0 < uu < 1:
            raise ValueError(f"bit bias u must be in (0, 1), got {u!r}")
        l = int(l)
        if l < 2 or language.n_symbols != 2 ** (l - 1):
            raise ValueError(f"interval length l={l} does not match the vocabulary of {language.n_symbols} symbols")
        self.language, self.l, self.u = language, l, uu

    @classmethod
    def for_learning_error(cls, language, l: int, eps: float, low: bool = True) -> "BitBiasedInterval":
        """The bias u < 1/2 (``low``) or > 1/2 whose worst-case per-token learning error is exactly ``eps``.

        (l - 1) * KL(Bern(1/2) || Bern(u)) = eps  <=>  4u(1-u) = exp(-2 eps / (l - 1)).
        """
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"learning error eps must be a finite number > 0, got {eps!r}")
        c = math.exp(-2.0 * eps / (int(l) - 1))
        d = 0.5 * math.sqrt(max(0.0, 1.0 - c))
        return cls(language, l, 0.5 - d if low else 0.5 + d)

    @property
    def max_learning_error(self) -> float:
        """(l - 1) * KL(Bern(1/2) || Bern(u)): the "for every x_U" learning error, in closed form."""
        return (self.l - 1) * bernoulli_kl_from_half(self.u)

    @property
    def pair_mismatch(self) -> float:
        """2u(1-u): probability that two ends of a pair drawn in the same step disagree."""
        return 2.0 * self.u * (1.0 - self.u)

    def __call__(self, X):
        X = self.language.check_tokens(X)
        return self.from_oracle(X, self._oracle(X))

    def from_oracle(self, X, q):
        """The oracle rows tilted by 2u (bit 1) or 2(1-u) (bit 0) on every bit whose partner is masked in X."""
        n, L, V = q.shape
        l = self.l
        if L % l:
            raise ValueError(f"sequence length L={L} is not a multiple of the interval length l={l}")
        tokens = np.arange(V)
        tilt = np.ones((n, L, V))
        for a in range(l):
            for k, b in enumerate(partners(a, l)):
                bit = (tokens >> (l - 2 - k)) & 1  # (V,): this pair's bit in each token
                free = X[:, b::l] == MASK  # partner masked -> the bit is free, (n, K)
                factor = np.where(bit == 1, 2 * self.u, 2 * (1 - self.u))  # (V,)
                tilt[:, a::l, :] *= np.where(free[:, :, None], factor[None, None, :], 1.0)
        p = q * tilt
        return p / p.sum(axis=-1, keepdims=True)

    def __repr__(self) -> str:
        return f"BitBiasedInterval(l={self.l}, u={self.u!r})"
