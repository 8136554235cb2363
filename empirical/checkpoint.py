"""Checkpoints you can trust: atomic writes, a content digest beside each file, safe loading.

A checkpoint ``PATH`` (written by :func:`save_checkpoint`) holds plain tensors and JSON-able
settings only, so it is read with ``torch.load(..., weights_only=True)``: loading a hostile
file cannot run code.  Beside it, ``PATH.sha256`` holds the SHA-256 of its bytes; every load
verifies it first, so a damaged file is refused with a clear error and never resumed, sampled
from, or re-saved under a fresh checksum.

Writes are atomic: the checkpoint and its digest are written to temporary files in the same
folder and renamed into place (checkpoint first).  A crash between the two renames leaves the
new checkpoint with the previous digest and the new digest in ``PATH.sha256.tmp``; a load that
finds the digest there accepts the checkpoint and completes the rename.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import tempfile
import zipfile
from pathlib import Path

from ._torch import torch

DIGEST_SUFFIX = ".sha256"


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + DIGEST_SUFFIX)


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_writable(folder: str | os.PathLike, what: str = "--out") -> Path:
    """Create ``folder`` if needed and make sure a file can be written there; ValueError naming it otherwise.

    Called before any work starts, so that a bad destination (an existing file, a read-only
    folder) is found at once and not after hours of training.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{what} {folder} is an existing file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ValueError(f"{what} {folder} cannot be written: {exc.strerror or exc}") from None
    return folder


def _write_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path`` (flushed to disk); returns the temporary path."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def save_checkpoint(path: str | os.PathLike, state: dict) -> str:
    """Write ``state`` (tensors and JSON-able values) to ``path`` atomically with its digest; returns the digest."""
    path = Path(path)
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    tmp = _write_atomic(path, data)
    dtmp = _digest_path(path).with_name(_digest_path(path).name + ".tmp")
    try:
        dtmp.write_text(digest + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(dtmp, _digest_path(path))
    return digest


def _recorded_digest(path: Path, actual: str) -> str | None:
    """The digest recorded beside ``path`` (completing an interrupted save when its digest is the pending one)."""
    dpath = _digest_path(path)
    pending = dpath.with_name(dpath.name + ".tmp")
    if pending.exists() and pending.read_text().strip() == actual:
        os.replace(pending, dpath)
    if not dpath.exists():
        return None
    return dpath.read_text().strip()


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The state saved by :func:`save_checkpoint`, after checking its digest; ValueError for a damaged file.

    Loaded on the CPU with ``weights_only=True``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {path} does not exist")
    actual = file_digest(path)
    recorded = _recorded_digest(path, actual)
    if recorded is None:
        raise ValueError(f"checkpoint {path} has no digest beside it ({path.name}{DIGEST_SUFFIX}); "
                         "mdmt only loads checkpoints it wrote")
    if recorded != actual:
        raise ValueError(f"checkpoint {path} does not match its SHA-256 in {path.name}{DIGEST_SUFFIX}: "
                         "the file is damaged; refusing to load it")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, ValueError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"checkpoint {path} cannot be read safely (weights_only): {msg}") from None
