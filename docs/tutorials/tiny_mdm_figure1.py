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
# # Train a tiny MDM and draw its Figure 1 panel
#
# Section 5 of Feng et al. (arXiv 2502.09622) trains masked diffusion models and autoregressive models on
# n-gram languages and plots generative perplexity against the number of sampling steps N (Figure 1): the
# MDM approaches the AR model's perplexity with a few steps, independently of the length. This tutorial
# runs the same experiment at toy scale on a CPU in about a minute: a `tiny` MDM and its AR twin trained on
# a 2-gram preset at L = 16, the oracle MDM beside them, and both views of the figure.
#
# It needs the `empirical` extra (torch).

# %%
import tempfile

from mdmt import plots
from mdmt.empirical import Figure1, Figure1Config, set_threads

set_threads(1)  # one thread: the numbers do not depend on the machine's core count
cfg = Figure1Config(model="tiny", ter_languages=("preset:2gram-ter",), ser_languages=(), steps=(1, 2, 4, 8, 16),
                    lengths=(16, 32), length=16, train_steps=300, batch=32, num=256, learning_error_num=64,
                    val_size=128, seed=0)
out = tempfile.mkdtemp()
result = Figure1(cfg, out, device="cpu", progress=False, log=lambda *_: None).run()
print(len(result["rows"]), "points in", out)

# %% [markdown]
# Every point is a row: the language, the kind of sampler (oracle, trained MDM, AR), L, N, the generative
# perplexity with its 95% interval, the TER gap ln(perplexity) − H/L, the SER, and more.

# %%
import pandas as pd

rows = pd.DataFrame(result["rows"])
rows[rows["L"] == 16][["kind", "N", "gen_perplexity", "true_perplexity", "ter_gap", "ser"]].round(3)

# %% [markdown]
# ## The paper's axes
#
# Generative perplexity against N at the training length; the AR model (which decodes one token per step,
# N = L) is the horizontal line, the language's true perplexity exp(H/L) the dotted one.

# %%
plots.figure1_paper_figure(result)

# %% [markdown]
# ## The TER-gap view, across lengths
#
# The oracle MDM's TER gap against N at L = 16 and 32 falls on one curve: the number of steps a target
# needs does not grow with L (Theorem 4.2). The last panel shows the smallest swept N reaching the target
# against L, with the exact value of the (C4) chain bound.

# %%
plots.figure1_figure(result)

# %% [markdown]
# The command line does the same at full scale: `mdmt figure1 --model tiny --jobs 2 --out runs/fig1`
# (about an hour on two cores), writing figure1.png and figure1_paper.png (or `--format pdf`).
