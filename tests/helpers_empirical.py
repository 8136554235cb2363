"""Micro models and languages shared by the tests of mdmt.empirical (all CPU, a few seconds each)."""

import numpy as np
import torch

from mdmt.constructions.languages import NGram
from mdmt.constructions.reverse.schedules import reveal_probabilities
from mdmt.empirical.model import ModelConfig, Transformer


def _bigram():
    """A 3-token bigram with a forbidden transition (2 -> 2), so that support violations are possible."""
    T = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.45, 0.55, 0.0]])
    return NGram(2, np.array([0.5, 0.3, 0.2]), T)


MICRO = dict(seq_len=8, d_model=32, n_layers=2, n_heads=2)


def _pi_linear(N):
    return reveal_probabilities("linear", N)


def _cfg(V, causal=False, L=8, positions="rotary+learned", neighbours=0, window=0, recurrent=0, hmm_states=0, ngram=0):
    return ModelConfig(vocab_size=V, causal=causal, positions=positions, neighbours=neighbours, window=window,
                       recurrent=recurrent, hmm_states=hmm_states, ngram=ngram, **{**MICRO, "seq_len": L})


def _random_model(V=3, causal=False, L=8, seed=0, positions="rotary+learned", neighbours=0, window=0, recurrent=0,
                  hmm_states=0, ngram=0):
    torch.manual_seed(seed)
    m = Transformer(_cfg(V, causal, L, positions, neighbours, window, recurrent, hmm_states, ngram))
    with torch.no_grad():  # larger weights than the 0.02 init, so tokens and positions matter
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()




def masked_layer_laws(lang, law, num, length, fracs, seed=0):
    """For each fraction f: (the layer's log-law, the language's exact posterior q(x_i | x_U), the mask) on ``num``
    sequences of ``lang`` with each position masked with probability f; ``law`` maps input ids (mask = V) to
    log-probabilities (B, L, V)."""
    import torch

    from mdmt.runtime.validation import MASK

    rng = np.random.default_rng(seed)
    X = lang.sample_sequences(num, length, rng)
    for frac in fracs:
        Xm = np.where(rng.random(X.shape) < frac, MASK, X)
        with torch.no_grad():
            logp = law(torch.as_tensor(np.where(Xm == MASK, lang.n_symbols, Xm)))
        yield logp, lang.posterior_marginals(Xm), Xm == MASK
