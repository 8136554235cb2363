"""``mdmt compile``: compile mdmt's numba kernels ahead of time, into numba's cache (:mod:`mdmt.runtime.precompile`).

Every signature of the registry shipped with mdmt is loaded from numba's cache, or compiled and saved there, in
``--jobs`` processes at once; later commands then load the kernels instead of compiling them on first use.  On a
warm cache it only loads.  Optional: without it each kernel is compiled the first time a command needs it.
"""

import sys
import warnings

from ._common import add_json, at_least, integer, print_json


def add_arguments(p):
    p.add_argument("--jobs", type=integer, default=None, metavar="N",
                   help="processes that compile at once, N >= 1 (default: one per usable core)")
    add_json(p)


def run(args) -> int:
    at_least("--jobs", args.jobs, 1)
    from mdmt.runtime.precompile import compile_kernels

    progress = None
    if not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=None, desc="mdmt compile", unit="kernel", leave=False)

        def progress(k, total, label):
            bar.total = total
            bar.n = k
            bar.refresh()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compile_kernels(jobs=args.jobs, progress=progress)
    for w in caught:
        print(f"mdmt compile: warning: {w.message}", file=sys.stderr)
    if args.json:
        print_json(out)
        return 0
    stale = f", {len(out['stale'])} stale" if out["stale"] else ""
    processes = "process" if out["jobs"] == 1 else "processes"
    print(f"{out['signatures']} signatures of {out['kernels']} kernels: {out['compiled']} compiled, {out['loaded']} "
          f"loaded from the cache{stale}; {out['seconds']:.1f} s with {out['jobs']} {processes}")
    print(f"cache: {out['cache'] or 'numba default (no writable folder keyed on the source)'}")
    return 0
