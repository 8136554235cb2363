"""A figure that mdmt returns draws itself at the end of a notebook cell.

The figures of :mod:`mdmt.plots` (and ``Result.plot()``) are built without pyplot, so no matplotlib backend
shows them; without a display hook of their own a Jupyter cell would show the text ``<Figure size ...>``
and no image.  Here a real notebook is executed on an ipykernel (nbclient) with no ``%matplotlib``
magic and matplotlib's non-interactive Agg backend, and the cells that end in a figure must have an
``image/png`` output.
"""

from __future__ import annotations

import base64
import json
import sys

import pytest

nbformat = pytest.importorskip("nbformat", reason="the docs extra is not installed: pip install -e '.[docs]'")
nbclient = pytest.importorskip("nbclient", reason="the docs extra is not installed")
pytest.importorskip("ipykernel", reason="the docs extra is not installed")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _kernel(tmp_path, monkeypatch) -> str:
    """A kernel spec running this very interpreter (not whichever ``python`` comes first on PATH)."""
    spec = tmp_path / "jupyter" / "kernels" / "mdmt-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "mdmt test", "language": "python"}), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")  # no inline backend: the figures must show by themselves
    return "mdmt-test"


def _run(cells, tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbclient.NotebookClient(nb, kernel_name=_kernel(tmp_path, monkeypatch), timeout=300,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb.cells


def _images(cell) -> list[bytes]:
    return [base64.b64decode(o["data"]["image/png"]) for o in cell.outputs
            if o.get("output_type") in ("execute_result", "display_data") and "image/png" in o.get("data", {})]


@pytest.mark.integration
def test_a_figure_returned_at_the_end_of_a_cell_shows_as_an_image(tmp_path, monkeypatch):
    cells = _run([
        "from mdmt.bounds import ser_curve, ter_curve\nser = ser_curve(l=3, L=24)",
        "ser.plot()",                                                          # Result.plot()
        "from mdmt import plots\nfig = plots.curve_ter_figure(ter_curve(n=2, eps=0.05, lengths=[64], V=4))\nfig",
        "import matplotlib\nmatplotlib.get_backend(), 'matplotlib.pyplot' in __import__('sys').modules",
    ], tmp_path, monkeypatch)
    assert not _images(cells[0])
    for cell in cells[1:3]:
        images = _images(cell)
        assert len(images) == 1, f"{cell.source!r}: outputs {[sorted(o.get('data', {})) for o in cell.outputs]}"
        png = images[0]
        assert png.startswith(PNG_MAGIC)
        width = int.from_bytes(png[16:20], "big")
        assert width >= 300  # a drawn figure (3.4 inches wide and more), not an empty canvas
    # the kernel ran on the Agg backend and drawing the figures did not import pyplot
    assert "agg" in cells[3].outputs[0]["data"]["text/plain"].lower()
    assert cells[3].outputs[0]["data"]["text/plain"].endswith("False)")
