"""The proof check that ships with the package (mdmt.proofs): it runs from an installed mdmt, outside the
repository, as ``python -m pytest --pyargs mdmt.proofs`` and as ``mdmt verify --pytest``; its property tests live
there only (the repository's tests do not copy them); and ``--pytest`` answers in one line where it cannot run."""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mdmt.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _tests_in(folder: Path) -> dict[str, str]:
    """name -> file of every test function defined in a folder's test files."""
    out = {}
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                out[node.name] = path.name
    return out


def _environment() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}


def test_the_property_tests_of_the_proof_chain_live_in_the_package_only():
    import mdmt.proofs

    shipped = _tests_in(Path(mdmt.proofs.__file__).parent)
    # Eq. 3 and Lemma B.2 (C1); Lemma B.3 (C2); Definitions B.4/B.5 and E[D_j]; Theorem 4.4's closed form
    assert {"test_exact_law_equals_enumeration_over_assignments", "test_c2_holds_for_every_assignment",
            "test_scan_equals_the_definition", "test_expected_dependencies_equal_brute_force",
            "test_closed_form_equals_the_generic_evaluator"} <= set(shipped)
    here = _tests_in(ROOT / "tests")
    assert not set(shipped) & set(here), f"copied into tests/: {sorted(set(shipped) & set(here))}"
    for path in Path(mdmt.proofs.__file__).parent.glob("test_*.py"):  # nothing from the repository's tests folder
        assert "tests." not in path.read_text(), path


@pytest.mark.integration
def test_the_proof_check_runs_with_pytest_pyargs_outside_the_repository(tmp_path):
    """The user's command, from an empty folder: the package's tests are found by name (two cheap ones here; the
    integration tier runs them all through ``mdmt verify --pytest``)."""
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")  # an empty configuration, as where mdmt is installed from a wheel
    res = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "mdmt.proofs", "-q", "-p", "no:cacheprovider",
                          "-c", str(ini), "--rootdir", str(tmp_path), "-k", "scan_equals or one_token"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600, env=_environment())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "2 passed" in res.stdout, res.stdout[-2000:]


@pytest.mark.integration
def test_mdmt_verify_pytest_runs_every_property_test_and_exits_0(tmp_path):
    import mdmt.proofs

    n = len(_tests_in(Path(mdmt.proofs.__file__).parent))
    exe = Path(sys.executable).with_name("mdmt")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mdmt"]
    res = subprocess.run(cmd + ["verify", "--pytest"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env=_environment())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"{n} passed" in res.stdout and "failed" not in res.stdout, res.stdout[-2000:]
    assert not list(tmp_path.iterdir())  # nothing written where it ran (pytest ran in a folder of its own)


def test_verify_pytest_without_pytest_is_one_error_line(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pytest" else real(name, *a))
    assert main(["verify", "--pytest"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mdmt verify: error: --pytest needs pytest") and "mdmt[test]" in err[0]


@pytest.mark.parametrize("argv, flag", [(["--quick"], "--quick"), (["-k", "C4"], "-k"), (["--json"], "--json"),
                                        (["--format", "csv"], "--format"), (["--detail"], "--detail")])
def test_verify_pytest_refuses_the_flags_of_the_checks(capsys, argv, flag):
    assert main(["verify", "--pytest", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pytest runs the proof check alone" in err[0] and flag in err[0], err
