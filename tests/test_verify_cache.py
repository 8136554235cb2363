"""The rows of verify's exact, deterministic families (SD, CE, PB) kept between runs of ``mdmt verify``
(bounds/verification/proof_cache.py): the same rows as proved afresh, read back without proving, never kept
from a run with a failed row, recomputed for another version or a damaged file; the library proves every time."""

import math
import pickle

import pytest

from mdmt.bounds.verification import checks, proof_cache
from mdmt.bounds.verification.check_rows import Row
from mdmt.bounds.verification.verify import run_checks


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(proof_cache, "_folder", lambda: tmp_path)
    return tmp_path


def _row(holds=True, case="c"):
    return Row("SD", "x", case, (math.nan, math.nan), (math.nan, math.nan), "step", "proved" if holds else "FAILED",
               holds, 0.0, math.nan, "note")


def _counted(rows):
    calls = []

    def compute():
        calls.append(1)
        return list(rows)
    return compute, calls


def _key(rows):  # NaN != NaN: compare the rows' fields as text
    return [repr(r) for r in rows]


def test_the_kept_rows_are_the_proved_rows_and_are_read_back_without_proving(folder):
    fresh = run_checks(quick=True, pattern="^CE$")
    first = run_checks(quick=True, pattern="^CE$", cache=True)  # proves, keeps
    assert list(folder.glob("verify-certification-quick-*.pickle"))
    second = run_checks(quick=True, pattern="^CE$", cache=True)  # reads
    assert _key(fresh) == _key(first) == _key(second) and len(fresh) > 5
    compute, calls = _counted([_row()])
    assert _key(proof_cache.cached("certification-quick", compute)) == _key(fresh) and not calls


def test_a_run_with_a_failed_row_keeps_nothing(folder):
    compute, calls = _counted([_row(), _row(holds=False, case="bad")])
    assert not proof_cache.cached("derivations", compute)[1].holds
    assert not list(folder.iterdir())
    proof_cache.cached("derivations", compute)
    assert len(calls) == 2  # proved again


def test_another_version_or_a_damaged_file_is_proved_again(folder, monkeypatch):
    compute, calls = _counted([_row()])
    proof_cache.cached("derivations", compute)
    proof_cache.cached("derivations", compute)
    assert len(calls) == 1
    (file,) = folder.glob("verify-derivations-*.pickle")
    file.write_bytes(b"not a pickle")
    proof_cache.cached("derivations", compute)
    assert len(calls) == 2 and pickle.loads(file.read_bytes())[0].holds  # written anew
    file.write_bytes(pickle.dumps([_row(holds=False)]))  # a kept failure is never believed
    proof_cache.cached("derivations", compute)
    assert len(calls) == 3
    monkeypatch.setattr(proof_cache, "key", lambda: "0" * 16)  # e.g. another sympy
    proof_cache.cached("derivations", compute)
    assert len(calls) == 4 and len(list(folder.glob("verify-derivations-*.pickle"))) == 2


def test_the_key_names_the_versions_the_proofs_depend_on():
    import sympy

    assert len(proof_cache.key()) == 16 and set(proof_cache.VERSIONED) >= {"sympy", "mpmath", "flint"}
    real = sympy.__version__
    try:
        before = proof_cache.key()
        sympy.__version__ = real + ".post1"
        assert proof_cache.key() != before
    finally:
        sympy.__version__ = real


def test_the_library_proves_every_time_so_a_seeded_mistake_is_seen(folder, monkeypatch):
    run_checks(quick=True, pattern="^CE$", cache=True)  # kept
    from mdmt.bounds.theorems import certify

    monkeypatch.setattr(certify, "certify_nonneg", lambda *a, **k: certify.Certificate("certified", "seeded", 0))
    assert any(not r.holds for r in run_checks(quick=True, pattern="^CE$"))


def test_the_command_uses_the_kept_rows(monkeypatch):
    from mdmt.bounds.verification import verify as V
    from mdmt.cli import main

    seen = []
    monkeypatch.setattr(V, "run_checks", lambda quick, pattern, progress, cache=False: seen.append(cache) or [])
    assert main(["verify", "-k", "^SD$", "--json"]) == 0
    assert seen == [True]
    assert checks.derivation_rows is not proof_cache.derivation_rows


def test_the_parallelbench_rows_are_kept_and_read_back(folder, monkeypatch):
    from mdmt.bounds.verification import checks_parallelbench
    from mdmt.bounds.verification.verify import jobs

    compute, calls = _counted([_row()])
    monkeypatch.setattr(checks_parallelbench, "parallelbench_rows", compute)
    first = proof_cache.parallelbench_rows()
    second = proof_cache.parallelbench_rows()
    assert _key(first) == _key(second) and len(calls) == 1
    assert list(folder.glob("verify-parallelbench-*.pickle"))
    pb = [j for j in jobs(quick=False, cache=True) if j.families == ("PB",)]
    assert len(pb) == 1 and pb[0].run is proof_cache.parallelbench_rows  # the command's full verify reads them
    assert [j for j in jobs(quick=False) if j.families == ("PB",)][0].run is not proof_cache.parallelbench_rows
