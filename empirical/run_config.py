"""The settings of a training run and what a checkpoint's check needs of them, without the training loop.

:class:`TrainConfig` (everything a run is a function of, saved whole in every checkpoint),
:data:`FORMAT` (the checkpoint layout) and :func:`parameter_groups` (the optimizer's groups) live
here so that :mod:`.checkpoint` can check a checkpoint's structure against them while
:mod:`.train` reads checkpoints through :mod:`.checkpoint` (no import cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from mdmt.constructions.languages.spec import canonical_spec
from mdmt.runtime.validation import positive_int

from .model import ModelConfig, Transformer
from .recipes import ESTIMATORS

FORMAT = 2  # checkpoint layout


def parameter_groups(model: Transformer, table_lr: float) -> list[dict]:
    """The optimizer's parameter groups: the n-gram layer's table (if any) at ``table_lr`` times the learning rate.

    Adam moves a parameter by at most about the learning rate per step, and a table logit has to travel
    several nats (a peaked conditional law), where the weights of the network move by hundredths; a
    table on the network's step size would need far more steps than the network (docs/empirical.md).
    """
    table, rest = [], []
    for name, p in model.named_parameters():
        (table if name.startswith("ngram.") else rest).append(p)
    return [{"params": rest, "lr_scale": 1.0}] + ([{"params": table, "lr_scale": table_lr}] if table else [])


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run is a function of; saved whole in every checkpoint.

    ``language`` is a language SPEC (``preset:2gram-ter:0``, ``interval:4``, a file); it may be
    None when :func:`train` is given a language object, whose digest then identifies it.
    ``estimator``: ``count`` or ``time`` (module docstring).  ``eval_every`` None means every
    ``train_steps // 10`` steps; ``ckpt_every`` None means every ``train_steps // 20`` steps
    (and at the end).  ``val_size`` sequences are drawn for validation (a stored data set brings
    its own), each scored with ``val_draws`` mask draws at the end (the evaluations on the way look at the
    first 256 sequences with at most 2 draws).  ``restarts``: the steps at which an
    extension of a finished run started a new learning-rate cycle (set by :func:`train`).
    """

    model: ModelConfig
    language: str | None = None
    train_steps: int = 200
    batch: int = 32
    lr: float = 3e-4
    seed: int = 0
    estimator: str = "count"
    t_min: float = 1e-3
    warmup_frac: float = 0.1
    grad_clip: float = 1.0
    eval_every: int | None = None
    val_size: int = 256
    val_draws: int = 8
    ckpt_every: int | None = None
    restarts: tuple = ()
    table_lr: float = 1.0  # the n-gram layer's table steps at table_lr * lr (ModelConfig.ngram)

    def __post_init__(self):
        if not isinstance(self.model, ModelConfig):
            raise ValueError(f"TrainConfig.model must be a ModelConfig, got {type(self.model).__name__}")
        if self.language is not None:
            object.__setattr__(self, "language", canonical_spec(self.language))
        for name in ("train_steps", "batch", "val_size", "val_draws"):
            positive_int(f"TrainConfig.{name}", getattr(self, name))
        positive_int("TrainConfig.seed", self.seed, minimum=0)
        for name in ("eval_every", "ckpt_every"):
            if getattr(self, name) is not None:
                positive_int(f"TrainConfig.{name}", getattr(self, name))
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"TrainConfig.estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        checks = {"lr": (self.lr, lambda v: v > 0, "a positive finite number"),
                  "t_min": (self.t_min, lambda v: 0 < v < 1, "in (0, 1)"),
                  "warmup_frac": (self.warmup_frac, lambda v: 0 <= v <= 1, "in [0, 1]"),
                  "grad_clip": (self.grad_clip, lambda v: v >= 0, "a finite number >= 0"),
                  "table_lr": (self.table_lr, lambda v: v > 0, "a positive finite number")}
        for name, (v, ok, what) in checks.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not ok(v):
                raise ValueError(f"TrainConfig.{name} must be {what}, got {v!r}")
        restarts = tuple(self.restarts)
        for r in restarts:
            positive_int("TrainConfig.restarts entry", r)
        if list(restarts) != sorted(set(restarts)) or (restarts and restarts[-1] >= self.train_steps):
            raise ValueError(f"TrainConfig.restarts must increase strictly and stay below train_steps = "
                             f"{self.train_steps}, got {restarts}")
        object.__setattr__(self, "restarts", restarts)

    @property
    def checkpoint_every(self) -> int:
        return self.ckpt_every or max(1, self.train_steps // 20)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["model"] = self.model.to_dict()
        d["restarts"] = list(self.restarts)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        d = dict(d)
        d["model"] = ModelConfig(**d["model"])
        d["restarts"] = tuple(d.get("restarts", ()))
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown training settings {', '.join(unknown)}")
        return cls(**d)

    def with_(self, **changes) -> "TrainConfig":
        return replace(self, **changes)
