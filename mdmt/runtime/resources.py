"""The resource guard: estimate the memory and the work an input implies *before* allocating.

mdmt computes exactly where it can, and exact algorithms have sizes that grow fast: a dense
HMM with S hidden states stores S^2 transition probabilities, an n-gram's equivalent HMM has
|V|^(n-1) states, an exact output law has (|V|+1)^L entries.  Every entry point that allocates
or loops according to its inputs first calls :func:`check_memory` and/or :func:`check_work`
with its own estimate; an input over the limit is refused at once with a one-line
:class:`ResourceError` (a ``ValueError``) naming the size, the limit, how to lift it and the
alternative -- never a MemoryError traceback, a swapping machine or a hang.

Limits (read at every check, so they can be changed at run time):

``MDMT_MAX_MEMORY``
    bytes one computation may allocate, with an optional suffix K, M, G or T (powers of 1024):
    ``MDMT_MAX_MEMORY=32G``.  Default: half of the machine's physical memory.
``MDMT_MAX_WORK``
    elementary operations (multiply-adds, table look-ups) one computation may take, e.g.
    ``MDMT_MAX_WORK=1e13``.  Default 10^12 (minutes on one core).

Sizes are Python integers, so an estimate never overflows; a caller bounds the exponent of any
power it estimates first (computing 2^(10^30) exactly would itself be the hang: an n-gram's
order is checked against :data:`~mdmt.constructions.languages.ngram.MAX_ORDER` before |V|^(n-1)).
"""

from __future__ import annotations

import math
import os

from .parallel import threads  # noqa: F401  (the kernels' thread count; per-thread scratch is multiplied by it)

MEMORY_ENV = "MDMT_MAX_MEMORY"
WORK_ENV = "MDMT_MAX_WORK"
DEFAULT_WORK = 10**12
FALLBACK_MEMORY = 8 << 30  # when the physical memory cannot be read
_SUFFIX = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class ResourceError(ValueError):
    """An input that would need more memory or work than the limits allow (one-line message)."""


class LimitSettingError(ValueError):
    """A limit set in the environment (``MDMT_MAX_MEMORY``, ``MDMT_MAX_WORK``) that is not a size: the message names
    the variable, and no caller may blame an input of its own for it."""


def parse_size(text: str, name: str = MEMORY_ENV) -> int:
    """``"512M"``, ``"8G"``, ``"1e9"`` or ``"1073741824"`` as a positive number of units (K/M/G/T = 1024^k)."""
    s = str(text).strip().upper().removesuffix("IB").removesuffix("B") if str(text).strip() else ""
    unit = s[-1:] if s[-1:] in _SUFFIX else ""
    number = s[: len(s) - len(unit)] if unit else s
    try:
        value = float(number) * _SUFFIX[unit]
    except ValueError:
        raise LimitSettingError(f"{name}={text!r} is not a size (examples: 8G, 512M, 1e9)") from None
    if not math.isfinite(value) or value < 1:
        raise LimitSettingError(f"{name}={text!r} must be a positive finite size")
    return int(value)


def physical_memory() -> int | None:
    """Total physical memory in bytes, or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def memory_limit() -> int:
    """Bytes one computation may allocate: ``$MDMT_MAX_MEMORY``, else half the physical memory."""
    env = os.environ.get(MEMORY_ENV)
    if env:
        return parse_size(env, MEMORY_ENV)
    total = physical_memory()
    return total // 2 if total else FALLBACK_MEMORY


def work_limit() -> int:
    """Elementary operations one computation may take: ``$MDMT_MAX_WORK``, else 10^12."""
    env = os.environ.get(WORK_ENV)
    return parse_size(env, WORK_ENV) if env else DEFAULT_WORK


def format_bytes(n) -> str:
    """A byte count for humans: ``16.0 GiB``; astronomically large counts as powers of ten."""
    n = int(n)
    if n >= 1 << 60:
        return f"about 10^{len(str(n)) - 1} bytes"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def format_count(n) -> str:
    """A count for humans: ``3.4e+12``, or ``about 10^301`` beyond float range."""
    n = int(n)
    if n < 10**6:
        return str(n)
    if n < 10**300:
        return f"{float(n):.2g}"
    return f"about 10^{len(str(n)) - 1}"


def check_memory(what: str, nbytes, alternative: str = "") -> int:
    """Refuse (``ResourceError``) when ``what`` would need more than :func:`memory_limit` bytes.

    ``alternative`` says what to do instead (a smaller input, a structured path, Monte Carlo).
    Returns ``nbytes`` as an int.
    """
    return _check(what, int(nbytes), memory_limit(), MEMORY_ENV, "needs {} of memory", format_bytes, alternative)


def check_work(what: str, operations, alternative: str = "") -> int:
    """Refuse (``ResourceError``) when ``what`` would take more than :func:`work_limit` operations."""
    return _check(what, int(operations), work_limit(), WORK_ENV, "takes about {} operations", format_count, alternative)


def _check(what: str, amount: int, limit: int, env: str, verb: str, fmt, alternative: str) -> int:
    if amount > limit:
        hint = f"; {alternative}" if alternative else ""
        raise ResourceError(f"{what} {verb.format(fmt(amount))}, more than the limit of {fmt(limit)} "
                            f"(set {env} to raise it){hint}")
    return amount
