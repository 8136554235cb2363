"""The matplotlib ``Figure`` that every figure of :mod:`mdmt.plots` is: one that shows itself in a notebook.

mdmt draws without pyplot (no global figure manager, no backend chosen for the user), so no backend's
display hook knows its figures, and a Jupyter cell ending in one would print ``<Figure size 425x290 with
1 Axes>``.  :class:`Figure` adds IPython's rich-display hook ``_repr_png_``: the cell shows the figure as a
PNG, rendered at ``RENDER_DPI`` and displayed at ``DISPLAY_DPI`` (sharp on high-density screens), in the
style the figure was drawn in.  Everything else is matplotlib's ``Figure``: ``savefig`` and
:func:`mdmt.plots.save` write the same files as before.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any, Mapping

import matplotlib
from matplotlib.figure import Figure as _Figure

DISPLAY_DPI = 100  # pixels per inch of the figure as a notebook shows it (a 3.4-inch column: 340 pixels wide)
RENDER_DPI = 200  # pixels per inch of the PNG: twice the display size, the resolution of mdmt.plots.save


class Figure(_Figure):
    """A matplotlib ``Figure`` that a notebook displays as an image; ``style`` is the rc it is drawn in."""

    def __init__(self, *args, style: Mapping[str, Any] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.style: Any = dict(style or {})  # rc names and values (matplotlib types them as literals)

    def _repr_png_(self) -> tuple[bytes, dict[str, int]]:
        """The figure as PNG bytes with its display size, for IPython's display machinery."""
        buf = BytesIO()
        with matplotlib.rc_context(self.style):
            self.savefig(buf, format="png", dpi=RENDER_DPI)
        width, height = self.get_size_inches() * DISPLAY_DPI
        return buf.getvalue(), {"width": round(width), "height": round(height)}
