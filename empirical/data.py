"""Seeded training and validation sets sampled from a language (Section 5.1, "Tasks and Datasets").

A data set is a folder holding ``train.npy`` and ``val.npy`` (uint8 or int32 tokens, shape
(n, L)) and ``manifest.json`` (language SPEC, seed, sizes, vocabulary size and a SHA-256 of
each array).  Everything is a function of (language, seed, sizes, L): the train and
validation sets are drawn by ``language.sample`` from two independent child seeds of
``np.random.SeedSequence(seed)``, so a deleted or damaged set is regenerated bit for bit.

Writing is atomic and non-destructive (:mod:`mdmt.runtime.outputs`): each file is written
to a temporary file and renamed, the manifest last, and :func:`ensure` replaces only a data set
mdmt wrote for the same spec -- another spec's set, or files that are not an mdmt data set, are
refused unless ``force=True`` (``mdmt data --force``).

The language is named by a SPEC (:mod:`mdmt.constructions.languages.spec`): ``preset:3gram-ter:0``
(the ``-ter`` variants, threshold 0, are the ones used for TER, the pruned ones for SER),
``interval:4`` (the Theorem 4.4 counterexample) or a language file.

Training on a stored set: ``mdmt.empirical.train.train(..., data=(train, val))`` or
``mdmt train --data FOLDER`` (``mdmt data`` writes and verifies folders).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mdmt.constructions.languages.spec import canonical_spec, interval_misfit, language_from_spec
from mdmt.runtime.outputs import OutputError, atomic_file, check_output_folder, make_folder, write_text
from mdmt.runtime.resources import ResourceError, check_memory
from mdmt.runtime.validation import DuplicateKeyError, json_loads_unique, positive_int, regular_file

FORMAT = 2


def check_length(spec: str, length: int) -> None:
    """For ``interval:l``, L must be a multiple of l (the counterexample's intervals)."""
    l = interval_misfit(spec, length)
    if l is not None:
        raise ValueError(f"language {spec!r}: L = {length} is not a multiple of the interval length l = {l}")


@dataclass(frozen=True)
class DataSpec:
    """What a data set is a function of."""

    language: str  # a language SPEC, e.g. "preset:3gram-ter:0" or "interval:4" (stored in canonical form)
    seed: int = 0  # seed of the sequences
    num_train: int = 10000
    num_val: int = 1000
    length: int = 64  # L

    def __post_init__(self):
        object.__setattr__(self, "language", canonical_spec(self.language))  # ValueError names the forms
        positive_int("num_train", self.num_train)
        positive_int("num_val", self.num_val)
        positive_int("length L", self.length)
        positive_int("seed", self.seed, minimum=0)
        check_length(self.language, self.length)

    def build_language(self):
        return language_from_spec(self.language)


def digest(a: np.ndarray) -> str:
    """SHA-256 (hex) of an array's bytes in C order."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def generate(spec: DataSpec, language=None) -> tuple[np.ndarray, np.ndarray]:
    """(train, val) int64 arrays drawn from the language; deterministic in ``spec``."""
    check_memory(f"a data set of {spec.num_train} + {spec.num_val} sequences of length {spec.length}",
                 _PEAK_BYTES_PER_TOKEN * (spec.num_train + spec.num_val) * spec.length, "use fewer or shorter sequences")
    lang = spec.build_language() if language is None else language
    s_train, s_val = np.random.SeedSequence(spec.seed).spawn(2)
    train = lang.sample_sequences(spec.num_train, spec.length, np.random.default_rng(s_train))
    val = lang.sample_sequences(spec.num_val, spec.length, np.random.default_rng(s_val))
    return np.asarray(train, dtype=np.int64), np.asarray(val, dtype=np.int64)


_PEAK_BYTES_PER_TOKEN = 24  # int64 draws, their stored copy and the int64 copy that is digested
FILES = ("train.npy", "val.npy", "manifest.json")


def _store_dtype(V: int):
    return np.uint8 if V <= 256 else np.int32


def save(folder: str | os.PathLike, spec: DataSpec, train: np.ndarray, val: np.ndarray, vocab_size: int) -> Path:
    """Write a data set so that every file is complete or absent, whatever interrupts it.

    A manifest marked ``"complete": false`` is written first, then each array atomically, then the
    final manifest: an interrupted write leaves a folder that :func:`load` refuses and
    :func:`load_or_create` regenerates (it is mdmt's own, for the same spec).
    """
    folder = make_folder(folder)
    dt = _store_dtype(vocab_size)
    head = {"format": FORMAT, **asdict(spec), "vocab_size": vocab_size}
    write_text(folder / "manifest.json", json.dumps({**head, "complete": False}, indent=1) + "\n")
    for name, arr in (("train", train), ("val", val)):
        with atomic_file(folder / f"{name}.npy", "wb") as fh:
            np.save(fh, arr.astype(dt))
    manifest = {**head, "sha256": {"train": digest(train.astype(np.int64)), "val": digest(val.astype(np.int64))}}
    write_text(folder / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return folder


def read_manifest(folder: str | os.PathLike) -> dict | None:
    """The folder's data-set manifest, or None when there is none or manifest.json is not one
    (:func:`load` says what is wrong with it)."""
    return _read_manifest(folder)[0]


def _whole(value, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _field_problem(manifest: dict) -> str | None:
    """What is wrong with the fields of a manifest of this format, or None."""
    missing = [f for f in (*DataSpec.__dataclass_fields__, "vocab_size") if f not in manifest]
    if missing:
        return f"it lacks {missing[0]!r}"
    if not isinstance(manifest["language"], str) or not manifest["language"].strip():
        return f"'language' is {manifest['language']!r}, not a language SPEC"
    for key, minimum in (("seed", 0), ("num_train", 1), ("num_val", 1), ("length", 1), ("vocab_size", 1)):
        if not _whole(manifest[key], minimum):
            return f"{key!r} is {manifest[key]!r:.60}, not an integer >= {minimum}"
    complete = manifest.get("complete", True)
    if not isinstance(complete, bool):
        return f"'complete' is {complete!r:.60}, not true or false"
    if complete:  # complete: both digests must be recorded
        sha = manifest.get("sha256")
        if not isinstance(sha, dict):
            return "it lacks the SHA-256 digests ('sha256') of its arrays"
        for name in ("train", "val"):
            value = sha.get(name)
            if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
                return f"'sha256' of {name} is {value!r:.80}, not a SHA-256 digest (64 hexadecimal digits)"
    return None


def _read_manifest(folder) -> tuple[dict | None, str | None]:
    """(manifest, None); (None, None) when the folder has no manifest.json; or (None, what is wrong with it).

    A manifest of another format is returned as read (:func:`load` reports the format).
    """
    path = Path(folder) / "manifest.json"
    if not (path.exists() or path.is_symlink()):
        return None, None
    try:
        data = regular_file(path, str(path)).read_bytes()  # never opens a FIFO or a device
    except ValueError as exc:  # a folder, FIFO or device
        return None, str(exc)
    except OSError as exc:  # unreadable
        return None, f"{path} cannot be read ({(exc.strerror or str(exc)).lower()})"
    try:
        manifest = json_loads_unique(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, f"{path} is damaged: it is not UTF-8 text"
    except DuplicateKeyError as exc:
        return None, f"{path} is damaged: {exc}"
    except json.JSONDecodeError as exc:
        return None, f"{path} is damaged: it is not valid JSON ({exc})"
    except RecursionError:
        return None, f"{path} is damaged: it is nested too deeply"
    if not isinstance(manifest, dict):
        return None, f"{path} is damaged: it holds a JSON {type(manifest).__name__}, not an object"
    if "format" not in manifest:
        return None, f"{path} is not an mdmt data set manifest (it has no 'format')"
    if not _whole(manifest["format"], 1):
        return None, f"{path} is damaged: 'format' is {manifest['format']!r:.60}, not a format number"
    if manifest["format"] != FORMAT:
        return manifest, None  # an old format is reported by load()
    problem = _field_problem(manifest)
    if problem:
        return None, f"{path} is damaged: {problem}"
    return manifest, None


def _check_folder(folder: Path, label: str) -> None:
    """Refuse a missing folder, or a path that is not a folder, naming its kind (never opened)."""
    if not (folder.exists() or folder.is_symlink()):
        raise ValueError(f"{label}: no such folder")
    if not folder.is_dir():
        regular_file(folder, label, "a data set folder")  # a FIFO, device or socket is named by its kind
        raise ValueError(f"{label} is a regular file, not a data set folder")


def load(folder: str | os.PathLike, *, flag: str | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """(train, val, manifest) from a folder; ValueError if an array does not match its recorded digest.

    The errors name the folder, preceded by ``flag`` (the option that named it) when given; a damaged
    manifest is reported as such, naming the file and what is wrong with it.
    """
    folder = Path(folder)
    _check_folder(folder, f"{flag} {folder}" if flag else str(folder))
    manifest, problem = _read_manifest(folder)
    if problem:
        raise ValueError(problem)
    if manifest is None:
        raise ValueError(f"{f'{flag} ' if flag else ''}{folder}: no data set manifest in the folder (mdmt data "
                         "writes one)")
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{folder}: data set format {manifest.get('format')!r}, this mdmt reads format {FORMAT}; "
                         "write it again with mdmt data")
    if manifest.get("complete") is False:
        raise ValueError(f"{folder}: the data set was not completely written (interrupted); run mdmt data again")
    arrays = {}
    for name, rows in (("train", manifest["num_train"]), ("val", manifest["num_val"])):
        path = folder / f"{name}.npy"
        if not (path.exists() or path.is_symlink()):
            raise ValueError(f"{path} is missing")
        regular_file(path, str(path))  # a FIFO or a device is never opened
        check_memory(f"reading {path}", 9 * path.stat().st_size, "is it the right folder?")
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{path} is not a readable .npy array ({' '.join(str(exc).split())})") from None
        if arr.shape != (rows, manifest["length"]) or arr.dtype.kind not in "iu":
            raise ValueError(f"{path} holds a {arr.dtype} array of shape {arr.shape}, its manifest says "
                             f"({rows}, {manifest['length']}) tokens")
        arrays[name] = arr.astype(np.int64)
        if digest(arrays[name]) != manifest["sha256"][name]:
            raise ValueError(f"{path} does not match the SHA-256 in its manifest")
    return arrays["train"], arrays["val"], manifest


@dataclass
class Stored:
    """A data set in a folder and what :func:`ensure` did to get it."""

    train: np.ndarray
    val: np.ndarray
    manifest: dict
    status: str  # "loaded (same spec, digests match)", "written", "regenerated: ...", "replaced ...: ..."


def _differences(manifest: dict, spec: DataSpec) -> str:
    return ", ".join(f"{k} {manifest.get(k)!r} here, {v!r} asked" for k, v in asdict(spec).items()
                     if manifest.get(k) != v)


def ensure(folder: str | os.PathLike, spec: DataSpec, language=None, *, force: bool = False) -> Stored:
    """The data set of ``spec`` in ``folder``: loaded if stored there intact, else (re)generated and saved.

    mdmt only replaces files it wrote for the same spec: a folder holding another spec's data set,
    or a train.npy, val.npy or manifest.json that is not an mdmt data set, is refused with an
    ``OutputError`` unless ``force``.  A damaged or half-written set of the same spec is
    regenerated, and the status says so.
    """
    folder = check_output_folder(folder)
    manifest, problem = _read_manifest(folder)
    if problem and not force:
        raise OutputError(f"{problem}; pass --force to replace the data set or choose another folder")
    ours = manifest is not None and manifest.get("format") == FORMAT
    if ours and not _differences(manifest, spec):
        try:
            train, val, manifest = load(folder)
            return Stored(train, val, manifest, "loaded (same spec, digests match)")
        except ResourceError:  # too large to read here is not damage: never regenerate over it
            raise
        except (ValueError, OSError) as exc:
            status = f"regenerated: {' '.join(str(exc).split())}"
    elif ours:
        diff = _differences(manifest, spec)
        if not force:
            raise OutputError(f"{folder} holds a data set of another spec ({diff}); pass --force to replace it "
                              "or choose another folder")
        status = f"replaced a data set of another spec ({diff}) (--force)"
    else:
        present = [f for f in FILES if (folder / f).exists()]
        if present and not force:
            raise OutputError(f"{folder / present[0]} exists and is not part of an mdmt data set; pass --force to "
                              "overwrite it or choose another folder")
        status = f"written (over {', '.join(present)}: --force)" if present else "written"
        if problem:
            status += f" ({problem})"
    lang = spec.build_language() if language is None else language
    train, val = generate(spec, lang)
    save(folder, spec, train, val, lang.n_symbols)
    return Stored(train, val, read_manifest(folder), status)


def load_or_create(folder: str | os.PathLike, spec: DataSpec, language=None, *,
                   force: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(train, val) of :func:`ensure`."""
    stored = ensure(folder, spec, language, force=force)
    return stored.train, stored.val


def spec_of(manifest: dict) -> DataSpec:
    """The DataSpec a manifest records (ValueError naming a missing field)."""
    missing = [f for f in DataSpec.__dataclass_fields__ if f not in manifest]
    if missing:
        raise ValueError(f"data set manifest lacks {missing[0]!r}")
    return DataSpec(**{f: manifest[f] for f in DataSpec.__dataclass_fields__})


def verify(folder: str | os.PathLike, *, flag: str | None = None) -> dict:
    """Check a stored set: digests match, and regenerating from its manifest gives the same arrays bit for bit.

    Returns the manifest; raises ValueError naming what differs (``flag``: as in :func:`load`).
    """
    train, val, manifest = load(folder, flag=flag)
    try:
        spec = spec_of(manifest)
    except ValueError as exc:
        raise ValueError(f"{Path(folder) / 'manifest.json'}: {exc}") from None
    lang = spec.build_language()
    if manifest.get("vocab_size") != lang.n_symbols:
        raise ValueError(f"{folder}: vocab_size {manifest.get('vocab_size')} in the manifest, the language has {lang.n_symbols}")
    train2, val2 = generate(spec, lang)
    for name, a, b in (("train", train, train2), ("val", val, val2)):
        if a.shape != b.shape or not np.array_equal(a, b):
            raise ValueError(f"{Path(folder) / (name + '.npy')} differs from the set regenerated from its manifest")
    return manifest
