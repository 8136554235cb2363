"""One writer per output: a lock file that a second mdmt run on the same ``--out`` finds and refuses.

:func:`output_lock` is a context manager a command holds from the moment its ``--out`` is checked
until it ends.  It creates ``FOLDER/.mdmt.lock`` for a folder output, ``.NAME.mdmt.lock`` beside a
file output, with ``O_CREAT | O_EXCL`` (so exactly one of two runs starting together gets it),
holding the host, the process id, the command line and the start time of the run.  A second run
finds it and stops at once, before any work, with one line naming the holder::

    --out runs/a is being written by another mdmt run (pid 1234 on host h, started 2026-...);
    wait for it or remove runs/a/.mdmt.lock if that run is gone

The lock is removed on every way out of the block: normal end, an error, Ctrl-C, and SIGTERM or
SIGHUP (which raise :class:`mdmt.runtime.outputs.Terminated` while it is held).  A lock left
by a run killed outright (SIGKILL, a power cut) is taken over by the next run when it names this
machine and a process that has ended -- the liveness test of
:func:`mdmt.runtime.outputs.remove_stale_temporaries`.  A lock of another machine is never
taken over (its process cannot be checked from here): the message says to remove it.

The lock is re-entrant within a process (a library call inside a command may take it again), and a
folder the lock had to create is removed again, if still empty, when the block ends in an error:
a refused or failed run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import secrets
import shlex
import socket
import stat
import sys
import time
from pathlib import Path

from .outputs import OutputError, _host_tag, _process_alive, _signals_raise, describe_oserror, make_folder

LOCK_NAME = ".mdmt.lock"
_MARK = "mdmt output lock"
_READ_TRIES = 20  # a lock just created may not hold its line yet: read again for up to ~1 s
_ATTEMPTS = 100  # rounds of create / read / take over before a lock that keeps changing is reported as held
_GUARD_STALE_S = 10.0  # a takeover guard older than this was left by a killed run (a takeover takes microseconds)
_held: dict = {}  # real path of a lock -> (pid, token) of the locks this process holds


class OutputBusy(OutputError):
    """Another mdmt run holds the lock of this output."""


def lock_path(path, *, folder: bool = True) -> Path:
    """The lock file of an output: ``FOLDER/.mdmt.lock``, or ``.NAME.mdmt.lock`` beside a file."""
    path = Path(path)
    return path / LOCK_NAME if folder else path.with_name(f".{path.name}.mdmt.lock")


def _command_line() -> str:
    argv = sys.argv
    if not argv:
        return ""
    prog = "mdmt" if Path(argv[0]).name in ("mdmt", "__main__.py", "cli.py") else argv[0]
    return " ".join([prog, *map(shlex.quote, argv[1:])])


def _record(token: str) -> dict:
    return {"mdmt": _MARK, "host": socket.gethostname(), "host_tag": _host_tag(), "pid": os.getpid(),
            "command": _command_line(), "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "token": token}


def _read(lock: Path):
    """(bytes, holder dict or None) of a lock file; (None, None) when it is gone."""
    raw = None
    for attempt in range(_READ_TRIES):
        try:
            fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None, None
        except OSError:  # a symbolic link, a folder: not a lock mdmt wrote
            return b"", None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b"", None
            raw = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        try:
            holder = json.loads(raw)
        except (ValueError, RecursionError):
            holder = None
        if (isinstance(holder, dict) and holder.get("mdmt") == _MARK and isinstance(holder.get("pid"), int)
                and isinstance(holder.get("host_tag"), str)):
            return raw, holder
        if raw:  # complete but not a lock of mdmt's: no point waiting
            return raw, None
        time.sleep(0.05)  # empty: its writer is between creating and writing it
    return raw, None


def _stale(lock: Path, holder: dict) -> bool:
    """A lock of this machine whose process has ended (or this very process, which does not hold it)."""
    if holder["host_tag"] != _host_tag():
        return False
    pid = holder["pid"]
    if pid == os.getpid():
        mine = _held.get(_key(lock))
        return not (mine is not None and mine == (pid, holder.get("token")))
    return not _process_alive(pid)


def _take_over(lock: Path, raw: bytes) -> None:
    """Remove the stale lock ``raw`` so that ``O_EXCL`` can create ours -- one process at a time.

    Runs that find the same stale lock together take turns through ``LOCK.takeover`` (created with
    ``O_EXCL``, held for a moment): the one inside removes the lock only if it still holds the stale
    bytes, so a fresh lock that another run has created meanwhile is never removed.
    """
    guard = lock.with_name(lock.name + ".takeover")
    try:
        fd = os.open(guard, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:  # another run is taking it over: look again in a moment
        with contextlib.suppress(OSError):
            if time.time() - os.lstat(guard).st_mtime > _GUARD_STALE_S:  # left by a run killed inside a takeover
                os.unlink(guard)
        time.sleep(0.02)
        return
    except OSError:
        return
    os.close(fd)
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            current = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        if current == raw:
            os.unlink(lock)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(guard)


def _busy(path: Path, lock: Path, holder: dict | None, flag: str) -> OutputBusy:
    if holder is None:
        who = f"its lock {lock} is not one mdmt can read"
    else:
        who = f"pid {holder['pid']} on host {holder.get('host') or holder['host_tag']}, started {holder.get('started')}"
    return OutputBusy(f"{flag} {path} is being written by another mdmt run ({who}); wait for it or remove {lock} "
                      "if that run is gone")


def _create(lock: Path, record: dict) -> bool:
    """Create the lock with O_EXCL holding ``record``; False if one exists."""
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise OutputError(f"cannot write {lock}: {describe_oserror(exc)}") from None
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise OutputError(f"cannot write {lock}: {describe_oserror(exc)}") from None
    os.close(fd)
    return True


def _acquire(path: Path, lock: Path, flag: str) -> str:
    token = secrets.token_hex(8)
    record = _record(token)
    for attempt in range(_ATTEMPTS):
        if _create(lock, record):
            return token
        raw, holder = _read(lock)
        if raw is None:
            continue  # removed meanwhile: try again
        if holder is not None and _stale(lock, holder):
            _take_over(lock, raw)
            continue
        raise _busy(path, lock, holder, flag)
    raise _busy(path, lock, _read(lock)[1], flag)


def _release(lock: Path, token: str) -> None:
    """Remove the lock if it is still ours."""
    _, holder = _read(lock)
    if holder is not None and holder.get("token") == token and holder["pid"] == os.getpid():
        with contextlib.suppress(OSError):
            os.unlink(lock)


def _key(lock: Path) -> str:
    return os.path.realpath(lock)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


@contextlib.contextmanager
def output_lock(path, *, folder: bool = True, flag: str = "--out"):
    """Hold the lock of the output ``path`` (a folder, created if needed; or a file, whose folder must exist).

    Raises :class:`OutputBusy` (an ``OutputError``, so one line and exit 2 on the command line) when
    another live mdmt run holds it.  While held, SIGTERM and SIGHUP raise ``Terminated`` so that the
    lock is removed on the way out; it is removed on every exit from the block.  Yields the lock's path.
    """
    path = Path(path)
    lock = lock_path(path, folder=folder)
    key = _key(lock)
    mine = _held.get(key)
    if mine is not None and mine[0] == os.getpid():  # this process holds it already: the outer block releases it
        yield lock
        return
    created = []
    if folder:
        created = _missing_folders(path)
        make_folder(path)
    failed = True
    with _signals_raise():
        try:
            token = _acquire(path, lock, flag)
        except BaseException:
            _remove_empty(created)
            raise
        _held[key] = (os.getpid(), token)
        try:
            yield lock
            failed = False
        finally:
            _held.pop(key, None)
            _release(lock, token)
            if failed:
                _remove_empty(created)


def _remove_empty(folders: list[Path]) -> None:
    for f in folders:  # deepest first; a folder something was written into stays
        try:
            os.rmdir(f)
        except OSError:
            break
