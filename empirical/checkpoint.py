"""Checkpoints you can trust: atomic writes, a content digest beside each file, safe and checked loading.

A checkpoint ``PATH`` (written by :func:`save_checkpoint`) holds plain tensors and JSON-able
settings only, so it is read with ``torch.load(..., weights_only=True)``: loading a hostile
file cannot run code.  Beside it, ``PATH.sha256`` holds the SHA-256 of its bytes (as mdmt
writes it, or in the format of ``sha256sum``, upper- or lower-case); every load verifies it
first, so a damaged file is refused with a clear error and never resumed, sampled from, or
re-saved under a fresh checksum.  Only a regular file is read: a folder, a FIFO or a device
given as a checkpoint is refused by its kind, never waited on.

A matching digest says the file is the one that was written, not that its content makes
sense: :func:`check_state` checks the loaded object before torch builds anything from it --
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
:func:`mdmt.constructions.outputs.atomic_file` (a temporary ``.NAME.mdmt-HOST-PID.X.tmp`` in
the same folder, removed on an error or on SIGTERM/SIGHUP, stale ones of killed runs removed by
the next write) and renamed into place.  Its digest is first written to ``PATH.sha256.tmp``
and renamed to ``PATH.sha256`` after the checkpoint: a crash between the two renames leaves
the new checkpoint with the previous digest and the new digest pending; a load that finds the
pending digest matching accepts the checkpoint and completes the rename.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import math
import os
import pickle
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

from mdmt.constructions.outputs import OutputError, atomic_file, describe_oserror
from mdmt.constructions.resources import check_memory
from mdmt.constructions.validation import regular_file

from ._torch import torch

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
    """Write ``data`` to ``path`` atomically (:func:`~mdmt.constructions.outputs.atomic_file`); returns ``path``."""
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


def _first_line_of_torch_error(exc: BaseException) -> str:
    """The informative part of a torch.load error (torch's weights-only errors are paragraphs of advice)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\. |\n|$)", text, re.S)
    if m:
        text = m.group(1)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "") or type(exc).__name__
    return line if len(line) <= 200 else line[:197] + "..."


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


# ----------------------------------------------------------------------------- structure

_INT_BITS = 62  # integers in a configuration beyond 2^62 are refused before any arithmetic on them
_DESCRIBE = 60  # characters of a value quoted in an error


def describe(value) -> str:
    """A short one-line description of a loaded value for an error message (never a huge repr)."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (str, bytes)):
        text = repr(value[:_DESCRIBE + 1])
        return text if len(value) <= _DESCRIBE else text[:_DESCRIBE] + "..."
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} item{'s' * (len(value) != 1)}"
    return f"a {type(value).__name__}"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _plain(v, depth: int = 0) -> bool:
    """Whether ``v`` is JSON-like: None, bool, int, float, str, and lists, tuples and str-keyed dicts of them."""
    if depth > 8:
        return False
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x, depth + 1) for k, x in v.items())
    return False


# what a configuration field's annotation accepts: (test, words for the error)
FIELD_KINDS = {
    "int": (_is_int, "an integer"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "float": (_is_number, "a number"),
    "int | None": (lambda v: v is None or _is_int(v), "an integer or null"),
    "str | None": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "tuple": (lambda v: isinstance(v, (list, tuple)) and all(_is_int(x) for x in v), "a list of integers"),
}


def check_fields(cls, d, where: str, nested: dict | None = None) -> None:
    """Check a dict ``d`` against the fields of dataclass ``cls``: unknown keys, missing keys without a
    default and values of the wrong type are refused (``ValueError`` naming ``where.key`` and the value).

    ``nested`` maps a field name to a check of its own (the ``model`` of a training configuration).
    """
    nested = nested or {}
    if not isinstance(d, dict):
        raise ValueError(f"{where} is {describe(d)}, not a dict of settings")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in d.items():
        if key not in fields:
            raise ValueError(f"{where} has an unknown key {describe(key)} (= {describe(value)}); "
                             f"{cls.__name__} has {', '.join(fields)}")
    for name, f in fields.items():
        if name not in d:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where} lacks the key {name!r}")
            continue
        value = d[name]
        if name in nested:
            nested[name](value, f"{where}.{name}")
            continue
        test, words = FIELD_KINDS[f.type]
        if not test(value):
            raise ValueError(f"{where}.{name} = {describe(value)} is not {words}")
        items = value if isinstance(value, (list, tuple)) else [value]
        if any(_is_int(x) and x.bit_length() > _INT_BITS for x in items):
            raise ValueError(f"{where}.{name} = {describe(value)} is out of range (at most 2^{_INT_BITS})")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}.{name} = {value!r} is not finite")


def _config_of(state: dict):
    """The TrainConfig of a checkpoint's ``config`` entry (its keys and types checked first)."""
    from .model import ModelConfig
    from .run_config import TrainConfig

    d = state["config"]
    check_fields(TrainConfig, d, "config", {"model": lambda v, w: check_fields(ModelConfig, v, w)})
    try:
        return TrainConfig.from_dict(d)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"config: {' '.join(str(exc).split())}") from None


def _check_weights(sd, expected: dict, what: str = "model") -> None:
    """``sd`` holds exactly the tensors of ``expected`` (name -> (shape, dtype)), each finite."""
    if not isinstance(sd, dict):
        raise ValueError(f"{what} is {describe(sd)}, not a dict of tensors")
    for key in sd:
        if not isinstance(key, str):
            raise ValueError(f"{what} has a key {describe(key)} that is not a weight's name")
    missing = [k for k in expected if k not in sd]
    if missing:
        raise ValueError(f"{what} lacks the weight {missing[0]!r} that its config implies"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    extra = [k for k in sd if k not in expected]
    if extra:
        raise ValueError(f"{what} holds the weight {describe(extra[0])} that its config does not have"
                         + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""))
    for key, (shape, dtype) in expected.items():
        _check_tensor(sd[key], f"{what}[{key!r}]", shape, dtype)


def _check_tensor(t, where: str, shape: tuple | None, dtype=None) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{where} is {describe(t)}, not a tensor")
    if t.layout != torch.strided:
        raise ValueError(f"{where} is a {t.layout} tensor, not a dense one")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{where} has dtype {t.dtype}; mdmt writes {dtype}")
    if dtype is None and not t.is_floating_point():
        raise ValueError(f"{where} has dtype {t.dtype}, not a floating-point one")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{where} has shape {tuple(t.shape)}; its config implies {tuple(shape)}")
    if t.is_floating_point() and t.numel() and not _all_finite(t):
        bad = int((~torch.isfinite(t)).sum())
        if bad:
            kind = "NaN" if bool(torch.isnan(t).any()) else "inf"
            raise ValueError(f"{where} holds {bad} non-finite value{'s' * (bad > 1)} ({kind} among {t.numel()})")


def _all_finite(t) -> bool:
    """Whether a non-empty floating-point tensor is finite (its minimum and maximum are: one fast pass)."""
    try:
        lo, hi = torch.aminmax(t)
    except RuntimeError:  # a dtype without aminmax on this device
        return bool(torch.isfinite(t).all())
    return bool(torch.isfinite(lo)) and bool(torch.isfinite(hi))


def _network_shapes(cfg, sd) -> tuple[dict, list]:
    """(name -> (shape, dtype) of every weight, [shapes of the optimizer's parameters in group order]) of the
    network of ``cfg``, built on the meta device after the resource guard (nothing is allocated)."""
    from .model import Transformer, estimated_bytes
    from .run_config import parameter_groups

    m = cfg.model
    check_memory(f"the network of its config (L = {m.seq_len}, V = {m.vocab_size}, "
                 f"d = {m.d_model}, {m.n_layers} layers) with one sequence", estimated_bytes(m, 1),
                 "a checkpoint of this machine's runs does not need so much")
    if isinstance(sd, dict):  # the layers the weights hold bound the (Python) work of building the network
        layers = {k.split(".")[1] for k in sd if isinstance(k, str) and k.startswith("blocks.") and k.count(".") >= 2}
        if layers != {str(i) for i in range(m.n_layers)}:
            raise ValueError(f"config.model.n_layers = {m.n_layers}, but the weights hold {len(layers)} "
                             f"layer{'s' * (len(layers) != 1)} (blocks.0 .. blocks.{len(layers) - 1})")
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        net = Transformer(m)
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in net.state_dict().items()}
    groups = [[tuple(p.shape) for p in g["params"]] for g in parameter_groups(net, cfg.table_lr)]
    return shapes, groups


TOP_KEYS = ("format", "model", "config")
RESUME_KEYS = ("optimizer", "step", "losses", "history", "settings", "rng_torch")
OPTIONAL_KEYS = ("cpu_seconds",)
HISTORY_KEYS = {"step": _is_int, "train_loss": lambda v: v is None or _is_number(v), "val_nll": _is_number,
                "val_exact_nll": _is_number, "val_gap": _is_number,
                "val_gap_ci": lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(map(_is_number, v)),
                "cpu_seconds": _is_number}
HISTORY_OPTIONAL = {"val_num": _is_int, "val_draws": _is_int, "entropy_rate": _is_number, "lr": _is_number}
ADAM_FLAGS = ("amsgrad", "maximize", "capturable", "differentiable")  # mdmt's AdamW leaves them off
ADAM_STATE = ("step", "exp_avg", "exp_avg_sq")


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


def _check_state(state, resume: bool):
    from .run_config import FORMAT

    if not isinstance(state, dict):
        raise ValueError(f"holds {describe(state)}, not the dict of a training run")
    for key in state:
        if key not in TOP_KEYS + RESUME_KEYS + OPTIONAL_KEYS:
            raise ValueError(f"holds an unknown entry {describe(key)}")
    fmt = state.get("format")
    if not (_is_int(fmt) and fmt == FORMAT):
        raise ValueError(f"has format {describe(fmt)}; this mdmt reads format {FORMAT}")
    for key in TOP_KEYS + (RESUME_KEYS if resume else ()):
        if key not in state:
            raise ValueError(f"lacks the entry {key!r}" + (" that resuming needs" if key in RESUME_KEYS else ""))
    cfg = _config_of(state)
    shapes, groups = _network_shapes(cfg, state["model"])
    _check_weights(state["model"], shapes)
    if resume:
        _check_resume(state, cfg, groups)
    return cfg


def _check_resume(state: dict, cfg, groups: list) -> None:
    step = state["step"]
    if not _is_int(step) or not 0 <= step <= cfg.train_steps:
        raise ValueError(f"step = {describe(step)} is not a step count in 0..train_steps = {cfg.train_steps}")
    losses = state["losses"]
    if not isinstance(losses, list) or len(losses) != step or not all(map(_is_number, losses)):
        raise ValueError(f"losses is {describe(losses)}; a run at step {step} has a list of {step} numbers")
    history = state["history"]
    if not isinstance(history, list):
        raise ValueError(f"history is {describe(history)}, not a list of validation records")
    for i, rec in enumerate(history):
        _check_record(rec, f"history[{i}]", step)
    settings = state["settings"]
    if not isinstance(settings, dict) or not _plain(settings):
        raise ValueError(f"settings is {describe(settings)}, not a dict of plain values")
    unknown = sorted(set(settings) - {"config", "language_digest", "data_sha256"})
    if unknown:
        raise ValueError(f"settings has an unknown key {unknown[0]!r}")
    if settings.get("config") != state["config"]:
        raise ValueError("settings.config differs from config (mdmt writes the same configuration in both)")
    if not isinstance(settings.get("language_digest"), str):
        raise ValueError(f"settings.language_digest is {describe(settings.get('language_digest'))}, not a string")
    data = settings.get("data_sha256", [])
    if not (isinstance(data, list) and len(data) in (0, 2) and all(isinstance(x, str) for x in data)):
        raise ValueError(f"settings.data_sha256 is {describe(data)}, not a pair of digests")
    cpu = state.get("cpu_seconds", 0.0)
    if not _is_number(cpu) or not math.isfinite(cpu) or cpu < 0:
        raise ValueError(f"cpu_seconds = {describe(cpu)} is not a non-negative number")
    _check_optimizer(state["optimizer"], groups)
    rng = state["rng_torch"]
    _check_rng(rng)


def _check_record(rec, where: str, step: int) -> None:
    if not isinstance(rec, dict):
        raise ValueError(f"{where} is {describe(rec)}, not a validation record")
    for key, value in rec.items():
        test = HISTORY_KEYS.get(key) or HISTORY_OPTIONAL.get(key)
        if test is None:
            raise ValueError(f"{where} has an unknown key {describe(key)}")
        if not test(value):
            raise ValueError(f"{where}.{key} = {describe(value)} is not of the right type")
    missing = [k for k in HISTORY_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{where} lacks the key {missing[0]!r}")
    if not 0 <= rec["step"] <= step:
        raise ValueError(f"{where}.step = {rec['step']} is not in 0..{step} (the run's step)")


def _check_optimizer(opt, groups: list) -> None:
    if not isinstance(opt, dict) or set(opt) != {"state", "param_groups"}:
        raise ValueError(f"optimizer is {describe(opt)}"
                         + (f" with keys {', '.join(map(describe, opt))}" if isinstance(opt, dict) else "")
                         + "; an optimizer state has 'state' and 'param_groups'")
    saved = opt["param_groups"]
    if not isinstance(saved, list) or len(saved) != len(groups):
        raise ValueError(f"optimizer.param_groups is {describe(saved)}; the config implies {len(groups)} group(s)")
    shape_of = {}
    for i, (group, shapes) in enumerate(zip(saved, groups)):
        where = f"optimizer.param_groups[{i}]"
        if not isinstance(group, dict) or not all(isinstance(k, str) for k in group):
            raise ValueError(f"{where} is {describe(group)}, not a dict of settings")
        ids = group.get("params")
        if not (isinstance(ids, list) and len(ids) == len(shapes) and all(map(_is_int, ids))):
            raise ValueError(f"{where}.params is {describe(ids)}; the config implies {len(shapes)} parameter ids")
        for pid, shape in zip(ids, shapes):
            if pid in shape_of:
                raise ValueError(f"{where}.params repeats the parameter id {pid}")
            shape_of[pid] = shape
        _check_group(group, where)
    state = opt["state"]
    if not isinstance(state, dict):
        raise ValueError(f"optimizer.state is {describe(state)}, not a dict")
    for pid, entry in state.items():
        where = f"optimizer.state[{describe(pid)}]"
        if not _is_int(pid) or pid not in shape_of:
            raise ValueError(f"{where} is the state of no parameter of the groups")
        if not isinstance(entry, dict) or set(entry) != set(ADAM_STATE):
            keys = ", ".join(map(describe, entry)) if isinstance(entry, dict) else describe(entry)
            raise ValueError(f"{where} holds {keys}; AdamW's state is {', '.join(ADAM_STATE)}")
        s = entry["step"]
        if isinstance(s, torch.Tensor):
            _check_tensor(s, f"{where}.step", None)
            if s.numel() != 1 or float(s) < 0:
                raise ValueError(f"{where}.step is {describe(s)}, not one step count")
        elif not _is_number(s) or not math.isfinite(s) or s < 0:
            raise ValueError(f"{where}.step = {describe(s)} is not a step count")
        for key in ("exp_avg", "exp_avg_sq"):
            _check_tensor(entry[key], f"{where}.{key}", shape_of[pid])


def _check_group(group: dict, where: str) -> None:
    """AdamW's settings of one parameter group, as mdmt's training creates them."""
    def finite(v, low, high=math.inf):
        return _is_number(v) and math.isfinite(v) and low <= v < high

    checks = {"lr": (lambda v: finite(v, 0), "a learning rate"),
              "betas": (lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(finite(b, 0, 1) for b in v),
                        "a pair of numbers in [0, 1)"),
              "eps": (lambda v: finite(v, 0) and v > 0, "a positive number"),
              "weight_decay": (lambda v: finite(v, 0), "a non-negative number")}
    for key, (test, words) in checks.items():
        if key not in group:
            raise ValueError(f"{where} lacks AdamW's setting {key!r}")
        if not test(group[key]):
            raise ValueError(f"{where}.{key} = {describe(group[key])} is not {words}")
    optional = {"lr_scale": (lambda v: finite(v, 0) and v > 0, "a positive number"),
                "foreach": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
                "fused": (lambda v: v is None or v is False, "off (mdmt's AdamW does not fuse)"),
                "decoupled_weight_decay": (lambda v: isinstance(v, bool), "true or false"),
                **{flag: (lambda v: v is False, "false (mdmt's AdamW leaves it off)") for flag in ADAM_FLAGS}}
    for key, value in group.items():
        if key in checks or key == "params":
            continue
        plain = (lambda v: v is None or isinstance(v, (bool, int, float, str)), "a plain value")
        test, words = optional.get(key, plain)
        if not test(value):
            raise ValueError(f"{where}.{key} = {describe(value)} is not {words}")


def _check_rng(rng) -> None:
    reference = torch.get_rng_state()
    if not (isinstance(rng, torch.Tensor) and rng.layout == torch.strided and rng.dtype == torch.uint8
            and rng.dim() == 1 and rng.numel() == reference.numel()):
        raise ValueError(f"rng_torch is {describe(rng)}; torch's generator state is a torch.uint8 tensor of shape "
                         f"{tuple(reference.shape)}")
    try:
        torch.Generator().set_state(rng.contiguous())
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"rng_torch is not a state of torch's random generator ({_first_line_of_torch_error(exc)})") \
            from None
