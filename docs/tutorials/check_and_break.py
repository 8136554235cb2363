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
# # Check a theorem, then break it on purpose
#
# Theorem 4.2 of Feng et al. (arXiv 2502.09622) rests on the chain bound of Lemma B.9: for an n-gram
# language q and the reverse process p_N of N steps with a denoiser of learning error ε,
#
#     KL(q ‖ p_N) ≤ L ε + log|V| · E[Σ_j D_j],
#
# where D_j counts the dependencies revealed together in step j. This tutorial evaluates both sides
# **exactly** on small instances, lets mdmt look for a violation (there is none: the bound is
# attained), then halves the constant and watches mdmt return a *certified* counterexample.

# %%
import mdmt
from mdmt.bounds import parse_claim

claim = "KL <= L * eps + log(V) * E_D"
print(parse_claim(claim))

# %% [markdown]
# ## 1. Prove it, then search for a violation of the true bound
#
# `mdmt.refute` first tries a proof: at each L, N and process it combines the elemental Shannon inequalities
# and mdmt's documented lemmas (docs/claims.md, "Proofs") by a linear program and checks the combination
# exactly. Here two lemmas suffice -- KL ≤ E Σ_j TC (data processing over trajectories) and Lemma B.8
# (TC_j ≤ D_j log|V|) -- so the verdict is `proved (lemmas)`, with the steps.

# %%
proof = mdmt.refute(claim, family="ngram:n=2,V=2", lengths=(3, 4), steps=(1, 2), processes=("iid",))
print(proof.verdict)
for y, step, lemma in proof.proof["classes"][0]["result"].steps:
    print(f"  {y} x {step}   [{lemma}]")

# %% [markdown]
# A proof says nothing of how tight the bound is. With `prove=False` the search runs: it visits binary
# 2-grams at L = 3, 4 revealed in 1 or 2 i.i.d. steps, evaluates both sides by mdmt's exact law on each,
# and reports the instance with the smallest relative margin.

# %%
res = mdmt.refute(claim, family="ngram:n=2,V=2", lengths=(3, 4), steps=(1, 2), processes=("iid",),
                  budget=120, seed=0, prove=False)
print(res.verdict)
print(res.candidate.describe())
print(f"relative margin of the tightest instance: {res.candidate.describe()['relative_margin']:.2e}")

# %% [markdown]
# No violation, and the tightest instance sits at relative margin ≈ 0: a copying 2-gram revealed in one
# step, where KL = (L − 1) log 2 = log|V| · E[Σ_j D_j]. The bound is attained, so any smaller constant
# must fail.

# %% [markdown]
# ## 2. Break it: halve the constant
#
# A wrong constant in a proof is the mistake a check must catch. With the dependency term halved, the
# search finds a violation, shrinks it to the smallest instance it can, and certifies it: the tables are
# rounded to dyadic rationals and the margin is recomputed in exact rational and ball arithmetic.

# %%
broken = mdmt.refute("KL <= L * eps + log(V) * E_D / 2", family="ngram:n=2,V=2", lengths=(2, 3, 4),
                     steps=(1, 2), processes=("iid",), budget=120, seed=0)
print(broken.verdict)
print(broken.candidate.describe())
lo, hi = broken.certificate["margin"]
print(f"certified margin (rhs - lhs) in [{lo:.6g}, {hi:.6g}]: below 0, so the claim fails on this instance")
assert broken.verdict == "certified violation" and hi < 0

# %% [markdown]
# ## 3. The same chain of proof, link by link
#
# `mdmt verify` checks every link of the proofs on exact instances. The families C1-C4E are the chain
# behind Theorem 4.2 -- Lemma B.2 (KL(q‖p_N) ≤ E KL(q‖p_τ)), Lemma B.3 (the total correlations), Lemma B.8
# (TC_j ≤ D_j log|V|) and Lemma B.9, the bound above -- each side computed by a different code path.

# %%
summary = mdmt.verify(quick=True, pattern="^C[1-4]")
print(summary["checks"], "checks,", summary["violations"], "violations")
for family in summary["families"]:
    print(f"{family['family']}: {family['title']} -- {family['cases']} cases, {family['method']}, "
          f"verdict {family['verdict']}")
