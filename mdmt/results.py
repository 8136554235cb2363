"""Results of mdmt's curves, tables and studies: the dict a command prints with ``--json``, with its tables at hand.

A :class:`Result` *is* that dict (``json.dumps`` writes it unchanged, and ``result["rows"]`` keeps
working); it adds what a notebook needs::

    from mdmt.bounds import ter_curve
    res = ter_curve(3, 0.05, [256, 1024], 8)
    res.to_frame()                 # the rows as a pandas DataFrame (pandas: the optional 'frames' extra)
    res.to_csv("ter.csv")          # the rows as CSV, written atomically
    res.column("chain_bound")      # one column as a numpy array (None as NaN)
    res.plot()                     # the figure the command draws (a matplotlib Figure, mdmt.plots)

A result with several tables (``adaptive ser``: ``curves`` and ``min_steps``) names them in
:attr:`Result.tables`; every method takes ``table=`` and defaults to the first.  A table may be
derived rather than stored (an atlas sweep's ``rows``: every instance's rows with its language, L
and N in front, as in ``atlas.csv``), so the dict stays what ``--json`` prints.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping


class Result(dict):
    """A result dict whose ``tables`` are lists of row dicts, and whose figure is ``mdmt.plots.<figure>``."""

    def __init__(self, data: Mapping[str, Any], *, tables: Iterable[str] = ("rows",), figure: str | None = None,
                 derived: Mapping[str, Callable[[Result], list]] | None = None):
        super().__init__(data)
        self.tables = tuple(tables)
        self.figure = figure
        self.derived = dict(derived or {})
        for name in self.tables:
            if name not in self.derived and not isinstance(self.get(name), list):
                raise ValueError(f"Result: table {name!r} is not a list of rows")

    def __reduce__(self):  # pickles (Dask ships results between processes) with its tables and figure
        return (_rebuild, (dict(self), self.tables, self.figure, self.derived))

    def _table(self, table: str | None) -> list[dict]:
        name = self.tables[0] if table is None else table
        if name not in self.tables:
            raise ValueError(f"no table {name!r} in this result; its tables: {', '.join(self.tables)}")
        return self.derived[name](self) if name in self.derived else self[name]

    def columns(self, table: str | None = None) -> list[str]:
        """The columns of a table: every key of its rows, in the order they first appear."""
        return list(dict.fromkeys(k for r in self._table(table) for k in r))

    def column(self, name: str, table: str | None = None):
        """One column as a numpy array: float (None -> NaN) when every value is a number, else objects."""
        import numpy as np

        values = [r.get(name) for r in self._table(table)]
        if name not in self.columns(table):
            raise ValueError(f"no column {name!r}; the columns: {', '.join(self.columns(table))}")
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
            return np.array([math.nan if v is None else v for v in values], dtype=float)
        return np.array(values, dtype=object)

    def to_frame(self, table: str | None = None):
        """A table as a pandas DataFrame (one row per row dict; lists stay objects)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("Result.to_frame needs pandas: pip install 'mdmt[frames]' (or pandas); "
                              "Result.to_csv and Result.column work without it") from None
        rows = self._table(table)
        return pd.DataFrame.from_records(rows, columns=self.columns(table))

    def to_csv(self, path, table: str | None = None) -> Path:
        """A table as a CSV file (header: its columns; None written empty; lists as JSON), atomically."""
        import json

        from mdmt.runtime.outputs import write_csv

        def cell(v):
            if v is None:
                return ""
            if isinstance(v, float) and math.isinf(v):
                return "inf" if v > 0 else "-inf"
            return json.dumps(v) if isinstance(v, (list, tuple, dict)) else v

        columns = self.columns(table)
        return write_csv(path, columns, [{k: cell(r.get(k)) for k in columns} for r in self._table(table)])

    def plot(self):
        """The figure the command draws from this result (a matplotlib Figure; :mod:`mdmt.plots`)."""
        if self.figure is None:
            raise ValueError("this result has no figure")
        from mdmt import plots

        return getattr(plots, self.figure)(self)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{t}: {len(self._table(t))} rows" for t in self.tables)
        return f"<mdmt Result ({sizes}); keys {', '.join(self)}>"


def _rebuild(data, tables, figure, derived):
    return Result(data, tables=tables, figure=figure, derived=derived)
