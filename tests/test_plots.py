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
from mdmt.bounds.atlas import atlas
from mdmt.bounds.curves import ser_curve, ter_curve
from mdmt.cli import main
from mdmt.constructions.languages.spec import language_from_spec
from mdmt.constructions.outputs import figure_written_by

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


def test_curve_figures_are_public_and_follow_the_conventions():
    ter = ter_curve(3, 0.05, [256, 1024], 8)
    fig = plots.curve_ter_figure(ter)
    check_figure(fig)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert f"Theorem 4.2 step count N = {ter['theorem42_steps']}" in labels
    check_figure(plots.curve_ser_figure(ser_curve(4, 64, 1 / 128)))


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
