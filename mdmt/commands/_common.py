"""Helpers shared by the subcommands: loading languages, JSON output, schedule arguments."""

from __future__ import annotations

import json
import math
import sys

import numpy as np


def load_language(spec: str):
    """A language from a JSON/.npz file, or ``preset:NAME[:SEED]`` for a Table 1 preset."""
    from constructions import load_language as _load
    from constructions.random_languages import preset

    if spec.startswith("preset:"):
        parts = spec.split(":")
        if len(parts) > 3:
            raise ValueError(f"language {spec!r}: expected preset:NAME or preset:NAME:SEED")
        seed = 0
        if len(parts) == 3:
            try:
                seed = int(parts[2])
            except ValueError:
                raise ValueError(f"language {spec!r}: seed {parts[2]!r} is not an integer") from None
        return preset(parts[1], seed)
    return _load(spec)


def _clean(obj):
    """Make an object JSON-safe: numpy scalars/arrays to Python, inf/nan to None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def print_json(obj) -> None:
    """Print exactly one JSON document (inf and nan become null)."""
    json.dump(_clean(obj), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def format_table(header: list[str], rows: list[list]) -> str:
    """A plain aligned text table."""

    def fmt(v):
        if isinstance(v, (float, np.floating)):
            v = float(v)
            if not math.isfinite(v):
                return str(v)
            return f"{v:.6g}"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in cells])


def add_schedule_arguments(parser) -> None:
    parser.add_argument(
        "--schedule",
        default="linear",
        help="masking schedule: linear, cosine, loglinear, warmstart, or an explicit reveal-probability "
        "vector pi as comma-separated numbers (default linear)",
    )
    parser.add_argument("--eps", type=float, default=None, help="parameter of the warmstart schedule (pi_1 = eps)")


def schedule_pi(args, N: int) -> np.ndarray:
    """The reveal probabilities pi (N,) named by --schedule/--eps (a name, or comma-separated numbers)."""
    from constructions.schedules import SCHEDULES, get_schedule, reveal_probabilities

    spec = args.schedule.strip()
    if spec in SCHEDULES:
        params = {} if args.eps is None else {"eps": args.eps}
        return get_schedule(spec, **params).reveal_probs(N)
    try:
        pi = np.array([float(v) for v in spec.split(",")])
    except ValueError:
        raise ValueError(f"--schedule {spec!r} is neither a schedule name ({', '.join(SCHEDULES)}) nor a list of numbers") from None
    return reveal_probabilities(pi, N)
