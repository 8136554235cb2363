"""The style, layout and legend helpers that every figure of :mod:`mdmt.plots` shares: the figure at a column
or page width in mdmt's 8-point style, the check of a result a figure function reads, colours and markers per
series, log2 axes of N or L, lone points with a marker, arrows for targets not reached, and one legend outside
the panels (the conventions listed in :mod:`mdmt.plots`).  Importing it imports no matplotlib."""

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
RELATIVE_FLOOR = 1e-12  # see rounding_floor


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
