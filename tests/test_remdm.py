"""ReMDM remasking (remdm:SCHEDULE[:ETA]): the exact chain against a brute-force enumeration, sigma = 0, Monte Carlo."""

import itertools
import json

import numpy as np
import pytest

from mdmt.bounds.verification.brute_force import oracle_from_joint
from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse import remdm
from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.policies import parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy
from mdmt.constructions.reverse.schedules import expected_nfe, reveal_probabilities

M = -1  # a masked position in the brute force


def brute_force(lang, L, N, pu, sigma):
    """Every trajectory from the definitions: per step, every position's outcome (stay / remask for a token, stay masked /
    each token for a mask) with its probability; the oracle q(x_i | x_U) summed from q on V^L (uniform off the support).
    Returns (law of the final sequences, E[#steps revealing something])."""
    V = lang.n_symbols
    grid = np.array(list(itertools.product(range(V), repeat=L)))
    q = np.exp(lang.log_likelihood(grid))

    denoise = oracle_from_joint(grid, q)

    def oracle(state, i):
        return denoise(np.array(state))[i]

    law = {tuple([M] * L): 1.0}
    calls = 0.0
    for j in range(N):
        new = {}
        for state, w in law.items():
            options = []
            for i, v in enumerate(state):
                if v != M:
                    options.append([(v, 1 - sigma[j], False), (M, sigma[j], False)])
                else:
                    o = oracle(state, i)
                    options.append([(M, 1 - pu[j], False)] + [(u, pu[j] * o[u], True) for u in range(V)])
            for combo in itertools.product(*options):
                p = w * np.prod([c[1] for c in combo])
                if p == 0:
                    continue
                if any(c[2] for c in combo):
                    calls += p
                key = tuple(c[0] for c in combo)
                new[key] = new.get(key, 0.0) + p
        law = new
    return law, calls


def _steps(kind, eta, N):
    """ReMDM's step probabilities written out from its definitions (independently of remdm.remdm_steps)."""
    pu, sigma = [], []
    for k in range(N, 0, -1):
        t, s = k / N, (k - 1) / N
        if kind == "loop":
            alpha = lambda x: 0.9 * (1 - x) / 0.45 if x >= 0.55 else (0.9 if x > 0.05 else 0.9 + 0.1 * (0.05 - x) / 0.05)  # noqa: E731
        else:
            alpha = lambda x: 1 - x  # noqa: E731
        a_t, a_s = alpha(t), alpha(s)
        smax = min(1.0, (1 - a_s) / a_t) if a_t > 0 else 1.0
        sg = {"cap": min(eta, smax), "rescale": eta * smax, "loop": min(eta, smax) if a_s == a_t else 0.0}[kind]
        sigma.append(sg)
        pu.append((a_s - (1 - sg) * a_t) / (1 - a_t))
    return pu, sigma


CASES = [("cap:0.3", 4), ("rescale:0.5", 3), ("loop:0.4", 6), ("cap", 3)]


@pytest.mark.parametrize("lang", [random_hmm(3, 2, 1.5, 0.0, seed=2), interval_hmm(2)], ids=["hmm", "interval"])
@pytest.mark.parametrize("spec, N", CASES, ids=[c[0] for c in CASES])
def test_exact_chain_equals_brute_force(lang, spec, N):
    L = 3
    pol = parse_policy(f"remdm:{spec}", N)
    pu, sigma = _steps(pol.kind, pol.eta, N)
    law = exact_policy_law(lang, L, pol, support_only=False)
    ref, calls = brute_force(lang, L, N, pu, sigma)
    seqs = [tuple(s) for s in law.result.sequences.tolist()]
    assert np.allclose([ref.get(s, 0.0) for s in seqs], law.result.p, atol=1e-13)
    assert sum(v for k, v in ref.items() if M in k) < 1e-13  # the last step reveals everything
    assert law.expected_nfe == pytest.approx(calls, rel=1e-12)


def test_no_remasking_is_the_iid_process():
    lang, L, N = random_ngram(3, 2, 2.0, 0.1, seed=3), 5, 4
    pi = reveal_probabilities("linear", N)
    e = exact_output_law(lang, L, pi, support_only=False)
    for kind in ("cap", "rescale"):
        law = exact_policy_law(lang, L, parse_policy(f"remdm:{kind}:0", N), support_only=False)
        assert np.abs(law.result.p - e.p).max() < 1e-13
        assert law.expected_nfe == pytest.approx(expected_nfe(pi, L), rel=1e-12)


def test_remasking_changes_the_law_and_corrects_at_many_steps():
    lang, L = interval_hmm(2), 4
    base = exact_policy_law(lang, L, parse_policy("remdm:cap:0", 8), support_only=False).result.ser
    loop = exact_policy_law(lang, L, parse_policy("remdm:loop:0.5", 8), support_only=False).result.ser
    assert loop != pytest.approx(base, abs=1e-6)


def test_sigma_outside_its_bound_is_refused():
    """Seeded mistake: sigma_t above min(1, (1 - alpha_s)/alpha_t) would make the reveal probability exceed 1."""
    a_t, a_s = np.array([0.5]), np.array([0.75])  # sigma_max = 0.5
    assert remdm.reveal_probability(a_t, a_s, np.array([0.5]))[0] == pytest.approx(1.0)  # at the bound: reveal all
    with pytest.raises(ValueError, match=r"sigma_t = 0.6 is outside \[0, sigma_max\]"):
        remdm.reveal_probability(a_t, a_s, np.array([0.6]))
    assert (a_s - (1 - 0.6) * a_t) / (1 - a_t) > 1  # what the check prevents


def test_monte_carlo_agrees_with_the_exact_law():
    lang, L, N = interval_hmm(2), 4, 6
    pol = parse_policy("remdm:loop:0.4", N)
    law = exact_policy_law(lang, L, pol, support_only=False)
    res = sample_policy(lang, L, pol, 4000, seed=5)
    _, a, b = mean_interval(res.nfe, 0.999)
    assert a <= law.expected_nfe <= b
    err = ~lang.in_support(res.samples)
    _, a, b = mean_interval(err.astype(float), 0.999)
    assert a <= law.result.ser <= b


def test_adaptive_exact_reports_remdm(capsys):
    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "-N", "4", "--policy", "remdm:cap:0.3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"kl_nats", "ser", "expected_nfe"} <= set(out) and out["policy"] == "remdm:cap:0.3"


@pytest.mark.parametrize("spec, words", [("remdm:foo", "expected remdm:SCHEDULE[:ETA]"), ("remdm:cap:2", "ETA must be in [0, 1]"),
                                         ("remdm:cap:x", "is not a number")])
def test_bad_specs(capsys, spec, words):
    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "-N", "4", "--policy", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt adaptive: error:") and words in err
