"""Shared pytest configuration.

* Two tiers, one marker: ``integration`` marks the tests that exercise the ecosystem rather than the
  mathematics (the documentation site and its tutorials, documentation pages run as examples, torchrun,
  mypy, Dask clusters, the thorough fuzzers, signals and locks with real processes).  The default run
  (``python -m pytest -q``) deselects them (pyproject's ``-m "not integration"``);
  ``python -m pytest -q -m integration`` runs them.  ``slow`` is an older name of ``integration``.
* ``gpu`` tests need a CUDA device; ``torch`` tests need PyTorch (the ``empirical`` extra) and are
  skipped where it is not installed.
* ``MDMT_BLOCK_TORCH=1`` makes torch unimportable for the whole run (tests/torchless.py): the theory
  tests then run as on a machine with only the core installed.
* torch is imported here only to ask for CUDA, and only when a ``gpu`` test was collected.
* ``OMP_WAIT_POLICY=PASSIVE`` (unless set), before torch (or numba code outside mdmt) starts an OpenMP pool, here
  and in every process a test starts: otherwise the pool's threads spin after each parallel region and take the
  cores from the other pytest worker (on two cores, with two workers, tests of numba's parallel kernels, when mdmt
  had them, ran 3 to 30 times slower than alone).
* On a cold numba cache (a fresh install, an edited source, an empty ``NUMBA_CACHE_DIR``), a run of the whole
  suite first compiles every kernel once with ``mdmt compile``'s registry, split over the cores
  (:func:`mdmt.runtime.precompile.compile_kernels`): otherwise each pytest worker compiles the kernels its tests
  use, the same kernel often in both at once.  The compilation runs while the workers start and collect the
  tests; each waits for it before its first test.  ``MDMT_TEST_PRECOMPILE=0`` turns it off; a run that names
  files or tests never does it.
* A pytest-xdist worker ends at once after its last cleanup (``os._exit``): its results went to the controller
  in ``pytest_sessionfinish``, and waiting for the controller's farewell and tearing down an interpreter that
  holds numba, sympy and torch took 3 to 5 s at the end of every run.
* The garbage collector leaves alone what lives for the whole run (``gc.freeze``): the modules, caches and test
  items that exist when collection ends, in every process; and, in a worker whose results the controller
  already has, everything (pytest's last cleanup collects five times over to report unraisable exceptions, which
  a worker could no longer report).  Each full collection of those million objects took 0.2 to 0.7 s, 10 to 15
  times per worker and five more at its end.  The young generations are collected less often too (thresholds
  20 000, 20 and 100 instead of 700, 10 and 10): the collector's time per worker went from 2.0-4.1 s to 1.5-2.1 s.
"""

import gc
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from mdmt.proofs.settings import load_profile  # noqa: E402

if os.environ.get("MDMT_BLOCK_TORCH") == "1":
    from tests.torchless import block_torch

    block_torch()

load_profile()  # the Hypothesis profiles of mdmt's property tests (mdmt/proofs/settings.py)


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER") and hasattr(config, "workeroutput"):
        config.add_cleanup(lambda: _end_worker(config))  # added first among this run's cleanups: runs last of them
    elif _whole_suite(config):
        _compile_a_cold_cache(config)


def pytest_collection_finish(session):
    _wait_for_the_kernels()
    gc.freeze()  # module docstring: what exists now lives for the whole run
    gc.set_threshold(20_000, 20, 100)


def pytest_unconfigure(config):
    if _results_sent(config):
        gc.freeze()  # module docstring: nothing this worker could still collect would be reported


def _results_sent(config) -> bool:
    """In a pytest-xdist worker: whether the controller has this worker's results ("workerfinished" sent)."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) and "exitstatus" in getattr(config, "workeroutput", {})


def _whole_suite(config) -> bool:
    """A run of the test paths (no file, folder or test named; not collection only), in pytest's main process."""
    return (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.collectonly
            and os.environ.get("MDMT_TEST_PRECOMPILE", "1") != "0")


_READY = "MDMT_TEST_KERNELS_READY"  # a file that the controller writes when its compilation of a cold cache ends


def _compile_a_cold_cache(config, least: int = 10) -> None:
    """On a cold numba cache (``least`` or more kernels never compiled for this source), compile every kernel
    once, split over the cores, while the pytest workers start and collect (module docstring)."""
    import shutil
    import sys
    import tempfile
    import threading
    import time
    import warnings
    from pathlib import Path

    from mdmt.runtime.precompile import compile_kernels, uncached_kernels

    cold = len(uncached_kernels())
    if cold < least:
        return
    folder = tempfile.mkdtemp(prefix="mdmt-tests-")
    ready = Path(folder) / "kernels-ready"
    os.environ[_READY] = str(ready)  # the workers start after this hook: they inherit it
    t0 = time.perf_counter()
    print(f"numba's cache is cold ({cold} kernels uncached): mdmt compile, while the tests are collected",
          file=sys.stderr, flush=True)

    def compile_all():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a stale registry: its own test says so; the tests compile the rest
                got = compile_kernels()
            said = f"{got['compiled']} compiled in {time.perf_counter() - t0:.1f} s ({got['jobs']} processes)"
        except Exception as exc:  # noqa: BLE001 -- the tests then compile what they use, as without this step
            said = f"failed ({type(exc).__name__}: {exc}); the tests compile what they use"
        finally:
            ready.write_text("done\n")
        print(f"mdmt compile: {said}", file=sys.stderr, flush=True)

    worker = threading.Thread(target=compile_all, name="mdmt-compile", daemon=True)
    worker.start()

    def clean_up():
        worker.join()
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(clean_up)


def _wait_for_the_kernels(timeout: float = 1800.0) -> None:
    """Before the first test of this process: wait until the controller's compilation of a cold cache has ended
    (at most ``timeout`` seconds; the tests then compile what they use)."""
    import time

    path = os.environ.get(_READY)
    deadline = time.monotonic() + timeout
    while path and not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


def _end_worker(config) -> None:
    """End this xdist worker now that the controller has its results (module docstring)."""
    import sys

    if not _results_sent(config):  # "workerfinished" not sent: leave the ending to xdist
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- a closed stream: nothing to flush
            pass
    os._exit(0)


def _has_cuda() -> bool:
    from mdmt.extras import has_torch

    if not has_torch():
        return False
    import torch

    return torch.cuda.is_available()


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects: a ``slow`` test is an ``integration`` test
def pytest_collection_modifyitems(config, items):
    from mdmt.extras import has_torch

    torch_here = has_torch()
    has_cuda = any("gpu" in item.keywords for item in items) and _has_cuda()
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    skip_torch = pytest.mark.skip(reason='needs PyTorch: pip install "mdmt[empirical]"')
    for item in items:
        if "slow" in item.keywords and "integration" not in item.keywords:
            item.add_marker(pytest.mark.integration)
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)
        if "torch" in item.keywords and not torch_here:
            item.add_marker(skip_torch)
