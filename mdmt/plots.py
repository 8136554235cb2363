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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar, cast

COLUMN_WIDTH = 3.4  # inches: one column of a two-column paper
PAGE_WIDTH = 7.0  # inches: the text width of a two-column paper
STYLE = {"font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7,
         "ytick.labelsize": 7, "figure.titlesize": 9.5, "legend.framealpha": 0.9, "axes.grid": True,
         "grid.alpha": 0.3, "lines.linewidth": 1.2, "svg.hashsalt": "mdmt"}
FORMATS = ("png", "pdf", "svg")
RELATIVE_FLOOR = 1e-12  # see rounding_floor
ZERO_LABEL = "exact 0 (below the float64 rounding floor)"


@contextmanager
def _style():
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def _figure(width: float, height: float):
    from mdmt.figure import Figure  # matplotlib's, shown as an image at the end of a notebook cell

    return Figure(figsize=(width, height), layout="constrained", style=STYLE)


_Draw = TypeVar("_Draw", bound=Callable[..., Any])


def _reads_result(draw: _Draw) -> _Draw:
    """A figure function that refuses a malformed result with one ``ValueError`` naming what is missing or wrong
    (a result of another command, a hand-edited or damaged file), never a ``KeyError`` from inside the drawing."""
    name = draw.__name__
    many = name == "atlas_figure"  # the one figure that also takes a list of results

    @functools.wraps(draw)
    def checked(result, *args, **kwargs):
        if not (isinstance(result, Mapping) or (many and isinstance(result, Sequence)
                                                and not isinstance(result, (str, bytes)))):
            raise TypeError(f"{name}: expected a result (a mapping{' or a list of them' if many else ''}), "
                            f"got {type(result).__name__}")
        try:
            return draw(result, *args, **kwargs)
        except KeyError as exc:
            raise ValueError(f"{name}: the result has no {exc.args[0]!r} (is it the result of the command "
                             "that draws this figure?)") from None
        except (TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"{name}: malformed result ({exc})") from None

    return cast(_Draw, checked)


def rounding_floor(scale: float) -> float:
    """The largest value float64 arithmetic cannot tell from 0 in a quantity made of terms of size ``scale``.

    An exact law's KL or correlation is a sum of terms no larger than the entropy of the law; in
    float64 its rounding error stays below 1e-12 times that scale (for the sizes an exact law
    enumerates), so a value below ``1e-12 * max(1, scale)`` is drawn as an exact zero.
    """
    return RELATIVE_FLOOR * max(1.0, abs(float(scale)))


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def _log2_axis(ax, values, axis: str = "x") -> None:
    """A base-2 log axis whose ticks are the given values, written as plain integers."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = sorted({v for v in values if v and v > 0})
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    target.set_major_locator(FixedLocator(ticks))
    target.set_minor_locator(NullLocator())
    if axis == "x":
        ax.set_xticks(ticks, [str(t) for t in ticks], rotation=45 if len(ticks) > 6 else 0)
    else:
        ax.set_yticks(ticks, [str(t) for t in ticks])


def _short(spec: str) -> str:
    """A language SPEC in words for a title: ``preset:2gram-ter:0`` -> ``2gram-ter``."""
    if spec.startswith("preset:"):
        name = spec[len("preset:"):]
        return name[:-2] if name.endswith(":0") else name
    if spec.startswith("interval:"):
        return f"interval HMM, l = {spec.split(':', 1)[1]}"
    return Path(spec).stem if ("/" in spec or spec.endswith(".json")) else spec


def _colours(keys: Iterable) -> dict:
    import matplotlib

    palette = [matplotlib.colormaps["tab10"](i) for i in range(10)] + \
              [matplotlib.colormaps["Dark2"](i) for i in range(8)]
    return {k: palette[i % len(palette)] for i, k in enumerate(dict.fromkeys(keys))}


MARKERS = "osD^v<>phX*"  # one per series, so that series lying on each other stay visible


def _markers(keys: Iterable) -> dict:
    return {k: MARKERS[i % len(MARKERS)] for i, k in enumerate(dict.fromkeys(keys))}


def _collect_legend(fig_or_sub, axes, loc: str = "outside lower center", ncol: int = 4):
    """One legend for the series of ``axes`` (one entry per label), outside the panels -- below them, or
    beside them for ``loc="outside right center"`` -- so that it never covers data; in at most ``ncol``
    columns, fewer where the legend would be wider than the figure (a legend cut at the figure's edge hides
    its entries).  Returns the legend, or None when no series has a label."""
    handles: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if not handles:
        return None
    room = fig_or_sub.bbox.width if "right" not in loc and "left" not in loc else fig_or_sub.bbox.height
    side = "width" if "right" not in loc and "left" not in loc else "height"
    for n in range(max(1, min(ncol, len(handles))), 0, -1):
        legend = fig_or_sub.legend(list(handles.values()), list(handles), loc=loc, ncol=n)
        if n == 1 or getattr(legend.get_window_extent(), side) <= 0.98 * room:
            return legend
        legend.remove()
    return None


def _line(ax, xs, ys, **kw):
    """``ax.plot`` of a curve that may hold one point: a lone point gets a marker (a line through one point
    draws nothing, and its legend entry would name an invisible series)."""
    pts = [(x, y) for x, y in zip(xs, ys) if _finite(x) and _finite(y)]
    if len(pts) < 2 and kw.get("marker") in (None, "", "None", "none"):
        kw.update(marker="D", ms=3.5)
    return ax.plot(list(xs), list(ys), **kw)


def _not_reached(ax, xs, label: str, colour) -> None:
    """Upward arrows on the panel's upper edge at ``xs``: the target was not reached within the swept N."""
    if xs:
        ax.scatter(xs, [1.0] * len(xs), marker="$\\uparrow$", s=90, color=colour, transform=ax.get_xaxis_transform(),
                   clip_on=False, zorder=5, label=label)


# ------------------------------------------------------------------------------------------------ curve

@_reads_result
def curve_ter_figure(result: Mapping[str, Any]):
    """The (C4) chain bound on KL(q || p_N)/L against N for each L, with Theorem 4.2's target and step count.

    ``result``: what :func:`mdmt.bounds.curves.ter_curve` returns (``mdmt curve ter --json``).
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
    where there are several).  ``result``: :func:`mdmt.bounds.curves.ser_curve`."""
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

#: (row key, legend label) of each atlas bar: the exact KL and the bounds of :mod:`mdmt.bounds.atlas`, each
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


# ------------------------------------------------------------------------------------------------ figure 1

TER_TARGET_WORDS = "TER gap ≤ {target:g} nats/token"
SER_TARGET_WORDS = "SER ≤ {target:g}"


def _metric(role: str, targets) -> tuple[str, float]:
    """(row key, target) of a role: from the run's target records, else Figure 1's defaults."""
    for t in targets:
        if t["role"] == role:
            return t["metric"], t["target"]
    from mdmt.defaults import target_metric

    return target_metric(role)


def _errorbar(ax, rows, key, **kw):
    import numpy as np

    y = np.array([r[key] for r in rows], dtype=float)
    lo = np.array([r.get(key + "_lo", r[key]) for r in rows], dtype=float)
    hi = np.array([r.get(key + "_hi", r[key]) for r in rows], dtype=float)
    ax.errorbar([r["N"] for r in rows], y, yerr=np.maximum(np.vstack([y - lo, hi - y]), 0), capsize=1.5, **kw)


def _steps_panel(ax, role: str, ter_label: str, title: str, steps) -> None:
    """The axes of a Figure 1 panel against N: a TER panel's label, or SER in [0, 1]; the title; N on log2."""
    if role == "ter":
        ax.set_ylabel(ter_label)
    else:
        ax.set_ylabel("SER")
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(title)
    _log2_axis(ax, steps)
    ax.set_xlabel("sampling steps N")


def _languages(rows, role):
    return list(dict.fromkeys(r["language"] for r in rows if r["role"] == role))


def _lengths_words(lengths) -> str:
    Ls = sorted(set(lengths))
    return ", ".join(str(L) for L in Ls) if len(Ls) <= 4 else f"{Ls[0]}, {Ls[1]}, …, {Ls[-1]}"


def _figure1_who(rows, model: str, lengths: bool = True) -> str:
    """The samplers that Figure 1 ``rows`` hold, in words for a title, with their lengths: e.g. "oracle MDM
    at L = 64, 128; tiny networks (MDM, AR) at L = 64" (never a sampler or a length the rows lack)."""
    parts = []
    oracle = [r["L"] for r in rows if r["kind"] == "oracle"]
    if oracle:
        parts.append("oracle MDM" + (f" at L = {_lengths_words(oracle)}" if lengths else ""))
    nets = tuple(k for k in ("mdm", "ar") if any(r["kind"] == k for r in rows))
    if nets:
        what = {("mdm",): f"{model} MDM", ("ar",): f"{model} AR model",
                ("mdm", "ar"): f"{model} networks (MDM, AR)"}[nets]
        Ls = [r["L"] for r in rows if r["kind"] != "oracle"]
        parts.append(what + (f" at L = {_lengths_words(Ls)}" if lengths else ""))
    return ("; " if lengths else " and ").join(parts[::-1] if not lengths else parts)


def _figure1_drawn(rows, key_of_role) -> list:
    """The rows of a Figure 1 result with a finite value to draw (``key_of_role[row["role"]]``)."""
    return [r for r in rows if r.get("role") in key_of_role and _finite(r.get(key_of_role[r["role"]]))]


@_reads_result
def figure1_figure(result: Mapping[str, Any]):
    """Figure 1, gap view: the TER gap (top row, one panel per TER language) and the SER (middle row) of samples
    against the sampling steps N -- the oracle MDM at every length, the trained MDM at its training length,
    the AR model at N = L -- and the smallest N reaching the target against L (bottom row).

    ``result``: what :meth:`mdmt.empirical.experiments.Figure1.run` returns (``figure1.json``).
    """
    targets = result.get("targets", [])
    rows = _figure1_drawn(result["rows"], {role: _metric(role, targets)[0] for role in ("ter", "ser")})
    if not rows and not targets:
        raise ValueError("figure1_figure: the result holds no point to draw")
    ter, ser = _languages(rows, "ter"), _languages(rows, "ser")
    lengths = sorted({r["L"] for r in rows if r["kind"] == "oracle"})
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    colour = {L: cmap(0.1 + 0.75 * i / max(1, len(lengths) - 1)) for i, L in enumerate(lengths)}
    bands = [(names, role) for names, role in ((ter, "ter"), (ser, "ser")) if names]
    roles_with_targets = [role for role in ("ter", "ser") if any(t["role"] == role and t["kind"] == "oracle"
                                                                  for t in targets)]
    cols = max([len(n) for n, _ in bands] + [1])
    with _style():
        fig = _figure(max(PAGE_WIDTH, 2.4 * cols), 2.6 * (len(bands) + bool(roles_with_targets)) + 0.4)
        subs = fig.subfigures(len(bands) + bool(roles_with_targets), 1, squeeze=False)[:, 0]
        for sub, (names, role) in zip(subs, bands):
            key, target = _metric(role, targets)
            axes = sub.subplots(1, len(names), squeeze=False)[0]
            for ax, name in zip(axes, names):
                rs = [r for r in rows if r["language"] == name]
                for L in lengths:
                    pts = sorted((r for r in rs if r["kind"] == "oracle" and r["L"] == L and _finite(r[key])),
                                 key=lambda r: r["N"])
                    if pts:
                        _errorbar(ax, pts, key, color=colour[L], marker="o", ms=2.5, lw=1.1,
                                  label=f"oracle MDM, L = {L}")
                        ex = [(r["N"], r["ser_exact_oracle"]) for r in pts if r.get("ser_exact_oracle") is not None]
                        if ex:
                            _line(ax, *zip(*ex), color=colour[L], ls=":", lw=2, alpha=0.9,
                                  label="exact oracle SER 1 − ρ^(L/l) (dotted)")
                mdm = sorted((r for r in rs if r["kind"] == "mdm" and _finite(r[key])), key=lambda r: r["N"])
                if mdm:
                    _errorbar(ax, mdm, key, color="k", marker="s", ms=3, lw=1.0, ls="--",
                              label=f"trained MDM, L = {mdm[0]['L']}")
                    lb = [(r["N"], r["ser_lower_bound"]) for r in mdm if r.get("ser_lower_bound") is not None]
                    if lb:
                        _line(ax, *zip(*lb), color="tab:red", ls="--", lw=1,
                              label="Theorem 4.4 at the trained MDM's measured ε (estimate)")
                for r in rs:
                    if r["kind"] == "ar" and _finite(r[key]):
                        _errorbar(ax, [r], key, color="tab:red", marker="*", ms=8, ls="none",
                                  label=f"AR (KV cache), N = L = {r['L']}")
                ax.axhline(target, color="0.4", lw=0.8, ls="-.",
                           label=("target " + (TER_TARGET_WORDS if role == "ter" else SER_TARGET_WORDS)
                                  ).format(target=target))
                if role == "ter":
                    ax.axhline(0.0, color="0.6", lw=0.6)
                elif all(r["ser"] == 0 for r in rs):
                    ax.text(0.5, 0.5, "SER = 0 at every point:\nevery sample lies in the support",
                            transform=ax.transAxes, ha="center", va="center", bbox=dict(facecolor="white", edgecolor="0.6"))
                _steps_panel(ax, role, "TER gap (nats/token)", f"{_short(name)}: "
                             + ("TER gap against N" if role == "ter" else "SER against N"), [r["N"] for r in rs])
            _collect_legend(sub, axes)
        if roles_with_targets:
            sub = subs[-1]
            axes = sub.subplots(1, len(roles_with_targets), squeeze=False)[0]
            for ax, role in zip(axes, roles_with_targets):
                _figure1_targets(ax, [t for t in targets if t["role"] == role and t["kind"] == "oracle"], role)
            _collect_legend(sub, axes, ncol=3)  # below the panels: their curves fill every corner
        what = " and ".join(w for w, names in (("TER gap", ter), ("SER", ser)) if names) or "Steps to the targets"
        fig.suptitle(f"{what} against sampling steps N\n"
                     f"{_figure1_who(rows, result.get('config', {}).get('model', 'tiny'))}")
    return fig


def _figure1_targets(ax, recs, role) -> None:
    """The smallest swept N reaching the target against L per language; arrows: not reached within the sweep."""
    from matplotlib.ticker import FuncFormatter

    names = list(dict.fromkeys(t["language"] for t in recs))
    markers = "osD^v<>"
    for k, name in enumerate(names):
        rs = sorted((t for t in recs if t["language"] == name), key=lambda t: t["L"])
        got = [(t["L"], t["smallest_N"]) for t in rs if t["smallest_N"] is not None]
        if got:
            ax.plot(*zip(*got), marker=markers[k % len(markers)], ms=3, color=f"C{k}",
                    label=f"{_short(name)}: Monte Carlo (swept N)")
        miss = [t for t in rs if t["smallest_N"] is None]
        _not_reached(ax, [t["L"] for t in miss],
                     f"{_short(name)}: not reached by N = {miss[0]['largest_N_swept']}" if miss else "", f"C{k}")
        ex = [(t["L"], t["exact_N"]) for t in rs if t.get("exact_N") is not None]
        if ex:
            _line(ax, *zip(*ex), ls=":" if role == "ser" else "--", lw=1.6, color=f"C{k}",
                  label=f"{_short(name)}: {rs[0]['exact_what']}")
    _log2_axis(ax, [t["L"] for t in recs] or [64])
    ax.set_yscale("log", base=2)
    values = [v for t in recs for v in (t["smallest_N"], t.get("exact_N"), t["largest_N_swept"]) if v]
    ax.set_ylim(max(0.7, min(values or [1]) / 2), 1.6 * max(values or [2]))  # set: a panel reaching no target has one
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("smallest N reaching the target")
    key, target = _metric(role, recs)
    ax.set_title("oracle MDM: steps to " + (TER_TARGET_WORDS if role == "ter" else SER_TARGET_WORDS).format(
        target=target), pad=9)  # above the arrows on the upper edge



@_reads_result
def figure1_paper_figure(result: Mapping[str, Any]):
    """Figure 1 in the paper's axes (Section 5): generative perplexity against N for each TER language and
    SER against N for each SER language, at the networks' training length: the trained MDM and the oracle
    MDM as curves with 95% intervals, the AR model (KV cache, N = L) as a horizontal line with its band,
    and the language's true perplexity exp(H/L) dotted.  ``result``: ``figure1.json``.

    The figure draws what the result holds: the length is the networks' training length where networks
    were run, else the configured training length if the oracle ran at it, else the smallest length the
    oracle ran at; a panel per language with a point at that length; the title names the samplers drawn.
    """
    keys = {"ter": "gen_perplexity", "ser": "ser"}
    rows = _figure1_drawn(result["rows"], keys)
    if not rows:
        raise ValueError("figure1_paper_figure: the result holds no point to draw")
    config = result.get("config", {})
    nets = sorted({r["L"] for r in rows if r["kind"] != "oracle"})
    Ls = nets or sorted({r["L"] for r in rows})
    L0 = config.get("length") if config.get("length") in Ls else Ls[0]
    rows = [r for r in rows if r["L"] == L0]
    ter, ser = _languages(rows, "ter"), _languages(rows, "ser")
    panels = [(n, "ter") for n in ter] + [(n, "ser") for n in ser]
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    true_perplexity = {r["language"]: r["true_perplexity"] for r in result["rows"]
                       if r.get("L") == L0 and _finite(r.get("true_perplexity"))}
    with _style():
        fig = _figure(max(PAGE_WIDTH, 2.4 * cols), 2.3 * nrows + 0.8)
        axes = fig.subplots(nrows, cols, squeeze=False).ravel()
        for ax in axes[len(panels):]:
            fig.delaxes(ax)
        for ax, (name, role) in zip(axes, panels):
            key = keys[role]
            rs = [r for r in rows if r["language"] == name]
            for kind, style in (("oracle", dict(color="tab:blue", marker="o", ms=2.5, label="oracle MDM")),
                                ("mdm", dict(color="k", marker="s", ms=3, ls="--", label="trained MDM"))):
                pts = sorted((r for r in rs if r["kind"] == kind), key=lambda r: r["N"])
                if pts:
                    _errorbar(ax, pts, key, lw=1.1, **style)
            for r in rs:
                if r["kind"] == "ar":
                    ax.axhline(r[key], color="tab:red", lw=1.2, label="AR model (N = L)")
                    if _finite(r.get(key + "_lo")) and _finite(r.get(key + "_hi")):
                        ax.axhspan(r[key + "_lo"], r[key + "_hi"], color="tab:red", alpha=0.12, lw=0)
            if role == "ter" and name in true_perplexity:
                ax.axhline(true_perplexity[name], color="0.3", ls=":", lw=1, label="true perplexity exp(H/L)")
            _steps_panel(ax, role, "generative perplexity", f"{_short(name)}: "
                         + ("perplexity" if role == "ter" else "SER") + f", L = {L0}", [r["N"] for r in rs])
        _collect_legend(fig, axes[:len(panels)])
        fig.suptitle(f"Figure 1 (paper's axes), L = {L0}: "
                     f"{_figure1_who(rows, config.get('model', 'tiny'), lengths=False)}")
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
    (:func:`mdmt.constructions.outputs.figure_written_by` recognises it); vector formats carry no date, so a
    figure of the same numbers is the same file."""
    from mdmt.constructions.outputs import save_figure

    with _style():  # svg.hashsalt: the ids an SVG file draws with are the same on every run
        return save_figure(fig, path, software, format=figure_format(path), dpi=dpi)


# ------------------------------------------------------------------------------------------------ the files

#: The figures a command writes beside each result JSON: (file stem, the tag it is saved under, the function).
FIGURES = {"atlas.json": (("atlas", "atlas", atlas_figure),),
           "adaptive_ser.json": (("adaptive_ser", "adaptive ser", adaptive_ser_figure),),
           "adaptive_ter.json": (("adaptive_ter", "adaptive ter", adaptive_ter_figure),),
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
    :func:`mdmt.constructions.validation.regular_file`) of at most ``JSON_LIMIT`` bytes, UTF-8 JSON with no key
    given twice (:func:`~mdmt.constructions.validation.json_loads_unique`) holding an object.  Every failure is
    one ``ValueError`` naming the file."""
    from mdmt.constructions.outputs import JSON_LIMIT, describe_oserror
    from mdmt.constructions.resources import format_bytes
    from mdmt.constructions.validation import json_loads_unique, regular_file

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
    :func:`mdmt.constructions.outputs.figure_written_by`) is replaced only with ``force``."""
    return _save_all(_prepare(Path(path), fmt, force))


def _prepare(path: Path, fmt: str, force: bool) -> list:
    """(file, tag, figure) of every figure of the result ``path``, checked and drawn but not yet written."""
    from mdmt.constructions.outputs import check_output_file, figure_written_by

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
