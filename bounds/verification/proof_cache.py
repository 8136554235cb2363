"""The rows of ``mdmt verify``'s exact, deterministic families, kept on disk between runs of the command.

Two families are sympy's proofs and arb's certificates: SD, every step of every statement (the paper's
Theorems 4.2-4.4, Lemmas B.8-B.11, C.1 and the closed forms of Appendix A; :mod:`mdmt.bounds.theorems`), and
CE, the same machinery refusing false steps.  They are the costliest part of ``verify --quick``.  The third,
PB (ParallelBench's Section 4 and Table 1 against the exact task laws, in rationals), is the costliest family of
the full ``verify``.  Their outcome depends only on the source of mdmt and on the versions of Python, sympy,
mpmath, python-flint, numpy and numba, so ``mdmt verify`` keeps the rows of a run in which every row held, in numba's
kernel cache folder for this source (:mod:`mdmt.runtime.numba_cache`: a hash of every ``.py`` file of the
package names the folder), under a name that holds the hash of those versions.  Any edit of the source or any
other version selects another file, and the proofs run again; a run with a failed row keeps nothing; a file
that cannot be read is ignored and written again.  Deleting numba's cache folder deletes these rows too.

Only the command uses this (``verify(..., cache=True)``); the library's :func:`~.verify.run_checks` proves the
statements every time, so that a mistake seeded by patching a module (as the tests do) is always seen.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import platform
import tempfile
from pathlib import Path
from typing import Callable

from . import checks

VERSIONED = ("sympy", "mpmath", "flint", "numpy", "numba")


def _folder() -> Path | None:
    """The folder of numba's kernel cache for this source, or None where none can be written."""
    from mdmt.runtime.numba_cache import configure_numba_cache

    folder = configure_numba_cache()
    return Path(folder) if folder else None


def key() -> str:
    """A 16-hex-digit hash of the versions the proofs depend on (the folder already stands for the source)."""
    import importlib

    parts = [platform.python_version()]
    for name in VERSIONED:
        mod = importlib.import_module(name)
        parts.append(f"{name}={getattr(mod, '__version__', '?')}")
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:16]


def path(name: str) -> Path | None:
    folder = _folder()
    return None if folder is None else folder / f"verify-{name}-{key()}.pickle"


def cached(name: str, compute: Callable[[], list]) -> list:
    """``compute()``, read from the file of this source and these versions where a run of ``name`` wrote it."""
    file = path(name)
    if file is not None and file.is_file():
        try:
            with open(file, "rb") as fh:
                rows = pickle.load(fh)
            if isinstance(rows, list) and rows and all(isinstance(r, checks.Row) and r.holds for r in rows):
                return rows
        except Exception:  # noqa: BLE001 -- a damaged or foreign file is proved again and written anew
            pass
    rows = compute()
    if file is not None and rows and all(r.holds for r in rows):
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".verify-{name}-", suffix=".tmp", dir=file.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, file)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:  # a full disk or a read-only folder: the rows are returned, only not kept
            pass
    return rows


def derivation_rows(part: int | None = None) -> list:
    """:func:`.checks.derivation_rows` (SD, or its part ``part``), kept."""
    return cached("derivations" if part is None else f"derivations-{part}", lambda: checks.derivation_rows(part))


def certification_rows(quick: bool) -> list:
    """:func:`.checks_beyond.certification_rows` (CE), kept (the quick and the full set apart)."""
    from . import checks_beyond

    return cached("certification-quick" if quick else "certification", lambda: checks_beyond.certification_rows(quick))


def parallelbench_rows() -> list:
    """:func:`.checks_parallelbench.parallelbench_rows` (PB), kept."""
    from . import checks_parallelbench

    return cached("parallelbench", checks_parallelbench.parallelbench_rows)
