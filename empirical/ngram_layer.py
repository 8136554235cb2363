"""An n-gram layer: a learned n-gram whose exact posterior is part of the network (``ModelConfig.ngram = n``).

The layer holds the conditional law of an n-gram of order n over the V tokens,
P(x_t | x_{t-n+1..t-1}) = softmax(table[context]), one row of V logits for each of the (V + 1)^(n-1)
contexts: a context symbol is a token or ``s``, "before the start of the sequence", so the rows with
s give the law of the first n - 1 tokens (any initial law of an n-gram of order <= n is a set of
such rows).  An n-gram is an HMM whose hidden state at t is the window (x_{t-n+2}, .., x_t) of the
last n - 1 symbols (Section 4.1 of the paper; mdmt.constructions.languages.ngram), and the layer runs
that HMM's forward-backward recursion over the network's input ids with the shift structure of the
window: a step costs (V + 1)^(n-1) V per sequence, never the ((V + 1)^(n-1))^2 of a dense HMM.

* MDM: the output at t is the learned n-gram's posterior q_theta(x_t | x_U) given every revealed
  input other than t -- the oracle denoiser of Section 3.2 computed with the learned table:
  messages through masked runs up to the nearest n - 1 revealed tokens (the separator of
  Definition B.4), renormalised at every position so that no length underflows.
* AR: every input before t is revealed, so the law of x_t is the table row of the last n - 1 inputs
  (the BOS input and positions before the sequence read as s): one gather, and with a KV cache the
  inputs come from its history.

The network adds these log-probabilities to its output logits: a network whose table matches an
n-gram language of order <= n has that language's exact posterior at hand, and the transformer learns
what the table misses (for languages that are not n-grams of order <= n).  The logits start at 0 (the
uniform law): the window is observed, so no symmetry has to be broken.
"""

from __future__ import annotations

import numpy as np

from ._torch import F, nn, torch
from .ngram_kernels import ngram_backward_recompute, ngram_posterior

MAX_NGRAM_ROWS = 1 << 16  # (V + 1)^(n - 1) contexts: one forward step is a (B, contexts, V) product


def ngram_rows(order: int, vocab_size: int) -> int:
    """(V + 1)^(n - 1): the contexts of an n-gram layer (tokens and the start symbol s)."""
    return (vocab_size + 1) ** (order - 1)


class NgramLayer(nn.Module):
    """Learned n-gram of order ``order`` over tokens 0..V-1; inputs are ids 0..V (V: mask in the MDM, BOS in AR)."""

    def __init__(self, order: int, vocab_size: int, causal: bool):
        super().__init__()
        self.n, self.V, self.causal = order, vocab_size, causal
        self.logits = nn.Parameter(torch.zeros(ngram_rows(order, vocab_size), vocab_size))  # row: big-endian context

    def conditional(self) -> torch.Tensor:
        """P (contexts, V): the learned n-gram's law of the next token given each context; rows sum to 1."""
        return F.softmax(self.logits, -1)

    def forward(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """log q_theta(x_t = v | context) (B, T, V), float32, for the positions start..start+T-1 of ``ids``.

        ``ids`` (B, start + T) holds the inputs of the positions 0..start+T-1 (AR decoding with a
        cache passes its history; otherwise start = 0).  MDM: q_theta(x_t | the revealed inputs at
        every other position); AR: q_theta(x_t | the inputs up to t), input t holding x_{t-1}.
        """
        if self.causal:
            return self._ar(ids, start)
        if start:
            raise ValueError("the MDM's n-gram layer reads the whole sequence at once (start must be 0)")
        if ids.device.type == "cpu":
            return _CompiledPosterior.apply(self.conditional(), ids, self.V, self.n - 1)
        return self._mdm_torch(ids)

    def _ar(self, ids: torch.Tensor, start: int) -> torch.Tensor:
        B, k, s = ids.shape[0], self.n - 1, self.V
        sym = ids.clamp(max=s)  # the BOS input (id V) is the start symbol s = V
        sym = torch.cat([sym.new_full((B, k - 1), s), sym], 1) if k > 1 else sym  # positions before 0 read s
        T = ids.shape[1] - start
        ctx = torch.zeros((B, T), dtype=torch.long, device=ids.device)
        for j in range(k):  # context of position t: symbols at t-k+1..t (big-endian), i.e. columns t+j of sym
            ctx = ctx * (s + 1) + sym[:, start + j:start + j + T]
        return F.log_softmax(self.logits, -1)[ctx]  # (B, T, V)

    def _mdm_torch(self, ids: torch.Tensor) -> torch.Tensor:
        """The MDM's posterior by batched tensor operations (any device; autograd through 2 T steps)."""
        B, T = ids.shape
        V, k = self.V, self.n - 1
        W = V + 1  # symbols of a window: tokens and s
        R = W ** (k - 1)  # windows of the last k - 1 symbols
        P = self.conditional().view(W, R, V)  # [first symbol a, rest r, next token d]
        revealed = ids < V
        emit = torch.ones(B, T, V, dtype=P.dtype, device=ids.device)  # e_t(d): 1 if x_t = d is possible
        emit = torch.where(revealed[..., None], F.one_hot(ids.clamp(max=V - 1), V).to(P.dtype), emit)
        alpha = P.new_zeros(B, W * R)
        alpha[:, -1] = 1.0  # the window (s, .., s) before position 0
        preds = []  # pred_t[b, r, d] = P(window r of t-1's last k-1 symbols, x_t = d | inputs before t)
        for t in range(T):
            pred = torch.einsum("bar,ard->brd", alpha.view(B, W, R), P)  # (B, R, V)
            preds.append(pred)
            a = F.pad(pred * emit[:, t, None, :], (0, 1))  # the new window (r, d); the slot d = s stays 0
            alpha = (a / a.sum((1, 2), keepdim=True)).reshape(B, W * R)
        betas = [P.new_ones(B, R, V)]  # beta_t[b, r, d]: likelihood of the inputs after t given the window (r, d)
        for t in range(T - 1, 0, -1):
            nxt = (betas[-1] * emit[:, t, None, :])  # (B, R, V) over the window at t
            b = torch.einsum("ard,brd->bar", P, nxt).reshape(B, R, W)  # window (a, r) at t-1 = (r', d') reshaped
            b = b[..., :V]  # a window ending in s is never reached after position 0
            betas.append(b / b.sum((1, 2), keepdim=True))
        post = (torch.stack(preds, 1) * torch.stack(betas[::-1], 1)).sum(2)  # (B, T, V)
        return torch.where(revealed[..., None], 0.0, torch.log(post / post.sum(-1, keepdim=True)))


class _CompiledPosterior(torch.autograd.Function):
    """The MDM's posterior on the CPU by the compiled kernels of mdmt.empirical.ngram_kernels (float64 inside).

    The forward keeps only the table and the ids; the backward recomputes each sequence's recursion just
    before its share of the gradient (:func:`~mdmt.empirical.ngram_kernels.ngram_backward_recompute`), the same
    numbers as keeping the (B, T, R, V) arrays of :func:`~mdmt.empirical.ngram_kernels.ngram_forward`.
    """

    @staticmethod
    def forward(ctx, P, ids, V, k):
        Pn = P.detach().double().numpy()
        idn = ids.detach().numpy().astype(np.int64)
        ctx.saved = (Pn, idn, V, k)
        ctx.dtype = P.dtype
        return torch.from_numpy(ngram_posterior(Pn, idn, V, k)).to(P.dtype)

    @staticmethod
    def backward(ctx, grad):
        Pn, idn, V, k = ctx.saved
        gP = ngram_backward_recompute(grad.detach().double().numpy(), Pn, idn, V, k)
        return torch.from_numpy(gP).to(ctx.dtype), None, None, None
