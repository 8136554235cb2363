"""The optimal fixed-size schedule (DP over the information profile) and the bisection order, against brute force."""

import itertools
import json
import math

import numpy as np
import pytest

from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.information import information_profile
from mdmt.constructions.reverse.optimal_schedule import (compositions, iid_profile_kl, kl_by_steps, optimal_sizes,
                                                         profile, sizes_kl)
from mdmt.constructions.reverse.policies import Bisect, OptimalSizes, Sizes, parse_policy
from mdmt.constructions.reverse.policies_beyond import bisect_order
from mdmt.constructions.reverse.policy_exact import exact_policy_law, teacher_forced
from mdmt.constructions.reverse.schedules import reveal_probabilities
from mdmt.constructions.reverse.tables import build_tables


def _profile(lang, L):
    return information_profile(build_tables(lang, L))


LANGS = [("2gram V=3", lambda: random_ngram(2, 3, 1.0, 0.0, seed=4)), ("3gram V=2", lambda: random_ngram(3, 2, 2.0, 0.0, seed=3)),
         ("hmm V=3", lambda: random_hmm(3, 3, 1.5, 0.05, seed=6)), ("interval l=2", lambda: interval_hmm(2))]


@pytest.mark.parametrize("name, make", LANGS, ids=[n for n, _ in LANGS])
def test_dp_equals_brute_force_over_every_composition(name, make):
    L = 7
    f = _profile(make(), L)
    best = kl_by_steps(f, L)
    for N in range(1, L + 1):
        sizes, kl = optimal_sizes(f, N)
        brute = min(sizes_kl(f, c) for c in compositions(L, N))  # all C(L-1, N-1) compositions
        assert kl == pytest.approx(brute, abs=1e-12)
        assert sizes_kl(f, sizes) == pytest.approx(kl, abs=1e-12) and sizes.sum() == L and sizes.min() >= 1
        assert best[N - 1] == pytest.approx(brute, abs=1e-12)
    assert np.all(np.diff(best) <= 1e-12)  # more steps never hurt (a concave profile)


def test_dp_optimum_is_the_trajectory_enumerations_optimum():
    """The closed form aside: the minimum over compositions of the teacher-forced E_tau KL (the policy chain's own
    enumeration of every trajectory), on an HMM, is the DP's optimum, attained by its sizes."""
    lang, L = random_hmm(3, 2, 1.5, 0.0, seed=2), 5
    f = _profile(lang, L)
    for N in (2, 3):
        kls = {c: teacher_forced(lang, L, Sizes(c))["assignment_kl"] for c in compositions(L, N)}
        sizes, kl = optimal_sizes(f, N)
        assert kl == pytest.approx(min(kls.values()), rel=1e-9)
        assert kls[tuple(sizes)] == pytest.approx(min(kls.values()), rel=1e-9)
        assert max(kls.values()) > min(kls.values()) + 1e-3  # the order of the sizes matters here


def test_markov_profile_is_the_exact_profile_of_a_bigram():
    lang = random_ngram(2, 3, 1.0, 0.1, seed=5)
    for L in (1, 2, 5, 7):
        assert profile(lang, L, "markov")["profile"] == pytest.approx(_profile(lang, L), abs=1e-12)


def test_monte_carlo_profile_covers_the_exact_kl():
    from mdmt.bounds.studies.schedule import schedule_study

    lang, L = random_hmm(3, 3, 1.5, 0.05, seed=6), 6
    exact = schedule_study(lang, L, 3, "exact")
    mc = schedule_study(lang, L, 3, "monte_carlo", num=3000, seed=1)
    for e, m in zip(exact["comparisons"], mc["comparisons"]):
        if e["schedule"] in ("uniform", "iid:linear"):
            assert m["kl_ci"][0] <= e["kl_nats"] <= m["kl_ci"][1], e["schedule"]


def test_iid_profile_kl_is_the_chain_quantity():
    """The binomial step law on the profile = mdmt's Appendix B evaluator of the i.i.d. process (Theorem 4.2's
    schedule and the linear one)."""
    lang, L = random_ngram(3, 2, 2.0, 0.0, seed=3), 6
    f = _profile(lang, L)
    for spec, N in (("warmstart:0.05", 3), ("linear", 4)):
        pi = reveal_probabilities(spec, N)
        cq = chain_quantities(lang, L, pi)
        assert iid_profile_kl(f, pi) == pytest.approx(cq["expected_assignment_kl"], rel=1e-9, abs=1e-12)


def test_optimal_policy_binds_the_dp_sizes():
    lang, L, N = random_hmm(3, 2, 1.5, 0.0, seed=2), 6, 3
    pol = parse_policy("optimal", N)
    assert isinstance(pol, OptimalSizes)
    bound = pol.bind(lang, L)
    sizes, kl = optimal_sizes(_profile(lang, L), N)
    assert bound.sizes.tolist() == sizes.tolist()
    assert teacher_forced(lang, L, pol)["assignment_kl"] == pytest.approx(kl, rel=1e-9)
    law = exact_policy_law(lang, L, pol, support_only=False)
    assert law.expected_nfe == N and law.result.kl_nats <= kl + 1e-12
    with pytest.raises(ValueError, match="needs the number of steps"):
        parse_policy("optimal")


# ----------------------------------------------------------------------------- bisection

def test_bisect_orders_as_literal_vectors():
    assert bisect_order(7).tolist() == [3, 2, 3, 1, 3, 2, 3]  # midpoints 3; 1, 5; then the rest
    assert bisect_order(4).tolist() == [2, 1, 2, 3]  # run 0..3: midpoint 1, then 0 and 2..3 (midpoint 2), then 3
    assert bisect_order(1).tolist() == [1]
    assert bisect_order(6, 2).tolist() == [3, 4, 1, 2, 3, 4]  # blocks {0,1} {2,3} {4,5}: middle block first
    assert bisect_order(5, 2).tolist() == [3, 4, 1, 2, 3]  # the short last block


@pytest.mark.parametrize("L", range(1, 70))
def test_bisect_takes_ceil_log2_steps(L):
    o = bisect_order(L)
    assert o.max() == math.ceil(math.log2(L + 1)) and set(o.tolist()) == set(range(1, o.max() + 1))


def _runs_each_step(order):
    """Brute force: at every step, the masked runs (maximal unrevealed segments) each get at most one position."""
    L = len(order)
    for j in range(1, order.max() + 1):
        revealed = order < j
        runs, cur = [], []
        for i in range(L):
            if revealed[i]:
                if cur:
                    runs.append(cur)
                cur = []
            else:
                cur.append(i)
        if cur:
            runs.append(cur)
        for r in runs:
            if sum(order[i] == j for i in r) > 1:
                return False
    return True


@pytest.mark.parametrize("L", range(1, 40))
def test_bisect_reveals_one_position_per_run(L):
    assert _runs_each_step(bisect_order(L))


BIGRAMS = [random_ngram(2, 2, 1.0, 0.0, seed=1), random_ngram(2, 3, 0.5, 0.1, seed=2), random_ngram(2, 3, 2.0, 0.0, seed=8)]


@pytest.mark.parametrize("k", range(len(BIGRAMS)))
def test_bisect_samples_every_bigram_exactly(k):
    lang = BIGRAMS[k]
    for L in range(1, 8 if lang.n_symbols == 2 else 7):
        law = exact_policy_law(lang, L, Bisect(), support_only=False)
        assert law.result.kl_nats == pytest.approx(0.0, abs=1e-12), L
        assert law.result.ser == pytest.approx(0.0, abs=1e-12)
        assert law.expected_nfe == math.ceil(math.log2(L + 1))


def test_bisect_blocks_sample_an_order_n_chain_exactly_and_single_positions_do_not():
    lang, L = random_ngram(3, 2, 1.0, 0.0, seed=3), 7
    assert exact_policy_law(lang, L, Bisect(2), support_only=False).result.kl_nats == pytest.approx(0.0, abs=1e-12)
    assert exact_policy_law(lang, L, Bisect(1), support_only=False).result.kl_nats > 1e-3  # separators of width 1 leak
    hmm = interval_hmm(3)  # hidden state: one revealed token does not separate
    assert exact_policy_law(hmm, 6, Bisect(), support_only=False).result.kl_nats > 0.1


def test_a_seeded_two_per_run_order_is_not_exact():
    """The test's teeth: an order revealing two positions of one run at one step (an off-by-one midpoint that
    reveals the run's ends together) is caught by the run check and by the KL."""
    lang, L = BIGRAMS[2], 5
    bad = np.array([2, 1, 1, 2, 2])  # step 1 reveals 1 and 2 (the midpoint and its neighbour) of the run 0..4
    assert not _runs_each_step(bad)
    from mdmt.constructions.reverse.policies import FixedOrder

    assert exact_policy_law(lang, L, FixedOrder("order", order=bad), support_only=False).result.kl_nats > 1e-4


# ----------------------------------------------------------------------------- the command

def test_schedule_command_json(capsys):
    assert main(["schedule", "--language", "preset:2gram", "-L", "6", "-N", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"sizes", "kl_nats", "comparisons", "profile_method"} <= set(out)
    f = _profile(__import__("mdmt").language_from_spec("preset:2gram"), 6)
    assert out["kl_nats"] == pytest.approx(min(sizes_kl(f, c) for c in compositions(6, 3)), abs=1e-12)
    names = [r["schedule"] for r in out["comparisons"]]
    assert names[:2] == ["optimal", "uniform"] and "iid:warmstart:0.05" in names and "random:tc" in names
    assert all(r["kl_nats"] >= out["kl_nats"] - 1e-12 for r in out["comparisons"] if r["sizes"] is not None)


def test_schedule_command_min_steps(capsys):
    assert main(["schedule", "--language", "preset:2gram", "-L", "8,16", "--target", "0.05", "--per-token", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["min_steps"]
    lang = __import__("mdmt").language_from_spec("preset:2gram")
    for r in rows:
        L = r["length"]
        kls = kl_by_steps(profile(lang, L)["profile"], L)
        n = r["optimal_steps"]
        assert kls[n - 1] <= 0.05 * L and (n == 1 or kls[n - 2] > 0.05 * L)
        assert r["uniform_steps"] >= n


@pytest.mark.parametrize("argv, words", [
    (["-L", "6"], "--steps is required"),
    (["-L", "6", "-N", "7"], "--steps 7 > --length 6"),
    (["-L", "6,7", "-N", "2"], "give one length"),
    (["-L", "6", "--target", "-1"], "--target must be a positive number"),
    (["-L", "6", "-N", "0"], "--steps must be an integer >= 1"),
])
def test_schedule_command_errors(capsys, argv, words):
    assert main(["schedule", "--language", "preset:2gram", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt schedule: error:") and words in err and err.count("\n") == 1
