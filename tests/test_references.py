"""The independent evaluations of bounds/verification/references.py against definitions by enumeration: reveal-order
probabilities, E[D_j], the ordered partitions, KL(q || p_tau) and p_tau per reveal order."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from mdmt.bounds.verification import references as R
from mdmt.bounds.theorems.intervals import Iv
from mdmt.constructions.languages import random_hmm
from mdmt.constructions.languages.ngram import NGram
from mdmt.constructions.reverse.denoisers import UniformMixture
from mdmt.constructions.reverse.tables import build_tables, support_table

SCHEDULES = [
    [Fraction(1, 3)] * 3,
    [Fraction(1, 5), Fraction(1, 2), Fraction(3, 10)],
    [R.frac(0.125), R.frac(0.375), R.frac(0.5)],  # floats, taken as the rationals they are
    [Fraction(1, 10), Fraction(0), Fraction(9, 10)],  # a step that reveals nothing
    [Fraction(1)],
]


def _order(tau) -> tuple:
    """The ordered partition of an assignment: each position's rank among the distinct steps used."""
    steps = sorted(set(tau))
    return tuple(steps.index(t) for t in tau)


@pytest.mark.parametrize("pi", SCHEDULES)
@pytest.mark.parametrize("L", [1, 3, 4])
def test_reveal_order_probabilities_equal_the_sum_over_assignments(pi, L):
    parts = R.Partitions(L, L)
    probs = R.partition_probabilities(parts, pi, R.Exact)
    brute = {}
    for tau in itertools.product(range(len(pi)), repeat=L):
        p = math.prod((pi[t] for t in tau), start=Fraction(1))
        brute[_order(tau)] = brute.get(_order(tau), Fraction(0)) + p
    for b, p in zip(parts.blocks, probs):
        assert p == brute.get(tuple(int(v) for v in b), Fraction(0))
    assert sum(probs, Fraction(0)) == 1


@pytest.mark.parametrize("L, max_blocks", [(1, 1), (3, 3), (5, 5), (6, 2), (8, 3)])
def test_partitions_are_every_ordered_partition_in_lexicographic_order(L, max_blocks):
    b = R.Partitions(L, max_blocks).blocks
    expect = [t for t in itertools.product(range(min(L, max_blocks)), repeat=L) if set(t) == set(range(max(t) + 1))]
    assert b.tolist() == [list(t) for t in expect]


@pytest.mark.parametrize("n, L, pi", [(2, 5, SCHEDULES[0]), (3, 6, SCHEDULES[1]), (3, 4, SCHEDULES[2]),
                                      (4, 5, SCHEDULES[3]), (2, 4, SCHEDULES[4])])
def test_expected_dependencies_equal_the_mean_over_assignments(n, L, pi):
    taus = np.array(list(itertools.product(range(1, len(pi) + 1), repeat=L)), dtype=np.int64)
    D = R.dependencies_by_segments(n, taus)  # Definition B.5 per assignment
    D = np.pad(D, ((0, 0), (0, len(pi) - D.shape[1])))
    weights = [math.prod((pi[t - 1] for t in tau), start=Fraction(1)) for tau in taus.tolist()]
    brute = [sum((w * int(d[j]) for w, d in zip(weights, D)), Fraction(0)) for j in range(len(pi))]
    assert R.expected_dependencies_exact(n, L, pi, exact=True) == brute
    balls = R.expected_dependencies_exact(n, L, pi, exact=False)
    assert all(float(b.lower()) <= e <= float(b.upper()) for b, e in zip(balls, brute))


def _chain(exact: bool, lang, L):
    ref = R.Reference(lang, L, exact=exact)
    D = ref.table(support_table(build_tables(lang, L), UniformMixture(lang, 0.3)))
    return R.ChainEval(ref, D, R.Partitions(L, L))


def test_kl_per_reveal_order_is_the_definition_sequence_by_sequence():
    lang, L = NGram(2, np.array([0.25, 0.75]), np.array([[0.5, 0.5], [0.125, 0.875]])), 3  # small rationals
    ch = _chain(True, lang, L)
    q = ch.ref.qx
    for p in range(len(ch.parts.blocks)):
        kl = sum((q[m] * (R.LogSum.log(q[m]) - R.LogSum.log(ch.p_tau[m, p])) for m in range(len(q))), R.LogSum())
        assert (kl - ch.left[p]).sign() == 0  # exactly
        assert (ch.left[p] - ch.right[p]).sign() == 0  # Lemma B.3, exactly


def test_certified_chain_encloses_the_exact_one():
    lang, L = random_hmm(2, 2, 2.0, 0.05, seed=4), 3
    cx, ci = _chain(True, lang, L), _chain(False, lang, L)
    for p in range(len(cx.parts.blocks)):
        for exact, iv in ((cx.left[p], ci.left[p]), (cx.right[p], ci.right[p])):
            lo, hi = iv.item()
            assert (exact - R.LogSum(Fraction(lo))).sign() >= 0 and (R.LogSum(Fraction(hi)) - exact).sign() >= 0
        for m in range(len(cx.ref.qx)):
            lo, hi = ci.p_tau[m, p].item()
            assert Fraction(lo) <= cx.p_tau[m, p] <= Fraction(hi)


def test_p_tau_shares_partial_products_without_changing_a_bit():
    lang, L = random_hmm(3, 2, 2.0, 0.05, seed=7), 5
    ch = _chain(False, lang, L)
    PD = ch.ref.D_at(ch.D)
    pos = np.arange(L)
    direct = PD[:, pos[None, :], ch.parts.before].prod(axis=2)  # Iv.prod: 1 * D_0 * D_1 * ..., order by order
    assert isinstance(ch.p_tau, Iv)
    assert np.array_equal(ch.p_tau.lo, direct.lo) and np.array_equal(ch.p_tau.hi, direct.hi)


@pytest.mark.parametrize("lang, L", [(random_hmm(3, 2, 2.0, 0.1, seed=2), 3), (random_hmm(2, 3, 2.0, 0.1, seed=9), 2),
                                     (NGram(2, np.array([0.25, 0.75]), np.array([[0.5, 0.5], [0.125, 0.875]])), 4),
                                     (random_hmm(1, 2, 2.0, 0.1, seed=1), 1)])
def test_exact_law_is_the_sum_over_hidden_paths_in_rationals(lang, L):
    from mdmt.constructions.languages.ngram import as_hmm

    h = as_hmm(lang)
    pi, A, B = (np.vectorize(R.frac, otypes=[object])(a) for a in (h.startprob_, h.transmat_, h.emissionprob_))
    S, V = B.shape
    q = []
    for x in itertools.product(range(V), repeat=L):
        total = Fraction(0)
        for hs in itertools.product(range(S), repeat=L):
            w = pi[hs[0]] * B[hs[0], x[0]]
            for t in range(1, L):
                w *= A[hs[t - 1], hs[t]] * B[hs[t], x[t]]
            total += w
        q.append(total)
    z = sum(q, Fraction(0))
    assert R.exact_q(lang, L).tolist() == [v / z for v in q]
