"""Verified drafting (verified:B): the output law is exactly the language's; E[calls] against a brute force."""

import functools
import itertools
import json
import math

import numpy as np
import pytest

from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse import verified
from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.reverse.policies import parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy

LANGS = [("2gram V=2", lambda: random_ngram(2, 2, 1.0, 0.0, seed=1)), ("3gram V=2", lambda: random_ngram(3, 2, 2.0, 0.1, seed=3)),
         ("hmm V=2", lambda: random_hmm(3, 2, 1.5, 0.0, seed=2)), ("interval l=2", lambda: interval_hmm(2))]


def brute_force(lang, L, B):
    """From the definitions, independently of verified.py: conditionals summed from q on V^L by hand, every
    full draft vector of a block enumerated, accept/reject decided position by position.  (law dict, E[rounds])."""
    V = lang.n_symbols
    grid = np.array(list(itertools.product(range(V), repeat=L)))
    qfull = np.exp(lang.log_likelihood(grid))  # q on V^L, summed by hand below

    @functools.lru_cache(maxsize=None)
    def q(known):  # q(x_0..x_{m-1} = known, the rest summed out)
        return float(qfull[np.all(grid[:, :len(known)] == known, axis=1)].sum())

    @functools.lru_cache(maxsize=None)
    def cond_at(known, k):  # q(x_k = v | x_{<len(known)} = known), positions len(known)..k-1 summed out
        hit = np.all(grid[:, :len(known)] == known, axis=1)
        return np.array([qfull[hit & (grid[:, k] == v)].sum() for v in range(V)]) / q(known)

    law, rounds = {}, [0.0]

    def run(prefix, mass):
        if len(prefix) == L:
            law[prefix] = law.get(prefix, 0.0) + mass
            return
        rounds[0] += mass
        i, e = len(prefix), min(len(prefix) + B, L)
        d = [cond_at(prefix, k) for k in range(i, e)]
        for y in itertools.product(range(V), repeat=e - i):
            py = math.prod(d[k][y[k]] for k in range(e - i))
            if py == 0:
                continue
            # walk the block: a list of (probability, revealed tokens) outcomes of the verification
            paths = [(1.0, prefix)]
            done = []
            for k in range(e - i):
                nxt = []
                for w, cur in paths:
                    t = cond_at(cur, i + k)
                    a = min(1.0, t[y[k]] / d[k][y[k]])
                    if a > 0:
                        nxt.append((w * a, cur + (y[k],)))
                    if a < 1:
                        res = np.maximum(t - d[k], 0)
                        res = res / res.sum()
                        done += [(w * (1 - a) * res[z], cur + (z,)) for z in range(V) if res[z] > 0]
                paths = nxt
            for w, cur in paths + done:
                run(cur, mass * py * w)

    run((), 1.0)
    return law, rounds[0]


@pytest.mark.parametrize("name, make", LANGS, ids=[n for n, _ in LANGS])
def test_output_law_is_the_language_and_rounds_match_the_brute_force(name, make):
    lang, L = make(), 4
    for B in (1, 2, 3, 5):
        law = exact_policy_law(lang, L, parse_policy(f"verified:{B}"), support_only=False)
        assert np.abs(law.result.p - law.result.q).max() < 1e-12, B
        assert law.result.kl_nats == pytest.approx(0.0, abs=1e-12) and law.result.ser == pytest.approx(0.0, abs=1e-12)
        ref, rounds = brute_force(lang, L, B)
        assert law.expected_nfe == pytest.approx(rounds, rel=1e-12), B
        seqs = [tuple(s) for s in law.result.sequences.tolist()]
        assert np.allclose([ref.get(s, 0.0) for s in seqs], law.result.p, atol=1e-12)
    assert exact_policy_law(lang, L, parse_policy("verified:1"), support_only=False).expected_nfe == pytest.approx(L)


def test_upside_down_acceptance_is_caught(monkeypatch):
    """Seeded mistake: min(1, d/t) instead of min(1, t/d) breaks the law (the exactness test has teeth)."""
    lang, L = random_ngram(3, 2, 2.0, 0.1, seed=3), 4
    monkeypatch.setattr(verified, "accept_prob", lambda d, t: min(1.0, d / t) if t > 0 else 1.0)
    law = exact_policy_law(lang, L, parse_policy("verified:3"), support_only=False)
    assert np.abs(law.result.p - law.result.q).max() > 1e-3


def test_monte_carlo_rounds_and_support():
    lang, L, B = interval_hmm(3), 6, 3
    exact = exact_policy_law(lang, L, parse_policy(f"verified:{B}"), support_only=False)
    res = sample_policy(lang, L, parse_policy(f"verified:{B}"), 2000, seed=3)
    m, a, b = mean_interval(res.nfe, 0.999)
    assert a <= exact.expected_nfe <= b
    assert lang.in_support(res.samples).all()
    # the sampler's pair laws (adjacent positions) against q's, within 5 standard errors
    seqs, q = exact.result.sequences, exact.result.q
    for i in range(L - 1):
        for u, v in itertools.product(range(lang.n_symbols), repeat=2):
            p = q[(seqs[:, i] == u) & (seqs[:, i + 1] == v)].sum()
            f = np.mean((res.samples[:, i] == u) & (res.samples[:, i + 1] == v))
            assert abs(f - p) <= 5 * math.sqrt(p * (1 - p) / len(res.samples)) + 1e-9, (i, u, v)


def test_adaptive_exact_reports_verified(capsys):
    assert main(["adaptive", "exact", "--language", "interval:3", "-L", "6", "--policy", "verified:3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kl_nats"] == pytest.approx(0.0, abs=1e-12) and out["ser"] == pytest.approx(0.0, abs=1e-12)
    assert out["expected_nfe"] == pytest.approx(brute_force(interval_hmm(3), 6, 3)[1], rel=1e-12)


def test_bad_block_size(capsys):
    assert main(["adaptive", "exact", "--language", "interval:3", "-L", "6", "--policy", "verified:0"]) == 2
    assert "block size B must be a positive integer, got '0'" in capsys.readouterr().err
