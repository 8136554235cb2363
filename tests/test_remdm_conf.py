"""ReMDM's confidence schedule (remdm:conf[:ETA]): the exact augmented chain against a brute force, ETA = 0, Monte Carlo."""

import itertools
import json
import math

import numpy as np
import pytest

from mdmt.bounds.verification.brute_force import oracle_from_joint
from mdmt.cli import main
from mdmt.constructions.languages import interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse import remdm_conf
from mdmt.constructions.reverse.confidence import mean_interval, wilson_interval
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.policies import parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy
from mdmt.constructions.reverse.schedules import expected_nfe, reveal_probabilities

M = -1  # a masked position in the brute force


def brute_force(lang, L, N, eta):
    """Every trajectory from ReMDM's definitions, independently of remdm_conf.py: a state is the tuple of (token,
    confidence) of every position ((M, None) when masked); per step every position's outcome (a decoded token stays
    or is remasked with eta * sigma_max * exp(-psi) / sum over the decoded exp(-psi'); a masked one stays or reveals
    v with (alpha_s - alpha_t) / (1 - alpha_t) * q(v | x_U), keeping q(v | x_U) as its confidence), the oracle summed
    from q on V^L (uniform off the support).  Returns (law of the final sequences, E[#steps revealing something])."""
    V = lang.n_symbols
    grid = np.array(list(itertools.product(range(V), repeat=L)))
    q = np.exp(lang.log_likelihood(grid))

    denoise = oracle_from_joint(grid, q)

    def oracle(tokens, i):
        return denoise(np.array(tokens))[i]

    law = {tuple((M, None) for _ in range(L)): 1.0}
    calls = 0.0
    for k in range(N, 0, -1):
        a_t, a_s = 1 - k / N, 1 - (k - 1) / N
        reveal = (a_s - a_t) / (1 - a_t)
        sig = eta * (min(1.0, (1 - a_s) / a_t) if a_t > 0 else 1.0)
        new = {}
        for state, w in law.items():
            tokens = [s[0] for s in state]
            z = sum(math.exp(-s[1]) for s in state if s[0] != M)
            options = []
            for i, (v, psi) in enumerate(state):
                if v != M:
                    r = sig * math.exp(-psi) / z
                    options.append([((v, psi), 1 - r, False), ((M, None), r, False)])
                else:
                    o = oracle(tokens, i)
                    options.append([((M, None), 1 - reveal, False)] +
                                   [((u, float(o[u])), reveal * o[u], True) for u in range(V)])
            for combo in itertools.product(*options):
                p = w * math.prod(c[1] for c in combo)
                if p == 0:
                    continue
                if any(c[2] for c in combo):
                    calls += p
                key = tuple(c[0] for c in combo)
                new[key] = new.get(key, 0.0) + p
        law = new
    final = {}
    for state, w in law.items():
        key = tuple(s[0] for s in state)
        final[key] = final.get(key, 0.0) + w
    return final, calls


LANGS = [("hmm", lambda: random_hmm(3, 2, 1.5, 0.0, seed=2)), ("interval", lambda: interval_hmm(2)),
         ("3gram V=3", lambda: random_ngram(2, 3, 1.0, 0.1, seed=4))]


@pytest.mark.parametrize("name, make", LANGS, ids=[n for n, _ in LANGS])
@pytest.mark.parametrize("L, N, eta", [(2, 3, 1.0), (3, 4, 1.0), (3, 3, 0.5)])
def test_exact_chain_equals_brute_force(name, make, L, N, eta):
    lang = make()
    law = exact_policy_law(lang, L, parse_policy(f"remdm:conf:{eta}", N), support_only=False)
    ref, calls = brute_force(lang, L, N, eta)
    assert sum(v for k, v in ref.items() if M in k) < 1e-13  # the last step reveals everything
    seqs = [tuple(s) for s in law.result.sequences.tolist()]
    assert np.allclose([ref.get(s, 0.0) for s in seqs], law.result.p, atol=1e-13, rtol=0)
    assert law.expected_nfe == pytest.approx(calls, rel=1e-12)
    assert law.result.p.sum() == pytest.approx(1.0, abs=1e-12)


def test_remasking_changes_the_law():
    """The confidence weights matter: ETA = 1 differs from ETA = 0 (so the comparison above is not vacuous)."""
    lang, L, N = interval_hmm(2), 3, 4
    a = exact_policy_law(lang, L, parse_policy("remdm:conf:0", N), support_only=False).result.p
    b = exact_policy_law(lang, L, parse_policy("remdm:conf", N), support_only=False).result.p
    assert np.abs(a - b).max() > 1e-3


def test_no_remasking_is_the_iid_process():
    lang, L, N = random_ngram(3, 2, 2.0, 0.1, seed=3), 4, 5
    pi = reveal_probabilities("linear", N)
    e = exact_output_law(lang, L, pi, support_only=False)
    law = exact_policy_law(lang, L, parse_policy("remdm:conf:0", N), support_only=False)
    assert np.abs(law.result.p - e.p).max() < 1e-13
    assert law.expected_nfe == pytest.approx(expected_nfe(pi, L), rel=1e-12)


def test_softmax_sign_flipped_is_caught(monkeypatch):
    """Seeded mistake: softmax(+psi) (confident tokens remasked more) breaks the agreement with the brute force."""
    lang, L, N = interval_hmm(2), 3, 4
    ref, _ = brute_force(lang, L, N, 1.0)

    def flipped(psi):
        return remdm_conf_weights(-np.asarray(psi, dtype=np.float64))

    remdm_conf_weights = remdm_conf.remask_weights
    monkeypatch.setattr(remdm_conf, "remask_weights", flipped)
    law = exact_policy_law(lang, L, parse_policy("remdm:conf", N), support_only=False)
    seqs = [tuple(s) for s in law.result.sequences.tolist()]
    assert np.abs(np.array([ref.get(s, 0.0) for s in seqs]) - law.result.p).max() > 1e-4


def test_sigma_beyond_its_bound_is_refused(monkeypatch):
    """Seeded mistake: weights that do not sum to 1 (exp(-psi) unnormalised, times 2) put a token's sigma above
    sigma_max = min(1, (1 - alpha_s)/alpha_t); the check of every step refuses it, in the exact chain and in the
    sampler.  ETA above 1 is refused by the grammar."""
    psi = np.array([[0.1, np.nan, 0.9]])
    s = remdm_conf.token_sigmas(psi, 0.5, 0.5)
    assert s[0, 1] == 0 and s[0, 0] > s[0, 2] and s.sum() == pytest.approx(0.5)  # less confident, remasked more
    monkeypatch.setattr(remdm_conf, "remask_weights", lambda p: 2 * np.exp(-np.nan_to_num(np.asarray(p), nan=np.inf)))
    with pytest.raises(ValueError, match=r"ReMDM-conf: a token's sigma_t = .* is outside \[0, sigma_max\]"):
        exact_policy_law(interval_hmm(2), 3, parse_policy("remdm:conf", 4), support_only=False)
    with pytest.raises(ValueError, match="outside"):
        sample_policy(interval_hmm(2), 5, parse_policy("remdm:conf", 4), 20, seed=0)
    with pytest.raises(ValueError, match=r"ETA must be in \[0, 1\]"):
        parse_policy("remdm:conf:1.5", 4)


def test_monte_carlo_agrees_with_the_exact_law():
    lang, L, N = interval_hmm(2), 4, 6
    pol = parse_policy("remdm:conf", N)
    law = exact_policy_law(lang, L, pol, support_only=False)
    res = sample_policy(lang, L, pol, 4000, seed=5)
    _, a, b = mean_interval(res.nfe, 0.999)
    assert a <= law.expected_nfe <= b
    err = int((~lang.in_support(res.samples)).sum())
    a, b = wilson_interval(err, len(res.samples), 0.999)
    assert a <= law.result.ser <= b
    # the law of the first two positions, within 5 standard errors
    seqs, p = law.result.sequences, law.result.p
    for u, v in itertools.product(range(lang.n_symbols), repeat=2):
        pr = p[(seqs[:, 0] == u) & (seqs[:, 1] == v)].sum()
        f = np.mean((res.samples[:, 0] == u) & (res.samples[:, 1] == v))
        assert abs(f - pr) <= 5 * math.sqrt(pr * (1 - pr) / len(res.samples)) + 1e-9, (u, v)


def test_exact_law_too_large_is_refused():
    with pytest.raises(ValueError, match=r"exact ReMDM-conf law at L = 14, V = 2 .* \(use the Monte Carlo sampler\)"):
        exact_policy_law(interval_hmm(2), 14, parse_policy("remdm:conf", 4), support_only=False)


def test_policies_everywhere(capsys):
    from mdmt.bounds.refutation.quantities import instance_quantities
    from mdmt.bounds.studies.atlas import atlas

    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "-N", "4", "--policy", "remdm:conf",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    law = exact_policy_law(interval_hmm(2), 4, parse_policy("remdm:conf", 4), support_only=False)
    assert out["policy"] == "remdm:conf:1"
    assert out["kl_nats"] == pytest.approx(law.result.kl_nats) and out["ser"] == pytest.approx(law.result.ser)
    assert out["expected_nfe"] == pytest.approx(law.expected_nfe)
    rows = {r["process"]: r for r in atlas(interval_hmm(2), 4, 4, "uniform,remdm:conf:0.5")["rows"]}
    law = exact_policy_law(interval_hmm(2), 4, parse_policy("remdm:conf:0.5", 4), support_only=False)
    assert rows["remdm:conf:0.5"]["kl"] == pytest.approx(law.result.kl_nats, abs=1e-12)
    assert rows["remdm:conf:0.5"]["expected_nfe"] == pytest.approx(law.expected_nfe)
    assert instance_quantities(interval_hmm(2), 4, "remdm:conf", 4)["KL"] == pytest.approx(out["kl_nats"])
    assert main(["adaptive", "sample", "--language", "interval:3", "-L", "12", "-N", "6", "--policy", "remdm:conf",
                 "--num", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nfe_mean"] > 0


@pytest.mark.parametrize("spec, words", [("remdm:conf:2", "ETA must be in [0, 1]"), ("remdm:conf:x", "is not a number"),
                                         ("remdm:cnf", "SCHEDULE one of cap, rescale, loop, conf")])
def test_bad_specs(capsys, spec, words):
    assert main(["adaptive", "exact", "--language", "interval:2", "-L", "4", "-N", "4", "--policy", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mdmt adaptive: error:") and words in err and err.count("\n") == 1


def test_too_many_confidence_states_fall_back_to_monte_carlo(monkeypatch):
    """The chain's states (partial assignment, confidences) are bounded; past the bound the exact law raises one
    clear error, and mdmt samplers takes the Monte Carlo estimate instead."""
    from mdmt.bounds.studies.samplers import sampler_point

    monkeypatch.setattr(remdm_conf, "MAX_CONF_STATES", 20)
    with pytest.raises(remdm_conf.TooManyStates, match=r"L = 4, N = 4 reached \d+ states at step \d; at most 20"):
        exact_policy_law(interval_hmm(2), 4, parse_policy("remdm:conf", 4), support_only=False)
    p = sampler_point(interval_hmm(2), 4, "remdm:conf", 4, num=50)
    assert p["method"] == "Monte Carlo (50)" and 0 <= p["ser"] <= 1
