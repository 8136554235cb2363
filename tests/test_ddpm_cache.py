"""The ddpm_cache sampler for networks (Eq. 3, Section 5.1) and its agreement with the oracle sampler's law."""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import numpy as np
import torch

from mdmt.constructions.languages import preset
from mdmt.constructions.reverse.metrics import sample_metrics
from mdmt.runtime.validation import MASK
from mdmt.empirical.sampling import MDMDenoiser, ddpm_cache
from tests.helpers_empirical import _bigram, _pi_linear, _random_model

torch.set_num_threads(1)


class _Recorder:
    """The oracle denoiser, recording every state it is evaluated on."""

    def __init__(self, lang):
        self.lang, self.states = lang, []

    def __call__(self, X):
        self.states.append(np.array(X))
        return self.lang.posterior_marginals(X, off_support="uniform")


def test_ddpm_cache_never_changes_revealed_tokens_and_emits_no_mask():
    lang = _bigram()
    N, L = 6, 8
    rec = _Recorder(lang)
    res = ddpm_cache(rec, 40, L, _pi_linear(N), seed=1, batch=40)
    assert res.samples.shape == (40, L) and (res.samples != MASK).all()
    assert set(np.unique(res.samples)) <= {0, 1, 2}
    # a position revealed at step tau keeps its token: it is already final in every later state
    assert ((res.reveal_step >= 1) & (res.reveal_step <= N)).all()
    # with a random MDM as denoiser as well
    m = _random_model(V=3)
    r2 = ddpm_cache(MDMDenoiser(m), 20, L, _pi_linear(N), seed=2)
    assert (r2.samples != MASK).all() and set(np.unique(r2.samples)) <= {0, 1, 2}


def test_revealed_tokens_persist_across_steps():
    """Trace one batch step by step: every later state agrees with the earlier one where it was revealed."""
    lang = _bigram()
    N, L = 5, 8
    rec = _Recorder(lang)
    res = ddpm_cache(rec, 1, L, _pi_linear(N), seed=11, batch=1)
    states = rec.states + [res.samples]
    for a, b in zip(states, states[1:]):
        rev = a != MASK
        assert np.array_equal(a[rev], b[rev])
        assert (b != MASK).sum() > (a != MASK).sum()  # evaluated only when something is revealed


def test_nfe_counts_steps_that_reveal_something():
    lang = _bigram()
    N, L = 10, 4
    res = ddpm_cache(lang, 200, L, _pi_linear(N), seed=3)
    distinct = np.array([len(np.unique(t)) for t in res.reveal_step])
    assert np.array_equal(res.nfe, distinct)
    # E[NFE] = sum_j 1 - (1 - pi_j)^L  (here 10 * (1 - 0.9^4) = 3.439), loose check of the mean
    assert abs(res.nfe.mean() - 10 * (1 - 0.9 ** 4)) < 0.25
    calls = _Recorder(lang)
    one = ddpm_cache(calls, 1, L, _pi_linear(N), seed=5, batch=1)
    assert len(calls.states) == one.nfe[0] == len(np.unique(one.reveal_step[0]))


def test_same_seed_same_samples():
    lang = preset("2gram", 0)
    V = lang.n_symbols
    a = ddpm_cache(lang.posterior_marginals, 16, 8, _pi_linear(4), seed=9)
    b = ddpm_cache(lang.posterior_marginals, 16, 8, _pi_linear(4), seed=9)
    c = ddpm_cache(lang.posterior_marginals, 16, 8, _pi_linear(4), seed=10)
    assert np.array_equal(a.samples, b.samples) and np.array_equal(a.nfe, b.nfe)
    assert not np.array_equal(a.samples, c.samples)
    m = _random_model(V=V)
    x = ddpm_cache(MDMDenoiser(m), 8, 8, _pi_linear(4), seed=1)
    y = ddpm_cache(m, 8, 8, _pi_linear(4), seed=1)
    assert np.array_equal(x.samples, y.samples)


def test_greedy_final_fill_is_off_by_default_and_takes_the_argmax_at_the_last_step():
    lang = preset("2gram-ter")  # full support: every partial state has a posterior
    pi = _pi_linear(4)
    drawn = ddpm_cache(lang.posterior_marginals, 64, 8, pi, seed=4)
    greedy = ddpm_cache(lang.posterior_marginals, 64, 8, pi, seed=4, greedy_final=True)
    assert np.array_equal(drawn.reveal_step, greedy.reveal_step)  # same reveal steps, same earlier tokens
    early = drawn.reveal_step < 4
    assert np.array_equal(drawn.samples[early], greedy.samples[early])
    # Replay the last step: the state before it is the sample with the step-4 positions masked.
    last = greedy.reveal_step == 4
    state = np.where(last, MASK, greedy.samples)
    argmax = lang.posterior_marginals(state).argmax(-1)
    assert np.array_equal(greedy.samples[last], argmax[last])
    assert not np.array_equal(drawn.samples[last], argmax[last])  # the default draws
    # One step: every position at once, the argmax of the all-masked marginals in every sequence.
    one = ddpm_cache(lang.posterior_marginals, 4, 8, [1.0], seed=0, greedy_final=True)
    assert (one.samples == lang.posterior_marginals(np.full((1, 8), MASK)).argmax(-1)).all()


def test_oracle_sampling_of_a_single_position_stays_in_support():
    """With L = 1 there is nothing to collide: the oracle sampler's SER is exactly 0."""
    lang = _bigram()
    res = ddpm_cache(lang, 200, 1, _pi_linear(3), seed=0)
    assert sample_metrics(lang, res.samples)["ser"] == 0.0


def test_one_step_sampler_violates_the_support_and_metrics_see_it():
    lang = _bigram()
    res = ddpm_cache(lang, 400, 6, np.array([1.0]), seed=0)  # N = 1: all tokens drawn independently
    s = sample_metrics(lang, res.samples)
    # P(no 2->2 pair) < 1 with independent marginals, so some violations must show
    assert s["ser"] > 0 and s["ser_ci"][0] <= s["ser"] <= s["ser_ci"][1]
    assert s["gen_perplexity"] == float("inf")
    ok = res.samples[lang.in_support(res.samples)]
    assert np.isfinite(sample_metrics(lang, ok)["gen_perplexity"])


def test_torch_and_oracle_samplers_have_the_same_law():
    """ddpm_cache with the oracle and sample_mdm draw from one law p_N (different random streams): SERs agree."""
    from mdmt.constructions.reverse.exact import exact_output_law
    from mdmt.constructions.reverse.sampler import sample_mdm

    lang = _bigram()
    pi = _pi_linear(3)
    exact = exact_output_law(lang, 5, pi).ser
    a = sample_metrics(lang, ddpm_cache(lang, 4000, 5, pi, seed=1, batch=1000).samples, level=0.999)
    b = sample_metrics(lang, sample_mdm(lang, 5, pi, 4000, seed=1).samples, level=0.999)
    assert a["ser_ci"][0] <= exact <= a["ser_ci"][1] and b["ser_ci"][0] <= exact <= b["ser_ci"][1]


@pytest.mark.parametrize("N,greedy", [(1, False), (5, True), (40, False), (64, True)])
def test_reveal_rounds_give_the_samples_of_the_loop_over_steps(N, greedy):
    """Default (one call per reveal round) and ``by_step`` (the literal loop of Eq. 3) consume one random
    stream: same samples, reveal steps and NFE, for the oracle and for a network, over uneven batches."""
    lang = preset("2gram-ter")
    pi = _pi_linear(N)
    for den in (lang.posterior_marginals, MDMDenoiser(_random_model(V=lang.n_symbols, L=12, recurrent=4))):
        a = ddpm_cache(den, 45, 12, pi, seed=N, batch=16, greedy_final=greedy)
        b = ddpm_cache(den, 45, 12, pi, seed=N, batch=16, greedy_final=greedy, by_step=True)
        assert np.array_equal(a.reveal_step, b.reveal_step) and np.array_equal(a.nfe, b.nfe)
        assert np.array_equal(a.samples, b.samples)


def test_one_call_per_reveal_round():
    """A batch costs max NFE <= min(N, L) denoiser calls, each on every sequence still revealing."""
    lang = _bigram()
    N, L = 200, 6
    rounds, steps = _Recorder(lang), _Recorder(lang)
    a = ddpm_cache(rounds, 64, L, _pi_linear(N), seed=2, batch=64)
    ddpm_cache(steps, 64, L, _pi_linear(N), seed=2, batch=64, by_step=True)
    assert len(rounds.states) == a.nfe.max() <= L < len(steps.states)
    assert [len(x) for x in rounds.states] == [int((a.nfe > k).sum()) for k in range(a.nfe.max())]
    assert sum(len(x) for x in rounds.states) == sum(len(x) for x in steps.states) == a.nfe.sum()
