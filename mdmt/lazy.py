"""Names of a package loaded on first use: ``import mdmt`` (or ``mdmt.bounds``, ``mdmt.empirical``) stays cheap.

:func:`lazy_exports` returns the ``__getattr__`` and ``__dir__`` of a package (PEP 562) and its ``__all__``:
each public name maps to the module that defines it (or, renamed, to a module and an attribute), imported the
first time the name is read and then kept in the package's namespace.  The package's public submodules
(``modules``: ``mdmt.plots``, ``mdmt.bounds``, ...) load the same way, so ``import mdmt; mdmt.plots`` works
without ``import mdmt.plots``; they are listed by ``dir()``, not in ``__all__`` (``from mdmt import *`` stays
cheap).
"""

from __future__ import annotations

import importlib


def lazy_exports(package: str, namespace: dict, api: dict, renamed: dict | None = None, modules=()):
    """(``__getattr__``, ``__dir__``, ``__all__``) for ``package``: ``api`` maps a name to its module, ``renamed``
    maps a name to (module, attribute), ``modules`` names the submodules loaded on first use."""
    renamed = dict(renamed or {})
    modules = frozenset(modules)
    names = sorted([*api, *renamed])

    def __getattr__(name: str):
        if name in api:
            value = getattr(importlib.import_module(api[name]), name)
        elif name in renamed:
            module, attr = renamed[name]
            value = getattr(importlib.import_module(module), attr)
        elif name in modules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        return sorted({*namespace, *names, *modules})

    return __getattr__, __dir__, names
