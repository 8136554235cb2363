"""Closed forms for policies (:mod:`.policies`) on the interval HMM with the oracle (Theorem 4.4, Example C.7).

Under the oracle, two positions of one interval revealed in the same step draw their shared
bit independently and disagree with probability 1/2, independently over pairs; positions
revealed at different steps always agree (:mod:`.interval_closed_forms`).  Hence, for any
reveal rule, SER = 1 - E[2^(-P)] with P the number of same-step pairs.  From this:

* **A fixed order** (``stride``, ``blocks``, any assignment tau): P is a number, so
  SER = 1 - 2^(-P(tau)) exactly.  Stride over N steps puts a and b of one interval in the same
  step iff N divides b - a, so P = (L/l) sum_{d = N, 2N, ... < l} (l - d) (the same for every
  interval, whatever its offset): **SER = 0 for every L as soon as N >= l**, and 1 - 2^(-P) -> 1
  otherwise.
* **The first step of any rule that reveals a uniformly random s-subset** (fixed sizes; every
  top-k rule, since at the all-masked state every position has the same marginal and all scores
  tie): P >= P_1, the same-step pairs of step 1, so SER >= 1 - E[2^(-P_1)] with
  E[2^(-P_1)] = [x^s] g(x)^(L/l) / C(L, s),  g(x) = sum_c C(l, c) 2^(-C(c, 2)) x^c   (exact).
  With s = ceil(L/N) and N fixed this tends to 1 as L grows.
* **Confidence threshold tau in [1/2, 1)**: a masked position with f masked partners has
  confidence 2^(-f), so only the f = 0 positions (whose token is determined) exceed tau, and
  otherwise one most-confident position is revealed.  At most one undetermined token per step:
  SER = 0.  The most confident positions are those of the interval already started, so intervals
  are completed one after another and the last position of each is revealed alone:
  NFE = L exactly, for every L.
* **Entropy-sum with 0 < gamma < log 2**: the entropy of such a position is f log 2; every f = 0
  position costs nothing and the first undetermined one crosses gamma, so again one undetermined
  token per step (SER = 0) and the last position of an interval rides with the first of the next:
  NFE = (L/l)(l - 1) + 1 exactly.

Just outside these ranges, tau in [1/4, 1/2) or gamma in [log 2, 2 log 2), one interval is open at a
time and its last two undetermined positions (f = 1: confidence 1/2, entropy log 2) are revealed
together: exactly one colliding pair per interval, SER = 1 - 2^(-L/l) exactly.  Further out more is
revealed at once; docs/adaptive.md measures it.
"""

from __future__ import annotations

import math

import numpy as np

from mdmt.runtime.validation import as_rng, positive_int
from .policies import Policy, score_table
from .policy_sampler import is_adaptive, reveal_loop, select
from .interval_closed_forms import check_lengths
from .schedules import log_convolve


def same_step_pairs(l: int, order) -> int:
    """Number of pairs (a, b) of one interval revealed at the same step, over all intervals, for a fixed order."""
    o = np.asarray(order, dtype=np.int64)
    l, L = check_lengths(l, len(o))
    blocks = o.reshape(L // l, l)
    return int(sum(np.sum(blocks[:, a] == blocks[:, b]) for a in range(l) for b in range(a + 1, l)))


def fixed_order_ser(l: int, order) -> float:
    """Exact oracle SER of a fixed order: 1 - 2^(-same-step pairs)."""
    return float(-math.expm1(-same_step_pairs(l, order) * math.log(2)))


def stride_pairs(l: int, L: int, N: int) -> int:
    """Same-step pairs of the stride order over N steps: (L/l) sum_{d = N, 2N, ... < l} (l - d)."""
    l, L = check_lengths(l, L)
    N = positive_int("number of steps N", N)
    return (L // l) * sum(l - d for d in range(N, l, N))


def log_first_step_success(l: int, L: int, s: int) -> float:
    """log E[2^(-P_1)] for a uniformly random s-subset of the L positions (module docstring)."""
    l, L = check_lengths(l, L)
    s = positive_int("first step size s", s)
    if s > L:
        raise ValueError(f"first step size s = {s} exceeds L = {L}")
    c = np.arange(l + 1)
    log_g = np.array([math.log(math.comb(l, int(k))) for k in c]) - c * (c - 1) / 2 * math.log(2)
    K = L // l
    result = np.full(s + 1, -np.inf)
    result[0] = 0.0
    base = np.full(max(s, l) + 1, -np.inf)
    base[: l + 1] = log_g
    base = base[: s + 1]
    while K:  # g^K truncated at degree s, by repeated squaring in log space
        if K & 1:
            result = log_convolve(result, base, s)
        K >>= 1
        if K:
            base = log_convolve(base, base, s)
    log_binom = math.lgamma(L + 1) - math.lgamma(s + 1) - math.lgamma(L - s + 1)
    return float(result[s] - log_binom)


def first_step_ser_lower_bound(l: int, L: int, s: int) -> float:
    """SER >= 1 - E[2^(-P_1)] for every rule whose first step reveals a uniformly random s-subset (oracle)."""
    return float(-math.expm1(log_first_step_success(l, L, s)))


def threshold_nfe(l: int, L: int, tau: float) -> int:
    """NFE of the confidence threshold with tau in [1/2, 1) on the interval HMM: L (and SER = 0)."""
    l, L = check_lengths(l, L)
    if not 0.5 <= tau < 1:
        raise ValueError(f"the closed form needs tau in [1/2, 1), got {tau!r}")
    return L


def entropy_sum_nfe(l: int, L: int, gamma: float) -> int:
    """NFE of entropy-sum with 0 < gamma < log 2 on the interval HMM: (L/l)(l - 1) + 1 (and SER = 0)."""
    l, L = check_lengths(l, L)
    if not 0 < gamma < math.log(2):
        raise ValueError(f"the closed form needs 0 < gamma < log 2 = {math.log(2):.6g}, got {gamma!r}")
    return (L // l) * (l - 1) + 1


#: float64 tables of l x 2^(l-1) entries :func:`oracle_scores_by_free_bits` holds at once (P and its scores).
_SCORE_TABLES = 3


def oracle_scores_bytes(l: int) -> int:
    """Bytes of :func:`oracle_scores_by_free_bits` at interval length l (exact: a Python integer)."""
    return _SCORE_TABLES * 8 * l * 2 ** (min(l, 4096) - 1)  # beyond 2^4095 the size only needs to be "too large"


def check_oracle_scores(l: int, policies=(), what: str | None = None) -> None:
    """Refuse (the memory guard) an interval length whose oracle scores do not fit, when one of ``policies`` (SPECs;
    empty: any) is a rule that scores tokens -- i.i.d. and fixed-order rules have closed forms and need none.
    ``what`` names the input in the message (default: ``interval length l = L``)."""
    from mdmt.runtime.resources import check_memory, format_count
    from .policies import ORDERS

    l = positive_int("interval length l", l, minimum=2)
    scored = [p for p in policies if str(p).partition(":")[0].strip() not in ("iid", *ORDERS)] if policies else ["any"]
    if scored:
        check_memory(f"{what or f'interval length l = {l}'}: the oracle scores of the adaptive rules over the "
                     f"{format_count(2 ** (min(l, 4096) - 1))} tokens of the interval HMM", oracle_scores_bytes(l),
                     "use a smaller interval length with adaptive rules (i.i.d. and fixed-order rules have closed "
                     "forms at any l)")


def oracle_scores_by_free_bits(l: int, score: int) -> np.ndarray:
    """The score (``policies.score_table``) of the oracle marginal of a masked position with f = 0..l-1 free bits.

    That marginal is uniform over 2^f of the 2^(l-1) tokens (:mod:`.interval_oracle`).
    """
    l = positive_int("interval length l", l, minimum=2)
    check_oracle_scores(l)
    V = 2 ** (l - 1)
    P = np.zeros((l, V))
    for f in range(l):
        P[f, : 2 ** f] = 2.0 ** -f
    return score_table(P, score)


def pattern_run(l: int, L: int, policy: Policy, num: int, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``policy`` with the oracle on the interval HMM on reveal patterns only; (success weights, NFE).

    On the support the oracle's marginals depend only on which positions are revealed (a masked
    position has f = #masked partners free bits), so the policy's choices do too, and given the
    sequence of reveal sets the probability that every pair agrees is exactly 2^(-same-step pairs).
    Each run draws one reveal trajectory with the policy's own rule (:func:`.policy_sampler.select`,
    seeded keys, the loop of :func:`.policy_sampler.reveal_loop`) and returns that conditional
    probability: its mean is the exact 1 - SER (a Rao-Blackwellised Monte Carlo estimate; exact when
    the trajectory is deterministic).
    """
    l, L = check_lengths(l, L)
    num = positive_int("num", num)
    rng = as_rng(seed)
    K = L // l
    log_w = np.zeros(num)

    def choose(plan, j, k, masked, keys, in_step):
        score = None
        if is_adaptive(int(plan.mode[j])):
            f = np.repeat(masked.reshape(num, K, l).sum(axis=2) - 1, l, axis=1)
            score = oracle_scores_by_free_bits(l, plan.score)[np.clip(f, 0, l - 1)]
        S = select(plan, j, k, masked, keys, in_step, score)
        c = S.reshape(num, K, l).sum(axis=2)
        log_w[:] -= (c * (c - 1) // 2).sum(axis=1) * math.log(2)
        return S

    nfe, _ = reveal_loop(policy, L, num, rng, choose)
    return np.exp(log_w), nfe
