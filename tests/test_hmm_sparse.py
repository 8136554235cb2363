"""The ``hmm-sparse`` preset: an HMM with a strict support, so that its SER means something (Figure 1's HMM panel)."""

import hashlib

import numpy as np
import pytest

from mdmt.constructions.languages import NGram, PRESETS, preset, random_hmm
from mdmt.constructions.reverse.metrics import sample_metrics
from mdmt.constructions.reverse.sampler import sample_mdm

# SHA-256 (first 16 hex digits) of each Table 1 preset's arrays at seed 0, recorded with the generator
# as it was before hmm-sparse was added: adding a preset must leave the others bit for bit the same.
TABLE1_DIGESTS = {"2gram": "0c515aeadf9e7615", "3gram": "6bac6ff4aaafa21c", "4gram": "4a3a9c4d5c0fd181",
                  "hmm": "9601728da8cde626", "2gram-ter": "b504a04902d79b59", "3gram-ter": "465a8c04fde4e619",
                  "4gram-ter": "9b2d33c78f0809f2", "hmm-ter": "54cbd76b8a488703"}


def _digest(q):
    arrays = [q.initial_, q.transition_] if isinstance(q, NGram) else [q.startprob_, q.transmat_, q.emissionprob_]
    d = hashlib.sha256()
    for a in arrays:
        d.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return d.hexdigest()[:16]


def test_the_table1_presets_are_unchanged():
    assert {name: _digest(preset(name, 0)) for name in TABLE1_DIGESTS} == TABLE1_DIGESTS


@pytest.mark.parametrize("seed", range(5))
def test_hmm_sparse_prunes_emissions_and_transitions_and_has_a_strict_support(seed):
    q = preset("hmm-sparse", seed)
    p = PRESETS["hmm-sparse"]
    assert (q.n_states, q.n_symbols) == (32, 8) and p.emission_threshold == 0.3 and p.threshold == 0.06
    B, A = q.emissionprob_, q.transmat_
    assert np.all(B[B > 0] >= 0.3) and np.all(A[A > 0] >= 0.06)  # every kept entry is above its threshold
    assert (B > 0).sum(axis=1).max() <= 3 and (B > 0).sum(axis=1).mean() < 2  # a state emits a few of the 8 tokens
    assert (A > 0).sum(axis=1).mean() < 10
    # the support (decided exactly, by reachability) is a small part of V^16
    x = np.random.default_rng(seed).integers(0, 8, (4000, 16))
    assert q.in_support(x).mean() < 0.15
    assert q.in_support(q.sample(500, 16, seed=1)).all()


def test_hmm_sparse_oracle_ser_falls_with_the_number_of_steps():
    q = preset("hmm-sparse", 0)
    ser = [sample_metrics(q, sample_mdm(q, 32, np.full(N, 1 / N), 600, seed=2).samples) for N in (1, 8, 256)]
    assert ser[0]["ser_ci"][0] > 0.9  # one step: 32 independent draws, almost never a sequence of the language
    assert ser[1]["ser_ci"][0] > ser[2]["ser_ci"][1]  # more steps, fewer errors
    assert ser[2]["ser"] < 0.1


def test_emission_threshold_is_validated_and_defaults_to_the_threshold():
    a = random_hmm(6, 4, 2.0, 0.05, seed=3)
    assert np.array_equal(a.emissionprob_, random_hmm(6, 4, 2.0, 0.05, seed=3, emission_threshold=0.05).emissionprob_)
    with pytest.raises(ValueError, match="threshold must be in"):
        random_hmm(6, 4, 2.0, 0.05, seed=3, emission_threshold=1.5)
