"""Packaging: one installed name (mdmt), a documented public API, and an import graph without cycles."""

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

import mdmt
from tests.source_tree import parse

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"mdmt": ROOT / "mdmt", "mdmt.bounds": ROOT / "bounds", "mdmt.constructions": ROOT / "constructions",
            "mdmt.empirical": ROOT / "empirical"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


MODULES = _modules()


def _type_checking_only(tree) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks: imports for annotations, never run."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


@functools.cache
def _imports(name: str, path: Path) -> frozenset[str]:
    """The mdmt modules that a module imports when it runs (absolute or relative, at any depth of the file;
    not those under ``if TYPE_CHECKING:``, which only type checkers read)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    tree = parse(path)
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return frozenset(m for m in found if m in MODULES and m != name)


def test_the_import_graph_has_no_cycle():
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    # a package's __init__ importing its own submodules is not a cycle of the code; drop those edges
    for name in graph:
        graph[name] = {m for m in graph[name] if not (MODULES[name].name == "__init__.py" and m.startswith(name + "."))}
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_no_module_has_more_than_600_lines():
    """One job per module: none of the package's modules is longer than 600 lines (docs/architecture.md)."""
    long = {name: n for name, path in MODULES.items() if (n := len(Path(path).read_text().splitlines())) > 600}
    assert not long, f"modules over 600 lines: {long}"


def test_layers():
    """runtime < languages < reverse < the theorems < the rest of bounds < empirical < commands: no module imports
    from a later layer (mdmt.runtime, input and output and resources, imports nothing else of mdmt)."""
    order = ["mdmt.runtime", "mdmt.constructions.languages", "mdmt.constructions.reverse", "mdmt.bounds.theorems",
             "mdmt.bounds", "mdmt.empirical", "mdmt.commands"]

    def layer(module):
        ranks = [i for i, prefix in enumerate(order) if module == prefix or module.startswith(prefix + ".")]
        return min(ranks, key=lambda i: -len(order[i])) if ranks else None  # the most specific prefix

    for name, path in MODULES.items():
        me = layer(name)
        if me is None:
            continue
        for dep in _imports(name, path):
            other = layer(dep)
            assert other is None or other <= me, f"{name} imports {dep} from a later layer"


def test_only_mdmt_is_importable_outside_the_source_tree(tmp_path):
    code = ("import importlib.util as u; "
            "print([n for n in ('bounds', 'constructions', 'empirical') if u.find_spec(n) is not None])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import mdmt.bounds, mdmt.constructions.reverse, mdmt.empirical; print(mdmt.__version__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_public_api_resolves_and_is_documented():
    from mdmt.extras import MissingExtra

    assert len(mdmt.__all__) >= 20
    for name in mdmt.__all__:
        assert name in mdmt.__doc__, f"{name} is exported but not listed in mdmt's docstring"
        try:
            assert getattr(mdmt, name) is not None, name
        except MissingExtra:  # a network name (mdmt.train) where PyTorch is not installed: the extra's message
            assert name == "train", name
    assert mdmt.STATEMENTS and mdmt.verify.__module__ == "mdmt.bounds.verification.verify"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mdmt.nothing  # noqa: B018


@pytest.mark.integration
def test_submodules_load_on_first_use_like_the_other_names():
    """``import mdmt; mdmt.plots`` works without ``import mdmt.plots`` (and loads nothing before it is read)."""
    code = ("import sys, mdmt; before = 'mdmt.plots' in sys.modules; f = mdmt.plots.curve_ser_figure; "
            "print(before, callable(f), mdmt.bounds.ser_curve is mdmt.ser_curve, 'plots' in dir(mdmt), "
            "'plots' in mdmt.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "True", "False"]


def test_import_mdmt_is_cheap():
    code = "import sys, mdmt; print(sorted(m for m in ('numba', 'sympy', 'torch', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _torch_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, at module level) of each import of torch in a file."""
    tree = parse(path)
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(n == "torch" or n.startswith("torch.") for n in names):
            out.append((node.lineno, id(node) in top))
    return out


def test_torch_is_imported_in_one_place_and_never_by_the_theory():
    """torch is the empirical extra: the theory never imports it; the networks take it from mdmt.empirical._torch
    (which names the extra when torch is missing); commands import it only inside run()."""
    for name, path in MODULES.items():
        found = _torch_imports(path)
        if name == "mdmt.empirical._torch":
            assert found  # inside its try block
        elif name.startswith("mdmt.empirical") or name.startswith("mdmt.commands"):
            assert not [line for line, top in found if top], f"{name} imports torch at module level: use ._torch"
        else:
            assert not found, f"{name} (the theory) imports torch at line {found[0][0]}"


def test_license_citation_changelog_and_type_marker_ship_with_the_package():
    """The licence is the MIT text pyproject names; CITATION.cff is valid YAML citing the toolkit at pyproject's
    version and the paper (arXiv 2502.09622); the changelog has that version; py.typed (PEP 561) is package data."""
    import yaml  # PyYAML comes with dask

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["license"]["text"] == "MIT"
    assert (root / "LICENSE").read_text().startswith("MIT License")
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["version"] == project["project"]["version"]
    paper = cff["references"][0]
    assert paper["title"] == "Theoretical Benefit and Limitation of Diffusion Language Model"
    assert any("2502.09622" in i["value"] for i in paper["identifiers"]) and paper["year"] == 2025
    assert f"## {project['project']['version']}" in (root / "CHANGELOG.md").read_text()
    assert (root / "mdmt" / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["mdmt"]


@pytest.mark.torch
def test_the_subpackages_export_their_public_names_and_none_is_shadowed_by_a_submodule():
    """mdmt.bounds and mdmt.empirical list their public names (loaded on first use); after every submodule of both
    is imported (which sets package attributes to modules), each name is still the object it names, not a module."""
    import importlib
    import pkgutil
    import types

    import mdmt.bounds
    import mdmt.empirical

    for pkg in (mdmt.bounds, mdmt.empirical):
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{pkg.__name__}.{info.name}")
        assert pkg.__all__ and set(pkg.__all__) <= set(dir(pkg))
        for name in pkg.__all__:
            assert not isinstance(getattr(pkg, name), types.ModuleType), f"{pkg.__name__}.{name} is a module"
            assert name in pkg.__doc__, f"{pkg.__name__}.{name} is not in the package docstring"
    assert mdmt.train.__module__ == "mdmt.empirical.train" and callable(mdmt.train)
    assert {"ModelConfig", "TrainConfig", "sample_model", "load_run", "Figure1"} <= set(mdmt.empirical.__all__)
    assert {"ter_curve", "ser_curve", "parse_claim", "certify_claim"} <= set(mdmt.bounds.__all__)


def _public_callables():
    """Every function and class exported by mdmt, mdmt.bounds and mdmt.empirical (their ``__all__``)."""
    import inspect

    import mdmt.bounds
    import mdmt.empirical

    for module in (mdmt, mdmt.bounds, mdmt.empirical):
        for name in module.__all__:
            try:
                obj = getattr(module, name)
            except ImportError:  # a networks' name (mdmt.train, mdmt.empirical.*) where torch is not installed
                if _has_torch():
                    raise
                continue
            if inspect.isclass(obj):
                if "__init__" in obj.__dict__:
                    yield f"{module.__name__}.{name}", obj.__init__, False
            elif callable(obj):
                yield f"{module.__name__}.{name}", obj, True


def _has_torch() -> bool:
    from mdmt.extras import has_torch

    return has_torch()


def test_every_public_function_has_type_hints():
    """Every parameter and return value of the public API is annotated (mypy checks them below)."""
    import inspect

    missing = []
    for name, fn, needs_return in _public_callables():
        sig = inspect.signature(fn)
        for p in sig.parameters.values():
            if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) \
                    and p.annotation is inspect.Parameter.empty:
                missing.append(f"{name}({p.name})")
        if needs_return and sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert not missing, f"unannotated: {', '.join(missing)}"


MYPY_MODULES = ("mdmt.plots", "mdmt.plot_style", "mdmt.figure1_plots", "mdmt.figure", "mdmt.results", "mdmt.sweep",
                "mdmt.lazy", "mdmt.constructions.types", "mdmt.bounds.studies.curves", "mdmt.bounds.studies.adaptive",
                "mdmt.bounds.studies.atlas", "mdmt.bounds.verification.verify", "mdmt.bounds.refutation.refute", "mdmt.bounds.refutation.refute_result",
                "mdmt.constructions.languages.hmm", "mdmt.constructions.languages.ngram",
                "mdmt.constructions.languages.io", "mdmt.constructions.languages.spec",
                "mdmt.constructions.reverse.schedules", "mdmt.constructions.reverse.exact")


@pytest.mark.integration
def test_mypy_passes_on_the_public_modules(tmp_path):
    """mypy on the modules behind mdmt's curves, figures, results, sweeps, languages, schedules, the exact law,
    verify and refute.  mypy cannot follow the package-dir mapping of pyproject.toml (bounds/ installed as
    mdmt.bounds), so the test lays the tree out as installed, with symbolic links, and checks it there."""
    pytest.importorskip("mypy", reason="mypy is not installed (the test extra has it)")
    tree = tmp_path / "mdmt"
    tree.mkdir()
    for path in (ROOT / "mdmt").iterdir():
        (tree / path.name).symlink_to(path)
    for pkg in ("bounds", "constructions", "empirical"):
        (tree / pkg).symlink_to(ROOT / pkg)
    args = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary",
            "--cache-dir", str(tmp_path / ".mypy_cache")]
    for module in MYPY_MODULES:
        args += ["-p", module]
    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 0 and not errors, "\n".join(errors or [proc.stdout[-3000:], proc.stderr[-3000:]])
