"""Arguments and output shared by the subcommands: one grammar for every ``mdmt`` command.

The shared names mean the same thing everywhere (``mdmt/commands`` has a test that checks it):

==========================  ==============================================================
``--language SPEC``         a language: ``preset:NAME[:SEED]``, ``interval:l``, ``task:NAME[:PARAMS]`` or a file
``--length/-L``             the sequence length L
``--steps/-N``              sampling steps N (a comma-separated list where a command sweeps N)
``--train-steps``           optimizer steps of training
``--schedule SPEC``         ``linear``, ``cosine``, ``loglinear[:EPS]``, ``warmstart[:FIRST]`` or ``p1,p2,...``
``--model``                 the architecture of a network: ``tiny`` or ``paper``
``--num``                   how many sequences
``--seed``                  the random seed
``--out``                   where results are written (atomically; never over another output without ``--force``)
``--json``                  one JSON document on standard output instead of text
==========================  ==============================================================
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Callable

import numpy as np

MODELS = ("tiny", "paper")


# ----------------------------------------------------------------------------- shared arguments

def add_language(parser, required: bool = True, help_extra: str = "") -> None:
    parser.add_argument("--language", required=required, metavar="SPEC",
                        help="language: preset:NAME[:SEED] (Table 1), interval:l (the Theorem 4.4 counterexample), "
                             "task:NAME[:PARAMS] (docs/tasks.md) or a language file (.json/.npz)" + help_extra)


def add_length(parser, required: bool = True, default=None, help: str = "sequence length L") -> None:
    parser.add_argument("--length", "-L", type=integer, required=required, default=default, help=help)


def add_steps(parser, required: bool = True, default=None, many: bool = False) -> None:
    if many:
        parser.add_argument("--steps", "-N", required=required, default=default, metavar="N,N,...",
                            help="sampling steps N, comma-separated" + (f" (default {default})" if default else ""))
    else:
        parser.add_argument("--steps", "-N", type=integer, required=required, default=default, help="sampling steps N")


def add_schedule(parser, default: str = "linear") -> None:
    parser.add_argument("--schedule", default=default, metavar="SPEC",
                        help="masking schedule: linear, cosine, loglinear[:EPS], warmstart[:FIRST] (pi_1 = FIRST), "
                             f"or reveal probabilities p1,p2,... (default {default})")


def add_model(parser, default: str = "tiny") -> None:
    parser.add_argument("--model", choices=MODELS, default=default,
                        help=f"network architecture: tiny (CPU) or paper (Table 2, a GPU) (default {default})")


def add_num(parser, default: int, what: str = "sequences") -> None:
    parser.add_argument("--num", "-M", type=integer, default=default, help=f"number of {what} (default {default})")


def add_seed(parser, default: int = 0, what: str = "") -> None:
    parser.add_argument("--seed", type=seed_value, default=default, help=f"random seed{what} (default {default})")


INT64_MAX = 2**63 - 1
"""The largest integer an option takes: every count, length and seed fits a signed 64-bit integer."""


def jobs_value(text: str):
    """The ``type`` of ``--jobs`` where it may be ``auto``: the word, or an integer (:func:`integer`)."""
    return "auto" if text.strip().lower() == "auto" else integer(text)


def integer(text: str) -> int:
    """The ``type`` of integer options: an integer that fits 64 bits, so that no later NumPy
    conversion can wrap it around (argparse names the flag in its error, with the value as given)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"{text.strip()} is out of range (mdmt takes integers of at most "
                                         f"{INT64_MAX})")
    return value


def seed_value(text: str) -> int:
    """The ``type`` of every ``--seed``: an integer in 0..2**63-1 (argparse names the flag in its error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..{INT64_MAX}, got {text.strip()}")
    return value


def add_json(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def add_scheduler(parser) -> None:
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run the parts on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT; "
                             "default: the MDMT_SCHEDULER environment variable, else --jobs local processes)")


def scheduler_of(args) -> str | None:
    """The checked ``--scheduler`` (or ``MDMT_SCHEDULER``): an error names the flag and the value."""
    from mdmt.sweep import scheduler_address

    try:
        return scheduler_address(args.scheduler)
    except ValueError as exc:
        flag = "--scheduler" if args.scheduler is not None else "MDMT_SCHEDULER"
        raise ValueError(f"{flag} {str(exc).partition(' ')[2]}") from None


def add_format(parser) -> None:
    from mdmt.plots import FORMATS  # a light module: matplotlib is imported when a figure is drawn

    parser.add_argument("--format", choices=FORMATS, default="png",
                        help="file format of the figures: png, or pdf / svg (vector, for papers) (default png)")


def figure_file(path) -> str:
    """A --plot path, checked to end in .png, .pdf or .svg (the format of the figure written there)."""
    from mdmt.plots import figure_format

    try:
        figure_format(path, default="")
    except ValueError as exc:
        raise ValueError(f"--plot {exc}") from None
    return str(path)


def add_force(parser, outputs: str = "--out") -> None:
    parser.add_argument("--force", action="store_true",
                        help=f"overwrite an existing {outputs} that mdmt did not write for the same request")


# ----------------------------------------------------------------------------- parsing helpers

def load_language(spec: str, flag: str = "--language", *, normalise: bool = False):
    """The language a SPEC names (``preset:NAME[:SEED]``, ``interval:l``, ``task:NAME[:PARAMS]`` or a file); an
    error names ``flag`` and the SPEC as given (``--language x.json: invalid JSON (...)``), keeping its class.
    ``normalise`` divides an explicit law's weights by their sum (``mdmt language --normalise``)."""
    from mdmt.constructions.languages.spec import language_from_spec

    try:
        return language_from_spec(spec, normalise=normalise)
    except FileNotFoundError as exc:
        from pathlib import Path

        text = str(spec).strip()
        link = " (a symbolic link to a missing target)" if Path(text).is_symlink() else ""
        raise FileNotFoundError(exc.errno, f"{flag} {text}: no such file{link}") from None
    except ValueError as exc:
        from mdmt.runtime.resources import LimitSettingError

        if isinstance(exc, LimitSettingError):  # the environment's limit, named as such: not the language's fault
            raise
        msg, text = str(exc), str(spec).strip()
        if msg.startswith("language "):  # language 'SPEC': ... (the grammar's errors)
            exc.args = (f"{flag} {msg[len('language '):]}",)
        elif text and msg.startswith(text):  # FILE: ... (a language file's errors)
            exc.args = (f"{flag} {msg}",)
        else:
            exc.args = (f"{flag} {text or repr(spec)}: {msg}",)
        raise


_SCHEDULE_BYTES_PER_STEP = 48  # the time grid, alpha on it, pi and their temporaries (float64)


def check_interval_multiple(spec, L: int, flag: str = "--length") -> None:
    """For ``interval:l``, L must be a multiple of l (Theorem 4.4's sequences are whole intervals): the error names
    the flag, L and the language."""
    from mdmt.constructions.languages.spec import interval_misfit

    try:
        l = interval_misfit(str(spec).strip(), L)
    except ValueError:  # not a SPEC this grammar reads: its loader names it
        return
    if l is not None:
        near = " or ".join(str(v) for v in (L - L % l, L - L % l + l) if v >= l)
        raise ValueError(f"{flag} {L} is not a multiple of the interval length l = {l} of --language {spec} "
                         f"(use L = {near})")


def schedule_pi(spec: str, N: int) -> np.ndarray:
    """Reveal probabilities pi (N,) of a schedule SPEC: the CLI's one boundary from schedule to pi.

    ``--steps N`` is checked against the memory limit first, naming the flag (N + 1 grid points of a
    huge N would otherwise wrap around in NumPy)."""
    from mdmt.runtime.resources import check_memory
    from mdmt.constructions.reverse.schedules import reveal_probabilities

    if isinstance(N, int) and N >= 1:
        check_memory(f"--steps {N}: the schedule's {N} reveal probabilities", _SCHEDULE_BYTES_PER_STEP * N,
                     "use fewer --steps")
    return reveal_probabilities(spec.strip() if isinstance(spec, str) else spec, N)


def int_list(flag: str, text: str, minimum: int = 1) -> list[int]:
    """A non-empty comma-separated list of integers >= minimum; errors name the flag."""
    try:
        vals = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag} must be comma-separated integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"{flag} must list at least one integer, got {text!r}")
    bad = [v for v in vals if v < minimum]
    if bad:
        raise ValueError(f"{flag} values must be >= {minimum}, got {bad[0]}")
    big = [v for v in vals if v > INT64_MAX]
    if big:
        raise ValueError(f"{flag} value {big[0]} is out of range (mdmt takes integers of at most {INT64_MAX})")
    return vals


def names(text: str) -> tuple:
    """A comma-separated list of names (empty entries dropped); it may be empty."""
    return tuple(v.strip() for v in str(text).split(",") if v.strip())


def name_list(flag: str, text: str, what: str = "name") -> tuple:
    """A non-empty comma-separated list of names; an empty one is refused naming the flag."""
    vals = names(text)
    if not vals:
        raise ValueError(f"{flag} must list at least one {what}, got {text!r}")
    return vals


def at_least(flag: str, value, minimum: int = 1):
    """Refuse an integer option below ``minimum`` with a message naming the flag."""
    if value is not None and value < minimum:
        raise ValueError(f"{flag} must be an integer >= {minimum}, got {value}")
    return value


# ----------------------------------------------------------------------------- output

INFINITIES = {math.inf: "inf", -math.inf: "-inf"}


def clean(obj):
    """Make an object JSON-safe: numpy scalars/arrays to Python; an infinity to the string "inf" (or "-inf"), which
    ``float()`` reads back; NaN -- undefined, or not applicable -- to null, so the two never look alike."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else INFINITIES.get(f)
    return obj


def with_provenance(obj):
    """``obj`` with the provenance block of this command (:func:`mdmt.runtime.provenance.record`) under ``"provenance"``.

    A dict gets the key (unless it already has one); a list is wrapped as ``{"rows": [...], "provenance": ...}``.
    """
    from mdmt.runtime.provenance import record

    if isinstance(obj, dict):
        return obj if "provenance" in obj else {**obj, "provenance": record()}
    return {"rows": obj, "provenance": record()}


def print_json(obj) -> None:
    """Print exactly one JSON document, with the provenance block (inf and nan become null)."""
    json.dump(clean(with_provenance(obj)), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def column_format(values) -> Callable:
    """One number format for a column of a text table (every float in the column written alike).

    Fixed-point when the column's nonzero magnitudes lie in [1e-4, 1e6) within a factor 1e5 of each other,
    with the decimals that give its largest value 6 significant digits; otherwise scientific notation with
    6 significant digits.  Integers stay integers, infinities are ``inf``/``-inf``, None is ``-``.
    """
    flat = [x for v in values for x in (v if isinstance(v, (list, tuple, np.ndarray)) else [v])]
    mags = [abs(float(v)) for v in flat if isinstance(v, (float, np.floating)) and math.isfinite(v) and v != 0]
    if mags and min(mags) >= 1e-4 and max(mags) < 1e6 and max(mags) < 1e5 * min(mags):
        decimals = max(0, 5 - math.floor(math.log10(max(mags))))
        number = f"{{:.{decimals}f}}".format
    elif mags:
        number = "{:.5e}".format
    else:
        number = "{:g}".format

    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, (bool, np.bool_)):
            return str(bool(v))
        if isinstance(v, (list, tuple, np.ndarray)):
            return "[" + ", ".join(fmt(x) for x in v) + "]"
        if isinstance(v, (float, np.floating)):
            v = float(v)
            return number(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
        return str(v)

    return fmt


def format_table(header: list[str], rows: list[list], left: tuple = (), marks: list[list] | None = None) -> str:
    """A plain aligned text table: each column's numbers in one format (:func:`column_format`), lists element
    by element, None as ``-``; ``marks`` (rows of strings) are appended to the cells (a bound that fails: ``!``).

    Columns are right-aligned, those whose indices are in ``left`` left-aligned.
    """
    columns = list(zip(*rows)) if rows else []
    formats = [column_format(col) for col in columns]
    cells = [[formats[i](v) + (marks[j][i] if marks else "") for i, v in enumerate(r)] for j, r in enumerate(rows)]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = lambda r: "  ".join((c.ljust(w) if i in left else c.rjust(w))  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in cells])


def print_quantities(out: dict, as_json: bool) -> None:
    """A flat dict of results: JSON, or a two-column table."""
    if as_json:
        print_json(out)
    else:
        print(format_table(["quantity", "value"], [[k, v] for k, v in out.items()], left=(1,)))


def learning_error_line(le: dict) -> str:
    """One line for a measured learning error (mdmt.constructions.reverse.learning.learning_error's dict)."""
    return (f"learning error (nats/token): mean {le['mean']:.4g} (95% CI {le['ci'][0]:.4g}..{le['ci'][1]:.4g}), "
            f"q90 {le['q90']:.4g}, q99 {le['q99']:.4g}, max {le['max']:.4g}")
