"""The joint tables of constructions/reverse/tables.py: q by the forward recursion over prefixes, and
denoiser tables read off the tables' oracle."""

import numpy as np
import pytest

from mdmt.constructions.languages import random_hmm, random_ngram
from mdmt.constructions.languages.hmm import HMM
from mdmt.constructions.languages.interval import interval_hmm
from mdmt.constructions.languages.ngram import NGram, as_hmm
from mdmt.constructions.reverse import tables as T
from mdmt.constructions.reverse.denoisers import BitBiasedInterval, TemperedOracle, UniformMixture, oracle_denoiser
from tests.reference import all_sequences

LANGUAGES = [
    (random_ngram(2, 3, 2.0, 0.05, seed=1), 5),
    (random_ngram(3, 2, 2.0, 0.05, seed=1), 7),
    (random_hmm(3, 3, 3.0, 0.15, seed=3), 5),
    (random_hmm(4, 2, 3.0, 0.1, seed=6), 8),
    (NGram(2, np.array([0.5, 0.5]), np.eye(2)), 4),  # the copying chain: most sequences have q = 0
    (interval_hmm(2), 4),
    (interval_hmm(3), 6),
]


@pytest.mark.parametrize("lang, L", LANGUAGES)
def test_prefix_recursion_equals_scoring_every_sequence(lang, L):
    h = as_hmm(lang)
    X = all_sequences(lang.n_symbols, L)
    ref = h.log_likelihood(X)
    got = T.prefix_log_likelihoods(h, L)
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))  # the same support, exactly
    live = np.isfinite(ref)
    np.testing.assert_allclose(got[live], ref[live], rtol=0, atol=1e-13 * L)


def test_tables_use_the_language_scores_beyond_the_prefix_limit(monkeypatch):
    lang, L = random_hmm(3, 3, 3.0, 0.15, seed=3), 5
    small = T.build_tables(lang, L)
    monkeypatch.setattr(T, "PREFIX_TREE_MAX", 0)
    big = T.build_tables(lang, L)
    np.testing.assert_allclose(small.q, big.q, rtol=1e-13, atol=0)
    np.testing.assert_allclose(small.q_ext, big.q_ext, rtol=1e-12, atol=1e-300)


def test_an_underflow_on_the_support_is_an_error_not_a_zero():
    # x = (0, 2) has probability 1e-400 > 0 (path 0 -> 1), below the smallest float
    hmm = HMM([1.0, 0.0], [[1 - 1e-200, 1e-200], [0.0, 1.0]], [[1.0, 0.0, 0.0], [0.0, 1 - 1e-200, 1e-200]])
    with pytest.raises(ValueError, match="underflowed"):
        T.prefix_log_likelihoods(hmm, 2)
    with pytest.raises(ValueError, match="underflowed"):
        hmm.log_likelihood(np.array([[0, 2]]))


def _called(tables, den):
    """The denoiser table by calling the denoiser on every state with q(x_U) > 0 (uniform elsewhere)."""
    live = np.flatnonzero(tables.q_ext > 0)
    D = np.full((tables.n_states, tables.L, tables.V), 1.0 / tables.V)
    D[live] = den(tables.partial_sequences(live))
    return D


@pytest.mark.parametrize("make", [lambda g: oracle_denoiser(g), lambda g: UniformMixture(g, 0.3),
                                  lambda g: TemperedOracle(g, 0.7), lambda g: TemperedOracle(g, 1.6)])
@pytest.mark.parametrize("lang, L", LANGUAGES[:5])
def test_oracle_transforms_from_the_tables_equal_calling_them(make, lang, L):
    t = T.build_tables(lang, L)
    den = make(lang)
    np.testing.assert_allclose(T.support_table(t, den), _called(t, den), rtol=0, atol=1e-14)


def test_bit_biased_denoiser_from_the_tables_equals_calling_it():
    lang = interval_hmm(3)
    t = T.build_tables(lang, 6)
    for u in (0.25, 0.7):
        den = BitBiasedInterval(lang, 3, u)
        np.testing.assert_allclose(T.support_table(t, den), _called(t, den), rtol=0, atol=1e-14)


def test_a_denoiser_of_another_language_is_called_not_read_off_the_tables():
    lang, other = random_ngram(2, 3, 2.0, 0.05, seed=1), random_ngram(2, 3, 2.0, 0.05, seed=2)
    t = T.build_tables(lang, 4)
    den = UniformMixture(other, 0.3)
    np.testing.assert_allclose(T.support_table(t, den), _called(t, den), rtol=0, atol=1e-15)
    assert not np.allclose(T.support_table(t, den), T.support_table(t, UniformMixture(lang, 0.3)))
