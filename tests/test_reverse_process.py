"""Schedules, the exact output law p_N, the proof chain (C1, C2), denoisers, the oracle sampler, interval closed forms."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from constructions import NGram, interval_hmm, random_hmm, random_ngram
from constructions.denoisers import BitBiasedInterval, TemperedOracle, UniformMixture
from constructions.exact import (assignment_quantities, build_tables, chain_quantities, denoiser_table,
                                 exact_output_law, learning_error)
from constructions.interval_ser import mismatch_probability, oracle_ser, rho, ser_lower_bound
from constructions.sampler import assignment_kl_estimate, sample_mdm, sample_metrics
from constructions.schedules import (GridSchedule, expected_nfe, get_schedule, p_distinct, reveal_probabilities,
                                     reveal_rates)

# ----------------------------------------------------------------------------- schedules


def test_named_schedules_give_reveal_laws():
    for name in ["linear", "cosine", "loglinear"]:
        pi = get_schedule(name).reveal_probs(7)
        assert pi.shape == (7,) and np.all(pi >= 0) and pi.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(get_schedule("linear").reveal_probs(4), 0.25)
    # cosine: pi_1 = alpha(3/4) - alpha(1) = cos(3 pi / 8) (by hand)
    assert get_schedule("cosine").reveal_probs(4)[0] == pytest.approx(math.cos(3 * math.pi / 8))
    w = get_schedule("warmstart", eps=0.1).reveal_probs(5)
    np.testing.assert_allclose(w, [0.1, 0.225, 0.225, 0.225, 0.225])
    r = reveal_rates(np.full(4, 0.25))
    np.testing.assert_allclose(r, [1 / 4, 1 / 3, 1 / 2, 1])


def test_bad_schedules_are_rejected():
    with pytest.raises(ValueError, match="not strictly monotone"):
        GridSchedule([0, 0.5, 0.4, 1.0])
    with pytest.raises(ValueError, match="must run from t_0 = 0 to t_N = 1"):
        GridSchedule([0, 0.5, 0.9])
    with pytest.raises(ValueError, match=r"reveal probabilities sum to 0.9, not 1"):
        reveal_probabilities([0.5, 0.4], 2)
    with pytest.raises(ValueError, match=r"pi\[2\] = -0.1 is not a probability"):
        reveal_probabilities([1.1, -0.1], 2)
    with pytest.raises(ValueError, match="unknown schedule 'quadratic'"):
        get_schedule("quadratic")

    class Rising(type(get_schedule("linear"))):
        def alpha(self, t):
            return np.where(np.asarray(t) < 0.5, 1.0 - np.asarray(t), np.where(np.asarray(t) < 1, 0.9, 0.0))

    with pytest.raises(ValueError, match="is not non-increasing"):
        Rising().reveal_probs(4)


def test_p_distinct_and_nfe_closed_forms():
    # linear schedule: P_distinct = N!/((N-L)! N^L) (by hand)
    for N, L in [(8, 3), (100, 10), (5, 5)]:
        ref = math.exp(math.lgamma(N + 1) - math.lgamma(N - L + 1) - L * math.log(N))
        assert p_distinct(np.full(N, 1 / N), L) == pytest.approx(ref, rel=1e-10)
    assert p_distinct(np.full(3, 1 / 3), 4) == 0.0
    pi = np.array([0.2, 0.5, 0.3])
    brute = sum(np.prod(pi[list(t)]) for t in itertools.permutations(range(3), 2))
    assert p_distinct(pi, 2) == pytest.approx(brute)
    assert expected_nfe(np.full(4, 0.25), 2) == pytest.approx(4 * (1 - 0.75**2))
    # large N and L: no underflow, value between 0 and 1
    assert 0 < p_distinct(np.full(20000, 1 / 20000), 100) < 1


# ----------------------------------------------------------------------------- exact law


@st.composite
def small_languages(draw):
    seed = draw(st.integers(0, 2**31))
    kind = draw(st.sampled_from(["ngram", "hmm"]))
    if kind == "ngram":
        return random_ngram(2, draw(st.integers(2, 3)), 2.0, 0.05, seed)
    return random_hmm(draw(st.integers(1, 3)), draw(st.integers(2, 3)), 2.0, 0.05, seed)


@st.composite
def schedules(draw, max_N=3):
    N = draw(st.integers(1, max_N))
    w = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=N, max_size=N)))
    return w / w.sum()


def _brute_force(lang, L, pi, denoiser=None):
    """p_N and E_tau KL(q||p_tau) by enumerating every reveal assignment tau in [N]^L."""
    t = build_tables(lang, L)
    D = denoiser_table(t, denoiser, states=np.flatnonzero(t.q_ext > 0) if denoiser else None)
    V = t.V
    strides = np.array([t.stride(i) for i in range(L)])
    pN = np.zeros(len(t.q))
    ekl = 0.0
    m = t.q > 0
    for tau in itertools.product(range(1, len(pi) + 1), repeat=L):
        tau = np.array(tau)
        w = np.prod(pi[tau - 1])
        if w == 0:
            continue
        pt = np.ones(len(t.q))
        for j in np.unique(tau):
            digits = np.where(tau[None, :] < j, t.sequences, V)
            state = (digits * strides).sum(axis=1)
            for i in np.flatnonzero(tau == j):
                pt *= D[state, i, t.sequences[:, i]]
        pN += w * pt
        with np.errstate(divide="ignore"):
            ekl += w * np.sum(t.q[m] * (np.log(t.q[m]) - np.log(pt[m])))
    return t, pN, ekl


@given(small_languages(), st.integers(2, 3), schedules(), st.booleans())
def test_exact_law_equals_enumeration_over_assignments(lang, L, pi, perturbed):
    den = UniformMixture(lang, 0.2) if perturbed else None
    t, pN, ekl = _brute_force(lang, L, pi, den)
    full = exact_output_law(lang, L, pi, den, support_only=False)
    assert full.p.sum() == pytest.approx(1.0, abs=1e-12)
    m = t.q > 0
    np.testing.assert_allclose(full.p[m], pN[m], atol=1e-12)
    res = exact_output_law(lang, L, pi, den)
    np.testing.assert_allclose(res.p[m], pN[m], atol=1e-12)
    assert res.ser == pytest.approx(1 - pN[m].sum(), abs=1e-12)
    chain = chain_quantities(lang, L, pi, den)
    assert chain["expected_assignment_kl"] == pytest.approx(ekl, rel=1e-9, abs=1e-12)  # linearity formula
    assert res.kl_nats <= chain["expected_assignment_kl"] + 1e-12  # (C1)


@given(small_languages(), st.integers(2, 4), st.integers(0, 2**31), st.booleans())
def test_c2_is_an_identity_for_every_assignment(lang, L, seed, perturbed):
    den = TemperedOracle(lang, 0.6) if perturbed else None
    rng = np.random.default_rng(seed)
    tau = rng.integers(1, 4, size=L)
    aq = assignment_quantities(lang, tau, den)
    assert aq["kl_nats"] == pytest.approx(sum(aq["total_correlation"].values()) + sum(aq["learning"].values()),
                                          abs=1e-9)
    assert all(v >= -1e-12 for v in aq["total_correlation"].values())


@given(small_languages(), st.integers(2, 4))
def test_one_token_per_step_reproduces_q_exactly(lang, L):
    """With one token revealed per step (any permutation order), the oracle's p_tau is q: KL = 0, TC = 0."""
    tau = np.random.default_rng(L).permutation(L) + 1
    aq = assignment_quantities(lang, tau)
    assert abs(aq["kl_nats"]) < 1e-12
    assert all(abs(v) < 1e-12 for v in aq["total_correlation"].values())


def test_oracle_kl_and_ser_decrease_to_zero_with_more_steps():
    lang = random_ngram(3, 2, 2.0, 0.05, seed=1)
    kls, sers = [], []
    for N in [1, 2, 4, 16, 64, 512]:
        res = exact_output_law(lang, 6, np.full(N, 1 / N))
        kls.append(res.kl_nats)
        sers.append(res.ser)
    assert np.all(np.diff(kls) < 0) and np.all(np.diff(sers) < 0)
    assert kls[-1] < 0.01 and sers[-1] < 0.01 and sers[0] > 0.1


def test_exact_and_monte_carlo_agree():
    lang = random_ngram(2, 3, 2.0, 0.05, seed=2)
    L, pi = 5, np.array([0.3, 0.3, 0.4])
    res = exact_output_law(lang, L, pi)
    mc = sample_metrics(lang, sample_mdm(lang, L, pi, 20000, seed=0).samples, level=0.999)
    assert mc["ser_ci"][0] <= res.ser <= mc["ser_ci"][1]
    chain = chain_quantities(lang, L, pi)
    est = assignment_kl_estimate(lang, L, pi, 20000, seed=1, level=0.999)
    assert est["ci"][0] <= chain["expected_assignment_kl"] / L <= est["ci"][1]


def test_sampler_nfe_counts_steps_that_reveal_something():
    lang = random_hmm(4, 3, 2.0, 0.0, seed=0)
    res = sample_mdm(lang, 10, np.full(50, 1 / 50), 300, seed=3)
    assert res.samples.min() >= 0 and res.nfe.max() <= 10
    again = sample_mdm(lang, 10, np.full(50, 1 / 50), 300, seed=3)
    np.testing.assert_array_equal(res.samples, again.samples)
    assert abs(res.nfe.mean() - expected_nfe(np.full(50, 1 / 50), 10)) < 0.3


# ----------------------------------------------------------------------------- denoisers, interval closed forms


def test_learning_error_of_denoisers():
    h = interval_hmm(3)
    assert learning_error(h, 3, TemperedOracle(h, 1.0))["max"] < 1e-12
    u = 0.7
    le = learning_error(h, 3, BitBiasedInterval(h, 3, u))
    # at the all-masked context a token has 2 free bits: 2 * KL(Bern(1/2)||Bern(u)) (by hand)
    assert le["max"] == pytest.approx(-math.log(4 * u * (1 - u)), rel=1e-12)
    assert 0 < le["mean"] < le["max"]
    assert learning_error(h, 3, UniformMixture(h, 0.3))["max"] > 0


@given(schedules(max_N=4))
def test_interval_closed_form_equals_generic_evaluator(pi):
    h = interval_hmm(3)
    for L in (3, 6):
        assert exact_output_law(h, L, pi).ser == pytest.approx(oracle_ser(3, L, pi), abs=1e-12)
        assert oracle_ser(3, L, pi) >= ser_lower_bound(3, L, pi, 0.0) - 1e-12


def test_rho_by_hand_and_monte_carlo_at_large_L():
    # N = 2 equal steps, l = 2: P(same step) = 1/2, so rho = 1/2 + 1/2 * 1/2 = 3/4 (by hand)
    assert rho(2, [0.5, 0.5]) == pytest.approx(0.75)
    l, L, N = 3, 300, 150
    pi = np.full(N, 1 / N)
    res = sample_mdm(interval_hmm(l), L, pi, 1500, seed=0)
    mc = sample_metrics(interval_hmm(l), res.samples, level=0.999)
    assert mc["ser_ci"][0] <= oracle_ser(l, L, pi) <= mc["ser_ci"][1]


def test_bit_biased_denoiser_respects_the_theorem_44_bound():
    h = interval_hmm(3)
    for u in (0.55, 0.8):
        den = BitBiasedInterval(h, 3, u)
        eps = learning_error(h, 6, den)["max"]
        pi = np.array([0.5, 0.3, 0.2])
        assert exact_output_law(h, 6, pi, den).ser >= ser_lower_bound(3, 6, pi, eps) - 1e-12
    assert mismatch_probability(0.0) == 0.5
    with pytest.raises(ValueError, match="not a multiple"):
        oracle_ser(3, 7, [1.0])


def test_exact_rejects_too_large_instances():
    with pytest.raises(ValueError, match="partial assignments"):
        build_tables(random_ngram(2, 8, 2.0, 0.0, seed=0), 12)
