"""Reverse processes beyond i.i.d. reveal steps: the rule that picks the positions S_j a step reveals.

The paper's sampler (Section 3.2, Eq. 3) draws every position's reveal step i.i.d. from the
schedule, so the positions revealed together are uniformly random.  A *policy* is any other
rule for choosing S_j among the masked positions; the tokens of S_j are then drawn
independently from the denoiser p(. | x_{U_j}) exactly as in Eq. 3.  mdmt implements:

``IID(pi)`` (SPEC ``iid`` or ``iid:SCHEDULE``)
    the paper's process: each masked position is revealed at step j with rate r_j (:mod:`.schedules`).
``Sizes(s_1..s_N)`` (SPEC ``uniform``: balanced sizes)
    a fixed mask-size schedule: step j reveals a uniformly random subset of size s_j of the masked
    positions (Li & Cai, arXiv 2505.21400).  ``uniform`` uses the balanced sizes of
    :func:`balanced_sizes` (the first L mod N steps reveal ceil(L/N), the others floor(L/N)).
``RandomSizes(N, law)`` (SPEC ``random:tc``, ``random:dtc``, ``random:uniform``)
    randomized step sizes in the spirit of Zhao & Cai (arXiv 2602.20126), with mdmt's own stated law:
    the N - 1 step boundaries (the numbers of positions revealed before each later step) are
    N - 1 i.i.d. draws c from {1, ..., L - 1} with P(c = u) proportional to w(u), sorted, equal
    draws merged (so a sequence may need fewer than N steps), and each step reveals a uniformly
    random subset of the masked positions of the size the boundaries give.  ``tc``: w(u) = 1/(L - u)
    (boundaries dense where few positions are still masked: step sizes proportional to the number
    still masked); ``dtc``: w(u) = 1/u (step sizes proportional to the number already revealed);
    ``uniform``: w(u) = 1.  Why these two laws adapt to TC and DTC is derived in docs/atlas.md;
    Zhao & Cai's own law is not reproduced here.
``TopK(score, N)`` (SPEC ``confidence``, ``margin``, ``entropy``)
    adaptive: step j reveals the s_j masked positions (balanced sizes) with the largest score of the
    denoiser's marginal p(. | x_U): ``confidence`` = max_v p(v) (LLaDA's low-confidence remasking),
    ``margin`` = top-1 minus top-2 probability, ``entropy`` = minus the entropy (lowest entropy first).
``Threshold(tau)`` (SPEC ``threshold:TAU``)
    adaptive: reveal every masked position whose confidence exceeds tau, and at least one (the most
    confident) when none does (Fast-dLLM's confidence threshold).
``EntropySum(gamma)`` (SPEC ``entropy-sum:GAMMA``)
    adaptive: reveal masked positions in increasing entropy (nats) until the cumulative entropy
    exceeds gamma; the position whose entropy makes it exceed gamma is revealed too, so every step
    reveals at least one (Cai & Li, arXiv 2603.22248).
``FixedOrder`` (SPEC ``stride``, ``blocks``)
    a fixed, position-aware assignment of positions to steps: ``stride`` reveals at step j the
    positions i with i mod N = j - 1; ``blocks`` reveals N contiguous balanced blocks left to right
    (position i at step floor(i N / L) + 1).

Threshold and entropy-sum need no N: they run until every position is revealed (at most L steps,
each step reveals at least one position); with ``steps=N`` the N-th step reveals everything left.

**Ties.**  A top-k cut is made at the c-th largest score t (c = the step's count): positions
with score > t + TIE_TOL are revealed, and the remaining positions are drawn uniformly at random
among those with |score - t| <= TIE_TOL (TIE_TOL = 1e-9, far above the floating-point noise
between two exact evaluations of the same marginal, far below any genuine difference on
mdmt's languages).  The same tolerance decides the threshold rule: a confidence exceeds tau when it is
above tau + TIE_TOL, so that a confidence equal to tau (2/3 against ``threshold:0.6666666666666666``, the
float nearest 2/3) does not exceed it, whichever arithmetic computed it.  The exact output law (:mod:`.policy_exact`) averages over this uniform
choice; the sampler (:mod:`.policy_sampler`) draws it from the seeded generator (the tied
positions with the smallest of one uniform key per position).  The count rules (threshold,
entropy-sum) and the cut are the numba functions :func:`~.policy_rules.step_count` and
:func:`~.policy_rules.step_cut` (:mod:`.policy_rules`), used by both.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from mdmt.defaults import POLICY_FORMS, REMAINDERS

from mdmt.runtime.validation import positive_int
from . import policies_beyond
from .process_base import LawProcess
from .schedules import as_pi, expected_nfe as iid_expected_nfe, parse_schedule, reveal_probabilities, reveal_rates

from .policy_rules import (CONFIDENCE, ENTROPY_SUM, FIXED, MARGIN, NEG_ENTROPY, NO_SCORE, RATE, SCORES, SIZE, THRESHOLD,
                           TIE_TOL, TOPK, score_table, step_cut, step_count)

SIZE_LAWS = ("tc", "dtc", "uniform")
MAX_COMPOSITIONS = 1 << 16  # exact law of random sizes: at most this many step-size vectors


# ----------------------------------------------------------------------------- plans

@dataclass(frozen=True)
class Plan:
    """What the exact evaluator and the sampler need: one rule per step (kernel codes above).

    ``order`` (FIXED steps) gives each position's step, 1-based; ``score`` the score code the
    adaptive rules read; ``tau``/``gamma`` the threshold and entropy-sum parameters.
    """

    mode: np.ndarray  # (n,) int64
    k: np.ndarray  # (n,) int64: sizes (SIZE, TOPK)
    rate: np.ndarray  # (n,) float64: reveal rates (RATE)
    order: np.ndarray | None = None  # (L,) int64 (FIXED)
    score: int = NO_SCORE
    tau: float = 0.0
    gamma: float = 0.0

    @property
    def steps(self) -> int:
        return int(self.mode.shape[0])


def _plan(mode, n, k=None, rate=None, **kw) -> Plan:
    return Plan(np.full(n, mode, dtype=np.int64), np.zeros(n, dtype=np.int64) if k is None else np.asarray(k, np.int64),
                np.zeros(n) if rate is None else np.asarray(rate, np.float64), **kw)




def balanced_sizes(L: int, N: int, remainder: str = "first") -> np.ndarray:
    """s_1..s_N summing to L with |s_j - s_k| <= 1; the L mod N larger steps (ceil(L/N)) come first
    (``remainder="first"``: LLaDA's ``get_num_transfer_tokens``, which ParallelBench's code reuses) or last
    (``"last"``)."""
    L = positive_int("L", L)
    N = positive_int("number of steps N", N)
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder {remainder!r} is not one of {', '.join(REMAINDERS)}")
    if N > L:
        raise ValueError(f"N = {N} steps > L = {L}: a fixed-size schedule reveals at least one position per step")
    s = np.full(N, L // N, dtype=np.int64)
    if remainder == "first":
        s[: L % N] += 1
    elif L % N:
        s[N - L % N:] += 1
    return s


def _sizes(values) -> np.ndarray:
    try:
        s = np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"step sizes must be positive integers, got {values!r}") from None
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"step sizes must be a non-empty vector, got {values!r}")
    bad = np.flatnonzero(s < 1)
    if bad.size:
        raise ValueError(f"step size s_{bad[0] + 1} = {int(s[bad[0]])} is not a positive integer")
    return s


class Policy:
    """A rule choosing S_j (module docstring).  ``plans(L)`` is its exact description."""

    adaptive = False  # reads the denoiser's marginals
    spec = "policy"

    def plans(self, L: int) -> list[tuple[float, Plan]]:
        """The policy as a mixture of plans: [(weight, plan)], weights summing to 1."""
        raise NotImplementedError

    def sampling_plan(self, L: int, num: int, rng: np.random.Generator) -> tuple[Plan, np.ndarray]:
        """(plan, k_rows): the plan and the size of every step for every sequence, int64 (num, n)."""
        plan = self.plans(L)[0][1]
        return plan, np.broadcast_to(plan.k, (num, plan.steps)).copy()

    def expected_nfe(self, L: int) -> float | None:
        """E[NFE] = E #{steps revealing something} when it does not depend on the tokens, else None."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class IID(Policy):
    """The paper's process: reveal steps i.i.d. from pi (Section 3.2); a masked position is revealed at step j w.p. r_j."""

    def __init__(self, pi, spec: str = "iid"):
        self.pi = as_pi(pi)
        self.spec = spec

    def plans(self, L):
        n = len(self.pi)
        return [(1.0, _plan(RATE, n, rate=reveal_rates(self.pi)))]

    def expected_nfe(self, L):
        return iid_expected_nfe(self.pi, L)


class Sizes(Policy):
    """Fixed mask sizes s_1..s_N: step j reveals a uniformly random s_j-subset of the masked positions (Li & Cai)."""

    def __init__(self, sizes, spec: str | None = None):
        self.sizes = _sizes(sizes)
        self.spec = spec or "sizes:" + "+".join(map(str, self.sizes))

    def _check(self, L):
        if int(self.sizes.sum()) != L:
            raise ValueError(f"step sizes {self.sizes.tolist()} sum to {int(self.sizes.sum())}, not L = {L}")

    def plans(self, L):
        self._check(L)
        return [(1.0, _plan(SIZE, len(self.sizes), k=self.sizes))]

    def expected_nfe(self, L):
        return float(len(self.sizes))


class Balanced(Sizes):
    """Balanced sizes over N steps (SPEC ``uniform``); the sizes are fixed once L is known."""

    def __init__(self, N: int, remainder: str = "first"):
        self.N = positive_int("number of steps N", N)
        self.remainder = remainder
        self.spec = "uniform"

    def plans(self, L):
        return [(1.0, _plan(SIZE, self.N, k=self.sizes_for(L)))]

    def expected_nfe(self, L):
        return float(self.N)

    def sizes_for(self, L):
        return balanced_sizes(L, self.N, self.remainder)


def cut_weights(L: int, law: str) -> np.ndarray:
    """P(c = u), u = 1..L-1, for one step boundary of ``RandomSizes`` (module docstring)."""
    u = np.arange(1, L, dtype=np.float64)
    w = {"uniform": np.ones_like(u), "tc": 1.0 / (L - u), "dtc": 1.0 / u}[law]
    return w / w.sum()


class RandomSizes(Policy):
    """Randomized step sizes: N - 1 i.i.d. step boundaries from ``cut_weights(L, law)`` (module docstring)."""

    def __init__(self, N: int, law: str = "tc"):
        self.N = positive_int("number of steps N", N)
        if law not in SIZE_LAWS:
            raise ValueError(f"random step sizes: law {law!r} is not one of {', '.join(SIZE_LAWS)}")
        self.law = law
        self.spec = f"random:{law}"

    def compositions(self, L: int) -> list[tuple[float, np.ndarray]]:
        """Every step-size vector with its exact probability.

        The set C of distinct boundaries has P(C) = sum_{D subset of C} (-1)^{|C|-|D|} w(D)^(N-1)
        (inclusion-exclusion over the draws missing a point of C).
        """
        L = positive_int("L", L)
        if self.N == 1 or L == 1:
            return [(1.0, np.array([L], dtype=np.int64))]
        w = cut_weights(L, self.law)
        m = self.N - 1
        count = sum(math.comb(L - 1, k) for k in range(1, min(m, L - 1) + 1))
        if count > MAX_COMPOSITIONS:
            raise ValueError(f"the exact law of random step sizes at L = {L}, N = {self.N} has {count} step-size vectors; "
                             f"at most {MAX_COMPOSITIONS} are supported (use the Monte Carlo sampler)")
        out = []
        for k in range(1, min(m, L - 1) + 1):
            for C in itertools.combinations(range(1, L), k):
                wc = w[np.array(C) - 1]
                p = 0.0
                for r in range(1, k + 1):
                    sign = -1.0 if (k - r) % 2 else 1.0
                    for D in itertools.combinations(range(k), r):
                        p += sign * float(wc[list(D)].sum()) ** m
                if p > 0:
                    out.append((p, np.diff(np.concatenate([[0], C, [L]])).astype(np.int64)))
        total = sum(p for p, _ in out)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"random step sizes: the composition law sums to {total!r} (cancellation at N = {self.N})")
        return [(p / total, s) for p, s in out]

    def plans(self, L):
        return [(p, _plan(SIZE, len(s), k=s)) for p, s in self.compositions(L)]

    def sampling_plan(self, L, num, rng):
        n = self.N
        k_rows = np.zeros((num, n), dtype=np.int64)
        if L == 1 or n == 1:
            k_rows[:, 0] = L
        else:
            cuts = np.sort(rng.choice(np.arange(1, L), size=(num, n - 1), p=cut_weights(L, self.law)), axis=1)
            bounds = np.concatenate([np.zeros((num, 1), np.int64), cuts, np.full((num, 1), L)], axis=1)
            k_rows[:] = np.diff(bounds, axis=1)  # a merged boundary gives a step of size 0 (no evaluation)
        return _plan(SIZE, n, k=np.zeros(n, dtype=np.int64)), k_rows

    def expected_nfe(self, L):
        return float(sum(p * len(s) for p, s in self.compositions(L)))


class TopK(Policy):
    """Adaptive top-k: step j reveals the s_j masked positions of largest score (balanced sizes over N steps)."""

    adaptive = True

    def __init__(self, score: str, N: int | None = None, sizes: list[int] | np.ndarray | None = None,
                 remainder: str = "first"):
        if score not in SCORES:
            raise ValueError(f"top-k score {score!r} is not one of {', '.join(SCORES)}")
        self.sizes = None if sizes is None else _sizes(sizes)  # explicit step sizes instead of balanced ones
        self.score, self.remainder = score, remainder
        self.N = len(self.sizes) if self.sizes is not None else positive_int("number of steps N", N)
        self.spec = score

    def plans(self, L):
        return [(1.0, _plan(TOPK, self.N, k=self.sizes_for(L), score=SCORES[self.score]))]

    def sizes_for(self, L):
        if self.sizes is not None:
            if int(self.sizes.sum()) != L:
                raise ValueError(f"step sizes {self.sizes.tolist()} sum to {int(self.sizes.sum())}, not L = {L}")
            return self.sizes
        return balanced_sizes(L, self.N, self.remainder)


def _until_done(mode, L, steps, **kw) -> Plan:
    n = L if steps is None else min(positive_int("number of steps N", steps), L)
    mode_arr = np.full(n, mode, dtype=np.int64)
    k = np.zeros(n, dtype=np.int64)
    if steps is not None:  # the last step reveals everything left
        mode_arr[-1] = SIZE
        k[-1] = L
    return Plan(mode_arr, k, np.zeros(n), **kw)


def _parameter(what: str, value, ok) -> float:
    """A float parameter accepted by ``ok``; otherwise a ValueError naming ``what`` and the value."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{what}, got {value!r}")
    return v


class Threshold(Policy):
    """Reveal every masked position with confidence > tau, at least one (the most confident)."""

    adaptive = True

    def __init__(self, tau: float, steps: int | None = None):
        t = _parameter("confidence threshold tau must be in [0, 1)", tau, lambda v: 0.0 <= v < 1.0)
        self.tau, self.steps = t, steps
        self.spec = f"threshold:{t:g}"

    def plans(self, L):
        return [(1.0, _until_done(THRESHOLD, L, self.steps, score=CONFIDENCE, tau=self.tau))]


class EntropySum(Policy):
    """Reveal in increasing entropy until the cumulative entropy (nats) exceeds gamma (the crossing position included)."""

    adaptive = True

    def __init__(self, gamma: float, steps: int | None = None):
        g = _parameter("entropy budget gamma must be a positive number (nats)", gamma, lambda v: v > 0)
        self.gamma, self.steps = g, steps
        self.spec = f"entropy-sum:{g:g}"

    def plans(self, L):
        return [(1.0, _until_done(ENTROPY_SUM, L, self.steps, score=NEG_ENTROPY, gamma=self.gamma))]


ORDERS = ("stride", "blocks")


def fixed_order(kind: str, L: int, N: int) -> np.ndarray:
    """The step (1-based) of each position: ``stride`` i mod N + 1, ``blocks`` floor(i N / L) + 1."""
    L = positive_int("L", L)
    N = positive_int("number of steps N", N)
    i = np.arange(L, dtype=np.int64)
    if kind == "stride":
        return i % N + 1
    if kind == "blocks":
        return i * N // L + 1
    raise ValueError(f"fixed order {kind!r} is not one of {', '.join(ORDERS)}")


class FixedOrder(Policy):
    """A fixed assignment of positions to steps: ``stride``, ``blocks``, or an explicit vector ``order`` (1-based)."""

    def __init__(self, kind: str, N: int | None = None, order=None):
        if order is not None:
            o = np.asarray(order)
            if o.ndim != 1 or o.size == 0 or not np.issubdtype(o.dtype, np.integer) or o.min() < 1:
                raise ValueError(f"a fixed order must be a vector of steps >= 1, got {order!r}")
            self._order = o.astype(np.int64)
            self.kind, self.N = "order", int(o.max())
        else:
            if kind not in ORDERS:
                raise ValueError(f"fixed order {kind!r} is not one of {', '.join(ORDERS)}")
            self._order, self.kind, self.N = None, kind, positive_int("number of steps N", N)
        self.spec = self.kind

    def order(self, L: int) -> np.ndarray:
        if self._order is None:
            return fixed_order(self.kind, L, self.N)
        if len(self._order) != L:
            raise ValueError(f"the fixed order has {len(self._order)} positions, not L = {L}")
        return self._order

    def plans(self, L):
        o = self.order(L)
        return [(1.0, _plan(FIXED, int(o.max()), order=o))]

    def expected_nfe(self, L):
        return float(len(np.unique(self.order(L))))


_PROFILES: dict = {}  # (id(language), L, method) -> (language, information profile): OptimalSizes.bind's cache


class OptimalSizes(Policy):
    """The DP's sizes over N steps (SPEC ``optimal``; :mod:`.policies_beyond`); :meth:`bind` fixes them for a
    language and L (:func:`.policies_beyond.resolve`)."""

    def __init__(self, N: int, method: str = "auto"):
        self.N = positive_int("number of steps N", N)
        self.method = method
        self.spec = "optimal"

    def bind(self, language, L: int) -> Sizes:
        """The fixed sizes optimal for ``language`` at length L (the profile kept for a search over N)."""
        from .optimal_schedule import optimal_sizes, profile

        key = (id(language), int(L), self.method)
        hit = _PROFILES.get(key)
        if hit is None or hit[0] is not language:
            hit = (language, profile(language, L, self.method)["profile"])
            _PROFILES[key] = hit
            while len(_PROFILES) > 8:
                _PROFILES.pop(next(iter(_PROFILES)))
        sizes, _ = optimal_sizes(hit[1], self.N)
        return Sizes(sizes, spec="optimal")

    def plans(self, L):
        raise ValueError("policy 'optimal' depends on the language: bind it first (policies_beyond.resolve)")


class Bisect(FixedOrder):
    """The bisection order with blocks of W positions (SPEC ``bisect[:W]``; :func:`.policies_beyond.bisect_order`)."""

    def __init__(self, width: int = 1):
        self.width = positive_int("bisect block width W", width)
        self._order, self.kind, self.N = None, "bisect", None
        self.spec = "bisect" if self.width == 1 else f"bisect:{self.width}"

    def order(self, L):
        return policies_beyond.bisect_order(L, self.width)


def fixed_step_sizes(policy: Policy, L: int) -> np.ndarray | None:
    """The step sizes s_1..s_K of a process whose sizes do not depend on the tokens (fixed and balanced sizes,
    top-k, fixed orders); None for i.i.d. steps, random sizes, threshold and entropy-sum."""
    if isinstance(policy, (Balanced, TopK)):
        return policy.sizes_for(L)
    if isinstance(policy, Sizes):
        return policy.sizes
    if isinstance(policy, FixedOrder):
        return np.bincount(policy.order(L))[1:]
    return None


# ----------------------------------------------------------------------------- SPEC grammar

FORMS = POLICY_FORMS  # the SPEC grammar as help texts and errors quote it (mdmt.defaults)


def parse_policy(spec: str, N: int | None = None, cap: bool = False, sizes: list[int] | np.ndarray | None = None,
                 remainder: str = "first") -> Policy:
    """A policy from its SPEC (module docstring; ``FORMS``).

    ``N`` is the number of steps of the policies that need one; threshold and entropy-sum run until
    done unless ``cap`` (then their N-th step reveals everything left).  ``sizes`` (explicit step sizes) and
    ``remainder`` (where balanced sizes put the L mod N larger steps) apply to ``uniform`` and the top-k rules.
    """
    if sizes is not None and not isinstance(spec, Policy):
        head = str(spec).strip()
        if head == "uniform":
            return Sizes(sizes, spec="uniform")
        if head in SCORES:
            return TopK(head, sizes=sizes)
        raise ValueError(f"policy {spec!r}: explicit step sizes apply to uniform, {', '.join(SCORES)} only")
    if isinstance(spec, (Policy, LawProcess)):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"policy {spec!r}: expected one of {FORMS}")
    text = spec.strip()
    head, sep, rest = text.partition(":")

    def need_n():
        if N is None:
            raise ValueError(f"policy {text!r} needs the number of steps N")
        return positive_int("number of steps N", N)

    if head == "iid":
        sched = parse_schedule(rest if sep else "linear")
        return IID(reveal_probabilities(sched, need_n() if not rest or not ("," in rest) else N), spec=text)
    if head == "uniform" and not sep:
        return Balanced(need_n(), remainder)
    if head == "random":
        return RandomSizes(need_n(), rest if sep else "tc")
    if head in SCORES and not sep:
        return TopK(head, need_n(), remainder=remainder)
    if head in ("threshold", "entropy-sum"):
        if not sep:
            raise ValueError(f"policy {text!r}: expected {head}:{'TAU' if head == 'threshold' else 'GAMMA'}")
        try:
            value = float(rest)
        except ValueError:
            raise ValueError(f"policy {text!r}: {rest!r} is not a number") from None
        steps = N if cap else None
        return Threshold(value, steps) if head == "threshold" else EntropySum(value, steps)
    if head in ORDERS and not sep:
        return FixedOrder(head, need_n())
    if head == "optimal" and not sep:  # the samplers beyond the paper (:mod:`.policies_beyond`, docs/samplers.md)
        return OptimalSizes(need_n())
    if head == "bisect":
        return Bisect(policies_beyond.int_parameter(rest, f"policy {text!r}: the block width W") if sep else 1)
    if head in ("remdm", "verified"):
        return policies_beyond.parse_law_process(text, N)
    raise ValueError(f"policy {text!r}: expected one of {FORMS}")


def split_policies(text: str) -> list[str]:
    """The SPECs of a comma-separated list of policies, where ``iid:p1,p2,...`` (an explicit vector of reveal
    probabilities) and ``verified:B1,B2,...`` (a list of block sizes) keep their commas: ``iid:0.5,0.5,confidence`` is
    ``["iid:0.5,0.5", "confidence"]``.  A number continues the ``iid:`` or ``verified:`` SPEC of numbers before it;
    empty items are dropped."""
    specs: list[str] = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        if (specs and specs[-1].startswith(("iid:", "verified:")) and _is_number(item)
                and _is_number(specs[-1].partition(":")[2].split(",")[-1])):
            specs[-1] += "," + item
        else:
            specs.append(item)
    return specs


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def policy_list(text: str, N: int | None = None, cap: bool = False) -> list[Policy]:
    """A comma-separated list of policy SPECs (:func:`split_policies`: ``iid:p1,p2,...`` keeps its commas)."""
    specs = split_policies(text)
    if not specs:
        raise ValueError(f"expected at least one policy ({FORMS}), got {text!r}")
    return [parse_policy(s, N, cap) for s in specs]
