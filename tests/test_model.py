"""The transformer of Section 5.1: SUBS output, bidirectional MDM vs causal AR, positions, KV cache."""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import numpy as np
import torch

from mdmt.runtime.validation import MASK
from mdmt.empirical.model import POSITIONS, ModelConfig, ar_input, subs_log_probs
from mdmt.empirical.sampling import MDMDenoiser, ar_logits, ar_sample
from tests.helpers_empirical import _random_model

torch.set_num_threads(1)


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
    assert (t.d_model, t.n_layers, t.n_heads, t.causal, t.ngram, t.neighbours, t.window, t.recurrent) == (
        64, 2, 4, True, 4, 0, 0, 64)
    assert ModelConfig.preset("tiny", 8, seq_len=2).seq_len == 2  # the n-gram layer reads any length
    assert (p.neighbours, p.window, p.recurrent, p.hmm_states, p.ngram) == (0, 0, 0, 0, 0)  # Table 2's transformer
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


@pytest.mark.parametrize("neighbours,window,recurrent,hmm_states,ngram",
                         [(0, 0, 0, 0, 0), (2, 0, 0, 0, 0), (2, 3, 0, 0, 0), (2, 3, 6, 0, 0), (0, 0, 0, 5, 0),
                          (2, 3, 6, 5, 0), (0, 0, 0, 0, 3), (2, 3, 6, 5, 4)])
def test_mdm_is_bidirectional_and_ar_is_causal(neighbours, window, recurrent, hmm_states, ngram):
    for causal in (False, True):
        m = _random_model(V=4, causal=causal, neighbours=neighbours, window=window, recurrent=recurrent,
                          hmm_states=hmm_states, ngram=ngram)
        x = torch.randint(0, 4, (1, 8), generator=torch.Generator().manual_seed(2))
        y = x.clone()
        y[0, 6] = (y[0, 6] + 1) % 4  # change a late token
        d = (m(x) - m(y)).abs()[0, :6].max().item()  # effect on earlier positions
        assert (d < 1e-6) if causal else (d > 1e-4)


@pytest.mark.parametrize("positions,neighbours,window,recurrent,hmm_states,ngram",
                         [(p, 0, 0, 0, 0, 0) for p in POSITIONS] + [("rotary+learned", 3, 0, 0, 0, 0),
                                                                    ("rotary+learned", 3, 3, 0, 0, 0),
                                                                    ("rotary+learned", 3, 3, 5, 0, 0),
                                                                    ("learned", 0, 0, 4, 0, 0),
                                                                    ("rotary+learned", 3, 3, 5, 6, 0),
                                                                    ("learned", 0, 0, 0, 0, 4),
                                                                    ("rotary+learned", 3, 3, 5, 0, 3)])
def test_kv_cache_logits_equal_uncached(positions, neighbours, window, recurrent, hmm_states, ngram):
    m = _random_model(V=5, causal=True, L=12, positions=positions, neighbours=neighbours, window=window,
                      recurrent=recurrent, hmm_states=hmm_states, ngram=ngram)
    x = torch.randint(0, 5, (3, 12), generator=torch.Generator().manual_seed(3))
    full = m(ar_input(x, 5))  # one pass with the causal mask
    cached = ar_logits(m, x, use_cache=True)
    rerun = ar_logits(m, x, use_cache=False)
    assert torch.allclose(cached, full, atol=1e-5) and torch.allclose(rerun, full, atol=1e-5)
    a = ar_sample(m, 6, 12, seed=4, use_cache=True)
    b = ar_sample(m, 6, 12, seed=4, use_cache=False)
    assert np.array_equal(a.samples, b.samples)  # same draws either way


def test_recurrent_layer_carries_context_both_ways_in_the_mdm_and_forward_in_the_ar_model():
    """With the transformer blocks silenced (their residual projections zeroed) and no neighbour
    embedding, only the recurrent layer moves information between positions: the MDM's output at a
    position depends on tokens on both sides, far ones included; the AR model's on earlier ones only;
    without the layer on none."""
    for causal, recurrent in ((False, 6), (True, 6), (False, 0)):
        m = _random_model(V=4, causal=causal, L=10, recurrent=recurrent)
        with torch.no_grad():
            for block in m.blocks:
                block.attn.proj.weight.zero_(), block.attn.proj.bias.zero_()
        x = torch.randint(0, 4, (1, 10), generator=torch.Generator().manual_seed(7))
        base = m(x)[0]
        for j in (0, 9):  # change the first, then the last token
            y = x.clone()
            y[0, j] = (y[0, j] + 1) % 4
            moved = ((m(y)[0] - base).abs().amax(-1) > 1e-6).nonzero().flatten().tolist()
            if not recurrent:
                want = [j]
            elif causal:
                want = list(range(j, 10))
            else:
                want = list(range(10))
            assert moved == want, (causal, recurrent, j, moved)
    with pytest.raises(ValueError, match=r"recurrent must be a non-negative integer \(0: off\), got -1"):
        ModelConfig(recurrent=-1)
    with pytest.raises(ValueError, match="recurrent .* got True"):
        ModelConfig(recurrent=True)


def test_neighbour_embedding_sees_exactly_the_offsets_it_names():
    """The neighbour embedding alone (attention and MLP removed): position p depends on p - K .. p + K only."""
    for causal, K in ((False, 2), (True, 2)):
        m = _random_model(V=4, causal=causal, L=10, neighbours=K, positions="learned")
        x = torch.randint(0, 4, (1, 10), generator=torch.Generator().manual_seed(5))
        base = m.neighbour_embedding(x, 0)[0]  # (L, C)
        for j in range(10):
            y = x.clone()
            y[0, j] = (y[0, j] + 1) % 4
            changed = ((m.neighbour_embedding(y, 0)[0] - base).abs().amax(-1) > 1e-6).nonzero().flatten().tolist()
            want = [p for p in range(10) if (j < p <= j + K if causal else 0 < abs(p - j) <= K)]
            assert changed == want, (causal, j, changed)
    with pytest.raises(ValueError, match="neighbours must be an integer in 0..seq_len = 8, got -1"):
        ModelConfig(seq_len=8, neighbours=-1)
    m = _random_model(V=3, L=8, neighbours=2)  # a shorter input: positions past its end read as outside
    assert m(torch.zeros(2, 5, dtype=torch.long)).shape == (2, 5, 3)


@pytest.mark.parametrize("causal,K,w", [(False, 2, 3), (False, 2, 5), (True, 3, 2), (True, 2, 3)])
def test_window_embedding_equals_tables_read_by_hand(causal, K, w):
    """neighbour_embedding against a per-position loop over the tables: each offset's row plus, per
    run a..a+w-1 inside the neighbourhood, the row of its joint id sum_j c_j (V + 2)^j."""
    V, L = 3, 9
    m = _random_model(V=V, causal=causal, L=L, neighbours=K, window=w, positions="learned")
    x = torch.randint(0, V + 1, (2, L), generator=torch.Generator().manual_seed(6))  # tokens and the mask id
    got = m.neighbour_embedding(x, 0)
    hi = 0 if causal else K  # the neighbourhood: offsets -K..hi
    starts = [a for a in range(-K, hi + 1) if a + w - 1 <= hi]
    offsets = [o for o in range(-K, hi + 1) if o]
    assert m.window_starts == starts and len(starts) == (K + 2 - w if causal else 2 * K + 2 - w)
    for b in range(2):
        c = [int(v) for v in x[b]]
        at = lambda p: c[p] if 0 <= p < L else V + 1  # noqa: E731  (outside the sequence: id V + 1)
        for p in range(L):
            want = sum(m.near.weight[j * (V + 2) + at(p + o)] for j, o in enumerate(offsets))
            for r, a in enumerate(starts):
                joint = sum(at(p + a + j) * (V + 2) ** j for j in range(w))
                want = want + m.runs.weight[r * (V + 2) ** w + joint]
            assert torch.allclose(got[b, p], want, atol=1e-6), (b, p)


@pytest.mark.parametrize("cfg", [ModelConfig.preset("tiny", 8), ModelConfig.preset("tiny", 8, causal=True),
                                 ModelConfig(vocab_size=5, neighbours=2, window=3), ModelConfig(vocab_size=5),
                                 ModelConfig(vocab_size=5, recurrent=48), ModelConfig(vocab_size=5, recurrent=48, causal=True),
                                 ModelConfig(vocab_size=5, hmm_states=40), ModelConfig(vocab_size=5, hmm_states=40, causal=True),
                                 ModelConfig(vocab_size=5, ngram=4), ModelConfig(vocab_size=5, ngram=3, causal=True)])
def test_estimated_bytes_counts_every_table(cfg):
    """With no batch the estimate is the float32 parameters; it leaves out only biases and LayerNorms (< 2 %)."""
    from mdmt.empirical.model import Transformer, estimated_bytes

    assert estimated_bytes(cfg, 0) / 4 == pytest.approx(Transformer(cfg).num_parameters(), rel=0.02)


def test_window_validation_names_the_value():
    with pytest.raises(ValueError, match=r"window must be 0 or an integer in 2..5 .*neighbours = 2\), got 6"):
        ModelConfig(neighbours=2, window=6)
    with pytest.raises(ValueError, match=r"window must be 0 or an integer in 2..3 .* got 4"):
        ModelConfig(neighbours=2, window=4, causal=True)  # AR runs end at offset 0
    with pytest.raises(ValueError, match="got 1"):
        ModelConfig(neighbours=2, window=1)  # a run of one id is the neighbour embedding
    with pytest.raises(ValueError, match="got 2"):
        ModelConfig(neighbours=0, window=2)
    with pytest.raises(ValueError, match=r"window = 6 needs \(V \+ 2\)\^w = 1771561 ids per table \(V = 9\)"):
        ModelConfig(vocab_size=9, neighbours=3, window=6)


def test_bad_tokens_raise_value_error():
    m = _random_model(V=3)
    with pytest.raises(ValueError, match="token 7 at sequence 0, position 2"):
        MDMDenoiser(m)(np.array([[0, 1, 7, MASK, 0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="seq_len"):
        m(torch.zeros(1, 9, dtype=torch.long))


def test_devices_are_checked_by_name():
    from mdmt.empirical.device import torch_device

    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device(None).type in ("cpu", "cuda")
    for bad in ("x", "", "vulkan", 3.5):
        with pytest.raises(ValueError, match="device"):
            torch_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            torch_device("cuda:7")
