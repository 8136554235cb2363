"""Input validation shared by every language and sampler in mdmt.

Every check raises :class:`ValueError` with a message that names the offending
array, index and value, so that a malformed language or sequence never turns
into a NaN, a silent wrap-around or a traceback deep inside a kernel.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np

MASK = -1
"""Token value marking a masked (not yet revealed) position in integer arrays."""

DEFAULT_ATOL = 1e-6
"""Tolerance on the sum of every probability vector (|sum - 1| <= atol)."""


def check_tolerance(atol, name: str = "atol") -> float:
    """The tolerance on a probability vector's sum: a finite number in [0, 1) (a NaN would accept anything, a
    negative one nothing); refused naming ``name`` and the value, before any array is read."""
    if isinstance(atol, (bool, np.bool_)) or not isinstance(atol, (int, float, np.integer, np.floating)) \
            or not (0 <= atol < 1):
        raise ValueError(f"{name} must be a finite number in [0, 1), got {atol!r}")
    return float(atol)


def probability_array(name: str, value, ndim: int, *, atol: float = DEFAULT_ATOL) -> np.ndarray:
    """Return ``value`` as a read-only float64 array whose last axis holds distributions.

    Checks: the number of dimensions, finiteness, non-negativity and that every
    vector along the last axis sums to 1 within ``atol``.  The error names the
    first offending entry or row.
    """
    check_tolerance(atol)
    _check_numbers(name, value, ndim)
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be an array of numbers ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}{_fmt_index(idx)} is not finite ({arr[idx]})")
    neg = arr < 0
    if neg.any():
        idx = tuple(int(i) for i in np.argwhere(neg)[0])
        raise ValueError(f"{name}{_fmt_index(idx)} is a negative probability ({arr[idx]:.6g})")
    big = arr > 1.0 + atol
    if big.any():
        idx = tuple(int(i) for i in np.argwhere(big)[0])
        raise ValueError(f"{name}{_fmt_index(idx)} = {arr[idx]:.6g} is not a probability (greater than 1)")
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > atol
    if np.any(off):
        idx = tuple(int(i) for i in np.argwhere(np.atleast_1d(off))[0]) if arr.ndim > 1 else ()
        total = float(np.atleast_1d(sums)[idx] if idx else sums)
        where = f"{name} row {idx[0] if len(idx) == 1 else idx}" if idx else name
        raise ValueError(f"{where} sums to {total:.10g}, not 1 (tolerance atol={atol:g})")
    # Renormalise rows that are off by more than rounding, so the law is exact; rows already
    # normalised to rounding are kept bit for bit (a save/load round trip is then exact).
    if np.any(np.abs(sums - 1.0) > 1e-12):
        arr = arr / arr.sum(axis=-1, keepdims=True)
    arr.setflags(write=False)
    return arr


def _check_numbers(name: str, value, ndim: int) -> None:
    """Refuse entries that NumPy would silently turn into numbers: strings, booleans, None, nested objects.

    ``np.array(["0.5", True], dtype=float)`` is ``[0.5, 1.0]``; a probability written as a
    string or a boolean in a language file is a mistake, and the error names its index.
    """
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be an array of numbers, got an array of dtype {value.dtype}")
        return
    if isinstance(value, (str, bytes, bool, np.bool_, dict)) or value is None:
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__} {value!r:.40}")
    if isinstance(value, (list, tuple)):
        _check_list(name, value, (), ndim)


def _check_list(name: str, seq, idx: tuple, ndim: int) -> None:
    if len(idx) >= ndim:
        raise ValueError(f"{name}{_fmt_index(idx)} is a list, but {name} must have {ndim} dimension(s)")
    if all(type(v) is float or type(v) is int for v in seq):  # the common case, fast
        return
    for i, v in enumerate(seq):
        if isinstance(v, (list, tuple)):
            _check_list(name, v, idx + (i,), ndim)
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            what = "a boolean" if isinstance(v, (bool, np.bool_)) else f"a {type(v).__name__}"
            raise ValueError(f"{name}{_fmt_index(idx + (i,))} is {what} ({v!r:.40}), not a number")


def _fmt_index(idx: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"


def token_array(x, n_symbols: int, *, allow_mask: bool = True, name: str = "sequence") -> np.ndarray:
    """Return ``x`` as a C-contiguous int64 array of shape (n, L).

    A 1-D input is one sequence.  Every entry must be an integer in
    ``[0, n_symbols)``, or :data:`MASK` when ``allow_mask`` is true; the error
    names the first offending sequence, position and token.  The range is checked
    in the input's own dtype, before any conversion, so that no token can wrap
    around to the mask or into the vocabulary (``2**64 - 1`` as uint64 is refused,
    not read as -1).
    """
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged rows
        raise ValueError(f"{name}s must be a rectangular array of integer tokens") from None
    if arr.dtype.kind == "f" and not isinstance(x, np.ndarray):
        arr = _exact_integers(x, arr)
    if arr.dtype == object:
        arr = _object_tokens(arr, name)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name}s must have shape (n, L) or (L,), got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        _check_integral(arr, name)
    _check_vocabulary(arr, n_symbols, allow_mask, name)
    return np.ascontiguousarray(arr, dtype=np.int64)


def _exact_integers(x, arr: np.ndarray) -> np.ndarray:
    """Python integers beyond float64's exact range kept as such (NumPy reads [0, 2**64 - 1] as floats)."""
    finite = np.isfinite(arr)
    if not finite.all() or (np.abs(arr) < 2.0**53).all():
        return arr
    exact = np.array(x, dtype=object)
    return exact if exact.shape == arr.shape and all(type(v) is int for v in exact.flat) else arr


def _object_tokens(arr: np.ndarray, name: str) -> np.ndarray:
    """An object array of Python integers too large for int64, kept for the range check; others refused."""
    if arr.ndim in (1, 2) and arr.size and all(type(v) is int for v in arr.flat):
        return arr
    raise ValueError(f"{name}s must be a rectangular array of integer tokens")


def _check_integral(arr: np.ndarray, name: str) -> None:
    """Refuse a non-integer token in a float (or other non-integer) array, naming the first one."""
    if np.issubdtype(arr.dtype, np.floating):
        ok = np.isfinite(arr) & (arr == np.round(arr))
        if ok.all():
            return
        i, t = (int(v) for v in np.argwhere(~ok)[0])
        token = float(arr[i, t])
    elif arr.dtype == object:  # Python integers (see _object_tokens)
        return
    else:  # booleans, complex numbers, text: every entry is refused, the first one is named
        i, t, token = 0, 0, arr[0, 0].item()
    kind = _KINDS.get(arr.dtype.kind, "")
    raise ValueError(f"{name} {i} position {t}: token {token!r}{f' ({kind})' if kind else ''} is not an integer")


_KINDS = {"b": "a boolean", "c": "a complex number", "U": "text", "S": "bytes", "M": "a date", "m": "a time span",
          "V": "a record"}


def _check_vocabulary(arr: np.ndarray, n_symbols: int, allow_mask: bool, name: str) -> None:
    """Refuse a token outside ``[0, n_symbols)`` (or the mask), compared in the array's own dtype."""
    low = MASK if allow_mask else 0
    if np.issubdtype(arr.dtype, np.integer):
        info = np.iinfo(arr.dtype)
        bad = np.zeros(arr.shape, dtype=bool)
        if low > info.min:
            bad |= arr < arr.dtype.type(low)
        if n_symbols - 1 < info.max:
            bad |= arr > arr.dtype.type(n_symbols - 1)
    else:  # integral floats, or Python integers of any size
        bad = (arr < low) | (arr >= n_symbols)
    if bad.any():
        i, t = (int(v) for v in np.argwhere(bad)[0])
        allowed = f"0..{n_symbols - 1}" + (f" or {MASK} (mask)" if allow_mask else "")
        raise ValueError(
            f"{name} {i} position {t}: token {int(arr[i, t])} is outside the vocabulary (allowed {allowed})"
        )


def positive_int(name: str, value, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising ``ValueError`` if it is not an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def as_rng(seed) -> np.random.Generator:
    """A NumPy Generator from ``None``, an int seed or an existing Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(seed)


def seed_value(seed, name: str = "seed") -> int:
    """``seed`` as an int: a non-negative integer (NumPy's included); a float, a boolean or text is refused
    naming ``name`` -- never truncated (``1.5`` is not the seed 1)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")
    return int(seed)


def seed_of(*parts: int) -> int:
    """A 63-bit seed mixed from integers (independent streams for (seed, purpose, index)); the first part is the
    user's seed (:func:`seed_value`), the others the purpose and index."""
    words = [seed_value(parts[0])] + [int(p) for p in parts[1:]] if parts else []
    return int(np.random.SeedSequence(words).generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1)


_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def regular_file(path, label: str, what: str = "a regular file") -> Path:
    """``path`` as a Path, after checking from its status (without opening it) that it is a regular file.

    A folder, FIFO, device or socket is refused with ``ValueError("<label> is a FIFO, not <what>")``,
    so that reading never blocks on a pipe or runs forever on ``/dev/zero``; a missing file raises
    ``FileNotFoundError``.  Symbolic links are followed; a loop of them, or a path through a file,
    raises ``ValueError("<label>: too many levels of symbolic links")``.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"{label.rstrip(':')}: {(exc.strerror or str(exc)).lower()}") from None
    if stat.S_ISREG(mode):
        return path
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    raise ValueError(f"{label} is {kind}, not {what}")


class DuplicateKeyError(ValueError):
    """A JSON object that gives the same key twice (``json.loads`` alone would keep the last silently)."""


def _unique_keys(pairs: list) -> dict:
    d = {}
    for key, value in pairs:
        if key in d:
            raise DuplicateKeyError(f"key {key!r} appears more than once in an object")
        d[key] = value
    return d


def json_loads_unique(text):
    """``json.loads`` of a file mdmt reads (language files, data-set manifests), refusing a key given twice
    (:class:`DuplicateKeyError`) instead of keeping its last value."""
    return json.loads(text, object_pairs_hook=_unique_keys)
