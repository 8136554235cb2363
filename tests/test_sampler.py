"""The oracle sampler at any L (Eq. 3, ddpm_cache NFE) and its Monte Carlo metrics, tied to the exact law."""

import numpy as np
import pytest

from mdmt.constructions.languages import NGram, interval_hmm, random_hmm, random_ngram
from mdmt.constructions.reverse.chain import chain_quantities
from mdmt.constructions.reverse.denoisers import TemperedOracle, UniformMixture, oracle_denoiser
from mdmt.constructions.reverse.exact import exact_output_law
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.metrics import KEYS, perplexity_note, sample_metrics
from mdmt.constructions.reverse.sampler import assignment_kl_estimate, sample_mdm
from mdmt.constructions.reverse.schedules import expected_nfe


def test_exact_and_monte_carlo_agree():
    lang = random_ngram(2, 3, 2.0, 0.05, seed=2)
    L, pi = 5, np.array([0.3, 0.3, 0.4])
    res = exact_output_law(lang, L, pi)
    mc = sample_metrics(lang, sample_mdm(lang, L, pi, 20000, seed=0).samples, level=0.999)
    assert mc["ser_ci"][0] <= res.ser <= mc["ser_ci"][1]
    chain = chain_quantities(lang, L, pi)
    est = assignment_kl_estimate(lang, L, pi, 20000, seed=1, level=0.999)
    assert est["ci"][0] <= chain["expected_assignment_kl"] / L <= est["ci"][1]


@pytest.mark.parametrize("make", [lambda h: None, lambda h: TemperedOracle(h, 0.5), lambda h: UniformMixture(h, 0.3)])
def test_kernel_and_generic_methods_draw_the_same_samples(make):
    lang = random_hmm(4, 3, 2.0, 0.05, seed=5)
    den = make(lang)
    pi = np.full(6, 1 / 6)
    k = sample_mdm(lang, 9, pi, 300, denoiser=den, seed=7, method="kernel")
    g = sample_mdm(lang, 9, pi, 300, denoiser=den if den is not None else oracle_denoiser(lang), seed=7,
                   method="generic")
    assert k.method == "kernel" and g.method == "generic"
    np.testing.assert_array_equal(k.samples, g.samples)  # same random numbers, same inverse-CDF rule
    np.testing.assert_array_equal(k.nfe, g.nfe)
    np.testing.assert_array_equal(k.reveal_step, g.reveal_step)


def test_sampler_nfe_counts_steps_that_reveal_something():
    lang = random_hmm(4, 3, 2.0, 0.0, seed=0)
    pi = np.full(50, 1 / 50)
    res = sample_mdm(lang, 10, pi, 300, seed=3)
    assert res.samples.min() >= 0 and res.nfe.max() <= 10
    np.testing.assert_array_equal(res.nfe, [len(np.unique(t)) for t in res.reveal_step])
    again = sample_mdm(lang, 10, pi, 300, seed=3)
    np.testing.assert_array_equal(res.samples, again.samples)
    assert abs(res.nfe.mean() - expected_nfe(pi, 10)) < 0.3


def test_interval_oracle_ser_by_monte_carlo_at_large_L():
    l, L, N = 3, 300, 150
    pi = np.full(N, 1 / N)
    res = sample_mdm(interval_hmm(l), L, pi, 1500, seed=0)
    mc = sample_metrics(interval_hmm(l), res.samples, level=0.999)
    assert mc["ser_ci"][0] <= oracle_ser(l, L, pi) <= mc["ser_ci"][1]


def test_sample_metrics_keys_and_infinite_perplexity_note():
    # a bigram with one forbidden transition (2 -> 2): one step (independent tokens) leaves the support often
    lang = NGram(2, [0.5, 0.3, 0.2], [[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.45, 0.55, 0.0]])
    res = sample_mdm(lang, 8, np.ones(1), 400, seed=0)
    m = sample_metrics(lang, res.samples)
    assert tuple(m) == KEYS
    assert m["off_support"] > 0 and m["gen_perplexity"] == float("inf")
    assert m["ser_ci"][0] <= m["ser"] <= m["ser_ci"][1]
    assert np.isfinite(m["in_support_perplexity"])
    assert "infinite" in perplexity_note(m) and str(m["off_support"]) in perplexity_note(m)
    inside = res.samples[lang.in_support(res.samples)]
    clean = sample_metrics(lang, inside)
    assert clean["ser"] == 0 and perplexity_note(clean) is None and np.isfinite(clean["gen_perplexity"])
