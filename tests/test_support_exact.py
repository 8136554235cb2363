"""The exact output law on an explicit law's support (mdmt.constructions.reverse.support_exact).

Checked three ways: against the engines on partial assignments (exact.py, policy_exact.py) on an explicit law
listing a small n-gram's or HMM's full table, against a brute-force enumeration of every trajectory in exact
rationals written here from the definitions (every subset, every token, marginals by filtering the support), and
between the orbit-reduced and the plain computations.
"""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from mdmt.constructions.languages import random_hmm, random_ngram
from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.policies import (IID, Balanced, FixedOrder, RandomSizes, Sizes, Threshold, TopK,
                                                  balanced_sizes, parse_policy)
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy
from mdmt.constructions.reverse.schedules import reveal_probabilities
from mdmt.constructions.reverse.support_exact import greedy_table, orbits, support_law, symmetry_generators
from mdmt.constructions.reverse.tables import build_tables


def _explicit_from(language, L):
    """The explicit law listing the full table of an n-gram or HMM (its support and probabilities)."""
    t = build_tables(language, L)
    keep = t.q > 0
    return ExplicitLanguage(t.sequences[keep], t.q[keep], n_symbols=language.n_symbols, normalise=True), t, keep


NGRAM = random_ngram(3, 2, 2.0, 0.0, seed=1)
HMM = random_hmm(3, 3, 1.5, 0.0, seed=4)


@pytest.mark.parametrize("spec,N", [("uniform", 2), ("uniform", 3), ("confidence", 2), ("margin", 3),
                                    ("entropy", 2), ("threshold:0.5", None), ("threshold:0.3", 2), ("stride", 2),
                                    ("blocks", 2), ("random:tc", 3), ("entropy-sum:0.7", None)])
@pytest.mark.parametrize("lang", [NGRAM, HMM], ids=["ngram", "hmm"])
def test_agrees_with_the_policy_engine(lang, spec, N):
    L = 4
    ex, t, keep = _explicit_from(lang, L)
    pol = parse_policy(spec, N, cap=N is not None)
    ref = exact_policy_law(lang, L, pol, support_only=True).result.p[keep]
    law = support_law(ex, pol, rationals=False)
    # the explicit support is lexicographic, like the table's sequences
    assert np.array_equal(ex.support_, t.sequences[keep])
    np.testing.assert_allclose(law.p, ref, rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("N", [1, 2, 5])
def test_iid_schedules_agree_with_eq3_engine(N):
    L = 4
    ex, t, keep = _explicit_from(NGRAM, L)
    pi = reveal_probabilities("linear", N)
    ref = exact_output_law(NGRAM, L, pi).p[keep]
    law = support_law(ex, IID(pi))
    np.testing.assert_allclose(law.p, ref, rtol=1e-9, atol=1e-13)
    assert law.p_exact is None  # i.i.d. rates are real numbers: float only


# ----------------------------------------------------------------------------- brute force in rationals

def _marginals(X, W, partial):
    """q(x_i = v | revealed) for every i, v, as Fractions, by filtering the support."""
    rows = [k for k in range(len(X)) if all(X[k][i] == v for i, v in partial.items())]
    c = sum(W[k] for k in rows)
    if not c:
        return None  # off the support: no completion can be in it
    L, V = len(X[0]), max(max(r) for r in X) + 1
    return [[sum((W[k] for k in rows if X[k][i] == v), Fraction(0)) / c for v in range(V)] for i in range(L)]


def _brute_force(X, W, rule, decode):
    """{sequence: probability} of every output, by enumerating every trajectory (rule: the step rules)."""
    L = len(X[0])
    out = {}

    def go(partial, step, prob):
        masked = [i for i in range(L) if i not in partial]
        if not masked:
            key = tuple(partial[i] for i in range(L))
            out[key] = out.get(key, 0) + prob
            return
        P = _marginals(X, W, partial)
        if P is None:
            return
        kind, arg = rule(step, len(masked))
        conf = {i: max(P[i]) for i in masked}
        if kind == "size":
            choices = [(S, Fraction(1, math.comb(len(masked), arg))) for S in itertools.combinations(masked, arg)]
        else:
            if kind == "threshold":
                cnt = sum(1 for i in masked if conf[i] > arg) or 1
            else:
                cnt = min(arg, len(masked))
            # every cnt-subset with the largest confidences, uniformly among those
            best = [S for S in itertools.combinations(masked, cnt)]
            top = max(sum(conf[i] for i in S) for S in best)
            # a subset is a top-cnt subset when no outside position beats an inside one
            good = [S for S in best if min(conf[i] for i in S) >= max([conf[i] for i in masked if i not in S] or [0])]
            choices = [(S, Fraction(1, len(good))) for S in good]
            assert top >= 0
        for S, ps in choices:
            token_laws = []
            for i in S:
                if decode == "sample":
                    token_laws.append(P[i])
                else:
                    m = max(P[i])
                    ties = [v for v in range(len(P[i])) if P[i][v] == m]
                    token_laws.append([Fraction(1, len(ties)) if v in ties else Fraction(0) for v in range(len(P[i]))])
            for toks in itertools.product(*[range(len(t)) for t in token_laws]):
                pt = prob * ps
                for t, v in zip(token_laws, toks):
                    pt *= t[v]
                if pt:
                    new = dict(partial)
                    new.update(zip(S, toks))
                    go(new, step + 1, pt)

    go({}, 0, Fraction(1))
    return out


def _check_against_brute_force(X, W, policy, rule, decode):
    lang = ExplicitLanguage(X, [str(w) for w in W])
    law = support_law(lang, policy, decode=decode, rationals=True)
    ref = _brute_force([tuple(r) for r in lang.support_.tolist()], list(lang.exact_weights), rule, decode)
    for k, x in enumerate(lang.support_.tolist()):
        assert law.prob_exact(k) == ref.get(tuple(x), 0), (x, law.prob_exact(k), ref.get(tuple(x), 0))
        assert math.isclose(law.p[k], float(ref.get(tuple(x), 0)), rel_tol=1e-9, abs_tol=1e-15)
    assert law.ser_exact == 1 - sum(ref.get(tuple(x), 0) for x in lang.support_.tolist())


def _random_support(seed, M=7, L=4, V=3):
    rng = np.random.default_rng(seed)
    rows = set()
    while len(rows) < M:
        rows.add(tuple(int(v) for v in rng.integers(0, V, L)))
    X = sorted(rows)
    W = [Fraction(int(a), 1) for a in rng.integers(1, 5, M)]
    s = sum(W)
    return X, [w / s for w in W]


@pytest.mark.parametrize("decode", ["sample", "greedy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fixed_sizes_against_brute_force(seed, decode):
    X, W = _random_support(seed)
    sizes = [1, 2, 1]
    _check_against_brute_force(X, W, Sizes(sizes), lambda j, m: ("size", sizes[j]), decode)


@pytest.mark.parametrize("decode", ["sample", "greedy"])
@pytest.mark.parametrize("seed", [3, 4])
def test_confidence_topk_against_brute_force(seed, decode):
    X, W = _random_support(seed)
    sizes = [2, 1, 1]
    _check_against_brute_force(X, W, TopK("confidence", sizes=sizes), lambda j, m: ("topk", sizes[j]), decode)


@pytest.mark.parametrize("decode", ["sample", "greedy"])
@pytest.mark.parametrize("tau", [0.3, 0.55, 0.9])
def test_threshold_against_brute_force(tau, decode):
    X, W = _random_support(5, M=8)
    _check_against_brute_force(X, W, Threshold(tau), lambda j, m: ("threshold", Fraction(tau)), decode)


def test_shuffle_brute_force_and_symmetries():
    X = list(itertools.permutations(range(4)))
    W = [Fraction(1, 24)] * 24
    for sizes in ([2, 2], [1, 3], [3, 1], [4]):
        _check_against_brute_force(X, W, Sizes(sizes), lambda j, m, s=sizes: ("size", s[j]), "sample")


# ----------------------------------------------------------------------------- symmetries and rationals

def _latin(n=3):
    rows = list(itertools.permutations(range(n)))
    return [sum(r, ()) for r in itertools.product(rows, repeat=n)
            if all(len({r[i][j] for i in range(n)}) == n for j in range(n))]


def test_symmetries_are_verified_and_reduce_to_orbits():
    lat = ExplicitLanguage(_latin(3))  # the 12 Latin squares of order 3: one orbit under tokens, rows, columns
    gens = symmetry_generators(lat)
    names = {g for g, _ in gens}
    assert "tokens 0<->1" in names and "grid rows 0<->1" in names and "grid transpose" in names
    assert "positions 0<->1" not in names  # swapping two cells is no symmetry of a Latin square
    for _, img in gens:  # each image maps the support onto itself
        assert sorted(img.tolist()) == list(range(lat.n_sequences))
        assert {tuple(r) for r in lat.support_[img].tolist()} == {tuple(r) for r in lat.support_.tolist()}
    assert len(np.unique(orbits(lat.n_sequences, gens))) == 1
    # fixed orders do not treat positions alike: only token relabellings (12 squares / 3! = 2 orbits)
    assert len(np.unique(orbits(lat.n_sequences, symmetry_generators(lat, positions=False)))) == 2
    # a non-uniform law: one square weighs more, so no generator that moves it survives the check of the weights
    heavy = ExplicitLanguage(_latin(3), ["1/24"] * 11 + ["13/24"])
    hg = symmetry_generators(heavy)
    assert len(hg) < len(gens)
    for _, img in hg:
        assert img[11] == 11
    assert len(np.unique(orbits(12, hg))) > 1


@pytest.mark.parametrize("policy", [Balanced(3), TopK("confidence", 4), Threshold(0.4), FixedOrder("stride", 3)])
def test_orbits_give_the_plain_law(policy):
    lat = ExplicitLanguage(_latin(3))
    a = support_law(lat, policy, rationals=False)
    b = support_law(lat, policy, symmetries=False, rationals=False)
    np.testing.assert_allclose(a.p, b.p, rtol=1e-12, atol=1e-15)


def test_random_sizes_are_a_mixture():
    ex, t, keep = _explicit_from(NGRAM, 4)
    pol = RandomSizes(3, "uniform")
    ref = sum(w * support_law(ex, Sizes(s), rationals=False).p for w, s in pol.compositions(4))
    np.testing.assert_allclose(support_law(ex, pol).p, ref, rtol=1e-12)


def test_refusals():
    ex = ExplicitLanguage(list(itertools.permutations(range(3))))
    with pytest.raises(ValueError, match="decode 'beam'"):
        support_law(ex, Sizes([3]), decode="beam")
    with pytest.raises(ValueError, match="L = 4"):
        support_law(ex, Sizes([3]), length=4)
    with pytest.raises(ValueError, match="sum to 4, not L = 3"):
        support_law(ex, Sizes([2, 2]))


def test_remainder_conventions():
    assert balanced_sizes(5, 2).tolist() == [3, 2]  # LLaDA's get_num_transfer_tokens: the larger steps first
    assert balanced_sizes(5, 2, "last").tolist() == [2, 3]
    assert balanced_sizes(7, 3, "last").tolist() == [2, 2, 3]
    assert balanced_sizes(6, 3, "last").tolist() == [2, 2, 2]
    assert Balanced(2, "last").sizes_for(5).tolist() == [2, 3]
    assert TopK("confidence", 3, remainder="last").sizes_for(7).tolist() == [2, 2, 3]
    assert parse_policy("uniform", sizes=[1, 3]).sizes.tolist() == [1, 3]
    with pytest.raises(ValueError, match="remainder 'middle'"):
        balanced_sizes(5, 2, "middle")
    with pytest.raises(ValueError, match="explicit step sizes apply to"):
        parse_policy("threshold:0.5", sizes=[1, 2])


def test_greedy_sampler_matches_the_exact_law():
    # replace-random with n = 4 (one-hot words): greedy keeps every position while 3 or more are masked (the
    # marginal of "replaced" is 1/m < 1/2), and the last step of 2 ties: exactly one replaced w.p. 1/2
    lang = ExplicitLanguage(np.eye(4, dtype=int))
    assert support_law(lang, Balanced(2), decode="greedy").ser_exact == Fraction(1, 2)
    res = sample_policy(lang, 4, Balanced(2), 4000, seed=0, decode="greedy")
    ser = 1 - lang.in_support(res.samples).mean()
    assert abs(ser - 0.5) < 4 * math.sqrt(0.25 / 4000)
    P = np.array([[0.5, 0.5, 0.0], [0.2, 0.7, 0.1]])
    np.testing.assert_allclose(greedy_table(P), [[0.5, 0.5, 0], [0, 1, 0]])


def test_cli_done_when(capsys):
    from mdmt.cli import main

    assert main(["adaptive", "exact", "--language", "task:shuffle:n=4", "-L", "4", "--policy", "uniform",
                 "--sizes", "2,2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ser_exact"] == "5/8" and out["accuracy_exact"] == "3/8" and out["sizes"] == [2, 2]
    assert main(["exact", "--language", "task:shuffle:n=4", "-L", "4", "-N", "2", "--sizes", "2,2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ser_exact"] == "5/8"
    # --remainder last puts the larger steps last: n = 5, N = 3 -> sizes 1, 2, 2; greedy Replace Random then
    # ties at the last step of two (1/2), while the LLaDA convention 2, 2, 1 ends with a single position (1)
    for rem, acc in (("last", "1/2"), ("first", "1")):
        assert main(["adaptive", "exact", "--language", "task:replace-random:n=5", "-L", "5", "--policy", "uniform",
                     "-N", "3", "--remainder", rem, "--decode", "greedy", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["accuracy_exact"] == acc and out["sizes"] == ([1, 2, 2] if rem == "last" else [2, 2, 1])


@pytest.mark.parametrize("argv,message", [
    (["exact", "--language", "task:shuffle:n=4", "-L", "5", "-N", "2"], "--length 5: the explicit law"),
    (["adaptive", "exact", "--language", "task:shuffle:n=4", "-L", "4", "--policy", "uniform", "--sizes", "2,1"],
     "--sizes 2,1 sum to 3, not --length 4"),
    (["adaptive", "exact", "--language", "task:shuffle:n=4", "-L", "4", "-N", "3", "--policy", "uniform",
      "--sizes", "2,2"], "--steps 3 disagrees with --sizes 2,2"),
    (["adaptive", "exact", "--language", "preset:2gram", "-L", "3", "-N", "2", "--policy", "uniform", "--decode",
      "greedy"], "--decode greedy"),
    (["exact", "--language", "preset:2gram", "-L", "3", "-N", "2", "--sizes", "2,1"], "--sizes"),
    (["adaptive", "sample", "--language", "task:shuffle:n=4", "-L", "6", "-N", "2", "--policy", "uniform"],
     "--length 6: the explicit law"),
    (["adaptive", "exact", "--language", "task:shuffle:n=4", "-L", "4", "--policy", "threshold:0.5", "--sizes",
      "2,2"], "explicit step sizes apply to"),
    (["adaptive", "sample", "--language", "task:shuffle:n=4", "-L", "4", "-N", "2", "--decode", "greedy", "--kl"],
     "--kl estimates"),
])
def test_cli_errors(argv, message, capsys):
    from mdmt.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
