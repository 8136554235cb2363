"""``mdmt verify``: the main job -- every check of the paper's proofs, one table, non-zero exit on a violation."""

import platform
import sys

from ._common import add_json, format_table, print_json

HELP = "run every check (C1-C5, Theorems 4.2-4.4, sympy derivations) on embedded instances"


def add_arguments(p):
    p.add_argument("--quick", action="store_true", help="the CI subset (a few seconds on 2 cores)")
    add_json(p)


def run(args) -> int:
    from mdmt.bounds.verify import verify

    progress = None
    if not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=None, desc="mdmt verify", unit="job", leave=False)

        def progress(k, total):
            bar.total = total
            bar.n = k
            bar.refresh()

    out = verify(quick=args.quick, progress=progress)
    if args.json:
        print_json(out)
    else:
        rows = [[r["check"], r["instance"], r["value"], r["relation"], r["bound"], r["margin"], r["cases"], r["verdict"]]
                for r in out["table"]]
        print(format_table(["check", "instance", "exact value", "rel", "bound", "margin", "cases", "verdict"], rows))
        print(f"\n{out['checks']} checks, {out['violations']} violations, {out['seconds']:.1f} s "
              f"({'quick' if args.quick else 'full'}; python {platform.python_version()})")
    return 1 if out["violations"] else 0
