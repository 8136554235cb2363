"""Saving and loading languages: versioned JSON, ``.npz``, and hmmlearn's ``CategoricalHMM``.

JSON form (human-readable; every command that takes a language accepts it)::

    {"format": "mdmt-language", "version": 1, "kind": "hmm",
     "initial": [...], "transition": [[...]], "emission": [[...]],
     "name": "...", "metadata": {...}}

An HMM q = (pi, A, B) stores pi as ``initial``, A as ``transition`` and B as
``emission``.  An n-gram uses ``"kind": "ngram"`` with ``"n"``, ``"initial"`` (the
law of the first n-1 tokens, flattened big-endian, or nested n-1 deep) and
``"transition"`` (V^(n-1) rows).  Only ``kind`` and the arrays (and ``n``) are
required; ``format``, ``version``, ``name`` and ``metadata`` are optional, other
keys are ignored.  Floats are written with ``repr`` precision, so a JSON round
trip is exact.

The ``.npz`` form holds the same arrays under the same names (an explicit law's exact
weights as the strings ``exact_weights``, its float weights as ``weights``) plus a ``meta``
entry (a JSON string with the scalar keys); it is chosen by the ``.npz``
extension in any case (``.NPZ`` too), every other extension means JSON.

Every malformed file raises ``ValueError`` naming the file and the missing or
invalid key (and, for arrays, the offending row or entry).
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from mdmt.constructions.types import Language, PathLike

from mdmt.runtime.outputs import atomic_file
from mdmt.runtime.resources import check_memory, format_bytes
from mdmt.runtime.validation import DuplicateKeyError, json_loads_unique, regular_file  # noqa: F401  (DuplicateKeyError: also exported here)
from .explicit import ExplicitLanguage, explicit_bytes
from .hmm import HMM
from .ngram import NGram

FORMAT = "mdmt-language"
VERSION = 1

_HMM_KEYS = {"initial": "startprob", "transition": "transmat", "emission": "emissionprob"}
# The language classes name their arrays after hmmlearn; errors are reported with the file's key.


def language_to_dict(language, *, name: str | None = None, metadata: dict | None = None) -> dict:
    """The JSON-ready document of an ``HMM``, ``NGram`` or ``ExplicitLanguage`` (optional ``name`` and
    ``metadata``); an explicit law's exact weights are written as rational strings (``"1/576"``)."""
    if isinstance(language, ExplicitLanguage):
        ew = language.exact_weights
        body = {"kind": "explicit", "n_symbols": language.n_symbols, "length": language.length,
                "sequences": language.support_.tolist(),
                "weights": [str(w) for w in ew] if ew is not None else language.weights_.tolist()}
    elif isinstance(language, NGram):
        body = {"kind": "ngram", "n": language.n, "initial": language.initial_.tolist(),
                "transition": language.transition_.tolist()}
    elif isinstance(language, HMM):
        body = {
            "kind": "hmm",
            "initial": language.startprob_.tolist(),
            "transition": language.transmat_.tolist(),
            "emission": language.emissionprob_.tolist(),
        }
    else:
        raise ValueError(f"cannot save a {type(language).__name__}: expected an HMM, an NGram or an ExplicitLanguage")
    d = {"format": FORMAT, "version": VERSION, **body}
    if name is not None:
        if not isinstance(name, str):
            raise ValueError(f"name must be a string, got {name!r}")
        d["name"] = name
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ValueError(f"metadata must be a dict, got {type(metadata).__name__}")
        d["metadata"] = metadata
    return d


def language_digest(language) -> str:
    """SHA-256 (hex) identifying a language: its kind, order and parameter arrays, bit for bit.

    Two languages with the same digest define the same law; a checkpoint or data set records it.  An explicit
    law is identified by V, its sorted support and its weights (the exact ones as text when it has them).
    """
    if isinstance(language, ExplicitLanguage):
        h = hashlib.sha256(f"explicit:{language.n_symbols}:{language.support_.shape}".encode())
        h.update(np.ascontiguousarray(language.support_, dtype=np.int64).tobytes())
        if language.exact_weights is not None:
            h.update(",".join(str(w) for w in language.exact_weights).encode())
        else:
            h.update(np.ascontiguousarray(language.weights_, dtype=np.float64).tobytes())
        return h.hexdigest()
    if isinstance(language, NGram):
        h = hashlib.sha256(f"ngram:{language.n}".encode())
    elif isinstance(language, HMM):
        h = hashlib.sha256(b"hmm:")
    else:
        raise ValueError(f"cannot identify a {type(language).__name__}: expected an HMM, an NGram or an "
                         "ExplicitLanguage")
    for a in _arrays(language):
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _arrays(language) -> tuple:
    """The parameter arrays of an HMM (pi, A, B) or an NGram (initial, transition)."""
    if isinstance(language, NGram):
        return language.initial_, language.transition_
    return language.startprob_, language.transmat_, language.emissionprob_


_JSON_BYTES_PER_ENTRY = 56  # a Python float and its list slot (32 bytes), its ~20 characters of text


def _require(d: dict, key: str, where: str):
    if key not in d:
        raise ValueError(f"{where}: missing key {key!r}")
    return d[key]


def _array(d: dict, key: str, where: str):
    value = _require(d, key, where)
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValueError(f"{where}: invalid key {key!r}: expected an array of numbers, got {type(value).__name__}")
    return value


def _key_of(message: str, kind: str) -> str:
    """The file key an error of the HMM/NGram constructors is about."""
    head = message.split(" ", 1)[0].split("[", 1)[0]
    for key, attr in _HMM_KEYS.items():
        if head in (key, attr):
            return key
    return "n" if head == "n" and kind == "ngram" else ""


def _count(d: dict, key: str, where: str) -> int:
    value = _require(d, key, where)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{where}: invalid key {key!r}: expected a positive integer, got {value!r}")
    return int(value)


def _explicit_from_dict(d: dict, where: str, normalise: bool) -> ExplicitLanguage:
    """An explicit law from its document: every sequence of the declared length, tokens in 0..n_symbols-1,
    weights positive and summing to 1 (unless ``normalise``); each error names the key and the entry."""
    V = _count(d, "n_symbols", where)
    L = _count(d, "length", where)
    seqs = _array(d, "sequences", where)
    if isinstance(seqs, np.ndarray):
        if seqs.ndim != 2 or seqs.shape[1] != L:
            raise ValueError(f"{where}: invalid key 'sequences': expected an array of shape (M, {L}), got "
                             f"{seqs.shape}")
        if seqs.dtype.kind not in "iu":
            raise ValueError(f"{where}: invalid key 'sequences': expected integer tokens, got dtype {seqs.dtype}")
    else:
        for k, row in enumerate(seqs):
            if not isinstance(row, (list, tuple)):
                raise ValueError(f"{where}: invalid key 'sequences': sequence {k} is a {type(row).__name__}, "
                                 "not a list of tokens")
            if len(row) != L:
                raise ValueError(f"{where}: invalid key 'sequences': sequence {k} has {len(row)} tokens, not "
                                 f"length = {L} (an explicit law holds sequences of one length)")
            for i, t in enumerate(row):
                if isinstance(t, bool) or not isinstance(t, int):
                    raise ValueError(f"{where}: invalid key 'sequences': sequence {k} position {i}: token {t!r} "
                                     "is not an integer")
    M = len(seqs)
    if M == 0:
        raise ValueError(f"{where}: invalid key 'sequences': an explicit law needs at least one sequence")
    check_memory(f"the explicit law of {where} ({M} sequences of length {L})",
                 explicit_bytes(M, L, exact=True, n_symbols=V), "use a smaller support")
    weights = d.get("weights")
    if "exact_weights" in d:  # the .npz form: exact weights as strings beside their floats
        weights = [str(w) for w in np.asarray(d["exact_weights"]).tolist()]
    elif isinstance(weights, np.ndarray):
        weights = weights.astype(np.float64)
    if weights is not None:
        if not isinstance(weights, (list, tuple, np.ndarray)):
            raise ValueError(f"{where}: invalid key 'weights': expected an array of numbers, got "
                             f"{type(weights).__name__}")
        if len(weights) != M:
            raise ValueError(f"{where}: invalid key 'weights': {len(weights)} weights for {M} sequences")
        for k, w in enumerate(weights if not isinstance(weights, np.ndarray) else []):
            if isinstance(w, bool) or not isinstance(w, (int, float, str)):
                raise ValueError(f"{where}: invalid key 'weights': weight {k} is {w!r}, not a number (write a "
                                 "decimal or a rational such as \"1/576\")")
            if isinstance(w, str):
                try:
                    Fraction(w.strip())
                except (ValueError, ZeroDivisionError):
                    raise ValueError(f"{where}: invalid key 'weights': weight {k} = {w!r} is not a number (write "
                                     "a decimal or a rational such as \"1/576\")") from None
        if not isinstance(weights, np.ndarray):
            weights = [Fraction(w.strip()) if isinstance(w, str) else w for w in weights]
    try:
        return ExplicitLanguage(seqs, weights, n_symbols=V, normalise=normalise)
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith("weight"):
            raise ValueError(f"{where}: invalid key 'weights': {msg}") from None
        raise ValueError(f"{where}: invalid key 'sequences': {msg}") from None


def language_from_dict(d: dict, where: str = "language", *, normalise: bool = False):
    """An ``HMM``, ``NGram`` or ``ExplicitLanguage`` from a document of the documented form (module docstring).

    ``normalise`` divides an explicit law's weights by their sum instead of refusing a sum other than 1."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    if "format" in d and d["format"] != FORMAT:
        raise ValueError(f"{where}: invalid key 'format': {d['format']!r} (expected {FORMAT!r})")
    version = d.get("version", VERSION)
    if isinstance(version, bool) or version != VERSION:
        raise ValueError(f"{where}: invalid key 'version': unsupported version {version!r} (this mdmt reads version {VERSION})")
    kind = _require(d, "kind", where)
    if kind == "explicit":
        return _explicit_from_dict(d, where, normalise)
    try:
        if kind == "hmm":
            return HMM(_array(d, "initial", where), _array(d, "transition", where), _array(d, "emission", where))
        if kind == "ngram":
            n = _require(d, "n", where)
            return NGram(n, _array(d, "initial", where), _array(d, "transition", where))
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith(where):
            raise
        key = _key_of(msg, kind)
        label = f"invalid key {key!r}: " if key else ""
        raise ValueError(f"{where}: {label}{msg}") from None
    raise ValueError(f"{where}: invalid key 'kind': unknown kind {kind!r} (expected 'hmm', 'ngram' or 'explicit')")


def is_npz(path) -> bool:
    """Whether a language file path names NumPy's ``.npz`` form: its extension, in any case."""
    return Path(path).suffix.lower() == ".npz"


def save_language(language: Language, path: PathLike, *, name: str | None = None, metadata: dict | None = None) -> Path:
    """Write ``language`` to ``path``: NumPy's ``.npz`` for that extension (any case), JSON for any other.

    ``name`` and ``metadata`` (a JSON-serialisable dict) are stored alongside.  The file is
    written atomically (:func:`mdmt.runtime.outputs.atomic_file`): on any error, a full
    disk included, ``path`` keeps its old content and an ``OutputError`` names it.
    """
    path = Path(path)
    npz = is_npz(path)
    if not npz and isinstance(language, (HMM, NGram, ExplicitLanguage)):
        entries = (language.n_sequences * (language.length + 1) if isinstance(language, ExplicitLanguage)
                   else sum(a.size for a in _arrays(language)))
        check_memory(f"writing {path} as JSON ({entries} probabilities)", _JSON_BYTES_PER_ENTRY * entries,
                     "write an .npz file instead")
    d = language_to_dict(language, name=name, metadata=metadata)
    if npz:
        if isinstance(language, ExplicitLanguage):
            arrays = {"sequences": language.support_, "weights": language.weights_}
            if language.exact_weights is not None:
                arrays["exact_weights"] = np.array(d["weights"])  # strings: no pickle needed
            d = {k: v for k, v in d.items() if k not in ("sequences", "weights")}
        else:
            arrays = {k: np.asarray(v, dtype=np.float64) for k, v in d.items()
                      if k in ("initial", "transition", "emission")}
        meta = json.dumps({k: v for k, v in d.items() if k not in arrays}, allow_nan=False)
        with atomic_file(path, "wb") as fh:
            np.savez(fh, meta=np.array(meta), **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as bool
    else:
        text = json.dumps(d, indent=1, allow_nan=False) + "\n"  # ValueError before any file is touched
        with atomic_file(path, "w") as fh:
            fh.write(text)
    return path


def written_for(path, *, name: str | None, metadata: dict | None) -> bool:
    """True when ``path`` is a language file mdmt wrote with this ``name`` and ``metadata`` (the same request)."""
    try:
        d = read_document(path)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(d, dict) and d.get("format") == FORMAT and d.get("name") == name and d.get("metadata") == metadata


_JSON_BYTES_PER_BYTE = 6  # a JSON number of ~20 characters becomes a float object, a list slot and a float64


def _check_readable(path: Path) -> None:
    """Refuse a missing path, or one that is not a regular file (a folder, FIFO or device), before opening it."""
    if not (path.exists() or path.is_symlink()):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    regular_file(path, f"{path}:", "a language file")


def _loads(text: str):
    """Parse the JSON text of a language file (a key given twice raises :class:`DuplicateKeyError`)."""
    return json_loads_unique(text)


def _check_npz_sizes(path: Path) -> None:
    """Refuse an .npz whose arrays would not fit the memory limit, from the shapes in their headers."""
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(fh)
                total += math.prod(shape) * dtype.itemsize
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable .npz language file ({' '.join(str(exc).split())})") from None
    check_memory(f"reading {path} ({format_bytes(total)} of arrays)", 2 * total, "is it the right file?")


def read_document(path) -> dict:
    """The raw document of a language file (JSON object, or the arrays and metadata of an ``.npz``)."""
    path = Path(path)
    _check_readable(path)
    if is_npz(path):
        _check_npz_sizes(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                d = {}
                if "meta" in z.files:
                    d = _loads(str(z["meta"]))
                    if not isinstance(d, dict):
                        raise ValueError("its 'meta' entry is not a JSON object")
                d.update({k: z[k] for k in z.files if k != "meta"})
        except FileNotFoundError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise ValueError(f"{path}: not a readable .npz language file ({exc})") from None
        if "n" in d and isinstance(d["n"], np.ndarray) and d["n"].ndim == 0:
            d["n"] = d["n"].item()
        return d
    check_memory(f"reading {path} ({format_bytes(path.stat().st_size)} of JSON)",
                 _JSON_BYTES_PER_BYTE * path.stat().st_size, "is it the right file? (.npz files are more compact)")
    try:
        return _loads(path.read_text())
    except DuplicateKeyError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text (JSON) file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: invalid JSON (arrays nested too deeply)") from None


def load_language(path: PathLike, *, normalise: bool = False) -> Language:
    """Read a language written by :func:`save_language` (or any file of the documented form).

    ``normalise``: divide an explicit law's weights by their sum instead of refusing weights that do not sum to 1.
    """
    return language_from_dict(read_document(path), str(path), normalise=normalise)


def to_hmmlearn(language):
    """An equivalent ``hmmlearn.hmm.CategoricalHMM`` (an n-gram is converted through its HMM form)."""
    try:
        from hmmlearn.hmm import CategoricalHMM
    except ImportError as exc:
        raise ImportError("to_hmmlearn needs hmmlearn >= 0.3 (CategoricalHMM): pip install 'mdmt[peer]'") from exc
    from .ngram import as_hmm

    h = as_hmm(language)
    model = CategoricalHMM(n_components=h.n_states, n_features=h.n_symbols, init_params="", params="")
    model.startprob_ = h.startprob_.copy()
    model.transmat_ = h.transmat_.copy()
    model.emissionprob_ = h.emissionprob_.copy()
    return model


def from_hmmlearn(model) -> HMM:
    """An mdmt ``HMM`` from a fitted hmmlearn ``CategoricalHMM`` (validated like any HMM)."""
    for attr in ("startprob_", "transmat_", "emissionprob_"):
        if not hasattr(model, attr):
            raise ValueError(f"hmmlearn model has no {attr}: is it a fitted CategoricalHMM?")
    return HMM(model.startprob_, model.transmat_, model.emissionprob_)
