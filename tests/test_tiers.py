"""The two tiers of the suite (README, "The tests, in two tiers"): one marker, ``integration``, deselected by the
default run and selected by ``-m integration``; ``slow`` is its older name; the tests that exercise the ecosystem
carry it; CI runs the integration tier after the default one; nothing is dropped."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The ecosystem, not the mathematics: site and tutorials, torchrun, mypy, pages run as examples, Dask clusters,
# thorough fuzzers, signals and locks with real processes (a sample of each kind).
ECOSYSTEM = ["tests/test_docs_site.py::test_the_site_builds_strictly_and_runs_every_tutorial",
             "tests/test_ddp.py::test_cli_train_under_torchrun_reports_once",
             "tests/test_packaging.py::test_mypy_passes_on_the_public_modules",
             "tests/test_sweep.py::test_a_killed_worker_loses_no_part",
             "tests/test_reliability.py::test_sigterm_inside_atomic_file_removes_the_temporary",
             "tests/test_outputs_folders.py::test_sigterm_removes_the_lock"]


def _collect(*args) -> list[str]:
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                          *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 5), res.stdout[-3000:] + res.stderr[-3000:]
    return [line for line in res.stdout.splitlines() if "::" in line]


@pytest.mark.integration
def test_the_default_run_deselects_the_integration_tier_and_m_integration_selects_it():
    from mdmt.extras import has_torch

    # test_ddp.py needs torch as a whole: where torch is not importable it collects nothing in either tier
    ecosystem = [t for t in ECOSYSTEM if has_torch() or not t.startswith("tests/test_ddp.py")]
    files = sorted({t.split("::")[0] for t in ecosystem} | {"tests/test_fuzz_cli.py"})
    default, tier = _collect(*files), _collect("-m", "integration", *files)
    ids = lambda tests: {t.split("[")[0] for t in tests}  # noqa: E731
    assert set(ecosystem) <= ids(tier) and not set(ecosystem) & ids(default)
    # the fuzzers, quick and thorough, are in the integration tier only; the contract checker's own test stays
    assert any("keeps_the_contract_thoroughly" in t for t in tier)
    assert any("test_every_command_keeps_the_contract[" in t for t in tier)
    assert not any("keeps_the_contract" in t for t in default)
    assert any("test_the_contract_checker_has_teeth" in t for t in default)
    # nothing is dropped: every test of these files is in one tier (the files' test functions, by name)
    defined = set()
    for f in files:
        defined |= {f"{f}::{line.split('(')[0][4:]}" for line in (ROOT / f).read_text().splitlines()
                    if line.startswith("def test_")}
    assert ids(default) | ids(tier) == defined and not set(default) & set(tier)


def test_the_marker_is_registered_and_ci_runs_both_tiers():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not integration'" in ini["addopts"]
    assert any(m.startswith("integration:") for m in ini["markers"])
    assert "mdmt/proofs" in ini["testpaths"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line]
    assert ci[-1] == "python3 -m pytest -q -m integration", ci
    assert "MDMT_BLOCK_TORCH=1 python3 -m pytest -q -p no:cacheprovider" in ci
