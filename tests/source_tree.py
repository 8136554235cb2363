"""mdmt's source files, each parsed once per test process: the architecture tests (import graph, layers, where
torch is imported, which kernels use numba's parallel back end) read every module."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parse(path: Path) -> ast.Module:
    """The syntax tree of one source file (read from disk on the first call in this process)."""
    return ast.parse(Path(path).read_text(), filename=str(path))
