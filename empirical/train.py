"""Training an MDM or its AR baseline on sequences drawn from a language (Section 5.1, Appendix E.2).

Configuration.  One :class:`TrainConfig` (architecture, language SPEC, steps, batch, learning rate,
seed, ...) says what a run is a function of; it is saved whole in every checkpoint (as nanoGPT
saves its config), and a resume with another configuration is refused, naming the fields that
differ.  The language SPEC and the digest of the language's parameters are part of the checked
settings, so a checkpoint of one language never continues on another.

Objective.  The MDM minimizes the continuous-time NELBO of :mod:`mdmt.empirical.model` for the
linear schedule alpha(t) = 1 - t.  ``estimator="count"`` (the default) draws the number of masked
positions m uniformly on 1..L (stratified over the batch), masks m random positions and weights
the masked cross entropies by L/m; ``estimator="time"`` is MDLM's: t ~ U(t_min, 1) (stratified),
Bernoulli(t) masks, weight 1/t; ``estimator="harmonic"`` draws m with probability proportional to
1/m and weights every sequence by H_L = 1 + 1/2 + ... + 1/L.  All three are unbiased estimates of
the same NELBO (the model docstring derives it; tests/test_estimators.py checks it by enumeration);
docs/empirical.md measures how fast each learns.  The AR
model minimizes the next-token cross entropy.  Losses are in nats per token.

Validation.  A fixed validation set (drawn from the seed) is scored per sequence -- the NELBO for
the MDM (``val_draws`` mask draws per sequence, their counts m stratified over 1..L), the exact
NLL for the AR model -- and paired with the exact -ln q(x)/L of the *same* sequences: the mean of
the per-sequence differences with its Student-t interval (``val_gap``, ``val_gap_ci``) is the
model's excess over the language, free of the sampling noise of the validation set.  (For the
oracle denoiser the NELBO equals -ln q(x) for every x, so the MDM's gap estimates the average
per-token KL of its denoiser over random masks.)  The entropy rate H(X_1..X_L)/L
(:func:`mdmt.empirical.metrics.entropy_rate`) is reported beside it.

Optimizer.  AdamW (betas 0.9, 0.999, weight decay 0), linear warm-up over the first
``warmup_frac`` of the steps then cosine decay to 0, gradient-norm clipping at ``grad_clip``.
A finished run can be extended to more steps (``resume=True`` with a larger ``train_steps``):
the added steps form a new warm-up + cosine cycle from the peak learning rate, and the step at
which it starts is recorded in ``TrainConfig.restarts``.

Determinism and resume.  Every random draw is a function of (seed, step): the training batch of
step s is ``language.sample`` with a generator seeded by (seed, 1, s) (or, with a stored data
set, the rows :func:`data_rows_at` picks), its masking noise comes from a torch generator seeded
by (seed, 2, s), and the initialization from (seed, 0).  The checkpoint
(:mod:`mdmt.empirical.checkpoint`: atomic, digest-checked, plain tensors) stores model,
optimizer, step, history and the torch RNG state, so k steps in one go equal j steps, a resume,
and k - j more (bit for bit on CPU).  Checkpoints are written every ``ckpt_every`` steps, at the
end, and when SIGINT or SIGTERM arrives (then :class:`TrainingInterrupted` is raised).  A
non-finite loss, gradient or parameter stops training with :class:`TrainingDiverged` and keeps
the last good checkpoint.  ``cpu_seconds`` (user + system time of the process, summed over
resumes; validation excluded) measures the cost of a run on a shared machine better than wall time.

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
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdmt.constructions.reverse.confidence import mean_interval
from mdmt.runtime.resources import check_memory
from mdmt.constructions.languages.io import language_digest
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.runtime.validation import seed_of, token_array
from mdmt.constructions.types import Language

from ._torch import torch
from .checkpoint import check_writable, read_checkpoint, save_checkpoint
from .device import torch_device
from .model import (ModelConfig, Transformer, ar_loss, autocast, count_noise, diffusion_noise, estimated_bytes,
                    harmonic_noise, mdm_loss, mdm_loss_count, mdm_loss_harmonic)
from .recipes import ESTIMATORS, RECIPES  # noqa: F401  (the recipes, defined once as plain data)
from .run_config import FORMAT, TrainConfig, parameter_groups  # noqa: F401  (defined there, used and exported here)

QUICK_VAL = 256  # validation sequences of the evaluations during training (the final one takes them all)




class TrainingDiverged(ValueError):
    """A non-finite loss, gradient or parameter: training stopped, the last good checkpoint is kept."""


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the checkpoint of the last finished step was written."""


def cosine_with_warmup(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor: linear warm-up to 1 over ``warmup`` steps, then cosine decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))


def lr_factor(step: int, total: int, warmup_frac: float, restarts=()) -> float:
    """The learning-rate factor at ``step``: one warm-up + cosine cycle per segment between restarts."""
    bounds = (0, *restarts, total)
    k = max(i for i in range(len(bounds) - 1) if bounds[i] <= step) if step < total else len(bounds) - 2
    a, b = bounds[k], bounds[k + 1]
    return cosine_with_warmup(step - a, b - a, int(round(warmup_frac * (b - a))))


class _Dist:
    """Rank and world size of a torchrun launch (1 process otherwise); sets up the process group once."""

    def __init__(self, device):
        import torch.distributed as dist

        self.dist = dist
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.on = self.world > 1
        if device is not None:
            self.device = torch_device(device)
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
    return np.asarray(language.sample_sequences(batch, L, rng), dtype=np.int64)


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


def resumed_config(old: TrainConfig, old_step: int, new: TrainConfig) -> TrainConfig:
    """The configuration a resume continues with: ``new``, with the restarts of ``old`` (plus one when extending).

    A finished run (``old_step == old.train_steps``) asked for more steps is extended by a new
    cycle starting at ``old.train_steps``; a run stopped early must first be finished with its
    own number of steps.
    """
    if new.train_steps < old.train_steps:
        raise ValueError(f"the checkpoint was trained for {old.train_steps} steps; train_steps = {new.train_steps} "
                         "cannot shorten it")
    cfg = new if new.restarts else new.with_(restarts=old.restarts)
    if new.train_steps == old.train_steps:
        return cfg
    if new.train_steps > old.train_steps and old_step == old.train_steps:
        return cfg.with_(restarts=old.restarts + (old.train_steps,))
    raise ValueError(f"the run stopped at step {old_step} of {old.train_steps}; finish it with train_steps = "
                     f"{old.train_steps} before extending it to {new.train_steps}")


@dataclass
class TrainResult:
    model: Transformer
    step: int  # optimizer steps done
    losses: list = field(default_factory=list)  # training loss (nats/token) of every step done
    history: list = field(default_factory=list)  # validation records (see ``_evaluate``)
    val_nll: float = math.nan  # final validation NLL per token (the NELBO for an MDM)
    val_exact_nll: float = math.nan  # mean exact -ln q(x)/L of the same validation sequences
    val_gap: float = math.nan  # paired mean of (model NLL - exact -ln q(x)) / L
    val_gap_ci: tuple = (math.nan, math.nan)
    entropy_rate: float = math.nan
    seconds: float = 0.0  # wall time of this call
    cpu_seconds: float = 0.0  # user + system CPU time of training, summed over resumes
    checkpoint: str | None = None
    rank: int = 0  # this process's rank under torchrun (0 in a single process)
    config: TrainConfig | None = None

    def summary(self) -> dict:
        return {"config": None if self.config is None else self.config.to_dict(),
                "step": self.step, "val_nll": self.val_nll, "val_exact_nll": self.val_exact_nll,
                "val_gap": self.val_gap, "val_gap_ci": list(self.val_gap_ci), "entropy_rate": self.entropy_rate,
                "final_train_loss": self.losses[-1] if self.losses else None,
                "parameters": self.model.num_parameters(), "seconds": self.seconds, "cpu_seconds": self.cpu_seconds,
                "torch_threads": torch.get_num_threads(), "checkpoint": self.checkpoint, "history": self.history}


@torch.no_grad()
def sequence_nll(model: Transformer, val: torch.Tensor, seed: int, draws: int = 8, batch: int = 256) -> np.ndarray:
    """Per-sequence validation NLL per token, float64 (n,): exact for an AR model, the NELBO estimate for an MDM.

    For an MDM every sequence gets ``draws`` mask draws (:func:`mdmt.empirical.model.count_noise`)
    whose counts are stratified over 1..L; the masks are fixed by ``seed``.
    """
    n, L = val.shape
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    out = np.zeros(n)
    gen = torch.Generator().manual_seed(seed_of(seed, 4))
    u0 = torch.rand(n, generator=gen, dtype=torch.float64)
    for k in range(1 if model.cfg.causal else draws):
        if not model.cfg.causal:
            m, mask = count_noise(n, L, gen, u=(u0 + k) / draws)
        for s in range(0, n, batch):
            xb = val[s:s + batch].to(device)
            with autocast(device):
                if model.cfg.causal:
                    loss = ar_loss(model, xb)
                else:
                    loss = mdm_loss_count(model, xb, m[s:s + batch].to(device), mask[s:s + batch].to(device))
            out[s:s + batch] += loss.double().cpu().numpy()
    model.train(was)
    return out / (L * (1 if model.cfg.causal else draws))


def paired_gap(model_nll: np.ndarray, exact_nll: np.ndarray, level: float = 0.95) -> dict:
    """Mean of model NLL minus exact -ln q(x) over the same sequences (per token), with its Student-t interval."""
    m, lo, hi = mean_interval(np.asarray(model_nll) - np.asarray(exact_nll), level)
    return {"gap": m, "ci": [lo, hi], "model_nll": float(np.mean(model_nll)), "exact_nll": float(np.mean(exact_nll)),
            "num": int(len(model_nll))}


def load_model(path: str | os.PathLike, device: str | torch.device = "cpu") -> Transformer:
    """The trained network stored in a checkpoint written by :func:`train` (digest checked, weights only).

    The checkpoint's structure is checked before the network is built
    (:func:`mdmt.empirical.checkpoint.read_checkpoint`): any problem is a ValueError with one line.
    """
    return load_run(path, device)[0]


def load_run(path: str | os.PathLike, device: str | torch.device = "cpu") -> tuple[Transformer, TrainConfig, dict]:
    """(model, configuration, checkpoint state) of a checkpoint written by :func:`train`, checked as by
    :func:`load_model`; the model is built on ``device``."""
    state, cfg = read_checkpoint(path)
    model = Transformer(cfg.model).to(device)
    model.load_state_dict(state["model"])
    return model.eval(), cfg, state


def _finite(model: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


class _Signals:
    """SIGINT/SIGTERM set a flag (checked after every step) instead of killing the run mid-write."""

    def __init__(self):
        self.caught: int | None = None
        self.old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.caught = signum

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


def train(cfg: TrainConfig, language: Language | None = None, *, data: tuple | None = None, ckpt_path: str | os.PathLike | None = None,
          resume: bool = False, stop_at: int | None = None, device: str | torch.device | None = None,
          progress: bool = True) -> TrainResult:
    """Train (or resume, or extend) the MDM (``cfg.model.causal`` False) or AR model of ``cfg``.

    ``language``: the language object (default: built from ``cfg.language``).  ``data``: a stored
    (train, val) pair (:mod:`mdmt.empirical.data`) to train on instead of fresh draws from the
    language: batches are read by :func:`data_rows_at` and ``val`` is the validation set
    (``cfg.val_size`` is then unused).  The language still scores the validation set.

    ``ckpt_path``: checkpoint written every ``cfg.checkpoint_every`` steps, at the end, on SIGINT
    or SIGTERM, and when stopping at ``stop_at`` (a step count; the learning-rate schedule still
    runs to ``cfg.train_steps``).  Its folder is checked for writing before training starts.
    Without ``resume`` an existing checkpoint is not overwritten (ValueError).  ``resume``:
    continue from ``ckpt_path`` if it exists (ValueError if it was made with another
    configuration, language or data set); a finished run asked for more ``train_steps`` is
    extended (module docstring).
    """
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"train needs a TrainConfig, got {type(cfg).__name__}")
    if language is None:
        if cfg.language is None:
            raise ValueError("give a language object or a TrainConfig with a language SPEC")
        language = language_from_spec(cfg.language)
    if language.n_symbols != cfg.model.vocab_size:
        raise ValueError(f"the language has V = {language.n_symbols} tokens but the model's vocab_size is "
                         f"{cfg.model.vocab_size}")
    check_memory(f"training the network (L = {cfg.model.seq_len}, V = {cfg.model.vocab_size}, d = {cfg.model.d_model}) "
                 f"with batch {cfg.batch}", estimated_bytes(cfg.model, cfg.batch),
                 "use a smaller length, batch or model")
    ddp = _Dist(device)
    device = ddp.device
    if cfg.batch % ddp.world:
        raise ValueError(f"batch = {cfg.batch} is not a multiple of the world size {ddp.world}")
    L = cfg.model.seq_len
    data_digests = None
    if data is not None:
        from .data import digest

        data = _check_data(data, cfg.model.vocab_size, L)
        data_digests = [digest(a) for a in data]
    ckpt = Path(ckpt_path) if ckpt_path is not None else None
    state = None
    if ckpt is not None:
        if ddp.rank == 0:
            check_writable(ckpt.parent, "checkpoint folder")
        if ckpt.exists():
            if not resume:
                raise ValueError(f"{ckpt} already holds a checkpoint; resume it, or choose another path")
            state, saved = read_checkpoint(ckpt, resume=True)  # digest, format and structure checked
            cfg = resumed_config(saved, state["step"], cfg)

    def settings_of(c: TrainConfig) -> dict:
        s = {"config": c.to_dict(), "language_digest": language_digest(language)}
        if data_digests is not None:
            s["data_sha256"] = data_digests
        return s

    settings = settings_of(cfg)
    if state is not None:
        expected = dict(state["settings"], config=dict(state["settings"]["config"], train_steps=cfg.train_steps,
                                                        restarts=list(cfg.restarts)))
        if expected != settings:
            diff = _differences(expected, settings)
            raise ValueError(f"checkpoint {ckpt} was made with other settings ({', '.join(diff)} differ); "
                             "use another path or start afresh")

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_of(cfg.seed, 0))
        model = Transformer(cfg.model)
    model = model.to(device)
    groups = parameter_groups(model, cfg.table_lr)
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.999), weight_decay=0.0, foreach=True)
    step, losses, history, cpu_before = 0, [], [], 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])  # takes the saved groups' settings: a checkpoint older than
        for group, made in zip(opt.param_groups, groups):  # lr_scale has none, so it is set from the config
            group["lr_scale"] = made["lr_scale"]
        step, losses, history = int(state["step"]), list(state["losses"]), list(state["history"])
        cpu_before = float(state.get("cpu_seconds", 0.0))
        torch.set_rng_state(state["rng_torch"].cpu())

    net = model
    if ddp.on:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    cpu0 = None  # set when the training loop starts: setup (language tables, compilation) is not training
    eval_cpu = [0.0]  # CPU time of the validations of this call: measurement, not training

    def cpu_total() -> float:
        return cpu_before + (time.process_time() - cpu0 - eval_cpu[0] if cpu0 is not None else 0.0)

    def save():
        if ckpt is None or ddp.rank != 0:
            ddp.barrier()
            return
        if not _finite(model):
            raise TrainingDiverged(f"non-finite parameters at step {step}; not saved")
        save_checkpoint(ckpt, {"format": FORMAT, "model": model.state_dict(), "optimizer": opt.state_dict(),
                               "step": step, "losses": losses, "history": history, "settings": settings,
                               "config": cfg.to_dict(), "cpu_seconds": cpu_total(),
                               "rng_torch": torch.get_rng_state()})
        ddp.barrier()

    from .metrics import entropy_rate

    H = entropy_rate(language, L, seed=seed_of(cfg.seed, 5) % (2**32))["value"]
    if data is None:
        val_rng = np.random.default_rng(np.random.SeedSequence([int(cfg.seed), 3]))
        val_np = np.asarray(language.sample_sequences(cfg.val_size, L, val_rng), dtype=np.int64)
    else:
        val_np = data[1]
    exact = -language.log_likelihood(val_np) / L  # (n,) exact -ln q(x)/L of the validation sequences
    val = torch.as_tensor(val_np)

    def evaluate(final: bool) -> dict:
        """Paired validation gap: every sequence with ``val_draws`` draws at the end, a quick look on the way."""
        c = time.process_time()
        n, draws = (len(val), cfg.val_draws) if final else (min(len(val), QUICK_VAL), min(cfg.val_draws, 2))
        g = paired_gap(sequence_nll(model, val[:n], cfg.seed, draws), exact[:n])
        eval_cpu[0] += time.process_time() - c
        if not math.isfinite(g["model_nll"]):
            raise TrainingDiverged(f"validation NLL is {g['model_nll']} at step {step}")
        return {"step": step, "train_loss": losses[-1] if losses else None, "val_nll": g["model_nll"],
                "val_exact_nll": g["exact_nll"], "val_gap": g["gap"], "val_gap_ci": g["ci"], "val_num": n,
                "val_draws": draws, "entropy_rate": H,
                "lr": cfg.lr * lr_factor(max(step - 1, 0), cfg.train_steps, cfg.warmup_frac, cfg.restarts),
                "cpu_seconds": cpu_total()}

    steps = cfg.train_steps
    eval_every = cfg.eval_every or max(1, steps // 10)
    bar = None
    if progress and ddp.rank == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=step, desc=f"train {'AR' if cfg.model.causal else 'MDM'}", dynamic_ncols=True,
                   leave=False)
    t0, cpu0 = time.perf_counter(), time.process_time()
    model.train()
    end = steps if stop_at is None else min(steps, int(stop_at))
    last_saved = step if state is not None else None
    with _Signals() as signals:
        while step < end:
            for group in opt.param_groups:
                group["lr"] = group["lr_scale"] * cfg.lr * lr_factor(step, steps, cfg.warmup_frac, cfg.restarts)
            xb = (batch_at(language, cfg.seed, step, cfg.batch, L) if data is None
                  else data[0][data_rows_at(len(data[0]), cfg.seed, step, cfg.batch)])
            xb = ddp.shard(torch.as_tensor(xb)).to(device)  # (B / world, L)
            gen = torch.Generator().manual_seed(seed_of(cfg.seed, 2, step))
            with autocast(device):
                if cfg.model.causal:
                    loss = ar_loss(net, xb).mean() / L
                elif cfg.estimator == "count":
                    m, mask = count_noise(cfg.batch, L, gen)
                    loss = mdm_loss_count(net, xb, ddp.shard(m).to(device), ddp.shard(mask).to(device)).mean() / L
                elif cfg.estimator == "harmonic":
                    _, mask = harmonic_noise(cfg.batch, L, gen)
                    loss = mdm_loss_harmonic(net, xb, ddp.shard(mask).to(device)).mean() / L
                else:
                    t, mask = diffusion_noise(cfg.batch, L, gen, cfg.t_min)
                    loss = mdm_loss(net, xb, ddp.shard(t).to(device), ddp.shard(mask).to(device)).mean() / L
            value = ddp.mean(loss.detach())
            if not math.isfinite(value):
                raise TrainingDiverged(_diverged("training loss", value, step + 1, cfg, ckpt, last_saved))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
            if not math.isfinite(float(norm)):
                raise TrainingDiverged(_diverged("gradient norm", float(norm), step + 1, cfg, ckpt, last_saved))
            opt.step()
            step += 1
            losses.append(value)
            if step % eval_every == 0 or step == steps:
                history.append(evaluate(step == steps))
                if bar is not None:
                    h = history[-1]
                    bar.set_postfix(loss=f"{value:.4f}", val=f"{h['val_nll']:.4f}", gap=f"{h['val_gap']:+.4f}")
            if bar is not None:
                bar.update(1)
            if signals.caught is not None:
                save()
                if bar is not None:
                    bar.close()
                where = f"; checkpoint {ckpt} written, resume to continue" if ckpt is not None else ""
                raise TrainingInterrupted(f"stopped by {signal.Signals(signals.caught).name} after step {step}{where}")
            if step % cfg.checkpoint_every == 0 and step < end:
                save()
                last_saved = step
    if bar is not None:
        bar.close()
    final = history[-1] if history and history[-1]["step"] == step == steps else evaluate(True)
    save()
    model.eval()
    return TrainResult(model=model, step=step, losses=losses, history=history, val_nll=final["val_nll"],
                       val_exact_nll=final["val_exact_nll"], val_gap=final["val_gap"],
                       val_gap_ci=tuple(final["val_gap_ci"]), entropy_rate=H, seconds=time.perf_counter() - t0,
                       cpu_seconds=cpu_total(), checkpoint=None if ckpt is None else str(ckpt), rank=ddp.rank,
                       config=cfg)


def _diverged(what: str, value: float, step: int, cfg: TrainConfig, ckpt, last_saved) -> str:
    kept = (f"; the last good checkpoint (step {last_saved}) is kept in {ckpt}" if ckpt is not None and last_saved
            else "; no checkpoint was written")
    return f"{what} is {value} at step {step} (lr {cfg.lr:g}): training stopped{kept}"
