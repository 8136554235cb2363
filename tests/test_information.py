"""Information quantities: exact, windowed and Monte Carlo against brute force and against each other."""

import numpy as np
import pytest

from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse.information import (information_exact, information_monte_carlo, information_ngram,
                                                    information_profile, information_quantities,
                                                    leave_one_out_log_conditionals, marginal_entropies)
from mdmt.constructions.reverse.tables import build_tables

from .reference import all_sequences, hmm_joint, information_by_enumeration, leave_one_out_by_enumeration, ngram_joint


def _check_against(ref, got, atol=1e-11):
    assert got["entropy"] == pytest.approx(ref["entropy"], abs=atol)
    np.testing.assert_allclose(got["marginal_entropy"], ref["marginal_entropy"], atol=atol)
    np.testing.assert_allclose(got["conditional_entropy"], ref["conditional_entropy"], atol=atol)
    Hi, Hc, H = ref["marginal_entropy"], ref["conditional_entropy"], ref["entropy"]
    assert got["total_correlation"] == pytest.approx(Hi.sum() - H, abs=atol)
    assert got["dual_total_correlation"] == pytest.approx(H - Hc.sum(), abs=atol)
    assert got["sum_mutual_information"] == pytest.approx((Hi - Hc).sum(), abs=atol)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_equals_brute_force_on_hmms(seed):
    h = random_hmm(3, 3, 1.5, 0.02, seed=seed)
    L = 4
    X = all_sequences(3, L)
    ref = information_by_enumeration(X, hmm_joint(h.startprob_, h.transmat_, h.emissionprob_, L))
    _check_against(ref, information_exact(h, L))


@pytest.mark.parametrize("n, V, L", [(2, 3, 5), (3, 2, 7), (3, 3, 2), (4, 2, 8), (4, 2, 3)])
def test_windowed_ngram_equals_brute_force(n, V, L):
    """The Markov-blanket computation at any L, including L <= n - 1 (inside the initial law)."""
    ng = random_ngram(n, V, 2.0, 0.01, seed=n + V + L)
    ref = information_by_enumeration(all_sequences(V, L), ngram_joint(ng, L))
    _check_against(ref, information_ngram(ng, L))
    assert information_quantities(ng, L)["method"] == "windowed"


def test_windowed_long_sequence_is_consistent():
    """At L = 300 the blanket entropies are compared with their own definition on one middle position by the chain rule."""
    ng = random_ngram(2, 3, 2.0, 0.0, seed=5)
    r = information_ngram(ng, 300)
    # bigram: H(X_i | X_-i) = H(X_{i-1}, X_i, X_{i+1}) - H(X_{i-1}, X_{i+1}) with the propagated law of X_{i-1}
    i = 150
    law = ng.initial_.copy()
    for _ in range(i - 1):
        law = law @ ng.transition_
    T = ng.transition_
    J = law[:, None, None] * T[:, :, None] * T[None, :, :]
    ent = lambda p: float(-(p[p > 0] * np.log(p[p > 0])).sum())  # noqa: E731
    assert r["conditional_entropy"][i] == pytest.approx(ent(J) - ent(J.sum(axis=1)), abs=1e-12)
    assert r["entropy"] == pytest.approx(ng.sequence_entropy(300), rel=1e-12)
    np.testing.assert_allclose(r["marginal_entropy"], marginal_entropies(ng, 300), atol=1e-12)


def test_leave_one_out_conditionals_equal_brute_force():
    h = random_hmm(4, 3, 1.5, 0.05, seed=7)
    L = 5
    X = all_sequences(3, L)
    q = hmm_joint(h.startprob_, h.transmat_, h.emissionprob_, L)
    rows = h.sample_sequences(20, L, seed=1)
    got = leave_one_out_log_conditionals(h, rows)
    for r, x in enumerate(rows):
        np.testing.assert_allclose(got[r], leave_one_out_by_enumeration(X, q, x), atol=1e-12)


def test_leave_one_out_on_sparse_hmm_and_bad_input():
    h = interval_hmm(4)  # 72 hidden states with sparse transitions (the scipy.sparse path)
    x = h.sample_sequences(5, 8, seed=0)
    np.testing.assert_allclose(leave_one_out_log_conditionals(h, x), 0.0, atol=1e-12)  # every token is determined
    bad = x.copy()
    bad[0, 1] ^= 1
    if h.in_support(bad[:1])[0]:
        bad[0, 0] ^= 1
    with pytest.raises(ValueError, match="outside the support"):
        leave_one_out_log_conditionals(h, bad)


def test_monte_carlo_intervals_contain_the_exact_values():
    h = random_hmm(4, 3, 1.5, 0.0, seed=3)
    L = 6
    ex = information_exact(h, L)
    mc = information_monte_carlo(h, L, num=3000, seed=2)
    for key in ("entropy", "total_correlation", "dual_total_correlation", "sum_mutual_information"):
        lo, hi = mc[key + "_ci"]
        assert lo <= ex[key] <= hi, key
    np.testing.assert_allclose(mc["marginal_entropy"], ex["marginal_entropy"], atol=1e-12)


def test_profile_identities():
    """TC, DTC and sum_i I(X_i; X_-i) from the information profile equal the direct values."""
    ng = random_ngram(3, 2, 2.0, 0.0, seed=9)
    L = 6
    f = information_profile(build_tables(ng, L))
    ex = information_exact(ng, L)
    assert f[0] == pytest.approx(0.0, abs=1e-12) and f[L] == pytest.approx(ex["entropy"], abs=1e-12)
    assert ex["total_correlation"] == pytest.approx(L * f[1] - f[L], abs=1e-12)
    assert ex["dual_total_correlation"] == pytest.approx(f[L] - L * (f[L] - f[L - 1]), abs=1e-12)
    assert ex["sum_mutual_information"] == pytest.approx(L * (f[1] - f[L] + f[L - 1]), abs=1e-12)
    assert np.all(np.diff(f, 2) <= 1e-12)  # concave (Han's inequality)


def test_interval_hmm_values_by_hand():
    """Interval HMM, one interval: H = C(l,2) log 2; H(X_i) = (l-1) log 2; every X_i is determined by the rest."""
    l = 3
    r = information_quantities(interval_hmm(l), l)
    assert r["entropy"] == pytest.approx(3 * np.log(2))
    np.testing.assert_allclose(r["marginal_entropy"], 2 * np.log(2))
    np.testing.assert_allclose(r["conditional_entropy"], 0.0, atol=1e-12)
    assert r["total_correlation"] == pytest.approx(3 * np.log(2))
    assert r["dual_total_correlation"] == pytest.approx(3 * np.log(2))


def test_bad_input():
    with pytest.raises(ValueError, match="method must be"):
        information_quantities(interval_hmm(2), 4, method="nope")
    with pytest.raises(ValueError, match="at most"):
        information_exact(interval_hmm(5), 12)
    with pytest.raises(ValueError, match="needs an n-gram"):
        information_ngram(interval_hmm(2), 4)
