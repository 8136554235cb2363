"""Information quantities of explicit laws, from the support: closed forms of the task presets (derived by hand
below), the Dyck law against its HMM form, the Monte Carlo path, and the work guard of the profile."""

import math

import numpy as np
import pytest

from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.languages.tasks import dyck_hmm
from mdmt.constructions.reverse.information import information_profile, information_quantities
from mdmt.constructions.reverse.tables import build_tables


@pytest.mark.parametrize("n", [3, 5, 7])
def test_shuffle_closed_forms(n):
    # uniform on n! permutations: H = log n!; each X_i uniform on n items (H(X_i) = log n); X_i is fixed by the
    # others (H(X_i | X_-i) = 0), so DTC = H, sum_i I = n log n, TC = n log n - log n!;
    # H(X_W) = log(n! / (n - u)!) for |W| = u (the ordered choices of u distinct items)
    lang = language_from_spec(f"task:shuffle:n={n}")
    info = information_quantities(lang, n)
    H = math.lgamma(n + 1)
    assert info["method"] == "exact"
    assert math.isclose(info["entropy"], H, rel_tol=1e-12)
    np.testing.assert_allclose(info["marginal_entropy"], math.log(n), rtol=1e-12)
    np.testing.assert_allclose(info["conditional_entropy"], 0, atol=1e-12)
    assert math.isclose(info["total_correlation"], n * math.log(n) - H, rel_tol=1e-12)
    assert math.isclose(info["dual_total_correlation"], H, rel_tol=1e-12)
    f = information_profile(lang)
    np.testing.assert_allclose(f, [math.lgamma(n + 1) - math.lgamma(n - u + 1) for u in range(n + 1)], atol=1e-12)


def test_parity_closed_forms():
    # even-parity words of length n: any n-1 positions are uniform and independent, the last is their parity:
    # f(u) = u log 2 for u < n, f(n) = (n-1) log 2; TC = log 2, DTC = H = (n-1) log 2
    n = 6
    lang = language_from_spec(f"task:parity:{n}")
    info = information_quantities(lang, n)
    assert math.isclose(info["total_correlation"], math.log(2), rel_tol=1e-12)
    assert math.isclose(info["dual_total_correlation"], (n - 1) * math.log(2), rel_tol=1e-12)
    np.testing.assert_allclose(information_profile(lang), [min(u, n - 1) * math.log(2) for u in range(n + 1)],
                               atol=1e-12)


@pytest.mark.parametrize("L", [4, 8])
def test_dyck_explicit_and_hmm_agree(L):
    explicit = language_from_spec(f"task:dyck:{L}")
    hmm = dyck_hmm(L)
    a = information_quantities(explicit, L)
    b = information_quantities(hmm, L, method="exact")  # V^L enumerated through the HMM's exact scores
    for key in ("entropy", "total_correlation", "dual_total_correlation", "sum_mutual_information"):
        assert math.isclose(a[key], b[key], rel_tol=1e-9, abs_tol=1e-12), key
    for key in ("marginal_entropy", "conditional_entropy"):
        np.testing.assert_allclose(a[key], b[key], atol=1e-9)
    np.testing.assert_allclose(information_profile(explicit), information_profile(build_tables(hmm, L)), atol=1e-9)


def test_monte_carlo_on_an_explicit_law():
    lang = language_from_spec("task:dyck:8")
    mc = information_quantities(lang, 8, method="monte_carlo", num=300, seed=1)
    exact = information_quantities(lang, 8)
    # uniform law: every sample has -log q(x) = log 14, so the Monte Carlo entropy is exact
    assert math.isclose(mc["entropy"], math.log(14), rel_tol=1e-12)
    np.testing.assert_allclose(mc["marginal_entropy"], exact["marginal_entropy"], atol=1e-12)
    assert mc["dual_total_correlation_ci"][0] - 1e-9 <= exact["dual_total_correlation"] <= mc["dual_total_correlation_ci"][1] + 1e-9


def test_guards():
    lang = language_from_spec("task:shuffle:n=5")
    with pytest.raises(ValueError, match="L = 4: this explicit law holds sequences of length 5 only"):
        information_quantities(lang, 4)
    with pytest.raises(ValueError, match="needs an n-gram"):
        information_quantities(lang, 5, method="windowed")


def test_the_profile_is_refused_beyond_the_work_limit(monkeypatch):
    monkeypatch.setenv("MDMT_MAX_WORK", "1e6")
    lang = language_from_spec("task:latin:4")  # 576 x 2^16 = 3.8e7 > 1e6
    with pytest.raises(ValueError, match=r"information profile of an explicit law of 576 sequences x 2\^16 subsets"):
        information_profile(lang)
    assert information_quantities(lang, 16)["method"] == "exact"  # O(M L^2): accepted
