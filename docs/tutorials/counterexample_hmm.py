# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Build, save and audit the counterexample HMM
#
# Theorem 4.4 of Feng et al. (arXiv 2502.09622) shows that no number of steps independent of L keeps
# the sequence error rate low, using an HMM over intervals of length l (16 symbols for l = 5). This
# tutorial builds it, writes it to a file, reads it back, and audits it: its support, its exact SER
# under the oracle MDM at small L by brute-force enumeration against the closed form, and an
# independent likelihood from hmmlearn.

# %%
import numpy as np

import mdmt

hmm = mdmt.interval_hmm(3)
print(f"{hmm.n_states} hidden states, {hmm.n_symbols} symbols")
print("rows of transmat_ sum to 1:", np.allclose(hmm.transmat_.sum(1), 1))

# %% [markdown]
# ## Save and load
#
# Files are JSON (or `.npz`), written atomically; the file records the name and any metadata.

# %%
import tempfile
from pathlib import Path

folder = Path(tempfile.mkdtemp())
path = mdmt.save_language(hmm, folder / "interval3.json", name="interval:3", metadata={"purpose": "tutorial"})
back = mdmt.load_language(path)
assert np.array_equal(back.transmat_, hmm.transmat_) and np.array_equal(back.emissionprob_, hmm.emissionprob_)
print(path.name, path.stat().st_size, "bytes")

# %% [markdown]
# ## Sample, score, and compare with hmmlearn
#
# The batch forms draw and score many sequences at once: `sample_sequences(n, L, seed)` and
# `log_likelihood(X)` (one value per row; masked positions are summed out). The names mdmt shares with
# hmmlearn mean what they mean there: `sample(n_samples, random_state)` returns one sequence with its hidden
# states, and `score(X, lengths)` the total log-likelihood of sequences concatenated in a column.

# %%
X = hmm.sample_sequences(5, 12, seed=0)
print(X)
print("log-likelihood of each sequence:", np.round(hmm.log_likelihood(X), 4))
print("total, hmmlearn's score:", round(hmm.score(X.reshape(-1, 1), lengths=[12] * 5), 4))
x, z = hmm.sample(12, random_state=0)
print("one sequence:", x[:, 0], "its hidden states:", z)

# %%
from mdmt.constructions.languages.io import to_hmmlearn

peer = to_hmmlearn(hmm)
ours = hmm.log_likelihood(X)
theirs = np.array([peer.score(row.reshape(-1, 1)) for row in X])
print("largest difference from hmmlearn:", np.abs(ours - theirs).max())
assert np.allclose(ours, theirs)

# %% [markdown]
# ## The exact SER against its closed form
#
# At L = 6 (two intervals) mdmt enumerates every trajectory of the reverse process with the oracle
# denoiser; the SER must equal the closed form 1 − ρ^(L/l) of the paper's proof.

# %%
from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
from mdmt.constructions.reverse.schedules import reveal_probabilities

for N in (1, 2, 3, 6):
    pi = reveal_probabilities("linear", N)
    exact = mdmt.exact_metrics(hmm, 6, pi)["ser"]
    closed = oracle_ser(3, 6, pi)
    print(f"N = {N}: enumeration {exact:.6f}, closed form {closed:.6f}")
    assert abs(exact - closed) < 1e-12
