"""The light core: the theory runs without PyTorch, and the command line starts without the heavy stack.

torch is the ``empirical`` extra.  Each test here runs a fresh interpreter (one for many commands, through
:func:`mdmt.cli.main`) and reads its ``sys.modules``:

* with every package outside the core made unimportable, torch included (tests/coreonly.py), every theory
  command exits 0: tests/test_core_only.py runs :data:`THEORY` so;
* with torch made unimportable (tests/torchless.py), every command or module that needs a network says in
  one line that it needs ``mdmt[empirical]`` (exit 2, nothing written);
* with torch installed, no theory command imports it;
* ``mdmt --help``, ``mdmt --version`` and every ``mdmt COMMAND --help`` import neither sympy, scipy, numba
  nor torch.

``MDMT_BLOCK_TORCH=1 python -m pytest`` runs the whole suite as on a machine without torch (.ci/run does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdmt.cli import COMMANDS
from tests.torchless import PRELUDE

ROOT = Path(__file__).resolve().parent.parent

#: Every theory command, small enough to run in about a second each (they share one interpreter).
THEORY = [
    ["verify", "--quick", "-k", "T43u"],
    ["counterexample", "-l", "3", "--out", "ce3.json"],
    ["language", "--language", "preset:3gram", "--out", "lang.json"],
    ["sample", "--language", "ce3.json", "-L", "6", "-N", "3", "--num", "50", "--out", "seqs.txt"],
    ["score", "--language", "ce3.json", "--sequences", "seqs.txt"],
    ["exact", "--language", "interval:3", "-L", "6", "-N", "3"],
    ["dependencies", "--n", "3", "-L", "64", "-N", "8"],
    ["curve", "ter", "--n", "3", "--eps", "0.05", "--lengths", "256"],
    ["curve", "ser", "-l", "3", "-L", "30"],
    ["data", "--language", "preset:3gram", "-L", "16", "--num", "32", "--num-val", "8", "--out", "data3"],
    ["atlas", "--language", "interval:3", "--length", "6", "--steps", "3"],
    ["adaptive", "exact", "--language", "interval:3", "-L", "6", "-N", "3"],
    ["adaptive", "sample", "--language", "interval:3", "-L", "6", "-N", "3", "--num", "50"],
    ["adaptive", "ser", "--interval-lengths", "3", "--intervals", "2", "--curve-length", "6", "--num", "50",
     "--policies", "iid,confidence"],
    ["adaptive", "ter", "--language", "preset:2gram-ter", "--lengths", "8", "--policies", "iid,confidence",
     "--num", "16"],
    ["figure1", "--kinds", "oracle", "--lengths", "8", "--length", "8", "--steps", "2,8", "--num", "16",
     "--no-progress", "--out", "fig1-oracle"],
    ["refute", "--claim", "E_TC <= KL", "--family", "ngram:n=2,V=2", "--lengths", "2,3", "--budget", "20",
     "--no-progress", "--out", "refute-pb"],
]

#: Every command that needs a network, with the path it would write (which must not appear).
NETWORKS = [
    (["train", "--language", "preset:2gram-ter", "--model", "tiny", "-L", "16", "--train-steps", "2", "--out", "net"],
     "net"),
    (["evaluate", "--checkpoint", "net/ckpt.pt", "-N", "4"], None),
    (["speed", "--model", "tiny", "--lengths", "16", "--steps", "4"], None),
    (["figure1", "--lengths", "8", "--length", "8", "--steps", "2", "--num", "8", "--out", "fig1"], "fig1"),
    (["sample", "--language", "preset:2gram-ter", "-L", "16", "-N", "4", "--num", "8", "--checkpoint", "net/ckpt.pt",
      "--out", "net-samples.txt"], "net-samples.txt"),
    (["adaptive", "sample", "--language", "preset:2gram-ter", "-L", "16", "-N", "4", "--num", "8",
      "--checkpoint", "net/ckpt.pt"], None),
]

#: Runs argv lists through mdmt.cli.main in one interpreter; one JSON line per command on stdout.
DRIVER = """
import contextlib, io, json, sys
sys.path.insert(0, ROOT)
from mdmt.cli import main

for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    heavy = sorted(m for m in ("torch", "sympy", "scipy", "numba") if m in sys.modules)
    print(json.dumps({"argv": argv, "rc": rc, "err": err.getvalue(), "loaded": heavy}), file=sys.__stdout__)
"""


def drive(argvs: list[list[str]], cwd: Path, block: bool) -> list[dict]:
    code = (PRELUDE if block else "") + DRIVER.replace("ROOT", repr(str(ROOT)))
    res = subprocess.run([sys.executable, "-c", code, json.dumps(argvs)], cwd=cwd, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.integration
def test_theory_commands_run_and_leave_installed_torch_out(tmp_path):
    """(Where torch is not installed, tests/test_core_only.py runs the same commands without it.)"""
    pytest.importorskip("torch", reason="checks that installed torch stays unimported")
    for r in drive(THEORY, tmp_path, block=False):
        assert r["rc"] == 0, f"mdmt {' '.join(r['argv'])}: exit {r['rc']}\n{r['err'][-2000:]}"
        assert "torch" not in r["loaded"], f"mdmt {' '.join(r['argv'])} imported torch"


@pytest.mark.integration
def test_network_commands_name_the_extra_they_need(tmp_path):
    results = drive([argv for argv, _ in NETWORKS], tmp_path, block=True)
    for (argv, writes), r in zip(NETWORKS, results):
        name = argv[0]
        lines = r["err"].splitlines()
        assert r["rc"] == 2 and len(lines) == 1, f"mdmt {' '.join(argv)}: exit {r['rc']}\n{r['err'][-2000:]}"
        assert lines[0].startswith(f"mdmt {name}: error: mdmt {name} needs PyTorch"), lines[0]
        assert 'pip install "mdmt[empirical]"' in lines[0]
        assert writes is None or not (tmp_path / writes).exists(), f"mdmt {name} wrote {writes} before failing"


@pytest.mark.integration
def test_the_library_names_the_extra_and_its_torch_free_modules_import(tmp_path):
    code = PRELUDE + textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import mdmt.empirical, mdmt.empirical.data, mdmt.empirical.experiments, mdmt.empirical.recipes
        import mdmt.empirical.metrics
        from mdmt.extras import MissingExtra
        for name in ("model", "train", "sampling", "checkpoint", "device", "hmm_layer", "ngram_layer"):
            try:
                __import__("mdmt.empirical." + name)
            except MissingExtra as exc:
                assert isinstance(exc, ImportError) and 'pip install "mdmt[empirical]"' in str(exc), exc
            else:
                raise AssertionError(name + " imported without torch")
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]


def _help_argvs() -> list[list[str]]:
    out = [["--help"], ["--version"]]
    for name in COMMANDS:
        out.append([name, "--help"])
    out += [["curve", kind, "--help"] for kind in ("ter", "ser")]
    out += [["adaptive", kind, "--help"] for kind in ("sample", "exact", "ser", "ter")]
    return out


def test_help_and_version_import_neither_sympy_scipy_numba_nor_torch(tmp_path):
    for r in drive(_help_argvs(), tmp_path, block=False):
        assert r["rc"] == 0, r
        assert r["loaded"] == [], f"mdmt {' '.join(r['argv'])} imported {r['loaded']}"


@pytest.mark.integration
def test_the_checker_sees_a_heavy_import(tmp_path):
    """The sys.modules check has teeth: a command that computes does load the stack, and a blocked torch is refused."""
    (r,) = drive([["exact", "--language", "interval:3", "-L", "6", "-N", "2"]], tmp_path, block=False)
    assert r["rc"] == 0 and "numba" in r["loaded"]
    code = PRELUDE + "import torch\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "No module named 'torch'" in res.stderr
