"""The n-gram layer (mdmt.empirical.ngram_layer): with a language's own table it is that language's exact posterior.

The reference is the language's ``posterior_marginals`` (scaled forward-backward of
mdmt.constructions.languages on the n-gram's tables), a separate code path; the layer's table is
built here from the language's ``score`` of short prefixes (the rows with the start symbol) and
its transition table (the rest), not from anything the layer computes.
"""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import itertools

import numpy as np
import torch

from mdmt.constructions.languages.spec import language_from_spec
from mdmt.runtime.validation import MASK
from mdmt.empirical.model import ModelConfig, Transformer, ar_input, estimated_bytes
from mdmt.empirical.ngram_layer import NgramLayer
from tests.helpers_empirical import _random_model, masked_layer_laws

torch.set_num_threads(1)


def _table_of(lang, order: int) -> np.ndarray:
    """P(next | context) for every context of ``order - 1`` symbols (tokens or the start symbol s = V), big-endian.

    A context (s, .., s, c_1, .., c_j) with j < n - 1 is the start of the sequence: the law of
    x_{j+1} given x_1..x_j, a ratio of the language's scores of prefixes (the law of a prefix is the
    marginal of the language).  Any other context is the language's transition row of its last n - 1
    tokens.  Contexts that cannot occur (s after a token) get the uniform law.
    """
    V, n, W = lang.n_symbols, lang.n, lang.n_symbols + 1
    table = np.full((W ** (order - 1), V), 1.0 / V)
    for row, ctx in enumerate(itertools.product(range(W), repeat=order - 1)):
        starts = [i for i, c in enumerate(ctx) if c == V]
        tokens = list(ctx[starts[-1] + 1:] if starts else ctx)
        if V in tokens or (starts and starts != list(range(len(starts)))):
            continue
        if starts and len(tokens) < n - 1:
            prefix = lang.log_likelihood(np.array([tokens]))[0] if tokens else 0.0
            table[row] = np.exp([lang.log_likelihood(np.array([tokens + [d]]))[0] - prefix for d in range(V)])
        else:
            last = tokens[-(n - 1):]
            table[row] = lang.transition_[sum(c * V ** (n - 2 - i) for i, c in enumerate(last))]
    return table


def _layer_of(lang, order: int, causal: bool) -> NgramLayer:
    layer = NgramLayer(order, lang.n_symbols, causal).double()
    with torch.no_grad():  # log 0 = -inf logits: softmax gives exactly 0
        layer.logits.copy_(torch.log(torch.tensor(_table_of(lang, order))))
    return layer


def _ids(Xm, V):
    return torch.as_tensor(np.where(Xm == MASK, V, Xm))


@pytest.mark.parametrize("spec,order", [("preset:2gram-ter", 2), ("preset:2gram", 4), ("preset:3gram", 3),
                                        ("preset:3gram-ter", 4), ("preset:4gram-ter", 4), ("preset:4gram", 5)])
def test_mdm_layer_with_the_language_table_is_the_exact_posterior(spec, order):
    """Orders equal to and above the language's (a higher-order table holds a lower-order language exactly);
    the CPU path (compiled kernels)."""
    lang = language_from_spec(spec)
    layer = _layer_of(lang, order, causal=False)
    for logp, q, masked in masked_layer_laws(lang, layer, 12, 23, (0.05, 0.5, 0.95)):
        assert np.abs(logp.exp().numpy()[masked] - q[masked]).max() < 1e-12, spec
        assert torch.allclose(logp.exp().sum(-1)[masked], torch.ones(int(masked.sum()), dtype=torch.float64))
        assert torch.all(logp[~masked] == 0)  # a revealed input: SUBS carries the token over, the layer adds nothing


@pytest.mark.parametrize("spec,order", [("preset:3gram-ter", 3), ("preset:4gram-ter", 4), ("preset:2gram", 3)])
def test_ar_layer_with_the_language_table_is_the_exact_next_token_law(spec, order):
    """The causal layer's log-probabilities along x sum to log q(x) (the language's scaled forward pass)."""
    lang = language_from_spec(spec)
    layer = _layer_of(lang, order, causal=True)
    X = lang.sample_sequences(16, 21, np.random.default_rng(1))
    with torch.no_grad():
        logp = layer(ar_input(torch.as_tensor(X), lang.n_symbols))
        tail = layer(ar_input(torch.as_tensor(X), lang.n_symbols), start=9)  # decoding with a history
    got = logp.gather(-1, torch.as_tensor(X)[..., None]).squeeze(-1).sum(1).numpy()
    assert np.allclose(got, lang.log_likelihood(X), rtol=0, atol=1e-10)
    assert torch.equal(tail, logp[:, 9:])


def test_long_sequences_do_not_underflow():
    """Renormalised messages: L = 4096 in float32 gives finite laws that match the exact posterior."""
    lang = language_from_spec("preset:4gram-ter")
    layer = _layer_of(lang, 4, causal=False).float()
    X = lang.sample_sequences(2, 4096, np.random.default_rng(2))
    Xm = np.where(np.random.default_rng(3).random(X.shape) < 0.6, MASK, X)
    with torch.no_grad():
        logp = layer(_ids(Xm, lang.n_symbols))
    assert torch.isfinite(logp).all()
    q = lang.posterior_marginals(Xm)
    masked = Xm == MASK
    assert np.abs(logp.exp().numpy()[masked] - q[masked]).max() < 1e-4  # float32


def test_the_mdm_layer_reads_only_the_window_around_a_fully_masked_run():
    """A run of n - 1 revealed tokens separates (Definition B.4): tokens beyond it do not move the posterior."""
    layer = NgramLayer(3, 4, causal=False)
    with torch.no_grad():
        layer.logits.copy_(torch.randn(layer.logits.shape, generator=torch.Generator().manual_seed(0)))
    x = torch.tensor([[1, 2, 4, 4, 0, 3, 2, 1, 0, 4, 3]])  # 4 = masked; positions 4, 5 hold the separator (0, 3)
    base = layer(x)[0]
    for j, moves in ((0, True), (1, True), (5, True), (6, False), (8, False), (10, False)):
        y = x.clone()
        y[0, j] = (y[0, j] + 1) % 4
        changed = (layer(y)[0, 2:4] - base[2:4]).abs().max().item() > 1e-6
        assert changed == moves, j


def test_network_output_adds_the_layer_law():
    for causal in (False, True):
        m = _random_model(V=4, causal=causal, L=10, ngram=3)
        x = torch.randint(0, 5, (2, 10), generator=torch.Generator().manual_seed(7))
        with torch.no_grad():
            m.head.weight.zero_()  # head silenced: the output is the layer's law
            assert torch.allclose(m(x), m.ngram(x), atol=1e-6)


def test_ngram_validation_names_the_value():
    for bad in (-1, 1, True, 2.0):
        with pytest.raises(ValueError, match=rf"ngram must be 0 \(off\) or an order >= 2, got {bad!r}"):
            ModelConfig(ngram=bad)
    with pytest.raises(ValueError, match=r"ngram = 7 needs \(V \+ 1\)\^\(n - 1\) contexts \(V = 8\); at most 65536"):
        ModelConfig(vocab_size=8, ngram=7)
    with pytest.raises(ValueError, match=r"ngram = 100"):
        ModelConfig(vocab_size=2, ngram=100)
    cfg = ModelConfig(vocab_size=8, ngram=4)
    assert Transformer(cfg).ngram.logits.shape == (729, 8)
    assert estimated_bytes(cfg, 0) / 4 == pytest.approx(Transformer(cfg).num_parameters(), rel=0.02)


@pytest.mark.parametrize("order,V,L,frac", [(2, 3, 7, 0.4), (3, 3, 9, 0.4), (4, 4, 12, 0.4), (4, 4, 12, 0.95),
                                            (3, 5, 20, 0.1), (4, 3, 16, 1.0)])
def test_compiled_posterior_and_its_gradient_equal_the_tensor_recursion(order, V, L, frac):
    """The CPU kernels (mdmt.empirical.ngram_kernels, a hand-written adjoint) against the batched tensor
    recursion differentiated by autograd, on random tables and masks: values and gradients to rounding."""
    layer = NgramLayer(order, V, causal=False).double()
    g = torch.Generator().manual_seed(order * 100 + L)
    with torch.no_grad():
        layer.logits.copy_(torch.randn(layer.logits.shape, dtype=torch.float64, generator=g))
    x = torch.randint(0, V, (6, L), generator=g)
    ids = torch.where(torch.rand(6, L, generator=g) < frac, torch.tensor(V), x)
    weights = torch.randn(6, L, V, dtype=torch.float64, generator=g)
    grads = []
    for run in (layer, layer._mdm_torch):
        out = run(ids)
        (out * weights).sum().backward()
        grads.append((out.detach(), layer.logits.grad.clone()))
        layer.logits.grad = None
    (a, ga), (b, gb) = grads
    assert torch.equal(a == 0, b == 0) and torch.allclose(a, b, rtol=0, atol=1e-13)
    assert torch.allclose(ga, gb, rtol=0, atol=1e-12) and gb.abs().max() > 0.1


def test_a_row_the_table_excludes_gives_nan_on_both_paths():
    """Revealed tokens impossible under the table (a diverged step): NaN for that row, not an error or a number."""
    layer = NgramLayer(2, 3, causal=False).double()
    with torch.no_grad():
        layer.logits.copy_(torch.log(torch.tensor([[0.5, 0.5, 0.0], [1 / 3] * 3, [1 / 3] * 3, [1 / 3] * 3],
                                                  dtype=torch.float64)))
    ids = torch.tensor([[0, 2, 3, 1], [0, 1, 3, 1]])  # 0 -> 2 has probability 0
    for run in (layer, layer._mdm_torch):
        out = run(ids)
        assert torch.isnan(out[0, 2]).all() and torch.isfinite(out[1, 2]).all()


@pytest.mark.parametrize("V, k", [(2, 1), (3, 2), (8, 3), (4, 3)])
def test_the_row_at_a_time_kernels_give_the_stored_array_kernels_numbers_bit_for_bit(V, k):
    """ngram_posterior (forward alone) and ngram_backward_recompute (the gradient recomputing each row) are what
    the layer runs; ngram_forward / ngram_backward (every row's arrays kept) are the reference: equal bit for bit,
    NaN and -inf included, on tables with zeros and half-masked inputs."""
    from mdmt.empirical.ngram_kernels import ngram_backward, ngram_backward_recompute, ngram_forward, ngram_posterior

    rng = np.random.default_rng(V * 10 + k)
    S = (V + 1) ** k
    P = rng.dirichlet(np.ones(V), size=S)
    P[rng.random((S, V)) < 0.25] = 0.0
    P[P.sum(1) == 0, 0] = 1.0
    P /= P.sum(1, keepdims=True)
    ids = rng.integers(0, V, (12, 17))
    ids[rng.random(ids.shape) < 0.5] = V
    stored = ngram_forward(P, ids, V, k)
    assert np.array_equal(ngram_posterior(P, ids, V, k), stored[0], equal_nan=True)
    G = rng.normal(size=stored[0].shape)
    assert np.array_equal(ngram_backward_recompute(G, P, ids, V, k), ngram_backward(G, P, ids, V, k, *stored[1:]),
                          equal_nan=True)
