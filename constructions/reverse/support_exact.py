"""The exact output law of a reverse process on an explicit law, computed on the support only.

For an explicit law q (:class:`~mdmt.constructions.languages.explicit.ExplicitLanguage`) the metrics of a sampler
need its output law p only on the support: SER = 1 - sum_{x in supp} p(x) (Eq. 5 of the paper) and
KL(q || p) = sum_{x in supp} q(x) log(q(x) / p(x)) (Eq. 4).  For one target x the process outputs x exactly when
every token it reveals agrees with x, so p(x) is a sum over the reveal paths only: a chain on the revealed sets
U (bitmasks of the L positions) whose state (U, x_U) fixes the oracle denoiser's marginals (Section 3.2)

    q(x_i = v | x_U) = T_x(U)[i, v] / c_x(U),   T_x(U)[i, v] = sum_{y in supp, y_U = x_U, y_i = v} q(y).

Grouping the support by its agreement set A(x, y) = {i : y_i = x_i}, T_x(U) is the superset sum (zeta transform)
of the per-set sums h(A) = sum_{A(x,y) = A} q(y) e_{y}: L 2^L additions of vectors, once per target, so the cost
scales with M 2^L (M = |supp|), never with V^L.  The sampler-only case (random positions, tokens drawn from the
marginals) needs only the scalar c_x(U) and costs L 2^L per target.

The processes are the policies of :mod:`.policies` (their :class:`~.policies.Plan` per step): the schedules of
Eq. 3 (i.i.d. reveal steps, rate r_j), fixed step sizes (a uniformly random s_j-subset of the masked positions),
top-k by a score of the marginals (ties uniformly at random, :func:`~.policies.step_cut`), the confidence
threshold tau (every masked position with confidence > tau, at least the most confident one), the entropy sum,
fixed orders, and mixtures of plans (random step sizes).  Two token rules (``decode``):

``sample``
    each revealed position draws its token from its marginal (temperature 1): the factor of position i is
    q(x_i | x_U), as in Eq. 3;
``greedy``
    each revealed position takes the argmax of its marginal, ties broken uniformly at random (ParallelBench's
    ideal model, Kang et al. arXiv 2510.04767 Section 4): the factor is 1/#argmax when x_i is an argmax, else 0
    (two probabilities within ``TIE_TOL`` of each other are tied).

**Symmetries.**  When a token relabelling (any process) or a position permutation (processes that treat
positions alike: every process above except fixed orders) maps the support onto itself with equal weights,
p is constant on its orbits.  :func:`.support_symmetry.symmetry_generators` tests every token transposition,
every position transposition and, when L = n^2, the row swaps, column swaps and the transposition of the
n x n grid, each exactly against the support; p is then computed for one representative per orbit.

**Rationals.**  With uniform or rational weights the same chain runs in exact rationals (``fractions.Fraction``)
for the representatives (:func:`.support_rationals.exact_rationals`): SER and p(x) as fractions, beside the
float64 law, and the two are cross-checked.  Rates of i.i.d. schedules and the entropy-sum rule involve real
numbers and stay float only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numba as nb
import numpy as np

from mdmt.constructions.languages.explicit import ExplicitLanguage
from mdmt.runtime.numba_cache import configure_numba_cache, read_only
from mdmt.runtime.parallel import run_ranges
from mdmt.runtime.resources import check_memory, check_work

from .policies import CONFIDENCE, FIXED, MARGIN, NO_SCORE, RATE, SIZE, TIE_TOL, Policy, step_count, step_cut
from .policy_rules import next_combination
from .support_rationals import exact_rationals, rational_cost, rational_supported
from .support_symmetry import integer_weights, orbits, position_symmetric, symmetry_generators
from .support_zeta import superset_sums, superset_tables
from mdmt.defaults import DECODES

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

MAX_LENGTH = 24  # 2^L revealed sets per target
RATIONAL_BUDGET = 4_000_000  # default: rationals when (representatives) x (transitions) stays below this


# ----------------------------------------------------------------------------- kernels

@nb.njit(cache=True)
def _score(T, U, i, c, score):
    V = T.shape[2]
    if score == CONFIDENCE:
        best = 0.0
        for v in range(V):
            if T[U, i, v] > best:
                best = T[U, i, v]
        return best / c
    if score == MARGIN:
        a = 0.0
        b = 0.0
        for v in range(V):
            p = T[U, i, v] / c
            if p > a:
                b = a
                a = p
            elif p > b:
                b = p
        return a - b
    s = 0.0  # NEG_ENTROPY
    for v in range(V):
        p = T[U, i, v] / c
        if p > 0.0:
            s += p * math.log(p)
    return s


@nb.njit(cache=True)
def _factor(x, C, T, full, greedy, U, i):
    """The probability that position i, revealed at state (U, x_U), takes the token x_i."""
    if not greedy:
        return C[U | (1 << i)] / C[U]
    c = C[U]
    V = T.shape[2]
    best = 0.0
    for v in range(V):
        if T[U, i, v] > best:
            best = T[U, i, v]
    best /= c
    if T[U, i, x[i]] / c < best - TIE_TOL:
        return 0.0
    ties = 0
    for v in range(V):
        if T[U, i, v] / c >= best - TIE_TOL:
            ties += 1
    return 1.0 / ties


@nb.njit(cache=True)
def _law_one(x, C, T, full, greedy, modes, ks, rates, order, score, tau, gamma):
    """p(x) and the mass left on unfinished states (should be 0) for one plan."""
    L = x.shape[0]
    n = 1 << L
    F = np.zeros(n)
    F[0] = 1.0
    pos = np.empty(L, dtype=np.int64)
    sure = np.empty(L, dtype=np.int64)
    tied = np.empty(L, dtype=np.int64)
    idx = np.empty(L, dtype=np.int64)
    fac = np.zeros(L)
    row = np.zeros(L)
    for j in range(modes.shape[0]):
        mode = modes[j]
        G = np.zeros(n)
        any_live = False
        for U in range(n):
            mass = F[U]
            if mass == 0.0:
                continue
            m = np.int64(0)  # not a literal 0: one signature for the callees (mdmt.runtime.numba_cache)
            for i in range(L):
                if not (U >> i) & 1:
                    pos[m] = i
                    m += 1
            if m == 0:
                G[U] += mass
                continue
            any_live = True
            for t in range(m):
                fac[pos[t]] = _factor(x, C, T, full, greedy, U, pos[t])
            if mode == RATE:
                r = rates[j]
                masked = (n - 1) & ~U
                sub = masked
                while True:  # every subset of the masked positions (sub = 0 last)
                    w = 1.0
                    cnt = 0
                    for t in range(m):
                        if (sub >> pos[t]) & 1:
                            w *= fac[pos[t]]
                            cnt += 1
                    w *= r ** cnt * (1.0 - r) ** (m - cnt)
                    if w > 0.0:
                        G[U | sub] += mass * w
                    if sub == 0:
                        break
                    sub = (sub - 1) & masked
            elif mode == FIXED:
                S = 0
                w = 1.0
                for t in range(m):
                    if order[pos[t]] == j + 1:
                        S |= 1 << pos[t]
                        w *= fac[pos[t]]
                if w > 0.0:
                    G[U | S] += mass * w
            else:
                if score != NO_SCORE and mode != SIZE:
                    c = C[U]
                    for t in range(m):
                        row[pos[t]] = _score(T, U, pos[t], c, score)
                cnt = step_count(mode, ks[j], row, pos, m, tau, gamma)
                ns, nt, r = step_cut(mode == SIZE, row, pos, m, cnt, sure, tied)
                base = 0
                w0 = mass
                for t in range(ns):
                    base |= 1 << sure[t]
                    w0 *= fac[sure[t]]
                if w0 == 0.0:
                    continue
                total = 1.0  # C(nt, r)
                for t in range(r):
                    total = total * (nt - t) / (t + 1)
                w0 /= total
                for t in range(r):
                    idx[t] = t
                while True:
                    S = base
                    w = w0
                    for t in range(r):
                        S |= 1 << tied[idx[t]]
                        w *= fac[tied[idx[t]]]
                    if w > 0.0:
                        G[S | U] += w
                    if not next_combination(idx, r, nt):
                        break
        F = G
        if not any_live:
            break
    left = 0.0
    for U in range(n - 1):
        left += F[U]
    return F[n - 1], left


@nb.njit(cache=True)
def _law_rep(x, support, w, V, full, greedy, plan_w, modes, ks, rates, order, score, tau, gamma):
    """p(x) of one representative x, summed over the plans with weights plan_w, and the mass left unfinished."""
    if full:
        T = superset_tables(x, support, w, V)
        C = np.empty(T.shape[0])
        for U in range(T.shape[0]):
            C[U] = T[U, 0].sum()
    else:
        C = superset_sums(x, support, w)
        T = np.zeros((1, 1, 1))
    out = 0.0
    left = 0.0
    for p in range(plan_w.shape[0]):
        val, lo = _law_one(x, C, T, full, greedy, modes[p], ks[p], rates[p], order[p], score[p], tau[p], gamma[p])
        out += plan_w[p] * val
        left += plan_w[p] * lo
    return out, left


@nb.njit(cache=True, nogil=True)
def _laws_range(lo, hi, reps, support, w, V, full, greedy, plan_w, modes, ks, rates, order, score, tau, gamma, out,
                left):
    """(p(x), mass left) of the representatives lo..hi-1 into out and left."""
    for r in range(lo, hi):
        out[r], left[r] = _law_rep(reps[r], support, w, V, full, greedy, plan_w, modes, ks, rates, order, score,
                                   tau, gamma)


PARALLEL_WORK = 1 << 22  # below this many (representatives x revealed sets x positions) one thread is faster


def _laws(reps, support, *args):
    """p(x) for every representative x (rows of ``reps``): in parallel over the representatives when there is
    enough work (results do not depend on it: each representative is computed alone)."""
    R = reps.shape[0]
    work = R * (1 << support.shape[1]) * support.shape[1]
    out, left = np.zeros(R), np.zeros(R)
    if R > 1 and work > PARALLEL_WORK:
        run_ranges(_laws_range, R, reps, support, *args, out, left)
    else:
        _laws_range(0, R, reps, support, *args, out, left)
    return out, left


# ----------------------------------------------------------------------------- the law

@dataclass
class SupportLaw:
    """The exact output law of a process on the support of an explicit law, with its metrics."""

    support: np.ndarray  # (M, L)
    q: np.ndarray  # (M,)
    p: np.ndarray  # (M,) float64
    labels: np.ndarray  # (M,) orbit label of each sequence
    decode: str
    generators: list = field(default_factory=list)
    p_exact: dict | None = None  # orbit label -> Fraction p(x) of its representative
    q_exact: tuple | None = None

    @property
    def L(self) -> int:
        return int(self.support.shape[1])

    @property
    def n_orbits(self) -> int:
        return int(len(np.unique(self.labels)))

    @property
    def support_mass(self) -> float:
        return float(self.p.sum())

    @property
    def ser(self) -> float:
        """SER = 1 - sum_{x in supp} p(x) (Eq. 5)."""
        return float(min(1.0, max(0.0, 1.0 - self.support_mass)))

    @property
    def accuracy(self) -> float:
        """1 - SER: the probability that the output is in the support (ParallelBench's accuracy)."""
        return 1.0 - self.ser

    @property
    def kl_nats(self) -> float:
        """KL(q || p) in nats (inf when p misses part of the support)."""
        if np.any(self.p <= 0):
            return math.inf
        return float(max(0.0, np.sum(self.q * (np.log(self.q) - np.log(self.p)))))

    @property
    def kl_bits_per_token(self) -> float:
        return self.kl_nats / (self.L * math.log(2))

    @property
    def support_mass_exact(self) -> Fraction | None:
        if self.p_exact is None:
            return None
        sizes = np.bincount(self.labels, minlength=len(self.labels))
        return sum((int(sizes[k]) * v for k, v in self.p_exact.items()), Fraction(0))

    @property
    def ser_exact(self) -> Fraction | None:
        m = self.support_mass_exact
        return None if m is None else 1 - m

    @property
    def accuracy_exact(self) -> Fraction | None:
        return self.support_mass_exact

    def prob_exact(self, k: int) -> Fraction | None:
        return None if self.p_exact is None else self.p_exact[int(self.labels[k])]


def _plan_arrays(policy: Policy, L: int):
    try:
        plans = policy.plans(L)
    except NotImplementedError:
        raise ValueError(f"policy {policy.spec!r} is not described by step rules (plans): its exact law on an "
                         "explicit support is not available") from None
    n = max(p.steps for _, p in plans)
    P = len(plans)
    modes = np.full((P, n), SIZE, dtype=np.int64)
    ks = np.zeros((P, n), dtype=np.int64)
    rates = np.zeros((P, n))
    order = np.zeros((P, L), dtype=np.int64)
    score = np.full(P, NO_SCORE, dtype=np.int64)
    tau = np.zeros(P)
    gamma = np.zeros(P)
    pw = np.zeros(P)
    for r, (wt, plan) in enumerate(plans):
        s = plan.steps
        modes[r, :s], ks[r, :s], rates[r, :s] = plan.mode, plan.k, plan.rate
        if s < n:  # padding steps reveal nothing (size 0 of nothing left)
            modes[r, s:] = SIZE
            ks[r, s:] = 0
        if plan.order is not None:
            order[r] = plan.order
        score[r], tau[r], gamma[r], pw[r] = plan.score, plan.tau, plan.gamma, wt
    return plans, (pw, modes, ks, rates, order, score, tau, gamma)


def _weights_for_floats(lang) -> np.ndarray:
    """Integer-valued float weights when the law is rational and they fit 2^53 (sums and ratios are then exactly
    those of the counts, so exact ties stay ties); the float weights otherwise.  Marginals are ratios, so any
    positive multiple of q gives the same process."""
    W = integer_weights(lang)
    if W is not None and int(W.sum()) < 2 ** 53:
        return read_only(W.astype(np.float64))
    return read_only(np.asarray(lang.weights_, dtype=np.float64))


def greedy_table(P: np.ndarray) -> np.ndarray:
    """The token law of greedy decoding for marginals P (..., V): uniform on the argmax set (probabilities within
    ``TIE_TOL`` of the maximum are tied), the law the samplers draw from with ``decode="greedy"``."""
    P = np.asarray(P, dtype=np.float64)
    top = P >= P.max(axis=-1, keepdims=True) - TIE_TOL
    return top / top.sum(axis=-1, keepdims=True)


def check_decode(decode: str) -> str:
    if decode not in DECODES:
        raise ValueError(f"decode {decode!r} is not one of {', '.join(DECODES)}")
    return decode


def support_law(lang: ExplicitLanguage, policy: Policy, decode: str = "sample", symmetries: bool | list = True,
                rationals: bool | str = "auto", length: int | None = None) -> SupportLaw:
    """The exact output law of ``policy`` with the oracle denoiser of ``lang`` and the token rule ``decode``
    on the support of ``lang`` (module docstring).  ``rationals``: True, False or ``"auto"`` (when the rational
    chain is small enough, :data:`RATIONAL_BUDGET`).  ``symmetries``: True (find them), False (none), or the
    generators of an earlier :func:`symmetry_generators` call on the same law (reused; position permutations
    are dropped for a policy that does not treat positions alike)."""
    check_decode(decode)
    L = lang.length
    if length is not None and int(length) != L:
        raise ValueError(f"L = {length}: this explicit law holds sequences of length {L} only")
    if L > MAX_LENGTH:
        raise ValueError(f"the exact law on the support tracks 2^L revealed sets per sequence; L = {L} exceeds "
                         f"mdmt's limit of {MAX_LENGTH}")
    greedy = decode == "greedy"
    plans, arrays = _plan_arrays(policy, L)
    adaptive = any(p.score != NO_SCORE and np.any(p.mode != SIZE) for _, p in plans)
    full = greedy or adaptive
    V = lang.n_symbols
    if isinstance(symmetries, list):
        gens = symmetries if position_symmetric(policy) else [g for g in symmetries if g[0].startswith("tokens")]
    else:
        gens = symmetry_generators(lang, positions=position_symmetric(policy)) if symmetries else []
    labels = orbits(lang.n_sequences, gens)
    reps_idx = np.unique(labels)
    per_rep = (1 << L) * (L * V if full else 1) * 8
    check_memory(f"the exact law on the support (2^{L} revealed sets per sequence)", 2 * per_rep,
                 "use a shorter length")
    steps = arrays[1].shape[1]
    check_work(f"the exact law of {len(reps_idx)} representative sequence(s) on the support",
               len(reps_idx) * (1 << L) * (L * (V if full else 1) + steps * L * max(1, len(plans))),
               "use a smaller support or fewer steps")
    w = _weights_for_floats(lang)
    reps = read_only(np.ascontiguousarray(lang.support_[reps_idx]))  # as the support: one signature per kernel
    vals, left = _laws(reps, lang.support_, w, V, full, greedy, *arrays)
    if np.any(left > 1e-9):
        raise ValueError(f"policy {policy.spec!r} left positions masked after its last step")
    p = np.zeros(lang.n_sequences)
    rep_val = dict(zip(reps_idx.tolist(), vals.tolist()))
    p[:] = [rep_val[int(lab)] for lab in labels]
    out = SupportLaw(lang.support_, np.asarray(lang.weights_), p, labels, decode, gens, None, lang.exact_weights)
    want = rationals
    if want == "auto":
        want = rational_supported(policy, L) and lang.exact_weights is not None and \
            len(reps_idx) * rational_cost(policy, L) <= RATIONAL_BUDGET
    if want:
        out.p_exact = exact_rationals(lang, policy, decode, reps_idx)
        for k, v in out.p_exact.items():
            if not math.isclose(float(v), rep_val[k], rel_tol=1e-9, abs_tol=1e-12):
                raise AssertionError(f"float and rational laws disagree at sequence {k}: {rep_val[k]!r} vs {v}")
    return out
