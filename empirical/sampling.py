"""Sampling from networks: the ddpm_cache sampler of Eq. 3 (Section 3.2) in torch, and AR decoding with a KV cache.

ddpm_cache.  N reverse steps j = 1..N with reveal probabilities pi (N,), as returned by
:func:`mdmt.constructions.reverse.schedules.reveal_probabilities` (the boundary where a schedule
becomes pi).  Each position's reveal step tau_i is i.i.d. ~ pi; equivalently, at step j every
still-masked position is revealed with probability r_j = pi_j / (1 - sum_{k<j} pi_k) (r_N = 1),
independently.  The positions revealed at step j (the set S_j) draw their tokens independently
from the denoiser's p(. | x_U) at the current state x_U; revealed tokens are carried over and
never change; no mask is ever emitted.  The law of the output is p_N of Eq. 3, the law of
:func:`mdmt.constructions.reverse.sampler.sample_mdm` (unless the optional greedy final fill,
off by default, takes the argmax at the last step); both return the same
:class:`~mdmt.constructions.reverse.sampler.SampleResult`.

Caching.  The denoiser is time-agnostic, so its output depends on the state alone; the state of a
sequence changes only at the steps where it reveals something, so the denoiser is evaluated for
that sequence exactly at those steps: NFE = #{j : S_j != {}} per sequence, with
E[NFE] = sum_j 1 - (1 - pi_j)^L (:func:`mdmt.constructions.reverse.schedules.expected_nfe`).

Reveal rounds.  Which positions are revealed at which step does not depend on the tokens drawn
(the reveal steps tau_i are i.i.d. ~ pi), so the sampler first draws the whole reveal pattern
of a batch, then makes one network call per *reveal round*: round k evaluates, in one batch,
every sequence that has a k-th distinct reveal step, on its state just before that step, and
draws the tokens of that step.  A batch costs max NFE <= min(N, L) calls instead of up to N
calls on the few sequences that reveal something at each step (at N = 4096, L = 64: 64 calls
instead of about 4096).  The random stream is consumed exactly as by the literal loop over steps
(``by_step=True``, kept for checking), so the two give the same samples for the same seed
wherever the network's outputs do not depend on which other rows share its batch (they agree
to rounding).

Denoisers.  A trained MDM (a :class:`~mdmt.empirical.model.Transformer` or :class:`MDMDenoiser`),
or anything of the NumPy denoiser protocol (int64 (B, L) with MASK -> probabilities (B, L, V)):
a language object or its ``posterior_marginals`` stands for its oracle denoiser
(:func:`mdmt.constructions.reverse.denoisers.oracle_denoiser`: continued uniformly once a sample
has left the support, since the independent draws of one step can leave it -- that is the SER
of Theorem 4.3).  For the oracle at scale :func:`~mdmt.constructions.reverse.sampler.sample_mdm`
is much faster (its message kernel).

AR.  :func:`ar_sample` draws x_i ~ p_theta(. | x_<i) for i = 1..L, one network call per token,
with a KV cache (``use_cache=False`` re-runs the prefix, for checking).
"""

from __future__ import annotations

import time

import numpy as np

from mdmt.runtime.resources import check_memory
from mdmt.constructions.reverse.denoisers import oracle_denoiser
from mdmt.constructions.reverse.sampler import PROB_TOL, SampleResult, check_denoiser_rows
from mdmt.constructions.reverse.schedules import as_pi, reveal_rates
from mdmt.runtime.validation import MASK, positive_int
from mdmt.constructions.types import RevealProbabilities

from ._torch import F, torch
from .model import Transformer, ar_input, ar_loss, autocast, subs_log_probs


def check_finite_weights(model: torch.nn.Module) -> None:
    """Refuse (ValueError) a network with a NaN or infinite parameter or buffer, naming the first one."""
    for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, t in named:
            if t.is_floating_point() or t.is_complex():
                bad = ~torch.isfinite(t.detach())
                if bool(bad.any()):
                    count, what = int(bad.sum()), "NaN" if bool(torch.isnan(t.detach()).any()) else "inf"
                    raise ValueError(f"the model's {kind} {name!r} holds {count} non-finite value(s) ({what} among "
                                     f"{t.numel()}); its probabilities would be NaN: retrain it or load another "
                                     "checkpoint")


class MDMDenoiser:
    """A trained MDM as a denoiser: ``X`` int (B, L) with MASK -> probabilities (B, L, V) (SUBS).

    NumPy input gives float64 NumPy output (the denoiser protocol); :meth:`torch_probs` works on
    tensors on the model's device.  Evaluation is batched (bf16 autocast on CUDA).  Sequences
    shorter than the model's ``seq_len`` are padded with masked positions: the law of the first
    L tokens of a language (n-gram, HMM) is its law at length L, and a masked tail is exactly
    "the tokens after position L are unknown".
    """

    def __init__(self, model: Transformer, batch: int = 256):
        if model.cfg.causal:
            raise ValueError("MDMDenoiser needs a bidirectional MDM, got a causal (AR) model")
        check_finite_weights(model)
        self.model = model.eval()
        self.batch = positive_int("batch", batch)
        self.vocab_size = model.cfg.vocab_size

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def torch_probs(self, X: torch.Tensor) -> torch.Tensor:
        X = X.to(self.device)
        L, full = X.shape[1], self.model.cfg.seq_len
        if L > full:
            raise ValueError(f"sequence length L = {L} exceeds the model's seq_len = {full}")
        if L < full:
            X = torch.cat([X, torch.full((X.shape[0], full - L), MASK, dtype=X.dtype, device=X.device)], dim=1)
        out = []
        with autocast(self.device):
            for s in range(0, X.shape[0], self.batch):
                out.append(subs_log_probs(self.model, X[s:s + self.batch]).float().exp()[:, :L])  # (b, L, V)
        P = torch.cat(out)
        if not bool(torch.isfinite(P).all()):
            check_finite_weights(self.model)  # weights changed since construction: name the parameter
            raise ValueError("the MDM's probabilities are not finite (NaN or inf) although its weights are")
        return P

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.int64)
        if X.ndim == 1:
            X = X[None]
        bad = (X < MASK) | (X >= self.vocab_size)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"token {X[i, j]} at sequence {i}, position {j} is not in 0..{self.vocab_size - 1} or MASK")
        return self.torch_probs(torch.as_tensor(X)).double().cpu().numpy()


class _NumpyDenoiser:
    """A denoiser-protocol callable (NumPy in, NumPy out) used on tensors."""

    def __init__(self, fn):
        self.fn = fn

    def torch_probs(self, X: torch.Tensor) -> torch.Tensor:
        P = np.asarray(self.fn(X.cpu().numpy()), dtype=np.float64)
        return torch.as_tensor(P, device=X.device)


def as_torch_denoiser(den):
    """Normalize a Transformer / MDMDenoiser / language / bound ``posterior_marginals`` / callable."""
    if isinstance(den, Transformer):
        return MDMDenoiser(den)
    if hasattr(den, "torch_probs"):
        return den
    if hasattr(den, "posterior_marginals"):
        return _NumpyDenoiser(oracle_denoiser(den))
    owner = getattr(den, "__self__", None)
    if getattr(den, "__name__", "") == "posterior_marginals" and owner is not None:
        return _NumpyDenoiser(oracle_denoiser(owner))  # the oracle must not raise once a sample left the support
    if callable(den):
        return _NumpyDenoiser(den)
    raise ValueError(f"not a denoiser: {type(den).__name__}")


def _draw(P: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw from rows P (..., V) with uniforms u (...): the first v with cdf[v] > u * total.

    The rule of :func:`mdmt.constructions.reverse.sampler.draw_tokens`: a token of probability 0
    is never drawn, and the index never leaves 0..V-1.
    """
    cdf = P.double().cumsum(-1)  # (..., V)
    k = (cdf <= u.double().unsqueeze(-1) * cdf[..., -1:]).sum(-1)
    return k.clamp_(max=P.shape[-1] - 1)


def _check_rows(P: torch.Tensor, reveal: torch.Tensor, rows: torch.Tensor, steps: torch.Tensor) -> None:
    """The laws drawn must be probability vectors (:func:`~mdmt.constructions.reverse.sampler.check_denoiser_rows`).

    ``P`` (r, L, V) on the sequences ``rows`` (r,) at their reveal steps ``steps`` (r,); ``reveal``
    (r, L) marks the positions drawn.
    """
    Q = P[reveal].double()  # (m, V): the rows drawn from
    bad = ~torch.isfinite(Q).all(-1) | (Q < 0).any(-1) | ((Q.sum(-1) - 1.0).abs() > PROB_TOL)
    if bool(bad.any()):
        r, c = reveal.nonzero()[int(bad.nonzero()[0, 0])].tolist()
        check_denoiser_rows(Q[bad][:1].cpu().numpy(), [int(rows[r])], [c], int(steps[r]))


def _reveal_pattern(b: int, L: int, rates, gen: torch.Generator, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Reveal steps (b, L) in 1..N and the uniform drawn at each position's reveal step (b, L).

    Consumes the random stream as the loop over steps does: two (b, L) uniforms per step, the
    first deciding the reveals S_j among the still-masked positions, the second the tokens.
    """
    step = torch.zeros((b, L), dtype=torch.long, device=device)
    u_at = torch.empty((b, L), dtype=torch.float32, device=device)
    masked = torch.ones((b, L), dtype=torch.bool, device=device)
    for j, r in enumerate(rates):
        reveal = masked & (torch.rand(b, L, generator=gen, device=device) < r)
        u = torch.rand(b, L, generator=gen, device=device)
        step[reveal] = j + 1
        u_at[reveal] = u[reveal]
        masked &= ~reveal
    return step, u_at


def _reveal_rounds(step: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per sequence, its distinct reveal steps in order: ``(rounds (b, L), k (b, L), nfe (b,))``.

    ``rounds[i, k]`` is sequence i's k-th distinct reveal step (padded with 0 past ``nfe[i]``);
    ``k[i, l]`` is the round in which position l is revealed.
    """
    srt = step.sort(dim=1).values
    first = torch.ones_like(srt, dtype=torch.bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    nfe = first.sum(1)
    rounds = torch.where(first, srt, torch.full_like(srt, torch.iinfo(srt.dtype).max)).sort(dim=1).values
    k = torch.searchsorted(rounds, step)
    return torch.where(rounds == torch.iinfo(srt.dtype).max, 0, rounds), k, nfe


def _denoise(den, X: torch.Tensor, device, vocab_size: int | None, step: int) -> tuple[torch.Tensor, int]:
    """The denoiser's laws (r, L, V) at the states X (r, L), with its V checked against ``vocab_size``."""
    P = den.torch_probs(X).to(device)
    if vocab_size is not None and P.shape[-1] != vocab_size:
        raise ValueError(f"denoiser returned {P.shape[-1]} token probabilities at step {step}, expected V = {vocab_size}")
    return P, P.shape[-1]


@torch.no_grad()
def ddpm_cache(denoiser, num: int, L: int, pi, *, seed: int = 0, vocab_size: int | None = None, batch: int = 256,
               device="cpu", greedy_final: bool = False, by_step: bool = False) -> SampleResult:
    """``num`` sequences of length L from the N-step factorized sampler (Eq. 3) with caching.

    ``pi``: reveal probabilities (N,), ``reveal_probabilities(schedule, N)``.  Same seed, batch and
    device: same samples.  ``greedy_final``: the positions revealed at the last step take the
    denoiser's most probable token instead of a draw (MDLM's final noise-removal step); off by
    default, since it changes the law away from p_N of Eq. 3.  ``by_step``: the literal loop over
    the N steps, one call per step on the sequences that reveal something (for checking; the
    default makes one call per reveal round, module docstring).
    """
    num = positive_int("num", num)
    L = positive_int("L", L)
    batch = positive_int("batch", batch)
    pi = as_pi(pi)
    N = len(pi)
    rates = reveal_rates(pi)
    den = as_torch_denoiser(denoiser)
    device = torch.device(device)
    check_memory(f"{num} samples of length {L}", 16 * num * L, "draw fewer or shorter samples")
    gen = torch.Generator(device=device).manual_seed(int(seed))
    out = np.empty((num, L), dtype=np.int64)
    nfe = np.zeros(num, dtype=np.int64)
    tau = np.zeros((num, L), dtype=np.int64)
    run = _by_step if by_step else _by_round
    t0 = time.perf_counter()
    for s in range(0, num, batch):
        b = min(batch, num - s)
        X, step, calls, vocab_size = run(den, b, L, N, rates, gen, device, vocab_size, greedy_final, s)
        out[s:s + b] = X.cpu().numpy()
        nfe[s:s + b] = calls.cpu().numpy()
        tau[s:s + b] = step.cpu().numpy()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if (out == MASK).any():  # impossible: r_N = 1 reveals every remaining position
        raise RuntimeError("sampler left a masked position")
    return SampleResult(out, nfe, tau, time.perf_counter() - t0, "torch")


def _by_round(den, b, L, N, rates, gen, device, vocab_size, greedy_final, offset):
    """One batch, one denoiser call per reveal round (module docstring)."""
    step, u_at = _reveal_pattern(b, L, rates, gen, device)
    rounds, k_of, calls = _reveal_rounds(step)
    X = torch.full((b, L), MASK, dtype=torch.long, device=device)  # x_U: all masked at t = 1
    for k in range(int(calls.max())):
        rows = (calls > k).nonzero().squeeze(1)  # sequences with a k-th reveal step
        at = rounds[rows, k]  # (r,): that step
        P, vocab_size = _denoise(den, X[rows], device, vocab_size, int(at[0]))
        reveal = k_of[rows] == k  # (r, L): the positions revealed at that step
        _check_rows(P, reveal, rows + offset, at)
        tok = _draw(P, u_at[rows])
        if greedy_final:
            tok = torch.where((at == N).unsqueeze(1), P.argmax(-1), tok)
        X[rows] = torch.where(reveal, tok, X[rows])
    return X, step, calls, vocab_size


def _by_step(den, b, L, N, rates, gen, device, vocab_size, greedy_final, offset):
    """One batch, the literal loop over the N steps: a call per step on the sequences revealing something."""
    X = torch.full((b, L), MASK, dtype=torch.long, device=device)
    step = torch.zeros((b, L), dtype=torch.long, device=device)
    calls = torch.zeros(b, dtype=torch.long, device=device)
    for j in range(N):
        reveal = (X == MASK) & (torch.rand(b, L, generator=gen, device=device) < rates[j])  # (b, L): S_j
        u = torch.rand(b, L, generator=gen, device=device)  # (b, L)
        rows = reveal.any(dim=1).nonzero().squeeze(1)  # sequences whose state changes at step j
        if rows.numel() == 0:
            continue  # cache: nothing revealed, no evaluation
        P, vocab_size = _denoise(den, X[rows], device, vocab_size, j + 1)  # (r, L, V) given the current x_U
        _check_rows(P, reveal[rows], rows + offset, torch.full_like(rows, j + 1))
        tok = P.argmax(-1) if greedy_final and j == N - 1 else _draw(P, u[rows])  # (r, L)
        X[rows] = torch.where(reveal[rows], tok, X[rows])  # only S_j changes
        step[reveal] = j + 1
        calls[rows] += 1
    return X, step, calls, vocab_size


# ----------------------------------------------------------------------------- AR

@torch.no_grad()
def ar_logits(model: Transformer, x: torch.Tensor, use_cache: bool = True) -> torch.Tensor:
    """Next-token logits (B, L, V) for every prefix of x (B, L), computed the way generation does.

    With ``use_cache`` one token at a time through the KV cache; without, the whole prefix is
    re-run for every position.  Both equal ``model(ar_input(x))`` up to rounding.
    """
    B, L = x.shape
    inp = ar_input(x, model.cfg.vocab_size)  # (B, L)
    if use_cache:
        cache = model.new_cache()
        return torch.cat([model(inp[:, i:i + 1], cache) for i in range(L)], dim=1)
    return torch.cat([model(inp[:, :i + 1])[:, -1:] for i in range(L)], dim=1)


@torch.no_grad()
def ar_sample(model: Transformer, num: int, L: int, seed: int = 0, batch: int = 256, device="cpu",
              use_cache: bool = True) -> SampleResult:
    """``num`` sequences x_i ~ p_theta(. | x_<i) at temperature 1; NFE = L per sequence."""
    if not model.cfg.causal:
        raise ValueError("ar_sample needs a causal (AR) model")
    num = positive_int("num", num)
    L = positive_int("L", L)
    if L > model.cfg.seq_len:
        raise ValueError(f"L = {L} exceeds the model's seq_len = {model.cfg.seq_len}")
    model.eval()
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    V = model.cfg.vocab_size
    check_memory(f"{num} samples of length {L}", 8 * num * L, "draw fewer samples")
    out = np.empty((num, L), dtype=np.int64)
    t0 = time.perf_counter()
    with autocast(device):
        for s in range(0, num, batch):
            b = min(batch, num - s)
            X = torch.empty((b, L), dtype=torch.long, device=device)
            bos = torch.full((b, 1), V, dtype=torch.long, device=device)
            tok = bos
            cache = model.new_cache() if use_cache else None
            for i in range(L):
                if use_cache:
                    logits = model(tok, cache)[:, -1]  # (b, V)
                else:
                    logits = model(torch.cat([bos, X[:, :i]], 1))[:, -1]  # (b, V)
                nxt = _draw(F.softmax(logits.float(), dim=-1), torch.rand(b, generator=gen, device=device))  # (b,)
                X[:, i] = nxt
                tok = nxt[:, None]
            out[s:s + b] = X.cpu().numpy()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return SampleResult(out, np.full(num, L, dtype=np.int64), None, time.perf_counter() - t0, "ar")


@torch.no_grad()
def ar_sequence_nll(model: Transformer, x: np.ndarray, batch: int = 256) -> np.ndarray:
    """-ln p_AR(x) per sequence (nats), float64 (n,)."""
    device = next(model.parameters()).device
    model.eval()
    out = []
    with autocast(device):
        for s in range(0, len(x), batch):
            xb = torch.as_tensor(np.asarray(x[s:s + batch], dtype=np.int64), device=device)
            out.append(ar_loss(model, xb).double().cpu().numpy())
    return np.concatenate(out)


def sample_model(model: Transformer, num: int, L: int, pi: RevealProbabilities | None = None, *, seed: int = 0,
                 batch: int = 256, device: str | torch.device | None = None) -> SampleResult:
    """``num`` samples of length L from a trained network: ddpm_cache with reveal probabilities ``pi`` for an
    MDM, token-by-token generation (``pi`` unused) for an AR model."""
    device = next(model.parameters()).device if device is None else torch.device(device)
    if model.cfg.causal:
        return ar_sample(model, num, L, seed=seed, batch=batch, device=device)
    if pi is None:
        raise ValueError("sampling an MDM needs reveal probabilities pi (a schedule and a number of steps N)")
    return ddpm_cache(MDMDenoiser(model, batch=batch), num, L, pi, seed=seed, batch=batch, device=device,
                      vocab_size=model.cfg.vocab_size)
