"""Optional dependencies: PyTorch is the ``empirical`` extra (``pip install "mdmt[empirical]"``).

The theory -- languages, exact laws, bounds, ``mdmt verify`` -- needs numpy, scipy, sympy, numba and
python-flint only.  The networks of :mod:`mdmt.empirical` need torch; where it is missing they raise
:class:`MissingExtra`, an ``ImportError`` whose one-line message says what to install, and the command
line turns it into ``mdmt <command>: error: ...`` with exit status 2.
"""

from __future__ import annotations

import importlib.util

EMPIRICAL = 'pip install "mdmt[empirical]"'


class MissingExtra(ModuleNotFoundError):
    """A feature needs an optional dependency that is not installed (``name`` is the missing module)."""


def torch_message(what: str) -> str:
    return (f"{what} needs PyTorch, which is not installed: {EMPIRICAL} adds it (for the CPU build without CUDA "
            "libraries, install torch from PyTorch's CPU index first; README, 'Set-up')")


def is_torch_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is the failed import of torch (or of one of its submodules)."""
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "torch"


def has_torch() -> bool:
    """Whether torch can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or blocked installation counts as missing
        return False

