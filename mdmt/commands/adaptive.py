"""``mdmt adaptive``: reverse processes that choose which positions to reveal, on any language.

``sample`` runs a policy's sampler (oracle, or a trained MDM with ``--checkpoint``); ``exact`` its
exact output law at small L; ``ser`` the SER study on the interval HMM; ``ter`` the TER study on an
n-gram (docs/adaptive.md).
"""

from ._common import (add_force, add_format, add_json, add_language, add_length, add_num, add_scheduler, add_seed, add_steps,
                      at_least, check_interval_multiple, format_table, int_list, integer, load_language, name_list,
                      print_json,
                      print_quantities, scheduler_of)

SER_COLUMNS = ["l", "L", "policy", "N", "steps", "ser", "ci", "nfe", "method", "reached", "theorem44_lower"]
TER_COLUMNS = ["language", "L", "policy", "steps", "parameter", "kl_per_token", "ci", "nfe"]


def _policy(p, default="confidence"):
    from mdmt.defaults import POLICY_FORMS

    p.add_argument("--policy", default=default, metavar="SPEC",
                   help=f"reveal rule: {POLICY_FORMS} (default {default}); threshold and entropy-sum run until done "
                        "unless --steps caps them")


def _instance(p):
    """--language, --length, --steps (optional), --policy and the decoding options (--sizes, --remainder, --decode)."""
    from ._decoding import add_decoding

    add_language(p)
    add_length(p)
    add_steps(p, required=False)
    _policy(p)
    add_decoding(p)


def _parse_policy(args):
    """The policy of --policy with -N, --sizes and --remainder."""
    from mdmt.constructions.reverse.policies import parse_policy

    from ._decoding import sizes_of

    return parse_policy(args.policy, args.steps, cap=True, sizes=sizes_of(args), remainder=args.remainder)


def _parts_options(p):
    p.add_argument("--jobs", type=integer, default=1,
                   help="compute the study's independent parts on this many worker processes of an embedded Dask "
                        "cluster, one thread each, longest expected first (default 1: in this process)")
    add_scheduler(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")


def _outputs(p, what):
    p.add_argument("--out", help=f"write {what}.csv, {what}.json (with provenance) and the figure {what}.png "
                                 "(--format) into this folder")
    add_format(p)
    add_force(p)
    add_json(p)


def written_by_mdmt(kind: str, fmt: str = "png") -> dict:
    """The files of an ``adaptive ser|ter`` folder and how each is recognised as mdmt's (the folder rule of --out)."""
    from mdmt.runtime.outputs import csv_header_is, figure_written_by, json_with_provenance
    from mdmt.plots import figure_files

    name, columns = f"adaptive_{kind}", SER_COLUMNS if kind == "ser" else TER_COLUMNS
    return {f"{name}.csv": lambda p: csv_header_is(p, columns), f"{name}.json": json_with_provenance,
            **{file: lambda p, tag=tag: figure_written_by(p, tag)
               for file, tag in figure_files(f"{name}.json", fmt).items()}}


def add_arguments(p):
    from mdmt.defaults import SER_POLICIES, TER_POLICIES

    sub = p.add_subparsers(dest="kind", metavar="sample|exact|ser|ter", parser_class=type(p))
    sub.required = True
    s = sub.add_parser("sample", help="run a policy's sampler at any L: SER, generative perplexity, NFE",
                       description="run a policy's Monte Carlo sampler with the oracle (or a trained MDM) at any L")
    _instance(s)
    add_num(s, 1000, "samples")
    add_seed(s)
    s.add_argument("--checkpoint", help="a trained MDM checkpoint (mdmt train) as the denoiser instead of the oracle")
    s.add_argument("--kl", action="store_true", help="also estimate the bound E[log q(x) - log p_traj(x)]/L on the TER gap")
    add_json(s)
    e = sub.add_parser("exact", help="exact output law of a policy at small L: KL, SER, E[NFE], TC and learning terms",
                       description="exact output law of a policy (enumeration over trajectories, small L)")
    _instance(e)
    add_json(e)
    r = sub.add_parser("ser", help="SER of each policy on the interval HMM against N and L, beside Theorem 4.4",
                       description="SER on the interval HMM (oracle) per policy: against N at one length, and the "
                                   "smallest N reaching the target against L")
    r.add_argument("--interval-lengths", default="3,4,5", help="interval lengths l, comma-separated (default 3,4,5)")
    r.add_argument("--intervals", default="4,8,16,32,64",
                   help="numbers of intervals K (L = K l), comma-separated (default 4,8,16,32,64)")
    r.add_argument("--curve-length", type=integer, default=60,
                   help="the length L of the SER-against-N curves, a multiple of every l (default 60)")
    r.add_argument("--policies", default=SER_POLICIES, metavar="SPEC,SPEC,...", help="policies, comma-separated")
    r.add_argument("--target", type=float, default=0.1, help="SER target (default 0.1)")
    add_num(r, 2000, "reveal trajectories per Monte Carlo point")
    add_seed(r)
    _parts_options(r)
    _outputs(r, "adaptive_ser")
    t = sub.add_parser("ter", help="smallest N (or NFE) reaching a TER target against L, per policy, on a language",
                       description="TER study: the smallest N whose Monte Carlo bound on KL/L meets the target")
    add_language(t, required=False, help_extra=" (default preset:3gram-ter)")
    t.add_argument("--lengths", default="32,64,128,256", help="lengths L, comma-separated (default 32,64,128,256)")
    t.add_argument("--policies", default=TER_POLICIES + ",threshold,entropy-sum", metavar="SPEC,SPEC,...",
                   help="policies, comma-separated; threshold and entropy-sum sweep their parameter")
    t.add_argument("--target", type=float, default=0.05, help="target for KL/L in nats per token (default 0.05)")
    add_num(t, 256, "sequences per Monte Carlo point")
    add_seed(t)
    _parts_options(t)
    _outputs(t, "adaptive_ter")


def run(args) -> int:
    command = {"sample": _sample, "exact": _exact, "ser": _ser, "ter": _ter}[args.kind]
    if not (getattr(args, "out", None) and args.kind in ("ser", "ter")):
        return command(args)
    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_folder
    from mdmt.runtime.provenance import record

    # before the work: a file there that mdmt did not write is refused unless --force, and one run writes at a time
    same = written_by_mdmt(args.kind, args.format)
    check_output_folder(args.out, files=list(same), force=args.force, same=same)
    with output_lock(args.out):
        args.provenance = record()  # the command, commit and machine, taken when the run starts
        return command(args)


def _denoiser(args, lang):
    if not args.checkpoint:
        from mdmt.constructions.languages.spec import interval_length_of

        l = interval_length_of(args.language)
        if l is None:
            return None, "oracle"
        from mdmt.constructions.reverse.interval_oracle import IntervalOracle

        return IntervalOracle(l), "oracle (interval closed form)"
    from mdmt.empirical.sampling import MDMDenoiser
    from mdmt.empirical.train import load_model

    model = load_model(args.checkpoint)
    if model.cfg.vocab_size != lang.n_symbols:
        raise ValueError(f"checkpoint {args.checkpoint} has vocabulary {model.cfg.vocab_size}, the language "
                         f"{lang.n_symbols}")
    return MDMDenoiser(model), f"trained MDM {args.checkpoint}"


def _sample(args) -> int:
    from mdmt.constructions.reverse.metrics import perplexity_note, sample_metrics
    from mdmt.constructions.reverse.policy_sampler import sample_policy, teacher_forced_estimate

    from mdmt.runtime.resources import check_memory

    _check_instance(args)
    at_least("--num", args.num)
    if args.kl and args.decode == "greedy":
        raise ValueError("--kl estimates the bound for tokens sampled from the marginals; it does not apply to "
                         "--decode greedy")
    lang = load_language(args.language)
    check_memory(f"--num {args.num} samples of --length {args.length} with their reveal steps",
                 _BYTES_PER_POSITION * args.num * args.length + 16 * min(args.num, 512) * args.length * lang.n_symbols,
                 "use a smaller --num or --length")
    if getattr(lang, "kind", None) == "explicit":
        from ._decoding import check_explicit_length

        check_explicit_length(lang, args)
    pol = _parse_policy(args)
    den, what = _denoiser(args, lang)
    if hasattr(pol, "sample") and not args.checkpoint:  # remasking, verified drafting: the language's own oracle
        den, what = None, "oracle"
    try:
        res = sample_policy(lang, args.length, pol, args.num, denoiser=den, seed=args.seed, decode=args.decode)
    except ValueError as exc:
        raise _more_steps_than_positions(args, exc) from None
    metrics = sample_metrics(lang, res.samples)
    out = {"length": args.length, "steps": args.steps, "policy": pol.spec, "decode": args.decode, "denoiser": what,
           **metrics, "nfe_mean": float(res.nfe.mean())}
    note = perplexity_note(metrics)
    if note:
        out["note"] = note
    if args.kl:
        est = teacher_forced_estimate(lang, args.length, pol, args.num, denoiser=den, seed=args.seed + 1)
        out["assignment_kl_per_token_nats"] = est["kl_per_token_nats"]
        out["assignment_kl_ci"] = est["ci"]
    print_quantities(out, args.json)
    return 0


def _exact(args) -> int:
    from mdmt.constructions.reverse.policy_exact import exact_policy_law, teacher_forced

    _check_instance(args)
    lang = load_language(args.language)
    if getattr(lang, "kind", None) == "explicit":  # the law on the support (mdmt.constructions.reverse.support_exact)
        from ._decoding import explicit_exact

        try:
            out = explicit_exact(lang, args, _parse_policy(args))
        except ValueError as exc:
            raise _more_steps_than_positions(args, exc) from None
        print_quantities(out, args.json)
        return 0
    if args.decode == "greedy":
        raise ValueError(f"--decode greedy: the exact law of greedy decoding is computed on explicit laws (task:NAME "
                         f"or an explicit language file), not on {args.language}")
    pol = _parse_policy(args)
    try:
        law = exact_policy_law(lang, args.length, pol, support_only=False)
    except ValueError as exc:
        raise _more_steps_than_positions(args, exc) from None
    # remasking and verified drafting are not reveal-only processes: they have no teacher-forced chain
    tf = {} if hasattr(pol, "exact_law") else teacher_forced(lang, args.length, pol)
    out = {"length": args.length, "steps": args.steps, "policy": pol.spec, "kl_nats": law.result.kl_nats,
           "kl_bits_per_token": law.result.kl_bits_per_token, "ser": law.result.ser,
           "expected_nfe": law.expected_nfe, **{f"teacher_forced_{k}": v for k, v in tf.items()}}
    print_quantities(out, args.json)
    return 0


_BYTES_PER_POSITION = 48  # the policy sampler's (num, L) arrays: tokens, reveal steps, uniforms, keys and masks


def _check_instance(args) -> None:
    """--length and --steps of sample and exact, checked naming the flags before any library call."""
    at_least("--length", args.length)
    at_least("--steps", args.steps)
    check_interval_multiple(args.language, args.length)


def _more_steps_than_positions(args, exc: ValueError) -> ValueError:
    """The library's refusal of N > L for a fixed-size rule, told with the flags (threshold rules may take N > L)."""
    if args.steps is not None and str(exc).startswith(f"N = {args.steps} steps > L = {args.length}:"):
        return ValueError(f"--steps {args.steps} > --length {args.length}: --policy {args.policy} reveals at least "
                          "one position per step")
    return exc


def _check_target(target: float, what: str) -> float:
    if not 0 < target < 1e9:
        raise ValueError(f"--target must be a positive number ({what}), got {target!r}")
    return target


def _ser(args) -> int:
    from mdmt.bounds.studies.adaptive import ser_steps_grid, ser_study
    from mdmt.constructions.reverse.policies import split_policies

    ls = int_list("--interval-lengths", args.interval_lengths, minimum=2)
    Ks = int_list("--intervals", args.intervals)
    specs = tuple(split_policies(args.policies)) or name_list("--policies", args.policies, "policy")
    target = _check_target(args.target, "an SER")
    at_least("--num", args.num)
    Lc = at_least("--curve-length", args.curve_length)
    bad = [l for l in ls if Lc % l]
    if bad:
        raise ValueError(f"--curve-length {Lc} is not a multiple of the interval length {bad[0]}")
    _check_ser_size(args, ls, Ks, specs, ser_steps_grid(Lc), target)
    at_least("--jobs", args.jobs)
    res = ser_study(ls, Ks, specs, target=target, curve_length=Lc, num=args.num, seed=args.seed, jobs=args.jobs,
                    scheduler=scheduler_of(args), progress=not args.no_progress)
    mins = res["min_steps"]
    return _report(args, res, _write_ser, f"smallest N with SER <= {target} (NFE in brackets; '-' = not reached):",
                   ["l", "policy"] + [f"L={K}l" for K in Ks], lambda: _pivot(mins, ls, specs, Ks))


def _check_ser_size(args, ls, Ks, specs, steps, target) -> None:
    """Refuse (resource guard) an SER study whose curves or smallest-N searches need too much work or memory.

    The curves are charged to ``--curve-length``, the searches to ``--intervals``; both scale with ``--num``.
    """
    from mdmt.bounds.studies.adaptive import min_steps_ser_cost, ser_curve_cost
    from mdmt.constructions.reverse.interval_policies import check_oracle_scores

    for l in ls:  # the adaptive rules score the 2^(l-1) tokens of the interval HMM: refused before any work
        check_oracle_scores(l, specs, f"--interval-lengths {l}")
    Lc = args.curve_length
    _check_costs(f"--curve-length {Lc}: the SER curves at L = {Lc} ({len(specs)} policies, --num {args.num})",
                 (ser_curve_cost(l, Lc, specs, steps, args.num) for l in ls),
                 "use a smaller --curve-length, --num or fewer --policies")
    _check_costs(f"--intervals {args.intervals}: the smallest-N searches up to L = {max(Ks) * max(ls)} "
                 f"({len(specs)} policies, --num {args.num})",
                 (min_steps_ser_cost(l, K * l, spec, target, args.num) for l in ls for K in Ks for spec in specs),
                 "use fewer or smaller --intervals, a smaller --num or fewer --policies")


def _check_ter_size(args, spec, lengths, specs, target) -> None:
    """Refuse (resource guard) a TER study whose Monte Carlo searches need too much work or memory, charged to
    ``--lengths`` (each search draws --num trajectories of L positions for each N it tries)."""
    from mdmt.bounds.studies.adaptive import MC_BYTES_PER_ENTRY, study_part_cost

    _check_costs(f"--lengths {max(lengths)}: the TER searches ({len(specs)} policies, --num {args.num})",
                 ((int(study_part_cost(("ter min", spec, L, p, target, args.num, args.seed))),
                   MC_BYTES_PER_ENTRY * args.num * L) for L in lengths for p in specs),
                 "use smaller --lengths, a smaller --num or fewer --policies")


def _check_costs(what: str, costs, alternative: str) -> None:
    """The resource guard on parts run one after another: their (operations, peak bytes) costs add up in
    operations, and the largest peak is the memory they need."""
    from mdmt.runtime.resources import check_memory, check_work

    ops = peak = 0
    for o, m in costs:
        ops, peak = ops + o, max(peak, m)
    check_memory(what, peak, alternative)
    check_work(what, ops, alternative)


def _report(args, res, write, title, header, rows) -> int:
    """Write the files (--out), then print JSON (--json) or the title and the table."""
    if args.out:
        write(res, args.out, args.provenance, args.format)
    if args.json:
        print_json(res)
        return 0
    print(title)
    print(format_table(header, rows()))
    return 0


def _pivot(mins, ls, specs, Ks):
    rows = []
    for l in ls:
        for spec in specs:
            cells = []
            for K in Ks:
                m = next(r for r in mins if r["l"] == l and r["policy"] == spec and r["L"] == K * l)
                if not m["reached"]:
                    cells.append("-")
                else:
                    cells.append(f"{m['steps'] if m['steps'] is not None else ''}[{m['nfe']:.4g}]")
            rows.append([l, spec] + cells)
    return rows


def _ter(args) -> int:
    from mdmt.bounds.studies.adaptive import ter_study
    from mdmt.constructions.reverse.policies import split_policies

    spec = args.language or "preset:3gram-ter"
    lengths = int_list("--lengths", args.lengths)
    specs = tuple(split_policies(args.policies)) or name_list("--policies", args.policies, "policy")
    target = _check_target(args.target, "nats per token")
    at_least("--num", args.num)
    load_language(spec)  # a bad SPEC is named here, before any part starts
    at_least("--jobs", args.jobs)
    _check_ter_size(args, spec, lengths, specs, target)
    res = ter_study(spec, lengths, specs, target=target, num=args.num, seed=args.seed, jobs=args.jobs,
                    scheduler=scheduler_of(args), progress=not args.no_progress)
    rows = res["rows"]

    def table():
        out = []
        for p in specs:
            cells = []
            for L in lengths:
                r = next(r for r in rows if r["L"] == L and r["policy"] == p)
                if r["nfe"] is None or r["ci"] is None or r["ci"][1] > target:
                    cells.append("-")
                else:
                    lead = r["steps"] if r["steps"] is not None else f"{r['parameter']}:"
                    cells.append(f"{lead}[{r['nfe']:.3g}]")
            out.append([p] + cells)
        return out

    return _report(args, res, _write_ter, f"{spec}: smallest N (mean NFE) whose bound on KL/L is <= {target} nats/token "
                   "('-' = not reached):", ["policy"] + [f"L={L}" for L in lengths], table)


def _save(res, out, name, provenance):
    import json
    from pathlib import Path

    from ._common import clean

    from mdmt.runtime.outputs import make_folder, write_text

    folder = make_folder(Path(out))
    res["provenance"] = provenance
    write_text(folder / f"{name}.json", json.dumps(clean(res), indent=1, allow_nan=False) + "\n")
    return folder


def _csv(path, rows, keys):
    from mdmt.runtime.outputs import write_csv

    from ._common import clean

    write_csv(path, keys, [clean(r) for r in rows])


def _write_ser(res, out, provenance, fmt="png"):
    from mdmt.plots import save_figures

    folder = _save(res, out, "adaptive_ser", provenance)
    _csv(folder / "adaptive_ser.csv", res["curves"] + res["min_steps"], SER_COLUMNS)
    save_figures(res, folder, "adaptive_ser.json", fmt)


def _write_ter(res, out, provenance, fmt="png"):
    from mdmt.plots import save_figures

    folder = _save(res, out, "adaptive_ter", provenance)
    _csv(folder / "adaptive_ter.csv", res["rows"], TER_COLUMNS)
    save_figures(res, folder, "adaptive_ter.json", fmt)
