"""The claim quantities of one instance: values by hand, agreement with the atlas, and claims evaluated on them."""

import math

import numpy as np
import pytest

from mdmt.bounds.studies.atlas import atlas
from mdmt.bounds.refutation.claims import ClaimError, parse_claim
from mdmt.bounds.refutation.quantities import instance_quantities
from mdmt.constructions.languages import NGram, interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse.denoisers import UniformMixture

LN2 = math.log(2)


def test_a_copying_chain_revealed_at_once_by_hand():
    """X_1 a fair bit, copied twice (L = 3), all three revealed in one step from the oracle's marginals:
    p is the uniform law on {0,1}^3, q puts 1/2 on 000 and 111.  H = log 2, TC = 3 log 2 - log 2 = 2 log 2,
    DTC = H - sum_i H(X_i | X_-i) = log 2, sum_MI = 3 log 2, KL = sum_x q log(q/p) = log(1/2 * 8) = 2 log 2,
    SER = 1 - 2/8 = 3/4, E[sum D_j] = 2 (the two later positions of the one segment), s_max = 3, NFE = 1."""
    q = instance_quantities(NGram(2, [0.5, 0.5], np.eye(2)), 3, "uniform", 1)
    want = {"L": 3, "V": 2, "N": 1, "n": 2, "eps": 0, "H": LN2, "TC": 2 * LN2, "DTC": LN2, "sum_MI": 3 * LN2,
            "KL": 2 * LN2, "KL_per_token": 2 * LN2 / 3, "TER_gap": 2 * LN2 / 3, "SER": 0.75, "E_D": 2, "s_max": 3,
            "NFE": 1, "E_TC": 2 * LN2}  # one step: E sum_j TC = TC
    assert set(q) == set(want)
    for k, v in want.items():
        assert q[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    # Li & Cai's bound there: (2^2 - 1)/3 * 3 log 2 = 3 log 2 >= KL = 2 log 2, margin log 2
    assert parse_claim("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI").margin(q) == pytest.approx(LN2, rel=1e-12)
    # Lemma B.9 in total form is attained: KL = L eps + log|V| E[sum D_j]
    assert parse_claim("KL <= L * eps + log(V) * E_D").margin(q) == pytest.approx(0, abs=1e-12)


def test_the_interval_hmm_attains_theorem_44():
    """l = 2, L = 2, two linear steps: the two tokens must agree; P_distinct = 1/2, p = 1/2 uniform + 1/2 q, so
    KL = log(4/3), SER = 1/4 = 1 - (1 - (1/2)(1 - 1/2))^(L/l): Theorem 4.4's bound with eps = 0 is attained."""
    q = instance_quantities(interval_hmm(2), 2, "iid", 2, interval=2)
    assert q["P_distinct"] == pytest.approx(0.5, rel=1e-14) and q["SER"] == pytest.approx(0.25, rel=1e-14)
    assert q["KL"] == pytest.approx(math.log(4 / 3), rel=1e-14) and q["NFE"] == pytest.approx(1.5, rel=1e-14)
    # E sum_j TC: the two tokens share a step with probability 1/2, and then cost TC = log 2
    assert q["E_TC"] == pytest.approx(LN2 / 2, rel=1e-14)
    c = parse_claim("SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)")
    assert abs(c.margin(q)) < 1e-14
    assert "s_max" not in q and "E_D" not in q and "n" not in q  # i.i.d. steps have random sizes; an HMM, no order


@pytest.mark.parametrize("make, L, N, lam", [
    (lambda: random_ngram(3, 2, 2.0, 0.0, seed=3), 6, 3, None),
    (lambda: random_ngram(3, 2, 2.0, 0.0, seed=7), 5, 3, 0.2),
    (lambda: random_hmm(3, 3, 1.5, 0.05, seed=6), 4, 2, None),
])
def test_the_quantities_are_the_atlas_numbers(make, L, N, lam):
    lang = make()
    den = None if lam is None else UniformMixture(lang, lam)
    res = atlas(lang, L, N, denoiser=den)
    for row in res["rows"]:
        q = instance_quantities(lang, L, row["process"], N, denoiser=den)
        assert q["KL"] == pytest.approx(row["kl"], rel=1e-12, abs=1e-15)
        assert q["SER"] == pytest.approx(row["ser"], rel=1e-12, abs=1e-15)
        assert q["NFE"] == pytest.approx(row["expected_nfe"], rel=1e-12)
        assert q["TC"] == pytest.approx(res["instance"]["total_correlation"], rel=1e-12)
        if row["chain_bound"] is not None:  # chain (C4) = learning + log|V| E[sum D_j]
            assert row["chain_bound"] == pytest.approx(row["learning"] + math.log(q["V"]) * q["E_D"], rel=1e-10)
        else:
            assert "E_D" not in q
        assert (q["eps"] > 0) == (lam is not None)


def test_a_documented_failure_is_a_negative_margin_and_a_missing_quantity_is_named():
    # Li & Cai under top-k confidence (docs/atlas.md): the claim fails on this binary 3-gram
    q = instance_quantities(random_ngram(3, 2, 1.0, 0.0, seed=7), 5, "confidence", 3)
    c = parse_claim("KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI")
    assert c.margin(q) < -0.1 and c.holds(q) is False
    with pytest.raises(ClaimError, match="needs the quantities E_D"):
        parse_claim("KL <= log(V) * E_D").margin(instance_quantities(random_hmm(2, 2, 1.0, 0.0, seed=1), 3, "iid", 2))


def test_eps_is_the_learning_error_in_its_max_form_by_hand():
    """Section 4.1's eps is the largest per-token KL, not the mean.  On the copying chain (L = 3) the uniform mixture
    0.2 predicts 0.8 q + 0.1 on each of the two tokens; the worst row is a masked token next to a revealed one, whose
    oracle row is the point mass (1, 0): KL((1, 0) || (0.9, 0.1)) = log(1 / 0.9) = log(10/9) = 0.10536 (the mean over
    the masked positions is smaller: the all-masked rows are (1/2, 1/2) for both, KL 0).  No row does worse: for
    |V| = 2, KL(q || 0.8 q + 0.1) is largest at a point mass."""
    lang = NGram(2, [0.5, 0.5], np.eye(2))
    q = instance_quantities(lang, 3, "uniform", 1, denoiser=UniformMixture(lang, 0.2))
    assert q["eps"] == pytest.approx(math.log(10 / 9), rel=1e-12)
    # the mixture's all-masked rows are the oracle's, so KL is the oracle's 2 log 2 (revealed at once)
    assert q["KL"] == pytest.approx(2 * LN2, rel=1e-12)
