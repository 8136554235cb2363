"""Reliability: no crash, no hang, no silent corruption, nothing lost (docs/reliability.md).

Each reproduction of a reported failure -- a segfault on zero-length input, a 150-byte file that
hangs, a refused size that ended in a MemoryError, probabilities written as strings, outputs
overwritten or truncated -- is run here and must now give a correct result or one clear line.
Commands run in the crash- and hang-proof worker of tests/fuzz_support.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mdmt.runtime import resources
from mdmt.constructions.languages import NGram, load_language, random_ngram
from tests.fuzz_support import ERROR, OK, outcome, shared_worker
from tests.test_fuzz_cli import forged_npz

AT_ONCE = 10.0  # seconds: a refusal must come at once, not after the work


@pytest.fixture(scope="module")
def worker(tmp_path_factory, pytestconfig):
    return shared_worker(pytestconfig, tmp_path_factory.mktemp("reliability-logs"), AT_ONCE)


def run(worker, folder, *argv, heavy=True):
    """The outcome of ``mdmt argv`` in the worker and its result; ``heavy=False`` for a case refused at once (its
    imports counted in its time, :meth:`~tests.fuzz_support.Worker.run`)."""
    res = worker.run(list(argv), folder, heavy=heavy)
    return outcome(res, "--json" in argv), res


# ----------------------------------------------------------------------------- item 1: zero-length input
@pytest.mark.integration
def test_zero_length_input_does_not_crash_the_interpreter():
    """HMM.log_likelihood([]) and (n, 0) batches used to read past the end in numba (a segfault): run them in a child."""
    code = textwrap.dedent("""
        import dataclasses, numpy as np
        from mdmt.constructions.languages import interval_hmm, preset, inference, ngram_inference
        out = {}
        for name in ("hmm", "3gram", "4gram"):
            q = preset(name)
            for n in (0, 1, 5):
                E = np.zeros((n, 0), dtype=np.int64)
                out[f"{name} {n}"] = [q.log_likelihood(E).tolist(), q.in_support(E).tolist(),
                                      list(q.posterior_marginals(E).shape), list(q(E).shape)]
            out[f"{name} []"] = [q.log_likelihood([]).tolist(), q.in_support([]).tolist()]
        h = interval_hmm(3)._kernel_params  # 16 states: dense kernels; force the sparse ones too
        for p in (h, dataclasses.replace(h, sparse=True)):
            E = np.zeros((2, 0), dtype=np.int64)
            out[f"kernels {p.sparse}"] = [inference.log_likelihood(p, E).tolist(), inference.support(p, E).tolist(),
                                          list(inference.posterior_marginals(p, E).shape)]
        print(__import__("json").dumps(out))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"exit status {p.returncode} (a negative status is a signal): {p.stderr[-2000:]}"
    res = json.loads(p.stdout)
    for name, V in (("hmm", 8), ("3gram", 8), ("4gram", 8)):
        assert res[f"{name} 0"] == [[], [], [0, 0, V], [0, 0, V]]
        assert res[f"{name} 5"] == [[0.0] * 5, [True] * 5, [5, 0, V], [5, 0, V]]  # q(empty) = 1
        assert res[f"{name} []"] == [[0.0], [True]]
    assert res["kernels False"] == res["kernels True"] == [[0.0, 0.0], [True, True], [2, 0, 4]]


# ----------------------------------------------------------------------------- item 5: tiny inputs, huge work
def test_a_150_byte_ngram_file_with_a_huge_order_is_refused_at_once(worker, tmp_path):
    lang = tmp_path / "big.json"
    lang.write_text(json.dumps({"kind": "ngram", "n": 10**30, "initial": [0.5, 0.5],
                                "transition": [[0.5, 0.5], [0.5, 0.5]]}))
    (tmp_path / "s.txt").write_text("0 1\n")
    assert lang.stat().st_size < 150
    result, res = run(worker, tmp_path, "score", "--language", "big.json", "--sequences", "s.txt")
    assert result == ERROR and res["seconds"] < AT_ONCE
    assert "invalid key 'n': n = 1000000000000000000000000000000 is larger than the largest supported n-gram order 64" in res["err"]


def test_an_ngram_mdmt_writes_it_can_score(worker, tmp_path):
    """A 4-gram over 32 symbols (its HMM form: 48 GiB) is written, read and scored from its tables.

    On a cold numba cache the two commands first run here, in this process, in another folder: whatever numba
    compiles for them is compiled (and cached, in the cache the worker shares) before the worker's 10 s per command
    start, so the test holds on a machine whose numba cache is cold."""
    from mdmt.cli import main
    from mdmt.runtime.precompile import uncached_kernels

    if uncached_kernels():
        (tmp_path / "warm").mkdir()
        (tmp_path / "warm" / "s.txt").write_text("0 1 2\n")
        assert main(["language", "--kind", "ngram", "--n", "4", "--vocab", "32", "--out",
                     str(tmp_path / "warm" / "g.npz")]) == 0
        assert main(["score", "--language", str(tmp_path / "warm" / "g.npz"), "--sequences",
                     str(tmp_path / "warm" / "s.txt"), "--json"]) == 0
    result, res = run(worker, tmp_path, "language", "--kind", "ngram", "--n", "4", "--vocab", "32", "--out", "g.npz")
    assert result == OK, res["err"]
    x = load_language(tmp_path / "g.npz").sample_sequences(3, 50, seed=0)
    (tmp_path / "s.txt").write_text("".join(" ".join(map(str, r)) + "\n" for r in x))
    result, res = run(worker, tmp_path, "score", "--language", "g.npz", "--sequences", "s.txt", "--json")
    assert result == OK, res["err"]
    scores = [r["log_likelihood"] for r in json.loads(res["out"])["rows"]]
    np.testing.assert_allclose(scores, load_language(tmp_path / "g.npz").log_likelihood(x), rtol=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["language", "--kind", "hmm", "--states", "100000", "--out", "h.json"],
     r"a random hmm language with 10000900000 probabilities written as json needs 1.1 TiB of memory, more than the "
     r"limit of 2.0 GiB \(set MDMT_MAX_MEMORY to raise it\); use a smaller --vocab, --n or --states"),
    (["language", "--kind", "ngram", "--n", "10", "--vocab", "32", "--out", "g.npz"], r"needs .* TiB of memory"),
    (["language", "--kind", "ngram", "--n", "100", "--out", "g.npz"], "largest supported n-gram order 64"),
    (["score", "--language", "forged.npz", "--sequences", "s.txt"],
     r"reading forged.npz \(745.1 GiB of arrays\) needs 1.5 TiB of memory"),
])
def test_sizes_over_the_limit_are_refused_before_allocating(worker, tmp_path, argv, message):
    import re

    (tmp_path / "forged.npz").write_bytes(forged_npz())
    (tmp_path / "s.txt").write_text("0 1\n")
    result, res = run(worker, tmp_path, *argv)
    assert result == ERROR and res["seconds"] < AT_ONCE, res
    assert re.search(message, res["err"]), res["err"]
    assert not any(p.name.startswith(("h.", "g.")) for p in tmp_path.iterdir())


def test_limits_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("MDMT_MAX_MEMORY", "512M")
    assert resources.memory_limit() == 512 << 20
    resources.check_memory("x", 512 << 20)
    with pytest.raises(resources.ResourceError, match=r"^y needs 512.0 MiB of memory, more than the limit of 512.0 "
                                                      r"MiB \(set MDMT_MAX_MEMORY to raise it\); try z$"):
        resources.check_memory("y", (512 << 20) + 1, "try z")
    for text, value in (("8G", 8 << 30), ("1e9", 10**9), ("2 GiB", 2 << 30), ("100", 100), ("1.5K", 1536)):
        assert resources.parse_size(text) == value
    for bad in ("", "x", "-1G", "nan", "0", "inf"):
        monkeypatch.setenv("MDMT_MAX_MEMORY", bad)
        if bad:
            with pytest.raises(ValueError, match="MDMT_MAX_MEMORY"):
                resources.memory_limit()
    monkeypatch.setenv("MDMT_MAX_WORK", "1000")
    with pytest.raises(resources.ResourceError, match=r"takes about 1200 operations, more than the limit of 1000 "
                                                      r"\(set MDMT_MAX_WORK to raise it\)"):
        resources.check_work("w", 1200)
    monkeypatch.delenv("MDMT_MAX_MEMORY")
    monkeypatch.delenv("MDMT_MAX_WORK")
    total = resources.physical_memory()
    assert resources.memory_limit() == (total // 2 if total else resources.FALLBACK_MEMORY)
    assert resources.work_limit() == resources.DEFAULT_WORK


def test_every_language_entry_point_checks_its_size(monkeypatch, tmp_path):
    """The guard of each API entry point, at a limit small enough to trip it (and not below)."""
    from mdmt.constructions.languages import HMM, interval_hmm, random_hmm, support_size

    from mdmt.constructions.languages import save_language

    q = random_ngram(3, 4, 2.0, 0.0, seed=0)
    big = random_ngram(4, 16, 2.0, 0.0, seed=0)  # 4096 + 65536 probabilities
    X = q.sample_sequences(50, 40, seed=1)
    monkeypatch.setenv("MDMT_MAX_WORK", "1000")
    for call in (lambda: q.log_likelihood(X), lambda: q.in_support(X), lambda: q.posterior_marginals(X),
                 lambda: q.to_hmm().log_likelihood(X), lambda: q.sequence_entropy(10**6)):
        with pytest.raises(resources.ResourceError, match="operations, more than the limit of 1000"):
            call()
    monkeypatch.setenv("MDMT_MAX_WORK", "1e12")
    monkeypatch.setenv("MDMT_MAX_MEMORY", "1M")
    with pytest.raises(resources.ResourceError, match=r"an HMM with 400 hidden states and 3 symbols needs 7.4 MiB"):
        HMM(np.full(400, 1 / 400), np.full((400, 400), 1 / 400), np.full((400, 3), 1 / 3))
    with pytest.raises(resources.ResourceError, match="the HMM form of this 3-gram"):
        random_ngram(3, 16, 2.0, 0.0, seed=0).to_hmm()
    with pytest.raises(resources.ResourceError, match=r"a random table of 600 x 600 probabilities"):
        random_hmm(600, 2, 1.0, 0.0)
    with pytest.raises(resources.ResourceError, match=r"1000000 sequences of length 40"):
        q.sample_sequences(10**6, 40)
    with pytest.raises(resources.ResourceError, match=r"the posterior marginals of 5000 sequence"):
        q.posterior_marginals(np.zeros((5000, 40), dtype=np.int64))
    with pytest.raises(resources.ResourceError, match=r"the exact support size 2\^20000000000"):
        support_size(10**10, 5)
    with pytest.raises(resources.ResourceError, match=r"writing .*big.json as JSON \(69632 probabilities\) needs 3.7 MiB"):
        save_language(big, tmp_path / "big.json")
    save_language(big, tmp_path / "big.npz")
    assert q.log_likelihood(X).shape == (50,) and interval_hmm(3).n_states == 16  # small inputs pass
    with pytest.raises(resources.ResourceError, match=r"reading .*big.npz \(544.3 KiB of arrays\) needs 1.1 MiB"):
        load_language(tmp_path / "big.npz")
    monkeypatch.setenv("MDMT_MAX_MEMORY", "2M")
    assert not (tmp_path / "big.json").exists() and load_language(tmp_path / "big.npz") == big


def test_malformed_npz_headers_are_refused_before_loading(tmp_path):
    p = tmp_path / "f.npz"
    p.write_bytes(forged_npz((3, 10**12)))
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"f.npz \(21.8 TiB of arrays\) needs"):
        load_language(p)
    assert time.perf_counter() - t0 < 5
    p.write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip archive
    with pytest.raises(ValueError, match="missing key 'kind'"):
        load_language(p)


# ----------------------------------------------------------------------------- item 6: values that are not numbers
@pytest.mark.parametrize("value, message", [
    (["0.5", "0.5"], r"invalid key 'initial': startprob\[0\] is a str \('0.5'\), not a number"),
    ([True, False], r"invalid key 'initial': startprob\[0\] is a boolean \(True\), not a number"),
    ([0.5, None], r"invalid key 'initial': startprob\[1\] is a NoneType \(None\), not a number"),
    ([0.5, [0.5]], r"invalid key 'initial': startprob\[1\] is a list, but startprob must have 1 dimension"),
    ([0.5, {"p": 0.5}], r"invalid key 'initial': startprob\[1\] is a dict"),
])
def test_probabilities_that_are_not_numbers_are_refused_naming_the_key(worker, tmp_path, value, message):
    import re

    doc = {"kind": "hmm", "initial": value, "transition": [[1, 0], [0, 1]], "emission": [[1, 0], [0, 1]]}
    (tmp_path / "l.json").write_text(json.dumps(doc))
    (tmp_path / "s.txt").write_text("0 1\n")
    result, res = run(worker, tmp_path, "score", "--language", "l.json", "--sequences", "s.txt")
    assert result == ERROR and re.search(message, res["err"]), res["err"]


def test_transition_rows_as_strings_or_booleans_are_refused():
    with pytest.raises(ValueError, match=r"transition\[1, 0\] is a boolean"):
        NGram(2, [0.5, 0.5], [[0.5, 0.5], [True, False]])
    with pytest.raises(ValueError, match=r"transition must be an array of numbers, got an array of dtype <U3"):
        NGram(2, [0.5, 0.5], np.array([["0.5", "0.5"], ["1.0", "0.0"]]))


# ----------------------------------------------------------------------------- the reported failures, as a table
# Each row: the command, and what it must now give (OK, or ERROR with a message fragment).  The curves and
# the dependency counts answer L = 10^9 in seconds (closed forms; a matrix power by repeated squaring).
REPRODUCTIONS = [
    pytest.param(["exact", "--language", "preset:2gram", "-L", "1000000000", "-N", "2"], ERROR, "", id="exact-L-1e9"),
    pytest.param(["exact", "--language", "preset:2gram", "-L", "4500", "-N", "2"], ERROR, "L = 4500", id="exact-L-4500"),
    pytest.param(["curve", "ter", "--lengths", "1000000000"], OK, "", id="curve-ter-lengths-1e9"),
    pytest.param(["curve", "ser", "-l", "5", "-L", "1000000"], OK, "", id="curve-ser-L-1e6"),
    pytest.param(["curve", "ser", "-l", "100000", "-L", "100000"], ERROR, "", id="curve-ser-l-1e5"),
    pytest.param(["dependencies", "--n", "3", "-L", "1000000000", "-N", "4"], OK, "", id="dependencies-L-1e9"),
    pytest.param(["curve", "ser", "-l", "4", "-L", "0"], ERROR, "", id="curve-ser-L-0"),
    pytest.param(["curve", "ter", "--eps-learning", "-1"], ERROR, "", id="curve-ter-eps-learning-negative"),
    pytest.param(["curve", "ter", "--eps-learning", "nan"], ERROR, "", id="curve-ter-eps-learning-nan"),
    pytest.param(["curve", "ter", "--lengths", ""], ERROR, "--lengths", id="curve-ter-lengths-empty"),
    pytest.param(["curve", "ser", "-l", "0"], ERROR, "", id="curve-ser-l-0"),
    pytest.param(["curve", "ter", "--n", "1000"], ERROR, "", id="curve-ter-n-1000"),
    pytest.param(["train", "--language", "preset:2gram", "--train-steps", "2", "--batch", "2", "-L", "8", "--lr",
                  "1e10", "--out", "tr", "--no-progress"], ERROR, "", id="train-lr-1e10",
                 marks=pytest.mark.integration),  # torch in the worker; in process: test_checkpoints.py
    pytest.param(["sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--num", "1000000000"], ERROR,
                 "memory", id="sample-num-1e9"),
    pytest.param(["sample", "--language", "interval:3", "-L", "6", "-N", "1", "--num", "3"], OK, "",
                 id="sample-no-sample-in-support"),
    pytest.param(["score", "--language", "preset:2gram", "--sequences", "seqs"], ERROR,
                 "--sequences seqs is a folder", id="score-sequences-folder"),
]


@pytest.mark.parametrize("argv, expected, message", REPRODUCTIONS)
def test_reported_inputs_now_get_a_clear_answer(worker, tmp_path, argv, expected, message):
    (tmp_path / "seqs").mkdir()
    result, res = run(worker, tmp_path, *argv)
    assert result == expected, (result, res)
    if expected == ERROR:  # one clear, short line, at once
        assert message in res["err"] and len(res["err"]) < 400 and res["seconds"] < AT_ONCE


# ----------------------------------------------------------------------------- item 7: outputs
from mdmt.runtime import outputs  # noqa: E402


def test_atomic_file_leaves_the_old_file_or_the_new_one(tmp_path):
    path = tmp_path / "x.txt"
    outputs.write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with outputs.atomic_file(path) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["x.txt"]
    with pytest.raises(outputs.OutputError, match=r"^cannot write .*x.txt: No space left on device$"):
        with outputs.atomic_file(path) as fh:
            fh.write("half")
            raise OSError(28, "No space left on device")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["x.txt"]
    outputs.write_bytes(path, b"new\n")
    assert path.read_bytes() == b"new\n" and os.listdir(tmp_path) == ["x.txt"]
    mask = os.umask(0o022)
    try:
        outputs.write_text(tmp_path / "y.txt", "y")
    finally:
        os.umask(mask)
    assert (tmp_path / "y.txt").stat().st_mode & 0o777 == 0o644  # the usual permissions, not mkstemp's 0600


def test_output_paths_are_checked_before_any_work(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "f.txt").write_text("theirs\n")
    cases = [(tmp_path / "dir", "is a folder; give a file name"), (tmp_path / "no" / "x.json", "does not exist"),
             (tmp_path / "f.txt" / "x.json", "is not a folder"),
             (tmp_path / "f.txt", "already exists and was not written by mdmt for the same request; pass --force")]
    for path, message in cases:
        with pytest.raises(outputs.OutputError, match=message):
            outputs.check_output_file(path)
    assert outputs.check_output_file(tmp_path / "f.txt", force=True) == tmp_path / "f.txt"
    assert outputs.check_output_file(tmp_path / "f.txt", same=lambda p: p.read_text() == "theirs\n")
    with pytest.raises(outputs.OutputError, match="exists and is not a folder"):
        outputs.check_output_folder(tmp_path / "f.txt")
    assert outputs.check_output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


WRITERS = {
    "language": (["language", "--language", "preset:3gram", "--out", "out.json"], ["out.json"]),
    "counterexample": (["counterexample", "-l", "4", "--out", "out.npz"], ["out.npz"]),
    "sample": (["sample", "--language", "preset:2gram", "-L", "64", "-N", "4", "--num", "200", "--out", "out.txt"],
               ["out.txt"]),
    "data": (["data", "--language", "preset:2gram", "-L", "64", "--num", "200", "--num-val", "20", "--out", "d"],
             ["d/train.npy", "d/val.npy", "d/manifest.json"]),
}


def _limited_run(argv, cwd, file_size: int):
    """Run mdmt in a child whose files cannot grow past ``file_size`` bytes (writes fail as on a full disk)."""
    import resource

    def limit():  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run([sys.executable, "-m", "mdmt", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, preexec_fn=limit)


@pytest.mark.integration
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_full_disk_leaves_no_truncated_file_and_one_error_line(tmp_path, name):
    """Under the file-size limit nothing can be written -- numba's cache included: the command first runs with room
    to write in another folder, so that its kernels are cached (in the cache the limited child shares) and the
    limited run meets a full disk only where mdmt writes its outputs, whatever the state of the cache before."""
    argv, files = WRITERS[name]
    (tmp_path / "warm").mkdir()
    warm = subprocess.run([sys.executable, "-m", "mdmt", *argv], cwd=tmp_path / "warm", capture_output=True,
                          text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    (tmp_path / "full").mkdir()
    tmp_path = tmp_path / "full"
    p = _limited_run(argv, tmp_path, 2048)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"mdmt {name}: error: cannot write ")
    assert "File too large" in p.stderr or "disk" in p.stderr
    leftovers = [str(q.relative_to(tmp_path)) for q in tmp_path.rglob("*") if q.is_file()]
    assert not [f for f in leftovers if f.endswith(".tmp")], leftovers  # no temporary file is left behind
    for f in files:  # each output is absent or complete
        if (tmp_path / f).exists() and f.endswith(".npy"):
            np.load(tmp_path / f)
    if name == "data" and (tmp_path / "d/manifest.json").exists():
        assert json.loads((tmp_path / "d/manifest.json").read_text())["complete"] is False  # marked unfinished
    # the same command with room to write: complete outputs, and the data set's unfinished folder is its own
    p = subprocess.run([sys.executable, "-m", "mdmt", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for f in files:
        assert (tmp_path / f).stat().st_size > 0


@pytest.mark.integration
def test_a_full_disk_keeps_the_previous_output(tmp_path):
    argv = ["language", "--language", "preset:3gram", "--out", "out.json"]
    assert subprocess.run([sys.executable, "-m", "mdmt", *argv], cwd=tmp_path, capture_output=True).returncode == 0
    before = (tmp_path / "out.json").read_bytes()
    p = _limited_run(argv, tmp_path, 1024)
    assert p.returncode == 2 and (tmp_path / "out.json").read_bytes() == before


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_read_only_destination_is_one_error_line(tmp_path, monkeypatch, capsys, name):
    """EROFS (and, for non-root users, a real read-only folder) while creating the output."""
    from mdmt.cli import main

    argv, files = WRITERS[name]
    monkeypatch.chdir(tmp_path)

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system", str(tmp_path))

    monkeypatch.setattr(outputs.tempfile, "mkstemp", read_only)
    monkeypatch.setattr(outputs.Path, "mkdir", lambda *a, **k: read_only())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bind root")
def test_a_read_only_folder_is_one_error_line(tmp_path, capsys):
    from mdmt.cli import main

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert main(["counterexample", "-l", "3", "--out", str(ro / "x.json")]) == 2
        assert "Permission denied" in capsys.readouterr().err
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("name", ["language", "counterexample", "sample"])
def test_file_outputs_replace_only_mdmts_own_file_for_the_same_request(tmp_path, monkeypatch, capsys, name):
    from mdmt.cli import main

    argv, (out,) = WRITERS[name]
    monkeypatch.chdir(tmp_path)
    (tmp_path / out).write_text("someone else's file\n")
    assert main(argv) == 2
    assert "already exists and was not written by mdmt for the same request; pass --force" in capsys.readouterr().err
    assert (tmp_path / out).read_text() == "someone else's file\n"
    assert main(argv + ["--force"]) == 0
    first = (tmp_path / out).read_bytes()
    assert main(argv) == 0 and (tmp_path / out).read_bytes() == first  # the same request again: replaced
    other = [a if a not in ("3", "4", "200") else {"3": "2", "4": "3", "200": "100"}[a] for a in argv]
    other = [a if a != "preset:3gram" else "preset:2gram" for a in other]
    assert main(other) == 2 and (tmp_path / out).read_bytes() == first  # another request: refused
    capsys.readouterr()


def test_data_sets_are_never_written_over_what_mdmt_did_not_write(tmp_path, monkeypatch, capsys):
    from mdmt.cli import main

    monkeypatch.chdir(tmp_path)
    base = ["data", "--language", "preset:2gram", "-L", "8", "--num", "10", "--num-val", "5", "--json"]
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.npy").write_text("an unrelated file\n")
    assert main(base + ["--out", "d"]) == 2
    assert "d/train.npy exists and is not part of an mdmt data set; pass --force" in capsys.readouterr().err
    assert (tmp_path / "d" / "train.npy").read_text() == "an unrelated file\n"
    assert main(base + ["--out", "d", "--force"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "written (over train.npy: --force)"
    assert main(base + ["--out", "d"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "loaded (same spec, digests match)"
    # a damaged set of the same spec is regenerated, and the status says so
    raw = bytearray((tmp_path / "d" / "train.npy").read_bytes())
    raw[-1] ^= 1
    (tmp_path / "d" / "train.npy").write_bytes(bytes(raw))
    assert main(base + ["--out", "d"]) == 0
    status = json.loads(capsys.readouterr().out)["status"]
    assert status == "regenerated: d/train.npy does not match the SHA-256 in its manifest"
    (tmp_path / "d" / "val.npy").write_bytes(b"\x93NUMPY garbage")
    assert main(base + ["--out", "d"]) == 0
    assert json.loads(capsys.readouterr().out)["status"].startswith("regenerated: d/val.npy is not a readable .npy")
    # another spec: refused unless --force
    assert main(base[:4] + ["9"] + base[5:] + ["--out", "d"]) == 2
    assert "holds a data set of another spec (length 8 here, 9 asked); pass --force" in capsys.readouterr().err
    assert main(base + ["--out", "d"]) == 0 and "loaded" in capsys.readouterr().out
    # --out naming a file
    assert main(base + ["--out", "d/train.npy"]) == 2 and "exists and is not a folder" in capsys.readouterr().err


def test_an_interrupted_data_set_is_refused_by_load_and_regenerated(tmp_path):
    from mdmt.empirical.data import DataSpec, ensure, load

    spec = DataSpec(language="preset:2gram", num_train=10, num_val=5, length=8)
    first = ensure(tmp_path / "d", spec)
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    pending = {k: v for k, v in manifest.items() if k != "sha256"} | {"complete": False}
    (tmp_path / "d" / "manifest.json").write_text(json.dumps(pending))
    with pytest.raises(ValueError, match="not completely written"):
        load(tmp_path / "d")
    again = ensure(tmp_path / "d", spec)
    assert again.status.startswith("regenerated: ") and np.array_equal(again.train, first.train)
    assert load(tmp_path / "d")[2] == manifest


def test_a_data_set_too_large_to_read_here_is_not_regenerated_over(tmp_path, monkeypatch):
    from mdmt.empirical.data import DataSpec, ensure

    spec = DataSpec(language="preset:2gram", num_train=2000, num_val=5, length=64)
    ensure(tmp_path / "d", spec)
    before = {p.name: p.read_bytes() for p in (tmp_path / "d").iterdir()}
    monkeypatch.setenv("MDMT_MAX_MEMORY", "256K")
    with pytest.raises(resources.ResourceError, match=r"reading .*train.npy"):
        ensure(tmp_path / "d", spec)
    assert {p.name: p.read_bytes() for p in (tmp_path / "d").iterdir()} == before


# ----------------------------------------------------------------------------- empty lists, negative seeds
@pytest.mark.parametrize("argv, flag", [
    pytest.param(["adaptive", "ser", "--policies", ""], "--policies", id="adaptive-ser-policies"),
    pytest.param(["adaptive", "ter", "--policies", " , "], "--policies", id="adaptive-ter-policies"),
    pytest.param(["adaptive", "ter", "--lengths", ""], "--lengths", id="adaptive-ter-lengths"),
    pytest.param(["figure1", "--kinds", "", "--out", "f"], "--kinds", id="figure1-kinds"),
    pytest.param(["figure1", "--lengths", "", "--out", "f"], "--lengths", id="figure1-lengths"),
    pytest.param(["figure1", "--steps", ",", "--out", "f"], "--steps", id="figure1-steps"),
    pytest.param(["figure1", "--ter-languages", "", "--ser-languages", "", "--out", "f"],
                 "--ter-languages and --ser-languages", id="figure1-languages"),
    pytest.param(["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--processes", "", "--out", "f"],
                 "--processes", id="atlas-processes"),
    pytest.param(["speed", "--seed", "-1"], "argument --seed", id="speed-seed"),
    pytest.param(["sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--seed", "-1"], "argument --seed",
                 id="sample-seed"),
    pytest.param(["data", "--language", "preset:2gram", "-L", "4", "--out", "f", "--seed", "-1"], "argument --seed",
                 id="data-seed"),
    pytest.param(["language", "--list", "--seed", "-1"], "argument --seed", id="language-seed"),
    pytest.param(["train", "--language", "preset:2gram", "--out", "f", "--seed", "-5"], "argument --seed",
                 id="train-seed"),
    pytest.param(["adaptive", "sample", "--language", "preset:2gram", "-L", "4", "--seed", "-1"], "argument --seed",
                 id="adaptive-sample-seed"),
])
def test_empty_lists_and_negative_seeds_are_refused_naming_the_flag(worker, tmp_path, argv, flag):
    """An empty --policies or --kinds used to run nothing and exit 0; a negative --seed was accepted."""
    result, res = run(worker, tmp_path, *argv, heavy=False)
    assert result == ERROR, (result, res)
    assert flag in res["err"] and res["seconds"] < AT_ONCE
    assert not (tmp_path / "f").exists()  # refused before anything is written


# ----------------------------------------------------------------------------- special files as inputs
@pytest.mark.parametrize("role", ["--language", "--sequences"])
@pytest.mark.parametrize("kind, message", [("fifo", "is a FIFO, not"), ("/dev/zero", "is a character device, not"),
                                           ("folder", "is a folder, not")])
def test_fifos_devices_and_folders_are_refused_as_input_files(worker, tmp_path, role, kind, message):
    """A FIFO given as an input file used to block forever: its kind is read from its status, it is never opened."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    save_path = tmp_path / "l.json"
    from mdmt.constructions.languages import save_language

    save_language(random_ngram(2, 3, 1.0, 0.0, seed=0), save_path)
    (tmp_path / "s.txt").write_text("0 1 2\n")
    files = {"--language": "l.json", "--sequences": "s.txt", role: kind}
    result, res = run(worker, tmp_path, "score", "--language", files["--language"], "--sequences", files["--sequences"])
    assert result == ERROR, (result, res)
    assert f"{kind}{':' if role == '--language' else ''} {message}" in res["err"] and res["seconds"] < AT_ONCE
    if role == "--sequences":
        assert res["err"].startswith(f"mdmt score: error: --sequences {kind} ")


@pytest.mark.integration
def test_a_fifo_as_a_data_set_manifest_is_not_opened(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    os.mkfifo(folder / "manifest.json")
    code = f"from mdmt.empirical.data import read_manifest; print(read_manifest({str(folder)!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "None", out.stderr


@pytest.mark.parametrize("argv, flag", [
    (["adaptive", "ser", "--intervals", "1000000"], "--intervals 1000000"),
    (["adaptive", "ser", "--curve-length", "3000000"], "--curve-length 3000000"),
])
def test_an_adaptive_ser_study_too_large_is_refused_naming_the_flag(worker, tmp_path, argv, flag):
    kind, res = run(worker, tmp_path, *argv)
    assert kind == ERROR, res
    line = res["err"].strip()
    assert flag in line and ("MDMT_MAX_WORK" in line or "MDMT_MAX_MEMORY" in line)


def test_adaptive_ser_cost_estimates_grow_with_the_length():
    from mdmt.bounds.studies.adaptive import min_steps_ser_cost, ser_curve_cost

    small, big = (min_steps_ser_cost(3, 3 * K, "confidence", 0.1, 2000) for K in (64, 10**6))
    assert small[0] < 10**11 and small[1] < 1 << 30 and big[0] > 10**15 and big[1] > 1 << 36
    assert ser_curve_cost(3, 60, ["iid", "stride", "confidence"], [1, 2, 60, 120], 100)[0] < 10**9


_SIGTERM_DURING_SAVE = """
import os, signal, sys
import numpy as np
from mdmt.cli import main

real_save = np.save

def save_then_terminate(fh, arr, *a, **k):  # SIGTERM arrives while train.npy's temporary file is being written
    real_save(fh, arr, *a, **k)
    os.kill(os.getpid(), signal.SIGTERM)

np.save = save_then_terminate
sys.exit(main(["data", "--language", "preset:2gram-ter", "-L", "8", "--num", "50", "--num-val", "5",
               "--out", sys.argv[1]]))
"""


@pytest.mark.integration
def test_sigterm_during_mdmt_data_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "d"
    res = subprocess.run([sys.executable, "-c", _SIGTERM_DURING_SAVE, str(out)], capture_output=True, text=True,
                         timeout=120)
    err = res.stderr.strip().splitlines()
    assert res.returncode == 128 + 15 and len(err) == 1 and "SIGTERM" in err[0], res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]  # no temporary, no train.npy
    assert main_data(out) == 0 and sorted(p.name for p in out.iterdir()) == ["manifest.json", "train.npy", "val.npy"]


def main_data(out) -> int:
    from mdmt.cli import main

    return main(["data", "--language", "preset:2gram-ter", "-L", "8", "--num", "50", "--num-val", "5", "--out",
                 str(out)])


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.integration
def test_stale_temporaries_of_a_killed_run_are_removed_by_the_next_run(tmp_path, capsys):
    prefix = outputs.temporary_prefix(tmp_path / "train.npy")
    live = tmp_path / f"{prefix}live0001.tmp"  # this process is running: its file is in use
    stale = tmp_path / (prefix.replace(f"-{os.getpid()}.", f"-{_dead_pid()}.") + "abcd1234.tmp")
    other_host = tmp_path / f".train.npy.mdmt-00000000-{_dead_pid()}.abcd1234.tmp"
    foreign = [tmp_path / ".train.npy.abcd1234.tmp", tmp_path / "notes.mdmt-1.tmp", other_host]
    for f in [live, stale, *foreign]:
        f.write_bytes(b"x" * 100)
    assert main_data(tmp_path) == 0
    capsys.readouterr()
    assert not stale.exists() and live.exists() and all(f.exists() for f in foreign)
    assert (tmp_path / "train.npy").exists()


@pytest.mark.integration
def test_sigterm_inside_atomic_file_removes_the_temporary(tmp_path):
    code = textwrap.dedent(f"""
        import os, signal, time
        from mdmt.runtime.outputs import atomic_file
        with atomic_file({str(tmp_path / 'x.bin')!r}, "wb") as fh:
            fh.write(b"x" * 100000)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and list(tmp_path.iterdir()) == []
