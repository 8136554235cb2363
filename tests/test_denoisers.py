"""Denoisers and the learning error (Assumption 4.1): the oracle, its transforms, the bit-biased denoiser,
and the one learning_error, exact (enumeration) and Monte Carlo tied together."""

import math

import numpy as np
import pytest

from mdmt.constructions.languages import NGram, interval_hmm, random_ngram
from mdmt.constructions.reverse.denoisers import BitBiasedInterval, TemperedOracle, UniformMixture, oracle_denoiser
from mdmt.constructions.reverse.learning import learning_error, masking_law
from mdmt.constructions.reverse.schedules import reveal_probabilities
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.runtime.validation import MASK


def test_oracle_denoiser_is_the_posterior_and_uniform_off_the_support():
    lang = NGram(2, [0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]])  # copying: x_2 = x_1
    den = oracle_denoiser(lang)
    np.testing.assert_allclose(den(np.array([[0, MASK]]))[0, 1], [1.0, 0.0])
    np.testing.assert_allclose(den(np.array([[MASK, MASK]]))[0, 0], [0.5, 0.5])
    # q(x_U) = 0 (the two revealed ends disagree): no posterior exists, the oracle continues uniformly
    np.testing.assert_allclose(den(np.array([[0, 1, MASK]]))[0, 2], [0.5, 0.5])


def test_learning_error_of_denoisers_by_hand():
    h = interval_hmm(3)
    assert learning_error(h, TemperedOracle(h, 1.0), 3, method="exact")["max"] < 1e-12
    u = 0.7
    den = BitBiasedInterval(h, 3, u)
    le = learning_error(h, den, 3, method="exact")
    # at the all-masked context a token has 2 free bits: 2 * KL(Bern(1/2)||Bern(u)) = -log(4u(1-u)) (by hand)
    assert le["max"] == pytest.approx(-math.log(4 * u * (1 - u)), rel=1e-12)
    assert le["max"] == pytest.approx(den.max_learning_error, rel=1e-12)
    assert 0 < le["mean"] < le["max"] and le["token_mean"] <= le["max"] and le["q90"] <= le["q99"] <= le["max"]
    mix = UniformMixture(h, 0.3)
    assert 0 < learning_error(h, mix, 3, method="exact")["max"] <= mix.learning_error_bound()


def test_masking_law_is_a_distribution_over_patterns():
    for L in (1, 2, 5, 9):
        w = masking_law(L)
        total = sum(math.comb(L, m) * w[m] for m in range(L + 1))
        assert total == pytest.approx(1.0, abs=1e-14)  # every pattern once, the all-revealed draws moved
    # L = 2 by hand: P(m = 2) = int t^2 = 1/3; P(m = 1 for a given pattern) = int t(1-t) + (1/3)(1/2) = 1/6 + 1/6
    np.testing.assert_allclose(masking_law(2), [0.0, 1 / 3, 1 / 3])


def test_exact_and_monte_carlo_learning_errors_estimate_the_same_quantity():
    lang = random_ngram(2, 3, 2.0, 0.0, seed=4)
    den = TemperedOracle(lang, 0.5)
    exact = learning_error(lang, den, 5, method="exact")
    mc = learning_error(lang, den, 5, method="monte_carlo", num=4000, seed=1, level=0.999)
    assert exact["method"] == "exact" and mc["method"] == "monte_carlo"
    assert mc["ci"][0] <= exact["mean"] <= mc["ci"][1]
    assert mc["max"] <= exact["max"] + 1e-12  # Monte Carlo sees part of the contexts only
    assert abs(mc["token_mean"] - exact["token_mean"]) < 0.1 * exact["token_mean"]
    assert learning_error(lang, den, 5)["method"] == "exact"  # auto: (V+1)^L = 1024 states is small


def test_schedule_mean_is_the_learning_term_of_c2_over_L():
    lang = random_ngram(2, 2, 2.0, 0.0, seed=3)
    den = UniformMixture(lang, 0.2)
    pi = reveal_probabilities("cosine", 3)
    le = learning_error(lang, den, 4, method="exact", pi=pi)
    term = chain_quantities(lang, 4, pi, den)["expected_learning_term"]
    assert le["schedule_mean"] == pytest.approx(term / 4, rel=1e-12)
    with pytest.raises(ValueError, match="exact method only"):
        learning_error(lang, den, 4, method="monte_carlo", pi=pi)


def test_bad_arguments():
    h = interval_hmm(3)
    with pytest.raises(ValueError, match="beta must be a positive number"):
        TemperedOracle(h, 0)
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        UniformMixture(h, 1.5)
    with pytest.raises(ValueError, match=r"bit bias u must be in \(0, 1\)"):
        BitBiasedInterval(h, 3, 1.0)
    with pytest.raises(ValueError, match="does not match the vocabulary"):
        BitBiasedInterval(h, 4, 0.5)
    with pytest.raises(ValueError, match="method must be one of"):
        learning_error(h, TemperedOracle(h, 2.0), 3, method="sampled")
