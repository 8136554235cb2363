"""Independent parts of a run, computed in this process or on a Dask cluster, with one result per part.

:func:`run_parts` evaluates ``function(part)`` for every part and yields ``(index, result)`` as each
one finishes:

* in this process, in order, when ``jobs`` is 1 and no scheduler is named;
* otherwise on a ``dask.distributed`` cluster: an embedded ``LocalCluster`` of ``jobs`` worker
  processes with one thread each (numba, OpenMP and BLAS pinned to one thread, as the parts are
  the parallelism), or the existing cluster whose scheduler is at ``scheduler`` (``tcp://HOST:PORT``;
  default: the environment variable ``MDMT_SCHEDULER``) -- a Slurm or PBS cluster started with
  dask-jobqueue, say, whose workers have mdmt installed.

A part is a pure function of its arguments (its seed among them), so the results do not depend on
where or in which order the parts run; a worker that dies has its part rerun elsewhere by Dask's
scheduler.  Callers combine the results in part order, never in completion order.
"""

from __future__ import annotations

import logging
import os
import re

SCHEDULER_ENV = "MDMT_SCHEDULER"
ONE_THREAD = {name: "1" for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "MKL_NUM_THREADS")}
MAX_JOBS = 1024


def scheduler_address(scheduler: str | None = None) -> str | None:
    """The scheduler given, else ``MDMT_SCHEDULER``, else None (an embedded cluster, or this process)."""
    address = scheduler if scheduler is not None else os.environ.get(SCHEDULER_ENV)
    address = (address or "").strip()
    if not address:
        return None
    if not re.fullmatch(r"(tcp|tls|ws|wss|ucx)://[^\s:/]+(:\d{1,5})?", address):
        raise ValueError(f"scheduler {address!r}: expected an address such as tcp://HOST:8786")
    return address


def run_parts(function, parts, *, jobs: int = 1, scheduler: str | None = None, progress: bool = False,
              desc: str = "parts"):
    """Yield ``(index, function(parts[index]))`` for every part, as each finishes (module docstring)."""
    from mdmt.constructions.validation import positive_int

    parts = list(parts)
    jobs = positive_int("jobs", jobs)
    if jobs > MAX_JOBS:
        raise ValueError(f"jobs = {jobs} exceeds mdmt's limit of {MAX_JOBS} worker processes on one machine")
    address = scheduler_address(scheduler)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(parts), desc=desc, unit="part", leave=False, disable=None, dynamic_ncols=True)
    try:
        if address is None and (jobs == 1 or len(parts) < 2):
            for i, part in enumerate(parts):
                result = function(part)
                if bar is not None:
                    bar.update(1)
                yield i, result
            return
        yield from _on_dask(function, parts, jobs, address, bar)
    finally:
        if bar is not None:
            bar.close()


def _on_dask(function, parts, jobs: int, address: str | None, bar):
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=min(jobs, len(parts)), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR, env=dict(ONE_THREAD))
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise OSError(f"no Dask scheduler answers at {address} ({exc})") from None
    try:
        futures = [client.submit(function, part, pure=False) for part in parts]
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            result = future.result()
            if bar is not None:
                bar.update(1)
            yield index[future.key], result
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
