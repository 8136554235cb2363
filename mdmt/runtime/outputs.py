"""Atomic, non-destructive output files: every file mdmt writes is complete or absent.

* :func:`atomic_file` writes to a temporary file in the destination folder, flushes it to disk
  and renames it over the destination (``os.replace``, atomic on POSIX and Windows), so a full
  disk, a read-only folder, a kill or a crash leaves either the old file or the new one, never
  a truncated one; the temporary file is removed on every error, and on SIGTERM or SIGHUP (which
  raise :class:`Terminated` while it exists).  Its name says that mdmt wrote it, on which machine
  and from which process (``.NAME.mdmt-HOST-PID.XXXXXXXX.tmp``), so that the first write into a
  folder removes the temporaries a killed run left there (SIGKILL, a power cut) --
  :func:`remove_stale_temporaries`: only files of that form whose process is gone.
* :func:`check_output_file` and :func:`check_output_folder` are the checks a command makes on
  its ``--out`` *before* computing anything: the destination's folder exists, a file is not a
  folder and a folder is not a file, and an existing output is replaced only if mdmt wrote it
  for the same request (``same(path)`` says so) or the user passed ``--force``.  A folder output
  names the files it will write there (``files=``), and each one present must be mdmt's: its
  content says so (:func:`json_with_provenance`, :func:`csv_header_is`, :func:`csv_header_starts`,
  :func:`png_written_by`, or a command's own markers).
* One run writes an output at a time: :func:`mdmt.runtime.locks.output_lock`.
* Every ``OSError`` on an output path becomes an :class:`OutputError` (a ``ValueError``) with a
  one-line message naming the path and the reason; the ``mdmt`` command line prints it as
  ``mdmt <command>: error: ...`` with exit status 2.

This module depends on nothing else in mdmt, so any layer (languages, data sets, training,
commands) can use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import tempfile
import threading
from pathlib import Path
from typing import Callable


class OutputError(ValueError):
    """An output that cannot or must not be written (one-line message naming the path)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while :func:`atomic_file` was writing; its temporary file was removed."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"stopped by {signal.Signals(self.signum).name}")


#: Signals that end a process without running its clean-up code unless a handler is installed.
_ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.mdmt-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)\.[A-Za-z0-9_]+\.tmp$")
_cleaned: set = set()  # folders whose stale temporaries this process has removed


def describe_oserror(exc: OSError) -> str:
    """``'reason: path'`` of an OSError, without errno numbers or a traceback."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno is None and "requested and" in reason:  # NumPy's report of a short write
        reason += " (the write was cut short: is the disk full?)"
    return f"{reason}: {exc.filename}" if exc.filename else reason


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output_file(path, *, force: bool = False, same: Callable[[Path], bool] | None = None,
                      flag: str = "--out") -> Path:
    """Check that ``path`` may be written as a file; return it as a ``Path``.

    Refused: an existing folder; a missing or non-folder parent; an existing file that mdmt did
    not write for the same request (``same(path)`` is false or not given) unless ``force``.
    """
    path = Path(path)
    if str(path) in ("", "."):
        raise OutputError(f"{flag}: expected a file name, got {str(path)!r}")
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give a file name")
    parent = path.parent
    if not parent.exists():
        raise OutputError(f"{flag} {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{flag} {path}: {parent} is not a folder")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise OutputError(f"{flag} {path} exists and is not a regular file")
        if not force and not (same is not None and _safe(same, path)):
            raise OutputError(f"{flag} {path} already exists and was not written by mdmt for the same request; "
                              "pass --force to overwrite it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: cannot write in {parent} (Permission denied)")
    return path


def check_output_folder(path, *, files=(), force: bool = False,
                        same: Callable[[Path], bool] | dict | None = None, flag: str = "--out") -> Path:
    """Check that ``path`` can be a folder of outputs (absent, or an existing folder); return it.

    ``files`` names (relative to the folder) what the command will write there.  Each one that
    exists must be a regular file, and one that mdmt did not write -- ``same(file)`` is false, where
    ``same`` is one test for every file or a dict of tests by name (a name without a test is never
    mdmt's) -- is refused unless ``force``: ``--out o/atlas.csv already exists and was not written
    by mdmt; pass --force to overwrite it``.  Files of other names in the folder are left alone.
    """
    path = Path(path)
    if str(path) == "":
        raise OutputError(f"{flag}: expected a folder name, got ''")
    if path.is_symlink() and not path.exists():
        raise OutputError(f"{flag} {path} is a symbolic link that leads nowhere (a missing target or a loop)")
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {path} exists and is not a folder")
    ancestor = path
    while not ancestor.exists():  # the first existing ancestor must be a writable folder
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"{flag} {path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: cannot write in {ancestor} (Permission denied)")
    if path.is_dir():
        for name in files:
            file = path / name
            if not (file.exists() or file.is_symlink()):
                continue
            if not file.is_file():
                raise OutputError(f"{flag} {file} exists and is not a regular file")
            test = same.get(str(name)) if isinstance(same, dict) else same
            if not force and not (test is not None and _safe(test, file)):
                raise OutputError(f"{flag} {file} already exists and was not written by mdmt; "
                                  "pass --force to overwrite it")
    return path


def make_folder(path) -> Path:
    """``mkdir -p`` with one-line errors."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the folder {path}: {describe_oserror(exc)}") from None
    return path


def _safe(same: Callable[[Path], bool], path: Path) -> bool:
    try:
        return bool(same(path))
    except (OSError, ValueError, RecursionError, MemoryError):
        return False


def _host_tag() -> str:
    """Eight hex digits naming this machine (a hash of its host name) in temporary file names."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temporary_prefix(path) -> str:
    """The start of the names of :func:`atomic_file`'s temporaries for ``path`` in this process."""
    return f".{Path(path).name}.mdmt-{_host_tag()}-{os.getpid()}."


def _process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (one we may not signal counts as alive)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def remove_stale_temporaries(folder) -> list[Path]:
    """Remove the temporaries of :func:`atomic_file` in ``folder`` whose writing process has ended.

    Only regular files named ``.NAME.mdmt-HOST-PID.XXXXXXXX.tmp`` with this machine's HOST tag, owned
    by this user, and whose PID is no longer running are removed: nothing mdmt did not create, and
    never the temporary of a run still writing.  Returns the paths removed.
    """
    folder = Path(folder) if str(folder) else Path(".")
    removed, host = [], _host_tag()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TEMPORARY.match(entry.name)
        if m is None or m["host"] != host or int(m["pid"]) == os.getpid() or _process_alive(int(m["pid"])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_file(follow_symlinks=False) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                continue
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _clean_once(folder: Path) -> None:
    """:func:`remove_stale_temporaries` for the first write of this process into ``folder``."""
    key = os.path.abspath(folder)
    if key not in _cleaned:
        _cleaned.add(key)
        remove_stale_temporaries(folder)


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def _signals_raise():
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` (so ``finally`` clean-up runs).

    Only signals left at their default action are taken over, only in the main thread, and the
    previous handlers are restored afterwards.
    """
    taken = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _ENDING_SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                if signal.getsignal(sig) == signal.SIG_DFL:
                    taken[sig] = signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig, old in taken.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, old)


@contextlib.contextmanager
def atomic_file(path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path`` atomically.

    On any exception -- a SIGTERM or SIGHUP included (:class:`Terminated`) -- the temporary file is
    removed and ``path`` is left as it was; an ``OSError`` is re-raised as :class:`OutputError`
    naming ``path``.  The first write of a process into a folder removes the stale temporaries of
    killed runs there (:func:`remove_stale_temporaries`).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file writes with mode 'w' or 'wb', got {mode!r}")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    _clean_once(folder)
    with _signals_raise():
        yield from _write_via_temporary(path, folder, mode, encoding)


def _write_via_temporary(path: Path, folder: Path, mode: str, encoding: str | None):
    """The body of :func:`atomic_file`: yields the temporary's file object, then renames it over ``path``."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=temporary_prefix(path), suffix=".tmp")
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": encoding})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
        tmp = None
        _sync_folder(path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {describe_oserror(exc)}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _sync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: not every system can open a folder)."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_file`)."""
    with atomic_file(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_file`)."""
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_csv(path, header: list[str], rows) -> Path:
    """Rows (dicts keyed by ``header``, or sequences) as a CSV file with a header line, atomically.

    A dict row may lack some columns (written empty) and hold others (not written).
    """
    import csv

    with atomic_file(path, "w") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(h, "") for h in header] if isinstance(r, dict) else list(r))
    return Path(path)


def _csv_head(path) -> list[str]:
    """The columns of a CSV file's first line (read at most 64 KiB of it)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline(1 << 16).rstrip("\r\n").split(",")


def csv_header_is(path, header: list[str]) -> bool:
    """Whether the file's first line is this CSV header (a ``same`` test for :func:`check_output_file`)."""
    return _csv_head(path) == list(header)


PNG_SOFTWARE = "mdmt"


def save_figure(fig, path, software: str, format: str = "png", **savefig) -> Path:
    """A matplotlib figure as a PNG, PDF or SVG file, atomically, tagged as written by ``mdmt <software>``
    (PNG: a ``Software`` text chunk; PDF and SVG: the ``Creator`` field; see :func:`figure_written_by`).
    Vector files carry no creation date, so the same figure gives the same bytes."""
    tag = f"{PNG_SOFTWARE} {software}"
    metadata = {"png": {"Software": tag}, "pdf": {"Creator": tag, "Producer": tag, "CreationDate": None},
                "svg": {"Creator": tag, "Date": None}}
    if format not in metadata:
        raise ValueError(f"figure format {format!r}: expected one of {', '.join(metadata)}")
    with atomic_file(path, "wb", encoding=None) as fh:
        fig.savefig(fh, format=format, metadata=metadata[format], **savefig)
    return Path(path)


def png_written_by(path, software: str) -> bool:
    """Whether ``path`` is a PNG that :func:`save_figure` wrote for ``software`` (its tEXt chunk says so)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    return head.startswith(b"\x89PNG") and f"Software\x00{PNG_SOFTWARE} {software}".encode() in head


FIGURE_LIMIT = 64 << 20  # bytes: a larger PDF or SVG file is not read to find out whether mdmt wrote it


def figure_written_by(path, software: str) -> bool:
    """Whether ``path`` is a figure (PNG, PDF or SVG, by its suffix) that :func:`save_figure` wrote for
    ``software``: a ``same`` test for :func:`check_output_file`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".png":
        return png_written_by(path, software)
    if suffix not in (".pdf", ".svg") or not path.is_file() or path.stat().st_size > FIGURE_LIMIT:
        return False
    data = path.read_bytes()
    tag = f"{PNG_SOFTWARE} {software}".encode()
    if suffix == ".pdf":
        return data.startswith(b"%PDF") and b"/Creator (" + tag + b")" in data
    return b"<svg" in data[:4096] and b"<dc:title>" + tag + b"</dc:title>" in data


def csv_header_starts(path, columns) -> bool:
    """Whether the file's first line is a CSV header whose first columns are ``columns`` (mdmt's tables that
    append columns of their own after a fixed head: a ``same`` test for :func:`check_output_folder`)."""
    return _csv_head(path)[:len(columns)] == list(columns)


_RECORD_KEYS = ("command", "commit", "started")  # what every provenance record (mdmt.runtime.provenance.record) holds
JSON_LIMIT = 64 << 20  # bytes: a larger file is not read to find out whether mdmt wrote it


def read_json_document(path, limit: int = JSON_LIMIT):
    """The JSON document in a regular file of at most ``limit`` bytes, or None (not JSON, too large, not a file)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > limit:
        return None
    try:
        return json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return None


def is_provenance(record) -> bool:
    """Whether ``record`` is a provenance block of mdmt (:func:`mdmt.runtime.provenance.record`)."""
    return isinstance(record, dict) and all(isinstance(record.get(k), str) for k in _RECORD_KEYS)


def json_with_provenance(path) -> bool:
    """Whether ``path`` is a JSON object carrying mdmt's provenance block under ``"provenance"`` (one record, or
    a list of records, one per run): a ``same`` test for :func:`check_output_folder`."""
    doc = read_json_document(path)
    if not isinstance(doc, dict):
        return False
    prov = doc.get("provenance")
    if isinstance(prov, list):
        return bool(prov) and all(is_provenance(r) for r in prov)
    return is_provenance(prov)

