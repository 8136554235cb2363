"""``mdmt compile`` and its registry of kernel signatures (mdmt/runtime/precompile.py).

The default tier reads the registry (its type strings, its kernels, its order), checks the balanced split and the
command's errors and summary on a tiny registry; the integration tier compiles the whole registry on an empty numba
cache and then sees that ``mdmt verify --quick`` and the kernel families of tests/test_kernel_signatures.py compile
nothing more.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdmt.cli import main
from mdmt.runtime import precompile
from tests.test_kernel_signatures import WORKLOAD

ENTRIES = precompile.load_registry()


def test_the_registry_is_package_data_and_written_by_its_script():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert precompile.REGISTRY.parent == root / "mdmt" / "runtime" and precompile.REGISTRY.is_file()
    assert "kernel_signatures.json" in (root / "pyproject.toml").read_text()
    data = json.loads(precompile.REGISTRY.read_text())
    assert data["format"] == precompile.FORMAT and data["written_by"] == "python benchmarks/record_kernels.py"
    assert len(ENTRIES) >= 20  # the kernel families and verify reach the kernels they are meant to


def test_every_type_of_the_registry_reads_back_as_itself():
    types = {a for e in ENTRIES for a in e["args"]}
    assert "bool" in types and any(t.startswith("Array(") for t in types)
    for t in types:
        assert repr(precompile.parse_type(t)) == t


@pytest.mark.parametrize("text", ["__import__('os')", "open", "__import__('os').system('echo X')", "print('x')",
                                  "float64[:]", "int64.__class__", "Array.__init__", "float64(int64)", "().__class__",
                                  "", "1", "'int64'", "Literal[int]('x')", "Literal[list](0)", "Array(float64, 2, 'X')",
                                  "Array(*(float64, 2, 'C'))", "UniTuple(int64, 2 + 1)", "types", "NumberClass"])
def test_a_string_that_is_not_a_numba_type_is_refused(text):
    with pytest.raises(ValueError, match="is not a numba type") as exc:
        precompile.parse_type(text)
    assert repr(text) in str(exc.value)


def test_nothing_but_numba_type_constructors_is_evaluated(tmp_path):
    """A string that reaches a numba type, or a file, through builtins or attributes is refused, and runs nothing
    (a plain ``eval`` in numba's namespace accepted the first and wrote the file)."""
    touched = tmp_path / "touched"
    for text in ("__import__('numba').core.types.int64", "Array.__mro__[0]",
                 f"__import__('pathlib').Path({str(touched)!r}).touch() or int64",
                 "[int64 for int64 in (float64,)][0]", "(lambda: int64)()", "int64 if 1 else float64"):
        with pytest.raises(ValueError, match="is not a numba type"):
            precompile.parse_type(text)
    assert not touched.exists()


def test_literal_and_nested_types_are_read():
    from numba.core import types

    assert precompile.parse_type("Literal[int](0)") == types.literal(0)
    assert precompile.parse_type("UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)") == types.UniTuple(
        types.Array(types.int64, 1, "C", readonly=True), 2)


def test_every_entry_is_a_cached_numba_kernel_taking_its_number_of_arguments():
    import inspect

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    for e in ENTRIES:
        assert e["kernel"].startswith("mdmt."), e["kernel"]
        obj, why = precompile._resolve(e["kernel"])
        assert why is None, why
        assert isinstance(obj, Dispatcher) and not isinstance(obj._cache, NullCache), e["kernel"]
        assert len(inspect.signature(obj.py_func).parameters) == len(e["args"]), e["kernel"]


def test_callees_come_before_their_callers():
    """numba ends a callee's compilation before its caller's: the registry keeps that order, so a part compiled in
    order finds each callee loaded."""
    first = {}
    for i, e in enumerate(ENTRIES):
        first.setdefault(e["kernel"], i)
    assert any(e["callees"] for e in ENTRIES)
    for i, e in enumerate(ENTRIES):
        for c in e["callees"]:
            assert c in first and first[c] < i, (e["kernel"], c)


def _fake(seconds, callees=None):
    return [{"kernel": f"mdmt.m{k % 3}.f{k}", "args": ["int64"], "seconds": s,
             "callees": [f"mdmt.m{c % 3}.f{c}" for c in (callees or {}).get(k, [])]} for k, s in enumerate(seconds)]


@pytest.mark.parametrize("jobs", [1, 2, 3, 4, 7, 100])
def test_the_split_covers_every_entry_once_in_order_and_balanced(jobs):
    for entries in (ENTRIES, _fake([1.0] * 9), _fake([5, 1, 1, 1, 1, 1], {1: [0], 2: [1]}), _fake([0.0, 0.0]), []):
        parts = precompile.split(entries, jobs)
        flat = [i for p in parts for i in p]
        assert sorted(flat) == list(range(len(entries))) and len(parts) <= jobs
        assert all(p == sorted(p) and p for p in parts)
        if entries and len(parts) > 1:  # longest processing time first: within one unit of the even share
            loads = [sum(entries[i]["seconds"] for i in p) for p in parts]
            total = sum(e["seconds"] for e in entries)
            assert max(loads) <= total / len(parts) + max(e["seconds"] for e in entries) * 4, loads


def test_the_split_keeps_a_kernel_with_its_callees():
    entries = _fake([1, 1, 1, 1, 1, 1], {1: [0], 3: [2], 5: [4]})
    parts = precompile.split(entries, 3)
    assert sorted(parts) == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="jobs must be an integer >= 1, got 0"):
        precompile.split(entries, 0)


@pytest.mark.parametrize("value, message", [("0", "--jobs must be an integer >= 1, got 0"),
                                            ("-3", "--jobs must be an integer >= 1, got -3"),
                                            ("x", "argument --jobs: must be an integer, got 'x'")])
def test_bad_jobs_is_one_error_line(value, message, capsys):
    assert main(["compile", "--jobs", value]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"mdmt compile: error: {message}\n"


def _tiny(tmp_path, monkeypatch, entries):
    path = tmp_path / "kernel_signatures.json"
    path.write_text(json.dumps({"format": precompile.FORMAT, "written_by": "test", "signatures": entries}))
    monkeypatch.setattr(precompile, "REGISTRY", path)
    return path


@pytest.mark.integration
def test_the_command_prints_its_summary_and_names_each_stale_entry(tmp_path, monkeypatch, capsys):
    log = "mdmt.constructions.reverse.policy_exact._log"
    _tiny(tmp_path, monkeypatch, [
        {"kernel": log, "args": ["float64"], "seconds": 0.1, "callees": []},
        {"kernel": "mdmt.constructions.reverse.policy_exact._gone", "args": ["float64"], "seconds": 0.1, "callees": []},
        {"kernel": "mdmt.nowhere._kernel", "args": ["float64"], "seconds": 0.1, "callees": []},
        {"kernel": log, "args": ["float64", "int64"], "seconds": 0.1, "callees": []},
        {"kernel": "mdmt.runtime.numba_cache.read_only", "args": ["float64"], "seconds": 0.1, "callees": []}])
    assert main(["compile", "--jobs", "1", "--no-proofs"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("5 signatures of 4 kernels: ") and ", 4 stale; " in lines[0]
    assert " 1 process" in lines[0] and lines[1].startswith("cache: ")
    warned = err.splitlines()
    assert len(warned) == 4 and all(w.startswith("mdmt compile: warning: the registry of kernel signatures is "
                                                 "stale (python benchmarks/record_kernels.py") for w in warned)
    for why in ("has no _gone", "mdmt has no nowhere._kernel", "takes 1 arguments, the registry lists 2",
                "read_only is not a numba kernel"):
        assert sum(why in w for w in warned) == 1, (why, warned)
    assert main(["compile", "--jobs", "3", "--json"]) == 0  # the same in three processes, then the proofs kept
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert got["proofs"]["families"] == ["CE", "SD"] and got["proofs"]["rows"] > 50 and got["proofs"]["failed"] == []
    assert (got["signatures"], got["kernels"], got["compiled"] + got["loaded"], got["jobs"]) == (5, 4, 1, 3)
    assert len(got["stale"]) == 4 and all(sum(s in w for w in warned) == 1 for s in got["stale"])
    assert got["unlisted"] == [] and got["cache"] and got["seconds"] > 0 and len(err.splitlines()) == 4


def test_a_type_that_no_longer_compiles_is_stale_not_a_crash(tmp_path, monkeypatch):
    _tiny(tmp_path, monkeypatch, [{"kernel": "mdmt.constructions.reverse.policy_exact._log",
                                   "args": ["UniTuple(unicode_type, 2)"], "seconds": 0.1, "callees": []}])
    with pytest.warns(RuntimeWarning, match=r"_log\(UniTuple\(unicode_type, 2\)\): .*does not compile"):
        got = precompile.compile_kernels(jobs=1)
    assert (got["compiled"], got["loaded"], len(got["stale"])) == (0, 0, 1)


@pytest.mark.integration
def test_a_failing_compiling_process_is_one_error_line(tmp_path, monkeypatch, capsys):
    """A part whose process fails (here a module that raises on import) stops the command with one line naming the
    error, whichever process it was (the other is stopped)."""
    for name in ("mdmt_test_broken_a", "mdmt_test_broken_b"):
        (tmp_path / f"{name}.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the compiling processes get this process's sys.path
    _tiny(tmp_path, monkeypatch, [{"kernel": f"{name}.kernel", "args": ["int64"], "seconds": 1.0, "callees": []}
                                  for name in ("mdmt_test_broken_a", "mdmt_test_broken_b")])
    assert main(["compile", "--jobs", "2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "mdmt compile: error: RuntimeError: broken on purpose\n"


@pytest.mark.parametrize("content, message", [
    ("{", "not a registry of kernel signatures"),
    ('{"format": 1, "signatures": [{"kernel": "mdmt.a.b", "args": ["open"], "seconds": 1, "callees": []}]}',
     "mdmt.a.b: 'open' is not a numba type"),
    ('{"format": 1, "signatures": [{"kernel": "mdmt.a.b", "args": "int64", "seconds": 1}]}', "signature 0 is not"),
    ('{"format": 2, "signatures": []}', "of format 1")])
def test_a_malformed_registry_is_one_error_line(tmp_path, monkeypatch, capsys, content, message):
    path = _tiny(tmp_path, monkeypatch, [])
    path.write_text(content)
    assert main(["compile"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("mdmt compile: error: ") and message in err


CHECK = """
import json, sys
from numba.core import event

compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        d = ev.data["dispatcher"]
        name = d.py_func.__module__ + "." + d.py_func.__qualname__
        if name.startswith("mdmt."):
            compiled.append([name, [repr(a) for a in ev.data["args"]]])

event.register("numba:compile", Listener())
import contextlib, io
from mdmt.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["verify", "--quick"]) == 0
with contextlib.redirect_stdout(io.StringIO()):
    exec(compile(sys.argv[2], "workload", "exec"), {"__name__": "__main__"})
with open(sys.argv[1], "w") as f:
    json.dump(compiled, f)
"""


@pytest.mark.integration
def test_after_mdmt_compile_verify_and_the_kernel_families_compile_nothing(tmp_path):
    """On an empty numba cache, ``mdmt compile --jobs 2`` compiles every signature of the registry; a fresh process
    then runs ``mdmt verify --quick`` (``MDMT_VERIFY_JOBS=1``) and the kernel families of
    tests/test_kernel_signatures.py and compiles no kernel of mdmt: every one loads from the cache.  Seeded once:
    with the entry of ``mdmt.constructions.reverse.policy_exact._step_serial`` (which ``mdmt verify --quick`` used)
    dropped from the registry, this test failed naming it."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "MDMT_VERIFY_JOBS": "1"}
    proc = subprocess.run([sys.executable, "-m", "mdmt", "compile", "--jobs", "2", "--json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert (got["compiled"], got["loaded"], got["jobs"]) == (len(ENTRIES), 0, 2), got
    assert got["stale"] == [] and got["unlisted"] == [] and got["cache"].startswith(str(tmp_path / "cache"))
    # the statements of verify --quick proved and kept beside the kernels: the first verify reads them
    kept = sorted(p.name.rsplit("-", 1)[0] for p in Path(got["cache"]).glob("verify-*.pickle"))
    assert kept == ["verify-certification-quick", "verify-derivations-0", "verify-derivations-1"], kept
    assert got["proofs"]["failed"] == [] and got["proofs"]["rows"] > 50
    out = tmp_path / "compiled.json"
    proc = subprocess.run([sys.executable, "-c", CHECK, str(out), textwrap.dedent(WORKLOAD)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    compiled = json.loads(out.read_text())
    assert compiled == [], "compiled on first use, not by mdmt compile (python benchmarks/record_kernels.py " \
                           "records the registry again): " + json.dumps(compiled, indent=1)


def test_the_timings_report_times_mdmt_compile_and_the_first_run_after_it():
    """benchmarks/timings.py: the first run after the README's install command (``mdmt compile`` first) has the goal
    of at most 1.5 times the warm run; the first run without it stays in the report, without a goal."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "benchmarks" / "timings.py").read_text()
    for row in ("`mdmt compile` on an empty numba cache", "`mdmt compile` first, as the README's",
                "without `mdmt compile`", "def compile_then_verify"):
        assert row in text, row


def test_the_uncached_kernels_are_those_without_an_index_in_the_folder_of_this_source(tmp_path, monkeypatch):
    """An empty NUMBA_CACHE_DIR: every kernel of the registry is uncached (a cold run compiles them first,
    tests/conftest.py); an index file named as numba names it removes its kernel, one for another source does not."""
    from mdmt.runtime import numba_cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the fallback base: nothing of this machine's cache
    monkeypatch.setattr(numba_cache.tempfile, "tempdir", None)
    kernels = list(dict.fromkeys(e["kernel"] for e in ENTRIES))
    assert precompile.uncached_kernels() == kernels
    folder = tmp_path / (numba_cache.PREFIX + numba_cache.source_key(numba_cache.package_roots())) / "sub"
    folder.mkdir(parents=True)
    first, second = kernels[0].split("."), kernels[1].split(".")
    (folder / f"{first[-2]}.{first[-1]}-12.py311.nbi").write_bytes(b"")
    other = tmp_path / (numba_cache.PREFIX + "0" * 16)
    other.mkdir()
    (other / f"{second[-2]}.{second[-1]}-40.py311.nbi").write_bytes(b"")
    assert precompile.uncached_kernels() == kernels[1:]
