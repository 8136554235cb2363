"""The three NELBO estimators of MDM training have the NELBO as their expectation (mdmt.empirical.model).

For a sequence x of length L the NELBO of the linear schedule is
sum over non-empty masks M of nll(x, M) / (|M| C(L, |M|)), with nll(x, M) the summed cross entropy
of the masked positions (the integral over t of (1/t) t^k (1 - t)^(L-k) is 1/(k C(L, k))).  Here
it is computed by enumerating all 2^L - 1 masks, and each estimator's law of masks and weight is
checked against it separately: the weights exactly (the law times the loss function's output,
summed over the masks), the laws by a chi-square test on draws from the noise functions.
"""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import itertools
from math import comb

import numpy as np
import torch
from scipy import stats

from mdmt.empirical.model import (ModelConfig, Transformer, count_noise, diffusion_noise, harmonic_noise, masked_nll,
                                  mdm_loss, mdm_loss_count, mdm_loss_harmonic)

torch.set_num_threads(1)
L = 4


def _masks():
    m = [bits for bits in itertools.product([False, True], repeat=L) if any(bits)]
    return torch.tensor(m)  # (2^L - 1, L)


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=3, seq_len=L, d_model=16, n_layers=1, n_heads=2))
    masks = _masks()
    X = torch.tensor([[0, 2, 1, 1]]).repeat(len(masks), 1)
    with torch.no_grad():
        nll = masked_nll(model, X, masks).sum(1).double()  # (2^L - 1,)
    k = masks.sum(1)
    sizes = torch.tensor([comb(L, int(j)) for j in k], dtype=torch.float64)
    nelbo = float((nll / (k * sizes)).sum())
    return model, masks, X, k, sizes, nll, nelbo


def test_each_weight_times_its_law_sums_to_the_nelbo(setup):
    model, masks, X, k, sizes, nll, nelbo = setup
    H = sum(1.0 / j for j in range(1, L + 1))
    with torch.no_grad():
        count = mdm_loss_count(model, X, k, masks).double()
        harmonic = mdm_loss_harmonic(model, X, masks).double()
        t = torch.full((len(masks),), 0.37)
        time = mdm_loss(model, X, t, masks).double()
    assert float((count / (L * sizes)).sum()) == pytest.approx(nelbo, rel=1e-6)  # P(M) = 1 / (L C(L, k))
    assert float((harmonic * (1.0 / k) / H / sizes).sum()) == pytest.approx(nelbo, rel=1e-6)  # P(M) = 1 / (k H_L C(L, k))
    # time: weight 1/t; E_t[(1/t) t^k (1-t)^(L-k)] = 1 / (k C(L, k)) makes the same sum
    assert torch.allclose(time * 0.37, nll, rtol=1e-5)


def _frequencies(draw, n_batches=400, batch=64):
    index = {tuple(m.tolist()): i for i, m in enumerate(_masks())}
    counts = np.zeros(len(index))
    g = torch.Generator().manual_seed(7)
    for _ in range(n_batches):
        for row in draw(batch, g):
            counts[index[tuple(row.tolist())]] += 1
    return counts


@pytest.mark.parametrize("name", ["count", "harmonic", "time"])
def test_each_noise_draws_its_law_of_masks(name):
    masks = _masks()
    k = masks.sum(1).numpy()
    sizes = np.array([comb(L, int(j)) for j in k], dtype=float)
    H = sum(1.0 / j for j in range(1, L + 1))
    if name == "count":
        draw, law = (lambda b, g: count_noise(b, L, g)[1]), 1.0 / (L * sizes)
    elif name == "harmonic":
        draw, law = (lambda b, g: harmonic_noise(b, L, g)[1]), 1.0 / (k * H * sizes)
    else:  # t uniform (t_min = 1e-3 is negligible here): P(M) = int t^k (1-t)^(L-k) dt = 1 / ((L+1) C(L, k));
        def draw(b, g):  # given a non-empty mask, 1 / (L C(L, k)): the count law
            _, m = diffusion_noise(b, L, g)  # the whole stratified batch, then the non-empty masks
            return m[m.any(1)]
        law = 1.0 / (L * sizes)
    counts = _frequencies(draw)
    assert stats.chisquare(counts, counts.sum() * law).pvalue > 1e-4
