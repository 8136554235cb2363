"""Masking schedules and the reveal-step law they induce (Section 3.2 of the paper, Eq. 3; MDLM's ddpm_cache sampler).

A schedule alpha(t), t in [0, 1], is non-increasing with alpha(0) = 1 and alpha(1) = 0:
under the forward process each token is still unmasked at time t with probability
alpha(t).  With N reverse steps on a grid 1 = t_N > ... > t_0 = 0, reverse step
j = 1..N (in execution order) goes from t_{N-j+1} to t_{N-j}, and every position's
*reveal step* tau_i is i.i.d. with

    pi_j = P(tau_i = j) = alpha(t_{N-j}) - alpha(t_{N-j+1}),      sum_j pi_j = 1.

A position still masked before step j is revealed there with probability
r_j = pi_j / (1 - sum_{k<j} pi_k) = (alpha_s - alpha_t) / (1 - alpha_t)  (r_N = 1).

**One boundary.**  A schedule becomes reveal probabilities exactly once:
:func:`reveal_probabilities` (a :class:`Schedule`, a schedule SPEC string or an explicit
vector, and N) validates and returns a read-only vector pi that every function below it
takes as is (they recognise a vector this module validated and check anything else once).

Named schedules (SPEC ``NAME`` or ``NAME:PARAM``, :func:`parse_schedule`):

``linear``
    alpha(t) = 1 - t on the uniform grid: pi_j = 1/N.
``cosine``
    alpha(t) = cos(pi t / 2) on the uniform grid.
``loglinear`` (parameter ``eps``, default 1e-5; SPEC ``loglinear:EPS``)
    MDLM's log-linear schedule *as its ddpm_cache sampler runs it*.  MDLM's noise is
    sigma(t) = -log(1 - (1 - eps') t), so exp(-sigma(t)) = 1 - (1 - eps') t; its sampler
    masks a token at time t with probability t itself, i.e. alpha(t) = 1 - t (the eps' -> 0
    limit of exp(-sigma)), on the grid t = 1, ..., eps (N + 1 points, uniform), followed
    by a noise-removal pass that reveals everything still masked at t = eps.  mdmt
    implements exactly alpha(t) = 1 - t on the grid t_k = eps + (1 - eps) k / N
    (k = 1..N), t_0 = 0, so the last step also reveals the eps leftover (MDLM's last
    step and its noise-removal pass merged into one step; mdmt draws those tokens from
    the denoiser, MDLM takes the argmax).  Hence pi_j = (1 - eps)/N for j < N and
    pi_N = (1 - eps)/N + eps: as eps -> 0 the log-linear schedule *is* the linear one.
``warmstart`` (parameter ``first``, default 0.05; SPEC ``warmstart:FIRST``)
    The schedule of the Theorem 4.2 proof (Lemma B.12): the first reverse step reveals a
    fraction ``first`` of the tokens in expectation (pi_1 = first) and the other N - 1 steps
    share the rest evenly (pi_j = (1 - first)/(N - 1)).  As a schedule it is alpha(t) = 1 - t
    on the grid t_N = 1, t_k = k (1 - first)/(N - 1) (k < N).  For N = 1, pi = (1,).

Any user time grid (``GridSchedule(times, base)``, validated: strictly monotone from 0
to 1) or explicit reveal-probability vector (``ExplicitSchedule(pi)``, SPEC ``0.2,0.3,0.5``,
or a plain array passed to ``reveal_probabilities``) is accepted.

From pi and the length L: ``p_distinct`` = P(every step reveals at most one token)
= L! e_L(pi_1..pi_N) (log-space dynamic programme; exactly 0 when fewer than L steps
have pi_j > 0) and ``expected_nfe`` = E[#{j : S_j != {}}] = sum_j 1 - (1 - pi_j)^L, the
expected number of denoiser evaluations under ddpm_cache.
"""

from __future__ import annotations

import math
import weakref

import numba as nb
import numpy as np

from mdmt.runtime.resources import check_memory
from mdmt.runtime.validation import positive_int
from mdmt.runtime.numba_cache import configure_numba_cache
from mdmt.constructions.types import ArrayLike, RevealProbabilities

configure_numba_cache()  # before the @njit(cache=True) below: numba's cache keyed on mdmt's source

_TOL = 1e-12
_PI_ATOL = 1e-9  # tolerance on sum(pi) = 1 for an explicit vector
_VALIDATED: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


def _check_alpha(name: str, t: np.ndarray, a: np.ndarray) -> None:
    """alpha(0) = 1, alpha(1) = 0 and non-increasing on the grid ``t`` (increasing)."""
    if not np.all(np.isfinite(a)):
        k = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"schedule {name}: alpha({t[k]:.6g}) = {a[k]!r} is not a finite number")
    if abs(a[0] - 1.0) > _TOL:
        raise ValueError(f"schedule {name}: alpha(0) = {a[0]:.6g}, must be 1")
    if abs(a[-1]) > _TOL:
        raise ValueError(f"schedule {name}: alpha(1) = {a[-1]:.6g}, must be 0")
    rise = np.flatnonzero(a[1:] - a[:-1] > _TOL)
    if rise.size:
        k = int(rise[0])
        raise ValueError(
            f"schedule {name} is not non-increasing: alpha({t[k]:.6g}) = {a[k]:.6g} < "
            f"alpha({t[k + 1]:.6g}) = {a[k + 1]:.6g} (reverse step {len(t) - 1 - k})"
        )


#: float64 vectors of N + 1 entries a schedule's pi is computed with (the time grid, alpha on it, pi, temporaries).
_VECTORS_PER_STEP = 8


def _steps(N) -> int:
    """N checked: an integer >= 1 whose pi (and the grid it is computed on) fits the memory limit."""
    N = positive_int("number of steps N", N)
    check_memory(f"the reveal probabilities of N = {N} steps", 8 * _VECTORS_PER_STEP * (N + 1), "use fewer steps")
    return N


def _seal(pi: np.ndarray) -> np.ndarray:
    """Mark a validated pi: read-only, and recognised by :func:`as_pi` without a second check."""
    pi = np.array(pi, dtype=np.float64)  # a fresh array this module owns
    pi.setflags(write=False)
    _VALIDATED[id(pi)] = pi
    return pi


class Schedule:
    """A masking schedule: ``alpha(t)`` (vectorised) and the time grid ``times(N)``.

    ``reveal_probabilities(N)`` turns them into pi (N,), validating alpha(0) = 1, alpha(1) = 0
    and monotonicity on the grid (errors name the offending t and reverse step).
    """

    name = "schedule"

    def alpha(self, t):
        raise NotImplementedError

    def times(self, N: int) -> np.ndarray:
        """The grid t_0 = 0 < t_1 < ... < t_N = 1 (default: uniform)."""
        return np.linspace(0.0, 1.0, N + 1)

    def _pi(self, N: int) -> np.ndarray:
        t = np.asarray(self.times(N), dtype=np.float64)
        a = np.asarray(self.alpha(t), dtype=np.float64).reshape(t.shape)
        _check_alpha(self.name, t, a)
        d = a[:-1] - a[1:]  # d[k] = alpha(t_k) - alpha(t_{k+1}) >= 0: reverse step N - k
        pi = np.clip(d[::-1], 0.0, None)
        return pi / pi.sum()

    def reveal_probabilities(self, N: int) -> np.ndarray:
        """pi (N,), read-only: pi[j-1] = P(tau_i = j), j = 1 the first reverse step (from t = 1)."""
        return _seal(self._pi(_steps(N)))

    @property
    def spec(self) -> str:
        """The SPEC string that :func:`parse_schedule` turns back into this schedule."""
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Linear(Schedule):
    """alpha(t) = 1 - t: pi_j = 1/N."""

    name = "linear"

    def alpha(self, t):
        return 1.0 - np.asarray(t, dtype=np.float64)


class Cosine(Schedule):
    """alpha(t) = cos(pi t / 2)."""

    name = "cosine"

    def alpha(self, t):
        a = np.cos(0.5 * np.pi * np.asarray(t, dtype=np.float64))
        return np.where(np.asarray(t) >= 1.0, 0.0, a)  # cos(pi/2) is 6e-17 in floating point


def _unit_param(name: str, param: str, value, low_open: bool) -> float:
    try:
        e = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"schedule {name}: {param} must be a number, got {value!r}") from None
    ok = (0 < e <= 1) if low_open else (0 <= e < 1)
    if not (math.isfinite(e) and ok):
        raise ValueError(f"schedule {name}: {param} must be in {'(0, 1]' if low_open else '[0, 1)'}, got {value!r}")
    return e


class LogLinear(Schedule):
    """MDLM's log-linear schedule as its sampler runs it (module docstring): alpha = 1 - t, grid ending at eps."""

    name = "loglinear"

    def __init__(self, eps: float = 1e-5):
        self.eps = _unit_param("loglinear", "eps", eps, low_open=False)

    def alpha(self, t):
        return 1.0 - np.asarray(t, dtype=np.float64)

    def times(self, N: int) -> np.ndarray:
        t = self.eps + (1.0 - self.eps) * np.arange(N + 1) / N
        t[0] = 0.0
        return t

    @property
    def spec(self) -> str:
        return f"loglinear:{self.eps!r}"

    def __repr__(self) -> str:
        return f"LogLinear(eps={self.eps!r})"


class WarmStart(Schedule):
    """Theorem 4.2's schedule (Lemma B.12): pi_1 = first, the other N - 1 steps share 1 - first evenly."""

    name = "warmstart"

    def __init__(self, first: float = 0.05):
        self.first = _unit_param("warmstart", "first", first, low_open=True)

    def alpha(self, t):
        return 1.0 - np.asarray(t, dtype=np.float64)

    def times(self, N: int) -> np.ndarray:
        if N == 1:
            return np.array([0.0, 1.0])
        t = (1.0 - self.first) * np.arange(N + 1) / (N - 1)
        t[-1] = 1.0
        return t

    def _pi(self, N: int) -> np.ndarray:
        if N == 1:
            return np.ones(1)
        pi = np.concatenate([[self.first], np.full(N - 1, (1.0 - self.first) / (N - 1))])
        return pi / pi.sum()

    @property
    def spec(self) -> str:
        return f"warmstart:{self.first!r}"

    def __repr__(self) -> str:
        return f"WarmStart(first={self.first!r})"


class GridSchedule(Schedule):
    """A user time grid (1 = t_N > ... > t_0 = 0, either order) for a base schedule (default linear)."""

    name = "grid"

    def __init__(self, times, base: Schedule | None = None):
        try:
            t = np.asarray(times, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"a time grid must be a vector of numbers, got {times!r}") from None
        if t.ndim != 1 or len(t) < 2:
            raise ValueError(f"a time grid needs at least two points t_0 = 0 and t_N = 1, got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            k = int(np.flatnonzero(~np.isfinite(t))[0])
            raise ValueError(f"time grid entry {k} = {t[k]!r} is not a finite number")
        if t[0] > t[-1]:
            t = t[::-1].copy()  # given as 1 = t_N > ... > t_0 = 0
        if abs(t[0]) > _TOL or abs(t[-1] - 1) > _TOL:
            raise ValueError(f"a time grid must run from t_0 = 0 to t_N = 1, got {t[0]:.6g} .. {t[-1]:.6g}")
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"time grid is not strictly monotone at t_{k} = {t[k]:.6g}, t_{k + 1} = {t[k + 1]:.6g}")
        t[0], t[-1] = 0.0, 1.0
        self._t = t
        self.base = base if base is not None else Linear()
        self.name = f"grid({self.base.name})"

    @property
    def steps(self) -> int:
        return len(self._t) - 1

    def alpha(self, t):
        return self.base.alpha(t)

    def times(self, N: int) -> np.ndarray:
        if N != self.steps:
            raise ValueError(f"the time grid has {self.steps} steps, not N = {N}")
        return self._t

    def __repr__(self) -> str:
        return f"GridSchedule({self.steps} steps, base={self.base!r})"


def _validated_vector(pi) -> np.ndarray:
    """An explicit reveal-probability vector: finite, >= 0, summing to 1 (errors name the entry, 1-based step)."""
    try:
        pi = np.asarray(pi, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"reveal probabilities pi must be a vector of numbers, got {pi!r}") from None
    if pi.ndim != 1 or pi.size == 0:
        raise ValueError(f"reveal probabilities pi must be a non-empty vector, got shape {pi.shape}")
    bad = np.flatnonzero(~np.isfinite(pi) | (pi < 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"reveal probability pi[{k + 1}] = {float(pi[k])!r} is not a probability (step {k + 1})")
    s = float(pi.sum())
    if abs(s - 1) > _PI_ATOL:
        raise ValueError(f"reveal probabilities sum to {s:.10g}, not 1")
    return pi / s


class ExplicitSchedule(Schedule):
    """An explicit reveal-probability vector pi as a schedule (alpha piecewise linear on the uniform grid)."""

    name = "explicit"

    def __init__(self, pi):
        self.pi = _seal(_validated_vector(pi))

    @property
    def steps(self) -> int:
        return len(self.pi)

    def alpha(self, t):
        N = self.steps
        grid = np.linspace(0.0, 1.0, N + 1)
        a = np.concatenate([[0.0], np.cumsum(self.pi)])[::-1]  # alpha(t_k) = sum_{j <= N-k} pi_j
        a[0], a[-1] = 1.0, 0.0
        return np.interp(np.asarray(t, dtype=np.float64), grid, a)

    def reveal_probabilities(self, N: int | None = None) -> np.ndarray:
        if N is not None and _steps(N) != self.steps:
            raise ValueError(f"pi has {self.steps} entries but N = {N} steps")
        return self.pi

    @property
    def spec(self) -> str:
        return ",".join(repr(float(v)) for v in self.pi)

    def __repr__(self) -> str:
        return f"ExplicitSchedule({self.steps} steps)"


SCHEDULES = {"linear": Linear, "cosine": Cosine, "loglinear": LogLinear, "warmstart": WarmStart}
_PARAM = {"loglinear": "eps", "warmstart": "first"}


def get_schedule(name: str, **params) -> Schedule:
    """A schedule by name: ``linear``, ``cosine``, ``loglinear`` (eps), ``warmstart`` (first)."""
    if not isinstance(name, str) or name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; valid schedules: {', '.join(SCHEDULES)}")
    allowed = {_PARAM[name]} if name in _PARAM else set()
    extra = sorted(set(params) - allowed)
    if extra:
        takes = "takes no parameters" if not allowed else f"takes only {_PARAM[name]}"
        raise ValueError(f"schedule {name!r} {takes}, got {extra}")
    return SCHEDULES[name](**params)


def parse_schedule(spec: str | Schedule) -> Schedule:
    """A schedule from its SPEC: ``NAME``, ``NAME:PARAM`` (loglinear:EPS, warmstart:FIRST), or ``p1,p2,...``.

    A :class:`Schedule` is returned as it is.
    """
    if isinstance(spec, Schedule):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"schedule {spec!r}: expected a name ({', '.join(SCHEDULES)}), NAME:PARAM or p1,p2,...")
    text = spec.strip()
    name, sep, param = text.partition(":")
    if name in SCHEDULES:
        if not sep:
            return get_schedule(name)
        if name not in _PARAM:
            raise ValueError(f"schedule {text!r}: {name} takes no parameter")
        return get_schedule(name, **{_PARAM[name]: param})
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"schedule {text!r} is neither a schedule name ({', '.join(SCHEDULES)}), NAME:PARAM, "
                         "nor a comma-separated list of reveal probabilities") from None
    return ExplicitSchedule(values)


def reveal_probabilities(schedule: str | Schedule | ArrayLike, N: int | None = None) -> np.ndarray:
    """The one boundary from a schedule to pi (N,): validated, read-only.

    ``schedule``: a :class:`Schedule`, a SPEC string (:func:`parse_schedule`; names need N), or an
    explicit vector (N, when given, must equal its length).
    """
    if isinstance(schedule, (Schedule, str)):
        sched = parse_schedule(schedule)
        if N is None:
            if isinstance(sched, ExplicitSchedule):
                return sched.pi
            raise ValueError(f"schedule {sched.spec!r} needs the number of steps N")
        return sched.reveal_probabilities(N)
    if isinstance(schedule, np.ndarray) and _VALIDATED.get(id(schedule)) is schedule:
        pi = schedule
    else:
        pi = _seal(_validated_vector(schedule))
    if N is not None and _steps(N) != len(pi):
        raise ValueError(f"pi has {len(pi)} entries but N = {N} steps")
    return pi


def as_pi(pi) -> np.ndarray:
    """pi as the functions below the boundary take it: a vector this module validated is used as is.

    Anything else (a list, an array built elsewhere) is validated once by :func:`reveal_probabilities`;
    a schedule (which needs N) is refused with a message that says so.
    """
    if isinstance(pi, np.ndarray) and _VALIDATED.get(id(pi)) is pi and not pi.flags.writeable:
        return pi
    if isinstance(pi, (Schedule, str)) and not (isinstance(pi, str) and "," in pi):
        raise ValueError("pass reveal probabilities pi = reveal_probabilities(schedule, N), not a schedule")
    return reveal_probabilities(pi)


def reveal_rates(pi) -> np.ndarray:
    """r_j = pi_j / (1 - sum_{k<j} pi_k): the probability a still-masked position is revealed at step j.

    r is 1 at the last step with pi_j > 0 (everything still masked is revealed there) and
    at every later step (nothing is left); in particular r_N = 1.
    """
    pi = as_pi(pi)
    before = np.concatenate([[0.0], np.cumsum(pi)[:-1]])
    remaining = 1.0 - before
    r = np.where(remaining > 1e-15, pi / np.maximum(remaining, 1e-300), 1.0)
    last = int(np.flatnonzero(pi > 0)[-1])
    r[last:] = 1.0
    return np.clip(r, 0.0, 1.0)


def revealed_before(pi) -> np.ndarray:
    """a_j = sum_{k<j} pi_k (capped at 1): the probability that a position is revealed before step j."""
    pi = as_pi(pi)
    return np.minimum(np.concatenate([[0.0], np.cumsum(pi)[:-1]]), 1.0)


def log_p_distinct(pi, L: int) -> float:
    """log P(all L reveal steps distinct) = log(L! e_L(pi)); -inf when fewer than L steps have pi_j > 0.

    e_L is the coefficient of x^L in prod_j (1 + pi_j x).  Steps with equal pi_j are grouped,
    (1 + p x)^m = sum_k C(m, k) p^k x^k, and the groups are multiplied in log space; with
    many distinct values a log-space recursion e_k <- e_k + pi_j e_{k-1} over steps is used
    (O(N L), no underflow for any N, L).
    """
    pi = as_pi(pi)
    L = positive_int("L", L)
    if np.count_nonzero(pi) < L:
        return -math.inf
    values, counts = np.unique(pi[pi > 0], return_counts=True)
    if len(values) <= 16:
        return log_p_distinct_groups(values, counts, L)
    return float(math.lgamma(L + 1) + _log_elementary_symmetric(np.log(pi[pi > 0]), L))


def log_p_distinct_groups(values, counts, L: int) -> float:
    """``log_p_distinct`` of a schedule given as distinct positive reveal probabilities ``values`` with
    multiplicities ``counts`` (the grouped form: the same arithmetic, without the vector pi)."""
    L = positive_int("L", L)
    if sum(int(m) for m in counts) < L:
        return -math.inf
    log_e = np.full(L + 1, -np.inf)
    log_e[0] = 0.0
    for p, m in zip(values, counts):
        k = np.arange(min(int(m), L) + 1)
        group = _log_binom(int(m), k) + k * math.log(p)
        log_e = log_convolve(log_e, group, L)
    return float(math.lgamma(L + 1) + log_e[L])


def _log_binom(m: int, k: np.ndarray) -> np.ndarray:
    return np.array([math.lgamma(m + 1) - math.lgamma(int(i) + 1) - math.lgamma(m - int(i) + 1) for i in k])


def log_convolve(a: np.ndarray, b: np.ndarray, degree: int) -> np.ndarray:
    """log of the coefficients of (sum_k e^a_k x^k)(sum_k e^b_k x^k), truncated at ``degree``."""
    out = np.full(degree + 1, -np.inf)
    for k, bk in enumerate(b[: degree + 1]):
        if bk == -np.inf:
            continue
        seg = a[: degree + 1 - k] + bk
        out[k:] = np.logaddexp(out[k:], seg)
    return out


@nb.njit(cache=True)
def _log_elementary_symmetric(log_p, L):
    """log e_L(p_1..p_M) by e_k <- e_k + p_j e_{k-1}, in log space (no underflow for any L)."""
    log_e = np.full(L + 1, -np.inf)
    log_e[0] = 0.0
    for j in range(log_p.shape[0]):
        lp = log_p[j]
        for k in range(min(j + 1, L), 0, -1):
            a = log_e[k]
            b = lp + log_e[k - 1]
            if b > a:
                a, b = b, a
            if b != -np.inf:
                a = a + math.log1p(math.exp(b - a))
            log_e[k] = a
    return log_e[L]


def p_distinct(pi: RevealProbabilities, L: int) -> float:
    """P_distinct = L! e_L(pi_1..pi_N): the probability that every step reveals at most one token."""
    return float(math.exp(log_p_distinct(pi, L)))


def expected_nfe(pi: RevealProbabilities, L: int) -> float:
    """E[NFE] under ddpm_cache: sum_j 1 - (1 - pi_j)^L (the steps that reveal something)."""
    pi = as_pi(pi)
    L = positive_int("L", L)
    with np.errstate(divide="ignore"):
        return float(-np.expm1(L * np.log1p(-pi)).sum())
