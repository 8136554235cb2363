"""``mdmt verify``: the main job -- every check of the paper's proofs, one line per family, non-zero exit on a violation.

``mdmt verify --pytest`` runs the proof check that ships with the package instead (:mod:`mdmt.proofs`, the
Hypothesis property tests of the proof chain) through pytest, which must be installed (the ``test`` extra).
"""

import csv
import math
import platform
import shutil
import sys
import textwrap

from ._common import print_json

FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(p):
    p.add_argument("--quick", action="store_true", help="the CI subset: fewer instances, denoisers and lengths (docs/results/timings.md times both)")
    p.add_argument("-k", dest="pattern", metavar="PATTERN",
                   help="only the families whose key or title matches this regular expression (e.g. C4, 'Theorem 4')")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text (= --format json)")
    p.add_argument("--detail", action="store_true",
                   help="one line per family and instance (table, csv, markdown), every row (json)")
    p.add_argument("--pytest", action="store_true",
                   help="run the proof check shipped with mdmt instead: the property tests of mdmt.proofs, through "
                        "pytest (needs pytest and hypothesis: the test extra)")


def _fmt(v, digits=3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == 0:
            return "0"
        return f"{v:.{digits}g}"
    return str(v)


def _tightness(d: dict) -> str:
    """How close the tightest row comes to its bound, or how closely the two sides of == rows agree."""
    if "tightest_rel" in d:
        if d.get("attained"):
            return f"attained {d['attained']}x"
        rel = d["tightest_rel"]
        return f"{100 * rel:.2g}% slack" if math.isfinite(rel) else "-"
    if "max_difference" in d:
        return f"agree {_fmt(d['max_difference'], 2)}"
    return "-"


SHORT = {"proved": "proved", "certified": "cert", "exact": "exact", "numeric": "num", "stated": "stated",
         "undecided": "UNDECIDED", "FAILED": "FAILED"}


def _lines(out: dict, detail: bool) -> tuple[list[str], list[list[str]]]:
    header = ["family", "check", "cases", "tightest", "min margin", "method", "verdict"]
    rows = []
    items = out["groups"] if detail else out["families"]
    titles = {f["family"]: f["title"] for f in out["families"]}
    for d in items:
        key = d["id"] if detail else d["family"]
        method = "+".join(SHORT[m] for m in d["method"].split("+"))
        rows.append([key, titles[d["family"]], str(d["cases"]), _tightness(d), _fmt(d.get("min_margin")), method,
                     d["verdict"]])
    return header, rows


def _table(header, rows, width: int) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fixed = sum(w for i, w in enumerate(widths) if i != 1) + 2 * (len(header) - 1)
    widths[1] = max(12, min(widths[1], width - fixed))
    cut = lambda s, w: s if len(s) <= w else s[: w - 1] + "~"  # noqa: E731
    line = lambda r: "  ".join(cut(c, w).ljust(w) if i in (0, 1, 5) else cut(c, w).rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def run_pytest() -> int:
    """``python -m pytest --pyargs mdmt.proofs`` in a fresh process, from an empty folder with an empty
    configuration (no project's pytest settings apply, nothing is written where mdmt runs); pytest's exit status."""
    import importlib.util
    import subprocess
    import tempfile
    from pathlib import Path

    missing = [m for m in ("pytest", "hypothesis") if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(f"--pytest needs {' and '.join(missing)}, which is not installed "
                         '(pip install "mdmt[test]", or pip install pytest hypothesis)')
    with tempfile.TemporaryDirectory(prefix="mdmt-proofs-") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n")
        cmd = [sys.executable, "-m", "pytest", "--pyargs", "mdmt.proofs", "-q", "-p", "no:cacheprovider",
               "-c", str(ini), "--rootdir", tmp]
        return subprocess.run(cmd, cwd=tmp).returncode


def run(args) -> int:
    if args.pytest:
        given = [flag for flag, on in (("--quick", args.quick), ("-k", args.pattern), ("--json", args.json),
                                       ("--format", args.format != "table"), ("--detail", args.detail)) if on]
        if given:
            raise ValueError(f"--pytest runs the proof check alone; it takes no {', '.join(given)}")
        return run_pytest()
    from mdmt.bounds.verification.verify import verify

    fmt = "json" if args.json else args.format
    progress = None
    if fmt == "table" and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=None, desc="mdmt verify", unit="job", leave=False)

        def progress(k, total, label):
            bar.total = total
            bar.n = k
            bar.set_postfix_str(label)
            bar.refresh()

    out = verify(quick=args.quick, pattern=args.pattern, progress=progress, keep_rows=fmt == "json" and args.detail,
                 cache=True)  # the symbolic families of an earlier run of this source (bounds/verification/proof_cache.py)
    header, rows = _lines(out, args.detail)
    if fmt == "json":
        print_json(out)
    elif fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(header)
        w.writerows(rows)
    elif fmt == "markdown":
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join(" --- " for _ in header) + "|")
        for r in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    else:
        width = shutil.get_terminal_size((120, 24)).columns
        print(_table(header, rows, width))
        legend = [f"{k:6s} {v}" for k, v in out["instances"].items()]
        legend += ["methods: proved = sympy; cert = certified (arb balls, outward-rounded intervals); exact = rational "
                   "arithmetic; num = library float64 within a derived rounding-error bound; stated = an argument of "
                   "the paper, checked by the family it names; tightest = least slack relative to the bound"]
        print("\ninstances:")
        for line in legend:
            print(textwrap.fill(line, width=max(60, width), subsequent_indent="       "))
        for v in out["violated"][:20]:
            print(f"VIOLATED {v['id']}: {_fmt(v['value'][0], 6)} {v['relation']} {_fmt(v['bound'][0], 6)} ({v['method']})")
        print(f"\n{out['checks']} checks, {out['violations']} violations, {out['seconds']:.1f} s "
              f"({'quick' if args.quick else 'full'}; python {platform.python_version()})")
    return 1 if out["violations"] else 0
