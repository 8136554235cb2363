"""Random languages, the interval counterexample HMM, and file formats (issue: constructions)."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from constructions import (HMM, NGram, decode_token, interval_hmm, load_language, pair_consistent, preset,
                           pruned_fraction, random_hmm, random_ngram, save_language, support_size)
from constructions.random_languages import PRESETS
from tests._brute import all_sequences


@pytest.mark.parametrize("name", [p for p in PRESETS if not p.endswith("-ter")])
def test_presets_really_prune_and_keep_every_row(name):
    lang = preset(name, seed=0)
    frac = pruned_fraction(lang)
    main = frac.get("transition", frac.get("transmat"))
    assert 0.05 <= main <= 0.5, frac
    rows = lang.transition_ if isinstance(lang, NGram) else lang.transmat_
    assert np.all((rows > 0).sum(axis=1) >= 1)
    ter = preset(name + "-ter", seed=0)
    assert all(v == 0.0 for v in pruned_fraction(ter).values())


def test_generators_are_seeded_and_validate_parameters():
    assert random_ngram(3, 4, 2.0, 0.01, seed=5) == random_ngram(3, 4, 2.0, 0.01, seed=5)
    assert random_ngram(3, 4, 2.0, 0.01, seed=5) != random_ngram(3, 4, 2.0, 0.01, seed=6)
    assert random_hmm(5, 3, 1.0, 0.0, seed=1) == random_hmm(5, 3, 1.0, 0.0, seed=1)
    # an enormous threshold prunes everything but the largest entry: rows stay valid
    h = random_hmm(6, 4, 1.0, 0.99, seed=2)
    assert np.all((h.transmat_ > 0).sum(axis=1) == 1)
    with pytest.raises(ValueError, match="temperature must be a positive number, got -1"):
        random_ngram(2, 3, -1, 0.0)
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\), got 1.5"):
        random_hmm(2, 3, 1.0, 1.5)
    with pytest.raises(ValueError, match="unknown preset '5gram'; valid presets: 2gram"):
        preset("5gram")


def test_higher_temperature_is_more_random():
    cold = random_hmm(16, 8, 0.5, 0.0, seed=0).emissionprob_
    hot = random_hmm(16, 8, 8.0, 0.0, seed=0).emissionprob_
    ent = lambda P: -(np.where(P > 0, P * np.log(P), 0)).sum(axis=1).mean()  # noqa: E731
    assert ent(hot) > ent(cold)


@pytest.mark.parametrize("l, L", [(2, 2), (2, 4), (2, 6), (3, 3), (3, 6), (4, 4)])
def test_interval_hmm_support_is_exactly_the_pair_consistent_sequences(l, L):
    """Brute force over V^L: support = pair-consistent, size 2^(K l(l-1)/2), law uniform on it."""
    hmm = interval_hmm(l)
    assert hmm.n_symbols == 2 ** (l - 1)
    X = all_sequences(hmm.n_symbols, L)
    consistent = pair_consistent(X, l)
    np.testing.assert_array_equal(hmm.in_support(X), consistent)
    size = support_size(L, l)
    assert consistent.sum() == size == 2 ** ((L // l) * l * (l - 1) // 2)
    np.testing.assert_allclose(np.exp(hmm.score(X[consistent])), 1.0 / size, rtol=1e-12)


def test_interval_hmm_l5_has_16_symbols_and_matches_the_direct_check():
    hmm = interval_hmm(5)
    assert hmm.n_symbols == 16
    X = hmm.sample(300, 20, seed=0)
    assert pair_consistent(X, 5).all() and hmm.in_support(X).all()
    np.testing.assert_allclose(hmm.score(X), -4 * 10 * np.log(2))
    rng = np.random.default_rng(1)
    Y = X.copy()
    flip = rng.random(len(Y)) < 0.5
    pos = rng.integers(0, 20, size=len(Y))
    bit = rng.integers(0, 4, size=len(Y))
    Y[flip, pos[flip]] ^= 1 << bit[flip]  # flipping one bit breaks exactly one pair
    np.testing.assert_array_equal(pair_consistent(Y, 5), ~flip)
    np.testing.assert_array_equal(hmm.in_support(Y), ~flip)


def test_decode_token_and_errors():
    # l = 3, position 1: partners 0 and 2; token 0b10 -> c_{1,0} = 1, c_{1,2} = 0
    assert decode_token(0b10, 3, 1) == {0: 1, 2: 0}
    with pytest.raises(ValueError, match="token 8 is outside the vocabulary 0..3"):
        decode_token(8, 3, 0)
    with pytest.raises(ValueError, match="sequence length L=7 is not a multiple of the interval length l=3"):
        pair_consistent(np.zeros((1, 7), dtype=int), 3)
    with pytest.raises(ValueError, match="interval length l=9 is too large"):
        interval_hmm(9)


@st.composite
def languages(draw):
    seed = draw(st.integers(0, 2**31))
    if draw(st.booleans()):
        return random_ngram(draw(st.integers(2, 3)), draw(st.integers(1, 4)), 2.0, draw(st.sampled_from([0.0, 0.05])), seed)
    return random_hmm(draw(st.integers(1, 5)), draw(st.integers(1, 4)), 2.0, draw(st.sampled_from([0.0, 0.05])), seed)


@given(languages(), st.sampled_from([".json", ".npz"]))
def test_file_round_trip_is_exact(tmp_path_factory, lang, ext):
    path = tmp_path_factory.mktemp("lang") / f"l{ext}"
    save_language(lang, path)
    back = load_language(path)
    assert back == lang and type(back) is type(lang)


def test_minimal_json_form_loads_and_bad_files_are_named(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"kind": "hmm", "initial": [1.0], "transition": [[1.0]], "emission": [[0.25, 0.75]]}))
    assert isinstance(load_language(p), HMM)
    p.write_text(json.dumps({"kind": "hmm", "initial": [1.0], "transition": [[1.0]]}))
    with pytest.raises(ValueError, match="missing key 'emission'"):
        load_language(p)
    p.write_text(json.dumps({"kind": "tree"}))
    with pytest.raises(ValueError, match="unknown kind 'tree'"):
        load_language(p)
    p.write_text("{not json")
    with pytest.raises(ValueError, match="invalid JSON"):
        load_language(p)
    p.write_text(json.dumps({"kind": "hmm", "initial": [1.0], "transition": [[0.5]], "emission": [[1.0]]}))
    with pytest.raises(ValueError, match="transmat row 0 sums to 0.5"):
        load_language(p)


def test_hmmlearn_conversion_preserves_the_law():
    hmmlearn = pytest.importorskip("hmmlearn")  # noqa: F841
    from constructions import from_hmmlearn, to_hmmlearn

    h = preset("hmm", seed=3)
    m = to_hmmlearn(h)
    X = h.sample(5, 40, seed=0)
    assert m.score(X.reshape(-1, 1), [40] * 5) == pytest.approx(h.score(X).sum(), rel=1e-10)
    assert from_hmmlearn(m) == h
    ng = preset("2gram", seed=0)
    Y = ng.sample(3, 10, seed=1)
    assert to_hmmlearn(ng).score(Y.reshape(-1, 1), [10] * 3) == pytest.approx(ng.score(Y).sum(), rel=1e-10)
