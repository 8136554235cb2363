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
# # Bound curves for your n, ε and L
#
# Two questions a practitioner asks of Feng et al. (arXiv 2502.09622):
#
# * **TER (Theorem 4.2).** For an n-gram language over |V| symbols, how many sampling steps N make the
#   per-token KL of the MDM's output at most ε_learning + 4ε log|V|? The (C4) chain bound answers it
#   exactly for each L; Theorem 4.2 gives an explicit N independent of L.
# * **SER (Theorems 4.3, 4.4).** On the interval HMM, how does the sequence error rate fall with N,
#   and how large must N/L be?
#
# Each curve is one call returning a `Result`: the dict `mdmt curve ... --json` prints, with
# `.to_frame()`, `.to_csv()` and `.plot()`.

# %%
from mdmt.bounds import ser_curve, ter_curve

ter = ter_curve(n=3, eps=0.05, lengths=[256, 1024, 4096], V=8)
print("target (nats/token):", round(ter["target"], 4))
print("Theorem 4.2 step count:", ter["theorem42_steps"])
print("smallest N meeting the target, exact chain bound:", ter["min_steps"])

# %% [markdown]
# The smallest N barely moves as L grows 16-fold: the TER side of the paper. The table of the curve:

# %%
frame = ter.to_frame()
frame[frame["N"].isin([16, 64, 256, 1024])].pivot(index="N", columns="L", values="chain_bound").round(4)

# %%
fig = ter.plot()
fig

# %% [markdown]
# ## SER on the interval HMM
#
# `ser_curve(l, L)` gives the exact oracle SER 1 − ρ^(L/l) of the linear schedule at N = C L, beside
# Theorem 4.4's lower bound and Theorem 4.3's upper bound; `critical_c` is, for each L, the largest N/L
# at which the oracle's SER is still above 1/2. Like `ter_curve`, it takes one length or several
# (`ser_curve(4, [64, 512])`), and keys its per-length values by L.

# %%
ser = ser_curve(l=4, L=512)
print(f"critical C = {ser['critical_c'][512]:.4f} (N* = {ser['critical_steps'][512]}); "
      f"Theorem 4.4 constant C0 = {ser['theorem44_constant']:.4f}")
ser.to_frame()[["N", "C", "oracle_ser", "theorem44_lower", "theorem43_upper"]].round(4)

# %%
ser.plot()

# %% [markdown]
# The bounds hold at every N (a check you can state as code):

# %%
import numpy as np

s, lo, hi = ser.column("oracle_ser"), ser.column("theorem44_lower"), ser.column("theorem43_upper")
assert np.all(lo <= s + 1e-12) and np.all(s <= hi + 1e-12)

# %% [markdown]
# Both results write their rows as CSV (`ter.to_csv("ter.csv")`), and `mdmt.plots.save(fig, "ter.pdf", ...)`
# or `fig.savefig("ter.pdf")` gives a vector figure for a paper.
