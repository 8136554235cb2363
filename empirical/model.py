"""The networks of Section 5: a masked diffusion model (MDM) and its autoregressive (AR) baseline.

Both are the same pre-LayerNorm transformer with rotary position encoding on queries and keys (as
MDLM) plus learned absolute position embeddings (``positions="rotary+learned"``; optionally ALiBi
attention biases toward near positions, ``"...+alibi"``; Appendix E.2,
Table 2: hidden 512, 8 layers, 8 heads, L = 512 -- the ``paper`` preset; ``tiny`` is a
CPU-sized version with the same structure).  They differ only in the attention mask.

Neighbour embedding (``ModelConfig.neighbours = K``, 0 = off).  Each position
also adds a learned embedding of the input id at each offset o = -K..-1, 1..K (the AR model:
-K..-1 only, so it stays causal), one table per offset, positions outside the sequence reading a
reserved id.  The posterior q(x_i | x_U) of an n-gram with every neighbour revealed is a product
of n table entries over the window x_{i-n+1..i+n-1}; a bidirectional model must first route those
2(n-1) neighbours to position i by attention, which a small model learns slowly (docs/empirical.md
measures it).  The embedding hands them over directly; attention still sees the whole sequence.

Window embedding (``ModelConfig.window = w``, 0 = off).  Each position also adds
a learned embedding of the *joint* id of every run of w consecutive input ids inside its
neighbourhood (offsets -K..K; AR: -K..0), one table of (V + 2)^w ids per run.  With every
neighbour revealed the n-gram posterior's logit is a sum of n table terms, term k a function of
the n - 1 other ids in the window x_{i-n+1+k..i+k}: for w = n those are exactly the runs, so a
linear read-out of the summed embeddings can represent it, where single-token embeddings need
the network to build each conjunction (docs/empirical.md measures the difference).

Recurrent layer (``ModelConfig.recurrent = H``, 0 = off).  After the embeddings and before the
blocks, a gated recurrent unit of H units reads the LayerNorm of the residual stream -- in both
directions in the MDM, forward only in the AR model -- and a linear map adds its states back to the
stream.  With masked neighbours the posterior q(x_i | x_U) sums over every filling of the masked
run around i up to the nearest separator (Definition B.4): a forward-backward recursion
(mdmt.constructions.reverse), which a recurrence over positions carries naturally and attention
must assemble layer by layer.  AR decoding keeps the forward state in the ``KVCache``.

n-gram layer (``ModelConfig.ngram = n``, 0 = off; ``tiny``: n = 4) and HMM layer
(``ModelConfig.hmm_states = S``): a learned n-gram table or dense HMM whose exact posterior given the
input (MDM) or next-token law (AR) is added to the output logits (mdmt.empirical.ngram_layer,
mdmt.empirical.hmm_layer; docs/empirical.md measures why).

MDM (bidirectional attention).  The input is x_t with masked positions (``MASK = -1`` in
sequences) fed as the extra input id ``V``.  The output is the SUBS parameterization of the
reverse model p_theta(x_i | x_U), i.e. the denoiser of Eq. 3 (Section 3.2):

* the head has V outputs, one per real token, so the mask token gets no probability;
* at a revealed position the output is the one-hot of the revealed token (carry-over), so
  revealed tokens pass through sampling unchanged;
* no time input: the optimal denoiser q(x_i | x_U) does not depend on t.

Training objective (continuous-time ELBO for alpha(t) = 1 - t, every token masked
independently with probability t, weight -alpha'(t)/(1 - alpha(t)) = 1/t):

    NELBO(x) = E_{t ~ U(0,1)} [ (1/t) * sum_{i masked in x_t} -log p_theta(x_i | x_t) ]

Because the denoiser does not depend on t, the integral over t can be done in closed form:
given m masked positions, int_0^1 (1/t) Binom(m; L, t) dt = 1/m, so

    NELBO(x) = L * E_{m ~ U{1..L}} E_{M : |M| = m} [ (1/m) sum_{i in M} -log p_theta(x_i | x_{-M}) ],

the random-order autoregressive form (for the oracle q(x_i | x_U) every order gives exactly
-log q(x), so the oracle's NELBO is -log q(x) for every x).  Two unbiased estimators of the
same NELBO are provided (per sequence, in nats):

* ``mdm_loss`` with ``diffusion_noise`` -- MDLM's: t ~ U(t_min, 1), Bernoulli(t) masks, weight 1/t;
* ``mdm_loss_count`` with ``count_noise`` -- m uniform on 1..L, m positions masked uniformly
  at random, weight L/m: no 1/t factor, so no variance blow-up at small t.

AR (causal attention).  The input is (BOS, x_1, ..., x_{L-1}) with BOS the extra id ``V``;
position i predicts x_{i+1}.  Generation feeds one token at a time through a ``KVCache``.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, replace

from mdmt.constructions.languages.ngram import MAX_ORDER
from mdmt.runtime.validation import MASK

from ._torch import F, nn, torch
from .hmm_layer import HMMLayer
from .ngram_layer import MAX_NGRAM_ROWS, NgramLayer, ngram_rows
from .recipes import ARCHITECTURES

NEG = -1e6  # log-probability of an excluded token (exp underflows to exactly 0 in float32)

PRESETS = ARCHITECTURES  # Table 2 of the paper and the CPU-sized tiny preset (mdmt.empirical.recipes)


MAX_HMM_STATES = 4096  # hidden states of the HMM layer: its (S, S) transition matrix and (B, T, S) messages
MAX_WINDOW_IDS = 1 << 20  # (V + 2)^w: rows of one window table (256 MiB at d = 64, float32)

def neighbourhood_span(neighbours: int, causal: bool) -> int:
    """How many offsets the neighbourhood of a position holds: -K..K (MDM, 2K + 1) or -K..0 (AR, K + 1).

    Offset 0 is the position's own input (embedded by the token table); the neighbour embedding reads
    the others, and the window embedding's runs of w ids lie inside it (span - w + 1 runs).
    """
    return neighbours + 1 if causal else 2 * neighbours + 1


POSITIONS = ("rotary", "learned", "rotary+learned", "learned+alibi", "rotary+learned+alibi")


@dataclass(frozen=True)
class ModelConfig:
    """Everything that fixes the network's shape."""

    vocab_size: int = 8  # V real tokens 0..V-1; input id V is the mask (MDM) or BOS (AR)
    seq_len: int = 64  # L: the longest sequence (and KV cache) the model takes
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    causal: bool = False  # False: MDM (bidirectional); True: AR baseline
    positions: str = "rotary+learned"  # one of POSITIONS: RoPE on q, k (as MDLM), absolute embeddings, ALiBi biases
    neighbours: int = 0  # K: each position also embeds the input ids at offsets -K..K (MDM) or -K..-1 (AR); 0: off
    window: int = 0  # w: ... and the joint id of each run of w consecutive ids in -K..K (AR: -K..0); 0: off
    recurrent: int = 0  # H: a GRU of H units (both directions in the MDM, forward in the AR model) before the blocks; 0: off
    hmm_states: int = 0  # S: an HMM layer of S hidden states (mdmt.empirical.hmm_layer); 0: off
    ngram: int = 0  # n: an n-gram layer of order n (mdmt.empirical.ngram_layer); 0: off

    def __post_init__(self):
        for name in ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"ModelConfig.d_model = {self.d_model} is not divisible by n_heads = {self.n_heads}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"ModelConfig.causal must be a bool, got {self.causal!r}")
        if not isinstance(self.neighbours, int) or isinstance(self.neighbours, bool) or not 0 <= self.neighbours <= self.seq_len:
            raise ValueError(f"ModelConfig.neighbours must be an integer in 0..seq_len = {self.seq_len}, got {self.neighbours!r}")
        span = neighbourhood_span(self.neighbours, self.causal)
        if not isinstance(self.window, int) or isinstance(self.window, bool) or not (
                self.window == 0 or 2 <= self.window <= span):
            raise ValueError(f"ModelConfig.window must be 0 or an integer in 2..{span} (runs inside the neighbourhood "
                             f"of neighbours = {self.neighbours}), got {self.window!r}")
        small = self.window <= 20 and self.vocab_size < 1 << 20  # (V + 2)^w computed only when it is small to write
        if self.window and (not small or (self.vocab_size + 2) ** self.window > MAX_WINDOW_IDS):  # 3^13 > 2^20
            ids = f" = {(self.vocab_size + 2) ** self.window}" if small else ""
            raise ValueError(f"ModelConfig.window = {self.window} needs (V + 2)^w{ids} "
                             f"ids per table (V = {self.vocab_size}); at most {MAX_WINDOW_IDS} fit")
        if not isinstance(self.recurrent, int) or isinstance(self.recurrent, bool) or self.recurrent < 0:
            raise ValueError(f"ModelConfig.recurrent must be a non-negative integer (0: off), got {self.recurrent!r}")
        if not isinstance(self.hmm_states, int) or isinstance(self.hmm_states, bool) or not 0 <= self.hmm_states <= MAX_HMM_STATES:
            raise ValueError(f"ModelConfig.hmm_states must be an integer in 0..{MAX_HMM_STATES} (0: off), got {self.hmm_states!r}")
        if not isinstance(self.ngram, int) or isinstance(self.ngram, bool) or self.ngram < 0 or self.ngram == 1:
            raise ValueError(f"ModelConfig.ngram must be 0 (off) or an order >= 2, got {self.ngram!r}")
        if self.ngram and (self.ngram > MAX_ORDER or ngram_rows(self.ngram, self.vocab_size) > MAX_NGRAM_ROWS):
            raise ValueError(f"ModelConfig.ngram = {self.ngram} needs (V + 1)^(n - 1) contexts (V = {self.vocab_size}); "
                             f"at most {MAX_NGRAM_ROWS} fit")
        if self.positions not in POSITIONS:
            raise ValueError(f"ModelConfig.positions must be one of {', '.join(POSITIONS)}, got {self.positions!r}")
        if "rotary" in self.positions and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"rotary positions need an even head size, got d_model / n_heads = {self.d_model // self.n_heads}")

    @classmethod
    def preset(cls, name: str, vocab_size: int, *, seq_len: int | None = None, causal: bool = False) -> "ModelConfig":
        """The ``tiny`` or ``paper`` architecture for a vocabulary of ``vocab_size`` tokens."""
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; valid presets: {', '.join(PRESETS)}")
        arch = dict(PRESETS[name])
        if seq_len is not None:
            arch["seq_len"] = seq_len
        return cls(vocab_size=vocab_size, causal=causal, **arch)

    def with_(self, **changes) -> "ModelConfig":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def estimated_bytes(cfg: ModelConfig, batch: int) -> int:
    """The order of magnitude of the memory of a network of ``cfg`` and one pass over ``batch`` sequences.

    A guard against inputs that cannot fit (mdmt.runtime.resources), not a prediction:
    training keeps the activations of every layer and may need several times more.

    Parameters ((V + 1) d + V d + L d + 12 d^2 per layer, the neighbour tables (span - 1) (V + 2) d,
    the window tables (span - w + 1) (V + 2)^w d, the recurrent layer D (3 (d H + H^2 + 2 H) + H d)
    with D = 2 directions (MDM) or 1 (AR), the HMM layer S (S + V + 1 + d + 1) and the n-gram table
    (V + 1)^(n-1) V, float32; ``neighbourhood_span``) plus the activations of
    one layer and the output: attention scores (batch, heads, L, L), the residual stream and MLP
    (9 d per token), the logits (V per token), the KV cache (2 d per token per layer), the gates and
    states of the recurrence (4 D H per token), the HMM layer's messages ((2 D + 2) S per token), the
    n-gram layer's messages (6 (V + 1)^(n-1) per token in the MDM, V in AR), all float32, doubled for the temporaries of the framework.
    """
    V, L, d = cfg.vocab_size, cfg.seq_len, cfg.d_model
    span, w = neighbourhood_span(cfg.neighbours, cfg.causal), cfg.window
    runs = span - w + 1 if w else 0
    H, D, S = cfg.recurrent, 1 if cfg.causal else 2, cfg.hmm_states
    rows = ngram_rows(cfg.ngram, V) if cfg.ngram else 0
    params = ((2 * V + 1 + L + (span - 1) * (V + 2) + runs * (V + 2) ** w) * d + 12 * d * d * cfg.n_layers
              + D * (3 * (d * H + H * H + 2 * H) + H * d) + S * (S + V + 1 + d + 1) + rows * V)
    per_token = (9 * d + V + 2 * d * cfg.n_layers + 4 * D * H + (2 * D + 2) * S
                 + (V if cfg.causal else 6 * rows) * bool(rows))
    activations = batch * (cfg.n_heads * L * L + L * per_token)
    return 4 * params + 8 * activations


class KVCache:
    """Keys and values of every layer for incremental AR decoding: (B, H, capacity, hd) buffers and a fill level,
    the input ids so far and the recurrent layer's forward state."""

    def __init__(self, n_layers: int, capacity: int):
        self.k: list[torch.Tensor | None] = [None] * n_layers
        self.v: list[torch.Tensor | None] = [None] * n_layers
        self.capacity = capacity
        self.pos = 0  # number of positions already stored (advanced by the model after all layers)
        self.ids: torch.Tensor | None = None  # (B, pos) input ids so far (the neighbour embedding looks back at them)
        self.state: torch.Tensor | None = None  # (1, B, H) the recurrent layer's state after position pos - 1
        self.hmm_state: torch.Tensor | None = None  # (B, S) the HMM layer's law of the hidden state at position pos - 1

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v (B, H, T, hd) at positions pos..pos+T-1; return all keys/values so far (B, H, pos+T, hd)."""
        B, H, T, hd = k.shape
        if self.k[layer] is None:
            self.k[layer] = k.new_empty(B, H, self.capacity, hd)
            self.v[layer] = v.new_empty(B, H, self.capacity, hd)
        end = self.pos + T
        if end > self.capacity:
            raise ValueError(f"KV cache holds {self.capacity} positions; cannot append up to position {end}")
        self.k[layer][:, :, self.pos:end] = k
        self.v[layer][:, :, self.pos:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]


def rotary_tables(seq_len: int, head_dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (seq_len, head_dim / 2) of the rotary position encoding: angle p * base^(-2i / head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (hd/2,)
    ang = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv[None]  # (L, hd/2)
    return ang.cos().float(), ang.sin().float()


def apply_rotary(z: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (z_2i, z_2i+1) of z (B, H, T, hd) by its position's angle (cos, sin: (T, hd/2))."""
    z1, z2 = z.float().unflatten(-1, (-1, 2)).unbind(-1)  # each (B, H, T, hd/2)
    out = torch.stack((z1 * cos - z2 * sin, z1 * sin + z2 * cos), dim=-1).flatten(-2)  # (B, H, T, hd)
    return out.to(z.dtype)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes 2^(-8 h / H), h = 1..H (Press et al. 2022): steep heads look near, flat heads far."""
    return torch.tensor([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])


def alibi_bias(slopes: torch.Tensor, start: int, T: int, causal: bool, device=None) -> torch.Tensor:
    """Additive attention bias (H, T, start + T): -slope_h |i - j| for queries start..start+T-1 and keys 0..start+T-1.

    Bidirectional (MDM) attention is biased toward near positions on both sides; a causal (AR)
    model also gets -inf above the diagonal.
    """
    q = torch.arange(start, start + T, device=device)[:, None]
    k = torch.arange(start + T, device=device)[None, :]
    bias = -slopes.to(device)[:, None, None] * (q - k).abs()[None].float()  # (H, T, start + T)
    if causal:
        bias = bias.masked_fill((k > q)[None], float("-inf"))
    return bias


class SelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.n_heads, self.causal, self.layer = cfg.n_heads, cfg.causal, layer
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, rotary=None, bias=None) -> torch.Tensor:
        B, T, C = x.shape  # (B, T, C)
        q, k, v = self.qkv(x).split(C, dim=2)  # each (B, T, C)
        q, k, v = (z.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for z in (q, k, v))  # (B, H, T, hd)
        if rotary is not None:  # cos, sin of positions start..start+T-1
            q, k = apply_rotary(q, *rotary), apply_rotary(k, *rotary)
        past = 0
        if cache is not None:
            past = cache.pos
            k, v = cache.append(self.layer, k, v)  # (B, H, past + T, hd)
        if bias is not None:  # ALiBi (H, T, past + T), causal masking included
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
        elif not self.causal or T == 1:
            y = F.scaled_dot_product_attention(q, k, v)  # bidirectional, or one new query that may see all stored keys
        elif past == 0:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # a block of T new queries after `past` cached positions
            allowed = torch.arange(past + T, device=x.device)[None, :] <= (past + torch.arange(T, device=x.device))[:, None]
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # (B, H, T, hd)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.proj(y)


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg, layer)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, rotary=None, bias=None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache, rotary, bias)  # (B, T, C)
        return x + self.mlp(self.ln2(x))  # (B, T, C)


class Transformer(nn.Module):
    """Token ids (B, T) in 0..V (V = mask or BOS) -> logits (B, T, V) over the V real tokens, float32."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size + 1, cfg.d_model)  # + the mask / BOS id
        if "learned" in cfg.positions:
            self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)  # learned absolute positions
        if "rotary" in cfg.positions:
            cos, sin = rotary_tables(cfg.seq_len, cfg.d_model // cfg.n_heads)
            self.register_buffer("rot_cos", cos, persistent=False)  # (L, hd/2)
            self.register_buffer("rot_sin", sin, persistent=False)
        if "alibi" in cfg.positions:
            self.register_buffer("alibi_slopes", alibi_slopes(cfg.n_heads), persistent=False)
        if cfg.neighbours:  # one table of V + 2 ids (tokens, mask/BOS, outside the sequence) per offset
            self.near = nn.Embedding(len(self.neighbour_offsets) * (cfg.vocab_size + 2), cfg.d_model)
        if cfg.window:  # one table of (V + 2)^w joint ids per run
            self.runs = nn.Embedding(len(self.window_starts) * (cfg.vocab_size + 2) ** cfg.window, cfg.d_model)
        if cfg.recurrent:  # LN -> GRU (bidirectional unless causal) -> linear back to the residual stream
            self.rnn_ln = nn.LayerNorm(cfg.d_model)
            self.rnn = nn.GRU(cfg.d_model, cfg.recurrent, batch_first=True, bidirectional=not cfg.causal)
            self.rnn_out = nn.Linear((1 if cfg.causal else 2) * cfg.recurrent, cfg.d_model)
        if cfg.hmm_states:  # a learned HMM's posterior: its token law added to the logits, its state law to the stream
            self.hmm = HMMLayer(cfg.hmm_states, cfg.vocab_size, cfg.causal)
            self.hmm_out = nn.Linear(cfg.hmm_states, cfg.d_model)
        if cfg.ngram:  # a learned n-gram's posterior (MDM) or next-token law (AR), added to the logits
            self.ngram = NgramLayer(cfg.ngram, cfg.vocab_size, cfg.causal)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # no output for the mask token
        self.apply(self._init)
        for name, p in self.named_parameters():  # scaled init of the residual projections (GPT-2)
            if name.endswith("attn.proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))
        if cfg.hmm_states:
            self.hmm.reset_parameters()

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    @property
    def mask_id(self) -> int:
        return self.cfg.vocab_size

    @property
    def neighbour_offsets(self) -> list[int]:
        """Offsets o of the neighbour embedding: -K..-1 and 1..K (MDM), -K..-1 (AR: no look-ahead)."""
        K = self.cfg.neighbours
        return [o for o in range(-K, -K + neighbourhood_span(K, self.cfg.causal)) if o]

    @property
    def window_starts(self) -> list[int]:
        """First offsets a of the runs a..a+w-1 of the window embedding: inside -K..K (MDM), -K..0 (AR)."""
        K, w = self.cfg.neighbours, self.cfg.window
        return list(range(-K, -K + neighbourhood_span(K, self.cfg.causal) - w + 1)) if w else []

    def neighbour_embedding(self, ids: torch.Tensor, start: int) -> torch.Tensor:
        """Sum over offsets o of E_o(id at position p + o) for positions p = start..start+T-1; (B, T, C),
        plus, with a window w, the sum over runs a of W_a(joint id of positions p + a .. p + a + w - 1),
        the joint id of ids (c_0, .., c_{w-1}) being sum_j c_j (V + 2)^j.

        ``ids`` (B, start + T) holds the inputs of positions 0..start+T-1 (with a KV cache, AR decoding,
        the earlier ones come from its history).  A position outside the sequence (before 0, or at L
        or beyond) has the id V + 1.
        """
        B, T = ids.shape[0], ids.shape[1] - start
        K, outside = self.cfg.neighbours, self.cfg.vocab_size + 1
        pad = ids.new_full((B, K), outside)
        ids = torch.cat([pad, ids, pad], dim=1)  # (B, K + start + T + K): position p sits at column K + p

        def shifted(o: int) -> torch.Tensor:  # (B, T): the id at position p + o for each p
            return ids[:, K + start + o:K + start + o + T]

        x = 0
        for j, o in enumerate(self.neighbour_offsets):
            x = x + self.near(shifted(o) + j * (outside + 1))  # (B, T, C)
        for r, a in enumerate(self.window_starts):
            joint = r * (outside + 1) ** self.cfg.window
            for j in range(self.cfg.window):
                joint = joint + shifted(a + j) * (outside + 1) ** j
            x = x + self.runs(joint)
        return x

    def recurrence(self, x: torch.Tensor, cache: KVCache | None) -> torch.Tensor:
        """The recurrent layer's contribution (B, T, C) to the residual stream x (B, T, C).

        With a KV cache (AR decoding) the recurrence starts from the state the cache holds and
        leaves its new state there, so token-by-token decoding equals one pass over the sequence.
        """
        h0 = None if cache is None else cache.state
        with torch.autocast(device_type=x.device.type, enabled=False):  # the recurrence in float32
            states, h = self.rnn(self.rnn_ln(x.float()), h0)  # (B, T, D H), (D, B, H)
        if cache is not None:
            cache.state = h
        return self.rnn_out(states.to(x.dtype))

    def new_cache(self) -> KVCache:
        return KVCache(self.cfg.n_layers, self.cfg.seq_len)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        B, T = idx.shape  # (B, T) ids in 0..V
        start = 0 if cache is None else cache.pos
        if start + T > self.cfg.seq_len:
            raise ValueError(f"sequence length L = {start + T} exceeds the model's seq_len = {self.cfg.seq_len}")
        if cache is not None and not self.cfg.causal:
            raise ValueError("a KV cache is only meaningful for a causal (AR) model")
        ids = idx
        if cache is not None:  # AR decoding: the inputs of every position so far (the embeddings look back)
            cache.ids = ids = idx if cache.ids is None else torch.cat([cache.ids, idx], dim=1)  # (B, start + T)
        x = self.tok(idx)  # (B, T, C)
        rotary = None
        if "learned" in self.cfg.positions:
            x = x + self.pos(torch.arange(start, start + T, device=idx.device))[None]
        if self.cfg.neighbours:
            x = x + self.neighbour_embedding(ids, start)
        if "rotary" in self.cfg.positions:
            rotary = (self.rot_cos[start:start + T], self.rot_sin[start:start + T])  # (T, hd/2) each
        bias = (alibi_bias(self.alibi_slopes, start, T, self.cfg.causal, idx.device)
                if "alibi" in self.cfg.positions else None)
        if self.cfg.recurrent:
            x = x + self.recurrence(x, cache)
        hmm_logp = None
        if self.cfg.hmm_states:
            with torch.autocast(device_type=x.device.type, enabled=False):  # the messages in float32
                hmm_logp, post, state = self.hmm(idx, None if cache is None else cache.hmm_state)  # (B, T, V), (B, T, S)
            if cache is not None:
                cache.hmm_state = state
            x = x + self.hmm_out(post.to(x.dtype))
        for block in self.blocks:
            x = block(x, cache, rotary, bias)
        if cache is not None:
            cache.pos += T
        logits = self.head(self.ln_f(x)).float()  # (B, T, V)
        if hmm_logp is not None:
            logits = logits + hmm_logp
        if self.cfg.ngram:
            with torch.autocast(device_type=x.device.type, enabled=False):  # the messages in float32
                logits = logits + self.ngram(ids, start)
        return logits


# ----------------------------------------------------------------------------- MDM

def mdm_input(x: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Sequences (B, L) with MASK entries -> input ids (MASK becomes id V)."""
    return torch.where(x == MASK, torch.full_like(x, vocab_size), x)


def subs_log_probs(model: Transformer, x: torch.Tensor) -> torch.Tensor:
    """SUBS reverse model: x (B, L) with MASK -> log p_theta(x_i = v | x_U) (B, L, V), float32.

    Masked positions: log-softmax over the V real tokens.  Revealed positions: log one-hot of
    the revealed token (0 there, ``NEG`` elsewhere), so sampling carries them over unchanged.
    """
    V = model.cfg.vocab_size
    logp = F.log_softmax(model(mdm_input(x, V)), dim=-1)  # (B, L, V)
    carry = torch.full_like(logp, NEG).scatter_(-1, x.clamp(min=0).unsqueeze(-1), 0.0)  # (B, L, V)
    return torch.where((x != MASK).unsqueeze(-1), carry, logp)


def diffusion_noise(batch: int, length: int, generator: torch.Generator, t_min: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """Times t (B,) on [t_min, 1], stratified over the batch (antithetic), and masks (B, L) with P(mask) = t."""
    u = (torch.rand(1, generator=generator) + torch.arange(batch) / batch) % 1.0  # (B,) one per stratum
    t = t_min + (1.0 - t_min) * u  # (B,)
    mask = torch.rand(batch, length, generator=generator) < t[:, None]  # (B, L)
    return t, mask


def count_noise(batch: int, length: int, generator: torch.Generator, u: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Counts m (B,) uniform on 1..L and masks (B, L) with exactly m[b] positions masked, uniformly at random.

    m = floor(u L) + 1 with u uniform on [0, 1): stratified over the batch by default
    (u_b = (U + b) / B), or the given ``u`` (B,) (validation stratifies it over the draws of one sequence).
    """
    if u is None:
        u = (torch.rand(1, generator=generator, dtype=torch.float64) + torch.arange(batch, dtype=torch.float64) / batch) % 1.0
    m = (u * length).long().clamp(max=length - 1) + 1  # (B,)
    ranks = torch.rand(batch, length, generator=generator).argsort(dim=1).argsort(dim=1)  # (B, L) a random permutation
    return m, ranks < m[:, None]


def harmonic_noise(batch: int, length: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Counts m (B,) with P(m) = (1/m) / H_L on 1..L (stratified over the batch) and masks with m positions masked.

    With this law the NELBO estimate (L/m) sum_i nll_i / (L P(m)) = H_L sum_i nll_i has the same
    weight H_L = 1 + 1/2 + ... + 1/L for every sequence (``mdm_loss_harmonic``): no large L/m factor
    on the sequences with few masked positions, which are drawn more often instead.
    """
    u = (torch.rand(1, generator=generator, dtype=torch.float64) + torch.arange(batch, dtype=torch.float64) / batch) % 1.0
    cdf = torch.cumsum(1.0 / torch.arange(1, length + 1, dtype=torch.float64), 0)
    m = torch.searchsorted(cdf / cdf[-1], u, right=True).clamp(max=length - 1) + 1  # (B,) inverse CDF
    ranks = torch.rand(batch, length, generator=generator).argsort(dim=1).argsort(dim=1)  # (B, L)
    return m, ranks < m[:, None]


def _cfg(model: nn.Module) -> ModelConfig:
    return model.module.cfg if hasattr(model, "module") else model.cfg


def masked_nll(model: nn.Module, x0: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """-log p_theta(x0_i | x_t) at the masked positions of x_t = x0 with ``mask`` applied, 0 elsewhere; (B, L)."""
    V = _cfg(model).vocab_size
    xt = torch.where(mask, torch.full_like(x0, V), x0)  # (B, L)
    logp = F.log_softmax(model(xt), dim=-1)  # (B, L, V)
    return -logp.gather(-1, x0.unsqueeze(-1)).squeeze(-1) * mask  # (B, L)


def mdm_loss(model: nn.Module, x0: torch.Tensor, t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-sequence ELBO term (1/t) sum_{i masked} -log p_theta(x0_i | x_t), nats, shape (B,).

    Revealed positions contribute nothing under SUBS (carry-over gives them probability 1).
    """
    return masked_nll(model, x0, mask).sum(dim=1) / t  # (B,)


def mdm_loss_count(model: nn.Module, x0: torch.Tensor, m: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-sequence NELBO estimate (L/m) sum_{i masked} -log p_theta(x0_i | x_{-M}), nats, shape (B,) (``count_noise``)."""
    return masked_nll(model, x0, mask).sum(dim=1) * (x0.shape[1] / m)  # (B,)


def mdm_loss_harmonic(model: nn.Module, x0: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-sequence NELBO estimate H_L sum_{i masked} -log p_theta(x0_i | x_{-M}), nats, shape (B,) (``harmonic_noise``)."""
    L = x0.shape[1]
    return masked_nll(model, x0, mask).sum(dim=1) * float(sum(1.0 / k for k in range(1, L + 1)))  # (B,)


# ----------------------------------------------------------------------------- AR

def ar_input(x0: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(B, L) tokens -> (B, L) inputs (BOS, x_1, ..., x_{L-1})."""
    bos = torch.full_like(x0[:, :1], vocab_size)
    return torch.cat([bos, x0[:, :-1]], dim=1)


def ar_loss(model: nn.Module, x0: torch.Tensor) -> torch.Tensor:
    """Per-sequence next-token cross entropy -log p_theta(x0) in nats, shape (B,)."""
    V = _cfg(model).vocab_size
    logp = F.log_softmax(model(ar_input(x0, V)), dim=-1)  # (B, L, V)
    return -logp.gather(-1, x0.unsqueeze(-1)).squeeze(-1).sum(dim=1)  # (B,)


def autocast(device: torch.device | str):
    """bf16 autocast on CUDA, a no-op context elsewhere."""
    if torch.device(device).type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
