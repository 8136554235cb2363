"""``mdmt sample``: the N-step sampler at any length -- the oracle MDM, or a network trained by ``mdmt train`` --
with SER and generative perplexity.

Without ``--checkpoint`` the denoiser is the oracle q(x_i | x_U) of ``--language`` (the message
kernels of :mod:`mdmt.constructions.reverse.sampler`).  With ``--checkpoint OUT/ckpt.pt`` it is
the trained network: an MDM runs the ddpm_cache sampler with N steps, an AR model generates token
by token (N = L); the language (default: the one it was trained on) scores the samples.
"""

from ._common import (add_force, add_json, add_language, add_length, add_num, add_schedule, add_seed, add_steps, at_least,
                      check_interval_multiple, integer, load_language, print_quantities, schedule_pi)


def add_arguments(p):
    add_language(p, required=False, help_extra=" (required without --checkpoint; with it, default: the "
                                               "language the network was trained on)")
    p.add_argument("--checkpoint", metavar="CKPT",
                   help="sample from the network of this checkpoint (mdmt train's OUT/ckpt.pt) instead of the oracle")
    add_length(p, required=False, help="sequence length L (required without --checkpoint; default: the network's)")
    add_steps(p, required=False)
    add_num(p, 1000, "samples")
    add_seed(p)
    p.add_argument("--kl", action="store_true",
                   help="also estimate E_tau KL(q||p_tau)/L (the C1 bound on the TER gap) of the sampler's denoiser")
    p.add_argument("--out", help="write the samples here, one per line (after a # header naming the request)")
    add_force(p)
    add_schedule(p)
    p.add_argument("--batch", type=integer, default=256, help="sequences per network call (default 256)")
    p.add_argument("--device", default=None, help="torch device for --checkpoint (default: cuda if available, else cpu)")
    add_json(p)


def load_network(path: str, language: str | None, length: int | None, device=None):
    """(model, language SPEC, language, L) of a checkpoint, the language and L defaulting to the checkpoint's."""
    from mdmt.empirical.device import torch_device
    from mdmt.empirical.train import load_run

    device = torch_device(device)  # checked before the checkpoint is read
    model, cfg, _ = load_run(path)
    model = model.to(device)
    spec = language or cfg.language
    if spec is None:
        raise ValueError(f"checkpoint {path} does not name its language; give --language")
    lang = load_language(spec, "--language" if language else f"the language of --checkpoint {path},")
    if lang.n_symbols != model.cfg.vocab_size:
        raise ValueError(f"--language {spec} has {lang.n_symbols} tokens but the network's vocabulary has "
                         f"{model.cfg.vocab_size}")
    L = at_least("--length", length) or model.cfg.seq_len
    if L > model.cfg.seq_len:
        raise ValueError(f"--length {L} exceeds the network's seq_len = {model.cfg.seq_len}")
    return model, spec, lang, L


def run(args) -> int:
    if not args.out:
        return _run(args)
    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_file

    check_output_file(args.out, force=True)  # a folder or a missing folder is named before the lock is taken
    with output_lock(args.out, folder=False):  # one writer per --out: a second run is refused at once
        return _run(args)


def _run(args) -> int:
    import numpy as np

    from mdmt.constructions.reverse.metrics import perplexity_note, sample_metrics
    from mdmt.constructions.reverse.sampler import assignment_kl_estimate, sample_mdm
    from mdmt.constructions.reverse.schedules import expected_nfe

    at_least("--num", args.num)
    at_least("--batch", args.batch)
    at_least("--steps", args.steps)
    if args.force and not args.out:
        raise ValueError("--force applies to --out (it lets the samples replace a file mdmt did not write)")
    header = out_path = None
    if args.out:  # checked before sampling: a bad --out fails at once, not after the work
        from mdmt.runtime.outputs import check_output_file

        source = (f"--checkpoint {args.checkpoint}" if args.checkpoint else "") + \
            (f" --language {args.language}" if args.language else "")
        header = " ".join(f"# mdmt sample {source} --length {args.length} --steps {args.steps} --num {args.num} "
                          f"--seed {args.seed} --schedule {args.schedule}".split()) + "\n"
        out_path = check_output_file(args.out, force=args.force, same=lambda p: _first_line(p) == header)
    if args.checkpoint is None:
        if args.device is not None:
            raise ValueError(f"--device {args.device} applies to a network (--checkpoint); the oracle sampler runs "
                             "on the CPU")
        missing = [f for f, v in (("--language", args.language), ("--length", args.length), ("--steps", args.steps))
                   if v is None]
        if missing:
            raise ValueError(f"the oracle sampler needs {', '.join(missing)} (or sample a network with --checkpoint)")
        lang, L, kind, den = load_language(args.language), at_least("--length", args.length), "oracle", None
        check_interval_multiple(args.language, L)
        pi = schedule_pi(args.schedule, args.steps)
        res = sample_mdm(lang, L, pi, args.num, seed=args.seed)
    else:
        from mdmt.empirical.sampling import MDMDenoiser, sample_model

        model, spec, lang, L = load_network(args.checkpoint, args.language, args.length, args.device)
        kind = "ar" if model.cfg.causal else "mdm"
        if kind == "ar" and args.steps is not None:
            raise ValueError("an AR network generates one token per step (N = L); drop --steps")
        if kind == "ar" and args.schedule.strip() != "linear":
            raise ValueError(f"--schedule {args.schedule} applies to an MDM; an AR network generates one token per "
                             "step")
        if kind == "mdm" and args.steps is None:
            raise ValueError("sampling an MDM needs --steps N")
        if kind == "ar" and args.kl:
            raise ValueError("--kl bounds the TER of an MDM sampler; for an AR network use mdmt evaluate")
        pi = schedule_pi(args.schedule, args.steps) if kind == "mdm" else None
        den = MDMDenoiser(model, batch=args.batch) if kind == "mdm" else None
        res = sample_model(model, args.num, L, pi, seed=args.seed, batch=args.batch)
    metrics = sample_metrics(lang, res.samples)
    out = {"model": kind, "checkpoint": args.checkpoint, "length": L,
           "steps": args.steps if kind != "ar" else L, "schedule": args.schedule if kind != "ar" else None,
           **metrics, "nfe_mean": float(res.nfe.mean()),
           "expected_nfe": expected_nfe(pi, L) if pi is not None else float(L), "seconds": res.seconds}
    out.update(_ter_gap(lang, L, metrics, args.num, args.seed))
    note = perplexity_note(metrics)
    if note:
        out["note"] = note
    if args.kl:
        est = assignment_kl_estimate(lang, L, pi, args.num, denoiser=den, seed=args.seed + 1, batch=args.batch)
        out["assignment_kl_per_token_nats"] = est["kl_per_token_nats"]
        out["assignment_kl_ci"] = est["ci"]
    if out_path is not None:
        from mdmt.runtime.outputs import atomic_file

        with atomic_file(out_path, "w") as fh:
            fh.write(header)
            np.savetxt(fh, res.samples, fmt="%d")
    print_quantities(out, args.json)
    return 0


def _ter_gap(lang, L: int, metrics: dict, num: int, seed: int) -> dict:
    """The language's entropy rate H(X_1..X_L)/L (exact for an n-gram; a Monte Carlo mean over ``num`` sequences of q,
    with its interval, otherwise) and the TER gap the samples show: generative NLL per token minus it, which is
    >= 0 in expectation and 0 for a perfect sampler (Section 4.2) -- what tells whether a perplexity is good."""
    from mdmt.empirical.metrics import entropy_rate

    H = entropy_rate(lang, L, num=num, seed=seed + 2)
    lo, hi = metrics["gen_nll_ci"]
    return {"entropy_rate": H["value"], "entropy_rate_ci": H["ci"],
            "entropy_rate_method": "exact" if H["exact"] else f"Monte Carlo over {num} sequences of q",
            "ter_gap": metrics["gen_nll_per_token"] - H["value"],
            "ter_gap_ci": [lo - H["ci"][1], hi - H["ci"][0]]}


def _first_line(path) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline()
