"""``mdmt refute``: prove a claim where a proof is mechanical (:mod:`mdmt.bounds.refutation.rules`), else search a
family of languages for a counterexample to it, and certify what it finds."""

from ._common import (add_force, add_json, add_scheduler, add_seed, add_steps, at_least, int_list, integer, name_list,
                      print_json, scheduler_of)

OUTPUTS = ("instance.json", "refute.json")
INSTANCE_NAME = "refute instance"
VIOLATIONS = ("certified violation", "numeric violation")


def add_arguments(p):
    p.add_argument("--claim", required=True, metavar="TEXT",
                   help="the conjectured inequality, e.g. 'KL <= (s_max - 1) / L * sum_MI' (docs/claims.md lists the "
                        "quantities and functions)")
    p.add_argument("--family", default="ngram:n=3,V=2", metavar="SPEC",
                   help="languages searched: ngram:n=N,V=V, hmm:S=S,V=V, explicit:V=V,L=L,M=M, or perturbations of "
                        "one language (interval:l, preset:NAME[:SEED], task:NAME[:PARAMS], a language file) "
                        "(default ngram:n=3,V=2)")
    p.add_argument("--lengths", default="4", metavar="L,L,...", help="sequence lengths L searched (default 4)")
    add_steps(p, required=False, default="2", many=True)
    p.add_argument("--processes", "--process", default="iid", metavar="SPEC,SPEC,...",
                   help="reverse processes searched: iid[:SCHEDULE], uniform, random:LAW, confidence, margin, "
                        "entropy, threshold:TAU, entropy-sum:GAMMA, stride, blocks (default iid)")
    p.add_argument("--budget", default="200", metavar="COUNT|TIME",
                   help="exact margin evaluations (200) or a time (30s, 5m, 1h) (default 200)")
    add_seed(p)
    p.add_argument("--shards", type=integer, default=1,
                   help="split the search into this many independent searches (their seeds spawned from --seed; "
                        "a budget of evaluations is divided among them; a time budget is each one's when they run in "
                        "parallel (--jobs J > 1, --scheduler) and divided among them when they run one after another "
                        "in this process); the result "
                        "depends on --shards and --seed only (default 1)")
    p.add_argument("--jobs", type=integer, default=1,
                   help="run the shards in this many worker processes of an embedded Dask cluster, one thread "
                        "each (default 1: in this process)")
    add_scheduler(p)
    p.add_argument("--no-proof", action="store_true",
                   help="search without first trying to prove the claim (by the elemental Shannon inequalities and "
                        "mdmt's lemmas, docs/claims.md): to see the tightest instance of a proved bound")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
    p.add_argument("--out", metavar="FOLDER",
                   help="write instance.json (the counterexample or tightest instance, a language file) and "
                        "refute.json (verdict, quantities with exact enclosures, margin, search statistics, the "
                        "command that reproduces it) into this folder")
    add_force(p)
    add_json(p)


def written_by_mdmt(claim: str, family: str) -> dict:
    """How each file of a refute folder is recognised as mdmt's for the same request (the folder rule of --out,
    docs/reliability.md): refute.json carries mdmt's provenance and the same claim (spaces aside) and family;
    instance.json is mdmt's refute instance for that claim, beside such a refute.json.  A search of another claim
    or family into the same folder replaces them only with --force."""
    from pathlib import Path

    from mdmt.constructions.languages.io import read_document
    from mdmt.runtime.outputs import json_with_provenance, read_json_document

    def same_claim(text) -> bool:
        return isinstance(text, str) and "".join(text.split()) == "".join(claim.split())

    def report(path) -> bool:
        doc = read_json_document(path)
        return (json_with_provenance(path) and isinstance(doc, dict) and same_claim(doc.get("claim"))
                and doc.get("family") == family)

    def instance(path) -> bool:
        try:
            d = read_document(path)
        except (OSError, ValueError, RecursionError):
            return False
        return (isinstance(d, dict) and d.get("name") == INSTANCE_NAME and isinstance(d.get("metadata"), dict)
                and same_claim(d["metadata"].get("claim")) and report(Path(path).parent / "refute.json"))

    return {"instance.json": instance, "refute.json": report}


def run(args) -> int:
    from mdmt.bounds.refutation.claims import parse_claim
    from mdmt.bounds.refutation.families import family
    from mdmt.bounds.refutation.refute import Budget
    from mdmt.constructions.reverse.policies import parse_policy

    claim = parse_claim(args.claim)  # every input is checked before the search starts
    fam = family(args.family)
    lengths = int_list("--lengths", args.lengths)
    steps = int_list("--steps", args.steps)
    from mdmt.constructions.reverse.policies import split_policies

    # iid:0.5,0.5 is one process, not two; an empty list is refused naming the flag
    processes = tuple(split_policies(args.processes)) or name_list("--processes", args.processes, "reverse process")
    try:
        budget = Budget.parse(args.budget)
    except ValueError as exc:
        raise ValueError(f"--budget {args.budget}: {str(exc).partition(': ')[2] or exc}") from None
    from mdmt.bounds.refutation.refute import check_search_work

    check_search_work(fam.n_symbols, lengths, steps, budget)  # the work of the search, before a schedule is built
    for process in processes:
        try:
            parse_policy(process, steps[0])
        except ValueError as exc:
            raise ValueError(f"--processes {process}: {exc}") from None
    at_least("--shards", args.shards)
    at_least("--jobs", args.jobs)
    from mdmt.bounds.refutation.refute import MAX_SHARDS
    from mdmt.sweep import MAX_JOBS

    if args.shards > MAX_SHARDS:
        raise ValueError(f"--shards {args.shards} exceeds mdmt's limit of {MAX_SHARDS}")
    if args.jobs > MAX_JOBS:
        raise ValueError(f"--jobs {args.jobs} exceeds mdmt's limit of {MAX_JOBS} worker processes")
    scheduler_of(args)
    if (args.jobs > 1 or args.scheduler) and args.shards == 1:
        raise ValueError("--jobs and --scheduler run shards: give --shards K (K > 1) too")
    if not args.out:
        return _run(args, claim, fam, lengths, steps, processes, budget, None)
    from mdmt.runtime.locks import output_lock
    from mdmt.runtime.outputs import check_output_folder
    from mdmt.runtime.provenance import record

    check_output_folder(args.out, files=OUTPUTS, force=args.force, same=written_by_mdmt(claim.text, fam.spec))
    with output_lock(args.out):
        return _run(args, claim, fam, lengths, steps, processes, budget, record())


def _run(args, claim, fam, lengths, steps, processes, budget, prov) -> int:
    from mdmt.bounds.refutation.refute import search

    res = search(claim, fam, lengths, steps, processes, budget=budget, seed=args.seed, progress=not args.no_progress,
                 shards=args.shards, jobs=args.jobs, scheduler=args.scheduler, prove=not args.no_proof)
    report = res.to_dict(reproduce=_reproduce(args, res))
    if args.out:
        _write(res, report, args.out, prov)
    if args.json:
        print_json(report)
    else:
        print(_text(report))
    return 0


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(str(text))


def _reproduce(args, res) -> dict:
    """The commands that repeat the search, and check the instance found (from the written language file)."""
    search = (f"mdmt refute --claim {_quote(args.claim)} --family {_quote(args.family)} --lengths {args.lengths} "
              f"--steps {args.steps} --processes {_quote(args.processes)} --budget {_quote(args.budget)} "
              f"--seed {args.seed}" + (f" --shards {args.shards}" if args.shards > 1 else "")
              + (" --no-proof" if args.no_proof else ""))
    out = {"search": search}
    if res.candidate is not None and args.out:
        from pathlib import Path

        c = res.candidate
        instance = _quote(str(Path(args.out) / "instance.json"))
        out["instance"] = (f"mdmt refute --claim {_quote(args.claim)} --family {instance} --lengths {c.L} "
                           f"--steps {c.N} --processes {_quote(c.process)} --budget 1")
    return out


def _write(res, report: dict, out: str, prov: dict) -> None:
    import json
    from pathlib import Path

    from mdmt.constructions.languages import save_language
    from mdmt.runtime.outputs import make_folder, write_text

    from ._common import clean

    folder = make_folder(Path(out))
    if res.candidate is not None:
        save_language(res.candidate.language, folder / "instance.json", name=INSTANCE_NAME,
                      metadata={"claim": res.claim, "verdict": res.verdict, "L": res.candidate.L,
                                "N": res.candidate.N, "process": res.candidate.process,
                                **({"interval": res.interval} if res.interval is not None else {})})
    write_text(folder / "refute.json", json.dumps(clean({**report, "provenance": prov}), indent=1, allow_nan=False)
               + "\n")


def _text(r: dict) -> str:
    import math

    from ._common import format_table

    s = r["search"]
    lines = [f"claim: {r['claim']}"]
    proof = r.get("proof")
    if proof is not None:
        lines += _proof_text(proof)
    if proof is not None and proof["proved"]:
        lines.append(f"verdict: {r['verdict']}: {proof['meaning']}")
        lines.append(f"reproduce (search): {r['reproduce']['search']}")
        return "\n".join(lines)
    lines += [f"search: {r['family']}, L in {s['lengths']}, N in {s['steps']}, processes {', '.join(s['processes'])}; "
              f"{s['evaluations']} exact evaluations ({', '.join(f'{k} {v}' for k, v in s['phases'].items())}) in "
              f"{s['seconds'] - s['certify_seconds']:.3g} s, {s['evaluations_per_second']:.3g}/s"
              + (f"; certificate {s['certify_seconds']:.3g} s" if s["certify_seconds"] > 0.0005 else ""),
              f"verdict: {r['verdict']}"]
    if s.get("note"):
        lines.insert(-1, f"note: {s['note']}")
    inst = r.get("instance")
    if inst is None:
        lines.append("no instance could be evaluated (every process refused every length and number of steps)")
        return "\n".join(lines)
    lines.append(f"{'counterexample' if r['verdict'] in VIOLATIONS else 'tightest instance'}: L = {inst['L']}, "
                 f"N = {inst['N']}, process {inst['process']}, {inst['language']}")
    cert = r.get("certificate") or {}
    enclosures = cert.get("enclosures", {})
    rows = [[k, v, "[{:.15g}, {:.15g}]".format(*enclosures[k]) if k in enclosures else ""]
            for k, v in r["quantities"].items()]
    lines.append(format_table(["quantity", "value", "exact enclosure" if enclosures else ""], rows, left=(0,)))
    relative = r["relative_margin"]
    margin = (f"margin (rhs - lhs, negative violates): {r['margin']:.6g} ("
              + (f"relative to |lhs| + |rhs|: {relative:.3g})" if relative is not None and math.isfinite(relative)
                 else "both sides vanish here: no relative margin)"))
    if "margin" in cert:
        margin += " in [{:.15g}, {:.15g}] ({} bits, tables rounded to multiples of 2^-{})".format(
            *cert["margin"], cert["prec"], cert.get("bits", "?"))
    elif cert.get("reason"):
        margin += f" (not certified: {cert['reason']})"
    lines.append(margin)
    for what, command in r["reproduce"].items():
        lines.append(f"reproduce ({what}): {command}")
    return "\n".join(lines)


def _proof_text(proof: dict) -> list:
    """Per instance class: the proof's verdict, how it was checked and each step (multiplier, inequality, lemma), or
    why it is not proved."""
    lines = []
    for c in proof["classes"]:
        where = f"L = {c['L']}" + (f", N = {c['N']}, process {c['process']}" if "N" in c else "")
        if c["verdict"] == "not proved":
            lines.append(f"proof at {where}: not proved -- {c['reason']}")
            continue
        lines.append(f"proof at {where}: {c['verdict']}, a non-negative combination of {len(c['steps'])} "
                     f"inequalit{'y' if len(c['steps']) == 1 else 'ies'} ({c['elemental_inequalities']:,} elemental "
                     f"ones over {c['joint_entropies']:,} joint entropies in the LP), verified {c['verified']}; "
                     f"the claim = sum of multiplier x inequality + {c['slack']}:")
        for step in c["steps"]:
            lemma = f"   [{step['lemma']}]" if step.get("lemma") else ""
            lines.append(f"  {step['multiplier']:>8} x  {step['inequality']}{lemma}")
    return lines
