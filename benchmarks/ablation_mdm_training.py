"""Why the MDM learns slower than its AR twin, and which changes of the ``tiny`` recipe fix it (docs/empirical.md).

    python benchmarks/ablation_mdm_training.py grad [--language SPEC]
    python benchmarks/ablation_mdm_training.py train --variants A,B,... [--languages SPEC,...] [--train-steps K]
    python benchmarks/ablation_mdm_training.py diagnose --checkpoint RUN/ckpt.pt
    python benchmarks/ablation_mdm_training.py posterior --variants A [--language SPEC]

``grad`` measures the gradient noise of the three unbiased NELBO estimators (``time``: MDLM's 1/t
weighting; ``count``: m uniform, weight L/m; ``harmonic``: P(m) proportional to 1/m, weight H_L;
see mdmt.empirical.model) and of the AR
loss at the same parameters: over 48 independent batches, noise/signal = the trace of the
covariance of one batch's gradient over the squared norm of the true gradient, and the fraction
of batches whose gradient norm exceeds the clipping threshold 1.  ``train`` trains each named variant (a change of the baseline
configuration, table ``VARIANTS``) and prints, per language, the CPU seconds (user + system,
``time.process_time``, summed over threads), the paired validation gap (model NLL minus exact
-ln q of the same 1024 validation sequences, with its 95% interval) and the measured mean
learning error (Monte Carlo over 256 sequences, 95% interval), and for an MDM its KL to the exact
posterior by number m of masked positions (``kl_by_masked``: m = 1 is the full two-sided context).
``diagnose`` prints that breakdown for a checkpoint; ``posterior`` trains a variant on the exact
posterior as its target (no label noise), which separates the noise of the sampled targets from
what the network cannot fit.  Every row is appended to
``--out`` (JSON lines) with its configuration and commit, so a table in the docs can be traced.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import mdmt.empirical  # noqa: F401  (first: it sets OMP_WAIT_POLICY before torch loads OpenMP)
import numpy as np
import torch

from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.reverse.learning import learning_error
from mdmt.runtime.validation import MASK
from mdmt.empirical.model import (ModelConfig, Transformer, ar_loss, count_noise, diffusion_noise, harmonic_noise,
                                  mdm_input, mdm_loss, mdm_loss_count, mdm_loss_harmonic, subs_log_probs)
from mdmt.runtime.provenance import record
from mdmt.empirical.sampling import MDMDenoiser
from mdmt.empirical import set_threads
from mdmt.empirical.train import TrainConfig, batch_at, load_run, lr_factor, train

L = 64
BASE = dict(d_model=64, n_layers=2, n_heads=4, estimator="time", lr=1e-3, batch=64, train_steps=2000, warmup_frac=0.1,
            grad_clip=1.0, positions="rotary+learned", causal=False, neighbours=0, window=0, recurrent=0,
            hmm_states=0, ngram=0, table_lr=1.0)
#: name -> changes of BASE (the old ``tiny`` recipe of mdmt figure1).
VARIANTS = {
    "base": {},
    "count": dict(estimator="count"),
    "count-lr3e-3": dict(estimator="count", lr=3e-3),
    "count-lr3e-3-noclip": dict(estimator="count", lr=3e-3, grad_clip=0.0),
    "time-lr3e-3": dict(lr=3e-3),
    "count-b256": dict(estimator="count", batch=256, train_steps=500),
    "count-b256-lr3e-3": dict(estimator="count", batch=256, lr=3e-3, train_steps=500),
    "count-d128": dict(estimator="count", d_model=128),
    "count-l4": dict(estimator="count", n_layers=4),
    "count-d128-l4": dict(estimator="count", d_model=128, n_layers=4),
    "count-rotary": dict(estimator="count", positions="rotary"),
    "count-alibi": dict(estimator="count", positions="rotary+learned+alibi"),
    "count-alibi-lr3e-3": dict(estimator="count", positions="rotary+learned+alibi", lr=3e-3),
    "time-alibi": dict(positions="rotary+learned+alibi"),
    "count-alibi-long": dict(estimator="count", positions="rotary+learned+alibi", train_steps=12000),
    "harmonic": dict(estimator="harmonic"),
    "harmonic-lr3e-3": dict(estimator="harmonic", lr=3e-3),
    "harmonic-h8": dict(estimator="harmonic", n_heads=8),
    "harmonic-d128": dict(estimator="harmonic", d_model=128),
    "harmonic-nb3": dict(estimator="harmonic", neighbours=3),
    "harmonic-nb3-lr3e-3": dict(estimator="harmonic", neighbours=3, lr=3e-3),
    "harmonic-nb3-lr1e-2": dict(estimator="harmonic", neighbours=3, lr=1e-2),
    "harmonic-nb3-l4-lr3e-3": dict(estimator="harmonic", neighbours=3, n_layers=4, lr=3e-3),
    "harmonic-nb3-d128": dict(estimator="harmonic", neighbours=3, d_model=128),
    "harmonic-nb3-d128-lr3e-3": dict(estimator="harmonic", neighbours=3, d_model=128, lr=3e-3),
    "harmonic-nb3-d128-lr3e-3-5000": dict(estimator="harmonic", neighbours=3, d_model=128, lr=3e-3, train_steps=5000),
    "tiny": dict(estimator="harmonic", neighbours=3, lr=3e-3, train_steps=6000),  # the tiny recipe before windows
    "tiny-ar": dict(neighbours=3, lr=3e-3, train_steps=6000, causal=True),
    "harmonic-nb3-w3-lr3e-3": dict(estimator="harmonic", neighbours=3, window=3, lr=3e-3),
    "harmonic-nb3-w4-lr3e-3": dict(estimator="harmonic", neighbours=3, window=4, lr=3e-3),
    "tiny-w4": dict(estimator="harmonic", neighbours=3, window=4, lr=3e-3, train_steps=6000),  # = the tiny preset and recipe
    "tiny-nb6-w3": dict(estimator="harmonic", neighbours=6, window=3, lr=3e-3, train_steps=6000),
    "tiny-nb4-w4": dict(estimator="harmonic", neighbours=4, window=4, lr=3e-3, train_steps=6000),
    "tiny-w4-l4": dict(estimator="harmonic", neighbours=3, window=4, n_layers=4, lr=3e-3, train_steps=6000),
    "tiny-w4-ar": dict(neighbours=3, window=4, lr=3e-3, train_steps=6000, causal=True),
    "tiny-w4-gru64": dict(estimator="harmonic", neighbours=3, window=4, recurrent=64, lr=3e-3, train_steps=6000),
    "tiny-w4-gru128": dict(estimator="harmonic", neighbours=3, window=4, recurrent=128, lr=3e-3, train_steps=6000),
    "tiny-w4-gru64-ar": dict(neighbours=3, window=4, recurrent=64, lr=3e-3, train_steps=6000, causal=True),
    "tiny-w4-hmm64": dict(estimator="harmonic", neighbours=3, window=4, hmm_states=64, lr=3e-3, train_steps=6000),
    "tiny-w4-gru64-hmm64": dict(estimator="harmonic", neighbours=3, window=4, recurrent=64, hmm_states=64, lr=3e-3,
                                train_steps=6000),
    "tiny-w4-hmm512": dict(estimator="harmonic", neighbours=3, window=4, hmm_states=512, lr=3e-3, train_steps=6000),
    "tiny-w4-gru64-ng4": dict(estimator="harmonic", neighbours=3, window=4, recurrent=64, ngram=4, lr=3e-3,
                              train_steps=6000),
    "tiny-w4-ng4": dict(estimator="harmonic", neighbours=3, window=4, ngram=4, lr=3e-3, train_steps=6000),
    "ng4": dict(estimator="harmonic", ngram=4, lr=3e-3, train_steps=6000),
    "ng4-t10": dict(estimator="harmonic", ngram=4, lr=3e-3, table_lr=10.0, train_steps=2000),
    "ng4-t10-ar": dict(ngram=4, lr=3e-3, table_lr=10.0, train_steps=2000, causal=True),
    "ng4-t10-w4": dict(estimator="harmonic", neighbours=3, window=4, ngram=4, lr=3e-3, table_lr=10.0,
                       train_steps=2000),
    "ng4-t10-gru64": dict(estimator="harmonic", recurrent=64, ngram=4, lr=3e-3, table_lr=10.0, train_steps=2000),
    "ar": dict(causal=True),
    "ar-alibi": dict(causal=True, positions="rotary+learned+alibi"),
}


MDM_ESTIMATORS = ("time", "count", "harmonic")  # unbiased for the same NELBO gradient


def configure(language: str, changes: dict, steps: int | None = None) -> TrainConfig:
    c = {**BASE, **changes}
    if steps is not None:
        c["train_steps"] = steps
    model = ModelConfig(vocab_size=language_from_spec(language).n_symbols, seq_len=L, d_model=c["d_model"],
                        n_layers=c["n_layers"], n_heads=c["n_heads"], positions=c["positions"], causal=c["causal"],
                        neighbours=c["neighbours"], window=c["window"], recurrent=c["recurrent"],
                        hmm_states=c["hmm_states"], ngram=c["ngram"])
    return TrainConfig(model=model, language=language, train_steps=c["train_steps"], batch=c["batch"], lr=c["lr"],
                       estimator=c["estimator"], warmup_frac=c["warmup_frac"], grad_clip=c["grad_clip"],
                       val_size=1024, val_draws=8, seed=0, table_lr=c["table_lr"])


def _gradients(model, lang, name, batches):
    """Per-batch gradients (batches, P) of one loss at the model's parameters, and their norms."""
    model.train()
    grads = []
    for b in range(batches):
        x = torch.as_tensor(batch_at(lang, 123, b, BASE["batch"], L))
        g = torch.Generator().manual_seed(1000 + b)
        if name == "time":
            t, mask = diffusion_noise(len(x), L, g)
            loss = mdm_loss(model, x, t, mask).mean() / L
        elif name == "count":
            m, mask = count_noise(len(x), L, g)
            loss = mdm_loss_count(model, x, m, mask).mean() / L
        elif name == "harmonic":
            _, mask = harmonic_noise(len(x), L, g)
            loss = mdm_loss_harmonic(model, x, mask).mean() / L
        else:
            loss = ar_loss(model, x).mean() / L
        model.zero_grad()
        loss.backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None]).double())
    return torch.stack(grads)


def grad_noise(language: str, out: Path, batches: int = 48) -> None:
    """Noise of one batch's gradient: trace of its covariance over the squared norm of the true gradient.

    Both MDM estimators are unbiased for the same gradient, so the true gradient is estimated from
    the batches of both (with the bias of a squared mean removed); the AR model is measured at its
    own parameters.
    """
    lang = language_from_spec(language)
    rows = []
    for stage, steps in (("init", 0), ("after 500 steps", 500)):
        mdm_cfg, ar_cfg = configure(language, dict(estimator="count"), steps=max(steps, 1)), None
        ar_cfg = mdm_cfg.with_(model=mdm_cfg.model.with_(causal=True))
        with torch.random.fork_rng():
            torch.manual_seed(0)
            mdm = train(mdm_cfg, lang, device="cpu", progress=False).model if steps else Transformer(mdm_cfg.model)
            ar = train(ar_cfg, lang, device="cpu", progress=False).model if steps else Transformer(ar_cfg.model)
        G = {name: _gradients(mdm, lang, name, batches) for name in MDM_ESTIMATORS}
        G["ar"] = _gradients(ar, lang, "ar", batches)
        pooled = torch.cat([G[name] for name in MDM_ESTIMATORS])
        for name, g in G.items():
            ref = pooled if name != "ar" else g
            noise = float(((g - g.mean(0)) ** 2).sum(1).sum() / (len(g) - 1))
            ref_noise = float(((ref - ref.mean(0)) ** 2).sum(1).sum() / (len(ref) - 1))
            signal = float((ref.mean(0) ** 2).sum()) - ref_noise / len(ref)
            norms = g.norm(dim=1).numpy()
            row = {"what": "grad", "language": language, "stage": stage, "loss": name, "noise": noise,
                   "signal": signal, "noise_over_signal": noise / signal, "median_norm": float(np.median(norms)),
                   "clipped_fraction": float(np.mean(norms > 1.0)), "batches": batches}
            rows.append(row)
            print(f"{stage:16s} {name:6s} noise/signal {noise / signal:9.2f}  (noise {noise:.3g}, signal {signal:.3g})  "
                  f"median |g| {row['median_norm']:.3f}  clipped {row['clipped_fraction']:.2f}", flush=True)
    _append(out, rows)


def train_variants(languages, variants, out: Path, steps: int | None, threads: int) -> None:
    set_threads(threads)
    for language in languages:
        lang = language_from_spec(language)
        for name in variants:
            cfg = configure(language, VARIANTS[name], steps)
            t0 = time.perf_counter()
            res = train(cfg, lang, device="cpu", progress=False)
            wall = time.perf_counter() - t0
            le = ({"mean": math.nan, "ci": [math.nan, math.nan]} if cfg.model.causal else
                  learning_error(lang, MDMDenoiser(res.model), L, method="monte_carlo", num=256, seed=11))
            row = {"what": "train", "language": language, "variant": name, "changes": VARIANTS[name],
                   "config": cfg.to_dict(), "cpu_seconds": res.cpu_seconds, "wall_seconds": wall,
                   "torch_threads": torch.get_num_threads(), "val_gap": res.val_gap, "val_gap_ci": list(res.val_gap_ci),
                   "learning_error": le["mean"], "learning_error_ci": le["ci"], "entropy_rate": res.entropy_rate,
                   "val_nll": res.val_nll,
                   "kl_by_masked": None if cfg.model.causal else kl_by_masked(res.model, lang), "history": [{k: h[k] for k in ("step", "val_gap", "cpu_seconds")}
                                                       for h in res.history]}
            _append(out, [row])
            print(f"{language:22s} {name:22s} steps {cfg.train_steps:5d}  CPU {res.cpu_seconds:7.1f} s  "
                  f"gap {res.val_gap:+.4f} ({res.val_gap_ci[0]:+.4f}..{res.val_gap_ci[1]:+.4f})  "
                  f"eps {le['mean']:.4f} ({le['ci'][0]:.4f}..{le['ci'][1]:.4f})", flush=True)


COUNTS = (1, 4, 16, 32, 48)


@torch.no_grad()
def kl_by_masked(model, lang, counts=COUNTS, num: int = 512, seed: int = 5) -> dict:
    """Mean KL(q(. | x_U) || p_theta(. | x_U)) over the masked positions, for masks of exactly m positions.

    ``num`` sequences x ~ q of length L, for each m a mask of m positions drawn uniformly; q(x_i | x_U)
    is the language's exact posterior marginal.  m = 1 is the full-context posterior (all other
    tokens revealed); large m approach the marginal law.  Where the gap of a trained MDM sits.
    """
    rng = np.random.default_rng(seed)
    X = lang.sample_sequences(num, L, seed=seed)
    out = {}
    for m in counts:
        masked = rng.random(X.shape).argsort(axis=1) < m  # (num, L) exactly m masked per row
        Xm = np.where(masked, MASK, X)
        q = lang.posterior_marginals(Xm)  # (num, L, V)
        logp = subs_log_probs(model.eval(), torch.as_tensor(Xm)).double().numpy()
        logq = np.log(np.where(q > 0, q, 1.0))
        kl = np.where(q > 0, q * (logq - logp), 0.0).sum(axis=-1)
        out[m] = float(kl[masked].mean())
    return out


def diagnose(checkpoint: str) -> None:
    """Print the KL by number of masked positions of a trained MDM checkpoint (``mdmt train`` output)."""
    model, cfg, _ = load_run(checkpoint)
    if cfg.model.causal or cfg.model.seq_len != L:
        raise SystemExit(f"{checkpoint}: need an MDM trained at L = {L}")
    kl = kl_by_masked(model, language_from_spec(cfg.language))
    print(f"{cfg.language}: KL by masked count m " + "  ".join(f"m={m}: {v:.4f}" for m, v in kl.items()))


def train_on_posterior(language: str, name: str, out: Path, steps: int | None, threads: int) -> None:
    """The MDM of variant ``name`` trained on the exact posterior q(. | x_U) as its target instead of the token x_i.

    The harmonic estimator's masks, the same weight; the cross-entropy -sum_v q(v | x_U) log p_theta(v | x_U)
    has the same expectation over x ~ q as -log p_theta(x_i | x_U) (so the same gradient on average),
    without the noise of the sampled token.  What remains of the gap after this change is not label
    noise but what the network cannot fit in the steps given.  Not a training method of mdmt: it
    uses the language's exact posterior, which data do not give.
    """
    set_threads(threads)
    lang = language_from_spec(language)
    cfg = configure(language, VARIANTS[name], steps)
    if cfg.estimator != "harmonic" or cfg.model.causal:
        raise SystemExit(f"posterior: variant {name!r} must be an MDM with the harmonic estimator")
    torch.manual_seed(cfg.seed)
    model = Transformer(cfg.model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), weight_decay=0.0, foreach=True)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    weight = sum(1.0 / k for k in range(1, L + 1))  # H_L
    t0 = time.process_time()
    for step in range(cfg.train_steps):
        for group in opt.param_groups:
            group["lr"] = cfg.lr * lr_factor(step, cfg.train_steps, cfg.warmup_frac)
        x = torch.as_tensor(batch_at(lang, cfg.seed, step, cfg.batch, L))
        _, mask = harmonic_noise(cfg.batch, L, gen)
        xt = torch.where(mask, torch.full_like(x, MASK), x)
        q = torch.as_tensor(lang.posterior_marginals(xt.numpy()), dtype=torch.float32)  # (B, L, V)
        model.train()
        logp = torch.log_softmax(model(mdm_input(xt, cfg.model.vocab_size)), dim=-1)
        loss = -(q * logp).sum(-1)[mask].sum() * weight / (cfg.batch * L)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
    cpu = time.process_time() - t0
    kl = kl_by_masked(model, lang)
    _append(out, [{"what": "posterior-targets", "language": language, "variant": name, "changes": VARIANTS[name],
                   "config": cfg.to_dict(), "cpu_seconds": cpu, "torch_threads": torch.get_num_threads(), "kl_by_masked": kl}])
    print(f"{language:22s} {name:22s} exact-posterior targets, steps {cfg.train_steps}  CPU {cpu:7.1f} s  KL by m "
          + "  ".join(f"{m}: {v:.4f}" for m, v in kl.items()), flush=True)


def _append(out: Path, rows) -> None:
    prov = record()
    with open(out, "a") as fh:
        for r in rows:
            fh.write(json.dumps({**r, "commit": prov["commit"], "machine": prov["machine"]["cpu"]},
                                default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else str(v))
                     + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("grad", "train", "diagnose", "posterior"))
    p.add_argument("--checkpoint", help="diagnose: a checkpoint of an MDM trained at L = 64")
    p.add_argument("--language", default="preset:4gram-ter")
    p.add_argument("--languages", default="preset:4gram-ter")
    p.add_argument("--variants", default="base,count")
    p.add_argument("--train-steps", type=int, default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="ablation.jsonl")
    a = p.parse_args()
    if a.what == "diagnose":
        diagnose(a.checkpoint)
    elif a.what == "posterior":
        for name in a.variants.split(","):
            train_on_posterior(a.language, name, Path(a.out), a.train_steps, a.threads)
    elif a.what == "grad":
        set_threads(a.threads)
        grad_noise(a.language, Path(a.out))
    else:
        unknown = [v for v in a.variants.split(",") if v not in VARIANTS]
        if unknown:
            raise SystemExit(f"unknown variant {unknown[0]!r}; known: {', '.join(VARIANTS)}")
        train_variants(a.languages.split(","), a.variants.split(","), Path(a.out), a.train_steps, a.threads)


if __name__ == "__main__":
    main()
