"""mdmt.runtime: input and output and the resources a run uses, not mathematics.

* :mod:`.validation` -- the checks every argument passes (one clear error naming the value);
* :mod:`.resources` -- the memory and work guard (estimate before allocating, refuse what does not fit);
* :mod:`.outputs` -- atomic, non-destructive output files and folders;
* :mod:`.locks` -- one writer per output folder;
* :mod:`.numba_cache` -- numba's on-disk cache keyed on the whole source;
* :mod:`.parallel` -- the kernels' threads: serial ``nogil`` kernels over index ranges on a pool of threads;
* :mod:`.provenance` -- the command, commit, machine and versions behind a result.

Nothing here imports the rest of mdmt.
"""
