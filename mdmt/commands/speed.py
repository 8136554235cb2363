"""``mdmt speed``: wall time of N-step MDM sampling (ddpm_cache) against AR generation with a KV cache (Section 5).

Both models have the same architecture (``--model``) and freshly initialized weights: the
time of a forward pass does not depend on the weights.  The MDM takes NFE <= N network calls
per sequence on the full length L (bidirectional, no cache); the AR model takes L calls of one
token each through the KV cache.

Timing on a shared machine drifts, so every configuration is run once as a warm-up and then
``--repeats`` times, the AR run and the MDM runs of one repeat back to back.  Reported: the
median wall time of each with its spread (min - max), and the ratio AR time / MDM time (> 1: the
MDM is faster) as the median of the per-repeat ratios with a distribution-free interval for
that median (order statistics; its confidence level is printed, >= 95% from 7 repeats on).
"""

from __future__ import annotations

import math

from ._common import (add_json, add_model, add_seed, add_steps, at_least, format_table, int_list, integer, print_json,
                      schedule_pi)


def add_arguments(p):
    add_model(p)
    p.add_argument("--lengths", default="64,128", help="comma-separated sequence lengths L (default 64,128)")
    add_steps(p, required=False, default="16", many=True)
    p.add_argument("--batch", type=integer, default=4, help="sequences per run (default 4)")
    p.add_argument("--vocab", type=integer, default=8, help="vocabulary size V (default 8)")
    p.add_argument("--repeats", type=integer, default=7,
                   help="timed runs of each configuration after one warm-up (default 7)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    add_seed(p)
    add_json(p)


def median_interval(values, level: float = 0.95) -> tuple[float, float, float, float]:
    """(median, low, high, coverage): the narrowest symmetric order-statistic interval covering the median
    with probability >= ``level`` (binomial, distribution-free); the widest one (min, max) if none does."""
    xs = sorted(values)
    n = len(xs)
    med = (xs[(n - 1) // 2] + xs[n // 2]) / 2
    best = (xs[0], xs[-1], 1.0 - 2.0 * 0.5 ** n)
    for k in range(1, (n + 1) // 2):  # interval (x_(k+1), x_(n-k)) in 1-based order statistics
        coverage = 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k + 1)) * 0.5 ** n
        if coverage < level:
            break
        best = (xs[k], xs[n - 1 - k], coverage)
    return med, best[0], best[1], best[2]


def _check_vocab(model: str, vocab: int) -> None:
    """Refuse a --vocab the architecture's n-gram layer cannot hold, naming the flag and the largest that fits."""
    from mdmt.empirical.model import PRESETS
    from mdmt.empirical.ngram_layer import MAX_NGRAM_ROWS, ngram_rows

    n = PRESETS[model].get("ngram") or 0
    if n and ngram_rows(n, vocab) > MAX_NGRAM_ROWS:
        largest = round(MAX_NGRAM_ROWS ** (1 / (n - 1)))  # then exactly: the largest V with (V + 1)^(n - 1) <= max
        while ngram_rows(n, largest) > MAX_NGRAM_ROWS:
            largest -= 1
        raise ValueError(f"--vocab {vocab} is too large for --model {model}: its order-{n} n-gram layer has "
                         f"(V + 1)^{n - 1} contexts, at most {MAX_NGRAM_ROWS} (--vocab <= {largest})")


def run(args) -> int:
    import torch

    from mdmt.runtime.resources import check_memory
    from mdmt.empirical.model import ModelConfig, Transformer, estimated_bytes
    from mdmt.empirical.sampling import MDMDenoiser, ar_sample, ddpm_cache
    from mdmt.empirical.device import torch_device

    lengths = int_list("--lengths", args.lengths)
    steps = int_list("--steps", args.steps)
    for name, v in (("--batch", args.batch), ("--vocab", args.vocab), ("--repeats", args.repeats)):
        at_least(name, v)
    _check_vocab(args.model, args.vocab)
    pis = {N: schedule_pi("linear", N) for N in steps}  # a --steps too large is refused here, naming the flag
    device = torch_device(args.device)

    for L in lengths:  # before any work: every configuration must fit (the AR and MDM twins are the same size)
        cfg = ModelConfig.preset(args.model, args.vocab, seq_len=L)
        check_memory(f"the {args.model} network at L = {L}, V = {args.vocab}, batch {args.batch}",
                     estimated_bytes(cfg, args.batch), "use smaller --lengths, --vocab or --batch")
    rows = []
    for L in lengths:
        torch.manual_seed(args.seed)
        ar = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=True)).to(device).eval()
        mdm = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=False)).to(device).eval()
        den = MDMDenoiser(mdm, batch=args.batch)
        runs = {"ar": lambda: ar_sample(ar, args.batch, L, seed=args.seed, batch=args.batch, device=device)}
        for N in steps:
            pi = pis[N]
            runs[N] = (lambda pi=pi: ddpm_cache(den, args.batch, L, pi, seed=args.seed, batch=args.batch,
                                                 device=device))
        last = {k: f() for k, f in runs.items()}  # warm-up
        times = {k: [] for k in runs}
        for _ in range(args.repeats):
            for k, f in runs.items():
                last[k] = f()
                times[k].append(last[k].seconds)
        t_ar = median_interval(times["ar"])
        rows.append({"L": L, "model": "ar", "N": L, "nfe_mean": float(last["ar"].nfe.mean()), "seconds": t_ar[0],
                     "seconds_min": min(times["ar"]), "seconds_max": max(times["ar"]), "ar_over_mdm": 1.0,
                     "ratio_lo": None, "ratio_hi": None, "ratio_coverage": None, "times": times["ar"]})
        for N in steps:
            ratios = [a / m for a, m in zip(times["ar"], times[N]) if m > 0]
            r, lo, hi, cov = median_interval(ratios) if ratios else (None, None, None, None)
            rows.append({"L": L, "model": "mdm", "N": N, "nfe_mean": float(last[N].nfe.mean()),
                         "seconds": median_interval(times[N])[0], "seconds_min": min(times[N]),
                         "seconds_max": max(times[N]), "ar_over_mdm": r, "ratio_lo": lo, "ratio_hi": hi,
                         "ratio_coverage": cov, "times": times[N]})
    meta = {"model": args.model, "batch": args.batch, "vocab": args.vocab, "repeats": args.repeats, "warmup": 1,
            "device": str(device), "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    if args.json:
        print_json({**meta, "rows": rows})
        return 0

    def ratio(r):
        if r["model"] == "ar" or r["ar_over_mdm"] is None:
            return ""
        return f"{r['ar_over_mdm']:.3g} ({r['ratio_lo']:.3g}-{r['ratio_hi']:.3g}, {100 * r['ratio_coverage']:.1f}%)"

    print(format_table(["L", "model", "N", "NFE", "median s", "min s", "max s", "AR/MDM (interval, level)"],
                       [[r["L"], r["model"], r["N"], r["nfe_mean"], r["seconds"], r["seconds_min"], r["seconds_max"],
                         ratio(r)] for r in rows]))
    print(f"model {args.model}, batch {args.batch}, device {device}, {args.repeats} timed repeats after 1 warm-up; "
          "AR/MDM > 1 means MDM sampling is faster")
    return 0
