"""The timings that mdmt's docs quote, measured in one run, with the machine and commit beside them.

    python benchmarks/timings.py [--repeats 5] [--baseline COMMIT] [--pytest [--pytest-repeats 3]] [--out FILE]

Every figure is the wall time of a fresh process, as a user meets it (the median of ``--repeats``
runs after one warm-up, min and max beside it):

* start-up: ``mdmt --help``, ``mdmt --version``, the slowest ``mdmt COMMAND --help`` and a small theory
  command (``mdmt exact --language interval:3 -L 6 -N 3``), with the heavy modules each one imported;
* ``mdmt verify --quick`` and ``mdmt verify``, warm (numba's kernels cached);
* ``mdmt compile`` on an empty numba cache (``NUMBA_CACHE_DIR`` an empty folder, as on a new machine), then the
  first ``mdmt verify --quick`` after it, as a user runs them after the README's install command: that run's
  ratio to the warm run (goal: at most 1.5 times); and, apart, the first ``mdmt verify --quick`` on an empty cache
  without ``mdmt compile`` (every kernel the command uses compiled on first use; no goal); each of these first runs
  ``--verify-repeats`` times, every one on an empty cache of its own, interleaved, the median against the goal;
* with ``--baseline COMMIT``: the same three figures of ``mdmt verify`` at that commit (its tree
  unpacked by ``git archive`` into a temporary folder, laid out as installed and put first on
  ``PYTHONPATH``), measured in the same run and alternating with the current code, so that both
  meet the same load; the goals of the current code are then relative to it (``--quick`` at most
  half, the full run at most 60 %);
* with ``--pytest``: the default tier ``python -m pytest -q`` (README command 2; the proof check
  and the unit tests) warm and on an empty numba cache, ``--pytest-repeats`` times each, interleaved, the
  medians against the goals (60 s and 90 s on two cores), and the integration tier
  ``python -m pytest -q -m integration`` once.

Warm means every cache a second run finds: numba's kernels and Python's bytecode.  Python writes its bytecode
cache (``__pycache__``) by default; where ``PYTHONDONTWRITEBYTECODE`` is set, every process compiles mdmt's
source and pytest rewrites every test module again (about 3 s of collection per pytest worker), so the
measured processes run without it and the warm test tier follows one unmeasured collection; the report says
whether it was set.

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
from mdmt.runtime.outputs import write_text  # noqa: E402
from mdmt.runtime.provenance import record  # noqa: E402

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
    # ``python -m`` puts the working folder first on sys.path: a baseline runs from its own tree (its PYTHONPATH)
    cwd = env.get("PYTHONPATH") if env else None
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
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


QUICK_GOAL, FULL_GOAL, FIRST_GOAL = 0.5, 0.6, 1.5  # of the baseline's warm times; first run / warm run


def baseline_tree(commit: str) -> Path:
    """The tree of ``commit`` laid out as installed (``mdmt/`` with ``bounds``, ``constructions``, ``empirical`` as
    its subpackages), in a temporary folder: the folder to put first on ``PYTHONPATH``."""
    tmp = Path(tempfile.mkdtemp(prefix="mdmt-baseline-"))
    src, tree = tmp / "src", tmp / "tree" / "mdmt"
    src.mkdir()
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    for entry in (src / "mdmt").iterdir():
        (tree / entry.name).symlink_to(entry)
    for pkg in ("bounds", "constructions", "empirical"):
        (tree / pkg).symlink_to(src / pkg)
    return tree.parent


def verify_rows(rows: list, exe: list[str], repeats: int, old: Path | None, commit: str | None) -> None:
    """``mdmt verify --quick`` and ``mdmt verify`` warm, and the first ``--quick`` on an empty numba cache; with a
    baseline tree the same at that commit, the two alternating run by run."""
    versions = {"": (exe, None)}
    if old is not None:
        env = {**os.environ, "PYTHONPATH": str(old)}
        versions[f" at {commit}"] = ([sys.executable, "-m", "mdmt"], env)
    got: dict = {}
    for args in (["verify", "--quick"], ["verify"]):
        for tag, (cmd, env) in versions.items():  # warm-up: the OS file cache, numba's cache
            run(cmd + args, env)
        times: dict = {tag: [] for tag in versions}
        for _ in range(repeats):
            for tag, (cmd, env) in versions.items():
                times[tag].append(run(cmd + args, env))
        for tag, ts in times.items():
            got[(" ".join(args), tag)] = {"median": statistics.median(ts), "min": min(ts), "max": max(ts), "n": repeats}
    first: dict = {tag: [] for tag in versions}  # every first run on an empty cache of its own, interleaved
    compiled, after = [], []
    for _ in range(repeats):
        c, v = compile_then_verify(exe)
        compiled.append(c)
        after.append(v)
        for tag, (cmd, env) in versions.items():
            cache = tempfile.mkdtemp(prefix="mdmt-numba-")
            try:
                first[tag].append(run(cmd + ["verify", "--quick"], {**(env or os.environ), "NUMBA_CACHE_DIR": cache}))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    base = f" at {commit}" if old is not None else None
    for args, what, goal, absolute in (("verify --quick", "`mdmt verify --quick`, warm", QUICK_GOAL, 5.0),
                                       ("verify", "`mdmt verify`, warm", FULL_GOAL, 15.0)):
        t = got[(args, "")]
        if base:
            limit = goal * got[(args, base)]["median"]
            ratio = t["median"] / got[(args, base)]["median"]
            rows.append((what, fmt(t) + f"; {ratio:.2f}× the baseline", f"≤ {goal:g}× the baseline ({limit:.2f} s)",
                         "ok" if t["median"] <= limit else "MISSED"))
            rows.append((what + f"{base} (the baseline)", fmt(got[(args, base)]), "-", "-"))
        else:
            rows.append((what, fmt(t), f"≤ {absolute:g} s", "ok" if t["median"] <= absolute else "MISSED"))
    rows.append(("`mdmt compile` on an empty numba cache (one process per usable core)", fmt(summary(compiled)), "-",
                 "-"))
    ratio = statistics.median(after) / got[("verify --quick", "")]["median"]
    rows.append(("`mdmt verify --quick`, first run after a fresh install: `mdmt compile` first, as the README's "
                 "install command (empty numba cache)", fmt(summary(after)) + f"; {ratio:.2f}× the warm run",
                 f"≤ {FIRST_GOAL:g}× warm", "ok" if ratio <= FIRST_GOAL else "MISSED"))
    for tag in versions:
        ratio = statistics.median(first[tag]) / got[("verify --quick", tag)]["median"]
        rows.append((f"`mdmt verify --quick`{tag}, first run after a fresh install without `mdmt compile` (empty "
                     "numba cache, every kernel compiled on first use)", fmt(summary(first[tag])) +
                     f"; {ratio:.2f}× the warm run", "-", "-"))


def summary(ts: list[float]) -> dict:
    """Measurements as :func:`fmt` takes them: median, min, max, count."""
    return {"median": statistics.median(ts), "min": min(ts), "max": max(ts), "n": len(ts)}


def compile_then_verify(exe: list[str]) -> tuple[float, float]:
    """What a user runs after the README's install command, on an empty numba cache: the wall times of
    ``mdmt compile`` and of the first ``mdmt verify --quick`` after it."""
    cache = tempfile.mkdtemp(prefix="mdmt-numba-")
    try:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        return run(exe + ["compile"], env), run(exe + ["verify", "--quick"], env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def pytest_run(args: list[str], env: dict | None) -> tuple[float, str, bool]:
    """One ``python -m pytest -q`` in the repository: wall time, pytest's summary line, whether it passed."""
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                         capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    return dt, (res.stdout.strip().splitlines() or ["?"])[-1], res.returncode == 0


def pytest_rows(rows: list, repeats: int) -> None:
    """The default tier warm and on an empty numba cache, ``repeats`` times each, interleaved (the machine's speed
    drifts over minutes), medians against the goals; the integration tier once."""
    pytest_run(["--collect-only", "-n", "0"], None)  # Python's bytecode and pytest's rewritten tests written
    times: dict = {"warm": [], "cold": []}
    summaries, passed = {}, {"warm": True, "cold": True}
    for _ in range(repeats):
        for kind in ("warm", "cold"):
            cache = tempfile.mkdtemp(prefix="mdmt-numba-") if kind == "cold" else None
            try:
                dt, summaries[kind], ok = pytest_run([], {**os.environ, "NUMBA_CACHE_DIR": cache} if cache else None)
            finally:
                if cache:
                    shutil.rmtree(cache, ignore_errors=True)
            times[kind].append(dt)
            passed[kind] &= ok
    for kind, what, goal in (
            ("warm", "`python -m pytest -q` (default tier: proof check and unit tests; README command 2), warm", 60.0),
            ("cold", "`python -m pytest -q`, empty numba cache (the first run after a fresh install)", 90.0)):
        t = summary(times[kind])
        ok = passed[kind] and t["median"] <= goal
        rows.append((what, f"{fmt(t)}; last: {summaries[kind]}", f"≤ {goal:.0f} s", "ok" if ok else "MISSED"))
    dt, last, ok = pytest_run(["-m", "integration"], None)
    rows.append(("`python -m pytest -q -m integration` (integration tier), warm", f"{dt:.1f} s wall; {last}", "-",
                 "-" if ok else "MISSED"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--verify-repeats", type=int, default=3)
    ap.add_argument("--pytest", action="store_true",
                    help="also time the test tiers: the default one warm and cold, the integration tier (minutes)")
    ap.add_argument("--pytest-repeats", type=int, default=3,
                    help="with --pytest: runs of the default tier, warm and cold each (default 3; medians)")
    ap.add_argument("--baseline", metavar="COMMIT",
                    help="also time mdmt verify at this commit, alternating with the current code")
    ap.add_argument("--out", help="also write the report to this file")
    a = ap.parse_args(argv)
    prov = record([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    prov["command"] = "python benchmarks/timings.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load_start = load()
    no_bytecode = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # module docstring: warm includes bytecode
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

    old = baseline_tree(a.baseline) if a.baseline else None
    try:
        verify_rows(rows, exe, a.verify_repeats, old, a.baseline)
    finally:
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)
    if a.pytest:
        pytest_rows(rows, a.pytest_repeats)

    m, v = prov["machine"], prov["versions"]
    lines = ["# Timings", "",
             f"Command: `{prov['command']}`; commit `{prov['commit']}`; started {prov['started']}.  ",
             f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; {m['platform']}; Python {v['python']}, "
             f"numpy {v['numpy']}, scipy {v['scipy']}, numba {v['numba']}, sympy {v['sympy']}, torch {v['torch']}.  ",
             f"Load average (1, 5, 15 min) at the start: {load_start}; at the end: {load()}.  ",
             "Python's bytecode cache: written and read as by default"
             + (" (`PYTHONDONTWRITEBYTECODE` was set here and is removed for the measured processes)." if no_bytecode
                else ".") + "  ",
             f"Command line: `{' '.join([Path(exe[0]).name, *exe[1:]])}` (beside the Python that runs this script).", "",
             "| what | wall time | goal | |", "| --- | --- | --- | --- |"]
    lines += [f"| {w} | {f} | {g} | {ok} |" for w, f, g, ok in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        write_text(a.out, text)  # atomic: the previous report stays whole until the new one is complete
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
