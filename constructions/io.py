"""Saving and loading languages: versioned JSON, ``.npz``, and hmmlearn's ``CategoricalHMM``.

JSON form (human-readable; every command that takes a language accepts it)::

    {"format": "mdmt-language", "version": 1, "kind": "hmm",
     "initial": [...], "transition": [[...]], "emission": [[...]]}

Only ``kind`` and the arrays are required.  n-grams use ``"kind": "ngram"`` with
``"n"``, ``"initial"`` (law of the first n-1 tokens, flattened big-endian) and
``"transition"``.  Floats are written with ``repr`` precision, so a JSON round
trip is exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .hmm import HMM
from .ngram import NGram

FORMAT = "mdmt-language"
VERSION = 1


def language_to_dict(language) -> dict:
    if isinstance(language, NGram):
        body = {"kind": "ngram", "n": language.n, "initial": language.initial_.tolist(), "transition": language.transition_.tolist()}
    elif isinstance(language, HMM):
        body = {
            "kind": "hmm",
            "initial": language.startprob_.tolist(),
            "transition": language.transmat_.tolist(),
            "emission": language.emissionprob_.tolist(),
        }
    else:
        raise ValueError(f"cannot save a {type(language).__name__}: expected an HMM or an NGram")
    return {"format": FORMAT, "version": VERSION, **body}


def _require(d: dict, key: str, where: str):
    if key not in d:
        raise ValueError(f"{where}: missing key {key!r}")
    return d[key]


def language_from_dict(d: dict, where: str = "language"):
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    version = d.get("version", VERSION)
    if version != VERSION:
        raise ValueError(f"{where}: unsupported version {version!r} (this mdmt reads version {VERSION})")
    kind = _require(d, "kind", where)
    if kind == "hmm":
        return HMM(_require(d, "initial", where), _require(d, "transition", where), _require(d, "emission", where))
    if kind == "ngram":
        return NGram(_require(d, "n", where), _require(d, "initial", where), _require(d, "transition", where))
    raise ValueError(f"{where}: unknown kind {kind!r} (expected 'hmm' or 'ngram')")


def save_language(language, path) -> Path:
    """Write ``language`` to ``path``: ``.npz`` for NumPy's format, anything else JSON."""
    path = Path(path)
    d = language_to_dict(language)
    if path.suffix == ".npz":
        arrays = {k: np.asarray(v) for k, v in d.items() if isinstance(v, list)}
        meta = {k: v for k, v in d.items() if not isinstance(v, list)}
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    else:
        path.write_text(json.dumps(d, indent=1) + "\n")
    return path


def load_language(path):
    """Read a language written by :func:`save_language` (or any JSON of the documented form)."""
    path = Path(path)
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                d = json.loads(str(z["meta"])) if "meta" in z.files else {}
                d.update({k: z[k] for k in z.files if k != "meta"})
        except (OSError, ValueError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise ValueError(f"{path}: not a readable .npz language file ({exc})") from None
        if "n" in d:
            d["n"] = int(np.asarray(d["n"]))
        return language_from_dict(d, str(path))
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from None
    return language_from_dict(d, str(path))


def to_hmmlearn(language):
    """An equivalent ``hmmlearn.hmm.CategoricalHMM`` (n-grams are converted through their HMM form)."""
    try:
        from hmmlearn.hmm import CategoricalHMM
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("hmmlearn is not installed: pip install 'mdmt[peer]'") from exc
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
