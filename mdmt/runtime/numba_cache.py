"""numba's on-disk cache for mdmt, keyed on the source of the whole package.

numba stamps a cached kernel with the source of the kernel's *own* file only: when a kernel calls a
compiled function of another file, or reads a constant of another module (numba freezes global values
into the machine code), an edit there leaves the stale machine code in use.  mdmt therefore caches its
kernels in a folder named after a hash of every ``.py`` file of ``mdmt``, ``mdmt.constructions``,
``mdmt.bounds`` and ``mdmt.empirical``: any edit of that source selects a new, empty folder, so every
kernel is compiled again from the source as it now is.

Each module that defines kernels calls :func:`configure_numba_cache` after ``import numba`` and before
its ``@njit(cache=True)`` decorators run (numba picks a kernel's cache folder when the decorator runs,
from ``numba.config.CACHE_DIR``).  The folder is ``<base>/mdmt-src-<hash>``, where ``<base>`` is

* ``$NUMBA_CACHE_DIR`` when set;
* otherwise ``$XDG_CACHE_HOME/mdmt/numba``, or ``~/.cache/mdmt/numba``;
* and, where that base cannot be written, ``<temporary folder>/mdmt-numba-<user>``.

Where no folder can be written, a warning says so and numba is left as configured (numba then caches
beside the source, which ``rm -r`` of the ``__pycache__`` folders clears).  Only the few folders of this
kind used last are kept: older ``mdmt-src-*`` folders in the base are deleted; nothing else is.
Clearing the cache: delete the base folder (or its ``mdmt-src-*`` folders).

**One signature per kernel.**  numba compiles a kernel once per distinct tuple of argument *types*, and its types
tell more apart than the values need: a read-only array from a writable one, and, for a call from another kernel,
an integer constant (``Literal[int](0)``, even a counter initialised to 0 and incremented later: the call is typed
first with the literal) from an ``int64``.  Each extra signature is one more compilation (seconds for the larger
kernels) in every process with an empty cache.  mdmt's kernels therefore take their read-only inputs as read-only
arrays (:func:`read_only`), and a kernel passes ``np.int64(0)``, not ``0``, to another one.

This module imports nothing from mdmt and imports numba only inside :func:`configure_numba_cache`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

PREFIX = "mdmt-src-"
KEEP = 4  # folders kept: the one in use and the few used before it
GRACE_S = 3600.0  # a folder used this recently is never deleted (another process may be using it)
MARKER = ".mdmt-last-used"
PACKAGES = ("mdmt", "mdmt.constructions", "mdmt.bounds", "mdmt.empirical")
_NAME = re.compile(re.escape(PREFIX) + r"[0-9a-f]{16}")
_chosen: dict[tuple[str, ...], str | None] = {}


def package_roots() -> list[Path]:
    """The source folders of mdmt's packages (the installed, or editable, location of each)."""
    import importlib.util

    roots = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        roots.extend(Path(p) for p in (spec.submodule_search_locations or []))
    return roots


def source_key(roots: list[Path]) -> str:
    """A 16-hex-digit hash of the path (relative to its root) and bytes of every ``.py`` file under ``roots``."""
    h = hashlib.sha256()
    for i, root in enumerate(roots):
        for path in sorted(root.rglob("*.py")):
            h.update(f"{i}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def default_base() -> Path:
    """``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mdmt/numba`` or ``~/.cache/mdmt/numba``."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mdmt" / "numba"


def fallback_base() -> Path:
    """A per-user folder in the temporary directory, for when the default base cannot be written."""
    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"mdmt-numba-{user}"


def _writable_folder(path: Path) -> bool:
    """Create ``path`` if needed and check that a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        (path / MARKER).touch()
    except OSError:
        return False
    return True


def _last_used(folder: Path) -> float:
    """When ``folder`` was last chosen (its marker's mtime, else its own)."""
    for p in (folder / MARKER, folder):
        try:
            return p.stat().st_mtime
        except OSError:
            continue
    return 0.0


def prune(base: Path, keep: int = KEEP, grace_s: float = GRACE_S) -> list[Path]:
    """Delete the ``mdmt-src-*`` folders of ``base`` beyond the ``keep`` used last, unless used within ``grace_s``.

    Folders not named ``mdmt-src-<16 hex digits>`` are never touched.  Returns the folders deleted."""
    try:
        folders = [p for p in base.iterdir() if _NAME.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    folders.sort(key=_last_used, reverse=True)
    now, gone = time.time(), []
    for folder in folders[keep:]:
        if now - _last_used(folder) > grace_s:
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
    return gone


def keyed_folder(roots: list[Path], bases: list[Path]) -> Path | None:
    """The first writable ``<base>/mdmt-src-<hash of roots>`` (created, marked as used; old ones pruned), or None."""
    name = PREFIX + source_key(roots)
    for base in bases:
        folder = base / name
        if _writable_folder(folder):
            prune(base)
            return folder
    return None


def configure_numba_cache(roots: list[Path] | None = None) -> str | None:
    """Point ``numba.config.CACHE_DIR`` at the folder keyed on the source under ``roots`` (default: mdmt's).

    Call it after ``import numba`` and before ``@njit(cache=True)`` decorators run.  The folder is chosen
    once per process and set again on every call (numba re-reads its environment variables when they
    change, which would undo the setting for kernels defined later).  Returns the folder, or None (with
    a warning) when none can be written."""
    from numba.core import config

    roots = [Path(r) for r in roots] if roots is not None else package_roots()
    key = tuple(str(r) for r in roots)
    if key not in _chosen:
        folder = keyed_folder(roots, [default_base(), fallback_base()])
        _chosen[key] = None if folder is None else str(folder)
        if folder is None:
            warnings.warn("mdmt: no writable folder for numba's cache keyed on the source; numba's default "
                          "cache is used, which does not see edits of called functions in other files",
                          RuntimeWarning, stacklevel=2)
    if _chosen[key] is not None:
        config.CACHE_DIR = _chosen[key]
    return _chosen[key]


def read_only(a):
    """A read-only view of the array ``a`` (no copy): the type under which mdmt's kernels take their read-only
    inputs, whether the caller's array was writable or not (module docstring, "One signature per kernel")."""
    view = a.view()
    view.setflags(write=False)
    return view


def cache_write_error(exc: BaseException) -> str | None:
    """The message of an error that numba raised writing its cache (a full disk, a quota, a read-only folder: it
    names no file), naming the folder and ``NUMBA_CACHE_DIR``; None for an error raised elsewhere."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if not any(Path(f).name == "caching.py" and Path(f).parent.name == "core" and "numba" in Path(f).parts
               for f in frames):
        return None
    folder = next((v for v in _chosen.values() if v), None) or os.environ.get("NUMBA_CACHE_DIR") or "numba's default"
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return (f"{reason} while writing numba's cache of compiled kernels in {folder}; free space there, or set "
            "NUMBA_CACHE_DIR to a folder with room")


if __name__ == "__main__":  # python -m mdmt.runtime.numba_cache: print the folder in use
    print(configure_numba_cache() or "no keyed folder", file=sys.stdout)
