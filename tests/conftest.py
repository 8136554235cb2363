"""Shared pytest configuration.

* ``slow`` tests run with ``--runslow`` (or ``MDMT_SLOW=1``); ``gpu`` tests need a CUDA device;
  ``torch`` tests need PyTorch (the ``empirical`` extra) and are skipped where it is not installed.
* ``MDMT_BLOCK_TORCH=1`` makes torch unimportable for the whole run (tests/torchless.py): the theory
  tests then run as on a machine with only the core installed.
* torch is imported here only to ask for CUDA, and only when a ``gpu`` test was collected.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

if os.environ.get("MDMT_BLOCK_TORCH") == "1":
    from tests.torchless import block_torch

    block_torch()

settings.register_profile(
    "mdmt", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "mdmt"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def _has_cuda() -> bool:
    from mdmt.extras import has_torch

    if not has_torch():
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    from mdmt.extras import has_torch

    run_slow = config.getoption("--runslow") or os.environ.get("MDMT_SLOW") == "1"
    torch_here = has_torch()
    has_cuda = any("gpu" in item.keywords for item in items) and _has_cuda()
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow or MDMT_SLOW=1")
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    skip_torch = pytest.mark.skip(reason='needs PyTorch: pip install "mdmt[empirical]"')
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(skip_slow)
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)
        if "torch" in item.keywords and not torch_here:
            item.add_marker(skip_torch)
