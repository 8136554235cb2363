"""Eq. 3 and the first links of the proof chain (Lemmas B.2-B.3: C1, C2), exact against enumeration over every
reveal assignment, on random small n-grams and HMMs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdmt.constructions.languages import random_hmm, random_ngram
from mdmt.constructions.reverse.chain import assignment_quantities, chain_quantities
from mdmt.constructions.reverse.denoisers import TemperedOracle, UniformMixture
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.proofs.reference import law_by_assignments


@st.composite
def small_languages(draw):
    seed = draw(st.integers(0, 2**31))
    kind = draw(st.sampled_from(["ngram", "hmm"]))
    if kind == "ngram":
        return random_ngram(2, draw(st.integers(2, 3)), 2.0, 0.05, seed)
    return random_hmm(draw(st.integers(1, 3)), draw(st.integers(2, 3)), 2.0, 0.05, seed)


@st.composite
def schedules(draw, max_N=3):
    N = draw(st.integers(1, max_N))
    w = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=N, max_size=N)))
    return w / w.sum()


@given(small_languages(), st.integers(2, 3), schedules(), st.booleans())
def test_exact_law_equals_enumeration_over_assignments(lang, L, pi, perturbed):
    den = UniformMixture(lang, 0.2) if perturbed else None
    q, pN, ekl = law_by_assignments(lang, L, pi, den)
    full = exact_output_law(lang, L, pi, den, support_only=False)
    assert full.p.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(full.p, pN, atol=1e-12)  # everywhere, off the support too
    m = q > 0
    res = exact_output_law(lang, L, pi, den)
    np.testing.assert_allclose(res.p[m], pN[m], atol=1e-12)
    assert res.ser == pytest.approx(1 - pN[m].sum(), abs=1e-12)
    assert full.ser == pytest.approx(1 - pN[m].sum(), abs=1e-12)  # the law everywhere: SER still counts q(x) = 0
    chain = chain_quantities(lang, L, pi, den)
    assert chain["expected_assignment_kl"] == pytest.approx(ekl, rel=1e-9, abs=1e-12)  # the linearity formula
    assert res.kl_nats <= chain["expected_assignment_kl"] + 1e-12  # (C1)


@given(small_languages(), st.integers(2, 4), st.integers(0, 2**31), st.booleans())
def test_c2_holds_for_every_assignment(lang, L, seed, perturbed):
    den = TemperedOracle(lang, 0.6) if perturbed else None
    tau = np.random.default_rng(seed).integers(1, 4, size=L)
    aq = assignment_quantities(lang, tau, den)
    assert aq["kl_nats"] == pytest.approx(sum(aq["total_correlation"].values()) + sum(aq["learning"].values()),
                                          abs=1e-9)
    assert all(v >= -1e-12 for v in aq["total_correlation"].values())
    assert all(v >= -1e-12 for v in aq["learning"].values())


@given(small_languages(), st.integers(2, 4))
def test_one_token_per_step_reproduces_q_exactly(lang, L):
    """With one token revealed per step (any permutation order), the oracle's p_tau is q: KL = 0, TC = 0."""
    tau = np.random.default_rng(L).permutation(L) + 1
    aq = assignment_quantities(lang, tau)
    assert abs(aq["kl_nats"]) < 1e-12
    assert all(abs(v) < 1e-12 for v in aq["total_correlation"].values())
