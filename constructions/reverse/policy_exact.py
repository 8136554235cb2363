"""The exact output law of any policy (:mod:`.policies`) at small L, by enumeration over trajectories.

As in :mod:`.exact`, the reverse process is a Markov chain on partial assignments (U, x_U),
the states of :mod:`.tables`.  At a state the policy gives a law over the set S of masked
positions to reveal (a uniform choice among tied positions, every subset for i.i.d. rates, a
fixed set for a fixed order), and the tokens of S are drawn independently from the denoiser
(Eq. 3): each successor is enumerated depth-first with its exact probability (numba).  A
policy that is a mixture of plans (random step sizes) is the same mixture of output laws.

The *teacher-forced* chain (``teacher_forced``) replaces the factorised draw by the true joint
conditional q(x_S | x_U) (successor weight q(x_U, x_S) / q(x_U)), so its states are (U_j, x_{U_j})
along x ~ q with the policy's own choices.  Along it mdmt accumulates, exactly,

    E sum_j [log q(X_{S_j} | X_{U_j}) - sum_{i in S_j} log q(X_i | X_{U_j})]   (E sum_j TC(X_{S_j} | x_{U_j}))
    E sum_j sum_{i in S_j} [log q(X_i | X_{U_j}) - log p(X_i | X_{U_j})]       (the learning term)

whose sum is E_{x~q, S|x}[log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j})] >= KL(q || p) (Jensen:
given x, the policy's choices form a law over reveal sequences, and p(x) is the average of the
product over it).  For i.i.d. reveal steps these are the quantities of :mod:`.chain` (C1-C2);
for every policy that chooses S_j from x_{U_j} alone the C2 identity still holds.  With
``track_patterns`` the law of the pairs (U_j, S_j), summed over j, is returned too: base-3 codes,
digit 1 = revealed before, 2 = revealed at the step, 0 = still masked (position 0 most significant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from mdmt.constructions.types import Denoiser, Language

from .exact import ExactResult
from .policies import FIXED, NO_SCORE, RATE, SIZE, Policy, score_table, step_count, step_cut
from .policy_rules import next_combination
from .policies_beyond import resolve
from .tables import Tables, build_tables, denoiser_table, support_table
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.runtime.parallel import run_ranges

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_CHUNKS = 4  # fixed work split of a step (results do not depend on the number of threads)
MAX_PATTERN_LENGTH = 13  # 3^L pattern codes kept in memory
PARALLEL_STATES = 20000  # a step from fewer states with mass runs in one thread


@nb.njit(cache=True)
def _log(x):
    return math.log(x) if x > 0.0 else -np.inf


@nb.njit(cache=True)
def _emit(s, mw, sub, n_sub, D, Q, q_ext, live, strides, V, joint, out, acc, pat, track, code0, pow3,
          choice, cp, pp, lq, ld):
    """Push the mass mw of state s through the reveal of the positions sub[:n_sub] (module docstring)."""
    if n_sub == 0:
        out[s] += mw
        return
    acc[0] += mw
    if track:
        code = code0
        for t in range(n_sub):
            code += 2 * pow3[sub[t]]
        pat[code] += mw
    qs = q_ext[s]
    d = 0
    choice[0] = -1
    cp[0] = s
    pp[0] = 1.0
    lq[0] = 0.0
    ld[0] = 0.0
    while d >= 0:
        choice[d] += 1
        v = choice[d]
        if v >= V:
            d -= 1
            continue
        p = sub[d]
        t = cp[d] + (v - V) * strides[p]
        if not live[t]:
            continue  # q(x_U) = 0 here (support-only chains): no completion of it is in the support
        dv = D[s, p, v]
        if joint:
            nq = lq[d] + _log(Q[s, p, v])
            nd = ld[d] + _log(dv)
            w = 1.0
        else:
            w = pp[d] * dv
            if w == 0.0:
                continue
            nq = 0.0
            nd = 0.0
        if d + 1 == n_sub:
            if joint:
                r = q_ext[t] / qs
                out[t] += mw * r
                acc[1] += mw * r * (math.log(r) - nq)
                acc[2] += mw * r * (nq - nd)
            else:
                out[t] += mw * w
        else:
            cp[d + 1] = t
            pp[d + 1] = w
            lq[d + 1] = nq
            ld[d + 1] = nd
            d += 1
            choice[d] = -1


@nb.njit(cache=True)
def _chunk(lo, hi, f, digits, D, Q, q_ext, live, strides, V, mode, k, rate, fixed, score, tau, gamma, joint, track,
           pow3, out, acc, pat):
    """States lo..hi-1 of one step (module docstring): enumerate each state's subsets and successors."""
    L = digits.shape[1]
    pos = np.empty(L, dtype=np.int64)
    sub = np.empty(L, dtype=np.int64)
    sure = np.empty(L, dtype=np.int64)
    tied = np.empty(L, dtype=np.int64)
    idx = np.empty(L, dtype=np.int64)
    choice = np.empty(L + 1, dtype=np.int64)
    cp = np.empty(L + 1, dtype=np.int64)
    pp = np.empty(L + 1)
    lq = np.empty(L + 1)
    ld = np.empty(L + 1)
    one_score = score.shape[0] == 1
    for s in range(lo, hi):
        mass = f[s]
        if mass == 0.0 or not live[s]:
            continue
        m = np.int64(0)  # np.int64: a literal 0 would compile the callees once more for Literal[int](0)
        code0 = np.int64(0)
        for i in range(L):
            if digits[s, i] == V:
                pos[m] = i
                m += 1
            else:
                code0 += pow3[i]
        if m == 0:
            out[s] += mass
            continue
        if mode == RATE:
            for b in range(1 << m):
                n_sub = np.int64(0)
                for t in range(m):
                    if (b >> t) & 1:
                        sub[n_sub] = pos[t]
                        n_sub += 1
                w = rate ** n_sub * (1.0 - rate) ** (m - n_sub)
                if w > 0.0:
                    _emit(s, mass * w, sub, n_sub, D, Q, q_ext, live, strides, V, joint, out, acc, pat, track,
                          code0, pow3, choice, cp, pp, lq, ld)
        elif mode == FIXED:
            n_sub = np.int64(0)
            for t in range(m):
                if fixed[pos[t]]:
                    sub[n_sub] = pos[t]
                    n_sub += 1
            _emit(s, mass, sub, n_sub, D, Q, q_ext, live, strides, V, joint, out, acc, pat, track, code0, pow3,
                  choice, cp, pp, lq, ld)
        else:
            row = score[0] if one_score else score[s]
            cnt = step_count(mode, k, row, pos, m, tau, gamma)
            ns, nt, r = step_cut(mode == SIZE, row, pos, m, cnt, sure, tied)
            for t in range(ns):
                sub[t] = sure[t]
            total = 1.0  # C(nt, r)
            for t in range(r):
                total = total * (nt - t) / (t + 1)
            w = mass / total
            for t in range(r):
                idx[t] = t
            while True:
                for t in range(r):
                    sub[ns + t] = tied[idx[t]]
                _emit(s, w, sub, ns + r, D, Q, q_ext, live, strides, V, joint, out, acc, pat, track, code0, pow3,
                      choice, cp, pp, lq, ld)
                if not next_combination(idx, r, nt):
                    break


@nb.njit(cache=True, nogil=True)
def _chunks(lo, hi, f, digits, D, Q, q_ext, live, strides, V, mode, k, rate, fixed, score, tau, gamma, joint, track,
            pow3, outs, accs, pats):
    """Chunks lo..hi-1 of one step of the policy chain (of outs.shape[0] chunks), chunk c into outs[c], accs[c],
    pats[c]."""
    S = digits.shape[0]
    nchunks = outs.shape[0]
    for c in range(lo, hi):
        _chunk(c * S // nchunks, (c + 1) * S // nchunks, f, digits, D, Q, q_ext, live, strides, V, mode, k, rate,
               fixed, score, tau, gamma, joint, track, pow3, outs[c], accs[c], pats[c])


def _step(f, digits, D, Q, q_ext, live, strides, V, mode, k, rate, fixed, score, tau, gamma, joint, track, pow3, npat,
          nchunks):
    """One step of the policy chain in nchunks chunks on mdmt's kernel threads; returns (f', [NFE mass, TC,
    learning], pattern mass), the chunks summed in their order (equal results for any number of threads)."""
    S = digits.shape[0]
    outs = np.zeros((nchunks, S))
    accs = np.zeros((nchunks, 3))
    pats = np.zeros((nchunks, npat))
    run_ranges(_chunks, nchunks, f, digits, D, Q, q_ext, live, strides, V, mode, k, rate, fixed, score, tau, gamma,
               joint, track, pow3, outs, accs, pats, parts=nchunks)
    return outs.sum(axis=0), accs.sum(axis=0), pats.sum(axis=0)


def _chain(tables: Tables, policy: Policy, D, Q, live, joint: bool, track: bool):
    """Run every plan of ``policy``; returns (final mass on states, [E NFE, E sum TC, E learning], pattern law)."""
    L, V = tables.L, tables.V
    if track and L > MAX_PATTERN_LENGTH:
        raise ValueError(f"the law of reveal patterns needs 3^L codes; at most L = {MAX_PATTERN_LENGTH} is supported")
    S = tables.n_states
    total = np.zeros(S)
    acc = np.zeros(3)
    pat = np.zeros(3 ** L if track else 1)
    incomplete = np.any(tables.digits == V, axis=1)
    pow3 = 3 ** np.arange(L - 1, -1, -1, dtype=np.int64)
    npat = 3 ** L if track else 1
    scores = {}
    for weight, plan in policy.plans(L):
        if plan.score != NO_SCORE and plan.score not in scores:
            scores[plan.score] = np.ascontiguousarray(score_table(D, plan.score))
        score = scores.get(plan.score, np.zeros((1, L)))
        f = np.zeros(S)
        f[-1] = 1.0  # the all-masked state (every digit V) is the last index
        for j in range(plan.steps):
            fixed = plan.order == j + 1 if plan.order is not None else np.zeros(L, dtype=np.bool_)
            args = (f, tables.digits, D, Q, tables.q_ext, live, tables.strides, V, int(plan.mode[j]), int(plan.k[j]),
                    float(plan.rate[j]), fixed, score, float(plan.tau), float(plan.gamma), joint, track, pow3, npat)
            big = np.count_nonzero(f) > PARALLEL_STATES
            f, a, p = _step(*args, _CHUNKS if big else 1)  # one chunk runs in this thread
            acc += weight * a
            if track:
                pat += weight * p
            if not np.any(f[incomplete] > 0):
                break
        if np.any(f[incomplete] > 1e-12):
            raise ValueError(f"policy {policy.spec!r} left positions masked after its {plan.steps} steps")
        total += weight * f
    return total, acc, (pat if track else None)


@dataclass
class PolicyLaw:
    """The exact output law of a policy (``result``: KL, SER, p on V^L) and its expected number of evaluations."""

    result: ExactResult
    expected_nfe: float | None  # None: it depends on the tokens and the chain was cut at the support


def exact_policy_law(language: Language, L: int, policy: Policy, denoiser: Denoiser | None = None, support_only: bool = True,
                     tables: Tables | None = None, table: np.ndarray | None = None) -> PolicyLaw:
    """The output law of ``policy`` with the oracle (``denoiser=None``) or any denoiser (module docstring).

    With ``support_only`` the chain is continued only inside the support (the lost mass is the SER)
    and E[NFE] is known only for policies that do not read the denoiser; otherwise every state is
    followed (the oracle continued by the uniform law off the support) and E[NFE] is exact.
    """
    policy = resolve(policy, language, L)
    if hasattr(policy, "exact_law"):  # remasking, verified drafting: their own chains (policies_beyond)
        res, nfe = policy.exact_law(language, L, denoiser=denoiser, support_only=support_only, tables=tables, table=table)
        return PolicyLaw(res, nfe)
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    if table is not None:
        D = table
    elif support_only:
        D = support_table(tables, denoiser)
    else:
        D = denoiser_table(tables, denoiser)
    live = tables.q_ext > 0 if support_only else np.ones(tables.n_states, dtype=bool)
    f, acc, _ = _chain(tables, policy, D, D, live, False, False)
    nfe = policy.expected_nfe(L) if not policy.adaptive else (None if support_only else float(acc[0]))
    res = ExactResult(sequences=tables.sequences, q=tables.q, p=f[tables.full_index], pi=np.empty(0),
                      support_only=support_only)
    return PolicyLaw(res, nfe)


def teacher_forced(language: Language, L: int, policy: Policy, denoiser: Denoiser | None = None, tables: Tables | None = None,
                   table: np.ndarray | None = None, track_patterns: bool = False) -> dict:
    """Exact expectations along x ~ q with the policy's own choices (module docstring).

    Keys: ``assignment_kl`` (E[log q(x) - log p_traj(x)] >= KL(q || p), nats), ``total_correlation``
    (E sum_j TC(X_{S_j} | x_{U_j})), ``learning`` (E sum_j sum_{i in S_j} KL(q(.|x_U) || p(.|x_U))),
    ``expected_nfe`` (along x ~ q) and, with ``track_patterns``, ``pattern_law``.
    """
    policy = resolve(policy, language, L)
    if hasattr(policy, "exact_law"):
        raise ValueError(f"policy {policy.spec!r} is not a reveal-only process: it has no teacher-forced chain")
    tables = tables or build_tables(language, L)
    if tables.L != L:
        raise ValueError(f"tables were built for L = {tables.L}, not L = {L}")
    Q = denoiser_table(tables, None)
    D = Q if denoiser is None and table is None else (table if table is not None else support_table(tables, denoiser))
    live = tables.q_ext > 0
    f, acc, pat = _chain(tables, policy, D, Q, live, True, track_patterns)
    if not np.allclose(f[tables.full_index], tables.q, rtol=1e-9, atol=1e-12):
        raise AssertionError("teacher-forced chain did not end in q")  # an invariant of the chain, not of the input
    out = {"assignment_kl": float(acc[1] + acc[2]), "total_correlation": float(acc[1]), "learning": float(acc[2]),
           "expected_nfe": float(acc[0])}
    if track_patterns:
        out["pattern_law"] = pat
    return out
