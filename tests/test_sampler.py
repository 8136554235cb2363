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


# ----------------------------------------------------------------------------- the segment kernel
SEGMENT_CASES = {  # pruned n-grams (strict supports: contexts with q(x_U) = 0 occur), the interval HMM (cuts)
    "2gram": (lambda: random_ngram(2, 3, 2.0, 0.1, seed=0), 30),
    "3gram": (lambda: random_ngram(3, 3, 2.0, 0.1, seed=4), 30),
    "4gram": (lambda: random_ngram(4, 2, 2.0, 0.1, seed=2), 31),
    "interval3": (lambda: interval_hmm(3), 30),
    "hmm": (lambda: random_hmm(5, 3, 2.0, 0.1, seed=3), 25),
}


@pytest.mark.parametrize("name", SEGMENT_CASES)
@pytest.mark.parametrize("N", [1, 7, 60])
def test_segment_kernel_draws_the_samples_of_the_full_message_kernel(name, N):
    """Recomputing only the segments a reveal can change keeps the law: the same seed gives the same samples."""
    make, L = SEGMENT_CASES[name]
    lang = make()
    pi = np.full(N, 1 / N)
    seg = sample_mdm(lang, L, pi, 400, seed=N, method="segments")
    ref = sample_mdm(lang, L, pi, 400, seed=N, method="kernel")
    assert seg.method == "segments" and ref.method == "kernel"
    np.testing.assert_array_equal(seg.samples, ref.samples)
    np.testing.assert_array_equal(seg.nfe, ref.nfe)
    if N == 7 and name != "hmm":  # the strict supports are really left (the uniform continuation is exercised)
        assert not lang.in_support(ref.samples).all()


@pytest.mark.parametrize("make", [lambda q: TemperedOracle(q, 0.6), lambda q: UniformMixture(q, 0.2)])
def test_segment_kernel_runs_the_oracle_transforms_and_scores(make):
    lang = random_ngram(3, 3, 2.0, 0.1, seed=4)
    pi = np.full(9, 1 / 9)
    den = make(lang)
    seg = sample_mdm(lang, 24, pi, 300, denoiser=den, seed=2, method="segments")
    np.testing.assert_array_equal(seg.samples, sample_mdm(lang, 24, pi, 300, denoiser=den, seed=2, method="kernel").samples)
    from mdmt.constructions.reverse.sampler import assignment_log_ratio

    x = lang.sample_sequences(200, 24, seed=3)
    a = assignment_log_ratio(lang, x, pi, den, seed=5, method="segments")
    b = assignment_log_ratio(lang, x, pi, den, seed=5, method="kernel")
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_auto_uses_separators_where_the_language_has_them():
    from mdmt.constructions.reverse.sampler import _cut_states, _kernel_model

    pi = np.full(4, 0.25)
    assert sample_mdm(random_ngram(3, 3, 2.0, 0.0, seed=0), 12, pi, 2, seed=0).method == "segments"
    assert sample_mdm(interval_hmm(3), 12, pi, 2, seed=0).method == "segments"
    assert sample_mdm(random_hmm(4, 3, 2.0, 0.0, seed=0), 12, pi, 2, seed=0).method == "kernel"
    # the interval HMM forgets after the last position of every interval, and only there
    model = _kernel_model(interval_hmm(3), 12, (0, 0.0))
    assert np.flatnonzero(model.cut_state >= 0).tolist() == [2, 5, 8]
    assert model.pin_run == 0 and _kernel_model(random_ngram(4, 2, 2.0, 0.0), 12, (0, 0.0)).pin_run == 3
    assert (_cut_states(np.full((3, 3), 1 / 3), np.full((5, 3), 1 / 3)) == 0).sum() == 4  # i.i.d. tokens: cut everywhere


CORRUPTIONS = pytest.mark.parametrize("corrupt, message", [
    (lambda P: np.where(np.arange(P.shape[1])[None, :, None] == 3, np.nan, P), "contains NaN"),
    (lambda P: P - 0.5 * (np.arange(P.shape[1])[None, :, None] == 3), "negative probability"),
    (lambda P: P * (1 + (np.arange(P.shape[1])[None, :, None] == 3)), "sum to 2"),
])


def _corrupted_oracle(corrupt):
    lang = random_hmm(4, 3, 2.0, 0.0, seed=0)
    return lang, lambda X: corrupt(lang.posterior_marginals(X, off_support="uniform"))


@CORRUPTIONS
def test_samplers_refuse_a_denoiser_that_returns_no_probability_law(corrupt, message):
    """A NaN row would always draw token 0 and a negative one a wrong token: both are refused, naming the place."""
    lang, bad = _corrupted_oracle(corrupt)
    with pytest.raises(ValueError, match=rf"invalid law at sequence \d+, position 3 \(step \d+\): .*{message}"):
        sample_mdm(lang, 6, np.full(2, 0.5), 20, denoiser=bad, seed=0)


@pytest.mark.torch
@CORRUPTIONS
def test_the_network_sampler_refuses_a_denoiser_that_returns_no_probability_law(corrupt, message):
    """The same refusal in ddpm_cache, the sampler of trained networks."""
    from mdmt.empirical.sampling import ddpm_cache

    _, bad = _corrupted_oracle(corrupt)
    with pytest.raises(ValueError, match=rf"invalid law at sequence \d+, position 3 \(step \d+\): .*{message}"):
        ddpm_cache(bad, 20, 6, np.full(2, 0.5), seed=0)
