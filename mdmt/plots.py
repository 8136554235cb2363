"""Every figure mdmt draws, as a function returning a matplotlib ``Figure``; the commands save what these return.

Each function takes the result a command computes (the dict that ``--json`` prints, or the
object of the matching library function) and draws it without pyplot's global state, so a
notebook gets the same figure as the command line; the figure (a :class:`mdmt.figure.Figure`)
shows itself as an image at the end of a notebook cell, with no ``%matplotlib`` magic::

    from mdmt.bounds import ter_curve
    from mdmt.plots import curve_ter_figure
    fig = curve_ter_figure(ter_curve(3, 0.05, [256, 1024], 8))
    fig.savefig("ter.pdf")

=========================  ==================================================  ========================
function                   draws                                               command
=========================  ==================================================  ========================
:func:`curve_ter_figure`   (C4) chain bound against N (Theorem 4.2)            ``mdmt curve ter --plot``
:func:`curve_ser_figure`   exact oracle SER with Theorems 4.3 / 4.4            ``mdmt curve ser --plot``
:func:`atlas_figure`       exact KL and the competing bounds, per process      ``mdmt atlas``
:func:`adaptive_ser_figure`  SER of unmasking rules and their cost against L   ``mdmt adaptive ser``
:func:`adaptive_ter_figure`  NFE reaching a KL/L target against L              ``mdmt adaptive ter``
:func:`samplers_figure`    network calls reaching an SER target against L      ``mdmt samplers``
:func:`figure1_figure`     TER gap and SER against N (Figure 1, gap view)      ``mdmt figure1``
:func:`figure1_paper_figure`  perplexity and SER against N (the paper's axes)  ``mdmt figure1``
=========================  ==================================================  ========================

Conventions (paper-ready at a column width): 8-point text, legends listing only the series drawn,
outside the panels (below or beside them, never over data) and no wider than the figure, every entry
showing its line, marker or patch; a series of one point drawn with a marker; titles in words naming only
what is drawn; no empty panels; bars inside their panel's frame.  A value that float64 cannot tell from 0 -- below
:func:`rounding_floor` -- is drawn as an exact zero: a hollow marker on the lower edge of a log axis,
named in the legend.  A target that a sweep never reaches is drawn as an upward arrow on the upper
edge of its panel, never as a point at the largest N swept.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

# The shared helpers (mdmt/plot_style.py) and Figure 1's figures (mdmt/figure1_plots.py), importable from here as
# they always were.
from mdmt.figure1_plots import SER_TARGET_WORDS as SER_TARGET_WORDS
from mdmt.figure1_plots import TER_TARGET_WORDS as TER_TARGET_WORDS
from mdmt.figure1_plots import _errorbar as _errorbar
from mdmt.figure1_plots import _figure1_drawn as _figure1_drawn
from mdmt.figure1_plots import _figure1_targets as _figure1_targets
from mdmt.figure1_plots import _figure1_who as _figure1_who
from mdmt.figure1_plots import _languages as _languages
from mdmt.figure1_plots import _lengths_words as _lengths_words
from mdmt.figure1_plots import _metric as _metric
from mdmt.figure1_plots import _steps_panel as _steps_panel
from mdmt.figure1_plots import figure1_figure as figure1_figure
from mdmt.figure1_plots import figure1_paper_figure as figure1_paper_figure
from mdmt.plot_style import COLUMN_WIDTH as COLUMN_WIDTH
from mdmt.plot_style import MARKERS as MARKERS
from mdmt.plot_style import PAGE_WIDTH as PAGE_WIDTH
from mdmt.plot_style import RELATIVE_FLOOR as RELATIVE_FLOOR
from mdmt.plot_style import STYLE as STYLE
from mdmt.plot_style import _collect_legend as _collect_legend
from mdmt.plot_style import _colours as _colours
from mdmt.plot_style import _Draw as _Draw
from mdmt.plot_style import _figure as _figure
from mdmt.plot_style import _finite as _finite
from mdmt.plot_style import _line as _line
from mdmt.plot_style import _log2_axis as _log2_axis
from mdmt.plot_style import _markers as _markers
from mdmt.plot_style import _not_reached as _not_reached
from mdmt.plot_style import _reads_result as _reads_result
from mdmt.plot_style import _short as _short
from mdmt.plot_style import _style as _style
from mdmt.plot_style import rounding_floor as rounding_floor

FORMATS = ("png", "pdf", "svg")
ZERO_LABEL = "exact 0 (below the float64 rounding floor)"


# ------------------------------------------------------------------------------------------------ curve

@_reads_result
def curve_ter_figure(result: Mapping[str, Any]):
    """The (C4) chain bound on KL(q || p_N)/L against N for each L, with Theorem 4.2's target and step count.

    ``result``: what :func:`mdmt.bounds.studies.curves.ter_curve` returns (``mdmt curve ter --json``).
    """
    with _style():
        fig = _figure(COLUMN_WIDTH * 1.25, 3.6)
        ax = fig.add_subplot()
        Ls = sorted({r["L"] for r in result["rows"]})
        colour = _colours(Ls)
        for L in Ls:
            rs = [r for r in result["rows"] if r["L"] == L and _finite(r["chain_bound"]) and r["chain_bound"] > 0]
            if rs:
                ax.loglog([r["N"] for r in rs], [r["chain_bound"] for r in rs], marker="o", ms=2.5, color=colour[L],
                          label=f"chain bound, L = {L}")
        ax.axhline(result["target"], color="k", ls="--", lw=1, label="target ε_learning + 4ε log|V|")
        n42 = result.get("theorem42_steps")
        if _finite(n42):
            ax.axvline(n42, color="tab:red", ls=":", lw=1.2, label=f"Theorem 4.2 step count N = {n42}")
        ax.set_xlabel("sampling steps N")
        ax.set_ylabel("bound on KL(q‖p_N)/L (nats/token)")
        ax.set_title(f"TER bound: {result['n']}-gram, |V| = {result['vocab']}, ε = {result['eps']:g}, "
                     f"{result['schedule']} schedule")
        _collect_legend(fig, [ax], ncol=2)  # below the panel: the curves fill its corners
    return fig


@_reads_result
def curve_ser_figure(result: Mapping[str, Any]):
    """The exact oracle SER 1 - rho^(L/l) on the interval HMM against C = N/L, with Theorem 4.3's upper and
    Theorem 4.4's lower bound and the critical constants, for each length of the result (one colour per length
    where there are several).  ``result``: :func:`mdmt.bounds.studies.curves.ser_curve`."""
    with _style():
        fig = _figure(COLUMN_WIDTH * 1.25, 3.7)
        ax = fig.add_subplot()
        lengths = sorted({r["L"] for r in result["rows"]})
        critical = {int(k): v for k, v in result["critical_c"].items()}  # JSON keys are strings
        several = len(lengths) > 1
        for k, L in enumerate(lengths):
            rs = [r for r in result["rows"] if r["L"] == L]
            x = [r["C"] for r in rs]
            at = f", L = {L}" if several else ""
            colour = (lambda c: f"C{k}") if several else (lambda c: c)
            ax.semilogx(x, [r["theorem43_upper"] for r in rs], marker="^", ms=3, lw=1, ls="--",
                        color=colour("tab:green"), label=f"Theorem 4.3 upper bound (oracle){at}")
            ax.semilogx(x, [r["theorem44_lower"] for r in rs], marker="s", ms=2.5, lw=1, ls="--",
                        color=colour("tab:orange"),
                        label=f"Theorem 4.4 lower bound (ε = {result['eps_learning']:.3g}){at}", zorder=3)
            ax.semilogx(x, [r["oracle_ser"] for r in rs], marker="o", ms=5, mfc="none", lw=2, color=colour("tab:blue"),
                        alpha=0.8, label=f"exact oracle SER 1 − ρ^(L/l){at}", zorder=2)
            ax.axvline(critical[L], color=colour("k"), ls="--", lw=1,
                       label=f"critical C = {critical[L]:.3g} (exact){at}")
        ax.axvline(result["theorem44_constant"], color="tab:red", ls=":", lw=1.2,
                   label=f"Theorem 4.4 C₀ = {result['theorem44_constant']:.3g}")
        ax.axhline(0.5, color="0.5", ls=":", lw=0.8)
        ax.set_xlabel("C = N / L (linear schedule)")
        ax.set_ylabel("sequence error rate")
        ax.set_title(f"SER against steps: interval HMM, l = {result['interval_length']}, "
                     f"L = {', '.join(str(L) for L in lengths)}")
        _collect_legend(fig, [ax], ncol=2)  # below the panel: the upper bound runs along its top
    return fig


# ------------------------------------------------------------------------------------------------ atlas

#: (row key, legend label) of each atlas bar: the exact KL and the bounds of :mod:`mdmt.bounds.studies.atlas`, each
#: label naming the side of the exact KL the bound claims (``ATLAS_BOUNDS``).
ATLAS_BARS = (("kl", "exact KL(q‖p)"), ("assignment_kl", "E[log q/p_traj] (C1), upper bound"),
              ("chain_bound", "chain bound (C4), upper bound"), ("li_cai", "Li & Cai, upper bound"),
              ("pb_lower", "ParallelBench, lower bound"))
#: row key of a bound -> (the side of KL(q‖p) it claims, the row key saying whether it holds on the instance).
ATLAS_BOUNDS = {"assignment_kl": ("upper", "assignment_kl_holds"), "chain_bound": ("upper", "chain_bound_holds"),
                "li_cai": ("upper", "li_cai_holds"), "pb_lower": ("lower", "pb_holds")}
LOWER_HATCH = "////"  # the bars of lower bounds are hatched, those of upper bounds plain
FAILS_LABEL = "bound fails here (upper < exact KL, or lower > exact KL)"
MAX_ATLAS_PANELS = 12  # a larger sweep draws its first instances (its CSV and JSON hold them all)


@_reads_result
def atlas_figure(results: Sequence[Mapping[str, Any]] | Mapping[str, Any]):
    """Per instance, a bar per process and quantity: the exact KL and the bounds that apply (log axis).

    ``results``: one atlas result (``mdmt atlas --json``) or a list of them (a sweep's ``instances``).
    The legend names each bound's side (upper or lower bound on KL(q‖p)) and lower bounds' bars are
    hatched; a bound that fails on the instance (its ``*_holds`` is false: an upper bound below the exact
    KL, a lower bound above it) carries a red cross on its bar.  A quantity that does not apply to a
    process (None) is not drawn; one below the rounding floor of the instance (:func:`rounding_floor` of
    its entropy) is drawn as an exact zero on the axis.
    """
    import numpy as np

    items: Sequence[Mapping[str, Any]] = (results.get("instances", [results]) if isinstance(results, Mapping)
                                          else results)
    shown = list(items)[:MAX_ATLAS_PANELS]
    if not shown:
        raise ValueError("atlas_figure: no instance to draw")
    cols = min(2, len(shown))
    nrows = -(-len(shown) // cols)
    width = max(COLUMN_WIDTH * 1.4, 0.42 * max(len(r["rows"]) for r in shown))
    with _style():
        fig = _figure(width * cols, 2.9 * nrows + 0.5)
        colour = _colours(key for key, _ in ATLAS_BARS)
        for k, res in enumerate(shown):
            ax = fig.add_subplot(nrows, cols, k + 1)
            rows = res["rows"]
            inst = res["instance"]
            floor = rounding_floor(inst.get("entropy", 1.0))
            x = np.arange(len(rows))
            keys = [(key, label) for key, label in ATLAS_BARS if any(r.get(key) is not None for r in rows)]
            w = 0.8 / max(1, len(keys))
            drawn = [r[key] for key, _ in keys for r in rows if _finite(r.get(key)) and r[key] > floor]
            bottom = min(drawn) / 4 if drawn else floor
            zeros_x, fails = [], []
            for b, (key, label) in enumerate(keys):
                xs = x + (b - (len(keys) - 1) / 2) * w
                vals = [r.get(key) for r in rows]
                big = [(xi, v) for xi, v in zip(xs, vals) if _finite(v) and v > floor]
                lower = ATLAS_BOUNDS.get(key, ("",))[0] == "lower"
                if big:
                    ax.bar([p for p, _ in big], [v - bottom for _, v in big], w, bottom=bottom, color=colour[key],
                           label=label, **(dict(hatch=LOWER_HATCH, edgecolor="white", lw=0) if lower else {}))
                zeros_x += [xi for xi, v in zip(xs, vals) if _finite(v) and v <= floor]
                if key in ATLAS_BOUNDS:
                    holds = ATLAS_BOUNDS[key][1]
                    fails += [(xi, max(v, bottom)) for xi, v, r in zip(xs, vals, rows)
                              if _finite(v) and r.get(holds) is False]
            if zeros_x:
                ax.scatter(zeros_x, [bottom] * len(zeros_x), marker="o", s=14, facecolors="none", edgecolors="k",
                           lw=0.8, zorder=4, clip_on=False, label=ZERO_LABEL)
            if fails:
                ax.scatter(*zip(*fails), marker="X", s=30, color="red", edgecolors="k", lw=0.5, zorder=5,
                           clip_on=False, label=FAILS_LABEL)
            ax.set_yscale("log")
            ax.set_ylim(bottom, 2.5 * max(drawn + [bottom]))  # room above the tallest bar and its cross
            ax.set_xlim(-0.6, len(rows) - 0.4)
            ax.set_xticks(x, [r["process"] for r in rows], rotation=35, ha="right")
            ax.set_ylabel("nats")
            lang = _short(inst.get("language", "")) if inst.get("language") else "language"
            ax.set_title(f"{lang}: L = {inst['length']}, N = {inst['steps']}\n"
                         f"TC = {inst['total_correlation']:.3g}, DTC = {inst['dual_total_correlation']:.3g} nats")
        _collect_legend(fig, fig.axes, ncol=3)  # below the panels: never over a bar
    return fig


# ------------------------------------------------------------------------------------------------ adaptive

@_reads_result
def adaptive_ser_figure(result: Mapping[str, Any]):
    """``mdmt adaptive ser``: per interval length l, the oracle SER of each unmasking rule against NFE (top) and
    the NFE of the smallest N reaching the SER target against L (bottom; arrows: not reached)."""
    curves, mins = result["curves"], result["min_steps"]
    ls = sorted({r["l"] for r in curves} | {r["l"] for r in mins})
    specs = list(dict.fromkeys(r["policy"] for r in curves + mins))
    colour, marker = _colours(specs), _markers(specs)
    with _style():
        fig = _figure(max(COLUMN_WIDTH, 2.9 * len(ls)), 6.4)
        axes = fig.subplots(2, len(ls), squeeze=False)
        for c, l in enumerate(ls):
            ax = axes[0, c]
            for spec in specs:
                rs = [r for r in curves if r["l"] == l and r["policy"] == spec]
                if not rs:
                    continue
                label = "i.i.d. (Theorem 4.4 setting), exact" if spec.startswith("iid") else spec
                if len(rs) == 1 and rs[0]["N"] is None:
                    ax.plot([rs[0]["nfe"]], [rs[0]["ser"]], "*", ms=8, color=colour[spec], label=label)
                else:
                    ax.plot([r["nfe"] for r in rs], [r["ser"] for r in rs], marker=marker[spec], ms=3.5, mfc="none",
                            color=colour[spec], label=label)
                if spec.startswith("iid"):
                    _line(ax, [r["nfe"] for r in rs], [r["theorem44_lower"] for r in rs], color="k", ls="--", lw=1,
                          label="Theorem 4.4 lower bound, ε = 0")
            ax.axhline(result["target"], color="0.5", ls=":", lw=1, label=f"target SER = {result['target']:g}")
            ax.set_xscale("log")
            ax.set_xlabel("NFE (N; E[NFE] for i.i.d.)")
            ax.set_ylabel("SER, oracle denoiser")
            ax.set_title(f"interval HMM, l = {l}, L = {result['curve_length']}")
            ax = axes[1, c]
            Ls = sorted({r["L"] for r in mins if r["l"] == l})
            for spec in specs:
                rs = [r for r in mins if r["l"] == l and r["policy"] == spec]
                got = [r for r in rs if r["reached"]]
                if got:
                    ax.plot([r["L"] for r in got], [r["nfe"] for r in got], marker=marker[spec], ms=3.5, mfc="none",
                            color=colour[spec])
                _not_reached(ax, [r["L"] for r in rs if not r["reached"]], "_nolegend_", colour[spec])
            if any(not r["reached"] for r in mins if r["l"] == l):  # one legend entry, in black
                ax.scatter([], [], marker="$\\uparrow$", s=90, color="k",
                           label="not reached within the sweep (arrow at the top, the rule's colour)")
            if Ls:
                _line(ax, Ls, Ls, color="k", ls=":", lw=1, label="NFE = L")
                _log2_axis(ax, Ls)
            ax.set_yscale("log")
            ax.set_xlabel("sequence length L")
            ax.set_ylabel(f"NFE reaching SER ≤ {result['target']:g}")
            ax.set_title(f"l = {l}: cost of SER ≤ {result['target']:g}", pad=9)  # above the arrows on the edge
        _collect_legend(fig, axes.ravel(), ncol=3)  # below the panels: beside them, the figure is too wide
    return fig


@_reads_result
def adaptive_ter_figure(result: Mapping[str, Any]):
    """``mdmt adaptive ter``: per unmasking rule, the mean NFE at the smallest N whose KL/L (upper confidence
    limit) meets the target, against L; arrows mark lengths where a rule never met it."""
    rows = result["rows"]
    specs = list(dict.fromkeys(r["policy"] for r in rows))
    colour, marker = _colours(specs), _markers(specs)
    Ls = sorted({r["L"] for r in rows})
    with _style():
        fig = _figure(COLUMN_WIDTH * 1.5, 2.9)
        ax = fig.add_subplot()
        for p in specs:
            rs = [r for r in rows if r["policy"] == p]
            ok = [r for r in rs if r["nfe"] is not None and r["ci"] is not None and r["ci"][1] <= result["target"]]
            if ok:
                ax.plot([r["L"] for r in ok], [r["nfe"] for r in ok], marker=marker[p], ms=4, mfc="none",
                        color=colour[p], label=p)
            _not_reached(ax, [r["L"] for r in rs if r not in ok], f"{p}: not reached", colour[p])
        _line(ax, Ls, Ls, color="k", ls=":", lw=1, label="NFE = L")
        ax.set_yscale("log")
        _log2_axis(ax, Ls)
        ax.set_xlabel("sequence length L")
        ax.set_ylabel(f"mean NFE reaching KL/L ≤ {result['target']:g}")
        ax.set_title(f"{_short(result['language'])}: steps to a KL/L target", pad=9)  # above the arrows
        _collect_legend(fig, [ax], loc="outside right center", ncol=1)  # beside the panel, not over the curves
    return fig


def samplers_figure(result: Mapping[str, Any]):
    """``mdmt samplers``: per language (per task, its sizes gathered), the network calls each sampler needs for
    SER <= target against L (log-log),
    beside NFE = L and ceil(log2(L + 1)); arrows mark lengths where a sampler never reached the target."""
    rows = [{**r, "language": r.get("panel", r["language"])} for r in result["rows"]]  # a task's sizes: one panel
    langs = list(dict.fromkeys(r["language"] for r in rows))
    specs = list(dict.fromkeys(r["sampler"] for r in rows))
    colour, marker = _colours(specs), _markers(specs)
    with _style():
        ncol = min(2, len(langs))
        nrow = -(-len(langs) // ncol)
        fig = _figure(min(PAGE_WIDTH, COLUMN_WIDTH * (1.1 * ncol + 0.6)), 2.4 * nrow + 0.5)
        axes = list(fig.subplots(nrow, ncol, squeeze=False).ravel())
        for ax in axes[len(langs):]:
            ax.remove()
        axes = axes[:len(langs)]
        for ax, lang in zip(axes, langs):
            Ls = sorted({r["L"] for r in rows if r["language"] == lang})
            for p in specs:
                rs = [r for r in rows if r["language"] == lang and r["sampler"] == p]
                ok = [r for r in rs if r["reached"]]
                if ok:
                    ax.plot([r["L"] for r in ok], [r["calls"] for r in ok], marker=marker[p], ms=4, mfc="none",
                            color=colour[p], label=p)
                _not_reached(ax, [r["L"] for r in rs if not r["reached"]], f"{p}: not reached", colour[p])
            _line(ax, Ls, Ls, color="k", ls=":", lw=1, label="calls = L")
            _line(ax, Ls, [math.ceil(math.log2(L + 1)) for L in Ls], color="0.5", ls="--", lw=1,
                  label="ceil(log2(L+1))")
            ax.set_yscale("log")
            _log2_axis(ax, Ls)
            ax.set_xlabel("sequence length L")
            ax.set_title(_short(lang), pad=9)
        for ax in axes[::ncol]:
            ax.set_ylabel(f"calls for SER ≤ {result['target']:g}")
        _collect_legend(fig, list(axes), loc="outside right center", ncol=1)
    return fig


# ------------------------------------------------------------------------------------------------ saving

def figure_format(path, default: str = "png") -> str:
    """The format a figure file's suffix names (png, pdf or svg); an error names the path otherwise."""
    suffix = Path(path).suffix.lower().lstrip(".")
    fmt = suffix or default
    if fmt not in FORMATS:
        raise ValueError(f"{path}: a figure is written as {', '.join('.' + f for f in FORMATS)}; got .{suffix}")
    return fmt


def save(fig, path, software: str, dpi: int = 200):
    """Write ``fig`` to ``path`` (png, pdf or svg by its suffix) atomically, tagged as mdmt's ``software``
    (:func:`mdmt.runtime.outputs.figure_written_by` recognises it); vector formats carry no date, so a
    figure of the same numbers is the same file."""
    from mdmt.runtime.outputs import save_figure

    with _style():  # svg.hashsalt: the ids an SVG file draws with are the same on every run
        return save_figure(fig, path, software, format=figure_format(path), dpi=dpi)


# ------------------------------------------------------------------------------------------------ the files

#: The figures a command writes beside each result JSON: (file stem, the tag it is saved under, the function).
FIGURES = {"atlas.json": (("atlas", "atlas", atlas_figure),),
           "adaptive_ser.json": (("adaptive_ser", "adaptive ser", adaptive_ser_figure),),
           "adaptive_ter.json": (("adaptive_ter", "adaptive ter", adaptive_ter_figure),),
           "samplers.json": (("samplers", "samplers", samplers_figure),),
           "figure1.json": (("figure1", "figure1", figure1_figure),
                            ("figure1_paper", "figure1_paper", figure1_paper_figure))}


def figure_files(source: str, fmt: str = "png") -> dict[str, str]:
    """{file name: tag} of the figures written beside the result file ``source`` (a key of ``FIGURES``)."""
    return {f"{stem}.{fmt}": tag for stem, tag, _ in FIGURES[source]}


def save_figures(result: Mapping[str, Any], folder, source: str, fmt: str = "png") -> list[Path]:
    """Draw and save, in ``folder``, every figure of the result that the command writes as ``source``."""
    return [save(draw(result), Path(folder) / f"{stem}.{fmt}", tag) for stem, tag, draw in FIGURES[source]]


PROG = "python -m mdmt.plots"


def read_result(path) -> dict:
    """The result a command wrote as ``path`` (atlas.json, adaptive_ser.json, adaptive_ter.json, figure1.json),
    read with the checks of every file mdmt reads: a regular file (never a FIFO, device, folder or link loop,
    :func:`mdmt.runtime.validation.regular_file`) of at most ``JSON_LIMIT`` bytes, UTF-8 JSON with no key
    given twice (:func:`~mdmt.runtime.validation.json_loads_unique`) holding an object.  Every failure is
    one ``ValueError`` naming the file."""
    from mdmt.runtime.outputs import JSON_LIMIT, describe_oserror
    from mdmt.runtime.resources import format_bytes
    from mdmt.runtime.validation import json_loads_unique, regular_file

    path = Path(path)
    if path.name not in FIGURES:
        raise ValueError(f"{path}: mdmt redraws {', '.join(FIGURES)}")
    if not (path.exists() or path.is_symlink()):
        raise ValueError(f"{path}: no such file")
    regular_file(path, str(path), "a result file")
    try:
        size = path.stat().st_size
        if size > JSON_LIMIT:
            raise ValueError(f"{path}: {format_bytes(size)} is larger than any result mdmt writes "
                             f"({format_bytes(JSON_LIMIT)} at most); is it the right file?")
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {describe_oserror(exc)}") from None
    try:
        doc = json_loads_unique(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text, so not a result mdmt wrote") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to be a result mdmt wrote") from None
    except ValueError as exc:  # json.JSONDecodeError, DuplicateKeyError
        raise ValueError(f"{path}: not a result mdmt wrote (damaged or truncated JSON: {exc})") from None
    if not isinstance(doc, dict) or not doc:
        what = "an empty object" if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
        raise ValueError(f"{path}: holds {what}, not a result of mdmt")
    return doc


def redraw(path, fmt: str = "png", force: bool = False) -> list[Path]:
    """Redraw the figures of a result JSON that a command wrote (atlas.json, adaptive_ser.json,
    adaptive_ter.json, figure1.json) next to it, from its numbers alone: the figures of a committed result
    re-made after a change of drawing, without recomputing it.  Returns the files written.

    Everything is checked before any file is written: the result (:func:`read_result`), each figure drawn, and
    each figure file -- one there that mdmt did not write as this figure (its tag,
    :func:`mdmt.runtime.outputs.figure_written_by`) is replaced only with ``force``."""
    return _save_all(_prepare(Path(path), fmt, force))


def _prepare(path: Path, fmt: str, force: bool) -> list:
    """(file, tag, figure) of every figure of the result ``path``, checked and drawn but not yet written."""
    from mdmt.runtime.outputs import check_output_file, figure_written_by

    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    result = read_result(path)
    files = [(path.parent / f"{stem}.{fmt}", tag, draw) for stem, tag, draw in FIGURES[path.name]]
    for file, tag, _ in files:
        check_output_file(file, force=force, same=functools.partial(figure_written_by, software=tag), flag="figure")
    try:
        return [(file, tag, draw(result)) for file, tag, draw in files]
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def _save_all(prepared: list) -> list[Path]:
    return [save(fig, file, tag) for file, tag, fig in prepared]


def main(argv=None) -> int:
    """``python -m mdmt.plots [--format pdf] [--force] RESULT.json ...``: :func:`redraw` each file.  Every file is
    read, checked and drawn before any figure is written; an error is one line ``python -m mdmt.plots: error:
    ...`` with exit status 2 and nothing written."""
    import argparse
    import os
    import sys

    from mdmt.cli import error_line

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            self.exit(2, f"{PROG}: error: {message}\n")

    parser = Parser(prog=PROG, description=(redraw.__doc__ or "").split("\n")[0], allow_abbrev=False)
    parser.add_argument("paths", nargs="+", metavar="RESULT.json")
    parser.add_argument("--format", choices=FORMATS, default="png")
    parser.add_argument("--force", action="store_true",
                        help="replace a figure file there that mdmt did not write as this figure")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        prepared = [p for path in args.paths for p in _prepare(Path(path), args.format, args.force)]
        written = _save_all(prepared)
    except (ValueError, OSError, OverflowError, MemoryError, RecursionError) as exc:
        if os.environ.get("MDMT_DEBUG") == "1":
            raise
        print(f"{PROG}: error: {error_line(exc)}", file=sys.stderr)
        return 2
    for f in written:
        print(f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
