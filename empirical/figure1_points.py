"""The stored points of a Figure 1 run (:mod:`mdmt.empirical.experiments`): one JSON file per point under
``rows/``, written atomically and stamped with the SHA-256 of its content and the run's result settings
(:func:`point_stamp`), and read back only when the stamp, the content and the file's name agree
(:func:`read_point`), so that a resumed run neither recomputes a point it has nor takes one it did not compute."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from mdmt.runtime.outputs import write_text
from mdmt.runtime.validation import regular_file


def slug(spec: str) -> str:
    """A file-name-safe form of a language SPEC (``preset:2gram-ter:0`` -> ``preset_2gram-ter_0``)."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in spec)


def _plain(obj):
    """NumPy scalars and arrays to Python objects (infinities stay: an off-support sample has perplexity inf)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _write_json(path: Path, obj) -> None:
    """Atomic write; JSON with Python's Infinity/NaN literals (read back by ``json.loads``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(_plain(obj), indent=1) + "\n")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def row_path(out: Path, language: str, kind: str, L: int, N: int) -> Path:
    return out / "rows" / f"{slug(language)}__{kind}__L{L}__N{N}.json"


#: The key of a stored point that stamps it as mdmt's: the SHA-256 of the point and of the run's result settings.
POINT_STAMP = "mdmt_stamp"
_RECOMPUTE = "remove it to have the point computed again, or use another --out folder"


def point_stamp(row: dict, settings: dict) -> str:
    """The stamp of a point computed under ``settings`` (:meth:`Figure1Config.result_settings`): a point edited by
    hand, damaged, or computed with other settings does not carry the stamp of its content."""
    text = json.dumps({"point": _plain(row), "settings": _plain(settings)}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_point(path: Path, settings: dict) -> dict:
    """The point stored at ``path`` by a run with ``settings``, checked: a regular file (a folder, FIFO or device is
    never opened) holding complete JSON whose stamp matches its content, and whose language, kind, L and N are
    those of its name.  Anything else -- truncated, replaced, edited by hand, another run's -- is a ``ValueError``
    naming the file, so a resumed run never skips a point it cannot use nor takes a point it did not compute."""
    try:
        regular_file(path, f"the stored point {path}", "a point file")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, RecursionError) as exc:
        raise ValueError(f"cannot read the stored point {path} ({exc}); {_RECOMPUTE}") from None
    except ValueError as exc:
        if str(exc).startswith("the stored point"):
            raise ValueError(f"{exc}; {_RECOMPUTE}") from None
        raise ValueError(f"the stored point {path} is truncated or damaged (not JSON: {exc}); {_RECOMPUTE}") from None
    stamp = doc.get(POINT_STAMP) if isinstance(doc, dict) else None
    row = {k: v for k, v in doc.items() if k != POINT_STAMP} if isinstance(doc, dict) else None
    if row is None or stamp != point_stamp(row, settings):
        raise ValueError(f"the stored point {path} was not written by mdmt for this run (edited by hand, or "
                         f"computed with other settings: its {POINT_STAMP} does not match its content); {_RECOMPUTE}")
    try:
        own = row_path(path.parent.parent, row["language"], row["kind"], row["L"], row["N"]).name
    except (KeyError, TypeError):
        own = None
    if own != path.name:
        raise ValueError(f"the stored point {path} holds another point ({own}); {_RECOMPUTE}")
    return row
