"""``mdmt speed``: wall time of N-step MDM sampling (ddpm_cache) against AR generation with a KV cache (Section 5).

Both models have the same architecture (``--model``) and freshly initialized weights: the
time of a forward pass does not depend on the weights.  The MDM takes NFE <= N network calls
per sequence on the full length L (bidirectional, no cache); the AR model takes L calls of one
token each through the KV cache.  The printed ratio is AR time / MDM time (> 1: MDM faster).
"""

from __future__ import annotations

HELP = "time MDM sampling (N steps, ddpm_cache) against AR with a KV cache; print the ratio"


def _ints(name: str, text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise ValueError(f"{name} must be positive integers, got {text!r}")
    return vals


def add_arguments(p):
    p.add_argument("--model", choices=["tiny", "paper"], default="tiny", help="architecture (default tiny)")
    p.add_argument("--lengths", default="64,128", help="comma-separated sequence lengths L (default 64,128)")
    p.add_argument("--steps", default="16", help="comma-separated MDM step counts N (default 16)")
    p.add_argument("--batch", type=int, default=4, help="sequences per run (default 4)")
    p.add_argument("--vocab", type=int, default=8, help="vocabulary size V (default 8)")
    p.add_argument("--repeats", type=int, default=1, help="timed runs after one warm-up; the median is reported (default 1)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args) -> int:
    import statistics

    import torch

    from empirical.model import ModelConfig, Transformer
    from empirical.sampling import MDMDenoiser, ar_sample, ddpm_cache
    from empirical.train import default_device

    from ._common import format_table, print_json

    lengths = _ints("--lengths", args.lengths)
    steps = _ints("--steps", args.steps)
    for name, v in (("--batch", args.batch), ("--vocab", args.vocab), ("--repeats", args.repeats)):
        if v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v}")
    device = torch.device(args.device) if args.device else default_device()

    def timed(fn):
        fn()  # warm-up
        runs = [fn() for _ in range(args.repeats)]
        return statistics.median(r.seconds for r in runs), runs[-1]

    rows = []
    for L in lengths:
        torch.manual_seed(args.seed)
        ar = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=True)).to(device).eval()
        mdm = Transformer(ModelConfig.preset(args.model, args.vocab, seq_len=L, causal=False)).to(device).eval()
        t_ar, r_ar = timed(lambda: ar_sample(ar, args.batch, L, seed=args.seed, batch=args.batch, device=device))
        rows.append({"L": L, "model": "ar", "N": L, "nfe_mean": float(r_ar.nfe.mean()), "seconds": t_ar, "ar_over_mdm": 1.0})
        den = MDMDenoiser(mdm, batch=args.batch)
        for N in steps:
            t_m, r_m = timed(lambda: ddpm_cache(den, args.batch, L, "linear", N, seed=args.seed, batch=args.batch, device=device))
            rows.append({"L": L, "model": "mdm", "N": N, "nfe_mean": float(r_m.nfe.mean()), "seconds": t_m,
                         "ar_over_mdm": t_ar / t_m if t_m > 0 else None})
    meta = {"model": args.model, "batch": args.batch, "vocab": args.vocab, "repeats": args.repeats, "device": str(device),
            "torch": torch.__version__}
    if args.json:
        print_json({**meta, "rows": rows})
        return 0
    print(format_table(["L", "model", "N", "NFE", "seconds", "AR/MDM"],
                       [[r["L"], r["model"], r["N"], r["nfe_mean"], r["seconds"], r["ar_over_mdm"]] for r in rows]))
    print(f"model {args.model}, batch {args.batch}, device {device}; AR/MDM > 1 means MDM sampling is faster")
    return 0
