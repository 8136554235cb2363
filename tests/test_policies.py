"""Policies beyond i.i.d. reveal steps: exact laws against brute-force trajectories, Monte Carlo against exact laws."""

import math

import numpy as np
import pytest
from scipy import stats

from mdmt.bounds.theorems.dependencies import expected_dependencies
from mdmt.bounds.studies.atlas import expected_dependencies_from_patterns
from mdmt.constructions.languages import random_hmm, random_ngram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.denoisers import TemperedOracle
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.policies import (IID, MARGIN, Balanced, EntropySum, FixedOrder, RandomSizes, Sizes,
                                                  Threshold, TopK, balanced_sizes, cut_weights, fixed_order,
                                                  parse_policy, policy_list, score_table, step_cut)
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


# The fixed orders of the brute-force checks, written out from their definitions (0-based position i, N steps):
# stride reveals i at step i mod N + 1, blocks at step floor(i N / L) + 1.
LITERAL_ORDERS = {
    ("stride", 3, 2): [1, 2, 1],
    ("stride", 4, 2): [1, 2, 1, 2],
    ("blocks", 3, 2): [1, 1, 2],  # floor(0), floor(2/3), floor(4/3)
    ("blocks", 4, 2): [1, 1, 2, 2],  # floor(0), floor(1/2), floor(1), floor(3/2)
}


def _rule_of(pol, L):
    if isinstance(pol, IID):
        return reference_rule("rate", rates=list(reveal_rates(pol.pi))), len(pol.pi)
    if isinstance(pol, FixedOrder):
        order = LITERAL_ORDERS[pol.kind, L, pol.N]
        return reference_rule("fixed", order=order), max(order)
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


def test_boundary_laws_by_hand():
    """w(u) proportional to 1/(L - u) (tc), 1/u (dtc), 1 (uniform), u = 1..L-1 (policies.py's docstring).
    L = 4: tc 1/3, 1/2, 1 (sum 11/6) -> 2/11, 3/11, 6/11; dtc 1, 1/2, 1/3 -> 6/11, 3/11, 2/11.
    L = 5: tc 1/4, 1/3, 1/2, 1 (sum 25/12) -> 3/25, 4/25, 6/25, 12/25."""
    np.testing.assert_allclose(cut_weights(4, "tc"), [2 / 11, 3 / 11, 6 / 11], rtol=1e-15)
    np.testing.assert_allclose(cut_weights(4, "dtc"), [6 / 11, 3 / 11, 2 / 11], rtol=1e-15)
    np.testing.assert_allclose(cut_weights(4, "uniform"), [1 / 3] * 3, rtol=1e-15)
    np.testing.assert_allclose(cut_weights(5, "tc"), [3 / 25, 4 / 25, 6 / 25, 12 / 25], rtol=1e-15)


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
    """Two code paths: the policy chain with i.i.d. rates vs exact.py, chain.py and bounds/theorems/dependencies.py."""
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


def test_fixed_orders_are_the_literal_vectors():
    """stride: position i (0-based) at step i mod N + 1, counted from the left end; blocks: step floor(i N / L) + 1,
    N contiguous blocks left to right.  Each vector is written out by hand from those formulas."""
    cases = {
        ("stride", 4, 3): [1, 2, 3, 1],
        ("stride", 5, 3): [1, 2, 3, 1, 2],
        ("stride", 6, 4): [1, 2, 3, 4, 1, 2],
        ("stride", 2, 5): [1, 2],
        ("blocks", 4, 3): [1, 1, 2, 3],  # 0, 3/4, 6/4, 9/4
        ("blocks", 5, 2): [1, 1, 1, 2, 2],  # 0, 2/5, 4/5, 6/5, 8/5
        ("blocks", 7, 3): [1, 1, 1, 2, 2, 3, 3],  # 0, 3/7, 6/7, 9/7, 12/7, 15/7, 18/7
        ("blocks", 6, 4): [1, 1, 2, 3, 3, 4],  # 0, 4/6, 8/6, 12/6, 16/6, 20/6
    }
    for (kind, L, N), want in cases.items():
        assert fixed_order(kind, L, N).tolist() == want, (kind, L, N)
        assert FixedOrder(kind, N).order(L).tolist() == want, (kind, L, N)
        assert parse_policy(kind, N).order(L).tolist() == want, (kind, L, N)


def test_margin_score_is_top_one_minus_top_two():
    """The margin of a marginal is its largest probability minus its second largest (not minus its smallest);
    the expected values are read off each row by hand."""
    P = np.array([[0.6, 0.4, 0.0, 0.0],  # 0.6 - 0.4
                  [0.5, 0.25, 0.25, 0.0],  # 0.5 - 0.25 (a tie for second place)
                  [0.1, 0.2, 0.3, 0.4],  # 0.4 - 0.3
                  [0.25, 0.25, 0.25, 0.25],  # 0
                  [0.05, 0.7, 0.15, 0.1]])  # 0.7 - 0.15
    np.testing.assert_allclose(score_table(P, MARGIN), [0.2, 0.25, 0.1, 0.0, 0.55], atol=1e-15)
    # three tokens, a batch of contexts: the score acts on the last axis only
    Q = np.array([[[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]], [[1 / 3, 1 / 3, 1 / 3], [0.0, 0.9, 0.1]]])
    np.testing.assert_allclose(score_table(Q, MARGIN), [[0.2, 0.4], [0.0, 0.8]], atol=1e-15)
    # the position a one-token step reveals: the largest margin is row 1 (0.25), not row 0 (whose top-1 minus the
    # smallest probability, 0.6, would be largest)
    scores = score_table(P[:4], MARGIN)
    pos = np.arange(4, dtype=np.int64)
    sure, tied = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    for c, want in ((1, [1]), (2, [0, 1])):  # two tokens: rows 1 and 0 (margins 0.25 and 0.2) ahead of rows 2 and 3
        ns, nt, r = step_cut(False, scores, pos, 4, c, sure, tied)
        assert r == nt, c  # no tie to break at random: every tied position is revealed
        assert sorted(sure[:ns].tolist() + tied[:nt].tolist()) == want, c
