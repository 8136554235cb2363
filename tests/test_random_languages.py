"""Random n-gram and HMM languages (Algorithms 1-2, Table 1): pruning, determinism, temperature, presets."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import HMM, NGram, PRESETS, preset, pruned_fraction, random_hmm, random_ngram
from mdmt.constructions.languages.random_languages import KAPPA, random_rows

BASE_PRESETS = ["2gram", "3gram", "4gram", "hmm"]


def arrays_of(lang):
    if isinstance(lang, NGram):
        return {"initial": lang.initial_, "transition": lang.transition_}
    return {"initial": lang.startprob_, "transition": lang.transmat_, "emission": lang.emissionprob_}


def test_presets_have_the_table1_parameters():
    # Table 1 of the paper: |V| = 8; temperature 2, 2, 2, 3.2; threshold 0.008, 0.008, 0.005, 0.003; 32 states.
    expected = {"2gram": (2, 0, 2.0, 0.008), "3gram": (3, 0, 2.0, 0.008), "4gram": (4, 0, 2.0, 0.005),
                "hmm": (0, 32, 3.2, 0.003)}
    for name, (n, states, temp, thr) in expected.items():
        p = PRESETS[name]
        assert (p.n, p.n_states, p.temperature, p.threshold, p.vocab_size) == (n, states, temp, thr, 8)
        ter = PRESETS[name + "-ter"]
        assert dataclasses.replace(ter, name=name, threshold=thr) == p and ter.threshold == 0.0
    assert set(PRESETS) == set(BASE_PRESETS) | {b + "-ter" for b in BASE_PRESETS} | {"hmm-sparse"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["hmm"].threshold = 0.5


@pytest.mark.parametrize("name", BASE_PRESETS)
def test_presets_really_prune_every_array_and_keep_every_row(name):
    fractions = [pruned_fraction(preset(name, seed)) for seed in range(5)]
    for key in fractions[0]:
        mean = np.mean([f[key] for f in fractions])
        assert 0.05 <= mean <= 0.40, (name, key, mean)
    for seed in range(5):
        for key, arr in arrays_of(preset(name, seed)).items():
            rows = arr.reshape(-1, arr.shape[-1])
            assert np.all(rows.max(axis=1) > 0), (name, seed, key)


@pytest.mark.parametrize("name", BASE_PRESETS)
def test_ter_presets_have_full_support_and_same_shapes(name):
    ter = preset(name + "-ter", seed=3)
    assert all(v == 0.0 for v in pruned_fraction(ter).values())
    pruned = preset(name, seed=3)
    for (k, a), (k2, b) in zip(arrays_of(ter).items(), arrays_of(pruned).items()):
        assert k == k2 and a.shape == b.shape


def test_pruned_fraction_counts_exact_zeros_by_array():
    h = HMM([0.5, 0.5, 0.0], [[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]], [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    assert pruned_fraction(h) == {"initial": 1 / 3, "transition": 3 / 9, "emission": 2 / 6}
    g = NGram(2, [0.0, 1.0], [[0.25, 0.75], [1.0, 0.0]])
    assert pruned_fraction(g) == {"initial": 0.5, "transition": 0.25}
    with pytest.raises(ValueError, match="expected an HMM or an NGram, got list"):
        pruned_fraction([1, 2])


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 3), V=st.integers(1, 5))
def test_generators_are_deterministic_given_the_seed(seed, n, V):
    assert random_ngram(n, V, 2.0, 0.01, seed) == random_ngram(n, V, 2.0, 0.01, seed)
    assert random_hmm(4, V, 3.2, 0.003, seed) == random_hmm(4, V, 3.2, 0.003, seed)
    assert random_hmm(4, V, 3.2, 0.003, np.random.default_rng(seed)) == random_hmm(4, V, 3.2, 0.003, seed)


def test_different_seeds_give_different_languages():
    assert random_ngram(3, 4, 2.0, 0.01, seed=5) != random_ngram(3, 4, 2.0, 0.01, seed=6)
    assert random_hmm(6, 4, 2.0, 0.01, seed=5) != random_hmm(6, 4, 2.0, 0.01, seed=6)
    assert preset("hmm", 0) != preset("hmm", 1) and preset("hmm", 0) == preset("hmm", 0)


@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 12), rows=st.integers(1, 6),
       temperature=st.floats(0.05, 50.0), threshold=st.floats(0.0, 0.999))
def test_rows_are_distributions_with_no_entry_below_the_threshold(seed, size, rows, temperature, threshold):
    P = random_rows(np.random.default_rng(seed), rows, size, temperature, threshold)
    assert P.shape == (rows, size) and np.all(np.isfinite(P))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all((P > 0).sum(axis=1) >= 1)  # never an empty row
    # pruning keeps the entries >= threshold (renormalising only raises them), or a single point mass
    assert np.all((P == 0) | (P >= threshold * (1 - 1e-12)))


def test_an_enormous_threshold_leaves_a_point_mass_on_the_largest_entry():
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    unpruned = random_rows(rng_a, 50, 6, 1.0, 0.0)
    pruned = random_rows(rng_b, 50, 6, 1.0, 0.99)
    np.testing.assert_array_equal(pruned, np.eye(6)[unpruned.argmax(axis=1)])


@given(seed=st.integers(0, 2**32 - 1), t1=st.floats(0.1, 20.0), t2=st.floats(0.1, 20.0))
def test_higher_temperature_means_higher_entropy_row_by_row(seed, t1, t2):
    # For fixed uniforms U the rows p ∝ U^(KAPPA/T) form an exponential family in beta = KAPPA/T,
    # whose entropy has derivative -beta * Var(log U) <= 0 in beta: it grows with T.
    lo, hi = sorted((t1, t2))
    P_lo = random_rows(np.random.default_rng(seed), 8, 8, lo, 0.0)
    P_hi = random_rows(np.random.default_rng(seed), 8, 8, hi, 0.0)

    def entropy(P):
        return -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0), axis=1)

    assert np.all(entropy(P_hi) >= entropy(P_lo) - 1e-9)


def test_rows_follow_the_documented_recipe():
    # Re-derive one row from the documented formula p ∝ U^(KAPPA/T), U = 1 - rng.random().
    T, thr = 2.0, 0.05
    u = 1.0 - np.random.default_rng(11).random((3, 8))
    p = u ** (KAPPA / T)
    p /= p.sum(axis=1, keepdims=True)
    p = np.where((p >= thr) | (p == p.max(axis=1, keepdims=True)), p, 0)
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(random_rows(np.random.default_rng(11), 3, 8, T, thr), p, rtol=1e-12)


def test_ngram_initial_law_uses_the_scaled_threshold():
    g = random_ngram(3, 4, 0.5, 0.1, seed=2)  # initial law over 16 pairs, threshold 0.1 / 4 = 0.025
    nz = g.initial_[g.initial_ > 0]
    assert nz.min() >= 0.025 and np.any(g.initial_ == 0)


def _support_is_everything(h: HMM) -> bool:
    """Whether q(x) > 0 for every x in V^L and every L, by a subset construction over reachable state sets."""
    A, B, start = h.transmat_ > 0, h.emissionprob_ > 0, h.startprob_ > 0
    seen, todo = set(), []
    for current in [start]:
        for v in range(B.shape[1]):
            R = current & B[:, v]
            if not R.any():
                return False
            if R.tobytes() not in seen:
                seen.add(R.tobytes())
                todo.append(R)
    while todo:
        succ = A[todo.pop()].any(axis=0)
        for v in range(B.shape[1]):
            R = succ & B[:, v]
            if not R.any():
                return False
            if R.tobytes() not in seen:
                seen.add(R.tobytes())
                todo.append(R)
    return True


def test_support_claims_of_the_module_docstring():
    # The hmm preset keeps every sequence in its support (documented); the n-grams do not.
    assert _support_is_everything(preset("hmm", 0))
    X = np.random.default_rng(0).integers(0, 8, size=(2000, 16))
    assert preset("hmm", 0).in_support(X).all()
    for name in ["2gram", "3gram", "4gram"]:
        assert not _support_is_everything(preset(name, 0).to_hmm())
        assert preset(name, 0).in_support(X).mean() < 0.05
    # the helper can fail: a language with a forbidden bigram
    assert not _support_is_everything(NGram(2, [0.5, 0.5], [[1.0, 0.0], [0.5, 0.5]]).to_hmm())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: random_ngram(2, 3, -1, 0.0), "temperature must be a positive number, got -1"),
        (lambda: random_ngram(2, 3, 0.0, 0.0), "temperature must be a positive number, got 0.0"),
        (lambda: random_hmm(2, 3, float("nan"), 0.0), "temperature must be a positive number, got nan"),
        (lambda: random_hmm(2, 3, float("inf"), 0.0), "temperature must be a positive number, got inf"),
        (lambda: random_hmm(2, 3, 1.0, 1.5), r"threshold must be in \[0, 1\), got 1.5"),
        (lambda: random_hmm(2, 3, 1.0, -0.1), r"threshold must be in \[0, 1\), got -0.1"),
        (lambda: random_ngram(2, 3, 1.0, float("nan")), r"threshold must be in \[0, 1\), got nan"),
        (lambda: random_ngram(1, 3, 1.0, 0.0), "n must be >= 2, got 1"),
        (lambda: random_ngram(2, 0, 1.0, 0.0), "vocab_size must be >= 1, got 0"),
        (lambda: random_hmm(0, 3, 1.0, 0.0), "n_states must be >= 1, got 0"),
        (lambda: random_hmm(2, 3, 1.0, 0.0, seed=-4), "seed must be a non-negative integer, got -4"),
        (lambda: preset("5gram"), "unknown preset '5gram'; valid presets: 2gram, 3gram, 4gram, hmm, 2gram-ter"),
    ],
)
def test_bad_parameters_are_rejected_with_the_value_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
