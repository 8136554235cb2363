"""``mdmt compile``: compile mdmt's numba kernels ahead of time, into numba's cache (:mod:`mdmt.runtime.precompile`).

Every signature of the registry shipped with mdmt is loaded from numba's cache, or compiled and saved there, in
``--jobs`` processes at once; later commands then load the kernels instead of compiling them on first use.  On a
warm cache it only loads.  Then the statements that ``mdmt verify --quick`` keeps are proved and kept beside the
kernels (families SD and CE, :mod:`mdmt.bounds.verification.proof_cache`), unless ``--no-proofs``: the first
``mdmt verify`` reads them as a later one does.  Optional: without it each kernel is compiled the first time a
command needs it, and the first ``mdmt verify`` proves the statements.
"""

import sys
import warnings

from ._common import add_json, at_least, integer, print_json


def add_arguments(p):
    p.add_argument("--jobs", type=integer, default=None, metavar="N",
                   help="processes that compile at once, N >= 1 (default: one per usable core)")
    p.add_argument("--no-proofs", action="store_true",
                   help="compile only; do not prove and keep the statements of mdmt verify --quick (SD, CE)")
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
    if not args.no_proofs:
        out["proofs"] = _prove()
        if out["proofs"]["failed"]:  # nothing kept (proof_cache keeps only rows that all hold)
            print(f"mdmt compile: {len(out['proofs']['failed'])} rows of mdmt verify do not hold, "
                  f"{out['proofs']['failed'][0]} first: run mdmt verify -k '^(SD|CE)$'", file=sys.stderr)
    status = 1 if out.get("proofs", {}).get("failed") else 0
    if args.json:
        print_json(out)
        return status
    stale = f", {len(out['stale'])} stale" if out["stale"] else ""
    processes = "process" if out["jobs"] == 1 else "processes"
    print(f"{out['signatures']} signatures of {out['kernels']} kernels: {out['compiled']} compiled, {out['loaded']} "
          f"loaded from the cache{stale}; {out['seconds']:.1f} s with {out['jobs']} {processes}")
    print(f"cache: {out['cache'] or 'numba default (no writable folder keyed on the source)'}")
    if "proofs" in out:
        proofs = out["proofs"]
        if not proofs["failed"]:
            print(f"proofs: {proofs['rows']} rows of mdmt verify's families {', '.join(proofs['families'])}, all "
                  f"holding, kept for mdmt verify; {proofs['seconds']:.1f} s")
    return status


def _prove() -> dict:
    """Prove (or read, where an earlier run kept them) the rows of ``verify --quick``'s exact families, kept."""
    import time

    from mdmt.bounds.verification.verify import run_checks

    t0 = time.perf_counter()
    rows = run_checks(quick=True, pattern="^(SD|CE)$", cache=True)
    return {"families": sorted({r.family for r in rows}), "rows": len(rows), "seconds": time.perf_counter() - t0,
            "failed": [r.id for r in rows if not r.holds]}
