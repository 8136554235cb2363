"""The Monte Carlo sampler of any policy (:mod:`.policies`) at any L, with NFE counted (Section 3.2, Eq. 3).

At every step the policy picks S_j among the masked positions -- without the denoiser for
i.i.d. rates, fixed sizes and fixed orders, from the denoiser's marginals for the adaptive
rules -- and the tokens of S_j are drawn independently from denoiser(x_{U_j}).  The denoiser
is any callable of the denoiser protocol (``denoiser(X (B, L)) -> (B, L, V)``, MASK at masked
positions): the oracle of an HMM or n-gram (``denoiser=None``), an oracle transform, the
interval HMM's closed-form oracle (:mod:`.interval_oracle`), or a trained network wrapped as
``mdmt.empirical.sampling.MDMDenoiser``.  A sequence is evaluated at a step only when the step
reveals something in it (ddpm_cache), so NFE = #{j : S_j != {}} per sequence.

Randomness: the policy's random step sizes (if any) are drawn first, then at every step one
uniform *key* per position (ties of the cut are broken by the smallest keys, i.i.d. rates
reveal a position when its key is below r_j) and one uniform per position for the token
(inverse CDF, :func:`.sampler.draw_tokens`), for every sequence: the result depends only on the
seed, not on the batch size.  The output law is exactly that of :mod:`.policy_exact` (tested).

``teacher_forced_estimate`` runs the same policy along x ~ q (the revealed tokens are those of
x) and averages log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j}): an unbiased estimate, with a
Student-t interval, of the upper bound E[log q(x) - log p_traj(x)] >= KL(q || p) of
:func:`.policy_exact.teacher_forced`, at any L.
"""

from __future__ import annotations

import math
import time

import numba as nb
import numpy as np

from .confidence import mean_interval
from mdmt.runtime.validation import MASK, as_rng, positive_int
from .denoisers import oracle_denoiser
from .policies import FIXED, RATE, SIZE, Policy, score_table, step_count, step_cut
from .policy_rules import sort_prefix
from .policies_beyond import resolve
from .sampler import SampleResult, draw_tokens
from .support_exact import check_decode, greedy_table
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.constructions.types import Denoiser, Language, Seed

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


@nb.njit(cache=True)
def select_positions(mode, k_rows, rate, has_score, score, masked, keys, in_step, tau, gamma, out):
    """S (out, bool (B, L)) for every row: the rule of :mod:`.policies`, ties broken by the smallest keys."""
    B, L = masked.shape
    pos = np.empty(L, dtype=np.int64)
    sure = np.empty(L, dtype=np.int64)
    tied = np.empty(L, dtype=np.int64)
    dummy = np.zeros(L)
    for b in range(B):
        m = np.int64(0)  # not a literal 0: one signature for the callees (mdmt.runtime.numba_cache)
        for i in range(L):
            if masked[b, i]:
                pos[m] = i
                m += 1
        if m == 0:
            continue
        if mode == RATE:
            for t in range(m):
                out[b, pos[t]] = keys[b, pos[t]] < rate
        elif mode == FIXED:
            for t in range(m):
                out[b, pos[t]] = in_step[pos[t]]
        else:
            row = score[b] if has_score else dummy
            c = step_count(mode, k_rows[b], row, pos, m, tau, gamma)
            ns, nt, r = step_cut(mode == SIZE, row, pos, m, c, sure, tied)
            for t in range(ns):
                out[b, sure[t]] = True
            if r > 0:
                kk = np.empty(nt)  # the r tied positions with the smallest keys
                for t in range(nt):
                    kk[t] = keys[b, tied[t]]
                sort_prefix(kk, nt)
                thr = kk[r - 1]
                taken = 0
                for t in range(nt):
                    if taken < r and keys[b, tied[t]] <= thr:
                        out[b, tied[t]] = True
                        taken += 1


def select(plan, j: int, k, masked, keys, in_step, score=None) -> np.ndarray:
    """S_j (bool (B, L)) of step j for rows with masked positions ``masked``: the policy's rule, ties by smallest keys.

    ``score`` (float (B, L)) is needed by the adaptive rules only.
    """
    S = np.zeros(masked.shape, dtype=bool)
    has = score is not None
    select_positions(int(plan.mode[j]), np.ascontiguousarray(k, dtype=np.int64), float(plan.rate[j]), has,
                     np.ascontiguousarray(score) if has else np.zeros((1, masked.shape[1])), masked, keys, in_step,
                     float(plan.tau), float(plan.gamma), S)
    return S


def is_adaptive(mode: int) -> bool:
    """Whether a step's rule reads the denoiser's marginals."""
    return mode not in (RATE, SIZE, FIXED)


def reveal_loop(policy: Policy, L: int, num: int, rng, choose):
    """The step loop of every Monte Carlo evaluator of a policy; returns (NFE, reveal step) per sequence.

    Draws the policy's random sizes, then at every step one uniform key per position;
    ``choose(plan, j, k, masked, keys, in_step)`` returns S_j (bool (num, L)) and does the step's work.
    """
    plan, k_rows = policy.sampling_plan(L, num, rng)
    revealed = np.zeros((num, L), dtype=bool)
    reveal_step = np.zeros((num, L), dtype=np.int64)
    nfe = np.zeros(num, dtype=np.int64)
    in_step = np.zeros(L, dtype=bool)
    for j in range(plan.steps):
        if revealed.all():
            break
        keys = rng.random((num, L))
        if plan.order is not None:
            in_step = plan.order == j + 1
        S = choose(plan, j, k_rows[:, j], ~revealed, keys, in_step)
        nfe += S.any(axis=1)
        reveal_step[S] = j + 1
        revealed |= S
    if not revealed.all():
        raise ValueError(f"policy {policy.spec!r} left positions masked after its {plan.steps} steps")
    return nfe, reveal_step


def _run(language, L: int, policy: Policy, num: int, den, rng, batch: int, x_true=None, decode: str = "sample"):
    """The sampler (x_true None) and the teacher-forced estimate: one uniform per position per step for the tokens.
    ``decode="greedy"``: the revealed tokens are drawn uniformly from the argmax set of each marginal
    (:func:`.support_exact.greedy_table`); the positions are still chosen from the marginals themselves."""
    V = language.n_symbols
    X = np.full((num, L), MASK, dtype=np.int64)
    logp = np.zeros(num)

    def choose(plan, j, k, masked, keys, in_step):
        U = rng.random((num, L))
        adaptive = is_adaptive(int(plan.mode[j]))
        S = np.zeros((num, L), dtype=bool) if adaptive else select(plan, j, k, masked, keys, in_step)
        rows = np.flatnonzero((masked if adaptive else S).any(axis=1))
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            P = np.asarray(den(X[r]), dtype=np.float64)
            if P.shape != (len(r), L, V):
                raise ValueError(f"denoiser returned shape {P.shape}, expected ({len(r)}, {L}, {V})")
            if adaptive:
                S[r] = select(plan, j, k[r], masked[r], keys[r], in_step, score_table(P, plan.score))
            rr, cc = np.nonzero(S[r])
            if x_true is None:
                T = P[rr, cc] if decode == "sample" else greedy_table(P[rr, cc])
                X[r[rr], cc] = draw_tokens(T, U[r[rr], cc])
            else:
                with np.errstate(divide="ignore"):
                    np.add.at(logp, r[rr], np.log(P[rr, cc, x_true[r[rr], cc]]))
                X[r[rr], cc] = x_true[r[rr], cc]
        return S

    nfe, reveal_step = reveal_loop(policy, L, num, rng, choose)
    return X, nfe, reveal_step, logp


def sample_policy(language: Language, L: int, policy: Policy, num: int, denoiser: Denoiser | None = None,
                  seed: Seed = None, batch: int = 512, decode: str = "sample") -> SampleResult:
    """Draw ``num`` sequences from the policy's reverse process with the oracle (None) or any denoiser; seeded.
    ``decode``: ``"sample"`` (tokens from the marginals, Eq. 3) or ``"greedy"`` (argmax, ties uniformly)."""
    check_decode(decode)
    L = positive_int("L", L)
    num = positive_int("num", num, minimum=0)
    batch = positive_int("batch", batch)
    rng = as_rng(seed)
    policy = resolve(policy, language, L)
    if hasattr(policy, "sample"):  # remasking, verified drafting: their own samplers (policies_beyond)
        return policy.sample(language, L, num, denoiser=denoiser, rng=rng)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    t0 = time.perf_counter()
    X, nfe, steps, _ = _run(language, L, policy, num, den, rng, batch, decode=decode)
    return SampleResult(X, nfe, steps, time.perf_counter() - t0, "generic")


def teacher_forced_estimate(language: Language, L: int, policy: Policy, num: int, denoiser: Denoiser | None = None, seed: Seed = None, level: float = 0.95,
                            batch: int = 512) -> dict:
    """Monte Carlo estimate of E[log q(x) - log p_traj(x)]/L >= KL(q || p)/L along x ~ q, with a CI (module docstring).

    Keys: ``kl_per_token_nats``, ``ci``, ``kl_per_token_bits``, ``ci_bits`` (bounds on the log2 TER gap),
    ``nfe_mean`` (along x ~ q), ``num``.
    """
    L = positive_int("L", L)
    num = positive_int("num", num)
    batch = positive_int("batch", batch)
    rng = as_rng(seed)
    policy = resolve(policy, language, L)
    if hasattr(policy, "sample"):
        raise ValueError(f"policy {policy.spec!r} is not a reveal-only process: it has no teacher-forced estimate")
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    x = language.sample_sequences(num, L, rng)
    _, nfe, _, logp = _run(language, L, policy, num, den, rng, batch, x_true=x)
    vals = (language.log_likelihood(x) - logp) / L
    m, a, b = mean_interval(vals, level)
    ln2 = math.log(2)
    return {"kl_per_token_nats": m, "ci": [a, b], "kl_per_token_bits": m / ln2, "ci_bits": [a / ln2, b / ln2],
            "nfe_mean": float(nfe.mean()), "num": num}
