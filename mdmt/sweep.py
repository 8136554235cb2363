"""Independent parts of a run, computed in this process or on a Dask cluster, with one result per part.

:func:`run_parts` evaluates ``function(part)`` for every part and yields ``(index, result)`` as each
one finishes:

* in this process, in order, when ``jobs`` is 1 and no scheduler is named;
* otherwise on a ``dask.distributed`` cluster: an embedded ``LocalCluster`` of ``jobs`` worker
  processes with one thread each (numba, OpenMP and BLAS pinned to one thread, as the parts are
  the parallelism), or the existing cluster whose scheduler is at ``scheduler`` (``tcp://HOST:PORT``;
  default: the environment variable ``MDMT_SCHEDULER``) -- a Slurm or PBS cluster started with
  dask-jobqueue, say, whose workers have mdmt installed (docs/cluster.md).

A part is a pure function of its arguments (its seed among them), so the results do not depend on
where or in which order the parts run; a worker that dies has its part rerun elsewhere by Dask's
scheduler.  Callers combine the results in part order, never in completion order.

With ``costs`` (the expected seconds of each part, from the caller's cost model), the parts are
submitted longest-expected-first, so that the last part to finish is a short one.  The progress
view (``progress=True``, a tqdm bar on standard error) shows parts done / total, the parts running
now and an ETA: the expected seconds of the parts not finished, scaled by how the finished parts'
measured seconds compared with their expected ones, divided among the workers.  Each part's
measured seconds (in its worker) are in :attr:`Sweep.seconds` once it has finished.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from typing import Any, Callable, Iterable, Sequence

SCHEDULER_ENV = "MDMT_SCHEDULER"
ONE_THREAD = {name: "1" for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "MKL_NUM_THREADS")}
MAX_JOBS = 1024


def scheduler_address(scheduler: str | None = None) -> str | None:
    """The scheduler given, else ``MDMT_SCHEDULER``, else None (an embedded cluster, or this process)."""
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address such as tcp://HOST:8786 (a string), got "
                        f"{type(scheduler).__name__} {scheduler!r:.60}")
    address = scheduler if scheduler is not None else os.environ.get(SCHEDULER_ENV)
    address = (address or "").strip()
    if not address:
        return None
    # a host name, an IPv4 address or an IPv6 address in brackets (tcp://[::1]:8786), then an optional port
    if not re.fullmatch(r"(tcp|tls|ws|wss|ucx)://([^\s:/\[\]]+|\[[0-9A-Fa-f:.%\w]*:[0-9A-Fa-f:.%\w]*\])(:\d{1,5})?",
                        address):
        raise ValueError(f"scheduler {address!r}: expected an address such as tcp://HOST:8786 "
                         "(an IPv6 address in brackets: tcp://[::1]:8786)")
    return address


def _timed(function, part):
    """(seconds, result) of one part, timed where it runs."""
    t0 = time.perf_counter()
    result = function(part)
    return time.perf_counter() - t0, result


AUTO_SECONDS = 60.0  # expected seconds from which ``auto_jobs`` takes every usable core


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def auto_jobs(expected_seconds: float, parts: int) -> int:
    """The worker count of ``--jobs auto``: one per usable core (at most one per part) when the parts are
    expected to take at least ``AUTO_SECONDS`` in all, else 1 (this process: a cluster's start, a few seconds,
    would cost more than it saves)."""
    if parts < 2 or not expected_seconds >= AUTO_SECONDS:
        return 1
    return max(1, min(usable_cores(), parts, MAX_JOBS))


def lpt_makespan(seconds, workers: int) -> float:
    """The wall time of parts of the given seconds on ``workers`` workers, longest first, each part to the worker
    free first (the order :class:`Sweep` submits in; scheduling overhead left out)."""
    import heapq

    free = [0.0] * max(1, int(workers))
    for s in sorted(seconds, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + float(s))
    return max(free)


class Sweep:
    """Iterate to run the parts: yields ``(index, result)`` as each finishes (module docstring)."""

    def __init__(self, function, parts, *, jobs: int = 1, scheduler: str | None = None, progress: bool = False,
                 desc: str = "parts", costs=None, labels=None):
        from mdmt.runtime.validation import positive_int

        self.function, self.parts = function, list(parts)
        self.jobs = positive_int("jobs", jobs)
        if self.jobs > MAX_JOBS:
            raise ValueError(f"jobs = {self.jobs} exceeds mdmt's limit of {MAX_JOBS} worker processes on one machine")
        self.address = scheduler_address(scheduler)
        n = len(self.parts)
        self.costs = [1.0] * n if costs is None else [float(c) for c in costs]
        if len(self.costs) != n or not all(math.isfinite(c) and c >= 0 for c in self.costs):
            raise ValueError(f"costs: expected {n} finite non-negative expected seconds, one per part")
        self.labels = [f"part {i + 1}" for i in range(n)] if labels is None else [str(s) for s in labels]
        self.order = sorted(range(n), key=lambda i: -self.costs[i])  # longest expected first (stable)
        self.progress, self.desc = progress, desc
        self.seconds: dict = {}  # index -> measured seconds of the part, in its worker
        self.workers = 1

    def eta(self) -> float | None:
        """Seconds left: the expected seconds of the unfinished parts, scaled by measured / expected of the finished
        ones, over the workers (None before any part has finished)."""
        done_cost = sum(self.costs[i] for i in self.seconds)
        if not self.seconds or done_cost <= 0:
            return None
        scale = sum(self.seconds.values()) / done_cost
        left = sum(self.costs[i] for i in range(len(self.parts)) if i not in self.seconds)
        return scale * left / max(1, min(self.workers, len(self.parts) - len(self.seconds)))

    def _view(self, bar, running) -> None:
        if bar is None:
            return
        eta = self.eta()
        shown = ", ".join(self.labels[i] for i in running[:3]) + (" …" if len(running) > 3 else "")
        bar.set_postfix_str((f"running: {shown}" if shown else "") + (f"; ETA {eta / 60:.1f} min" if eta else ""))
        bar.refresh()

    def __iter__(self):
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(self.parts), desc=self.desc, unit="part", leave=False, disable=None,
                       dynamic_ncols=True)
        try:
            if self.address is None and (self.jobs == 1 or len(self.parts) < 2):
                for i in self.order:
                    self._view(bar, [i])
                    seconds, result = _timed(self.function, self.parts[i])
                    self.seconds[i] = seconds
                    if bar is not None:
                        bar.update(1)
                    yield i, result
            else:
                yield from self._on_dask(bar)
        finally:
            if bar is not None:
                bar.close()

    def results(self) -> list:
        """Run every part and return their results in part order (not in the order they finished)."""
        out: list = [None] * len(self.parts)
        for k, result in self:
            out[k] = result
        return out

    def _on_dask(self, bar):
        from dask.distributed import Client, LocalCluster, as_completed

        cluster = None
        if self.address is None:
            cluster = start_cluster(LocalCluster, min(self.jobs, len(self.parts)))
            client = Client(cluster)
        else:
            try:
                client = Client(self.address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise OSError(f"no Dask scheduler answers at {self.address} ({exc})") from None
        try:
            self.workers = max(1, sum(client.nthreads().values()))
            # priority: Dask runs the higher first among the parts ready, so the longest expected start first
            futures = {}
            for rank, i in enumerate(self.order):
                f = client.submit(_timed, self.function, self.parts[i], pure=False, priority=len(self.order) - rank)
                futures[f.key] = (i, f)
            for future in as_completed([f for _, f in futures.values()]):
                seconds, result = future.result()
                i = futures[future.key][0]
                self.seconds[i] = seconds
                if bar is not None:
                    bar.update(1)
                    keys = {k for tasks in client.processing().values() for k in tasks}
                    self._view(bar, [futures[k][0] for k in futures if k in keys])
                yield i, result
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


CLUSTER_STARTS = 3  # tries to start the embedded cluster (a worker lost while it starts fails the start)


def start_cluster(local_cluster, workers: int):
    """An embedded ``LocalCluster`` of ``workers`` one-thread worker processes.  A start that fails (a worker
    process killed or lost while the cluster starts: Dask's "Nanny failed to start") is tried again, up to
    ``CLUSTER_STARTS`` times; then one ``OSError`` says what failed and what to do."""
    last: BaseException | None = None
    for _ in range(CLUSTER_STARTS):
        try:
            return local_cluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                 silence_logs=logging.ERROR, env=dict(ONE_THREAD))
        except (RuntimeError, OSError, TimeoutError) as exc:
            last = exc
    reason = " ".join(str(last).split()) or type(last).__name__
    raise OSError(f"the embedded Dask cluster of {workers} worker processes did not start in {CLUSTER_STARTS} tries "
                  f"({reason}); run again, or give --jobs 1 to run in this process")


def run_parts(function: Callable[[Any], Any], parts: Iterable[Any], *, jobs: int = 1, scheduler: str | None = None,
              progress: bool = False, desc: str = "parts", costs: Sequence[float] | None = None,
              labels: Sequence[str] | None = None) -> Sweep:
    """A :class:`Sweep`: iterate it for ``(index, function(parts[index]))`` as each part finishes."""
    return Sweep(function, parts, jobs=jobs, scheduler=scheduler, progress=progress, desc=desc, costs=costs,
                 labels=labels)
