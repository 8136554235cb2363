"""Teacher-forced expectations and the expected number of steps of a reverse process on an explicit law's support.

The exact output law on the support (:mod:`.support_exact`) gives KL(q || p) and SER.  The bound atlas
(docs/atlas.md) also needs, with the oracle denoiser and at the scale of the support (never V^L):

**The teacher-forced chain** (C1-C2 of docs/theorems.md; the table version is
:func:`~.policy_exact.teacher_forced`).  Draw x ~ q and let the policy choose S_j from the oracle marginals
q(. | x_{U_j}), the revealed tokens being those of x.  Given x this is a chain on the revealed sets U (bitmasks,
2^L states) whose transitions read c_x(U) = sum_{y in supp, y_U = x_U} q(y) and, for the adaptive rules, the
marginals T_x(U)[i, v] / c_x(U) (:mod:`.support_zeta`).  Along it mdmt accumulates, per target x,

    sum_j [log q(x_{S_j} | x_{U_j}) - sum_{i in S_j} log q(x_i | x_{U_j})],
    log q(x_S | x_U) = log c_x(U + S) - log c_x(U),

whose average over x ~ q is E sum_j TC(X_{S_j} | X_{U_j}) (the event {U_j = U, x_U, S_j = S} depends on x only
through x_U); for the oracle the learning term is 0.

**E[NFE] of the process itself** (tokens drawn from the marginals, Eq. 3), for the rules whose number of steps
depends on the tokens (threshold, entropy-sum).  The process's chain for one target x (the reveal paths whose
tokens agree with x, as in :mod:`.support_exact`) puts mass F_x(U) = P(the process is at (U, x_U)) on every
state of the support that x passes through.  A state (U, a) is shared by the targets with x_U = a, so the
sum over distinct states is sum_x (q(x) / c_x(U)) F_x(U) (the weights q(x) / c_x(U) of the targets sharing a
state sum to 1).  Each unfinished state of the support makes one call when its step reveals a position.
A step that leaves the support (tokens with q(x_U, x_S) = 0) continues with the oracle's convention off the
support, the uniform law (:func:`~.tables.denoiser_table`): every score is then that of the uniform marginal,
so the number of calls left is a function g(j, m) of the step and of the number m of masked positions,
computed once.  The mass leaving the support from (U, a) by S is P(U, a) P(S | U, a) minus the mass of its
successors inside the support, each counted once by the same weights:
sum_x q(x) [F_x(U) P(S|U) / c_x(U) - F_x(U) P(S|U) prod_{i in S} q(x_i | x_U) / c_x(U + S)] g(j + 1, m - |S|).

Both are computed for one representative per orbit of the support's symmetries (:mod:`.support_symmetry`),
whose values every target of the orbit shares.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.runtime.numba_cache import configure_numba_cache, read_only
from mdmt.runtime.parallel import run_ranges
from mdmt.runtime.resources import check_memory, check_work

from .policies import FIXED, NO_SCORE, RATE, SIZE, Policy, score_table, step_count, step_cut
from .policy_rules import next_combination
from .support_exact import MAX_LENGTH, _plan_arrays, _score, _weights_for_floats
from .support_symmetry import orbits, position_symmetric, symmetry_generators
from .support_zeta import superset_sums, superset_tables

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source


@nb.njit(cache=True)
def _push(G, C, U, S, m, mass, pS, wfac, lsum, forced, wx, g_next, acc):
    """The transition of mass ``mass * pS`` from U to U + S (module docstring): the teacher-forced pointwise TC
    (``forced``), or the calls and the off-support continuation of the process (``wx`` = the target's weight)."""
    N = U | S
    if forced:
        G[N] += mass * pS
        if S != 0:
            acc[0] += mass * pS * (math.log(C[N] / C[U]) - lsum)
        return
    pushed = mass * pS * wfac
    if pushed > 0.0:
        G[N] += pushed
    if S != 0:
        k = 0
        rest = S
        while rest:
            rest &= rest - 1
            k += 1
        acc[0] += wx * mass * pS / C[U]  # one call at this state of the support (counted once per state)
        acc[0] += wx * g_next[m - k] * (mass * pS / C[U] - pushed / C[N])  # calls after leaving the support


@nb.njit(cache=True)
def _chain_one(x, C, T, forced, wx, modes, ks, rates, order, score, tau, gamma, g):
    """One plan, one target x: (accumulated value, mass that ended with every position revealed)."""
    L = x.shape[0]
    n = 1 << L
    F = np.zeros(n)
    F[0] = 1.0
    pos = np.empty(L, dtype=np.int64)
    sure = np.empty(L, dtype=np.int64)
    tied = np.empty(L, dtype=np.int64)
    idx = np.empty(L, dtype=np.int64)
    fac = np.zeros(L)
    lf = np.zeros(L)
    row = np.zeros(L)
    acc = np.zeros(1)
    for j in range(modes.shape[0]):
        mode = modes[j]
        G = np.zeros(n)
        g_next = g[j + 1]
        any_live = False
        for U in range(n):
            mass = F[U]
            if mass == 0.0:
                continue
            m = np.int64(0)  # not a literal 0: the callees get one signature (mdmt.runtime.numba_cache)
            for i in range(L):
                if not (U >> i) & 1:
                    pos[m] = i
                    m += 1
            if m == 0:
                G[U] += mass
                continue
            any_live = True
            cU = C[U]
            for t in range(m):
                i = pos[t]
                ratio = C[U | (1 << i)] / cU  # q(x_i | x_U) > 0: x is in the support
                lf[i] = math.log(ratio)
                fac[i] = 1.0 if forced else ratio
            if mode == RATE:
                r = rates[j]
                masked = (n - 1) & ~U
                sub = masked
                while True:  # every subset of the masked positions (sub = 0 last)
                    wf = 1.0
                    ls = 0.0
                    cnt = 0
                    for t in range(m):
                        if (sub >> pos[t]) & 1:
                            wf *= fac[pos[t]]
                            ls += lf[pos[t]]
                            cnt += 1
                    pS = r ** cnt * (1.0 - r) ** (m - cnt)
                    if pS > 0.0:
                        _push(G, C, U, sub, m, mass, pS, wf, ls, forced, wx, g_next, acc)
                    if sub == 0:
                        break
                    sub = (sub - 1) & masked
            elif mode == FIXED:
                S = np.int64(0)
                wf = 1.0
                ls = 0.0
                for t in range(m):
                    if order[pos[t]] == j + 1:
                        S |= 1 << pos[t]
                        wf *= fac[pos[t]]
                        ls += lf[pos[t]]
                _push(G, C, U, S, m, mass, 1.0, wf, ls, forced, wx, g_next, acc)
            else:
                if score != NO_SCORE and mode != SIZE:
                    for t in range(m):
                        row[pos[t]] = _score(T, U, pos[t], cU, score)
                cnt = step_count(mode, ks[j], row, pos, m, tau, gamma)
                ns, nt, r = step_cut(mode == SIZE, row, pos, m, cnt, sure, tied)
                base = np.int64(0)
                wf0 = 1.0
                ls0 = 0.0
                for t in range(ns):
                    base |= 1 << sure[t]
                    wf0 *= fac[sure[t]]
                    ls0 += lf[sure[t]]
                total = 1.0  # C(nt, r)
                for t in range(r):
                    total = total * (nt - t) / (t + 1)
                for t in range(r):
                    idx[t] = t
                while True:
                    S = base
                    wf = wf0
                    ls = ls0
                    for t in range(r):
                        S |= 1 << tied[idx[t]]
                        wf *= fac[tied[idx[t]]]
                        ls += lf[tied[idx[t]]]
                    _push(G, C, U, S, m, mass, 1.0 / total, wf, ls, forced, wx, g_next, acc)
                    if not next_combination(idx, r, nt):
                        break
        F = G
        if not any_live:
            break
    return acc[0], F[n - 1]


@nb.njit(cache=True)
def _rep(x, support, w, wx, V, full, forced, plan_w, modes, ks, rates, order, score, tau, gamma, g):
    if full:
        T = superset_tables(x, support, w, V)
        C = np.empty(T.shape[0])
        for U in range(T.shape[0]):
            C[U] = T[U, 0].sum()
    else:
        C = superset_sums(x, support, w)
        T = np.zeros((1, 1, 1))
    out = 0.0
    done = 0.0
    for p in range(plan_w.shape[0]):
        val, fin = _chain_one(x, C, T, forced, wx, modes[p], ks[p], rates[p], order[p], score[p], tau[p], gamma[p],
                              g[p])
        out += plan_w[p] * val
        done += plan_w[p] * fin
    return out, done


@nb.njit(cache=True, nogil=True)
def _reps_range(lo, hi, reps, wreps, support, w, V, full, forced, plan_w, modes, ks, rates, order, score, tau, gamma,
                g, out, done):
    """(value, mass done) of the representatives lo..hi-1 into out and done."""
    for r in range(lo, hi):
        out[r], done[r] = _rep(reps[r], support, w, wreps[r], V, full, forced, plan_w, modes, ks, rates, order,
                               score, tau, gamma, g)


PARALLEL_WORK = 1 << 22  # below this many (representatives x revealed sets x positions) one thread is faster


def off_support_calls(arrays, V: int, L: int) -> np.ndarray:
    """g[p, j, m]: the expected number of calls from step j (0-based) of plan p on, with m positions masked and
    the uniform marginals of the oracle off the support (module docstring).  Rates: E over the binomial count."""
    pw, modes, ks, rates, order, score, tau, gamma = arrays
    P, n = modes.shape
    g = np.zeros((P, n + 1, L + 1))
    pos = np.arange(L, dtype=np.int64)
    for p in range(P):
        sc = 0.0 if score[p] == NO_SCORE else float(score_table(np.full((1, V), 1.0 / V), int(score[p]))[0])
        row = np.full(L, sc)
        for j in range(n - 1, -1, -1):
            for m in range(1, L + 1):
                mode = int(modes[p, j])
                if mode == FIXED:
                    raise ValueError("a fixed order does not need the calls off the support: its count is fixed")
                if mode == RATE:
                    r = float(rates[p, j])
                    g[p, j, m] = sum(math.comb(m, c) * r ** c * (1 - r) ** (m - c) * ((c > 0) + g[p, j + 1, m - c])
                                     for c in range(m + 1))
                    continue
                c = min(int(step_count(mode, int(ks[p, j]), row, pos, m, float(tau[p]), float(gamma[p]))), m)
                g[p, j, m] = (c > 0) + g[p, j + 1, m - c]
    return g


def _run(lang: ExplicitLanguage, policy: Policy, generators, forced: bool):
    """(value per representative, representatives' support indices, orbit sizes, plan arrays) of the chain."""
    L, V = lang.length, lang.n_symbols
    if L > MAX_LENGTH:
        raise ValueError(f"the chains on the support track 2^L revealed sets per sequence; L = {L} exceeds "
                         f"mdmt's limit of {MAX_LENGTH}")
    plans, arrays = _plan_arrays(policy, L)
    full = any(p.score != NO_SCORE and np.any(p.mode != SIZE) for _, p in plans)
    if generators is None:
        generators = symmetry_generators(lang, positions=position_symmetric(policy))
    elif not position_symmetric(policy):
        generators = [g for g in generators if g[0].startswith("tokens")]
    labels = orbits(lang.n_sequences, generators)
    reps_idx, sizes = np.unique(labels, return_counts=True)
    check_memory(f"the teacher-forced chain on the support (2^{L} revealed sets per sequence)",
                 2 * (1 << L) * (L * V if full else 1) * 8, "use a shorter length")
    steps = arrays[1].shape[1]
    rates = any(np.any(p.mode == RATE) for _, p in plans)  # every subset of the masked positions: 3^L pairs a step
    check_work(f"the teacher-forced chain of {len(reps_idx)} representative sequence(s) on the support",
               len(reps_idx) * ((1 << L) * (L * (V if full else 1) + steps * L * max(1, len(plans)))
                                + (3 ** L * steps * L if rates else 0)),
               "use a smaller support or fewer steps")
    g = np.zeros((len(plans), steps + 1, L + 1)) if forced else off_support_calls(arrays, V, L)
    w = _weights_for_floats(lang)
    reps = read_only(np.ascontiguousarray(lang.support_[reps_idx]))
    wreps = read_only(np.ascontiguousarray(w[reps_idx]))
    work = len(reps_idx) * (1 << L) * L
    R = reps.shape[0]
    vals, done = np.zeros(R), np.zeros(R)
    args = (reps, wreps, lang.support_, w, V, full, forced, *arrays, g, vals, done)
    if len(reps_idx) > 1 and work > PARALLEL_WORK:
        run_ranges(_reps_range, R, *args)
    else:
        _reps_range(0, R, *args)
    if forced and not np.allclose(done, 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"policy {policy.spec!r} left positions masked after its last step")
    return vals, reps_idx, sizes


def support_teacher_forced(lang: ExplicitLanguage, policy: Policy, generators=None) -> dict:
    """E sum_j TC(X_{S_j} | X_{U_j}) along x ~ q with the policy's own choices and the oracle (module docstring):
    ``total_correlation``, ``learning`` (0 for the oracle) and their sum ``assignment_kl``, in nats.
    ``generators``: those of an earlier :func:`~.support_symmetry.symmetry_generators` call (None: found here)."""
    vals, reps_idx, sizes = _run(lang, policy, generators, True)
    q = np.asarray(lang.weights_, dtype=np.float64)
    tc = float(np.sum(sizes * q[reps_idx] * vals))
    return {"assignment_kl": tc, "total_correlation": tc, "learning": 0.0}


def support_expected_nfe(lang: ExplicitLanguage, policy: Policy, generators=None) -> float:
    """E[NFE] of the process (tokens drawn from the oracle marginals) with the oracle continued by the uniform law
    off the support, exactly, from the support (module docstring)."""
    vals, _, sizes = _run(lang, policy, generators, False)
    return float(np.sum(sizes * vals))
