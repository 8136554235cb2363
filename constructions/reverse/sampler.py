"""The factorised masked diffusion sampler for any L (Section 3.2, Eq. 3), with ddpm_cache NFE counting.

Every position's reveal step tau_i is drawn i.i.d. from pi; at step j the positions with
tau_i = j (the set S_j) are drawn independently from denoiser(x_{U_j}), U_j the positions
revealed before step j.  A step that reveals nothing in a sequence changes nothing, so
under ddpm_cache the denoiser is evaluated for a sequence only at the steps where it
reveals something: NFE = #{j : S_j != {}} per sequence (E[NFE] = sum_j 1 - (1 - pi_j)^L).
The output law is exactly p_N of :mod:`.exact`.

Randomness: sequences are processed in blocks of ``BLOCK`` rows; for each block the
reveal steps (inverse CDF of pi) and then one uniform per position are drawn from the
generator, and a token is the inverse-CDF draw of its uniform.  The result depends only
on the seed, not on the batch size or the method: every method draws the same samples for
the same seed wherever the denoiser laws agree to rounding (tested).

Methods:

* ``generic`` calls any denoiser (the protocol: ``denoiser(X (B, L)) -> (B, L, V)``) on
  every sequence that reveals something at a step, in batches, and refuses a law that is not
  a probability vector (NaN, a negative entry, a sum off 1), naming sequence, position and step.
* ``kernel`` -- the message kernel (the oracle of an HMM or n-gram language, and the oracle
  transforms :class:`.denoisers.TemperedOracle` / ``UniformMixture``): a numba kernel that
  needs q(x_i | x_U) only at the positions of S_j.  Forward messages are carried only
  through the revealed positions, across each masked run with a precomputed power A^g of
  the transition matrix, and the backward messages likewise, so a step costs
  O((|U_j| + |S_j|) S^2) instead of a full forward-backward pass O(L S^2).  Messages are
  renormalised at every revealed position (no underflow at any L); a context with
  q(x_U) = 0 is detected exactly (sums of non-negative products) and, like
  ``posterior_marginals(..., off_support="uniform")``, continued with the uniform law.
* ``segments`` -- the same messages, computed only where a reveal can change them.  A
  *separator* makes the two sides of the sequence conditionally independent given x_U:
  for an n-gram, a run of n - 1 revealed tokens fixes the hidden window state (the paper's
  separator, Definition B.4); for any HMM, a position after which the chain forgets (every
  state of the prior support has the same row of A; the interval HMM forgets at the end of
  every interval).  The law of a target needs only the evidence between its nearest
  separators, so a step costs the segments in which something is revealed, not all of U_j.
  Because q(x_U) is the product of the segments' probabilities, the exact "q(x_U) = 0" test
  is kept by re-checking, after each step, the segments that received two or more reveals
  (one token drawn from q(. | x_U), or a tempered q, cannot leave the support).  On the
  ``3gram`` preset at L = N = 2048 it is more than 10x faster than ``kernel``
  (benchmarks/bench_reverse.py); without separators it has nothing to skip.
* ``auto`` (the default): ``segments`` where the language has separators, else ``kernel``,
  for the oracle and its transforms; ``generic`` for any other denoiser.

The numba kernels of ``kernel`` and ``segments`` are in :mod:`.sampler_kernels`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .confidence import mean_interval
from ..languages.ngram import NGram, as_hmm
from mdmt.runtime.parallel import run_ranges
from mdmt.runtime.resources import check_memory
from mdmt.runtime.validation import MASK, as_rng, positive_int
from .denoisers import oracle_denoiser
from .sampler_kernels import (  # noqa: F401 -- the message kernels; all of them re-exported (they were defined here)
    _DEAD as _DEAD,
    _apply as _apply,
    _apply_to as _apply_to,
    _backward as _backward,
    _draw as _draw,
    _forward as _forward,
    _kernel as _kernel,
    _left_separator as _left_separator,
    _normalise as _normalise,
    _pin_after_reveal as _pin_after_reveal,
    _right_separator as _right_separator,
    _segment_alive as _segment_alive,
    _segment_kernel as _segment_kernel,
    _start as _start,
    _target_law as _target_law,
)
from .schedules import as_pi
from mdmt.constructions.types import Denoiser, Language, RevealProbabilities, Seed

BLOCK = 4096  # rows per block of random draws (fixes the stream of random numbers)
KERNEL_MAX_STATES = 1024  # message kernel up to this many hidden states
_POWER_BUDGET = 128 << 20  # bytes for the tables of matrix powers A^g and their transposes


def draw_reveal_steps(pi: np.ndarray, num: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """tau (num, L) i.i.d. from pi, steps numbered 1..N (inverse CDF of one uniform each)."""
    pi = as_pi(pi)
    cdf = np.cumsum(pi)
    cdf[np.flatnonzero(pi > 0)[-1]:] = 1.0
    return np.searchsorted(cdf, rng.random((num, L)), side="right") + 1


def draw_tokens(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw from rows P (m, V) with uniforms u (m,): the first v with cdf[v] > u * total.

    A token of probability 0 is never drawn.
    """
    cdf = np.cumsum(P, axis=1)
    return np.minimum((cdf <= u[:, None] * cdf[:, -1:]).sum(axis=1), P.shape[1] - 1)


@dataclass
class SampleResult:
    """Samples of an N-step sampler (MDM, or AR with N = L) and what they cost.

    Returned by :func:`sample_mdm` here and by :func:`mdmt.empirical.sampling.ddpm_cache` and
    ``ar_sample`` for networks.
    """

    samples: np.ndarray  # int64 (num, L)
    nfe: np.ndarray  # int64 (num,): denoiser evaluations per sequence, #{j : S_j != {}} under ddpm_cache
    reveal_step: np.ndarray | None = None  # int64 (num, L): tau_i in 1..N (MDM samplers)
    seconds: float = 0.0  # wall-clock time of the sampling loop
    method: str = "generic"  # how the denoiser was evaluated: kernel, generic, torch, ar


# ----------------------------------------------------------------------------- HMM message kernel
@dataclass
class _KernelModel:
    prior_pred: np.ndarray  # (L, S): pi A^p, the law of h_p before any evidence
    P: np.ndarray  # (G+1, S, S): A^g
    PT: np.ndarray  # (G+1, S, S): (A^g)^T, contiguous
    B: np.ndarray  # (S, V)
    emit_idx: np.ndarray  # (V, S): the states with B[h, v] > 0, first emit_cnt[v] entries
    emit_cnt: np.ndarray  # (V,); all S when emissions are dense (then no restriction is used)
    transform: int  # 0 oracle, 1 temper, 2 uniform mixture
    param: float
    pin_run: int  # n - 1 for an n-gram (a run of n - 1 revealed tokens fixes the window state), else 0
    cut_state: np.ndarray  # (L,) int64: a state of h_c's prior support when the chain forgets at c -> c+1, else -1

    @property
    def has_separators(self) -> bool:
        return self.pin_run > 0 or bool((self.cut_state >= 0).any())


def _transform_of(language, denoiser):
    """(code, param) when ``denoiser`` is the oracle of ``language`` or a pointwise transform of it, else None."""
    if denoiser is None or denoiser is language:
        return (0, 0.0)
    spec = getattr(denoiser, "oracle_transform", None)
    if spec is None or getattr(denoiser, "language", None) is not language:
        return None
    kind, param = spec
    return {"oracle": (0, 0.0), "temper": (1, float(param)), "mix": (2, float(param))}.get(kind)


def _kernel_model(language, L: int, transform) -> _KernelModel | None:
    try:
        hmm = as_hmm(language)
    except (AttributeError, TypeError, ValueError):
        return None
    A, B, pi0 = hmm.transmat_, hmm.emissionprob_, hmm.startprob_
    S = A.shape[0]
    if S > KERNEL_MAX_STATES:
        return None
    G = int(max(1, min(L, _POWER_BUDGET // (2 * 8 * S * S))))
    P = np.empty((G + 1, S, S))
    P[0] = np.eye(S)
    for g in range(1, G + 1):
        P[g] = P[g - 1] @ A
    pred = np.empty((L, S))
    pred[0] = pi0
    for p in range(1, L):
        pred[p] = pred[p - 1] @ A
    V = B.shape[1]
    emit = B > 0
    emit_cnt = emit.sum(axis=0).astype(np.int64)
    emit_idx = np.zeros((V, S), dtype=np.int64)
    for v in range(V):
        emit_idx[v, :emit_cnt[v]] = np.flatnonzero(emit[:, v])
    if emit_cnt.mean() > S / 4:  # dense emissions: the contiguous full-output products are faster
        emit_cnt[:] = S
        emit_idx[:] = np.arange(S)[None, :]
    return _KernelModel(pred, P, np.ascontiguousarray(P.transpose(0, 2, 1)), np.ascontiguousarray(B),
                        emit_idx, emit_cnt, transform[0], transform[1],
                        language.n - 1 if isinstance(language, NGram) else 0, _cut_states(A, pred))


def _cut_states(A: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """cut[c] = a state of the prior support of h_c if every state there has the same row of A, else -1.

    Then h_{c+1} has the same law whatever h_c is, so everything up to c is independent of
    everything after it (the interval HMM forgets at every interval end): a separator that needs
    no revealed token.
    """
    _, row_id = np.unique(A, axis=0, return_inverse=True)
    row_id = row_id.reshape(-1)
    cut = np.full(pred.shape[0], -1, dtype=np.int64)
    for c in range(pred.shape[0] - 1):
        support = np.flatnonzero(pred[c] > 0)
        if support.size and np.all(row_id[support] == row_id[support[0]]):
            cut[c] = support[0]
    return cut


def _groups(tau: np.ndarray):
    """order (n, L): positions sorted by (tau, position); starts (n, N+1): first index of each group, -1 padded."""
    n, L = tau.shape
    key = tau.astype(np.int64) * L + np.arange(L)[None, :]
    order = np.argsort(key, axis=1, kind="stable")
    st = np.take_along_axis(tau, order, axis=1)
    is_start = np.ones((n, L), dtype=bool)
    is_start[:, 1:] = st[:, 1:] != st[:, :-1]
    counts = is_start.sum(axis=1)
    width = int(counts.max()) + 1 if n else 1
    starts = np.full((n, width), -1, dtype=np.int64)
    rows, cols = np.nonzero(is_start)
    rank = np.cumsum(is_start, axis=1)[rows, cols] - 1
    starts[rows, rank] = cols
    return order.astype(np.int64), starts


def _run_kernel(model: _KernelModel, tau, U, X, score_mode: bool, kind: str = "segments"):
    order, starts = _groups(tau)
    n = tau.shape[0]
    bounds = np.where(starts >= 0, starts, tau.shape[1])
    maxgroup = int(np.diff(np.concatenate([bounds, np.full((n, 1), tau.shape[1])], axis=1), axis=1).max()) if n else 1
    nfe = np.zeros(n, dtype=np.int64)
    logp = np.zeros(n)
    if kind == "segments":
        run_ranges(_segment_kernel, n, model.prior_pred, model.P, model.PT, model.B, model.emit_idx, model.emit_cnt,
                   model.transform, model.param, model.pin_run, model.cut_state, order, starts, max(maxgroup, 1), U, X,
                   score_mode, nfe, logp)
    else:
        run_ranges(_kernel, n, model.prior_pred, model.P, model.PT, model.B, model.emit_idx, model.emit_cnt,
                   model.transform, model.param, order, starts, max(maxgroup, 1), U, X, score_mode, nfe, logp)
    return nfe, logp


PROB_TOL = 1e-3  # a denoiser's probability vector must sum to 1 within this


def invalid_law(p: np.ndarray) -> str | None:
    """Why ``p`` (V,) is not a probability vector (NaN/inf, a negative entry, a sum off 1 by more than PROB_TOL), or None."""
    if not np.all(np.isfinite(p)):
        return "it contains NaN or infinity"
    if np.any(p < 0):
        return f"it has a negative probability {float(p.min()):.3g}"
    if abs(float(p.sum()) - 1.0) > PROB_TOL:
        return f"its probabilities sum to {float(p.sum()):.6g}, not 1"
    return None


def check_denoiser_rows(P: np.ndarray, seqs, positions, step: int) -> None:
    """ValueError naming the first (sequence, position) whose row of P (m, V) is not a probability vector."""
    bad = ~np.isfinite(P).all(axis=1) | (P < 0).any(axis=1) | (np.abs(P.sum(axis=1) - 1.0) > PROB_TOL)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"the denoiser returned an invalid law at sequence {int(seqs[k])}, position {int(positions[k])} "
                         f"(step {step}): {invalid_law(P[k])}")


def _generic(den, tau, U, batch, X=None, V=None):
    """The sampler (X None) or the score of fixed X along tau (returns sum log p) with any denoiser."""
    n, L = tau.shape
    score = X is not None
    out = np.full((n, L), MASK, dtype=np.int64) if not score else None
    nfe = np.zeros(n, dtype=np.int64)
    logp = np.zeros(n)
    for j in np.unique(tau):
        new = tau == j
        rows = np.flatnonzero(new.any(axis=1))
        nfe[rows] += 1
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            ctx = np.where(tau[r] < j, X[r], MASK) if score else out[r]
            P = np.asarray(den(ctx), dtype=np.float64)
            if P.ndim != 3 or P.shape[:2] != (len(r), L) or (V is not None and P.shape[2] != V):
                raise ValueError(f"denoiser returned shape {P.shape}, expected ({len(r)}, {L}, {V or 'V'})")
            rr, cc = np.nonzero(new[r])
            check_denoiser_rows(P[rr, cc], r[rr], cc, int(j))
            if score:
                with np.errstate(divide="ignore"):
                    np.add.at(logp, r[rr], np.log(P[rr, cc, X[r[rr], cc]]))
            else:
                out[r[rr], cc] = draw_tokens(P[rr, cc], U[r[rr], cc])
    return (out if not score else X), nfe, logp


METHODS = ("auto", "segments", "kernel", "generic")


def _method(language, L, denoiser, method) -> tuple[str, _KernelModel | None]:
    """(kind, kernel model) of a run: ``segments`` or ``kernel`` (message kernels, the oracle and its transforms), else ``generic``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "generic":
        return "generic", None
    tr = _transform_of(language, denoiser)
    model = _kernel_model(language, L, tr) if tr is not None else None
    if model is None:
        if method != "auto":
            raise ValueError("the message kernels need the oracle (or an oracle transform) of an HMM/n-gram "
                             f"with at most {KERNEL_MAX_STATES} hidden states")
        return "generic", None
    if method == "auto":
        return ("segments" if model.has_separators else "kernel"), model
    return method, model


def check_sample_memory(num: int, L: int, alternative: str = "draw fewer or shorter samples") -> None:
    """Refuse (ResourceError) ``num`` samples of length L that :func:`sample_mdm` could not hold in memory:
    the samples and their reveal steps (int64), and one block of random draws and states."""
    check_memory(f"{num} samples of length {L} with their reveal steps",
                 8 * (2 * num * L + num) + 32 * min(num, BLOCK) * L, alternative)


def sample_mdm(language: Language, L: int, pi: RevealProbabilities, num: int, denoiser: Denoiser | None = None, seed: Seed = None, batch: int = 512,
               method: str = "auto") -> SampleResult:
    """Run the N-step sampler with the oracle (``denoiser=None``) or any denoiser; seeded, batched.

    ``pi`` is the reveal-probability vector (``reveal_probabilities(schedule, N)``).  The
    oracle is continued by the uniform law once a sample has left the support (the
    convention of :func:`.tables.denoiser_table`).  ``method`` (module docstring): ``auto``
    (``segments`` where the language has separators, else ``kernel``, for the oracle and its
    transforms; ``generic`` otherwise), ``segments``, ``kernel`` or ``generic``.  All draw the
    same samples for the same seed (up to rounding of the oracle marginals).
    """
    L = positive_int("L", L)
    num = positive_int("num", num, minimum=0)
    batch = positive_int("batch", batch)
    pi = as_pi(pi)
    rng = as_rng(seed)
    t0 = time.perf_counter()
    check_sample_memory(num, L)
    kind, model = _method(language, L, denoiser, method)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    samples = np.empty((num, L), dtype=np.int64)
    nfe = np.empty(num, dtype=np.int64)
    steps = np.empty((num, L), dtype=np.int64)
    for s in range(0, num, BLOCK):
        m = min(BLOCK, num - s)
        tau = draw_reveal_steps(pi, m, L, rng)
        steps[s:s + m] = tau
        U = rng.random((m, L))
        if model is not None:
            X = np.full((m, L), MASK, dtype=np.int64)
            nfe[s:s + m], _ = _run_kernel(model, tau, U, X, False, kind)
            samples[s:s + m] = X
        else:
            samples[s:s + m], nfe[s:s + m], _ = _generic(den, tau, U, batch, V=language.n_symbols)
    return SampleResult(samples, nfe, steps, time.perf_counter() - t0, kind)


def assignment_log_ratio(language, X, pi, denoiser=None, seed=None, batch: int = 512, method: str = "auto"):
    """For sequences X (n, L) and tau ~ pi: log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j}).

    With X ~ q this is an unbiased sample of E_tau KL(q || p_tau) (C1's right-hand side);
    returns float64 (n,).
    """
    X = language.check_tokens(X, allow_mask=False)
    n, L = X.shape
    pi = as_pi(pi)
    rng = as_rng(seed)
    kind, model = _method(language, L, denoiser, method)
    den = denoiser if denoiser is not None else oracle_denoiser(language)
    logp = np.empty(n)
    for s in range(0, n, BLOCK):
        m = min(BLOCK, n - s)
        tau = draw_reveal_steps(pi, m, L, rng)
        if model is not None:
            _, logp[s:s + m] = _run_kernel(model, tau, np.zeros((m, L)), np.ascontiguousarray(X[s:s + m]), True, kind)
        else:
            _, _, logp[s:s + m] = _generic(den, tau, None, batch, X=X[s:s + m], V=language.n_symbols)
    return language.log_likelihood(X) - logp


def assignment_kl_estimate(language: Language, L: int, pi: RevealProbabilities, num: int, denoiser: Denoiser | None = None, seed: Seed = None, level: float = 0.95,
                           batch: int = 512, method: str = "auto") -> dict:
    """Monte Carlo estimate of E_tau[KL(q || p_tau)] / L with a CI: an upper bound on the TER gap (C1, Lemma B.2).

    Draws x ~ q and tau ~ pi (one generator, ``seed``) and averages
    (log q(x) - sum_j sum_{i in S_j} log p(x_i | x_{U_j})) / L.  Keys: ``kl_per_token_nats``,
    ``ci``, ``kl_per_token_bits`` (the bound on log2 TER(p_N) - log2 TER(q)), ``ci_bits``, ``num``.
    """
    L = positive_int("L", L)
    num = positive_int("num", num)
    rng = as_rng(seed)
    x = language.sample_sequences(num, L, rng)
    vals = assignment_log_ratio(language, x, pi, denoiser, seed=rng, batch=batch, method=method) / L
    m, a, b = mean_interval(vals, level)
    ln2 = math.log(2)
    return {"kl_per_token_nats": m, "ci": [a, b], "kl_per_token_bits": m / ln2, "ci_bits": [a / ln2, b / ln2],
            "num": num}
