"""Policies beyond i.i.d. reveal steps: exact laws against brute-force trajectories, Monte Carlo against exact laws."""

import math

import numpy as np
import pytest
from scipy import stats

from mdmt.bounds.dependencies import expected_dependencies
from mdmt.bounds.atlas import expected_dependencies_from_patterns
from mdmt.constructions.languages import random_hmm, random_ngram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.denoisers import TemperedOracle
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.policies import (IID, Balanced, EntropySum, FixedOrder, RandomSizes, Sizes, Threshold,
                                                  TopK, balanced_sizes, cut_weights, parse_policy, policy_list)
from mdmt.constructions.reverse.policy_exact import exact_policy_law, teacher_forced
from mdmt.constructions.reverse.policy_sampler import sample_policy, teacher_forced_estimate
from mdmt.constructions.reverse.schedules import reveal_probabilities, reveal_rates
from mdmt.constructions.reverse.tables import build_tables

from .reference import all_sequences, hmm_joint, masked_marginal, policy_law_by_trajectories, random_size_law, reference_rule

NGRAM = random_ngram(3, 2, 2.0, 0.0, seed=1)
HMM3 = random_hmm(3, 3, 1.5, 0.0, seed=4)


def _oracle_from_joint(X, q):
    def denoise(partial):
        V = int(X.max()) + 1
        out = np.zeros((len(partial), V))
        for i in range(len(partial)):
            for v in range(V):
                y = partial.copy()
                y[i] = v
                out[i, v] = masked_marginal(X, q, y) if partial[i] < 0 else float(v == partial[i])
            s = out[i].sum()
            out[i] = out[i] / s if s > 0 else 1.0 / V
        return out
    return denoise


def _rule_of(pol, L):
    if isinstance(pol, IID):
        return reference_rule("rate", rates=list(reveal_rates(pol.pi))), len(pol.pi)
    if isinstance(pol, FixedOrder):
        return reference_rule("fixed", order=list(pol.order(L))), int(pol.order(L).max())
    if isinstance(pol, TopK):
        return reference_rule("topk", score=pol.score, sizes=list(pol.sizes_for(L))), pol.N
    if isinstance(pol, Sizes):
        s = pol.sizes_for(L) if isinstance(pol, Balanced) else pol.sizes
        return reference_rule("sizes", sizes=list(s)), len(s)
    if isinstance(pol, Threshold):
        return reference_rule("threshold", tau=pol.tau, cap=pol.steps or 10 ** 9), pol.steps or L
    if isinstance(pol, EntropySum):
        return reference_rule("entropy-sum", gamma=pol.gamma), L
    raise AssertionError(pol)


POLICIES = ["iid", "uniform", "confidence", "margin", "entropy", "threshold:0.8", "entropy-sum:0.6", "stride", "blocks"]


@pytest.mark.parametrize("spec", POLICIES)
@pytest.mark.parametrize("lang_name", ["ngram", "hmm"])
def test_exact_law_equals_brute_force_trajectories(spec, lang_name):
    """p on V^L and E[NFE] from the numba chain equal the enumeration of every trajectory (tests/reference.py)."""
    lang, L = (NGRAM, 4) if lang_name == "ngram" else (HMM3, 3)
    V = lang.n_symbols
    X = all_sequences(V, L)
    H = lang.to_hmm()
    q = hmm_joint(H.startprob_, H.transmat_, H.emissionprob_, L)
    pol = parse_policy(spec, 2)
    rule, steps = _rule_of(pol, L)
    p_ref, nfe_ref = policy_law_by_trajectories(X, _oracle_from_joint(X, q), rule, steps)
    law = exact_policy_law(lang, L, pol, support_only=False)
    np.testing.assert_allclose(law.result.p, p_ref, atol=1e-12)
    assert law.expected_nfe == pytest.approx(nfe_ref, abs=1e-12)


@pytest.mark.parametrize("spec", ["confidence", "threshold:0.7", "stride", "uniform"])
def test_exact_law_with_another_denoiser_equals_brute_force(spec):
    """The policy reads the denoiser's own marginals (here a tempered oracle), not the oracle's."""
    L = 4
    den = TemperedOracle(NGRAM, 0.6)
    X = all_sequences(2, L)
    pol = parse_policy(spec, 2)
    rule, steps = _rule_of(pol, L)
    p_ref, _ = policy_law_by_trajectories(X, lambda x: den(x[None])[0], rule, steps)
    law = exact_policy_law(NGRAM, L, pol, denoiser=den, support_only=False)
    np.testing.assert_allclose(law.result.p, p_ref, atol=1e-12)


def test_random_sizes_law_equals_enumeration_of_draws():
    """The inclusion-exclusion law of the step sizes equals the enumeration of every boundary draw, for each law."""
    L, N = 6, 4
    for law in ("tc", "dtc", "uniform"):
        ref = random_size_law(L, N, cut_weights(L, law))
        got = {tuple(s.tolist()): p for p, s in RandomSizes(N, law).compositions(L)}
        assert set(got) == set(ref)
        for k in ref:
            assert got[k] == pytest.approx(ref[k], abs=1e-12)
    # the sampler draws the same law
    rng = np.random.default_rng(3)
    _, k_rows = RandomSizes(N, "dtc").sampling_plan(L, 40000, rng)
    ref = random_size_law(L, N, cut_weights(L, "dtc"))
    keys = [tuple(int(v) for v in r if v > 0) for r in k_rows]
    for sizes, p in ref.items():
        freq = sum(k == sizes for k in keys) / len(keys)
        assert abs(freq - p) < 4.5 * math.sqrt(p * (1 - p) / len(keys)) + 1e-4, (sizes, freq, p)


def test_random_sizes_exact_law_is_the_mixture():
    L, pol = 4, RandomSizes(3, "tc")
    X = all_sequences(2, L)
    H = NGRAM.to_hmm()
    q = hmm_joint(H.startprob_, H.transmat_, H.emissionprob_, L)
    ref = np.zeros(len(X))
    for p, s in pol.compositions(L):
        pr, _ = policy_law_by_trajectories(X, _oracle_from_joint(X, q), reference_rule("sizes", sizes=list(s)), len(s))
        ref += p * pr
    np.testing.assert_allclose(exact_policy_law(NGRAM, L, pol, support_only=False).result.p, ref, atol=1e-12)


def test_iid_policy_matches_the_paper_evaluators():
    """Two code paths: the policy chain with i.i.d. rates vs exact.py, chain.py and bounds/dependencies.py."""
    L, N = 6, 3
    pi = reveal_probabilities("cosine", N)
    law = exact_policy_law(NGRAM, L, IID(pi))
    ref = exact_output_law(NGRAM, L, pi)
    np.testing.assert_allclose(law.result.p, ref.p, atol=1e-13)
    den = TemperedOracle(NGRAM, 1.4)
    tables = build_tables(NGRAM, L)
    tf = teacher_forced(NGRAM, L, IID(pi), denoiser=den, tables=tables, track_patterns=True)
    cq = chain_quantities(NGRAM, L, pi, denoiser=den, tables=tables)
    assert tf["assignment_kl"] == pytest.approx(cq["expected_assignment_kl"], rel=1e-10)
    assert tf["total_correlation"] == pytest.approx(cq["expected_total_correlation"], rel=1e-10)
    assert tf["learning"] == pytest.approx(cq["expected_learning_term"], rel=1e-10)
    assert expected_dependencies_from_patterns(3, L, tf["pattern_law"]) == pytest.approx(
        expected_dependencies(3, L, pi), rel=1e-10)


def test_teacher_forced_bounds_the_exact_kl_and_is_kl_for_deterministic_orders():
    L = 6
    for spec in ("uniform", "confidence", "threshold:0.9", "random:dtc"):
        pol = parse_policy(spec, 3)
        kl = exact_policy_law(NGRAM, L, pol).result.kl_nats
        assert kl <= teacher_forced(NGRAM, L, pol)["assignment_kl"] + 1e-12
    pol = FixedOrder("stride", 3)  # one reveal sequence: p = p_tau and the C2 identity is an equality
    tf = teacher_forced(NGRAM, L, pol)
    assert exact_policy_law(NGRAM, L, pol).result.kl_nats == pytest.approx(tf["assignment_kl"], rel=1e-10)


def _pooled_chi2(p, counts):
    """p-value of a chi-square test with cells of expected count < 5 pooled."""
    n = counts.sum()
    e = p * n
    small = e < 5
    obs = np.concatenate([counts[~small], [counts[small].sum()]])
    exp = np.concatenate([e[~small], [e[small].sum()]])
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue


@pytest.mark.parametrize("spec", ["iid", "random:tc", "margin", "threshold:0.9", "entropy-sum:0.5", "blocks"])
def test_monte_carlo_agrees_with_the_exact_law(spec):
    L, num = 5, 6000
    pol = parse_policy(spec, 3)
    law = exact_policy_law(NGRAM, L, pol, support_only=False)
    res = sample_policy(NGRAM, L, pol, num, seed=11)
    counts = np.bincount(res.samples @ (2 ** np.arange(L - 1, -1, -1)), minlength=2 ** L)
    assert _pooled_chi2(law.result.p, counts) > 1e-3
    half = 4 * res.nfe.std() / math.sqrt(num) + 1e-12
    assert abs(res.nfe.mean() - law.expected_nfe) <= half


def test_teacher_forced_estimate_agrees_with_the_exact_expectation():
    L = 6
    for spec in ("confidence", "random:tc"):
        pol = parse_policy(spec, 3)
        exact = teacher_forced(NGRAM, L, pol)["assignment_kl"] / L
        est = teacher_forced_estimate(NGRAM, L, pol, 4000, seed=5)
        lo, hi = est["ci"]
        width = hi - lo
        assert lo - width < exact < hi + width  # 95% interval, widened to keep a fixed seed far from the edge


def test_sampler_is_seeded_and_batch_independent():
    pol = TopK("entropy", 3)
    a = sample_policy(NGRAM, 9, pol, 300, seed=7, batch=64)
    b = sample_policy(NGRAM, 9, pol, 300, seed=7, batch=1000)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.reveal_step, b.reveal_step)
    assert not np.array_equal(a.samples, sample_policy(NGRAM, 9, pol, 300, seed=8).samples)
    # fixed sizes: exactly s_j positions per step
    steps = sample_policy(NGRAM, 9, Balanced(4), 50, seed=1).reveal_step
    for row in steps:
        assert np.bincount(row, minlength=5)[1:].tolist() == balanced_sizes(9, 4).tolist()


def test_threshold_cap_and_every_step_reveals_something():
    pol = Threshold(0.99, steps=2)
    res = sample_policy(NGRAM, 8, pol, 200, seed=2)
    assert res.reveal_step.max() <= 2 and np.all(res.nfe <= 2)
    res = sample_policy(NGRAM, 8, EntropySum(0.01), 200, seed=2)
    assert np.all(res.nfe <= 8)


def test_specs_and_bad_input():
    assert [p.spec for p in policy_list("iid,uniform,random:dtc,margin,threshold:0.5,entropy-sum:2,stride", 4)] == [
        "iid", "uniform", "random:dtc", "margin", "threshold:0.5", "entropy-sum:2", "stride"]
    assert parse_policy("threshold:0.5", 4).steps is None and parse_policy("threshold:0.5", 4, cap=True).steps == 4
    assert len(parse_policy("iid:0.5,0.5").pi) == 2
    for spec, msg in [("confidence", "needs the number of steps"), ("topk", "expected one of"),
                      ("threshold", "threshold:TAU"), ("threshold:1.5", "tau must be in"),
                      ("entropy-sum:-1", "gamma must be"), ("random:xx", "law 'xx'"), ("threshold:abc", "not a number")]:
        with pytest.raises(ValueError, match=msg):
            parse_policy(spec, None if spec == "confidence" else 4)
    with pytest.raises(ValueError, match="sum to 5, not L = 4"):
        exact_policy_law(NGRAM, 4, Sizes([2, 3]))
    with pytest.raises(ValueError, match="N = 5 steps > L = 4"):
        balanced_sizes(4, 5)
    with pytest.raises(ValueError, match="not a positive integer"):
        Sizes([2, 0])
    with pytest.raises(ValueError, match="denoiser returned shape"):
        sample_policy(NGRAM, 4, Balanced(2), 3, denoiser=lambda X: np.ones((len(X), 4, 3)) / 3)
