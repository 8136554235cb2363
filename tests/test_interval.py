"""The interval counterexample HMM of Theorem 4.4 (Example C.7, Note C.8): support, law, token code."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import decode_token, interval_hmm, pair_consistent, support_size
from mdmt.runtime.validation import MASK
from tests.reference import all_sequences, hmm_joint


def consistent_by_definition(x, l):
    """Pair consistency straight from the definition, one sequence at a time (independent of pair_consistent)."""
    for start in range(0, len(x), l):
        block = x[start:start + l]
        for a, b in itertools.combinations(range(l), 2):
            if decode_token(int(block[a]), l, a)[b] != decode_token(int(block[b]), l, b)[a]:
                return False
    return True


@pytest.mark.parametrize("l, L", [(2, 2), (2, 4), (2, 6), (3, 3), (3, 6), (4, 4)])
def test_support_is_exactly_the_pair_consistent_sequences_with_the_uniform_law(l, L):
    """Brute force over all of V^L with the HMM's exact inference."""
    hmm = interval_hmm(l)
    assert hmm.n_symbols == 2 ** (l - 1)
    X = all_sequences(hmm.n_symbols, L)
    consistent = pair_consistent(X, l)
    np.testing.assert_array_equal(hmm.in_support(X), consistent)
    # size 2^(K l(l-1)/2): one free fair bit per pair, K l(l-1)/2 pairs
    K = L // l
    assert consistent.sum() == support_size(L, l) == 2 ** (K * l * (l - 1) // 2)
    scores = hmm.log_likelihood(X)
    np.testing.assert_allclose(scores[consistent], -math.log(support_size(L, l)), rtol=1e-12)
    assert np.all(scores[~consistent] == -np.inf)


@pytest.mark.parametrize("l, L", [(2, 2), (2, 4), (3, 3)])
def test_construction_by_path_sums(l, L):
    """The explicit (pi, A, B) against a sum over every hidden path (no shared recursion)."""
    hmm = interval_hmm(l)
    q = hmm_joint(hmm.startprob_, hmm.transmat_, hmm.emissionprob_, L)
    X = all_sequences(hmm.n_symbols, L)
    expected = np.where([consistent_by_definition(x, l) for x in X], 1.0 / support_size(L, l), 0.0)
    np.testing.assert_allclose(q, expected, rtol=1e-12, atol=0)


def test_state_counts_and_determinism_of_emissions():
    # states at position a: 2^#{pairs (b, c), b < c, b <= a <= c}; l = 5 gives 16 + 128 + 256 + 128 + 16
    assert interval_hmm(5).n_states == 544
    for l in (2, 3, 4, 5):
        hmm = interval_hmm(l)
        expected = sum(2 ** sum(1 for b, c in itertools.combinations(range(l), 2) if b <= a <= c) for a in range(l))
        assert hmm.n_states == expected
        assert np.all(hmm.emissionprob_.max(axis=1) == 1.0)  # every state emits one token


@given(seed=st.integers(0, 2**32 - 1))
def test_l5_decode_and_pair_consistency_agree_with_the_hmm_support(seed):
    hmm = interval_hmm(5)
    rng = np.random.default_rng(seed)
    X = hmm.sample_sequences(40, 20, seed=rng)
    # flip 0, 1 or 2 random bits of random tokens; flipping bit k of the token at a breaks the pair (a, partner_k)
    Y = X.copy()
    flips = rng.integers(0, 3, size=len(Y))
    for i, f in enumerate(flips):
        for pos, bit in zip(rng.integers(0, 20, size=f), rng.integers(0, 4, size=f)):
            Y[i, pos] ^= 1 << bit
    Y = np.concatenate([Y, rng.integers(0, 16, size=(20, 20))])
    direct = np.array([consistent_by_definition(y, 5) for y in Y])
    np.testing.assert_array_equal(pair_consistent(Y, 5), direct)
    np.testing.assert_array_equal(hmm.in_support(Y), direct)
    assert direct[:40][flips == 0].all()
    np.testing.assert_allclose(hmm.log_likelihood(Y[direct]), -4 * 10 * math.log(2), rtol=1e-12)


def test_samples_are_in_the_support_with_fair_independent_bits():
    hmm = interval_hmm(5)
    X = hmm.sample_sequences(4000, 10, seed=0)
    assert pair_consistent(X, 5).all() and hmm.in_support(X).all()
    # Bits of the pairs (0,1) and (2,4) of the first interval: fair and independent.  With 4000 draws the
    # frequency of each of the 4 combinations is 1/4 +- 5 standard errors (sqrt(3/16/4000) ~ 0.0068).
    b01 = (X[:, 0] >> 3) & 1
    b24 = (X[:, 2] >> 0) & 1
    for u, v in itertools.product((0, 1), repeat=2):
        assert abs(np.mean((b01 == u) & (b24 == v)) - 0.25) < 5 * 0.0069


def test_oracle_posterior_matches_the_hand_derivation():
    hmm = interval_hmm(5)
    X = np.full((1, 10), MASK)
    P = hmm.posterior_marginals(X)
    np.testing.assert_allclose(P, 1 / 16, rtol=1e-12)  # every token is 4 fair independent bits
    X[0, 0] = 0b1010  # c01 = 1, c02 = 0, c03 = 1, c04 = 0
    P = hmm.posterior_marginals(X)[0]
    # position 1 (partners 0, 2, 3, 4): its most significant bit is c01 = 1, the rest are fair
    np.testing.assert_allclose(P[1], [0.0] * 8 + [1 / 8] * 8, rtol=1e-12)
    # position 2 (partners 0, 1, 3, 4): most significant bit c02 = 0
    np.testing.assert_allclose(P[2], [1 / 8] * 8 + [0.0] * 8, rtol=1e-12)
    # position 3 (partners 0, 1, 2, 4): most significant bit c03 = 1
    np.testing.assert_allclose(P[3], [0.0] * 8 + [1 / 8] * 8, rtol=1e-12)
    # position 4 (partners 0, 1, 2, 3): most significant bit c04 = 0
    np.testing.assert_allclose(P[4], [1 / 8] * 8 + [0.0] * 8, rtol=1e-12)
    np.testing.assert_allclose(P[5:], 1 / 16, rtol=1e-12)  # the next interval is independent


def test_decode_token_bit_order():
    # l = 3, position 1: partners 0 and 2, most significant first: token 0b10 -> c_{1,0} = 1, c_{1,2} = 0
    assert decode_token(0b10, 3, 1) == {0: 1, 2: 0}
    # l = 5, position 2: partners 0, 1, 3, 4
    assert decode_token(0b1001, 5, 2) == {0: 1, 1: 0, 3: 0, 4: 1}
    assert decode_token(np.int64(7), 4, 0) == {1: 1, 2: 1, 3: 1}


def test_support_size_closed_form():
    assert support_size(5, 5) == 2**10 and support_size(20, 5) == 2**40 and support_size(6, 2) == 2**3
    assert support_size(1000, 5) == 2 ** 2000  # exact integer, no overflow


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: pair_consistent(np.zeros((1, 7), dtype=int), 3), "sequence length L=7 is not a multiple of the interval length l=3"),
        (lambda: support_size(10, 4), "sequence length L=10 is not a multiple of the interval length l=4"),
        (lambda: pair_consistent(np.array([[0, 4, 0]]), 3), "sequence 0 position 1: token 4 is outside the vocabulary"),
        (lambda: pair_consistent(np.array([[0, MASK, 0]]), 3), "token -1 is outside the vocabulary"),
        (lambda: decode_token(8, 3, 0), "token 8 is outside the vocabulary 0..3"),
        (lambda: decode_token(1, 3, 3), "position 3 is outside an interval of length 3"),
        (lambda: interval_hmm(1), "interval length l must be >= 2, got 1"),
        (lambda: interval_hmm(9), "interval length l=9 is too large"),
        (lambda: interval_hmm(2.5), "interval length l must be an integer, got 2.5"),
    ],
)
def test_bad_input_is_rejected_with_the_value_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
