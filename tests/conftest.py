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
* A pytest-xdist worker ends at once after its last cleanup (``os._exit``): its results went to the controller
  in ``pytest_sessionfinish``, and waiting for the controller's farewell and tearing down an interpreter that
  holds numba, sympy and torch took 3 to 5 s at the end of every run.
"""

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


def _end_worker(config) -> None:
    """End this xdist worker now that the controller has its results (module docstring)."""
    import sys

    if "exitstatus" not in config.workeroutput:  # "workerfinished" not sent: leave the ending to xdist
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
