"""An HMM layer: a learned hidden Markov model whose exact posterior is part of the network (``ModelConfig.hmm_states``).

The layer holds an HMM with S hidden states -- initial law pi, transition matrix A (S, S) and
emission matrix B (S, V), each a softmax of free logits -- and runs its forward-backward
recursion over the network's input ids: a revealed token v multiplies in the column B[:, v], a
masked position (or the AR model's BOS) multiplies in 1.  It returns, per position t,

* the learned HMM's posterior of the hidden state h_t given every *other* input (MDM) or the
  inputs before it (AR), ``post`` (B, T, S), and
* that HMM's law of the token there, log sum_h post[h] B[h, v], ``logp`` (B, T, V).

For the MDM that law is q_theta(x_t | x_U) of the learned HMM, the same forward-backward
computation as the oracle denoiser of :mod:`mdmt.constructions.reverse` (Definition B.4's
messages through masked runs, Section 3.2's denoiser).  For the AR model it is the filter
q_theta(x_t | x_<t).  The network adds ``logp`` to its output logits and a linear map of
``post`` to its residual stream: a network whose HMM matches the language has the exact
posterior at hand, and the transformer learns what the learned HMM misses.  An n-gram of order
n is an HMM with V^(n-1) window states, so a layer with that many states can represent it exactly.

Messages are renormalised at every position (no underflow at any length).  The recursion runs
over positions in a Python loop of T steps per direction on (B, S) tensors: at S = 64 it costs
less than a 64-unit GRU at L = 64 on one CPU thread.
"""

from __future__ import annotations

from ._torch import F, nn, torch


class HMMLayer(nn.Module):
    """Learned HMM forward-backward over input ids 0..V (V: mask or BOS, no emission)."""

    def __init__(self, n_states: int, vocab_size: int, causal: bool):
        super().__init__()
        self.S, self.V, self.causal = n_states, vocab_size, causal
        self.init_logits = nn.Parameter(torch.zeros(n_states))
        self.trans_logits = nn.Parameter(torch.zeros(n_states, n_states))
        self.emit_logits = nn.Parameter(torch.zeros(n_states, vocab_size))

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Random logits (standard deviation 1): a uniform start is a saddle where every state is the same."""
        with torch.no_grad():
            for p in (self.init_logits, self.trans_logits, self.emit_logits):
                p.copy_(torch.randn(p.shape, generator=generator))

    def laws(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(pi (S,), A (S, S), B (S, V)): the learned HMM, rows summing to 1."""
        return (F.softmax(self.init_logits, -1), F.softmax(self.trans_logits, -1), F.softmax(self.emit_logits, -1))

    def forward(self, idx: torch.Tensor, state: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """ids (B, T) in 0..V -> (logp (B, T, V), post (B, T, S), state (B, S)), all float32.

        AR (causal): post[:, t] is the law of h at input position t given the tokens before it --
        input t holds x_{t-1} (t >= 1) -- and ``state`` is that law at the position before the
        first input (None: the start of the sequence), so decoding token by token equals one pass.
        MDM: post[:, t] is the law of h_t given the inputs at every other position; ``state`` is unused.
        """
        B_, T = idx.shape
        pi, A, Bm = self.laws()
        emit = torch.cat([Bm.T, Bm.new_ones(1, self.S)], 0)[idx]  # (B, T, S): B[:, x_t], or 1 where masked / BOS
        if self.causal:
            preds, f = [], state
            for t in range(T):
                if f is None:
                    f = pi.expand(B_, self.S)
                else:
                    f = f * emit[:, t]
                    f = (f / f.sum(-1, keepdim=True)) @ A
                preds.append(f)
            post = torch.stack(preds, 1)  # (B, T, S)
            state = f
        else:
            preds = [pi.expand(B_, self.S)]  # law of h_t given the inputs before t
            for t in range(1, T):
                a = preds[-1] * emit[:, t - 1]
                preds.append((a / a.sum(-1, keepdim=True)) @ A)
            backs = [Bm.new_ones(B_, self.S)]  # likelihood of the inputs after t given h_t, up to a constant
            for t in range(T - 2, -1, -1):
                b = (backs[-1] * emit[:, t + 1]) @ A.T
                backs.append(b / b.sum(-1, keepdim=True))
            post = torch.stack(preds, 1) * torch.stack(backs[::-1], 1)  # (B, T, S)
            post = post / post.sum(-1, keepdim=True)
        return torch.log(post @ Bm), post, state
