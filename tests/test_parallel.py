"""mdmt.runtime.parallel: serial nogil kernels over index ranges on a pool of threads.

The ranges cover every index once; a kernel's result does not depend on the number of threads (each kernel of the
languages and of the sampler is run on one thread and on three, and the arrays must be equal bit for bit); errors
come back to the caller; the pool works again in a forked child; and no kernel of mdmt is compiled by numba's
parallel back end (the compilation cost that this module removes).
"""

import ast
import os
import signal
from pathlib import Path

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdmt.runtime import parallel
from mdmt.runtime.parallel import ranges, run_ranges, set_threads, threads
from tests.source_tree import parse

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def three_threads():
    old = set_threads(3)
    yield
    set_threads(old)


@given(st.integers(0, 500), st.integers(1, 64))
@settings(max_examples=200, deadline=None)
def test_ranges_cover_every_index_once(n, parts):
    spans = ranges(n, parts)
    covered = [i for lo, hi in spans for i in range(lo, hi)]
    assert covered == list(range(n))
    assert len(spans) == min(n, parts) and all(hi > lo for lo, hi in spans)
    sizes = [hi - lo for lo, hi in spans]
    assert not sizes or max(sizes) - min(sizes) <= 1


@nb.njit(nogil=True)
def _fill(lo, hi, out, add):
    for i in range(lo, hi):
        out[i] += i + add


@nb.njit
def _holds_the_lock(lo, hi, out):
    for i in range(lo, hi):
        out[i] = 1.0


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_run_ranges_calls_each_index_once(k):
    old = set_threads(k)
    try:
        for n in (0, 1, 5, 100, 1001):
            out = np.zeros(n)
            run_ranges(_fill, n, out, 0.5)
            assert np.array_equal(out, np.arange(n) + 0.5)
            calls = []
            run_ranges(lambda lo, hi: calls.append((lo, hi)), n, parts=3)
            assert sorted(calls) == ranges(n, 3)
    finally:
        set_threads(old)


def test_a_kernel_that_holds_the_interpreter_lock_is_refused():
    with pytest.raises(TypeError, match="_holds_the_lock.*nogil=True"):
        run_ranges(_holds_the_lock, 4, np.zeros(4))


def test_the_first_error_comes_back_after_every_range_ran(three_threads):
    seen = []

    def kernel(lo, hi):
        seen.append(lo)
        if lo == 0:
            raise ValueError("range 0 failed")

    with pytest.raises(ValueError, match="range 0 failed"):
        run_ranges(kernel, 12, parts=6)
    assert sorted(seen) == [lo for lo, _ in ranges(12, 6)]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2"])
def test_set_threads_refuses_what_is_not_a_positive_integer(bad):
    with pytest.raises(ValueError, match=f"threads={bad!r}"):
        set_threads(bad)


def test_set_threads_returns_the_setting_it_replaces():
    old = set_threads(5)
    try:
        assert threads() == 5
        assert set_threads(2) == 5 and threads() == 2
    finally:
        set_threads(old)
    assert threads() == parallel.default_threads() or old is not None


def test_numba_num_threads_sets_the_default(monkeypatch):
    monkeypatch.setattr(parallel, "_setting", None)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert threads() == 3
    monkeypatch.setenv("NUMBA_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="NUMBA_NUM_THREADS='zero'"):
        threads()
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    assert threads() >= 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_pool_works_again_in_a_forked_child(three_threads):
    out = np.zeros(50)
    run_ranges(_fill, 50, out, 0.0)  # the parent's pool now has threads, which a child does not inherit
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a hang here would be the stale pool; the alarm ends it
        try:
            signal.alarm(60)
            child = np.zeros(50)
            run_ranges(_fill, 50, child, 1.0)
            os.write(w, b"ok" if np.array_equal(child, np.arange(50) + 1.0) else b"wrong")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"ok"


def test_the_pools_threads_never_hold_up_the_interpreters_exit(three_threads):
    """Daemons, and no other: a SIGTERM that interrupted the start of a ThreadPoolExecutor's (non-daemon) thread
    left the interpreter waiting for it at exit (``mdmt data`` hung after 'interrupted: stopped by SIGTERM')."""
    import threading

    out = np.zeros(50)
    run_ranges(_fill, 50, out, 0.0)
    mine = parallel._pool[2].threads
    assert len(mine) == 3 and all(t.daemon and t.is_alive() for t in mine)
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("mdmt-kernel"))
    set_threads(2)  # a new pool: the old one's threads end
    run_ranges(_fill, 50, out, 0.0)
    for t in mine:
        t.join(10)
    assert not any(t.is_alive() for t in mine)
    assert np.array_equal(out, 2 * np.arange(50))


def _thread_counts_agree(compute):
    a = None
    for k in (1, 3):
        old = set_threads(k)
        try:
            b = compute()
        finally:
            set_threads(old)
        if a is not None:
            for x, y in zip(a, b):
                assert np.array_equal(x, y)
        a = b


@pytest.mark.parametrize("spec", ["interval:2", "preset:2gram", "preset:3gram", "preset:hmm"])
def test_language_kernels_do_not_depend_on_the_number_of_threads(spec):
    from mdmt.constructions.languages.ngram import as_hmm
    from mdmt.constructions.languages.spec import language_from_spec

    lang = language_from_spec(spec)
    X = lang.sample_sequences(257, 7, seed=1)
    M = X.copy()
    M[:, ::3] = -1
    M[5, 1] = (M[5, 1] + 1) % lang.n_symbols  # some rows off the support
    models = [lang] + ([as_hmm(lang)] if spec.startswith("preset:") and "gram" in spec else [])

    def compute():
        res = []
        for m in models:
            res += [m.sample_sequences(300, 9, seed=4), m.log_likelihood(M), m.posterior_marginals(M, off_support="uniform")]
            res.append(m.in_support(M))
        return res

    _thread_counts_agree(compute)


def test_sampler_kernels_do_not_depend_on_the_number_of_threads():
    from mdmt.constructions.languages.spec import language_from_spec
    from mdmt.constructions.reverse.sampler import sample_mdm

    pi = np.full(4, 0.25)
    for spec, method in (("preset:3gram", "segments"), ("preset:hmm", "kernel")):
        lang = language_from_spec(spec)
        _thread_counts_agree(lambda: [(r := sample_mdm(lang, 12, pi, num=200, seed=3, method=method)).samples, r.nfe])


def _decorators(path: Path):
    tree = parse(path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if isinstance(d, ast.Call):
                    yield node.name, d


def test_no_kernel_of_mdmt_uses_numbas_parallel_back_end():
    """Each ``parallel=True`` kernel cost 2-5 s of compilation per process on an empty cache."""
    found = []
    for folder in ("mdmt", "bounds", "constructions", "empirical"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name, d in _decorators(path):
                for kw in d.keywords:
                    if kw.arg == "parallel" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                        found.append(f"{path.relative_to(ROOT)}: {name}")
    assert not found, found
