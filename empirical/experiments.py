"""Figure 1 of the paper (Section 5.2) as a resumable experiment: TER and SER of MDMs against the number of steps N.

For every language of the sweep the experiment

1. trains an MDM and its AR twin (same architecture, :mod:`empirical.train`; the ``paper``
   architecture has 10 layers for the 4-gram, Appendix E.2), checkpointing as it goes;
2. measures the MDM's learning error against the oracle denoiser (Assumption 4.1:
   mean, q90, q99, max of the per-token KL over random masks,
   :func:`mdmt.constructions.reverse.learning.learning_error`)
   and the AR model's KL(q || p_AR)/L;
3. samples with the N-step sampler (Eq. 3) at every N of the sweep from the trained MDM (ddpm_cache
   in torch) and from the oracle denoiser q(x_i | x_U) (the MDM with zero learning error; the
   oracle sampler's message kernel), and from the AR model;
4. scores the samples under the true q: generative perplexity exp(E_p[-ln q(x)]/L) (TER
   languages, the threshold-0 presets) and the SER P_p(q(x) = 0) by exact support check
   (SER languages, the pruned presets), with confidence intervals; for n-grams it evaluates the
   Theorem 4.2 chain bound KL(q || p_N)/L <= eps_learning + ln|V| E[sum_j D_j]/L with the measured
   eps_learning (0 for the oracle).

State lives in one folder: ``config.json`` (the settings the numbers depend on; a rerun with
other settings is refused), ``<language>/mdm|ar/ckpt.pt`` (training checkpoints, resumed where
they stopped), ``<language>/summary.json`` and ``rows/<language>__<kind>__N<N>.json`` (one per
point of the figure; a point already there is not recomputed).  ``figure1.csv``, ``figure1.png``
and ``figure1.json`` (rows, summaries, provenance) are rebuilt from whatever points exist, so
parts computed on different machines (the oracle curves on a CPU, the trained models on a
GPU) merge by copying their ``rows``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from mdmt.constructions.languages.spec import canonical_spec, interval_length_of, language_from_spec
from mdmt.constructions.validation import positive_int

from .data import check_length

KINDS = ("oracle", "mdm", "ar")
DEFAULT_STEPS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)

#: Per model preset: training length, batch, peak learning rate, samples per point, sequences for the learning error.
SCALES = {
    "tiny": dict(train_steps=2000, batch=64, lr=1e-3, num=512, learning_error_num=256),
    "paper": dict(train_steps=20000, batch=64, lr=3e-4, num=512, learning_error_num=256),
}

#: Settings that change the numbers (a resumed run must agree on them).
RESULT_FIELDS = ("model", "length", "train_steps", "batch", "lr", "seed", "num", "learning_error_num", "schedule")


def slug(spec: str) -> str:
    """A file-name-safe form of a language SPEC (``preset:2gram-ter:0`` -> ``preset_2gram-ter_0``)."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in spec)


@dataclass(frozen=True)
class Figure1Config:
    """What a Figure 1 run computes."""

    model: str = "tiny"  # architecture preset of mdmt.empirical.model: tiny | paper
    ter_languages: tuple = ("preset:2gram-ter", "preset:3gram-ter", "preset:4gram-ter")  # generative perplexity vs N
    ser_languages: tuple = ("preset:hmm", "preset:3gram", "interval:4")  # SER vs N (language SPECs)
    steps: tuple = DEFAULT_STEPS  # the N of the sweep
    kinds: tuple = KINDS  # which curves to compute in this run
    length: int | None = None  # L (default: the architecture's seq_len)
    train_steps: int | None = None
    batch: int | None = None
    lr: float | None = None  # peak learning rate (default: the scale's)
    num: int | None = None  # sequences per point
    learning_error_num: int | None = None
    seed: int = 0
    schedule: str = "linear"  # a schedule SPEC

    def __post_init__(self):
        from .model import PRESETS

        if self.model not in PRESETS:
            raise ValueError(f"unknown model preset {self.model!r}; valid presets: {', '.join(PRESETS)}")
        scale = SCALES[self.model]
        for name in ("train_steps", "batch", "lr", "num", "learning_error_num"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, scale[name])
            if name != "lr":
                positive_int(name, getattr(self, name))
        if self.length is None:
            object.__setattr__(self, "length", PRESETS[self.model]["seq_len"])
        positive_int("length L", self.length)
        for name in ("ter_languages", "ser_languages", "steps", "kinds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("ter_languages", "ser_languages"):
            object.__setattr__(self, name, tuple(canonical_spec(v) for v in getattr(self, name)))
        if not self.ter_languages and not self.ser_languages:
            raise ValueError("no language to run: give at least one TER or SER language")
        for lang in self.ter_languages + self.ser_languages:
            check_length(lang, self.length)
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
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"learning rate lr must be a positive finite number, got {self.lr!r}")
        from mdmt.constructions.reverse.schedules import parse_schedule

        parse_schedule(self.schedule)  # ValueError for an unknown schedule

    def result_settings(self) -> dict:
        return {k: getattr(self, k) for k in RESULT_FIELDS}

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def model_config(cfg: Figure1Config, language: str, vocab_size: int, causal: bool):
    """The architecture for a language SPEC: the preset, with 10 layers for the 4-gram under ``paper`` (Appendix E.2)."""
    from .model import ModelConfig

    mc = ModelConfig.preset(cfg.model, vocab_size, seq_len=cfg.length, causal=causal)
    if cfg.model == "paper" and language.startswith("preset:4gram"):
        mc = mc.with_(n_layers=10)
    return mc


def _plain(obj):
    """NumPy scalars and arrays to Python objects (infinities stay: an off-support sample has perplexity inf)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _write_json(path: Path, obj) -> None:
    """Atomic write; JSON with Python's Infinity/NaN literals (read back by ``json.loads``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_plain(obj), indent=1) + "\n")
    os.replace(tmp, path)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def row_path(out: Path, language: str, kind: str, N: int) -> Path:
    return out / "rows" / f"{slug(language)}__{kind}__N{N}.json"


@dataclass
class _Language:
    """A language of the sweep and what is known about it."""

    name: str
    role: str  # "ter" or "ser"
    lang: object
    entropy_rate: float
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

    def __init__(self, cfg: Figure1Config, out: str | os.PathLike, *, device=None, progress: bool = True,
                 log=print, provenance: dict | None = None):
        self.cfg, self.out, self.progress, self.log = cfg, Path(out), progress, log
        from .train import default_device

        import torch

        self.device = torch.device(device) if device is not None else default_device()
        self.provenance = provenance
        self._check_config()

    def _check_config(self) -> None:
        path = self.out / "config.json"
        old = _read_json(path)
        new = self.cfg.result_settings()
        if old is not None and old.get("result_settings") != new:
            diff = sorted(k for k in new if old.get("result_settings", {}).get(k) != new[k])
            raise ValueError(f"{self.out} holds a run with other settings ({', '.join(diff)} differ); "
                             "use another --out folder")
        if old is None:
            _write_json(path, {"result_settings": new})

    # ------------------------------------------------------------------ steps of the run

    def _seed(self, *parts: int) -> int:
        from .train import seed_of

        return seed_of(self.cfg.seed, *parts) % (2**31)

    def _language(self, index: int, name: str, role: str) -> _Language:
        from .metrics import entropy_rate

        lang = language_from_spec(name)
        H = entropy_rate(lang, self.cfg.length, seed=self._seed(10, index))
        return _Language(name, role, lang, H["value"])

    def _train(self, lg: _Language, kind: str):
        from .train import TrainConfig, train

        cfg = self.cfg
        tc = TrainConfig(model=model_config(cfg, lg.name, lg.lang.n_symbols, causal=(kind == "ar")), language=lg.name,
                         train_steps=cfg.train_steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed,
                         ckpt_every=max(50, cfg.train_steps // 20))
        res = train(tc, lg.lang, ckpt_path=self.out / lg.folder / kind / "ckpt.pt", resume=True, device=self.device,
                    progress=self.progress)
        lg.models[kind] = res.model
        s = res.summary()
        s.pop("checkpoint", None)
        return s

    def _summary(self, lg: _Language) -> dict:
        """Training numbers, the MDM's learning error and the AR KL of a language (cached in summary.json)."""
        from mdmt.constructions.reverse.learning import learning_error

        from .metrics import ar_kl
        from .sampling import MDMDenoiser, ar_sequence_nll

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
        if "ar" in lg.models and "ar_kl" not in summary:
            summary["ar_kl"] = ar_kl(lg.lang, lambda x: ar_sequence_nll(lg.models["ar"], x, batch=cfg.batch),
                                     cfg.length, num=cfg.learning_error_num, seed=self._seed(12))
            changed = True
        summary.update(language=lg.name, role=lg.role, entropy_rate=lg.entropy_rate, L=cfg.length,
                       n_symbols=lg.lang.n_symbols)
        if changed or not path.exists():
            _write_json(path, summary)
        lg.summary = summary
        return summary

    def _pi(self, N: int) -> np.ndarray:
        from mdmt.constructions.reverse.schedules import reveal_probabilities

        return reveal_probabilities(self.cfg.schedule, N)

    def _bound(self, lg: _Language, N: int, eps: float) -> float | None:
        """The (C4) chain bound on KL(q || p_N)/L with learning error eps (n-grams only)."""
        from mdmt.bounds.dependencies import chain_bound

        if getattr(lg.lang, "kind", None) != "ngram":
            return None
        return chain_bound(lg.lang.n, self.cfg.length, self._pi(N), lg.lang.n_symbols, eps)

    def _ser_bounds(self, lg: _Language, N: int, eps: float | None) -> tuple[float, float | None]:
        """Interval HMM: the exact oracle SER at N steps and the Theorem 4.4 lower bound at learning error eps."""
        from mdmt.constructions.reverse.interval_closed_forms import oracle_ser, ser_lower_bound

        pi = self._pi(N)
        l, L = lg.interval_length, self.cfg.length
        return oracle_ser(l, L, pi), (None if eps is None else ser_lower_bound(l, L, pi, eps))

    def _point(self, lg: _Language, kind: str, N: int) -> dict:
        from mdmt.constructions.reverse.metrics import sample_metrics
        from mdmt.constructions.reverse.sampler import sample_mdm

        from .sampling import MDMDenoiser, ar_sample, ddpm_cache

        cfg = self.cfg
        seed = self._seed(20, N)
        if kind == "ar":
            res = ar_sample(lg.models["ar"], cfg.num, cfg.length, seed=seed, batch=cfg.batch, device=self.device)
        elif kind == "oracle":
            res = sample_mdm(lg.lang, cfg.length, self._pi(N), cfg.num, seed=seed)
        else:
            res = ddpm_cache(MDMDenoiser(lg.models["mdm"], batch=cfg.batch), cfg.num, cfg.length, self._pi(N),
                             seed=seed, batch=cfg.batch, device=self.device)
        m = sample_metrics(lg.lang, res.samples)
        eps = {"oracle": 0.0, "mdm": lg.summary.get("learning_error", {}).get("mean")}.get(kind)
        ser_exact = ser_bound = None
        if lg.interval_length and kind != "ar":
            ser_exact, ser_bound = self._ser_bounds(lg, N, 0.0 if kind == "oracle" else
                                                    lg.summary.get("learning_error", {}).get("max"))
        return {"language": lg.name, "role": lg.role, "kind": kind, "N": N, "L": cfg.length,
                "schedule": cfg.schedule if kind != "ar" else None, "num": cfg.num,
                "nfe_mean": float(res.nfe.mean()), "ser": m["ser"], "ser_lo": m["ser_ci"][0], "ser_hi": m["ser_ci"][1],
                "gen_perplexity": m["gen_perplexity"], "gen_perplexity_lo": m["gen_perplexity_ci"][0],
                "gen_perplexity_hi": m["gen_perplexity_ci"][1], "gen_nll_per_token": m["gen_nll_per_token"],
                "entropy_rate": lg.entropy_rate, "true_perplexity": math.exp(lg.entropy_rate),
                "eps_learning": eps,
                "kl_bound_per_token": None if eps is None or kind == "ar" else self._bound(lg, N, eps),
                "ser_exact_oracle": ser_exact, "ser_lower_bound": ser_bound,
                "seconds": res.seconds}

    def run(self) -> dict:
        cfg = self.cfg
        t0 = time.perf_counter()
        langs = [(n, "ter") for n in cfg.ter_languages] + [(n, "ser") for n in cfg.ser_languages]
        for i, (name, role) in enumerate(langs):
            self.log(f"[{i + 1}/{len(langs)}] {name} ({role.upper()}), L = {cfg.length}")
            lg = self._language(i, name, role)
            todo = [(k, N) for k in ("oracle", "mdm") if k in cfg.kinds for N in cfg.steps]
            if "ar" in cfg.kinds:
                todo.append(("ar", cfg.length))
            todo = [(k, N) for k, N in todo if not row_path(self.out, name, k, N).exists()]
            needs_models = any(k != "oracle" for k, _ in todo) or (
                any(k in cfg.kinds for k in ("mdm", "ar")) and not (self.out / lg.folder / "summary.json").exists())
            if needs_models:
                self._summary(lg)
            else:
                lg.summary = _read_json(self.out / lg.folder / "summary.json") or {}
            bar = None
            if self.progress and todo:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(todo), desc=f"{name} points", dynamic_ncols=True, leave=False)
            for kind, N in todo:
                _write_json(row_path(self.out, name, kind, N), self._point(lg, kind, N))
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        result = self.assemble()
        result["seconds_this_run"] = time.perf_counter() - t0
        return result

    # ------------------------------------------------------------------ outputs

    def rows(self) -> list[dict]:
        """Every point in ``rows/`` (also those of other runs merged into the folder), sorted."""
        order = {k: i for i, k in enumerate(KINDS)}
        rows = [r for p in sorted((self.out / "rows").glob("*.json")) if (r := _read_json(p)) is not None]
        return sorted(rows, key=lambda r: (r["role"] != "ter", r["language"], order.get(r["kind"], 9), r["N"]))

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

    def assemble(self) -> dict:
        """Write figure1.csv, figure1.png and figure1.json from the points present."""
        rows = self.rows()
        if rows:
            with open(self.out / "figure1.csv", "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), restval="")
                w.writeheader()
                for r in rows:
                    w.writerow({k: ("" if v is None else v) for k, v in r.items()})
            plot_figure1(rows, self.out / "figure1.png", title=f"mdmt figure1 --model {self.cfg.model}, L = {self.cfg.length}")
        prov = _read_json(self.out / "figure1.json") or {}
        runs = prov.get("provenance", [])
        if self.provenance is not None:
            runs = runs + [self.provenance]
        result = {"config": self.cfg.to_dict(), "summaries": self.summaries(), "rows": rows, "provenance": runs}
        _write_json(self.out / "figure1.json", result)
        return result


def plot_figure1(rows: list[dict], path: str | os.PathLike, title: str = "") -> None:
    """One panel per language: generative perplexity (TER) or SER against N, trained MDM vs oracle, AR as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = list(dict.fromkeys(r["language"] for r in rows))
    cols = min(3, len(langs))
    nrow = math.ceil(len(langs) / cols)
    fig, axes = plt.subplots(nrow, cols, figsize=(4.6 * cols, 3.6 * nrow), squeeze=False)
    style = {"oracle": dict(color="tab:green", marker="s", label="MDM, oracle denoiser"),
             "mdm": dict(color="tab:blue", marker="o", label="MDM, trained")}
    for ax, name in zip(axes.flat, langs):
        rs = [r for r in rows if r["language"] == name]
        ter = rs[0]["role"] == "ter"
        key = "gen_perplexity" if ter else "ser"
        for kind, st in style.items():
            pts = sorted((r for r in rs if r["kind"] == kind and math.isfinite(r[key])), key=lambda r: r["N"])
            if pts:
                x = [r["N"] for r in pts]
                y = np.array([r[key] for r in pts])
                err = np.array([[r[key] - r[key + "_lo"] for r in pts], [r[key + "_hi"] - r[key] for r in pts]])
                ax.errorbar(x, y, yerr=np.maximum(err, 0), capsize=2, ms=4, lw=1.2, **st)
        for r in rs:
            if r["kind"] == "ar" and math.isfinite(r[key]):
                ax.axhline(r[key], color="tab:red", lw=1.2, label="AR (KV cache)")
                ax.axhspan(r[key + "_lo"], r[key + "_hi"], color="tab:red", alpha=0.12)
        if ter:
            ax.axhline(rs[0]["true_perplexity"], color="k", ls="--", lw=1, label="true perplexity exp(H/L)")
        for field_, kind, st in (("ser_exact_oracle", "oracle", dict(color="tab:green", ls=":", label="oracle SER, exact")),
                                 ("ser_lower_bound", "mdm", dict(color="tab:blue", ls="--", label="Thm 4.4 lower bound, measured ε"))):
            pts = sorted((r for r in rs if r["kind"] == kind and r.get(field_) is not None), key=lambda r: r["N"])
            if pts:
                ax.plot([r["N"] for r in pts], [r[field_] for r in pts], lw=1, **st)
        ax.set_xscale("log", base=2)
        if ter:
            ax.set_yscale("log")
        ax.set_xlabel("sampling steps N")
        ax.set_ylabel("generative perplexity" if ter else "sequence error rate")
        ax.set_title(f"{name} ({'TER' if ter else 'SER'})")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(langs):]:
        ax.axis("off")
    handles, labels = {}, {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown_tables(result: dict) -> str:
    """The rows and per-language summaries of a run as Markdown tables (for docs/results)."""
    lines = ["| language | kind | N | NFE | gen. perplexity (95% CI) | true perplexity | SER (95% CI) | bound |",
             "| --- | --- | ---: | ---: | --- | ---: | --- | --- |"]
    for r in result["rows"]:
        gp = (f"{r['gen_perplexity']:.4f} ({r['gen_perplexity_lo']:.4f}–{r['gen_perplexity_hi']:.4f})"
              if math.isfinite(r["gen_perplexity"]) else "∞")
        b = []
        if r["kl_bound_per_token"] is not None:
            b.append(f"KL/L ≤ {r['kl_bound_per_token']:.4f}")
        if r.get("ser_lower_bound") is not None:
            b.append(f"SER ≥ {r['ser_lower_bound']:.4f}")
        if r.get("ser_exact_oracle") is not None:
            b.append(f"oracle SER = {r['ser_exact_oracle']:.4f}")
        lines.append(f"| {r['language']} | {r['kind']} | {r['N']} | {r['nfe_mean']:.1f} | {gp} | {r['true_perplexity']:.4f} | "
                     f"{r['ser']:.4f} ({r['ser_lo']:.4f}–{r['ser_hi']:.4f}) | {'; '.join(b)} |")
    lines += ["", "| language | H/L (nats) | MDM val NELBO | AR val NLL | ε_learning mean (95% CI) | q90 | q99 | max | AR KL/L |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for name, s in result["summaries"].items():
        le = s.get("learning_error")
        tm, ta, ak = s.get("train_mdm"), s.get("train_ar"), s.get("ar_kl")
        f = (lambda v: "" if v is None else f"{v:.4f}")
        lines.append(f"| {name} | {s['entropy_rate']:.4f} | {f(tm and tm['val_nll'])} | {f(ta and ta['val_nll'])} | "
                     + (f"{le['mean']:.4f} ({le['ci'][0]:.4f}–{le['ci'][1]:.4f}) | {le['q90']:.4f} | {le['q99']:.4f} | {le['max']:.4f}"
                        if le else " | | | ")
                     + f" | {f(ak and ak['mean'])} |")
    return "\n".join(lines) + "\n"
