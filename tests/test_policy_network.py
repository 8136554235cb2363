"""Policies driven by a network: an MDM wrapped as MDMDenoiser is a denoiser like any other (exact law = sampler)."""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import numpy as np

from mdmt.constructions.reverse.policies import parse_policy
from mdmt.constructions.reverse.policy_exact import exact_policy_law
from mdmt.constructions.reverse.policy_sampler import sample_policy
from mdmt.empirical.sampling import MDMDenoiser

from .helpers_empirical import _bigram, _random_model
from .test_policies import _pooled_chi2


def test_network_driven_policies_sample_their_exact_law():
    lang, L = _bigram(), 4
    den = MDMDenoiser(_random_model(V=3, L=L, seed=1))
    for spec in ("confidence", "threshold:0.5"):
        pol = parse_policy(spec, 2)
        law = exact_policy_law(lang, L, pol, denoiser=den, support_only=False)
        res = sample_policy(lang, L, pol, 3000, denoiser=den, seed=4)
        counts = np.bincount(res.samples @ (3 ** np.arange(L - 1, -1, -1)), minlength=3 ** L)
        assert _pooled_chi2(law.result.p, counts) > 1e-3
        assert law.result.ser > 0  # a random network leaves the support; the law accounts for it exactly
