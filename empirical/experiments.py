"""Figure 1 of the paper (Section 5.2) as a resumable experiment: TER and SER of MDMs against the number of
steps N, at several lengths L.

The paper's claim is about how the curves move with L: the TER of an MDM saturates after a number
of steps that does not depend on L (Theorem 4.2), while the SER needs a number of steps that grows
with L (Theorems 4.3 and 4.4).  For every language of the sweep the experiment

1. trains an MDM and its AR twin at one length (``length``; same architecture,
   :mod:`mdmt.empirical.train`, the recipe of the architecture; the ``paper`` architecture has 10
   layers for the 4-gram, Appendix E.2), checkpointing as it goes, and records their paired
   validation gaps (model NLL minus the exact -ln q of the same sequences) and CPU time;
2. measures the MDM's learning error against the oracle denoiser (Assumption 4.1: mean with its
   interval, q90, q99, max of the per-token KL over random masks,
   :func:`mdmt.constructions.reverse.learning.learning_error`);
3. samples with the N-step sampler (Eq. 3) at every N of the sweep: from the oracle denoiser
   q(x_i | x_U) (the MDM with zero learning error; the message kernels of
   :mod:`mdmt.constructions.reverse.sampler`) at every length of ``lengths``, and from the
   trained MDM (ddpm_cache) and the AR model at the training length;
4. scores the samples under the true q: generative perplexity exp(E_p[-ln q(x)]/L) and its gap
   to the language, ln(perplexity) - H/L (the "TER gap", TER languages: the threshold-0
   presets), and the SER P_p(q(x) = 0) by exact support check (SER languages: pruned presets,
   ``hmm-sparse``, the interval counterexample), with confidence intervals.  Beside the Monte
   Carlo values it puts what is known exactly: for n-grams the Theorem 4.2 chain bound on
   KL(q || p_N)/L with the measured learning error (0 for the oracle) and, for the oracle on a TER
   language, the Monte Carlo estimate of E_tau KL(q || p_tau)/L (an upper bound on the true TER
   gap KL(q || p_N)/L, C1); for the interval HMM the exact oracle SER 1 - rho^(L/l) and the
   Theorem 4.4 lower bound;
5. reads off, per language and length, the smallest N of the sweep at which the oracle reaches
   the target (TER gap <= 0.05 nats/token; SER <= 0.1), and beside it the exact smallest N where
   a closed form exists (interval HMM: the oracle SER; n-grams: the chain bound).

State lives in one folder: ``config.json`` (the settings the numbers depend on; a rerun with
other settings is refused), ``<language>/mdm|ar/ckpt.pt`` (training checkpoints, resumed where
they stopped), ``<language>/summary.json`` and ``rows/<language>__<kind>__L<L>__N<N>.json`` (one
per point, stamped with the SHA-256 of its content and the settings, :func:`point_stamp`; a point already
there is not recomputed, so adding lengths or steps later computes only what is new, and a stored point
that is truncated, not a file, edited by hand or another run's is refused before any work, naming it).  ``figure1.csv``, ``figure1.png`` and ``figure1.json`` (rows, summaries,
targets, provenance) are rebuilt from whatever points exist, so parts computed on different
machines (the oracle curves on a CPU, the trained models on a GPU) merge by copying their
``rows``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable

import numpy as np

from mdmt.constructions.languages.spec import canonical_spec, interval_length_of, language_from_spec
from mdmt.runtime.outputs import write_csv
from mdmt.runtime.validation import positive_int, seed_of
from mdmt.results import Result

from .data import check_length

# The stored points (figure1_points.py), the cost model of the parts (figure1_cost.py) and the smallest N reaching
# the targets with the Markdown tables (figure1_targets.py), importable from here as they always were.
from .figure1_cost import (NETWORK_POINT_SECONDS as NETWORK_POINT_SECONDS, ORACLE_L as ORACLE_L,
                           ORACLE_N as ORACLE_N, ORACLE_SECONDS as ORACLE_SECONDS, ORACLE_TER as ORACLE_TER,
                           ORACLE_W as ORACLE_W, TRAIN_SECONDS as TRAIN_SECONDS, part_seconds as part_seconds,
                           recursion_work as recursion_work)
from .figure1_points import (POINT_STAMP as POINT_STAMP, _RECOMPUTE as _RECOMPUTE, _plain as _plain,
                             _read_json as _read_json, _write_json as _write_json, point_stamp as point_stamp,
                             read_point as read_point, row_path as row_path, slug as slug)
from .figure1_targets import (_bisect_steps as _bisect_steps, _f as _f, exact_smallest_steps as exact_smallest_steps,
                              markdown_tables as markdown_tables, smallest_steps as smallest_steps,
                              steps_to_target as steps_to_target)

KINDS = ("oracle", "mdm", "ar")
DEFAULT_STEPS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
DEFAULT_LENGTHS = (64, 128, 256, 512)

#: Per model preset: samples per point, sequences for the learning error, validation sequences of training.
SCALES = {
    "tiny": dict(num=512, learning_error_num=256, val_size=1024),
    "paper": dict(num=512, learning_error_num=256, val_size=1024),
}

#: Settings that change the numbers of the trained models (a resumed run must agree on them).
RESULT_FIELDS = ("model", "length", "train_steps", "batch", "lr", "estimator", "seed", "num", "learning_error_num",
                 "val_size", "schedule")


def needs_networks(kinds) -> bool:
    """Whether curve ``kinds`` include trained networks (``mdm``, ``ar``): those need torch and a device."""
    return any(k in ("mdm", "ar") for k in kinds)


@dataclass(frozen=True)
class Figure1Config:
    """What a Figure 1 run computes."""

    model: str = "tiny"  # architecture preset of mdmt.empirical.model: tiny | paper
    ter_languages: tuple = ("preset:2gram-ter", "preset:3gram-ter", "preset:4gram-ter")  # generative perplexity vs N
    ser_languages: tuple = ("preset:hmm-sparse", "preset:3gram", "interval:4")  # SER vs N (language SPECs)
    steps: tuple = DEFAULT_STEPS  # the N of the sweep
    lengths: tuple | None = None  # the L of the oracle curves (default DEFAULT_LENGTHS, plus ``length``)
    kinds: tuple = KINDS  # which curves to compute in this run
    length: int | None = None  # L of the trained models (default: the architecture's seq_len)
    train_steps: int | None = None  # training recipe (default: mdmt.empirical.recipes.RECIPES[model])
    batch: int | None = None
    lr: float | None = None
    estimator: str | None = None
    num: int | None = None  # sequences per point
    learning_error_num: int | None = None
    val_size: int | None = None  # validation sequences of training (the paired gap)
    seed: int = 0
    schedule: str = "linear"  # a schedule SPEC

    def __post_init__(self):
        from .recipes import ARCHITECTURES as PRESETS, ESTIMATORS, RECIPES

        if self.model not in PRESETS:
            raise ValueError(f"unknown model preset {self.model!r}; valid presets: {', '.join(PRESETS)}")
        defaults = {**RECIPES[self.model], **SCALES[self.model]}
        for name in ("train_steps", "batch", "lr", "estimator", "num", "learning_error_num", "val_size"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, defaults[name])
            if name not in ("lr", "estimator"):
                positive_int(name, getattr(self, name))
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        if self.length is None:
            object.__setattr__(self, "length", PRESETS[self.model]["seq_len"])
        positive_int("length L", self.length)
        if self.lengths is None:
            object.__setattr__(self, "lengths", tuple(sorted({*DEFAULT_LENGTHS, self.length})))
        for name in ("ter_languages", "ser_languages", "steps", "kinds", "lengths"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("ter_languages", "ser_languages"):
            object.__setattr__(self, name, tuple(canonical_spec(v) for v in getattr(self, name)))
        if not self.ter_languages and not self.ser_languages:
            raise ValueError("no language to run: give at least one TER or SER language")
        if not self.lengths:
            raise ValueError("the sweep needs at least one length L")
        for L in self.lengths:
            positive_int("length L", L)
        for lang in self.ter_languages + self.ser_languages:
            for L in {*self.lengths, self.length}:
                check_length(lang, L)
        dup = sorted({x for x in self.ter_languages + self.ser_languages
                      if (self.ter_languages + self.ser_languages).count(x) > 1})
        if dup:
            raise ValueError(f"language {dup[0]!r} is listed twice")
        if not self.steps:
            raise ValueError("the sweep needs at least one number of steps N")
        for N in self.steps:
            positive_int("number of steps N", N)
        for k in self.kinds:
            if k not in KINDS:
                raise ValueError(f"unknown curve kind {k!r}; valid kinds: {', '.join(KINDS)}")
        if isinstance(self.lr, bool) or not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"learning rate lr must be a positive finite number, got {self.lr!r}")
        from mdmt.constructions.reverse.schedules import reveal_probabilities

        for N in self.steps:  # ValueError for an unknown schedule, or an explicit vector of another length
            try:
                reveal_probabilities(self.schedule, N)
            except ValueError as e:
                raise ValueError(f"schedule {self.schedule!r} at N = {N} of the sweep: {e}") from None
        from mdmt.runtime.resources import check_memory
        from mdmt.constructions.reverse.sampler import check_sample_memory

        # sizes before any work: the oracle sampler at the longest length, the networks' training batch
        check_sample_memory(self.num, max(self.lengths), "use smaller --lengths or --num")
        if needs_networks(self.kinds):  # the networks need torch (the empirical extra)
            from .model import ModelConfig, estimated_bytes

            net = ModelConfig.preset(self.model, 2, seq_len=self.length)
            check_memory(f"training the {self.model} network at L = {self.length} with batch {self.batch}",
                         estimated_bytes(net, self.batch), "use a smaller --length or --batch")

    def result_settings(self) -> dict:
        """RESULT_FIELDS, the architecture of the preset and its recipe's table step (a preset or recipe changed
        between two runs changes the numbers)."""
        from .recipes import ARCHITECTURES as PRESETS, RECIPES

        return {**{k: getattr(self, k) for k in RESULT_FIELDS}, "architecture": dict(PRESETS[self.model]),
                "table_lr": RECIPES[self.model].get("table_lr", 1.0)}

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def model_config(cfg: Figure1Config, language: str, vocab_size: int, causal: bool):
    """The architecture for a language SPEC: the preset, with 10 layers for the 4-gram under ``paper`` (Appendix E.2)."""
    from .model import ModelConfig

    mc = ModelConfig.preset(cfg.model, vocab_size, seq_len=cfg.length, causal=causal)
    if cfg.model == "paper" and language.startswith("preset:4gram"):
        mc = mc.with_(n_layers=10)
    return mc


@dataclass
class _Language:
    """A language of the sweep and what is known about it."""

    name: str
    role: str  # "ter" or "ser"
    lang: object
    entropy_rates: dict = field(default_factory=dict)  # L -> H(X_1..X_L)/L
    models: dict = field(default_factory=dict)  # kind -> trained Transformer
    summary: dict = field(default_factory=dict)

    @property
    def interval_length(self) -> int | None:
        """l for the interval counterexample ``interval:l``, None otherwise."""
        return interval_length_of(self.name)

    @property
    def folder(self) -> str:
        return slug(self.name)


class Figure1:
    """A Figure 1 run in folder ``out`` (see the module docstring); :meth:`run` does all that is missing."""

    def __init__(self, cfg: Figure1Config, out: str | os.PathLike, *, device: str | None = None, progress: bool = True,
                 log: Callable[[str], object] = print, provenance: dict | None = None, jobs: int | None = 1, scheduler: str | None = None,
                 figure_format: str = "png"):
        from mdmt.plots import FORMATS
        from mdmt.sweep import scheduler_address

        if figure_format not in FORMATS:
            raise ValueError(f"figure_format {figure_format!r}: expected one of {', '.join(FORMATS)}")
        self.figure_format = figure_format

        self.cfg, self.out, self.progress, self.log = cfg, Path(out), progress, log
        self.jobs = None if jobs is None else positive_int("jobs", jobs)  # None: mdmt.sweep.auto_jobs
        self.scheduler = scheduler_address(scheduler)
        if needs_networks(cfg.kinds):  # the networks: torch (the empirical extra) and a device
            from .device import torch_device

            self.device = torch_device(device)
        else:  # the oracle curves alone need neither torch nor a device
            self.device = "cpu" if device is None else str(device)
        self.provenance = provenance
        self._check_config()

    def _check_config(self) -> None:
        path = self.out / "config.json"
        old = _read_json(path)
        if not (isinstance(old, dict) and "result_settings" in old):
            old = None  # not the settings of a run: replaced (mdmt figure1 refuses such a file unless --force)
        new = self.settings = self.cfg.result_settings()
        if old is not None and old.get("result_settings") != new:
            diff = sorted(k for k in new if old.get("result_settings", {}).get(k) != new[k])
            raise ValueError(f"{self.out} holds a run with other settings ({', '.join(diff)} differ); "
                             "use another --out folder")
        for p in sorted((self.out / "rows").glob("*.json")):  # before any work: every stored point is this run's
            read_point(p, new)
        if old is None:
            _write_json(path, {"result_settings": new})

    # ------------------------------------------------------------------ steps of the run

    def _seed(self, *parts: int) -> int:
        return seed_of(self.cfg.seed, *parts) % (2**31)

    def _language(self, index: int, name: str, role: str) -> _Language:
        return _Language(name, role, language_from_spec(name))

    def _entropy_rate(self, lg: _Language, index: int, L: int) -> float:
        from .metrics import entropy_rate

        if L not in lg.entropy_rates:
            lg.entropy_rates[L] = entropy_rate(lg.lang, L, seed=self._seed(10, index, L))["value"]
        return lg.entropy_rates[L]

    def _train(self, lg: _Language, kind: str):
        from .train import train

        res = train(train_config(self.cfg, lg.name, lg.lang.n_symbols, kind), lg.lang,
                    ckpt_path=self.out / lg.folder / kind / "ckpt.pt", resume=True, device=self.device,
                    progress=self.progress)
        lg.models[kind] = res.model
        s = res.summary()
        s.pop("checkpoint", None)
        return s

    def _summary(self, lg: _Language) -> dict:
        """Training numbers and the MDM's learning error of a language (cached in summary.json)."""
        from mdmt.constructions.reverse.learning import learning_error

        from .sampling import MDMDenoiser

        path = self.out / lg.folder / "summary.json"
        summary = _read_json(path) or {}
        cfg = self.cfg
        changed = False
        for kind in ("mdm", "ar"):
            if kind not in cfg.kinds:
                continue
            if kind not in lg.models or f"train_{kind}" not in summary:
                t0 = time.perf_counter()
                summary[f"train_{kind}"] = self._train(lg, kind)
                summary[f"train_{kind}"]["wall_seconds"] = time.perf_counter() - t0
                changed = True
        if "mdm" in lg.models and "learning_error" not in summary:
            self.log(f"  {lg.name}: learning error of the MDM on {cfg.learning_error_num} sequences")
            summary["learning_error"] = learning_error(lg.lang, MDMDenoiser(lg.models["mdm"], batch=cfg.batch),
                                                       cfg.length, method="monte_carlo", num=cfg.learning_error_num,
                                                       seed=self._seed(11))
            changed = True
        summary.update(language=lg.name, role=lg.role, entropy_rate=lg.entropy_rates[cfg.length], L=cfg.length,
                       n_symbols=lg.lang.n_symbols)
        if changed or not path.exists():
            _write_json(path, summary)
        lg.summary = summary
        return summary

    def _pi(self, N: int) -> np.ndarray:
        from mdmt.constructions.reverse.schedules import reveal_probabilities

        return reveal_probabilities(self.cfg.schedule, N)

    def _bound(self, lg: _Language, L: int, N: int, eps: float) -> float | None:
        """The (C4) chain bound on KL(q || p_N)/L with learning error eps (n-grams only)."""
        from mdmt.bounds.theorems.dependencies import chain_bound

        if getattr(lg.lang, "kind", None) != "ngram":
            return None
        return chain_bound(lg.lang.n, L, self._pi(N), lg.lang.n_symbols, eps)

    def _point(self, lg: _Language, index: int, kind: str, L: int, N: int) -> dict:
        from mdmt.bounds.theorems.interval_bounds import ser_lower_bound
        from mdmt.constructions.reverse.interval_closed_forms import oracle_ser
        from mdmt.constructions.reverse.metrics import sample_metrics
        from mdmt.constructions.reverse.sampler import assignment_kl_estimate, sample_mdm

        cfg = self.cfg
        seed = self._seed(20, L, N)
        if kind == "oracle":
            res = sample_mdm(lg.lang, L, self._pi(N), cfg.num, seed=seed)
        else:
            from .sampling import sample_model

            res = sample_model(lg.models[kind], cfg.num, L, None if kind == "ar" else self._pi(N), seed=seed,
                               batch=cfg.batch, device=self.device)
        m = sample_metrics(lg.lang, res.samples)
        H = self._entropy_rate(lg, index, L)
        le = lg.summary.get("learning_error", {})
        eps = {"oracle": 0.0, "mdm": le.get("mean")}.get(kind)
        row = {"language": lg.name, "role": lg.role, "kind": kind, "N": N, "L": L,
               "schedule": cfg.schedule if kind != "ar" else None, "num": cfg.num,
               "nfe_mean": float(res.nfe.mean()), "ser": m["ser"], "ser_lo": m["ser_ci"][0], "ser_hi": m["ser_ci"][1],
               "gen_perplexity": m["gen_perplexity"], "gen_perplexity_lo": m["gen_perplexity_ci"][0],
               "gen_perplexity_hi": m["gen_perplexity_ci"][1], "gen_nll_per_token": m["gen_nll_per_token"],
               "ter_gap": m["gen_nll_per_token"] - H, "ter_gap_lo": m["gen_nll_ci"][0] - H,
               "ter_gap_hi": m["gen_nll_ci"][1] - H,
               "entropy_rate": H, "true_perplexity": math.exp(H), "eps_learning": eps,
               "kl_bound_per_token": None if eps is None or kind == "ar" else self._bound(lg, L, N, eps),
               "assignment_kl": None, "assignment_kl_lo": None, "assignment_kl_hi": None,
               "ser_exact_oracle": None, "ser_lower_bound": None, "seconds": res.seconds}
        if kind == "oracle" and lg.role == "ter":
            est = assignment_kl_estimate(lg.lang, L, self._pi(N), cfg.num, seed=self._seed(21, L, N))
            row.update(assignment_kl=est["kl_per_token_nats"], assignment_kl_lo=est["ci"][0],
                       assignment_kl_hi=est["ci"][1])
        if lg.interval_length and kind != "ar":
            pi = self._pi(N)
            row["ser_exact_oracle"] = oracle_ser(lg.interval_length, L, pi)
            eps_max = 0.0 if kind == "oracle" else le.get("max")
            if eps_max is not None:
                row["ser_lower_bound"] = ser_lower_bound(lg.interval_length, L, pi, eps_max)
        return row

    def _todo(self, name: str, kinds=None, lengths=None) -> list[tuple[str, int, int]]:
        """The points of language NAME not yet in ``rows/`` (of KINDS, oracle points at LENGTHS; default: all)."""
        cfg = self.cfg
        kinds = cfg.kinds if kinds is None else kinds
        lengths = cfg.lengths if lengths is None else lengths
        todo = [("oracle", L, N) for L in lengths for N in cfg.steps] if "oracle" in kinds else []
        if "mdm" in kinds:
            todo += [("mdm", cfg.length, N) for N in cfg.steps]
        if "ar" in kinds:
            todo.append(("ar", cfg.length, cfg.length))
        return [(k, L, N) for k, L, N in todo if not row_path(self.out, name, k, L, N).exists()]

    def _language_part(self, index: int, name: str, role: str, kinds=None, lengths=None, progress=None) -> None:
        """Compute what is missing of language NAME (the sweep's language number INDEX): its networks, when
        KINDS holds mdm or ar, and its points of KINDS (oracle points at LENGTHS)."""
        cfg = self.cfg
        kinds = cfg.kinds if kinds is None else tuple(k for k in kinds if k in cfg.kinds)
        progress = self.progress if progress is None else progress
        lg = self._language(index, name, role)
        self._entropy_rate(lg, index, cfg.length)
        todo = self._todo(name, kinds, lengths)
        nets = needs_networks(kinds)
        if any(k != "oracle" for k, _, _ in todo) or (nets and not (self.out / lg.folder / "summary.json").exists()):
            self._summary(lg)
        else:
            lg.summary = _read_json(self.out / lg.folder / "summary.json") or {}
        bar = None
        if progress and todo:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc=f"{name} points", dynamic_ncols=True, leave=False)
        for kind, L, N in todo:
            row = self._point(lg, index, kind, L, N)
            _write_json(row_path(self.out, name, kind, L, N), {**row, POINT_STAMP: point_stamp(row, self.settings)})
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()

    def _parts(self, langs) -> list[tuple[int, str, str, tuple, tuple]]:
        """The run cut into independent parts (index, name, role, kinds, lengths), the costliest first: per
        language its networks with their points, and its oracle points at each length apart."""
        cfg = self.cfg
        nets = tuple(k for k in ("mdm", "ar") if k in cfg.kinds)
        parts = []
        for i, (name, role) in enumerate(langs):
            if nets and (self._todo(name, nets) or not (self.out / slug(name) / "summary.json").exists()):
                parts.append((i, name, role, nets, ()))
            if "oracle" in cfg.kinds:
                parts += [(i, name, role, ("oracle",), (L,)) for L in cfg.lengths if self._todo(name, ("oracle",), (L,))]
        # the oracle at the longest lengths and the networks take longest: they go first
        return sorted(parts, key=lambda p: -(p[4][0] if p[4] else 2 * max(cfg.lengths)))

    def _run_in_parallel(self, langs) -> None:
        """Compute every missing part on ``jobs`` worker processes of an embedded Dask cluster, or on the cluster
        at ``scheduler`` (:mod:`mdmt.sweep`), longest expected first; the numbers are those of a run in one
        process (same seeds; the networks' training up to float32 rounding).  Each part writes its points and
        checkpoints into ``out`` as it goes (atomically), so a part rerun after a lost worker, or a rerun of the
        command, resumes from them; on a cluster, ``out`` must be a folder every worker sees."""
        from mdmt.sweep import auto_jobs, run_parts

        parts = self._parts(langs)
        costs = [part_seconds(self.cfg, p) for p in parts]
        jobs = auto_jobs(sum(costs), len(parts)) if self.jobs is None else self.jobs
        if (jobs < 2 and self.scheduler is None) or len(parts) < 2:
            return
        t0 = time.perf_counter()
        where = f"the Dask cluster at {self.scheduler}" if self.scheduler else f"{jobs} processes"
        self.log(f"{len(parts)} parts on {where}, longest expected first")
        sweep = run_parts(_part_job, [(self.cfg.to_dict(), str(self.out), str(self.device), *p) for p in parts],
                          jobs=jobs, scheduler=self.scheduler, progress=self.progress, desc="figure1 parts",
                          costs=costs, labels=[_part_label(p) for p in parts])
        for done, (k, _) in enumerate(sweep, 1):
            self.log(f"  [{done}/{len(parts)}] {_part_label(parts[k])} done ({sweep.seconds[k]:.0f} s; "
                     f"{time.perf_counter() - t0:.0f} s in all)")

    def run(self) -> Result:
        cfg = self.cfg
        t0 = time.perf_counter()
        langs = [(n, "ter") for n in cfg.ter_languages] + [(n, "ser") for n in cfg.ser_languages]
        self._run_in_parallel(langs)
        for i, (name, role) in enumerate(langs):
            self.log(f"[{i + 1}/{len(langs)}] {name} ({role.upper()}), trained at L = {cfg.length}, "
                     f"oracle at L = {', '.join(map(str, cfg.lengths))}")
            self._language_part(i, name, role)
        result = self.assemble()
        result["seconds_this_run"] = time.perf_counter() - t0
        return result

    # ------------------------------------------------------------------ outputs

    def rows(self) -> list[dict]:
        """Every point in ``rows/`` (also those of other runs merged into the folder), sorted."""
        order = {k: i for i, k in enumerate(KINDS)}
        rows = [read_point(p, self.settings) for p in sorted((self.out / "rows").glob("*.json"))]
        return sorted(rows, key=lambda r: (r["role"] != "ter", r["language"], order.get(r["kind"], 9), r["L"], r["N"]))

    def summaries(self) -> dict:
        out = {}
        for p in sorted(self.out.glob("*/summary.json")):
            s = _read_json(p)
            if s is not None:
                for k in ("train_mdm", "train_ar"):
                    if k in s:
                        s[k] = {kk: vv for kk, vv in s[k].items() if kk != "history"} | {
                            "history": s[k].get("history", [])[-1:]}
                out[s["language"]] = s
        return out

    def assemble(self) -> Result:
        """Write figure1.csv, figure1.json and the figures (figure1.png: the TER-gap view, :func:`mdmt.plots.figure1_figure`;
        figure1_paper.png: the paper's axes, :func:`mdmt.plots.figure1_paper_figure`; or .pdf / .svg, by
        ``figure_format``) from the points present."""
        rows = self.rows()
        targets = steps_to_target(rows, self.cfg.schedule)
        if rows:
            write_csv(self.out / "figure1.csv", list(dict.fromkeys(k for r in rows for k in r)),
                      [{k: ("" if v is None else v) for k, v in r.items()} for r in rows])
        prov = _read_json(self.out / "figure1.json") or {}
        runs = prov.get("provenance", [])
        if self.provenance is not None:
            runs = runs + [self.provenance]
        result = Result({"config": self.cfg.to_dict(), "summaries": self.summaries(), "targets": targets,
                         "rows": rows, "provenance": runs}, tables=("rows", "targets"), figure="figure1_figure")
        if rows:
            from mdmt.plots import save_figures

            save_figures(result, self.out, "figure1.json", self.figure_format)
        _write_json(self.out / "figure1.json", result)
        return result


def train_config(cfg: Figure1Config, language: str, vocab_size: int, kind: str):
    """The TrainConfig of the MDM (``kind="mdm"``) or AR network of a language in a Figure 1 run."""
    from .train import RECIPES, TrainConfig

    return TrainConfig(model=model_config(cfg, language, vocab_size, causal=(kind == "ar")), language=language,
                       train_steps=cfg.train_steps, batch=cfg.batch, lr=cfg.lr, estimator=cfg.estimator, seed=cfg.seed,
                       val_size=cfg.val_size, warmup_frac=RECIPES[cfg.model]["warmup_frac"],
                       table_lr=RECIPES[cfg.model].get("table_lr", 1.0), ckpt_every=max(50, cfg.train_steps // 20))


def _part_label(part) -> str:
    _, name, _, kinds, lengths = part
    return f"{name}: {'oracle at L = ' + str(lengths[0]) if lengths else 'networks'}"


def _part_job(args) -> None:
    """Worker of :meth:`Figure1._run_in_parallel`: one part of the run, written to ``out`` (resumable)."""
    from . import set_threads

    cfg, out, device, index, name, role, kinds, lengths = args
    set_threads(1, torch=needs_networks(kinds))  # an oracle part needs no torch
    fig = Figure1(Figure1Config(**cfg), out, device=device, progress=False, log=lambda *_: None)
    fig._language_part(index, name, role, kinds, lengths or None)
