"""Seeded training and validation sets sampled from a language (Section 5.1, "Tasks and Datasets").

A data set is a folder holding ``train.npy`` and ``val.npy`` (uint8 or int32 tokens, shape
(n, L)) and ``manifest.json`` (language SPEC, seed, sizes, vocabulary size and a SHA-256 of
each array).  Everything is a function of (language, seed, sizes, L): the train and
validation sets are drawn by ``language.sample`` from two independent child seeds of
``np.random.SeedSequence(seed)``, so a deleted or mismatched folder is regenerated bit for bit.

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

from mdmt.constructions.languages.spec import canonical_spec, interval_length_of, language_from_spec
from mdmt.constructions.validation import positive_int

FORMAT = 2


def check_length(spec: str, length: int) -> None:
    """For ``interval:l``, L must be a multiple of l (the counterexample's intervals)."""
    l = interval_length_of(spec)
    if l is not None and length % l:
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
    lang = spec.build_language() if language is None else language
    s_train, s_val = np.random.SeedSequence(spec.seed).spawn(2)
    train = lang.sample(spec.num_train, spec.length, np.random.default_rng(s_train))
    val = lang.sample(spec.num_val, spec.length, np.random.default_rng(s_val))
    return np.asarray(train, dtype=np.int64), np.asarray(val, dtype=np.int64)


def _store_dtype(V: int):
    return np.uint8 if V <= 256 else np.int32


def save(folder: str | os.PathLike, spec: DataSpec, train: np.ndarray, val: np.ndarray, vocab_size: int) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dt = _store_dtype(vocab_size)
    np.save(folder / "train.npy", train.astype(dt))
    np.save(folder / "val.npy", val.astype(dt))
    manifest = {"format": FORMAT, **asdict(spec), "vocab_size": vocab_size,
                "sha256": {"train": digest(train.astype(np.int64)), "val": digest(val.astype(np.int64))}}
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    os.replace(tmp, folder / "manifest.json")
    return folder


def read_manifest(folder: str | os.PathLike) -> dict | None:
    path = Path(folder) / "manifest.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None


def load(folder: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, dict]:
    """(train, val, manifest) from a folder; ValueError if an array does not match its recorded digest."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise ValueError(f"no data set manifest in {folder}")
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{folder}: data set format {manifest.get('format')!r}, this mdmt reads format {FORMAT}; "
                         "write it again with mdmt data")
    train = np.load(folder / "train.npy").astype(np.int64)
    val = np.load(folder / "val.npy").astype(np.int64)
    for name, arr in (("train", train), ("val", val)):
        if digest(arr) != manifest["sha256"][name]:
            raise ValueError(f"{folder / (name + '.npy')} does not match the SHA-256 in its manifest")
    return train, val, manifest


def load_or_create(folder: str | os.PathLike, spec: DataSpec, language=None) -> tuple[np.ndarray, np.ndarray]:
    """Load the data set in ``folder`` if its manifest matches ``spec``, else (re)generate and save it."""
    manifest = read_manifest(folder)
    if manifest is not None and manifest.get("format") == FORMAT and all(manifest.get(k) == v for k, v in asdict(spec).items()):
        try:
            train, val, _ = load(folder)
            return train, val
        except (ValueError, OSError):
            pass  # corrupted: regenerate below
    lang = spec.build_language() if language is None else language
    train, val = generate(spec, lang)
    save(folder, spec, train, val, lang.n_symbols)
    return train, val


def spec_of(manifest: dict) -> DataSpec:
    """The DataSpec a manifest records."""
    return DataSpec(**{f: manifest[f] for f in DataSpec.__dataclass_fields__})


def verify(folder: str | os.PathLike) -> dict:
    """Check a stored set: digests match, and regenerating from its manifest gives the same arrays bit for bit.

    Returns the manifest; raises ValueError naming what differs.
    """
    train, val, manifest = load(folder)
    spec = spec_of(manifest)
    lang = spec.build_language()
    if manifest.get("vocab_size") != lang.n_symbols:
        raise ValueError(f"{folder}: vocab_size {manifest.get('vocab_size')} in the manifest, the language has {lang.n_symbols}")
    train2, val2 = generate(spec, lang)
    for name, a, b in (("train", train, train2), ("val", val, val2)):
        if a.shape != b.shape or not np.array_equal(a, b):
            raise ValueError(f"{Path(folder) / (name + '.npy')} differs from the set regenerated from its manifest")
    return manifest
