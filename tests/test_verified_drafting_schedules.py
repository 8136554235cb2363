"""Draft schedules of verified drafting (verified:B1,B2,..., verified:adaptive[:B0]): law = q, E[calls] by brute force."""

import functools
import itertools
import json
import math

import numpy as np
import pytest

from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.languages.hmm import HMM
from mdmt.constructions.reverse import verified
from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.reverse.policies import parse_policy, split_policies
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy

LANGS = [("3gram V=2", lambda: random_ngram(3, 2, 2.0, 0.1, seed=3)), ("hmm V=2", lambda: random_hmm(3, 2, 1.5, 0.0, seed=2)),
         ("interval l=2", lambda: interval_hmm(2)), ("2gram V=3", lambda: random_ngram(2, 3, 1.0, 0.0, seed=1))]


def list_rule(sizes):
    """Block of a round from the full-acceptance flags of the rounds before it: sizes[r], the last repeated."""
    return lambda history, L: sizes[min(len(history), len(sizes) - 1)]


def adaptive_rule(b0):
    """B0, then B + 2 (at most L) after a round whose drafts were all accepted, max(B - 1, 1) after a rejection."""
    def rule(history, L):
        b = b0
        for full in history:
            b = min(b + 2, L) if full else max(b - 1, 1)
        return b
    return rule


def brute_force(lang, L, rule):
    """From the definitions, independently of verified.py: conditionals summed from q on V^L by hand, every full
    draft vector of a block enumerated, accept/reject decided position by position, the block of a round from the
    whole history of the rounds before it.  (law dict, E[rounds])."""
    V = lang.n_symbols
    grid = np.array(list(itertools.product(range(V), repeat=L)))
    qfull = np.exp(lang.log_likelihood(grid))

    @functools.lru_cache(maxsize=None)
    def cond_at(known, k):  # q(x_k = v | x_{<len(known)} = known)
        hit = np.all(grid[:, :len(known)] == known, axis=1)
        return np.array([qfull[hit & (grid[:, k] == v)].sum() for v in range(V)]) / qfull[hit].sum()

    law, rounds = {}, [0.0]

    def run(prefix, mass, history):
        if len(prefix) == L:
            law[prefix] = law.get(prefix, 0.0) + mass
            return
        rounds[0] += mass
        i = len(prefix)
        e = min(i + rule(history, L), L)
        d = [cond_at(prefix, k) for k in range(i, e)]
        for y in itertools.product(range(V), repeat=e - i):
            py = math.prod(d[k][y[k]] for k in range(e - i))
            if py == 0:
                continue
            paths, done = [(1.0, prefix)], []
            for k in range(e - i):
                nxt = []
                for w, cur in paths:
                    t = cond_at(cur, i + k)
                    a = min(1.0, t[y[k]] / d[k][y[k]])
                    if a > 0:
                        nxt.append((w * a, cur + (y[k],)))
                    if a < 1:
                        res = np.maximum(t - d[k], 0)
                        if res.sum() == 0:  # t = d up to rounding: a = 1 - 1e-16, nothing to resample
                            continue
                        res = res / res.sum()
                        done += [(w * (1 - a) * res[z], cur + (z,)) for z in range(V) if res[z] > 0]
                paths = nxt
            for w, cur in paths:
                run(cur, mass * py * w, history + (True,))
            for w, cur in done:
                run(cur, mass * py * w, history + (False,))

    run((), 1.0, ())
    return law, rounds[0]


SCHEDULES = [("verified:1,2,4", list_rule([1, 2, 4])), ("verified:3,1", list_rule([3, 1])),
             ("verified:2,2,5", list_rule([2, 2, 5])), ("verified:adaptive", adaptive_rule(2)),
             ("verified:adaptive:1", adaptive_rule(1)), ("verified:adaptive:3", adaptive_rule(3))]


@pytest.mark.parametrize("name, make", LANGS, ids=[n for n, _ in LANGS])
def test_output_law_is_the_language_and_calls_match_the_brute_force(name, make):
    lang = make()
    L = 4 if lang.n_symbols == 3 else 5
    for spec, rule in SCHEDULES:
        law = exact_policy_law(lang, L, parse_policy(spec), support_only=False)
        assert np.abs(law.result.p - law.result.q).max() < 1e-12, spec
        ref, rounds = brute_force(lang, L, rule)
        assert law.expected_nfe == pytest.approx(rounds, rel=1e-12), spec
        seqs = [tuple(s) for s in law.result.sequences.tolist()]
        assert np.allclose([ref.get(s, 0.0) for s in seqs], law.result.p, atol=1e-12), spec


def test_hand_counts_on_independent_tokens():
    """Independent tokens: every draft is accepted (the marginals are the causal conditionals), so the rounds are
    fixed by hand at L = 10: 1, 2, 4, 4 -> 4 rounds; adaptive from 2: 2, 4, then 6 (4 left) -> 3 rounds; adaptive
    from 1: 1, 3, 5, then 7 (1 left) -> 4 rounds; a fixed B = 3: ceil(10 / 3) = 4."""
    lang = HMM([1.0], [[1.0]], [[0.3, 0.7]])
    for spec, rounds in (("verified:1,2,4", 4), ("verified:adaptive", 3), ("verified:adaptive:1", 4), ("verified:3", 4)):
        law = exact_policy_law(lang, 10, parse_policy(spec), support_only=False)
        assert law.expected_nfe == pytest.approx(rounds, abs=1e-12), spec
        assert np.abs(law.result.p - law.result.q).max() < 1e-12
        assert (sample_policy(lang, 10, parse_policy(spec), 50, seed=0).nfe == rounds).all(), spec


def test_a_wrong_adaptive_rule_is_caught(monkeypatch):
    """Seeded mistake: growing after a rejection and shrinking after a full acceptance (the rule upside down)
    changes E[calls] away from the brute force's (the law stays q: any schedule is exact)."""
    lang, L = random_ngram(3, 2, 2.0, 0.1, seed=3), 5
    _, rounds = brute_force(lang, L, adaptive_rule(2))
    good = exact_policy_law(lang, L, parse_policy("verified:adaptive"), support_only=False).expected_nfe
    assert good == pytest.approx(rounds, rel=1e-12)
    after = verified.DraftSchedule.after
    monkeypatch.setattr(verified.DraftSchedule, "after", lambda self, ctrl, full, L: after(self, ctrl, np.logical_not(full), L))
    bad = exact_policy_law(lang, L, parse_policy("verified:adaptive"), support_only=False)
    assert abs(bad.expected_nfe - rounds) > 1e-3
    assert np.abs(bad.result.p - bad.result.q).max() < 1e-12


def test_a_schedule_that_forgets_its_round_is_caught(monkeypatch):
    """Seeded mistake: a list schedule that never advances (every round takes B1) is caught by the brute force."""
    lang, L = interval_hmm(2), 5
    _, rounds = brute_force(lang, L, list_rule([1, 2, 4]))
    monkeypatch.setattr(verified.DraftSchedule, "after", lambda self, ctrl, full, L: ctrl)
    law = exact_policy_law(lang, L, parse_policy("verified:1,2,4"), support_only=False)
    assert abs(law.expected_nfe - rounds) > 1e-3


@pytest.mark.parametrize("spec", ["verified:adaptive", "verified:1,2,4"])
def test_monte_carlo_agrees_with_the_exact_law(spec):
    lang, L = interval_hmm(3), 6
    exact = exact_policy_law(lang, L, parse_policy(spec), support_only=False)
    res = sample_policy(lang, L, parse_policy(spec), 3000, seed=4)
    _, a, b = mean_interval(res.nfe, 0.999)
    assert a <= exact.expected_nfe <= b
    assert lang.in_support(res.samples).all()
    seqs, q = exact.result.sequences, exact.result.q
    for i in range(L - 1):
        for u, v in itertools.product(range(lang.n_symbols), repeat=2):
            p = q[(seqs[:, i] == u) & (seqs[:, i + 1] == v)].sum()
            f = np.mean((res.samples[:, i] == u) & (res.samples[:, i + 1] == v))
            assert abs(f - p) <= 5 * math.sqrt(p * (1 - p) / len(res.samples)) + 1e-9, (i, u, v)


def test_lists_keep_the_block_sizes_together():
    assert split_policies("uniform,verified:1,2,4,verified:adaptive,3,ar") == [
        "uniform", "verified:1,2,4", "verified:adaptive", "3", "ar"]
    assert [p.spec for p in (parse_policy("verified:2"), parse_policy("verified:2,3"), parse_policy("verified:adaptive"),
                             parse_policy("verified:adaptive:5"))] == [
        "verified:2", "verified:2,3", "verified:adaptive:2", "verified:adaptive:5"]


def test_policies_everywhere(capsys):
    from mdmt.bounds.refutation.quantities import instance_quantities
    from mdmt.bounds.studies.atlas import atlas

    lang = interval_hmm(2)
    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "6", "--policy", "verified:adaptive:1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kl_nats"] == pytest.approx(0.0, abs=1e-12) and out["ser"] == pytest.approx(0.0, abs=1e-12)
    assert out["expected_nfe"] == pytest.approx(brute_force(lang, 6, adaptive_rule(1))[1], rel=1e-12)
    rows = {r["process"]: r for r in atlas(lang, 5, 2, "uniform,verified:1,2,verified:adaptive")["rows"]}
    assert set(rows) == {"uniform", "verified:1,2", "verified:adaptive:2"}
    assert rows["verified:1,2"]["expected_nfe"] == pytest.approx(brute_force(lang, 5, list_rule([1, 2]))[1])
    assert rows["verified:adaptive:2"]["kl"] == pytest.approx(0.0, abs=1e-12)
    assert instance_quantities(lang, 4, "verified:adaptive", 2)["KL"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("spec, words", [("verified:2,0", "the block size B must be a positive integer, got '0'"),
                                         ("verified:adaptive:0", "first block size B0 must be a positive integer"),
                                         ("verified:adaptive:x", "got 'x'")])
def test_bad_specs(capsys, spec, words):
    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "--policy", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt adaptive: error:") and words in err and err.count("\n") == 1
