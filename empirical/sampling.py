"""Sampling from trained networks: MDLM's ddpm_cache sampler (Eq. 3, THEORY §2) and AR decoding.

ddpm_cache.  N reverse steps j = 1..N with reveal probabilities pi (from any schedule of
:mod:`constructions.schedules`; ``linear``, alpha = 1 - t, by default).  At step j every
still-masked position is revealed with probability r_j = pi_j / (1 - sum_{k<j} pi_k)
= (alpha_s - alpha_t) / (1 - alpha_t), independently; a revealed position draws its token
from the denoiser's p(. | x_U) at the current state; revealed tokens are carried over and
never change; r_N = 1, so no mask is ever emitted.  The output law is exactly p_N of Eq. 3.

Caching.  The network is time-agnostic, so its output depends on the state alone.  A step
that reveals nothing in a sequence leaves its state unchanged, and the cached output would be
reused; since a sequence's state changes only at the steps where it reveals something, the
network is run for a sequence exactly at those steps.  Per sequence, NFE = #{j : S_j != {}},
E[NFE] = sum_j 1 - (1 - pi_j)^L (:func:`constructions.schedules.expected_nfe`).

Denoisers.  ``mdm_sample`` accepts a trained :class:`~empirical.model.Transformer`, a
:class:`ModelDenoiser`, a language (its oracle denoiser q(x_i | x_U), continued uniformly
once a sample has left the support) or any callable of the denoiser protocol (int (B, L)
with MASK -> probabilities (B, L, V)); all of them run through the same loop.

AR.  ``ar_sample`` draws x_i ~ p_theta(. | x_<i) for i = 1..L, one network call per token,
with a KV cache (or, for checking, re-running the prefix each time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from constructions.schedules import reveal_probabilities, reveal_rates
from constructions.validation import MASK, positive_int

from .model import KVCache, Transformer, autocast, subs_log_probs


@dataclass
class SampleResult:
    samples: np.ndarray  # int64 (num, L)
    nfe: np.ndarray  # int64 (num,): network evaluations per sequence
    seconds: float  # wall-clock time of the sampling loop
    reveal_step: np.ndarray | None = None  # int64 (num, L): the step tau_i (1..N) revealing each position (MDM)


class ModelDenoiser:
    """A trained MDM as a denoiser: ``X`` int (B, L) with MASK -> probabilities (B, L, V).

    NumPy input gives float64 NumPy output (the denoiser protocol); ``torch_probs`` works on
    tensors on the model's device.  Evaluation is batched and uses bf16 autocast on CUDA.
    """

    def __init__(self, model: Transformer, batch: int = 256):
        if model.cfg.causal:
            raise ValueError("ModelDenoiser needs a bidirectional MDM, got a causal (AR) model")
        self.model = model.eval()
        self.batch = positive_int("batch", batch)
        self.vocab_size = model.cfg.vocab_size

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def torch_probs(self, X: torch.Tensor) -> torch.Tensor:
        out = []
        with autocast(self.device):
            for s in range(0, X.shape[0], self.batch):
                out.append(subs_log_probs(self.model, X[s:s + self.batch]).exp())
        return torch.cat(out)

    def __call__(self, X):
        X = np.asarray(X, dtype=np.int64)
        if X.ndim == 1:
            X = X[None]
        if X.min(initial=0) < MASK or X.max(initial=0) >= self.vocab_size:
            bad = np.argwhere((X < MASK) | (X >= self.vocab_size))[0]
            raise ValueError(f"token {X[tuple(bad)]} at sequence {bad[0]}, position {bad[1]} is not in 0..{self.vocab_size - 1} or MASK")
        P = self.torch_probs(torch.as_tensor(X, device=self.device))
        return P.double().cpu().numpy()


class _ProtocolDenoiser:
    """Any denoiser-protocol callable (NumPy in, NumPy out), e.g. a language's oracle, on tensors."""

    def __init__(self, fn):
        self.fn = fn

    def torch_probs(self, X: torch.Tensor) -> torch.Tensor:
        P = np.asarray(self.fn(X.cpu().numpy()), dtype=np.float64)
        return torch.as_tensor(P, dtype=torch.float32, device=X.device)


def oracle(language):
    """The oracle denoiser q(x_i | x_U) of a language (uniform where q(x_U) = 0), as a protocol callable."""

    def denoise(X):
        return language.posterior_marginals(X, off_support="uniform")

    return denoise


def _as_torch_denoiser(den):
    if isinstance(den, Transformer):
        return ModelDenoiser(den)
    if hasattr(den, "torch_probs"):
        return den
    if hasattr(den, "posterior_marginals"):
        return _ProtocolDenoiser(oracle(den))
    if callable(den):
        return _ProtocolDenoiser(den)
    raise ValueError(f"not a denoiser: {type(den).__name__}")


def _draw(P: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw from rows P (..., V) with uniforms u (...)."""
    cdf = P.float().cumsum(-1)
    k = (cdf < u.unsqueeze(-1) * cdf[..., -1:]).sum(-1)
    return k.clamp_(max=P.shape[-1] - 1)


@torch.no_grad()
def mdm_sample(denoiser, num: int, L: int, vocab_size: int, steps: int, schedule="linear", seed: int = 0,
               batch: int = 256, device="cpu", greedy_last: bool = False) -> SampleResult:
    """``num`` sequences of length L from the N-step factorized sampler (ddpm_cache).

    ``schedule``: a schedule name, a :class:`~constructions.schedules.Schedule` or an explicit
    reveal-probability vector pi of length ``steps``.  ``greedy_last`` (off by default, so the
    law is exactly p_N) fills the positions still masked at the last step with the argmax.
    Same seed, batch and device: same samples.
    """
    num = positive_int("num", num)
    L = positive_int("L", L)
    N = positive_int("number of steps N", steps)
    pi = reveal_probabilities(schedule, N)
    rates = reveal_rates(pi)
    den = _as_torch_denoiser(denoiser)
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    out = np.empty((num, L), dtype=np.int64)
    nfe = np.zeros(num, dtype=np.int64)
    tau = np.zeros((num, L), dtype=np.int64)
    t0 = time.perf_counter()
    for s in range(0, num, batch):
        b = min(batch, num - s)
        X = torch.full((b, L), MASK, dtype=torch.long, device=device)
        step = torch.zeros((b, L), dtype=torch.long, device=device)
        calls = torch.zeros(b, dtype=torch.long, device=device)
        for j in range(N):
            if rates[j] <= 0:
                continue
            reveal = (X == MASK) & (torch.rand(b, L, generator=gen, device=device) < rates[j])  # (b, L)
            u = torch.rand(b, L, generator=gen, device=device)
            rows = reveal.any(dim=1).nonzero().squeeze(1)  # sequences whose state changes at this step
            if rows.numel() == 0:
                continue
            P = den.torch_probs(X[rows])  # (r, L, V)
            if P.shape[-1] != vocab_size:
                raise ValueError(f"denoiser returned {P.shape[-1]} token probabilities, expected V = {vocab_size}")
            tok = P.argmax(-1) if (greedy_last and j == N - 1) else _draw(P, u[rows])
            X[rows] = torch.where(reveal[rows], tok, X[rows])
            step[reveal] = j + 1
            calls[rows] += 1
        out[s:s + b] = X.cpu().numpy()
        nfe[s:s + b] = calls.cpu().numpy()
        tau[s:s + b] = step.cpu().numpy()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if (out == MASK).any():  # impossible: r_N = 1 reveals every remaining position
        raise RuntimeError("sampler left a masked position")
    return SampleResult(out, nfe, time.perf_counter() - t0, tau)


@torch.no_grad()
def ar_logits(model: Transformer, x: torch.Tensor, use_cache: bool = True) -> torch.Tensor:
    """Next-token logits (B, L, V) for every prefix of x (B, L), computed the way generation does.

    With ``use_cache`` one token at a time through the KV cache; without, the whole prefix is
    re-run for every position.  Both equal ``model(ar_input(x))`` up to rounding.
    """
    B, L = x.shape
    V = model.cfg.vocab_size
    inp = torch.cat([torch.full_like(x[:, :1], V), x[:, :-1]], dim=1)
    if use_cache:
        cache = KVCache(model.cfg.n_layer)
        return torch.cat([model(inp[:, i:i + 1], cache) for i in range(L)], dim=1)
    return torch.cat([model(inp[:, :i + 1])[:, -1:] for i in range(L)], dim=1)


@torch.no_grad()
def ar_sample(model: Transformer, num: int, L: int, seed: int = 0, batch: int = 256, device="cpu", use_cache: bool = True) -> SampleResult:
    """``num`` sequences x_i ~ p_theta(. | x_<i), temperature 1 (the model's exact law); NFE = L."""
    if not model.cfg.causal:
        raise ValueError("ar_sample needs a causal (AR) model")
    num = positive_int("num", num)
    L = positive_int("L", L)
    if L > model.cfg.seq_len:
        raise ValueError(f"L = {L} exceeds the model's position table ({model.cfg.seq_len})")
    model.eval()
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    V = model.cfg.vocab_size
    out = np.empty((num, L), dtype=np.int64)
    t0 = time.perf_counter()
    with autocast(device):
        for s in range(0, num, batch):
            b = min(batch, num - s)
            X = torch.empty((b, L), dtype=torch.long, device=device)
            tok = torch.full((b, 1), V, dtype=torch.long, device=device)  # BOS
            cache = KVCache(model.cfg.n_layer) if use_cache else None
            for i in range(L):
                if use_cache:
                    logits = model(tok, cache)[:, -1]  # (b, V)
                else:
                    logits = model(torch.cat([torch.full((b, 1), V, dtype=torch.long, device=device), X[:, :i]], 1))[:, -1]
                P = F.softmax(logits.float(), dim=-1)
                nxt = _draw(P, torch.rand(b, generator=gen, device=device))
                X[:, i] = nxt
                tok = nxt[:, None]
            out[s:s + b] = X.cpu().numpy()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return SampleResult(out, np.full(num, L, dtype=np.int64), time.perf_counter() - t0)


@torch.no_grad()
def ar_sequence_nll(model: Transformer, x: np.ndarray, batch: int = 256) -> np.ndarray:
    """-ln p_AR(x) per sequence (nats), float64 (n,)."""
    from .model import ar_loss

    device = next(model.parameters()).device
    model.eval()
    out = []
    with autocast(device):
        for s in range(0, len(x), batch):
            xb = torch.as_tensor(np.asarray(x[s:s + batch], dtype=np.int64), device=device)
            out.append(ar_loss(model, xb).double().cpu().numpy())
    return np.concatenate(out)
