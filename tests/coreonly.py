"""mdmt as where only its core is installed: an import hook that refuses every package outside the core.

``pip install mdmt`` installs the dependencies of ``[project] dependencies`` in pyproject.toml and what they
require in turn; the extras (``empirical``: torch; ``test``: pytest, mypy, the docs tools; ``frames``: pandas;
``peer``: hmmlearn) are not there.  :func:`prelude` is the source of a meta path finder that makes every other
installed distribution unimportable -- the top-level modules of the distributions outside that closure, found
through :func:`importlib.metadata.packages_distributions` -- so a ``python -c`` subprocess behaves, as far as
imports go, like a fresh venv with the core only (tests/test_core_only.py).
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _norm(name: str) -> str:
    """A distribution's name as PEP 503 compares them (``python_flint`` == ``python-flint``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def core_requirements() -> list[str]:
    """The requirement strings of the core: ``[project] dependencies`` of pyproject.toml."""
    import tomllib  # Python >= 3.11 (the tests that use this module skip without it)

    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def core_closure() -> set[str]:
    """The normalised names of the distributions a core install brings: mdmt, its core requirements and theirs,
    transitively (markers evaluated here; a requirement's extras followed)."""
    from packaging.requirements import Requirement

    seen: set[tuple[str, frozenset]] = set()
    todo = [(Requirement(r), frozenset()) for r in core_requirements()]
    names = {"mdmt"}
    while todo:
        req, parent_extras = todo.pop()
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (parent_extras or {""})):
            continue
        key = (_norm(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(key[0])
        try:
            requires = md.requires(req.name) or []
        except md.PackageNotFoundError:  # an optional requirement that is not installed here
            continue
        todo += [(Requirement(r), frozenset(req.extras)) for r in requires]
    return names


def blocked_modules() -> set[str]:
    """The top-level modules of the installed distributions outside :func:`core_closure` (torch, pytest, mypy,
    pandas, hmmlearn, mkdocs, ...); a module shipped by a core distribution is never blocked."""
    core = core_closure()
    out = set()
    for module, dists in md.packages_distributions().items():
        if not any(_norm(d) in core for d in dists):
            out.add(module)
    return out


def prelude(blocked: set[str]) -> str:
    """Python source that installs the hook refusing ``blocked`` (and their submodules) as not installed."""
    return f"""
import sys

_BLOCKED = frozenset({sorted(blocked)!r})

class _CoreOnly:
    '''A meta path finder that refuses every package outside mdmt's core, as if it were not installed.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not a dependency of mdmt's core)", name=name)
        return None

_PRELOADED = frozenset(m.partition(".")[0] for m in sys.modules)
sys.meta_path.insert(0, _CoreOnly())
"""
