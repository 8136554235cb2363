"""The timings that mdmt's docs quote, measured in one run, with the machine and commit beside them.

    python benchmarks/timings.py [--repeats 5] [--pytest] [--out docs/results/timings.md]

Every figure is the wall time of a fresh process, as a user meets it (the median of ``--repeats``
runs after one warm-up, min and max beside it):

* start-up: ``mdmt --help``, ``mdmt --version``, the slowest ``mdmt COMMAND --help`` and a small theory
  command (``mdmt exact --language interval:3 -L 6 -N 3``), with the heavy modules each one imported;
* ``mdmt verify --quick`` and ``mdmt verify``, warm (numba's kernels cached);
* the first ``mdmt verify --quick`` after a fresh install: numba's cache in an empty folder
  (``NUMBA_CACHE_DIR``), so every kernel the command uses is compiled, as on a new machine; its
  ratio to the warm run;
* with ``--pytest``: the default ``python -m pytest -q`` (README command 2), once, warm.

The goals are printed beside each figure (``ok`` / ``MISSED``).  The load average at the start and
the end is recorded: a busy machine gives longer times, so the report says how busy it was.
The report (Markdown) goes to standard output and, with ``--out``, to that file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mdmt.cli import COMMANDS  # noqa: E402  (light: no command module is imported)
from mdmt.provenance import record  # noqa: E402

HEAVY = ("sympy", "scipy", "numba", "torch")
PROBE = ("import json, sys, runpy; sys.argv = ['mdmt'] + json.loads(sys.argv[1]); "
         "code = 0\ntry:\n    runpy.run_module('mdmt', run_name='__main__')\nexcept SystemExit as e:\n"
         "    code = e.code or 0\nprint(json.dumps(sorted(m for m in %r if m in sys.modules)), file=sys.stderr)\n"
         "sys.exit(code)" % (HEAVY,))


def mdmt_exe() -> list[str]:
    """The console script next to this Python (what a user runs), else ``python -m mdmt``."""
    exe = Path(sys.executable).with_name("mdmt")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mdmt"]


def run(argv: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {res.returncode}:\n{res.stderr[-2000:]}")
    return dt


def timed(argv: list[str], repeats: int, env: dict | None = None) -> dict:
    run(argv, env)  # warm-up: the OS file cache, numba's cache
    times = [run(argv, env) for _ in range(repeats)]
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "n": repeats}


def heavy_imports(args: list[str]) -> list[str]:
    """The heavy modules a command imports (run once through ``python -c``)."""
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True)
    return json.loads(res.stderr.strip().splitlines()[-1])


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def fmt(t: dict) -> str:
    return f"{t['median']:.3f} s (min {t['min']:.3f}, max {t['max']:.3f}, {t['n']} runs)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--verify-repeats", type=int, default=3)
    ap.add_argument("--pytest", action="store_true", help="also time the default test run (about two minutes)")
    ap.add_argument("--out", help="also write the report to this file")
    a = ap.parse_args(argv)
    prov = record([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    prov["command"] = "python benchmarks/timings.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load_start = load()
    exe = mdmt_exe()
    rows = []  # (what, figure, goal, ok)

    def row(what, t, goal=None, limit=None, extra=""):
        ok = None if limit is None else t["median"] <= limit
        rows.append((what, fmt(t) + extra, goal or "-", "-" if ok is None else ("ok" if ok else "MISSED")))

    for args, goal in ((["--help"], 0.3), (["--version"], 0.3)):
        row(f"`mdmt {' '.join(args)}`", timed(exe + args, a.repeats), "≤ 0.3 s", goal,
            f"; imports {', '.join(heavy_imports(args)) or 'none of ' + '/'.join(HEAVY)}")
    helps = {name: timed(exe + [name, "--help"], max(1, a.repeats // 2)) for name in COMMANDS}
    slowest = max(helps, key=lambda k: helps[k]["median"])
    imported = sorted({m for name in COMMANDS for m in heavy_imports([name, "--help"])})
    row(f"`mdmt COMMAND --help`, slowest of {len(COMMANDS)} (`{slowest}`)", helps[slowest], "≤ 0.3 s", 0.3,
        f"; all of them import {', '.join(imported) or 'none of ' + '/'.join(HEAVY)}")
    small = ["exact", "--language", "interval:3", "-L", "6", "-N", "3"]
    row(f"`mdmt {' '.join(small)}`", timed(exe + small, a.repeats), extra=f"; imports {', '.join(heavy_imports(small))}")

    quick = timed(exe + ["verify", "--quick"], a.verify_repeats)
    row("`mdmt verify --quick`, warm", quick, "≤ 5 s", 5.0)
    row("`mdmt verify`, warm", timed(exe + ["verify"], a.verify_repeats), "≤ 15 s", 15.0)
    cache = tempfile.mkdtemp(prefix="mdmt-numba-")
    try:
        t = run(exe + ["verify", "--quick"], {**os.environ, "NUMBA_CACHE_DIR": cache})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    first = {"median": t, "min": t, "max": t, "n": 1}
    ratio = t / quick["median"]
    rows.append(("`mdmt verify --quick`, first run after a fresh install (empty numba cache)",
                 fmt(first) + f"; {ratio:.2f}× the warm run", "≤ 2× warm", "ok" if ratio <= 2 else "MISSED"))
    if a.pytest:
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                             capture_output=True, text=True)
        dt = time.perf_counter() - t
        summary = (res.stdout.strip().splitlines() or ["?"])[-1]
        rows.append(("`python -m pytest -q` (README command 2, warm)", f"{dt:.1f} s wall; {summary}", "≤ 120 s",
                     "ok" if dt <= 120 and res.returncode == 0 else "MISSED"))

    m, v = prov["machine"], prov["versions"]
    lines = ["# Timings", "",
             f"Command: `{prov['command']}`; commit `{prov['commit']}`; started {prov['started']}.  ",
             f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; {m['platform']}; Python {v['python']}, "
             f"numpy {v['numpy']}, scipy {v['scipy']}, numba {v['numba']}, sympy {v['sympy']}, torch {v['torch']}.  ",
             f"Load average (1, 5, 15 min) at the start: {load_start}; at the end: {load()}.  ",
             f"Command line: `{' '.join(exe)}`.", "",
             "| what | wall time | goal | |", "| --- | --- | --- | --- |"]
    lines += [f"| {w} | {f} | {g} | {ok} |" for w, f, g, ok in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        tmp = Path(a.out).with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
