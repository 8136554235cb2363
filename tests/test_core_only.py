"""The core runs every theory command: ``pip install mdmt`` (no extra) is enough for all but the networks.

Each theory command of tests/test_without_torch.py runs in one fresh interpreter whose import system refuses
every installed package outside the core (tests/coreonly.py: the distributions of ``[project] dependencies``
in pyproject.toml and their requirements) -- torch, pytest, mypy, hmmlearn, pandas, the docs tools -- as a
venv with the core only would.  Each must exit 0, and none may have loaded a package outside the core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.coreonly import ROOT, blocked_modules, core_closure, prelude
from tests.test_without_torch import THEORY

pytest.importorskip("tomllib", reason="reads pyproject.toml (Python >= 3.11)")

#: Runs argv lists through mdmt.cli.main in one interpreter; one JSON line per command on stdout.
DRIVER = textwrap.dedent("""
    import contextlib, io, json
    sys.path.insert(0, ROOT)
    from mdmt.cli import main

    for argv in json.loads(sys.argv[1]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        outside = sorted({m.partition(".")[0] for m in sys.modules} & (_BLOCKED - _PRELOADED))
        print(json.dumps({"argv": argv, "rc": rc, "err": err.getvalue(), "outside": outside}), file=sys.__stdout__)
""")


def drive_core_only(argvs: list[list[str]], cwd) -> list[dict]:
    code = prelude(blocked_modules()) + DRIVER.replace("ROOT", repr(str(ROOT)))
    res = subprocess.run([sys.executable, "-c", code, json.dumps(argvs)], cwd=cwd, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.integration
def test_the_core_is_what_pyproject_says_and_leaves_the_extras_out():
    """The guard has teeth: the extras' packages (those installed here) are refused, the core's are not."""
    core, blocked = core_closure(), blocked_modules()
    assert {"numpy", "scipy", "sympy", "numba", "matplotlib", "hypothesis", "python-flint", "distributed"} <= core
    for module in ("torch", "pytest", "mypy", "hmmlearn", "pandas", "mkdocs"):
        try:
            __import__(module)
        except ImportError:
            continue
        assert module in blocked, f"{module} (an extra) would be importable by the core-only run"
    assert not {"numpy", "scipy", "sympy", "numba", "matplotlib", "hypothesis", "flint", "distributed"} & blocked


@pytest.mark.integration
def test_every_theory_command_runs_with_the_core_only(tmp_path):
    results = drive_core_only(THEORY, tmp_path)
    assert [r["argv"] for r in results] == THEORY
    for r in results:
        assert r["rc"] == 0, f"mdmt {' '.join(r['argv'])}: exit {r['rc']}\n{r['err'][-2000:]}"
        assert r["outside"] == [], f"mdmt {' '.join(r['argv'])} imported {r['outside']}, outside the core"


@pytest.mark.integration
def test_the_core_only_run_refuses_an_extra(tmp_path):
    """A command that needs a package outside the core fails under the guard (here: Result.to_frame's pandas)."""
    code = prelude(blocked_modules() | {"pandas"}) + "import pandas\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert res.returncode != 0 and "not a dependency of mdmt's core" in res.stderr
