"""The SP family (``mdmt verify -k SP``, full verify only): the samplers beyond the paper against enumerations.

Each reference is written from the definitions (docs/samplers.md), on the rows of V^L and the joint
table q of :mod:`.references` (not the library's partial-assignment tables):

* the optimal fixed sizes: the minimum over every composition of L into N parts of the profile cost
  sum_j s_j (f(u_j + 1) - f(u_j)) - (f(u_j + s_j) - f(u_j)), f summed from the joint table
  (:func:`.brute_force.subset_entropy_profile`), against the library's DP;
* bisection: the order as a literal vector, its ceil(log2(L + 1)) steps, and KL = 0 on a bigram (its law
  by :func:`.brute_force.policy_law_by_trajectories` with the order given);
* verified drafting: every full draft vector of every round with its accept/reject decisions, the law on
  V^L (= q) and E[rounds], for a fixed block, a list of blocks and the adaptive draft schedule (the block of
  a round from the history of full acceptances before it);
* ReMDM: every trajectory, each position's outcome at each step, with the step probabilities computed from
  ReMDM's formulas here, and the bound sigma_t <= min(1, (1 - alpha_s)/alpha_t) of every step; for the
  confidence schedule the trajectory carries each decoded token's confidence, and a token is remasked
  with sigma_max exp(-psi) / sum exp(-psi') (ETA = 1).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mdmt.constructions.languages.interval import interval_hmm
from mdmt.constructions.languages.random_languages import random_hmm, random_ngram

from . import brute_force as bf
from .check_rows import Row, agree

LAW_TOL = 1e-12


def _law(lang, L):
    from .checks_beyond import _reference_law

    return _reference_law(lang, L)


def verified_by_drafts(X: np.ndarray, q: np.ndarray, B) -> tuple[np.ndarray, float]:
    """(law on the rows of X, E[rounds]) of verified drafting, every draft vector enumerated; ``B`` a block size or
    a rule (full-acceptance flags of the rounds before, L) -> the round's block."""
    L = X.shape[1]
    V = int(X.max()) + 1
    den = bf.oracle_from_joint(X, q)
    index = {tuple(x): r for r, x in enumerate(X.tolist())}
    p = np.zeros(len(X))
    rounds = 0.0

    def cond(prefix, k):
        part = np.full(L, -1)
        part[:len(prefix)] = prefix
        return den(part)[k]

    rule = B if callable(B) else (lambda history, L: B)
    stack = [((), 1.0, ())]
    while stack:
        prefix, mass, history = stack.pop()
        if len(prefix) == L:
            p[index[prefix]] += mass
            continue
        rounds += mass
        i, e = len(prefix), min(len(prefix) + rule(history, L), L)
        d = [cond(prefix, k) for k in range(i, e)]
        for y in itertools.product(range(V), repeat=e - i):
            py = math.prod(d[k][y[k]] for k in range(e - i))
            if py == 0:
                continue
            paths, ends = [(1.0, prefix)], []
            for k in range(e - i):
                nxt = []
                for w, cur in paths:
                    t = cond(cur, i + k)
                    a = min(1.0, t[y[k]] / d[k][y[k]])
                    if a > 0:
                        nxt.append((w * a, cur + (y[k],)))
                    res = np.maximum(t - d[k], 0.0)
                    if a < 1 and res.sum() > 0:
                        res = res / res.sum()
                        ends += [(w * (1 - a) * res[z], cur + (z,)) for z in range(V) if res[z] > 0]
                paths = nxt
            stack += [(cur, mass * py * w, history + (True,)) for w, cur in paths]
            stack += [(cur, mass * py * w, history + (False,)) for w, cur in ends]
    return p, rounds


def adaptive_block(b0: int):
    """The adaptive draft schedule from its definition: B0, then min(B + 2, L) after a round whose drafts were all
    accepted, max(B - 1, 1) after a rejection."""
    def rule(history, L):
        b = b0
        for full in history:
            b = min(b + 2, L) if full else max(b - 1, 1)
        return b
    return rule


def remdm_conf_by_trajectories(X: np.ndarray, q: np.ndarray, N: int) -> tuple[np.ndarray, float]:
    """(law on the rows of X, E[#steps revealing something]) of ReMDM-conf (ETA = 1, alpha_t = 1 - t on t_k = k / N)
    with the oracle: every trajectory, a state carrying the confidence of each decoded token."""
    L = X.shape[1]
    V = int(X.max()) + 1
    den = bf.oracle_from_joint(X, q)
    law = {tuple((-1, 0.0) for _ in range(L)): 1.0}
    calls = 0.0
    for k in range(N, 0, -1):
        a_t, a_s = 1 - k / N, 1 - (k - 1) / N
        pu, smax = (a_s - a_t) / (1 - a_t), (min(1.0, (1 - a_s) / a_t) if a_t > 0 else 1.0)
        new: dict = {}
        for state, w in law.items():
            P = den(np.array([v for v, _ in state]))
            z = sum(math.exp(-c) for v, c in state if v >= 0)
            opts = [[((v, c), 1 - smax * math.exp(-c) / z, 0), ((-1, 0.0), smax * math.exp(-c) / z, 0)] if v >= 0 else
                    [((-1, 0.0), 1 - pu, 0)] + [((u, float(P[i, u])), pu * P[i, u], 1) for u in range(V)]
                    for i, (v, c) in enumerate(state)]
            for combo in itertools.product(*opts):
                pr = w * math.prod(o[1] for o in combo)
                if pr == 0:
                    continue
                calls += pr if any(o[2] for o in combo) else 0.0
                key = tuple(o[0] for o in combo)
                new[key] = new.get(key, 0.0) + pr
        law = new
    index = {tuple(x): r for r, x in enumerate(X.tolist())}
    p = np.zeros(len(X))
    for key, w in law.items():
        p[index[tuple(v for v, _ in key)]] += w  # a mask left raises KeyError: the last step reveals everything
    return p, calls


def remdm_probabilities(kind: str, eta: float, N: int) -> tuple[list, list, list]:
    """(reveal probability, sigma, sigma_max) of each step, from ReMDM's definitions (docs/samplers.md)."""
    def alpha(x):
        if kind != "loop":
            return 1 - x
        return 0.9 * (1 - x) / 0.45 if x >= 0.55 else (0.9 if x > 0.05 else 0.9 + 0.1 * (0.05 - x) / 0.05)

    pu, sig, smaxes = [], [], []
    for k in range(N, 0, -1):
        a_t, a_s = alpha(k / N), alpha((k - 1) / N)
        smax = min(1.0, (1 - a_s) / a_t) if a_t > 0 else 1.0
        s = {"cap": min(eta, smax), "rescale": eta * smax, "loop": min(eta, smax) if a_s == a_t else 0.0}[kind]
        pu.append((a_s - (1 - s) * a_t) / (1 - a_t))
        sig.append(s)
        smaxes.append(smax)
    return pu, sig, smaxes


def remdm_by_trajectories(X: np.ndarray, q: np.ndarray, pu, sigma) -> tuple[np.ndarray, float]:
    """(law on the rows of X, E[#steps revealing something]) of ReMDM with the oracle, every trajectory enumerated."""
    L = X.shape[1]
    V = int(X.max()) + 1
    den = bf.oracle_from_joint(X, q)
    law = {tuple([-1] * L): 1.0}
    calls = 0.0
    for j in range(len(pu)):
        new: dict = {}
        for state, w in law.items():
            P = den(np.array(state))
            opts = [[(v, 1 - sigma[j], 0), (-1, sigma[j], 0)] if v >= 0 else
                    [(-1, 1 - pu[j], 0)] + [(u, pu[j] * P[i, u], 1) for u in range(V)] for i, v in enumerate(state)]
            for combo in itertools.product(*opts):
                pr = w * math.prod(c[1] for c in combo)
                if pr == 0:
                    continue
                calls += pr if any(c[2] for c in combo) else 0.0
                key = tuple(c[0] for c in combo)
                new[key] = new.get(key, 0.0) + pr
        law = new
    index = {tuple(x): r for r, x in enumerate(X.tolist())}
    p = np.zeros(len(X))
    for k, w in law.items():
        p[index[k]] += w  # a state with a mask left raises KeyError: the last step must reveal everything
    return p, calls


def _law_row(inst, what, p, p_ref) -> Row:
    diff = float(np.max(np.abs(p - p_ref)))
    return Row("SP", inst, what, (diff, diff), (0.0, 0.0), "==", "numeric", diff <= LAW_TOL, LAW_TOL - diff, math.nan,
               f"tolerance {LAW_TOL:.0e} on the largest |difference|")


def sampler_rows() -> list[Row]:
    from mdmt.constructions.reverse.optimal_schedule import optimal_sizes
    from mdmt.constructions.reverse.policies import parse_policy
    from mdmt.constructions.reverse.policies_beyond import bisect_order
    from mdmt.constructions.reverse.policy_exact import exact_policy_law
    from mdmt.constructions.reverse.remdm import remdm_steps

    rows = []
    # the optimal sizes: DP = the minimum over every composition (reference profile and cost)
    for key, make, L in (("ng3s1", lambda: random_ngram(3, 2, 2.0, 0.0, seed=1), 6),
                         ("hmms4", lambda: random_hmm(3, 3, 1.5, 0.0, seed=4), 4)):
        X, q = _law(make(), L)
        f = bf.subset_entropy_profile(X, q)
        for N in range(1, L + 1):
            costs = []
            for cuts in itertools.combinations(range(1, L), N - 1):
                b = (0,) + cuts + (L,)
                costs.append(sum((b[j + 1] - b[j]) * (f[b[j] + 1] - f[b[j]]) - (f[b[j + 1]] - f[b[j]])
                                 for j in range(N)))
            _, kl = optimal_sizes(f, N)
            rows.append(agree("SP", f"{key}L{L}N{N}", "optimal sizes: DP = min over compositions", kl, min(costs),
                              1e-12 * (1 + min(costs))))
    # bisection: literal orders, step counts, KL = 0 on a bigram (trajectory enumeration of the literal order)
    for L, order in ((7, [3, 2, 3, 1, 3, 2, 3]), (4, [2, 1, 2, 3]), (6, [2, 3, 1, 3, 2, 3])):
        ok = bisect_order(L).tolist() == order
        rows.append(Row("SP", f"L{L}", "bisect order = literal vector", (0.0, 0.0), (0.0, 0.0), "==",
                        "exact" if ok else "FAILED", ok, 0.0, math.nan, str(order)))
    for L in range(1, 65):
        rows.append(agree("SP", f"L{L}", "bisect steps = ceil(log2(L+1))", float(bisect_order(L).max()),
                          float(math.ceil(math.log2(L + 1))), 0.0))
    lang, L = random_ngram(2, 3, 1.0, 0.0, seed=4), 5
    X, q = _law(lang, L)
    p_ref, _ = bf.policy_law_by_trajectories(X, bf.oracle_from_joint(X, q),
                                             bf.reference_rule("fixed", order=[2, 3, 1, 2, 3]), 3)
    rows.append(_law_row(f"ng2V3s4L{L}", "bisect: trajectories = q on a bigram", p_ref, q))
    law = exact_policy_law(lang, L, parse_policy("bisect"), support_only=False)
    rows.append(_law_row(f"ng2V3s4L{L}", "bisect: library law = trajectories", law.result.p, p_ref))
    # verified drafting and ReMDM against their enumerations
    for key, make, L in (("ng3s1", lambda: random_ngram(3, 2, 2.0, 0.0, seed=1), 4), ("iv2", lambda: interval_hmm(2), 4),
                         ("hmms4", lambda: random_hmm(3, 2, 1.5, 0.0, seed=4), 3)):
        lang = make()
        X, q = _law(lang, L)
        for B, spec in ((2, "2"), (3, "3"), (lambda h, L: (1, 2, 4)[min(len(h), 2)], "1,2,4"),
                        (adaptive_block(2), "adaptive")):
            p_ref, r_ref = verified_by_drafts(X, q, B)
            law = exact_policy_law(lang, L, parse_policy(f"verified:{spec}"), support_only=False)
            inst = f"{key}L{L}B{spec}"
            rows.append(_law_row(inst, "verified: trajectories = q", p_ref, q))
            rows.append(_law_row(inst, "verified: library law = trajectories", law.result.p, p_ref))
            rows.append(agree("SP", inst, "verified: E[calls] = trajectories", law.expected_nfe, r_ref, 1e-12 * r_ref))
        if L > 3:
            continue
        p_ref, c_ref = remdm_conf_by_trajectories(X, q, 3)
        law = exact_policy_law(lang, L, parse_policy("remdm:conf", 3), support_only=False)
        rows.append(_law_row(f"{key}L{L}confN3", "remdm:conf: library law = trajectories", law.result.p, p_ref))
        rows.append(agree("SP", f"{key}L{L}confN3", "remdm:conf: E[NFE] = trajectories", law.expected_nfe, c_ref,
                          1e-12 * c_ref))
        for spec, N in (("cap:0.3", 3), ("rescale:0.5", 3), ("loop:0.4", 5)):
            kind, eta = spec.split(":")
            pu, sig, smax = remdm_probabilities(kind, float(eta), N)
            lib_pu, lib_sig = remdm_steps(kind, float(eta), N)
            worst = max(s - m for s, m in zip(lib_sig, smax))
            rows.append(Row("SP", f"{spec}N{N}", "remdm: sigma_t <= min(1, (1-alpha_s)/alpha_t)", (worst, worst),
                            (0.0, 0.0), "<=", "numeric", worst <= 1e-12, -worst, math.nan, "every step"))
            p_ref, c_ref = remdm_by_trajectories(X, q, pu, sig)
            law = exact_policy_law(lang, L, parse_policy(f"remdm:{spec}", N), support_only=False)
            rows.append(_law_row(f"{key}L{L}{spec}N{N}", "remdm: library law = trajectories", law.result.p, p_ref))
            rows.append(agree("SP", f"{key}L{L}{spec}N{N}", "remdm: E[NFE] = trajectories", law.expected_nfe, c_ref,
                              1e-12 * c_ref))
    return rows
