"""Training an MDM or its AR baseline on sequences drawn from a language (Section 5.1, Appendix E.2).

Configuration.  One :class:`TrainConfig` (architecture, language SPEC, steps, batch, learning rate,
seed, ...) says what a run is a function of; it is saved whole in every checkpoint (as nanoGPT
saves its config), and a resume with another configuration is refused, naming the fields that
differ.

Objective.  The MDM minimizes the continuous-time ELBO of :func:`mdmt.empirical.model.mdm_loss`
for the linear (log-linear) schedule alpha(t) = 1 - t: per sequence t ~ U(t_min, 1) (stratified
over the batch), every token masked with probability t, loss (1/t) * sum over the masked
positions of the cross entropy, divided by L.  The AR model minimizes the next-token cross
entropy per token.  Both are in nats per token.

Validation.  A fixed validation set (drawn from the seed) gives the per-token NLL -- the NELBO
for the MDM (an upper bound on -ln p_theta(x)/L), the exact NLL for the AR model -- which is
compared with the language's entropy rate H(X_1..X_L)/L, the least any model can reach
(:func:`mdmt.empirical.metrics.entropy_rate`: exact for an n-gram, Monte Carlo otherwise).

Optimizer.  AdamW (betas 0.9, 0.999, weight decay 0), linear warm-up over the first 10% of the
steps then cosine decay to 0, gradient-norm clipping at 1.

Determinism and resume.  Every random draw is a function of (seed, step): the training batch of
step s is ``language.sample`` with a generator seeded by (seed, 1, s) (or, with a stored data
set, the rows :func:`data_rows_at` picks), its masking noise comes
from a torch generator seeded by (seed, 2, s), and the initialization from (seed, 0).  The
checkpoint stores model, optimizer, scheduler, step, history and the torch/NumPy RNG states, so
k steps in one go equal j steps, a resume, and k - j more (bit for bit on CPU).

Data parallel.  Launched by ``torchrun`` (``WORLD_SIZE`` > 1 in the environment) the same call
trains with DistributedDataParallel: every rank draws the full batch of step s from (seed, s)
and keeps its rows ``rank::world_size`` (so ``batch`` must be a multiple of the world size); the
averaged gradient is the gradient of the full batch, the logged loss is averaged over the ranks,
and rank 0 alone writes the checkpoint.  The result is the single-process run up to the order of
floating-point additions.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path

import numpy as np
import torch

from mdmt.constructions.languages.io import language_digest
from mdmt.constructions.languages.spec import canonical_spec, language_from_spec
from mdmt.constructions.validation import positive_int, token_array

from .model import ModelConfig, Transformer, ar_loss, autocast, diffusion_noise, mdm_loss


def seed_of(*parts: int) -> int:
    """A 63-bit seed mixed from integers (independent streams for (seed, purpose, index))."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1)


def cosine_with_warmup(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor: linear warm-up to 1 over ``warmup`` steps, then cosine decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class _Dist:
    """Rank and world size of a torchrun launch (1 process otherwise); sets up the process group once."""

    def __init__(self, device):
        import torch.distributed as dist

        self.dist = dist
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.on = self.world > 1
        if device is not None:
            self.device = torch.device(device)
        elif torch.cuda.is_available():
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) if self.on else 0)
        else:
            self.device = torch.device("cpu")
        if self.on and not dist.is_initialized():
            if self.device.type == "cuda":
                torch.cuda.set_device(self.device)
            dist.init_process_group(backend="nccl" if self.device.type == "cuda" else "gloo")

    def shard(self, t: torch.Tensor) -> torch.Tensor:
        """This rank's rows of a full-batch tensor."""
        return t[self.rank::self.world] if self.on else t

    def mean(self, value: torch.Tensor) -> float:
        """The average of a scalar over the ranks."""
        if self.on:
            value = value.detach().clone()
            self.dist.all_reduce(value)
            value /= self.world
        return float(value)

    def barrier(self) -> None:
        if self.on:
            self.dist.barrier()


def batch_at(language, seed: int, step: int, batch: int, L: int) -> np.ndarray:
    """The training sequences of a step: int64 (batch, L), a function of (seed, step) only."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1, int(step)]))
    return np.asarray(language.sample(batch, L, rng), dtype=np.int64)


def data_rows_at(n: int, seed: int, step: int, batch: int) -> np.ndarray:
    """Rows of a stored training set used at a step: epochs of seeded permutations, read in order.

    Step s reads positions s*batch ... (s+1)*batch - 1 of the concatenation of the permutations
    of range(n) seeded by (seed, 4, epoch), so every epoch visits every row once and the rows of
    a step depend on (n, seed, step) only (which keeps resume exact).
    """
    idx = int(step) * batch + np.arange(batch)
    epochs = idx // n
    rows = np.empty(batch, dtype=np.int64)
    for e in np.unique(epochs):
        perm = np.random.default_rng(np.random.SeedSequence([int(seed), 4, int(e)])).permutation(n)
        sel = epochs == e
        rows[sel] = perm[idx[sel] % n]
    return rows


def _check_data(data, V: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """A (train, val) pair of stored sequences, validated against the model's vocabulary and L."""
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise ValueError("data must be a (train, val) pair of token arrays")
    out = []
    for name, arr in zip(("training", "validation"), data):
        arr = token_array(arr, V, allow_mask=False, name=f"{name} sequence")
        if arr.shape[0] < 1:
            raise ValueError(f"the {name} set is empty")
        if arr.shape[1] != L:
            raise ValueError(f"the {name} set has sequences of length {arr.shape[1]} but the model's seq_len is {L}")
        out.append(arr)
    return out[0], out[1]


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run is a function of; saved whole in every checkpoint.

    ``language`` is a language SPEC (``preset:2gram-ter:0``, ``interval:4``, a file); it may be
    None when :func:`train` is given a language object, whose digest then identifies it.
    ``eval_every`` None means every ``train_steps // 10`` steps; ``ckpt_every`` None means at the
    end only.  ``val_size`` sequences are drawn for validation (a stored data set brings its own).
    """

    model: ModelConfig
    language: str | None = None
    train_steps: int = 200
    batch: int = 32
    lr: float = 3e-4
    seed: int = 0
    t_min: float = 1e-3
    warmup_frac: float = 0.1
    grad_clip: float = 1.0
    eval_every: int | None = None
    val_size: int = 256
    ckpt_every: int | None = None

    def __post_init__(self):
        if not isinstance(self.model, ModelConfig):
            raise ValueError(f"TrainConfig.model must be a ModelConfig, got {type(self.model).__name__}")
        if self.language is not None:
            object.__setattr__(self, "language", canonical_spec(self.language))
        for name in ("train_steps", "batch", "val_size"):
            positive_int(f"TrainConfig.{name}", getattr(self, name))
        positive_int("TrainConfig.seed", self.seed, minimum=0)
        for name in ("eval_every", "ckpt_every"):
            if getattr(self, name) is not None:
                positive_int(f"TrainConfig.{name}", getattr(self, name))
        checks = {"lr": (self.lr, lambda v: v > 0, "a positive finite number"),
                  "t_min": (self.t_min, lambda v: 0 < v < 1, "in (0, 1)"),
                  "warmup_frac": (self.warmup_frac, lambda v: 0 <= v <= 1, "in [0, 1]"),
                  "grad_clip": (self.grad_clip, lambda v: v >= 0, "a finite number >= 0")}
        for name, (v, ok, what) in checks.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not ok(v):
                raise ValueError(f"TrainConfig.{name} must be {what}, got {v!r}")

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["model"] = self.model.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        d = dict(d)
        d["model"] = ModelConfig(**d["model"])
        return cls(**d)

    def with_(self, **changes) -> "TrainConfig":
        return replace(self, **changes)


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Names of the entries that differ between two (nested) settings dicts."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(prefix + k)
    return out


@dataclass
class TrainResult:
    model: Transformer
    step: int  # optimizer steps done
    losses: list = field(default_factory=list)  # training loss (nats/token) of every step done
    history: list = field(default_factory=list)  # validation records {"step", "val_nll", "entropy_rate", "gap"}
    val_nll: float = math.nan  # final validation NLL per token
    entropy_rate: float = math.nan
    seconds: float = 0.0
    checkpoint: str | None = None
    rank: int = 0  # this process's rank under torchrun (0 in a single process)
    config: TrainConfig | None = None

    def summary(self) -> dict:
        return {"config": None if self.config is None else self.config.to_dict(),
                "step": self.step, "val_nll": self.val_nll, "entropy_rate": self.entropy_rate,
                "gap": self.val_nll - self.entropy_rate, "final_train_loss": self.losses[-1] if self.losses else None,
                "parameters": self.model.num_parameters(), "seconds": self.seconds, "checkpoint": self.checkpoint,
                "history": self.history}


@torch.no_grad()
def validation_nll(model: Transformer, val: torch.Tensor, seed: int, t_min: float, batch: int = 256) -> float:
    """Per-token validation NLL in nats (the NELBO for an MDM, with noise fixed by the seed)."""
    n, L = val.shape
    device = next(model.parameters()).device
    t, mask = diffusion_noise(n, L, torch.Generator().manual_seed(seed_of(seed, 4)), t_min)
    was = model.training
    model.eval()
    total = 0.0
    for s in range(0, n, batch):
        xb = val[s:s + batch].to(device)
        with autocast(device):
            if model.cfg.causal:
                loss = ar_loss(model, xb)
            else:
                loss = mdm_loss(model, xb, t[s:s + batch].to(device), mask[s:s + batch].to(device))
        total += float(loss.double().sum())
    model.train(was)
    return total / (n * L)


def load_model(path: str | os.PathLike, device="cpu") -> Transformer:
    """The trained network stored in a checkpoint written by :func:`train`."""
    state = torch.load(path, map_location=device, weights_only=False)
    model = Transformer(TrainConfig.from_dict(state["config"]).model).to(device)
    model.load_state_dict(state["model"])
    return model.eval()


def train(cfg: TrainConfig, language=None, *, data: tuple | None = None, ckpt_path: str | os.PathLike | None = None,
          resume: bool = False, stop_at: int | None = None, device=None, progress: bool = True) -> TrainResult:
    """Train (or resume) the MDM (``cfg.model.causal`` False) or AR model of ``cfg``.

    ``language``: the language object (default: built from ``cfg.language``).  ``data``: a stored
    (train, val) pair (:mod:`mdmt.empirical.data`) to train on instead of fresh draws from the
    language: batches are read by :func:`data_rows_at` and ``val`` is the validation set
    (``cfg.val_size`` is then unused).  The language still gives the entropy rate.

    ``ckpt_path``: checkpoint written every ``cfg.ckpt_every`` steps, at the end, and when stopping
    at ``stop_at`` (a step count; the learning-rate schedule still runs to ``cfg.train_steps``).
    ``resume``: continue from ``ckpt_path`` if it exists (ValueError if it was made with another
    configuration, language or data set).
    """
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"train needs a TrainConfig, got {type(cfg).__name__}")
    if language is None:
        if cfg.language is None:
            raise ValueError("give a language object or a TrainConfig with a language SPEC")
        language = language_from_spec(cfg.language)
    model_cfg = cfg.model
    steps, batch, lr, seed, t_min = cfg.train_steps, cfg.batch, cfg.lr, cfg.seed, cfg.t_min
    if language.n_symbols != model_cfg.vocab_size:
        raise ValueError(f"the language has V = {language.n_symbols} tokens but the model's vocab_size is {model_cfg.vocab_size}")
    ddp = _Dist(device)
    device = ddp.device
    if batch % ddp.world:
        raise ValueError(f"batch = {batch} is not a multiple of the world size {ddp.world}")
    L = model_cfg.seq_len
    eval_every = cfg.eval_every or max(1, steps // 10)
    settings = {"config": cfg.to_dict(), "language_digest": language_digest(language)}
    if data is not None:
        from .data import digest

        data = _check_data(data, model_cfg.vocab_size, L)
        settings["data_sha256"] = [digest(a) for a in data]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_of(seed, 0))
        model = Transformer(model_cfg)
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), weight_decay=0.0)
    warmup = int(round(cfg.warmup_frac * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, partial(cosine_with_warmup, total=steps, warmup=warmup))
    step, losses, history = 0, [], []
    ckpt = Path(ckpt_path) if ckpt_path is not None else None
    if resume and ckpt is not None and ckpt.exists():
        st = torch.load(ckpt, map_location="cpu", weights_only=False)  # RNG states must stay CPU tensors
        if st["settings"] != settings:
            diff = _differences(st["settings"], settings)
            raise ValueError(f"checkpoint {ckpt} was made with other settings ({', '.join(diff)} differ); "
                             "use another path or resume=False")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        sched.load_state_dict(st["scheduler"])
        step, losses, history = st["step"], st["losses"], st["history"]
        torch.set_rng_state(st["rng"]["torch"].cpu())
        np.random.set_state(st["rng"]["numpy"])

    net = model
    if ddp.on:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    def save():
        if ckpt is None or ddp.rank != 0:
            ddp.barrier()
            return
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                 "step": step, "losses": losses, "history": history, "settings": settings,
                 "config": cfg.to_dict(),
                 "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state()}}
        tmp = ckpt.with_name(ckpt.name + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, ckpt)
        ddp.barrier()

    from .metrics import entropy_rate

    H = entropy_rate(language, L, seed=seed_of(seed, 5) % (2**32))["value"]
    if data is None:
        val_rng = np.random.default_rng(np.random.SeedSequence([int(seed), 3]))
        val = torch.as_tensor(np.asarray(language.sample(cfg.val_size, L, val_rng), dtype=np.int64))
    else:
        val = torch.as_tensor(data[1])

    bar = None
    if progress and ddp.rank == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=step, desc=f"train {'AR' if model_cfg.causal else 'MDM'}", dynamic_ncols=True, leave=False)
    t0 = time.perf_counter()
    model.train()
    end = steps if stop_at is None else min(steps, int(stop_at))
    while step < end:
        xb = (batch_at(language, seed, step, batch, L) if data is None
              else data[0][data_rows_at(len(data[0]), seed, step, batch)])
        xb = ddp.shard(torch.as_tensor(xb)).to(device)  # (B / world, L)
        with autocast(device):
            if model_cfg.causal:
                loss = ar_loss(net, xb).mean() / L
            else:
                t, mask = diffusion_noise(batch, L, torch.Generator().manual_seed(seed_of(seed, 2, step)), t_min)
                loss = mdm_loss(net, xb, ddp.shard(t).to(device), ddp.shard(mask).to(device)).mean() / L
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        step += 1
        losses.append(ddp.mean(loss.detach()))
        if step % eval_every == 0 or step == steps:
            v = validation_nll(model, val, seed, t_min)
            history.append({"step": step, "train_loss": losses[-1], "val_nll": v, "entropy_rate": H, "gap": v - H,
                            "lr": sched.get_last_lr()[0]})
            if bar is not None:
                bar.set_postfix(loss=f"{losses[-1]:.4f}", val=f"{v:.4f}", H=f"{H:.4f}")
        if bar is not None:
            bar.update(1)
        if cfg.ckpt_every and step % cfg.ckpt_every == 0 and step < end:
            save()
    if bar is not None:
        bar.close()
    v = history[-1]["val_nll"] if history and history[-1]["step"] == step else validation_nll(model, val, seed, t_min)
    save()
    model.eval()
    return TrainResult(model=model, step=step, losses=losses, history=history, val_nll=v, entropy_rate=H,
                       seconds=time.perf_counter() - t0, checkpoint=None if ckpt is None else str(ckpt),
                       rank=ddp.rank, config=cfg)
