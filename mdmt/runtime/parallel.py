"""mdmt's kernels on several cores: serial ``nogil`` kernels over index ranges, run on a pool of Python threads.

A numba kernel written with ``parallel=True`` and ``prange`` is compiled by numba's parallel back end: the loop
becomes a generalised ufunc with its own compilation pipeline, which costs two to five seconds per kernel in every
process that meets an empty kernel cache, and starts numba's threading layer (OpenMP or TBB), which is not
fork-safe and shares its thread count with torch.  mdmt's kernels are therefore all serial: each takes the range
``[lo, hi)`` of the rows, chunks or representatives it computes as its first two arguments and is compiled with
``nogil=True``, so that :func:`run_ranges` can run the ranges of one call on threads that hold no interpreter lock.
A kernel writes only its own rows (or its own chunk's partial result, summed by the caller in a fixed order), so
the result does not depend on the number of threads or on how the ranges fall.

:func:`threads` (default: the cores this process may use, or ``NUMBA_NUM_THREADS`` where set) is the number of
threads; :func:`set_threads` changes it.  The pool is made again after a ``fork`` (a child inherits the pool but
not its threads).  Its threads are daemons: the interpreter's exit never waits for them.  (The threads of
``concurrent.futures.ThreadPoolExecutor`` are not, and one whose start a signal interrupted -- ``mdmt data``
stopped by SIGTERM -- is never told to stop: the interpreter then waited for it forever.)

This module imports nothing from mdmt, and numba only to read ``NUMBA_NUM_THREADS``.
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future

PARTS_PER_THREAD = 4  # ranges per thread, so that rows of unequal cost still share the threads evenly
_lock = threading.Lock()
_setting: int | None = None


class _Pool:
    """``k`` daemon threads that run the calls put on one queue, each answering through its future."""

    def __init__(self, k: int):
        self.k = k
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._serve, name=f"mdmt-kernel-{i}", daemon=True) for i in range(k)]
        for t in self.threads:
            t.start()

    def _serve(self) -> None:
        while True:
            fn, args, future = self.calls.get()
            if fn is None:
                return
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                    future.set_exception(exc)

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        self.calls.put((fn, args, future))
        return future

    def shutdown(self) -> None:
        """Let the threads end once the calls already queued are done."""
        for _ in range(self.k):
            self.calls.put((None, None, None))


_pool: tuple[int, int, _Pool] | None = None  # (pid, threads, pool)


def env_positive_int(name: str) -> int | None:
    """The positive integer in the environment variable ``name``; None where it is unset or blank; a ``ValueError``
    naming the variable and its value otherwise."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        raise ValueError(f"{name}={env!r}: expected a positive integer") from None
    if n < 1:
        raise ValueError(f"{name}={env!r}: expected a positive integer")
    return n


def usable_cores() -> int:
    """The cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def default_threads() -> int:
    """``NUMBA_NUM_THREADS`` where set, else the cores this process may run on."""
    n = env_positive_int("NUMBA_NUM_THREADS")
    return n if n is not None else usable_cores()


def threads() -> int:
    """The number of threads mdmt's kernels run on (per-thread scratch memory is multiplied by this)."""
    return _setting if _setting is not None else default_threads()


def set_threads(n: int | None) -> int | None:
    """Run mdmt's kernels on ``n`` threads (a positive integer); ``None`` restores the default.  Returns the setting
    it replaces (None: the default), so that a caller can put it back."""
    global _setting
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads={n!r}: expected a positive integer")
    old, _setting = _setting, n
    return old


def ranges(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering ``[0, n)``, as equal as integers allow: ``min(parts, n)`` of them, none empty."""
    if n <= 0:
        return []
    parts = max(1, min(parts, n))
    return [(i * n // parts, (i + 1) * n // parts) for i in range(parts)]


def _executor(k: int) -> _Pool:
    global _pool
    with _lock:
        pid = os.getpid()
        if _pool is None or _pool[0] != pid or _pool[1] != k:
            if _pool is not None and _pool[0] == pid:
                _pool[2].shutdown()
            _pool = (pid, k, _Pool(k))
        return _pool[2]


def run_ranges(kernel, n: int, *args, parts: int | None = None) -> None:
    """Call ``kernel(lo, hi, *args)`` on ranges covering ``[0, n)``: on this thread alone when one thread is set or
    there is a single range, else on :func:`threads` threads.  ``kernel`` must be a ``nogil`` numba kernel (or any
    callable that releases the interpreter lock) whose calls on disjoint ranges do not write the same memory.
    The first exception raised by a range is raised here, after every range has finished."""
    options = getattr(kernel, "targetoptions", None)  # a numba dispatcher: it must release the interpreter lock
    if options is not None and not options.get("nogil"):
        raise TypeError(f"run_ranges: kernel {getattr(kernel, '__name__', kernel)!r} is not compiled with nogil=True, "
                        "so its ranges would run one at a time")
    if n <= 0:
        return
    k = threads()
    spans = ranges(n, parts if parts is not None else k * PARTS_PER_THREAD)
    if k == 1 or len(spans) == 1:
        for lo, hi in spans:
            kernel(lo, hi, *args)
        return
    pool = _executor(k)
    futures = [pool.submit(kernel, lo, hi, *args) for lo, hi in spans]
    error = None
    for f in futures:
        try:
            f.result()
        except BaseException as e:  # noqa: BLE001 - every range finishes before the first error is raised
            error = error or e
    if error is not None:
        raise error
