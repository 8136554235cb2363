"""Sphinx cross-reference roles in mdmt's docstrings, as links of the site's API reference.

mdmt's docstrings refer to each other in reStructuredText (``:func:`ser_curve```, ``:class:`~.claims.Claim```,
``:mod:`mdmt.plots```), which mkdocstrings does not read: it would print the roles as they are.  This Griffe
extension (mkdocs.yml, ``mkdocstrings`` > ``extensions``) rewrites each role, when the package is loaded,
into mkdocstrings' Markdown cross-reference ``[`title`][identifier]`` if its target is rendered by a
``::: identifier`` block of docs/api/ (or is a documented public member of a class rendered there), and into plain
code otherwise (a private function, a module the reference does not show): never a link to nothing, which
the strict build would refuse.

A target is found as Sphinx finds it: ``~`` shows its last part only, a bare or leading-dot name is looked
up in the object's own scope and then its parents', and a name exported lazily by ``mdmt`` (``mdmt.refute``)
is the object it stands for.  The identifiers are those of the source tree that mkdocstrings reads
(``bounds.studies.curves.ter_curve`` for the installed ``mdmt.bounds.studies.curves.ter_curve``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

API = Path(__file__).resolve().parents[1] / "api"
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):`([^`]+)`")
DIRECTIVE = re.compile(r"^:::[ \t]+(\S+)[ \t]*$")
SUBPACKAGES = ("bounds", "constructions", "empirical")  # installed as mdmt.bounds, ... (pyproject.toml)


def rendered() -> set[str]:
    """The identifiers that the ``:::`` blocks of docs/api/*.md render: each block's, and the names listed
    under its ``members`` option."""
    found = set()
    for page in sorted(API.glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = DIRECTIVE.match(line)
            if not m:
                continue
            found.add(m.group(1))
            listing = False
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith(" "):
                    break
                key = nxt.strip()
                if key.startswith("members:"):
                    listing = key == "members:"
                elif listing and key.startswith("- "):
                    found.add(f"{m.group(1)}.{key[2:].strip()}")
                elif key:
                    listing = False
    return found


def source_path(path: str) -> str:
    """The source-tree identifier of an installed path (``mdmt.bounds.x`` -> ``bounds.x``); a name that
    ``mdmt`` exports lazily (``mdmt.refute``) becomes the object's own path (``bounds.refutation.refute.search``)."""
    parts = path.split(".")
    if parts[0] == "mdmt" and len(parts) > 1 and parts[1] in SUBPACKAGES:
        return ".".join(parts[1:])
    if parts[0] == "mdmt" and len(parts) > 1:
        import mdmt  # light: the names are loaded on first use, not here

        if parts[1] in mdmt._API:
            return source_path(f"{mdmt._API[parts[1]]}.{parts[1]}.{'.'.join(parts[2:])}".rstrip("."))
        if parts[1] in mdmt._RENAMED:
            module, attr = mdmt._RENAMED[parts[1]]
            return source_path(f"{module}.{attr}.{'.'.join(parts[2:])}".rstrip("."))
    return path


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.targets = rendered()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg)

    def _walk(self, obj: griffe.Object) -> None:
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = ROLE.sub(lambda m: self._link(obj, m.group(1)), obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member)  # type: ignore[arg-type]

    def _link(self, obj: griffe.Object, text: str) -> str:
        m = re.fullmatch(r"(.*?)\s*<([^>]+)>", text)
        title, target = (m.group(1), m.group(2)) if m else (None, text)
        short = target.startswith("~")
        target = target.lstrip("~")
        name = target.lstrip(".")
        title = title or (name.split(".")[-1] if short else name)
        identifier = self._find(obj, name, relative=target.startswith(".") or "." not in name)
        if identifier is None:
            return f"`{title}`"
        return f"[`{title}`][{identifier}]"

    def _find(self, obj: griffe.Object, name: str, relative: bool) -> str | None:
        candidates = []
        if relative or not name.startswith("mdmt"):
            scope: griffe.Object | None = obj if (obj.is_module or obj.is_class) else obj.parent
            head, _, rest = name.partition(".")
            while scope is not None:
                if head in scope.members:
                    member = scope.members[head]
                    base = member.target_path if member.is_alias else member.path
                    candidates.append(f"{base}.{rest}" if rest else base)
                    break
                scope = scope.parent
        candidates.append(name)
        for candidate in candidates:
            identifier = source_path(candidate)
            if identifier in self.targets:
                return identifier
            owner, _, member_name = identifier.rpartition(".")
            if owner in self.targets and self._shown_with_class(obj, owner, member_name):
                return identifier
        return None

    @staticmethod
    def _shown_with_class(obj: griffe.Object, owner: str, name: str) -> bool:
        """Whether mkdocstrings renders ``name`` with the rendered class ``owner``: a public member that the
        class itself defines, with a docstring (mkdocs.yml renders no member without one)."""
        try:
            cls = obj.modules_collection[owner]
            member = cls.members.get(name) if cls.is_class else None
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return False
        return (member is not None and not member.is_alias and not name.startswith("_")
                and bool(member.docstring and member.docstring.value.strip()))
