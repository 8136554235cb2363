"""Empirical side: MDM/AR transformer, ELBO training with checkpoint/resume, ddpm_cache sampling, metrics.

All tests run on CPU with micro models (a few seconds each).
"""

import json
import numpy as np
import pytest
import torch

from constructions import NGram
from constructions.validation import MASK
from empirical.metrics import entropy_rate, generative_perplexity, learning_error, ser
from empirical.model import POSITIONS, ModelConfig, Transformer, ar_input, subs_log_probs
from empirical.sampling import MDMDenoiser, ar_logits, ar_sample, ddpm_cache
from empirical.train import load_model, train

torch.set_num_threads(1)


def _pi_linear(N):
    try:
        from constructions.schedules import reveal_probabilities

        return reveal_probabilities("linear", N)
    except ImportError:  # schedules module not available: linear schedule = uniform reveal step
        return np.full(N, 1.0 / N)


def _bigram():
    """A 3-token bigram with a forbidden transition (2 -> 2), so that support violations are possible."""
    T = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.45, 0.55, 0.0]])
    return NGram(2, np.array([0.5, 0.3, 0.2]), T)


def _language():
    try:
        from constructions.random_languages import preset

        return preset("2gram", 0)
    except ImportError:
        return _bigram()


MICRO = dict(seq_len=8, d_model=32, n_layers=2, n_heads=2)


def _cfg(V, causal=False, L=8, positions="rotary+learned"):
    return ModelConfig(vocab_size=V, causal=causal, positions=positions, **{**MICRO, "seq_len": L})


def _random_model(V=3, causal=False, L=8, seed=0, positions="rotary+learned"):
    torch.manual_seed(seed)
    m = Transformer(_cfg(V, causal, L, positions))
    with torch.no_grad():  # larger weights than the 0.02 init, so tokens and positions matter
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


# ----------------------------------------------------------------------------- model

def test_config_validation_and_presets():
    with pytest.raises(ValueError, match="d_model = 10 is not divisible by n_heads = 4"):
        ModelConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="n_layers"):
        ModelConfig(n_layers=0)
    with pytest.raises(ValueError, match="unknown model preset 'huge'"):
        ModelConfig.preset("huge", 8)
    p = ModelConfig.preset("paper", 8)
    assert (p.d_model, p.n_layers, p.n_heads, p.seq_len) == (512, 8, 8, 512)  # Table 2
    t = ModelConfig.preset("tiny", 8, causal=True)
    assert (t.d_model, t.n_layers, t.n_heads, t.causal) == (64, 2, 4, True)
    assert t.positions == "rotary+learned"
    with pytest.raises(ValueError, match="positions must be one of .* got 'sinusoidal'"):
        ModelConfig(positions="sinusoidal")
    with pytest.raises(ValueError, match="rotary positions need an even head size"):
        ModelConfig(d_model=12, n_heads=4, positions="rotary")
    ModelConfig(d_model=12, n_heads=4, positions="learned")  # no rotation, any head size


@pytest.mark.parametrize("positions", POSITIONS)
def test_each_position_encoding_is_built_and_makes_outputs_position_dependent(positions):
    m = _random_model(V=3, positions=positions)
    assert hasattr(m, "pos") == ("learned" in positions)
    assert hasattr(m, "rot_cos") == ("rotary" in positions)
    x = torch.zeros(1, 8, dtype=torch.long)  # the same token everywhere ...
    x[0, 0] = x[0, 7] = 3  # ... but the mask id at both ends: only position tells the two apart
    out = m(x)[0]
    assert (out[0] - out[7]).abs().max().item() > 1e-4


def test_subs_output_is_one_hot_at_revealed_and_a_distribution_at_masked():
    m = _random_model(V=5)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 5, (4, 8), generator=g)
    x[torch.rand(4, 8, generator=g) < 0.5] = MASK
    p = subs_log_probs(m, x).exp()
    assert p.shape == (4, 8, 5)  # V outputs, none for the mask
    assert torch.allclose(p.sum(-1), torch.ones(4, 8), atol=1e-5)
    rev = x != MASK
    assert torch.equal(p[rev].argmax(-1), x[rev]) and torch.all(p[rev].max(-1).values == 1.0)


def test_mdm_is_bidirectional_and_ar_is_causal():
    for causal in (False, True):
        m = _random_model(V=4, causal=causal)
        x = torch.randint(0, 4, (1, 8), generator=torch.Generator().manual_seed(2))
        y = x.clone()
        y[0, 6] = (y[0, 6] + 1) % 4  # change a late token
        d = (m(x) - m(y)).abs()[0, :6].max().item()  # effect on earlier positions
        assert (d < 1e-6) if causal else (d > 1e-4)


@pytest.mark.parametrize("positions", POSITIONS)
def test_kv_cache_logits_equal_uncached(positions):
    m = _random_model(V=5, causal=True, L=12, positions=positions)
    x = torch.randint(0, 5, (3, 12), generator=torch.Generator().manual_seed(3))
    full = m(ar_input(x, 5))  # one pass with the causal mask
    cached = ar_logits(m, x, use_cache=True)
    rerun = ar_logits(m, x, use_cache=False)
    assert torch.allclose(cached, full, atol=1e-5) and torch.allclose(rerun, full, atol=1e-5)
    a = ar_sample(m, 6, 12, seed=4, use_cache=True)
    b = ar_sample(m, 6, 12, seed=4, use_cache=False)
    assert np.array_equal(a.samples, b.samples)  # same draws either way


# ----------------------------------------------------------------------------- training

def test_loss_falls_on_a_tiny_run():
    lang = _bigram()
    res = train(_cfg(3), lang, steps=150, batch=32, lr=3e-3, seed=0, progress=False, eval_every=150, val_size=128, device="cpu")
    first, last = np.mean(res.losses[:5]), np.mean(res.losses[-5:])
    assert last < first - 0.1, (first, last)
    # the NELBO bounds the entropy rate from above (up to Monte Carlo noise of the validation set)
    assert res.val_nll > res.entropy_rate - 0.1
    ar = train(_cfg(3, causal=True), lang, steps=150, batch=32, lr=3e-3, seed=0, progress=False, eval_every=150, val_size=128, device="cpu")
    assert np.mean(ar.losses[-5:]) < np.mean(ar.losses[:5]) - 0.1


def test_resume_is_identical(tmp_path):
    lang = _bigram()
    kw = dict(steps=12, batch=8, lr=1e-3, seed=7, progress=False, eval_every=4, val_size=32, device="cpu")
    full = train(_cfg(3), lang, ckpt_path=tmp_path / "a.pt", **kw)
    part = train(_cfg(3), lang, ckpt_path=tmp_path / "b.pt", stop_at=5, **kw)
    assert part.step == 5
    rest = train(_cfg(3), lang, ckpt_path=tmp_path / "b.pt", resume=True, **kw)
    assert rest.step == 12 and rest.losses == full.losses and rest.history == full.history
    for (k, a), (_, b) in zip(full.model.state_dict().items(), rest.model.state_dict().items()):
        assert torch.equal(a, b), k
    assert torch.equal(load_model(tmp_path / "b.pt").tok.weight, full.model.tok.weight)
    with pytest.raises(ValueError, match="lr"):
        train(_cfg(3), lang, ckpt_path=tmp_path / "b.pt", resume=True, **{**kw, "lr": 2e-3})


def test_entropy_rate_exact_for_ngram_matches_brute_force():
    lang = _bigram()
    L = 4
    from itertools import product

    X = np.array(list(product(range(3), repeat=L)))
    lp = lang.score(X)
    fin = np.isfinite(lp)
    H = -(np.exp(lp[fin]) * lp[fin]).sum()  # brute-force enumeration of all 3^4 sequences
    assert entropy_rate(lang, L)["value"] == pytest.approx(H / L, rel=1e-9)


# ----------------------------------------------------------------------------- sampling

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
    lang = _language()
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
    from empirical.data import named_language

    lang = named_language("2gram-ter")  # full support: every partial state has a posterior
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
    assert ser(lang, res.samples)["ser"] == 0.0


def test_one_step_sampler_violates_the_support_and_metrics_see_it():
    lang = _bigram()
    res = ddpm_cache(lang, 400, 6, np.array([1.0]), seed=0)  # N = 1: all tokens drawn independently
    s = ser(lang, res.samples)
    # P(no 2->2 pair) < 1 with independent marginals, so some violations must show
    assert s["ser"] > 0 and s["ci"][0] <= s["ser"] <= s["ci"][1]
    gp = generative_perplexity(lang, res.samples)
    assert gp["gen_perplexity"] == float("inf")
    ok = res.samples[lang.in_support(res.samples)]
    assert np.isfinite(generative_perplexity(lang, ok)["gen_perplexity"])


# ----------------------------------------------------------------------------- learning error

class _OracleModel(torch.nn.Module):
    """The oracle denoiser q(x_i | x_U) wrapped as a torch module of the denoiser protocol."""

    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, X):
        return torch.as_tensor(self.lang.posterior_marginals(np.asarray(X)))


def test_learning_error_of_the_oracle_is_zero_and_of_a_random_model_is_not():
    lang = _bigram()
    oracle = _OracleModel(lang)
    le = learning_error(lang, lambda X: oracle(X).numpy(), 8, num=64, seed=0)
    assert le["mean"] <= 1e-6 and le["max"] <= 1e-6 and le["q90"] <= 1e-6 and le["q99"] <= 1e-6
    rnd = learning_error(lang, MDMDenoiser(_random_model(V=3)), 8, num=64, seed=0)
    assert rnd["mean"] > 1e-3 and rnd["max"] >= rnd["q99"] >= rnd["q90"]


def test_bad_tokens_raise_value_error():
    m = _random_model(V=3)
    with pytest.raises(ValueError, match="token 7 at sequence 0, position 2"):
        MDMDenoiser(m)(np.array([[0, 1, 7, MASK, 0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="seq_len"):
        m(torch.zeros(1, 9, dtype=torch.long))


@pytest.mark.gpu
def test_cuda_training_resume_and_sampling(tmp_path):
    """On CUDA (bf16 autocast): training runs, resumes to the same step count, samples are valid and seeded."""
    lang = _bigram()
    kw = dict(steps=20, batch=16, lr=3e-3, seed=1, progress=False, eval_every=10, val_size=64, device="cuda")
    part = train(_cfg(3), lang, ckpt_path=tmp_path / "c.pt", stop_at=10, **kw)
    rest = train(_cfg(3), lang, ckpt_path=tmp_path / "c.pt", resume=True, **kw)
    assert part.step == 10 and rest.step == 20 and len(rest.losses) == 20 and rest.losses[:10] == part.losses
    den = MDMDenoiser(rest.model)
    a = ddpm_cache(den, 32, 8, _pi_linear(4), seed=3, device="cuda")
    b = ddpm_cache(den, 32, 8, _pi_linear(4), seed=3, device="cuda")
    assert (a.samples != MASK).all() and set(np.unique(a.samples)) <= {0, 1, 2}
    assert np.array_equal(a.samples, b.samples)
    ar = train(_cfg(3, causal=True), lang, **{**kw, "steps": 5})
    assert ar_sample(ar.model, 8, 8, seed=0, device="cuda").samples.shape == (8, 8)


def test_cli_train_position_encoding(tmp_path, capsys):
    from mdmt.cli import main

    common = ["train", "--preset", "2gram", "-L", "8", "--steps", "2", "--batch", "4", "--no-progress", "--json"]
    assert main(common + ["--positions", "learned", "--out", str(tmp_path / "a")]) == 0
    assert json.loads(capsys.readouterr().out)["model_config"]["positions"] == "learned"
    assert main(common + ["--out", str(tmp_path / "b")]) == 0
    assert json.loads(capsys.readouterr().out)["model_config"]["positions"] == "rotary+learned"
    assert main(common + ["--positions", "sinusoidal", "--out", str(tmp_path / "c")]) == 2
    assert "got 'sinusoidal'" in capsys.readouterr().err
