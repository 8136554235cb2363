"""The HMM layer (mdmt.empirical.hmm_layer): with a language's own parameters it is that language's exact posterior.

The reference is the language's ``posterior_marginals`` (mdmt.constructions.languages: scaled
forward-backward over the window states of an n-gram, or the HMM's states), a separate code path.
"""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import numpy as np
import torch

from mdmt.constructions.languages.ngram import as_hmm
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.runtime.validation import MASK
from mdmt.empirical.hmm_layer import HMMLayer
from mdmt.empirical.model import ModelConfig, Transformer, ar_input
from tests.helpers_empirical import _random_model, masked_layer_laws

torch.set_num_threads(1)


def _layer_of(language, causal: bool) -> HMMLayer:
    """An HMM layer holding the language's own (pi, A, B) (log 0 = -inf logits: softmax gives exactly 0)."""
    h = as_hmm(language)
    S, V = h.emissionprob_.shape
    layer = HMMLayer(S, V, causal).double()
    with torch.no_grad():
        for p, law in ((layer.init_logits, h.startprob_), (layer.trans_logits, h.transmat_),
                       (layer.emit_logits, h.emissionprob_)):
            p.copy_(torch.log(torch.tensor(law, dtype=torch.float64)))
    return layer


@pytest.mark.parametrize("spec", ["preset:hmm-ter", "preset:hmm-sparse", "preset:3gram-ter", "preset:3gram",
                                  "interval:3"])
def test_mdm_layer_with_the_language_parameters_is_the_exact_posterior(spec):
    lang = language_from_spec(spec)
    layer = _layer_of(lang, causal=False)
    posts = []  # the layer's state laws of the same inputs

    def law(ids):
        logp, post, _ = layer(ids)
        posts.append(post)
        return logp

    for logp, q, masked in masked_layer_laws(lang, law, 24, 36, (0.1, 0.5, 0.9)):
        assert np.abs(logp.exp().numpy()[masked] - q[masked]).max() < 1e-12, spec
        assert torch.allclose(posts[-1].sum(-1), torch.ones(masked.shape, dtype=torch.float64))


@pytest.mark.parametrize("spec", ["preset:hmm-ter", "preset:3gram-ter"])
def test_ar_layer_with_the_language_parameters_is_the_exact_next_token_law(spec):
    """The causal layer's law at position t is q(x_t | x_<t): its log-probabilities along x sum to log q(x)."""
    lang = language_from_spec(spec)
    layer = _layer_of(lang, causal=True)
    X = lang.sample_sequences(16, 40, np.random.default_rng(1))
    with torch.no_grad():
        logp, _, _ = layer(ar_input(torch.as_tensor(X), lang.n_symbols))
    got = logp.gather(-1, torch.as_tensor(X)[..., None]).squeeze(-1).sum(1).numpy()
    assert np.allclose(got, lang.log_likelihood(X), rtol=0, atol=1e-10)


def test_long_sequences_do_not_underflow():
    """Renormalised messages: L = 4096 gives finite laws (unscaled products of 4096 probabilities underflow)."""
    lang = language_from_spec("preset:3gram-ter")
    layer = _layer_of(lang, causal=False).float()
    X = lang.sample_sequences(2, 4096, np.random.default_rng(2))
    Xm = np.where(np.random.default_rng(3).random(X.shape) < 0.3, MASK, X)
    with torch.no_grad():
        logp, _, _ = layer(torch.as_tensor(np.where(Xm == MASK, lang.n_symbols, Xm)))
    assert torch.isfinite(logp).all()
    q = lang.posterior_marginals(Xm[:, :512])
    with torch.no_grad():
        short, _, _ = layer(torch.as_tensor(np.where(Xm[:, :512] == MASK, lang.n_symbols, Xm[:, :512])))
    masked = Xm[:, :512] == MASK
    assert np.abs(short.exp().numpy()[masked] - q[masked]).max() < 1e-4  # float32


def test_network_output_adds_the_layer_law_and_the_layer_moves_context_both_ways():
    """With the blocks silenced and no other mixing, the MDM's output at a position depends on tokens on both sides
    (through the layer), the AR model's on earlier ones only (its input 0 is the BOS slot, which the layer does not
    read); the logits are the head's plus the layer's law."""
    for causal in (False, True):
        m = _random_model(V=4, causal=causal, L=10, hmm_states=5)
        with torch.no_grad():
            for block in m.blocks:
                block.attn.proj.weight.zero_(), block.attn.proj.bias.zero_()
        x = torch.randint(0, 4, (1, 10), generator=torch.Generator().manual_seed(7))
        base = m(x)[0]
        for j in (1 if causal else 0, 9):
            y = x.clone()
            y[0, j] = (y[0, j] + 1) % 4
            moved = ((m(y)[0] - base).abs().amax(-1) > 1e-6).nonzero().flatten().tolist()
            assert moved == (list(range(j, 10)) if causal else list(range(10))), (causal, j, moved)
        with torch.no_grad():
            m.head.weight.zero_()
            assert torch.allclose(m(x), m.hmm(x)[0], atol=1e-6)  # head silenced: the output is the layer's law


def test_hmm_states_validation_names_the_value():
    for bad in (-1, True, 1.5, 5000):
        with pytest.raises(ValueError, match=rf"hmm_states must be an integer in 0..4096 \(0: off\), got {bad!r}"):
            ModelConfig(hmm_states=bad)
    assert Transformer(ModelConfig(vocab_size=3, hmm_states=4)).hmm.trans_logits.shape == (4, 4)
