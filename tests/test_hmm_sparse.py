"""The ``hmm-sparse`` preset: an HMM with a strict support, so that its SER means something (Figure 1's HMM panel)."""

import hashlib

import numpy as np
import pytest

from mdmt.constructions.languages import NGram, PRESETS, preset, random_hmm
from mdmt.constructions.reverse.metrics import sample_metrics
from mdmt.constructions.reverse.sampler import sample_mdm

# Fingerprints of each Table 1 preset at seed 0, recorded with the generator as it was before hmm-sparse was
# added (commit fcf6787's parent, run side by side with the current code: identical): adding a preset must
# leave the others unchanged.  A fingerprint is, per array, the SHA-256 of its support pattern (which entries
# are nonzero: exact on any machine) and its dot product with fixed weights (checked to 1e-10 relative).
# Raw float bytes are not compared: np.exp and np.log round the last bit differently on different CPUs.
TABLE1_FINGERPRINTS = {
    "2gram": ("c97898d23dddc6af", [-0.18661726176063462, 0.028611676513872197]),
    "3gram": ("caf2c178f04f363b", [-0.045177527787814975, -1.5373061849629439]),
    "4gram": ("3eb837a00a554517", [-0.011064962236178498, -4.7553798948065911]),
    "hmm": ("6a654e73114e79e3", [0.0012555313850264663, -0.96659555862728097, -1.5108212920667041]),
    "2gram-ter": ("71e232cc415bd828", [-0.18588686959194578, 0.031516723645553552]),
    "3gram-ter": ("51cfa32fece0135f", [-0.044811672312596418, -1.5363728649674977]),
    "4gram-ter": ("a240facb7a0d5897", [-0.01105460951332392, -4.7409217407678046]),
    "hmm-ter": ("e6cb9c9c356d2ba8", [0.00086681031718330304, -0.95709220295234243, -1.5062974383908996]),
}


def _fingerprint(q):
    arrays = [q.initial_, q.transition_] if isinstance(q, NGram) else [q.startprob_, q.transmat_, q.emissionprob_]
    support, probes = hashlib.sha256(), []
    for a in arrays:
        a = np.asarray(a, dtype=np.float64).ravel()
        support.update(np.packbits(a > 0).tobytes())
        probes.append(float(a @ (((np.arange(a.size) * 7919) % 101) / 101 - 0.5)))
    return support.hexdigest()[:16], probes


@pytest.mark.parametrize("name", sorted(TABLE1_FINGERPRINTS))
def test_the_table1_presets_are_unchanged(name):
    support, probes = _fingerprint(preset(name, 0))
    want_support, want_probes = TABLE1_FINGERPRINTS[name]
    assert support == want_support
    np.testing.assert_allclose(probes, want_probes, rtol=1e-10, atol=1e-12)


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
    assert q.in_support(q.sample_sequences(500, 16, seed=1)).all()


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
