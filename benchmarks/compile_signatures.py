"""Compilation on an empty numba cache: the kernel-family workload of tests/test_kernel_signatures.py, here and at a
baseline commit, in fresh processes.

    python benchmarks/compile_signatures.py [--baseline COMMIT] [--out FILE]

For each tree: the seconds numba spends compiling (outermost compilations, callees included once), the number of
compilations, and the kernels of mdmt compiled for more than one signature with the seconds those extra signatures
cost (their own compilation, callees apart).  A kernel compiled once per signature per process costs that much
again in every process of a run on an empty cache (docs/architecture.md, numba's cache; mdmt.runtime.numba_cache,
"One signature per kernel").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mdmt.runtime.outputs import write_text  # noqa: E402
from mdmt.runtime.provenance import record  # noqa: E402
from timings import baseline_tree  # noqa: E402


def workload() -> str:
    spec = importlib.util.spec_from_file_location("test_kernel_signatures", ROOT / "tests" / "test_kernel_signatures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return textwrap.dedent(mod.WORKLOAD)


def measure(pythonpath: str | None) -> dict:
    cache = tempfile.mkdtemp(prefix="mdmt-numba-")
    try:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        proc = subprocess.run([sys.executable, "-c", workload()], capture_output=True, text=True, env=env, cwd=cache)
        if proc.returncode != 0:
            raise SystemExit(f"the workload failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", metavar="COMMIT")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    prov = record([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    trees = [("this tree", None)]
    old = baseline_tree(a.baseline) if a.baseline else None
    if old is not None:
        trees.append((f"at {a.baseline}", str(old)))
    m = prov["machine"]
    lines = ["# Compilation on an empty numba cache", "",
             f"Command: `python benchmarks/compile_signatures.py {' '.join(argv if argv is not None else sys.argv[1:])}`; "
             f"commit `{prov['commit']}`; {prov['started']}; {m['cpu']}, {m['cores']} cores; numba {prov['versions']['numba']}.",
             "", "| tree | compile seconds | compilations | mdmt kernels | kernels with several signatures | "
             "seconds of their extra signatures |", "| --- | --- | --- | --- | --- | --- |"]
    try:
        for name, path in trees:
            r = measure(path)
            several = {k: v for k, v in r["signatures"].items() if len(v) > 1}
            lines.append(f"| {name} | {r['compile_seconds']:.1f} | {r['compilations']} | {len(r['signatures'])} | "
                         f"{len(several)} | {sum(r['extra_seconds'].values()):.1f} |")
            for k in sorted(several, key=lambda k: -r["extra_seconds"].get(k, 0.0)):
                lines.append(f"|  | `{k}`: {len(several[k])} signatures | | | | {r['extra_seconds'].get(k, 0.0):.2f} |")
    finally:
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        write_text(a.out, text)  # atomic: the previous report stays whole until the new one is complete
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
