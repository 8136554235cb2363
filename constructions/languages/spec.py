"""One grammar for naming a language, shared by every command and by stored data sets and checkpoints.

A language SPEC is one of

``preset:NAME`` or ``preset:NAME:SEED``
    a Table 1 language drawn with ``SEED`` (default 0); ``NAME`` is a key of
    :data:`~mdmt.constructions.languages.random_languages.PRESETS` (``2gram``, ``3gram-ter``, ``hmm``, ...);
``task:NAME`` or ``task:NAME:PARAMS``
    a task of the parallel-decoding literature as an explicit law (:mod:`~mdmt.constructions.languages.tasks`,
    docs/tasks.md): ``task:shuffle:n=8``, ``task:latin:4``, ``task:copy:n=4,V=50000``;
``interval:l``
    the Theorem 4.4 counterexample HMM with interval length ``l`` (Example C.7, Note C.8;
    |V| = 2^(l-1), ``interval:5`` is the paper's 16-symbol HMM);
a file path
    a language file written by ``mdmt language`` or ``mdmt counterexample`` (JSON, or ``.npz``).

:func:`canonical_spec` writes a spec in its one normal form (``preset:2gram`` becomes
``preset:2gram:0``), so two spellings of the same language compare equal in manifests and
checkpoints (``task:latin:4`` becomes ``task:latin:order=4``).
"""

from __future__ import annotations

from pathlib import Path

from mdmt.constructions.types import Language

from .interval import MAX_INTERVAL_LENGTH, interval_hmm
from .io import load_language
from .random_languages import PRESETS, preset
from .tasks import TASKS, canonical_task, parse_task, task_language

FORMS = "preset:NAME[:SEED], interval:l, task:NAME[:PARAMS] or a language file"


def _parse(spec) -> tuple[str, tuple]:
    """(kind, args) of a spec: ("preset", (name, seed)), ("interval", (l,)), ("task", (name, params)) or
    ("file", (path,)); ``params`` is the dict of every parameter of the task, defaults filled in."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"language {spec!r}: expected {FORMS}")
    spec = spec.strip()
    head, sep, rest = spec.partition(":")
    if sep and head == "preset":
        parts = rest.split(":")
        if len(parts) > 2 or not parts[0]:
            raise ValueError(f"language {spec!r}: expected preset:NAME or preset:NAME:SEED")
        if parts[0] not in PRESETS:
            hint = f" (the counterexample is interval:{parts[0][9:]})" if parts[0].startswith("interval-") else ""
            raise ValueError(f"language {spec!r}: unknown preset {parts[0]!r}{hint}; valid presets: {', '.join(PRESETS)}")
        seed = 0
        if len(parts) == 2:
            if not parts[1].isdigit():
                raise ValueError(f"language {spec!r}: seed {parts[1]!r} is not a non-negative integer")
            seed = int(parts[1])
        return "preset", (parts[0], seed)
    if sep and head == "interval":
        if not rest.isdigit():
            raise ValueError(f"language {spec!r}: the interval length l after 'interval:' must be an integer")
        l = int(rest)
        if not 2 <= l <= MAX_INTERVAL_LENGTH:
            raise ValueError(f"language {spec!r}: interval length l = {l} must be in 2..{MAX_INTERVAL_LENGTH}")
        return "interval", (l,)
    if sep and head == "task":
        name, _, params = rest.partition(":")
        if not name:
            raise ValueError(f"language {spec!r}: expected task:NAME or task:NAME:PARAMS; valid tasks: {', '.join(TASKS)}")
        return "task", (name, parse_task(name, params, where=spec))
    if not (Path(spec).exists() or Path(spec).is_symlink()):  # a symlink loop is reported when it is read
        hint = ""
        if spec in PRESETS:
            hint = f" (did you mean preset:{spec}?)"
        elif spec.split(":")[0] in TASKS:
            hint = f" (did you mean task:{spec}?)"
        elif spec.startswith("interval-") and spec[9:].isdigit():
            hint = f" (did you mean interval:{spec[9:]}?)"
        raise ValueError(f"language {spec!r}: no such file{hint}; expected {FORMS}")
    return "file", (spec,)


def language_from_spec(spec: str, *, normalise: bool = False) -> Language:
    """The language a SPEC names (module docstring); ``ValueError`` naming the spec otherwise.

    ``normalise``: a file holding an explicit law whose weights do not sum to 1 has them divided by their sum
    (instead of being refused); other languages are normalised by construction."""
    kind, args = _parse(spec)
    if kind == "preset":
        return preset(*args)
    if kind == "interval":
        return interval_hmm(*args)
    if kind == "task":
        return task_language(args[0], **args[1])
    return load_language(args[0], normalise=normalise)


def canonical_spec(spec: str) -> str:
    """The normal form of a spec: ``preset:NAME:SEED``, ``interval:l``, ``task:NAME:k1=v1,...`` (every parameter,
    in the task's order) or the file path as given."""
    kind, args = _parse(spec)
    if kind == "preset":
        return f"preset:{args[0]}:{args[1]}"
    if kind == "interval":
        return f"interval:{args[0]}"
    if kind == "task":
        return canonical_task(*args)
    return args[0]


def interval_length_of(spec: str) -> int | None:
    """l when the spec names the interval counterexample (``interval:l``), else None."""
    kind, args = _parse(spec)
    return args[0] if kind == "interval" else None


def interval_misfit(spec: str, L: int) -> int | None:
    """l when the spec names ``interval:l`` and L is not a multiple of l (the counterexample's sequences are whole
    intervals), else None."""
    l = interval_length_of(spec)
    return l if l is not None and L % l else None
