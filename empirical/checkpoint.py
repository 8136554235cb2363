"""Checkpoints you can trust: atomic writes, a content digest beside each file, safe and checked loading.

A checkpoint ``PATH`` (written by :func:`save_checkpoint`) holds plain tensors and JSON-able
settings only, so it is read with ``torch.load(..., weights_only=True)``: loading a hostile
file cannot run code.  Beside it, ``PATH.sha256`` holds the SHA-256 of its bytes (as mdmt
writes it, or in the format of ``sha256sum``, upper- or lower-case); every load verifies it
first, so a damaged file is refused with a clear error and never resumed, sampled from, or
re-saved under a fresh checksum.  Only a regular file is read: a folder, a FIFO or a device
given as a checkpoint is refused by its kind, never waited on.

A matching digest says the file is the one that was written, not that its content makes
sense: :func:`check_state` checks the loaded object before torch builds anything from it (by the
rules of :mod:`.checkpoint_state`) --
the entries a training run writes and their types, the configuration against the fields of
:class:`~mdmt.empirical.train.TrainConfig` and :class:`~mdmt.empirical.model.ModelConfig`,
the memory the network would need (the resource guard, ``MDMT_MAX_MEMORY``), every weight's
name, dtype and shape against those the configuration implies (taken from the network built
on torch's ``meta`` device, which allocates nothing), finite weights and, to resume, the
optimizer and random-generator states.  Every problem is a :class:`CheckpointError` (a
``ValueError``) with one line naming the checkpoint and the offending entry;
:func:`read_checkpoint` is the load every consumer uses (``mdmt sample``, ``evaluate``,
``adaptive sample``, ``train --resume``, :func:`~mdmt.empirical.train.load_model`).

Writes are atomic: the checkpoint is written through
:func:`mdmt.runtime.outputs.atomic_file` (a temporary ``.NAME.mdmt-HOST-PID.X.tmp`` in
the same folder, removed on an error or on SIGTERM/SIGHUP, stale ones of killed runs removed by
the next write) and renamed into place.  Its digest is first written to ``PATH.sha256.tmp``
and renamed to ``PATH.sha256`` after the checkpoint: a crash between the two renames leaves
the new checkpoint with the previous digest and the new digest pending; a load that finds the
pending digest matching accepts the checkpoint and completes the rename.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

from mdmt.runtime.outputs import OutputError, atomic_file, describe_oserror
from mdmt.runtime.resources import check_memory
from mdmt.runtime.validation import regular_file

from ._torch import torch

# the structure checks, re-exported on purpose: mdmt.empirical.checkpoint keeps every name it had
from .checkpoint_state import (_DESCRIBE as _DESCRIBE, _INT_BITS as _INT_BITS, ADAM_FLAGS as ADAM_FLAGS,
                               ADAM_STATE as ADAM_STATE, FIELD_KINDS as FIELD_KINDS, HISTORY_KEYS as HISTORY_KEYS,
                               HISTORY_OPTIONAL as HISTORY_OPTIONAL, OPTIONAL_KEYS as OPTIONAL_KEYS,
                               RESUME_KEYS as RESUME_KEYS, TOP_KEYS as TOP_KEYS, _all_finite as _all_finite,
                               _check_group as _check_group, _check_optimizer as _check_optimizer,
                               _check_record as _check_record, _check_resume as _check_resume,
                               _check_rng as _check_rng, _check_state as _check_state,
                               _check_tensor as _check_tensor, _check_weights as _check_weights,
                               _config_of as _config_of, _first_line_of_torch_error as _first_line_of_torch_error,
                               _is_int as _is_int, _is_number as _is_number, _network_shapes as _network_shapes,
                               _plain as _plain, check_fields as check_fields, describe as describe)

DIGEST_SUFFIX = ".sha256"
PENDING_SUFFIX = ".tmp"  # PATH.sha256.tmp: the digest of a checkpoint being renamed into place
MAX_DIGEST_BYTES = 4096  # a digest file is one line; anything longer is not one


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: missing, not a regular file, damaged, or of the wrong structure."""


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + DIGEST_SUFFIX)


def _pending_path(path: Path) -> Path:
    dpath = _digest_path(path)
    return dpath.with_name(dpath.name + PENDING_SUFFIX)


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
    """Write ``data`` to ``path`` atomically (:func:`~mdmt.runtime.outputs.atomic_file`); returns ``path``."""
    with atomic_file(path, "wb", encoding=None) as fh:
        fh.write(data)
    return path


def save_checkpoint(path: str | os.PathLike, state: dict) -> str:
    """Write ``state`` (tensors and JSON-able values) to ``path`` atomically with its digest; returns the digest."""
    path = Path(path)
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    pending = _pending_path(path)
    try:
        _write_atomic(pending, (digest + "\n").encode())
        _write_atomic(path, data)
    except BaseException:  # an error, or SIGTERM/SIGHUP inside atomic_file: the previous checkpoint stays
        with contextlib.suppress(OSError):
            pending.unlink()
        raise
    try:
        os.replace(pending, _digest_path(path))
    except OSError as exc:  # the checkpoint is in place; the next load completes the rename
        raise OutputError(f"cannot write {_digest_path(path)}: {describe_oserror(exc)}") from None
    return digest


_HEX = re.compile(r"\\?([0-9a-fA-F]{64})")  # sha256sum prefixes a backslash when it escapes the name
_BSD = re.compile(r"SHA256 ?\(.*\) ?= ?([0-9a-fA-F]{64})")


def parse_digest(text: bytes) -> str | None:
    """The SHA-256 (lower-case hex) a digest file records, or None when ``text`` is not one.

    Accepted: the hex digest alone (mdmt's format), ``HEX  NAME`` or ``HEX *NAME`` (``sha256sum``),
    ``SHA256 (NAME) = HEX`` (BSD ``sha256``, ``sha256sum --tag``), in upper or lower case, on one line.
    The name is not compared: the digest of the checkpoint's bytes is what counts.
    """
    if len(text) > MAX_DIGEST_BYTES:
        return None
    try:
        lines = [line.strip() for line in text.decode("ascii").splitlines() if line.strip()]
    except UnicodeDecodeError:
        return None
    if len(lines) != 1:
        return None
    line = lines[0]
    m = _BSD.fullmatch(line)
    if m is None:
        m = _HEX.fullmatch(line.partition(" ")[0])
        if m is None:
            return None
    return m.group(1).lower()


def _read_digest(dpath: Path, path: Path) -> str | None:
    """The digest recorded in ``dpath`` (None if it does not exist); CheckpointError if it is not a digest file."""
    try:
        regular_file(dpath, f"the digest file {dpath} of checkpoint {path}")
        with open(dpath, "rb") as fh:
            raw = fh.read(MAX_DIGEST_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointError(f"the digest file {dpath} of checkpoint {path} cannot be read: "
                              f"{describe_oserror(exc)}") from None
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    recorded = parse_digest(raw)
    if recorded is None:
        raise CheckpointError(f"the digest file {dpath} is damaged (it holds no SHA-256 in hex as mdmt or sha256sum "
                              f"write it); refusing to load checkpoint {path}")
    return recorded


def _recorded_digest(path: Path, actual: str) -> str | None:
    """The digest recorded beside ``path`` (completing an interrupted save when its digest is the pending one)."""
    pending = _pending_path(path)
    try:
        regular_file(pending, "pending digest")
        with open(pending, "rb") as fh:
            waiting = parse_digest(fh.read(MAX_DIGEST_BYTES + 1))
    except (OSError, ValueError):
        waiting = None  # no pending digest, or not one mdmt wrote: the recorded digest decides
    if waiting == actual:
        with contextlib.suppress(OSError):
            os.replace(pending, _digest_path(path))
        return actual
    return _read_digest(_digest_path(path), path)


def _check_expanded_size(path: Path) -> None:
    """Refuse an archive whose members expand beyond the memory guard (a small file can hold a zip bomb)."""
    try:
        if not zipfile.is_zipfile(path):
            return  # torch.load reports what it cannot read
        with zipfile.ZipFile(path) as zf:
            total = sum(max(0, info.file_size) for info in zf.infolist())
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path} cannot be read: {exc}") from None
    try:
        check_memory(f"loading checkpoint {path} (its archive expands to this size)", total)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The object saved by :func:`save_checkpoint`, after checking its digest; CheckpointError for a damaged file.

    Loaded on the CPU with ``weights_only=True`` (tensors and plain values only) and without torch's
    warnings.  The content is not checked here: :func:`read_checkpoint` does that.
    """
    path = Path(path)
    try:
        regular_file(path, f"checkpoint {path}")
        size = path.stat().st_size
        check_memory(f"loading checkpoint {path}", size)
        actual = file_digest(path)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} does not exist") from None
    except OSError as exc:
        raise CheckpointError(f"checkpoint {path} cannot be read: {describe_oserror(exc)}") from None
    except ValueError as exc:  # not a regular file; too large for the resource guard
        raise CheckpointError(str(exc)) from None
    recorded = _recorded_digest(path, actual)
    if recorded is None:
        raise CheckpointError(f"checkpoint {path} has no digest beside it ({path.name}{DIGEST_SUFFIX}); "
                              "mdmt only loads checkpoints it wrote")
    if recorded != actual:
        raise CheckpointError(f"checkpoint {path} does not match its SHA-256 in {path.name}{DIGEST_SUFFIX}: "
                              "the file is damaged; refusing to load it")
    _check_expanded_size(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's remarks on pickle protocols are not the user's business
            return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, ValueError, OSError, TypeError,
            AttributeError, KeyError, IndexError, ImportError, OverflowError, RecursionError) as exc:
        raise CheckpointError(f"checkpoint {path} cannot be read safely (weights_only: tensors and plain values "
                              f"only): {_first_line_of_torch_error(exc)}") from None


def read_checkpoint(path: str | os.PathLike, *, resume: bool = False):
    """``(state, TrainConfig)`` of a checkpoint written by mdmt's training, digest and structure checked.

    :func:`load_checkpoint` then :func:`check_state`; ``resume`` also checks what continuing the
    run needs (optimizer, random-generator state, step, history, settings).
    """
    state = load_checkpoint(path)
    return state, check_state(state, path, resume=resume)


def check_state(state, path, *, resume: bool = False):
    """Check the structure of a loaded checkpoint before anything is built from it; returns its TrainConfig.

    Checked: a dict with the entries mdmt's training writes (no others); ``format``; the ``config``
    against the fields and types of TrainConfig and ModelConfig (and their own checks); the memory
    the network needs (resource guard); the ``model`` weights' names, dtypes and shapes against those
    the config implies, all finite.  With ``resume``: step, losses, history, settings (the same config),
    ``cpu_seconds``, the optimizer's groups and per-parameter state (shapes of the parameters), and
    the random generator's state.  Every problem is a :class:`CheckpointError` with one line naming
    ``path`` and the entry.
    """
    try:
        return _check_state(state, resume)
    except CheckpointError:
        raise
    except ValueError as exc:  # ResourceError included
        raise CheckpointError(f"checkpoint {path}: {' '.join(str(exc).split())}") from None
