"""mdmt.plots: every figure a command draws is a public function returning a Figure, drawn legibly and honestly.

Checked on every figure: no empty panel, a legend entry only for a series drawn, text no smaller than
5.5 pt once the figure is scaled to a page's text width; on the atlas, values below the rounding floor
drawn as exact zeros (never as bars on a log axis); on Figure 1, "not reached" as arrows on the upper
edge, the AR model as a horizontal line in the paper's axes; vector files identical when redrawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mdmt import plots
from mdmt.bounds.studies.atlas import atlas
from mdmt.bounds.studies.curves import ser_curve, ter_curve
from mdmt.cli import main
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.runtime.outputs import figure_written_by

ROOT = Path(__file__).resolve().parents[1]
FIGURE1 = ROOT / "docs" / "results" / "figure1_tiny" / "figure1.json"


def _drawn(ax) -> bool:
    return bool(ax.lines or ax.patches or ax.collections or ax.images)


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def check_figure(fig) -> None:
    """The conventions of mdmt.plots on one figure (module docstring of this file)."""
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure)
    axes = [ax for ax in fig.get_axes() if ax.get_visible()]
    assert axes and all(_drawn(ax) for ax in axes), "an empty panel"
    scale = min(1.0, plots.PAGE_WIDTH / fig.get_figwidth())
    small = [(t.get_text()[:30], t.get_fontsize()) for t in _texts(fig) if t.get_fontsize() * scale < 5.5]
    assert not small, f"text below 5.5 pt at the page width: {small[:5]}"
    for legend in [ax.get_legend() for ax in axes] + list(fig.legends):
        if legend is None:
            continue
        for text in legend.get_texts():
            assert text.get_text().strip()
    for ax in axes:
        drawn_labels = {a.get_label() for a in ax.lines + ax.patches + ax.collections + ax.containers}
        legend = ax.get_legend()
        if legend is not None:
            missing = [t.get_text() for t in legend.get_texts() if t.get_text() not in drawn_labels]
            assert not missing, f"legend entries for series not drawn: {missing}"


@pytest.mark.integration
def test_curve_figures_are_public_and_follow_the_conventions():
    ter = ter_curve(3, 0.05, [256, 1024], 8)
    fig = plots.curve_ter_figure(ter)
    check_figure(fig)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert f"Theorem 4.2 step count N = {ter['theorem42_steps']}" in labels
    check_figure(plots.curve_ser_figure(ser_curve(4, 64, 1 / 128)))


@pytest.mark.integration
def test_atlas_draws_values_below_the_rounding_floor_as_exact_zeros():
    res = atlas(language_from_spec("preset:hmm"), 4, 2, "iid,confidence,threshold:0.9,entropy-sum:1")
    res["instance"]["language"] = "preset:hmm"
    floor = plots.rounding_floor(res["instance"]["entropy"])
    tiny = [(r["process"], k) for r in res["rows"] for k, _ in plots.ATLAS_BARS
            if r.get(k) is not None and r[k] <= floor]
    assert tiny, "the instance has no value at the rounding floor: pick another"
    fig = plots.atlas_figure(res)
    check_figure(fig)
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert plots.ZERO_LABEL in labels
    assert "chain bound (C4)" not in labels  # an HMM: the n-gram chain bound applies to no process and is not drawn
    bottom = ax.get_ylim()[0]
    assert bottom > floor  # the log axis does not reach down into rounding noise
    for patch in ax.patches:
        assert patch.get_y() + patch.get_height() > floor
    zeros = [c for c in ax.collections if c.get_label() == plots.ZERO_LABEL][0]
    assert len(zeros.get_offsets()) == len(tiny)
    assert np.allclose(zeros.get_offsets()[:, 1], bottom)


def test_rounding_floor_by_hand():
    assert plots.rounding_floor(0.3) == 1e-12  # scales below 1 nat keep the absolute floor
    assert plots.rounding_floor(8.0) == pytest.approx(8e-12)


def _figure1():
    return json.loads(FIGURE1.read_text())


@pytest.mark.integration
def test_figure1_views_from_the_committed_run():
    res = _figure1()
    gap = plots.figure1_figure(res)
    check_figure(gap)
    paper = plots.figure1_paper_figure(res)
    check_figure(paper)
    n_panels = len({r["language"] for r in res["rows"]})
    assert len(paper.axes) == n_panels  # one panel per language, none empty
    # the AR model is a horizontal line at its value in each panel of the paper's axes
    for ax in paper.axes:
        title = ax.get_title()
        lang = next(r["language"] for r in res["rows"] if plots._short(r["language"]) == title.split(":")[0])
        ar = next(r for r in res["rows"] if r["language"] == lang and r["kind"] == "ar")
        key = "gen_perplexity" if ar["role"] == "ter" else "ser"
        lines = [ln for ln in ax.lines if ln.get_label() == "AR model (N = L)"]
        assert len(lines) == 1 and np.allclose(lines[0].get_ydata(), ar[key])


@pytest.mark.integration
def test_not_reached_is_an_arrow_on_the_upper_edge_never_a_point_at_the_largest_N():
    res = _figure1()
    missing = [t for t in res["targets"] if t["kind"] == "oracle" and t["smallest_N"] is None]
    if not missing:  # make one: the committed run reaches every target at some length
        t = next(t for t in res["targets"] if t["kind"] == "oracle")
        t["smallest_N"] = None
        missing = [t]
    fig = plots.figure1_figure(res)
    arrows = [c for ax in fig.axes for c in ax.collections if "not reached" in c.get_label()]
    assert arrows
    for c in arrows:
        assert np.allclose(c.get_offsets()[:, 1], 1.0)  # axes coordinates: the upper edge
        assert not c.get_clip_on()


@pytest.mark.integration
@pytest.mark.parametrize("fmt", ["pdf", "svg", "png"])
def test_saved_figures_are_tagged_and_vector_files_reproducible(tmp_path, fmt):
    ter = ter_curve(3, 0.05, [256], 8)
    a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
    plots.save(plots.curve_ter_figure(ter), a, "curve ter")
    plots.save(plots.curve_ter_figure(ter), b, "curve ter")
    assert figure_written_by(a, "curve ter") and not figure_written_by(a, "atlas")
    if fmt != "png":
        assert a.read_bytes() == b.read_bytes()
    with pytest.raises(ValueError, match=r"\.jpg"):
        plots.save(plots.curve_ter_figure(ter), tmp_path / "c.jpg", "curve ter")


@pytest.mark.integration
def test_commands_write_vector_figures(tmp_path, capsys):
    assert main(["curve", "ter", "--lengths", "64", "--steps", "8,64", "--plot", str(tmp_path / "t.svg")]) == 0
    assert figure_written_by(tmp_path / "t.svg", "curve ter")
    capsys.readouterr()
    assert main(["curve", "ter", "--lengths", "64", "--plot", str(tmp_path / "t.jpg")]) != 0
    err = capsys.readouterr().err
    assert err.startswith("mdmt curve: error: --plot ") and ".jpg" in err
    out = tmp_path / "atlas"
    assert main(["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--processes", "iid,confidence",
                 "--out", str(out), "--format", "pdf"]) == 0
    assert figure_written_by(out / "atlas.pdf", "atlas") and not (out / "atlas.png").exists()
    again = main(["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--processes", "iid,confidence",
                  "--out", str(out), "--format", "pdf"])
    assert again == 0  # its own figure is recognised and replaced


# ------------------------------------------------------------------ figures never draw what was not computed
#
# The layout checks below run on the drawn figure (Agg, display coordinates): every legend lies inside the
# figure (a legend cut at the edge hides its own entries) and off every data point, line and bar of every
# panel; every legend entry shows a line, a marker or a filled patch; every labelled line without markers has
# two points to join; every bar lies inside its panel's limits (a bar reaching the frame is cut by it).

RESULTS = ROOT / "docs" / "results"
COMMITTED = sorted(p for p in RESULTS.rglob("*.json") if p.name in plots.FIGURES)
_NONE = (None, "None", "none", "", " ")


def _draw(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _legends(fig):
    from matplotlib.legend import Legend

    return [leg for leg in fig.findobj(Legend) if leg.get_visible()]


def _segments_hit(vertices, box) -> bool:
    """Whether the polyline through ``vertices`` (display coordinates; NaN breaks it) meets ``box``."""
    from matplotlib.path import Path as MPath

    v = np.asarray(vertices, dtype=float)
    for a, b in zip(v[:-1], v[1:]):
        if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and MPath([a, b]).intersects_bbox(box, filled=False):
            return True
    return False


def _points_hit(points, box) -> bool:
    p = np.asarray(points, dtype=float).reshape(-1, 2)
    p = p[np.all(np.isfinite(p), axis=1)]
    return bool(np.any((p[:, 0] >= box.x0) & (p[:, 0] <= box.x1) & (p[:, 1] >= box.y0) & (p[:, 1] <= box.y1)))


def _data_hits(ax, box, renderer) -> list[str]:
    """The labels of the data artists of ``ax`` (lines, markers, error bars, bars, bands) that meet ``box``."""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.lines import Line2D

    hits = []
    for art in ax.get_children():
        if not art.get_visible() or art is ax.patch or art in ax.spines.values():
            continue
        if isinstance(art, Line2D):
            if art in (ax.xaxis, ax.yaxis):
                continue
            v = art.get_transform().transform(art.get_path().vertices)
            drawn_line = art.get_linestyle() not in _NONE and art.get_linewidth() > 0
            if (drawn_line and _segments_hit(v, box)) or (art.get_marker() not in _NONE and _points_hit(v, box)):
                hits.append(art.get_label())
        elif isinstance(art, PathCollection):
            if _points_hit(art.get_offset_transform().transform(art.get_offsets()), box):
                hits.append(art.get_label())
        elif isinstance(art, LineCollection):
            if any(_segments_hit(art.get_transform().transform(p.vertices), box) for p in art.get_paths()):
                hits.append(art.get_label())
        elif art in ax.patches:
            ext = art.get_window_extent(renderer)
            if min(ext.x1, box.x1) > max(ext.x0, box.x0) and min(ext.y1, box.y1) > max(ext.y0, box.y0):
                hits.append(art.get_label())
    return hits


def _handle_visible(h) -> bool:
    from matplotlib.collections import Collection
    from matplotlib.colors import to_rgba_array
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def seen(colours) -> bool:
        c = to_rgba_array(colours) if len(np.atleast_1d(colours)) else np.zeros((0, 4))
        return bool(len(c) and np.any(c[:, 3] > 0))

    if isinstance(h, Line2D):
        line = h.get_linestyle() not in _NONE and h.get_linewidth() > 0 and seen(h.get_color())
        mark = h.get_marker() not in _NONE and h.get_markersize() > 0 and (
            seen(h.get_markeredgecolor()) or seen(h.get_markerfacecolor()))
        return bool(line or mark)
    if isinstance(h, Patch):
        return seen(h.get_facecolor()) or (h.get_linewidth() > 0 and seen(h.get_edgecolor())) or bool(h.get_hatch())
    if isinstance(h, Collection):
        sizes = h.get_sizes() if hasattr(h, "get_sizes") else [1]
        edge = np.any(np.asarray(h.get_linewidths()) > 0) and seen(h.get_edgecolors())
        return bool((len(sizes) == 0 or np.any(np.asarray(sizes) > 0)) and (seen(h.get_facecolors()) or edge))
    return False


def check_layout(fig) -> None:
    """Legends inside the figure and off the data, every legend entry visible, lone points marked, bars
    inside their panels (see the comment above)."""
    from matplotlib.container import BarContainer
    from matplotlib.transforms import Bbox

    renderer = _draw(fig)
    page = fig.bbox
    axes = [ax for ax in fig.get_axes() if ax.get_visible()]
    for leg in _legends(fig):
        box = leg.get_window_extent(renderer)
        texts = [t.get_text() for t in leg.get_texts()]
        assert (box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1
                and box.y1 <= page.y1 + 1), f"a legend cut at the figure's edge: {box} in {page}: {texts[:3]}"
        for ax in axes:
            inside = Bbox.intersection(box, ax.bbox)  # the part of the legend over this panel's data area
            hits = _data_hits(ax, inside, renderer) if inside is not None else []
            assert not hits, f"the legend {texts[:2]}... covers {hits} in {ax.get_title()!r}"
        for h, t in zip(leg.legend_handles, texts):
            assert _handle_visible(h), f"the legend entry {t!r} shows no line, marker or patch"
    # no text cut at the figure's edge: the titles, labels and tick labels each panel draws, the figure's titles
    boxes = [(ax.get_tightbbox(renderer), ax.get_title()) for ax in axes]
    for f in [fig, *fig.subfigs]:
        boxes += [(t.get_window_extent(renderer), t.get_text()) for t in [f._suptitle, *f.texts]
                  if t is not None and t.get_visible() and t.get_text().strip()]
    for box, what in boxes:
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, \
            f"text cut at the figure's edge: {what[:60]!r}"
    for ax in axes:
        for ln in ax.lines:
            if ln.get_label().startswith("_") or ln.get_marker() not in _NONE:
                continue
            xy = np.column_stack([np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)])
            assert np.all(np.isfinite(xy), axis=1).sum() >= 2, f"{ln.get_label()!r}: one point, no marker: not drawn"
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for c in ax.containers:
            if isinstance(c, BarContainer):
                for p in c.patches:
                    xs = sorted([p.get_x(), p.get_x() + p.get_width()])
                    ys = sorted([p.get_y(), p.get_y() + p.get_height()])
                    assert x0 <= xs[0] and xs[1] <= x1, f"a bar outside the x limits of {ax.get_title()!r}"
                    assert y0 * (1 - 1e-9) <= ys[0] and ys[1] < y1, \
                        f"a bar of {c.get_label()!r} cut at the frame of {ax.get_title()!r}: {ys} in {(y0, y1)}"


def _every_figure():
    """(name, figure) for every figure function on the committed results and the committed curve commands."""
    yield "curve_ter", lambda: plots.curve_ter_figure(ter_curve(3, 0.05, [256, 1024], 8))
    yield "curve_ser", lambda: plots.curve_ser_figure(ser_curve(5, 1000))
    for path in COMMITTED:
        for stem, _, draw in plots.FIGURES[path.name]:
            yield (f"{path.parent.relative_to(RESULTS)}/{stem}",
                   lambda draw=draw, path=path: draw(json.loads(path.read_text(encoding="utf-8"))))


@pytest.mark.integration
@pytest.mark.parametrize("name,make", list(_every_figure()), ids=[n for n, _ in _every_figure()])
def test_every_figure_keeps_legends_off_the_data_and_inside_the_figure(name, make):
    fig = make()
    check_figure(fig)
    check_layout(fig)


@pytest.mark.integration
def test_layout_check_can_fail():
    """The checks above catch a legend over a curve, one cut at the edge, an entry that shows nothing and a
    bar reaching the frame (each seeded once on a small figure)."""
    from matplotlib.figure import Figure

    def fig_with():
        fig = Figure(figsize=(3, 2), layout="constrained")
        ax = fig.add_subplot()
        ax.plot([0, 1], [0.9, 0.9], label="curve")
        ax.set_ylim(0, 1)
        return fig, ax

    fig, ax = fig_with()
    ax.legend(loc="upper right")
    with pytest.raises(AssertionError, match="covers"):
        check_layout(fig)
    fig, ax = fig_with()
    fig.legend(["a very long legend entry " * 4], loc="lower center")
    with pytest.raises(AssertionError, match="a legend cut at the figure's edge"):
        check_layout(fig)
    fig, ax = fig_with()
    fig.suptitle("a very long title " * 6)
    with pytest.raises(AssertionError, match="text cut at the figure's edge"):
        check_layout(fig)
    fig, ax = fig_with()
    ax.plot([0.5], [0.2], ls=":", label="one point")
    with pytest.raises(AssertionError, match="one point"):
        check_layout(fig)
    fig, ax = fig_with()
    ax.plot([0.5], [0.2], ls="none", marker="none", label="nothing")
    ax.legend(loc="lower left")
    with pytest.raises(AssertionError, match="shows no"):
        check_layout(fig)
    fig = Figure(figsize=(3, 2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar([0, 1], [1, 2], label="bars")
    ax.set_ylim(0, 2)
    with pytest.raises(AssertionError, match="cut at the frame"):
        check_layout(fig)


def _oracle_only(L: int = 128, steps=(8, 16), languages=("preset:2gram-ter:0", "interval:4")) -> dict:
    """What ``mdmt figure1 --kinds oracle --lengths L --steps ... --ter-languages preset:2gram-ter
    --ser-languages interval:4`` holds, cut from the committed run: the oracle's points at one length
    other than the training length (64), no network."""
    res = _figure1()
    keep = lambda r: r["kind"] == "oracle" and r["L"] == L and r["language"] in languages  # noqa: E731
    rows = [r for r in res["rows"] if keep(r) and r["N"] in steps]
    targets = [dict(t, largest_N_swept=max(steps), smallest_N=None) for t in res["targets"] if keep(t)]
    config = dict(res["config"], kinds=["oracle"], lengths=[L], steps=list(steps),
                  ter_languages=[languages[0]], ser_languages=[languages[1]])
    assert len(rows) == len(steps) * len(languages) and config["length"] != L
    return {"config": config, "targets": targets, "rows": rows}


@pytest.mark.integration
def test_figure1_paper_view_of_an_oracle_run_draws_what_the_run_holds():
    paper = plots.figure1_paper_figure(_oracle_only())
    check_figure(paper)  # no empty panel (the training length, 64, has no point: it was drawn at L = 64)
    check_layout(paper)
    title = paper._suptitle.get_text()
    assert "L = 128" in title and "oracle MDM" in title
    assert "64" not in title and "tiny" not in title and "network" not in title, title
    assert sorted(ax.get_title() for ax in paper.axes) == ["2gram-ter: perplexity, L = 128",
                                                          "interval HMM, l = 4: SER, L = 128"]
    for ax in paper.axes:  # the oracle's points, at N = 8 and 16
        assert any(sorted(ln.get_xdata()) == [8, 16] for ln in ax.lines)


@pytest.mark.integration
def test_figure1_gap_view_of_an_oracle_run_marks_lone_points_and_names_what_it_holds():
    gap = plots.figure1_figure(_oracle_only())
    # one length: the exact step counts are single points, drawn with a marker (a dotted line through one
    # point draws nothing beside its legend entry)
    check_layout(gap)
    check_figure(gap)
    title = gap._suptitle.get_text()
    assert "oracle MDM at L = 128" in title and "tiny" not in title and "network" not in title, title
    labels = {lab for ax in gap.axes for lab in ax.get_legend_handles_labels()[1]}
    assert not any("trained MDM" in lab or "AR" in lab for lab in labels), labels


@pytest.mark.integration
def test_figure1_titles_name_the_samplers_and_lengths_present():
    res = _figure1()
    assert "Figure 1 (paper's axes), L = 64: tiny networks (MDM, AR) and oracle MDM" == \
        plots.figure1_paper_figure(res)._suptitle.get_text()
    assert plots.figure1_figure(res)._suptitle.get_text() == (
        "TER gap and SER against sampling steps N\noracle MDM at L = 64, 128, 256, 512; "
        "tiny networks (MDM, AR) at L = 64")
    only_mdm = dict(res, rows=[r for r in res["rows"] if r["kind"] == "mdm" and r["role"] == "ser"], targets=[])
    assert plots.figure1_paper_figure(only_mdm)._suptitle.get_text() == "Figure 1 (paper's axes), L = 64: tiny MDM"
    with pytest.raises(ValueError, match="no point"):
        plots.figure1_paper_figure(dict(res, rows=[]))


def _hmm_atlas():
    res = atlas(language_from_spec("preset:hmm"), 4, 2, "iid,uniform,margin,stride")
    res["instance"]["language"] = "preset:hmm"
    return res


@pytest.mark.integration
def test_atlas_names_upper_and_lower_bounds():
    fig = plots.atlas_figure(_hmm_atlas())
    check_figure(fig)
    labels = [t.get_text() for leg in _legends(fig) for t in leg.get_texts()]
    bars = {c.get_label(): c for c in fig.axes[0].containers}
    assert set(bars) == {"exact KL(q‖p)", "E[log q/p_traj] (C1), upper bound", "Li & Cai, upper bound",
                         "ParallelBench, lower bound"}
    assert set(bars) <= set(labels)
    for label, c in bars.items():  # lower bounds hatched, the rest plain
        assert {p.get_hatch() for p in c.patches} == ({plots.LOWER_HATCH} if "lower bound" in label else {None})


@pytest.mark.integration
def test_atlas_marks_each_bound_that_fails_on_the_instance():
    res = _hmm_atlas()
    # on this instance (exact numbers): Li & Cai's upper bound lies below the exact KL for margin (its
    # assumption, uniformly random positions, does not hold there), and ParallelBench's lower bound lies above
    # it for iid and uniform (one fixed partition assumed): the rows' *_holds flags say so
    rows = {r["process"]: r for r in res["rows"]}
    assert rows["margin"]["li_cai"] < rows["margin"]["kl"] and rows["margin"]["li_cai_holds"] is False
    assert rows["iid"]["pb_lower"] > rows["iid"]["kl"] and rows["iid"]["pb_holds"] is False
    failing = {(p, key) for p, r in rows.items() for key, (_, holds) in plots.ATLAS_BOUNDS.items()
               if r.get(holds) is False}
    assert failing == {("margin", "li_cai"), ("iid", "pb_lower"), ("uniform", "pb_lower")}
    fig = plots.atlas_figure(res)
    check_layout(fig)
    ax = fig.axes[0]
    crosses = [c for c in ax.collections if c.get_label() == plots.FAILS_LABEL]
    assert len(crosses) == 1 and plots.FAILS_LABEL in [t.get_text() for leg in _legends(fig) for t in leg.get_texts()]
    bar_of = {}
    for c in ax.containers:
        key = next(k for k, lab in plots.ATLAS_BARS if lab == c.get_label())
        for p, proc in zip(c.patches, [r["process"] for r in res["rows"] if r.get(key) is not None]):
            bar_of[(proc, key)] = (p.get_x() + p.get_width() / 2, p.get_y() + p.get_height())
    marked = {tuple(np.round(xy, 9)) for xy in crosses[0].get_offsets()}
    assert marked == {tuple(np.round(bar_of[f], 9)) for f in failing}  # a cross on top of each failing bar
    for r in res["rows"]:  # every bound holds: no cross
        r.update({holds: True for _, holds in plots.ATLAS_BOUNDS.values() if r.get(holds) is not None})
    assert not [c for c in plots.atlas_figure(res).axes[0].collections if c.get_label() == plots.FAILS_LABEL]
