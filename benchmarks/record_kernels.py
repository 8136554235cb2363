"""Record the registry of mdmt's kernel signatures, ``mdmt/runtime/kernel_signatures.json`` (``mdmt compile``).

    python benchmarks/record_kernels.py [--out FILE] [--check]

The workload, run in a fresh process on an empty numba cache (:func:`mdmt.runtime.precompile.record`): the
kernel families of tests/test_kernel_signatures.py (its WORKLOAD: HMM and n-gram inference, the sampler, the exact
laws of the paper's process and of the policies, the support-scaled law, explicit laws), then ``mdmt verify
--quick`` and ``mdmt verify`` in that process (``MDMT_VERIFY_JOBS=1``).  Every signature of a kernel of mdmt it
compiles becomes an entry, callees before their callers, with its own compile seconds.  This script is the one
way the registry is made: run it again after any change of the kernels (tests/test_precompile.py fails while the
registry misses a signature that ``mdmt verify --quick`` or the kernel families compile).  ``--check`` writes
nothing and exits 1 when the recorded signatures differ from the registry's.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mdmt.runtime import precompile  # noqa: E402

VERIFY = """
import contextlib, io, os
from mdmt.cli import main

os.environ["MDMT_VERIFY_JOBS"] = "1"  # every kernel compiled in this process
for argv in (["verify", "--quick"], ["verify"]):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, argv
"""


def workload() -> str:
    """The kernel families of tests/test_kernel_signatures.py, then ``mdmt verify --quick`` and ``mdmt verify``."""
    spec = importlib.util.spec_from_file_location("test_kernel_signatures", ROOT / "tests" / "test_kernel_signatures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return textwrap.dedent(mod.WORKLOAD) + "\n" + VERIFY


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help=f"write the registry here (default {precompile.REGISTRY.relative_to(ROOT)})")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the registry differs")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    entries = precompile.record(workload(), env={**os.environ, "MDMT_VERIFY_JOBS": "1"})
    took = time.perf_counter() - t
    kernels = {e["kernel"] for e in entries}
    print(f"{len(entries)} signatures of {len(kernels)} kernels, {sum(e['seconds'] for e in entries):.1f} s of "
          f"compilation; the workload took {took:.1f} s")
    if a.check:
        old = {(e["kernel"], tuple(e["args"])) for e in precompile.load_registry(a.out)}
        new = {(e["kernel"], tuple(e["args"])) for e in entries}
        for k, args in sorted(new - old):
            print(f"missing from the registry: {k}({', '.join(args)})")
        for k, args in sorted(old - new):
            print(f"no longer compiled: {k}({', '.join(args)})")
        return int(old != new)
    path = precompile.write_registry(entries, a.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
